"""Core cases for the structured ops: linalg, tensor, memref, scf, affine, func.

Each template is instantiated for three element types (or shapes) so that every op is
executed by at least three cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.draft import Draft, run_draft
from conformance.gen.kernel import Arr, io_kernel
from conformance.oracle.expect import Expected, same
from conformance.oracle.folds import fold
from ktir.dialects.names import Arith, Linalg, Memref

NORMAL: dict[str, Any] = {"recipe": "normal"}
POSITIVE: dict[str, Any] = {"recipe": "positive", "low": 0.05, "high": 8.0}
FLOATS = ("f16", "bf16", "f32")

LINALG_BINARY = (Linalg.add, Linalg.sub, Linalg.mul, Linalg.div, Linalg.max, Linalg.min, Linalg.powf)
LINALG_UNARY = (Linalg.exp, Linalg.log, Linalg.abs, Linalg.negf, Linalg.floor, Linalg.sqrt, Linalg.rsqrt,
                Linalg.tanh, Linalg.erf, Linalg.reciprocal, Linalg.square)
NEEDS_POSITIVE = {Linalg.log, Linalg.sqrt, Linalg.rsqrt, Linalg.div, Linalg.powf, Linalg.reciprocal}


def _acc(op: str) -> str:
    from ktir.dialects.registry import OPS

    return OPS[op].accuracy


def linalg_elementwise() -> Iterator[Draft]:
    for op in (*LINALG_BINARY, *LINALG_UNARY):
        arity = 2 if op in LINALG_BINARY else 1
        for dtype in FLOATS:
            shape = (4, 8)
            ins = []
            for i in range(arity):
                recipe = POSITIVE if op in NEEDS_POSITIVE and (i == 0 or op == Linalg.div) else NORMAL
                if op == Linalg.powf and i == 1:
                    recipe = {"recipe": "uniform", "low": -2.0, "high": 2.0}
                ins.append(Arr(f"x{i}", shape, dtype, dict(recipe)))
            y = Arr("y", shape, dtype)
            names = ", ".join(f"%{a.name}" for a in ins)
            types = ", ".join(a.tensor for a in ins)
            body = (f"  %e = tensor.empty() : {y.tensor}\n"
                    f"  %y = {op} ins({names} : {types}) outs(%e : {y.tensor}) -> {y.tensor}\n")
            text = io_kernel(f"{op} on {y.tensor}", ins, [y], body)
            yield run_draft(f"core.{op}.{dtype}", "core", text, ins, [y], _acc(op), f"{op} on tensors",
                            model=models.elementwise(op, [f"{a.name}_ptr" for a in ins], "y_ptr", dtype, _acc(op)))


MATMULS: list[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...], int, str]] = [
    # op, A shape, B shape, C shape, K, what it computes (einsum)
    (Linalg.matmul, (8, 16), (16, 8), (8, 8), 16, "mk,kn->mn"),
    (Linalg.matmul_transpose_a, (16, 8), (16, 8), (8, 8), 16, "km,kn->mn"),
    (Linalg.matmul_transpose_b, (8, 16), (8, 16), (8, 8), 16, "mk,nk->mn"),
    (Linalg.batch_matmul, (2, 4, 16), (2, 16, 8), (2, 4, 8), 16, "bmk,bkn->bmn"),
    (Linalg.batch_matmul_transpose_b, (2, 4, 16), (2, 8, 16), (2, 4, 8), 16, "bmk,bnk->bmn"),
    (Linalg.matvec, (8, 32), (32,), (8,), 32, "mk,k->m"),
]


def contractions() -> Iterator[Draft]:
    for op, sa, sb, sc, k, spec in MATMULS:
        for src, acc in (("f16", "f32"), ("bf16", "f32"), ("f32", "f32")):
            a = Arr("a", sa, src, dict(NORMAL))
            b = Arr("b", sb, src, dict(NORMAL))
            c = Arr("c", sc, acc)
            body = (f"  %zero = arith.constant 0.000000e+00 : {acc}\n"
                    f"  %e = tensor.empty() : {c.tensor}\n"
                    f"  %init = linalg.fill ins(%zero : {acc}) outs(%e : {c.tensor}) -> {c.tensor}\n"
                    f"  %c = {op} ins(%a, %b : {a.tensor}, {b.tensor}) outs(%init : {c.tensor}) -> {c.tensor}\n")
            text = io_kernel(f"{op}: {src} inputs accumulated in {acc}, K = {k}", [a, b], [c], body)
            yield run_draft(f"core.{op}.{src}_{acc}", "core", text, [a, b], [c], "matmul",
                            f"{op} with K = {k}", n=k, model=models.contraction(spec, "a_ptr", "b_ptr", "c_ptr", acc, k))
    for src in FLOATS:
        a = Arr("a", (32,), src, dict(NORMAL))
        b = Arr("b", (32,), src, dict(NORMAL))
        c = Arr("c", (1,), "f32")
        body = ("  %zero = arith.constant 0.000000e+00 : f32\n"
                "  %e = tensor.empty() : tensor<f32>\n"
                "  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>\n"
                f"  %d = linalg.dot ins(%a, %b : {a.tensor}, {b.tensor}) outs(%init : tensor<f32>) -> tensor<f32>\n"
                "  %s = tensor.extract %d[] : tensor<f32>\n"
                "  %c = tensor.splat %s : tensor<1xf32>\n")
        text = io_kernel(f"linalg.dot of two {src} vectors of 32, accumulated in f32", [a, b], [c], body)
        yield run_draft(f"core.linalg.dot.{src}", "core", text, [a, b], [c], "matmul", "linalg.dot, K = 32", n=32,
                        model=models.contraction("k,k->", "a_ptr", "b_ptr", "c_ptr", "f32", 32, reshape=lambda v: v.reshape(1)))


def reductions() -> Iterator[Draft]:
    for dtype in FLOATS:
        for short in (True, False):
            x = Arr("x", (8, 32), dtype, dict(NORMAL))
            y = Arr("y", (8,), dtype)
            head = (f"  %zero = arith.constant 0.000000e+00 : {dtype}\n"
                    f"  %e = tensor.empty() : {y.tensor}\n"
                    f"  %init = linalg.fill ins(%zero : {dtype}) outs(%e : {y.tensor}) -> {y.tensor}\n")
            if short:
                body = head + f"  %y = linalg.reduce {{ arith.addf }} ins(%x : {x.tensor}) outs(%init : {y.tensor}) dimensions = [1]\n"
            else:
                body = head + (f"  %y = linalg.reduce ins(%x : {x.tensor}) outs(%init : {y.tensor}) dimensions = [1] (%in: {dtype}, %acc: {dtype}) {{\n"
                               f"      %s = arith.addf %in, %acc : {dtype}\n"
                               f"      linalg.yield %s : {dtype}\n    }}\n")
            form = "short" if short else "region"
            text = io_kernel(f"row sums with linalg.reduce ({form} form), n = 32", [x], [y], body)
            yield run_draft(f"core.linalg.reduce.sum_{form}.{dtype}", "core", text, [x], [y], "reduction",
                            "row sum, n = 32", n=32, model=models.row_sums("x_ptr", "y_ptr", dtype, 1))
        x = Arr("x", (8, 32), dtype, dict(NORMAL))
        y = Arr("y", (8,), dtype)
        body = (f"  %ninf = arith.constant 0xFF80 : {dtype}\n" if dtype == "bf16" else
                f"  %ninf = arith.constant {'0xFC00' if dtype == 'f16' else '0xFF800000'} : {dtype}\n")
        body += (f"  %e = tensor.empty() : {y.tensor}\n"
                 f"  %init = linalg.fill ins(%ninf : {dtype}) outs(%e : {y.tensor}) -> {y.tensor}\n"
                 f"  %y = linalg.reduce {{ arith.maximumf }} ins(%x : {x.tensor}) outs(%init : {y.tensor}) dimensions = [1]\n")
        text = io_kernel("row maxima with linalg.reduce: exact in any order", [x], [y], body)
        yield run_draft(f"core.linalg.reduce.max.{dtype}", "core", text, [x], [y], "exact", "row max",
                        model=fold_model("maximumf", "x_ptr", "y_ptr", dtype, -np.inf))


def fold_model(op: str, x: str, out: str, dtype: str, init: float | str) -> models.Model:
    """out[i] = op(... op(op(init, x[i, 0]), x[i, 1]) ...) for an op exact in any order (max, min)."""

    def model(a: models.Inputs) -> dict[str, Expected]:
        start = np.asarray(a[init]) if isinstance(init, str) else np.full(np.shape(a[out]), init)
        return {out: same(fold(op, np.asarray(a[x]), 1, start.astype(np.asarray(a[out]).dtype), dtype))}

    return model


def generic_map() -> Iterator[Draft]:
    for dtype in FLOATS:
        x = Arr("x", (4, 16), dtype, dict(NORMAL))
        b = Arr("b", (4,), dtype, dict(NORMAL))
        y = Arr("y", (4, 16), dtype)
        body = (f"  %e = tensor.empty() : {y.tensor}\n"
                f"  %y = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]}} ins(%x, %b : {x.tensor}, {b.tensor}) outs(%e : {y.tensor}) {{\n"
                f"  ^bb0(%in: {dtype}, %bias: {dtype}, %o: {dtype}):\n"
                "    %j = linalg.index 1 : index\n"
                "    %ji = arith.index_cast %j : index to i32\n"
                f"    %jf = arith.sitofp %ji : i32 to {dtype}\n"
                f"    %s = arith.addf %in, %bias : {dtype}\n"
                f"    %t = arith.mulf %s, %jf : {dtype}\n"
                f"    linalg.yield %t : {dtype}\n"
                f"  }} -> {y.tensor}\n")
        text = io_kernel("linalg.generic: y[i, j] = (x[i, j] + b[i]) * j, with a broadcast operand and linalg.index",
                         [x, b], [y], body)
        yield run_draft(f"core.linalg.generic.bias_index.{dtype}", "core", text, [x, b], [y], "exact",
                        "generic with broadcast and index", model=models.computed(lambda a, t=dtype: {
                            "y_ptr": models.rounded_op(Arith.mulf, t, models.rounded_op(Arith.addf, t, a["x_ptr"], a["b_ptr"][:, None]),
                                                       np.arange(16)[None, :].astype(a["x_ptr"].dtype))}))
        p = Arr("p", (64,), dtype, dict(NORMAL))
        q = Arr("q", (64,), dtype, dict(NORMAL))
        m1 = Arr("m1", (64,), dtype)
        m2 = Arr("m2", (64,), dtype)
        body = (f"  %e = tensor.empty() : {p.tensor}\n"
                f"  %m1 = linalg.map {{ arith.mulf }} ins(%p, %q : {p.tensor}, {q.tensor}) outs(%e : {p.tensor})\n"
                f"  %m2 = linalg.map ins(%p, %q : {p.tensor}, {q.tensor}) outs(%e : {p.tensor})\n"
                f"    (%l: {dtype}, %r: {dtype}, %o: {dtype}) {{\n"
                f"      %d = arith.subf %l, %r : {dtype}\n"
                f"      %n = arith.negf %d : {dtype}\n"
                f"      linalg.yield %n : {dtype}\n    }}\n")
        text = io_kernel("linalg.map in the short and the region form", [p, q], [m1, m2], body)
        yield run_draft(f"core.linalg.map.{dtype}", "core", text, [p, q], [m1, m2], "exact", "map, both forms",
                        model=models.computed(lambda a, t=dtype: {
                            "m1_ptr": models.rounded_op(Arith.mulf, t, a["p_ptr"], a["q_ptr"]),
                            "m2_ptr": -models.rounded_op(Arith.subf, t, a["p_ptr"], a["q_ptr"])}))


def data_movement() -> Iterator[Draft]:
    for dtype in ("f16", "f32", "i32"):
        rec = {"recipe": "int", "low": -50, "high": 50} if dtype.startswith("i") else NORMAL
        v = Arr("v", (8,), dtype, dict(rec))
        m = Arr("m", (8, 16), dtype, dict(rec))
        bc = Arr("bc", (8, 16), dtype)
        tr = Arr("tr", (16, 8), dtype)
        cp = Arr("cp", (8, 16), dtype)
        fl = Arr("fl", (8, 16), dtype)
        lit = "5" if dtype.startswith("i") else "2.500000e+00"
        fill_value = 5 if dtype.startswith("i") else 2.5
        body = (f"  %be = tensor.empty() : {bc.tensor}\n"
                f"  %bc = linalg.broadcast ins(%v : {v.tensor}) outs(%be : {bc.tensor}) dimensions = [1]\n"
                f"  %te = tensor.empty() : {tr.tensor}\n"
                f"  %tr = linalg.transpose ins(%m : {m.tensor}) outs(%te : {tr.tensor}) permutation = [1, 0]\n"
                f"  %cp = linalg.copy ins(%m : {m.tensor}) outs(%be : {cp.tensor}) -> {cp.tensor}\n"
                f"  %k = arith.constant {lit} : {dtype}\n"
                f"  %fl = linalg.fill ins(%k : {dtype}) outs(%be : {fl.tensor}) -> {fl.tensor}\n")
        text = io_kernel("linalg.broadcast, transpose, copy and fill", [v, m], [bc, tr, cp, fl], body)
        yield run_draft(f"core.linalg.data_movement.{dtype}", "core", text, [v, m], [bc, tr, cp, fl], "exact",
                        "broadcast, transpose, copy, fill", model=models.computed(lambda a, k=fill_value: {
                            "bc_ptr": np.repeat(a["v_ptr"][:, None], 16, axis=1), "tr_ptr": a["m_ptr"].T.copy(),
                            "cp_ptr": a["m_ptr"].copy(), "fl_ptr": np.full((8, 16), k).astype(a["m_ptr"].dtype)}))


def tensor_ops() -> Iterator[Draft]:
    for dtype in ("f16", "f32", "i32"):
        rec = {"recipe": "int", "low": -50, "high": 50} if dtype.startswith("i") else NORMAL
        zero = "0" if dtype.startswith("i") else "0.000000e+00"
        t = Arr("t", (4, 8), dtype, dict(rec))
        u = Arr("u", (4, 8), dtype, dict(rec))
        a = Arr("slices", (4, 8), dtype)
        b = Arr("reshaped", (8, 4), dtype)
        c = Arr("cat", (8, 8), dtype)
        d = Arr("padded", (6, 10), dtype)
        body = (
            "  %c1 = arith.constant 1 : index\n"
            "  %c2 = arith.constant 2 : index\n"
            f"  %v = tensor.extract %t[%c1, %c2] : {t.tensor}\n"
            f"  %w = tensor.insert %v into %u[%c2, %c1] : {u.tensor}\n"
            f"  %top = tensor.extract_slice %t[0, 0] [2, 8] [1, 1] : {t.tensor} to tensor<2x8x{dtype}>\n"
            f"  %slices = tensor.insert_slice %top into %w[2, 0] [2, 8] [1, 1] : tensor<2x8x{dtype}> into {u.tensor}\n"
            f"  %flat = tensor.collapse_shape %t [[0, 1]] : {t.tensor} into tensor<32x{dtype}>\n"
            f"  %reshaped = tensor.expand_shape %flat [[0, 1]] output_shape [8, 4] : tensor<32x{dtype}> into {b.tensor}\n"
            f"  %cat = tensor.concat dim(0) %t, %u : ({t.tensor}, {u.tensor}) -> {c.tensor}\n"
            f"  %z = arith.constant {zero} : {dtype}\n"
            f"  %padded = tensor.pad %t low[1, 1] high[1, 1] {{\n"
            "  ^bb0(%i: index, %j: index):\n"
            f"    tensor.yield %z : {dtype}\n"
            f"  }} : {t.tensor} to {d.tensor}\n")
        text = io_kernel("tensor.extract, insert, extract_slice, insert_slice, collapse_shape, expand_shape, concat, pad",
                         [t, u], [a, b, c, d], body)
        yield run_draft(f"core.tensor.slicing.{dtype}", "core", text, [t, u], [a, b, c, d], "exact", "tensor data movement",
                        model=models.computed(_slicing))
        x = Arr("x", (4, 8), dtype, dict(rec))
        g = Arr("g", (4, 8), "i32")
        s = Arr("s", (4, 8), dtype)
        r = Arr("r", (32,), dtype)
        body = (
            f"  %gen = tensor.generate {{\n"
            "  ^bb0(%i: index, %j: index):\n"
            "    %k = arith.muli %i, %j : index\n"
            "    %ki = arith.index_cast %k : index to i32\n"
            "    tensor.yield %ki : i32\n"
            "  } : tensor<4x8xi32>\n"
            "  %g = arith.addi %gen, %gen : tensor<4x8xi32>\n"
            "  %c0i = arith.constant 0 : index\n"
            "  %c1i = arith.constant 1 : index\n"
            f"  %dyn = tensor.cast %x : {x.tensor} to tensor<?x8x{dtype}>\n"
            f"  %rows = tensor.dim %dyn, %c0i : tensor<?x8x{dtype}>\n"
            f"  %cols = tensor.dim %x, %c1i : {x.tensor}\n"
            "  %rc = arith.muli %rows, %cols : index\n"
            f"  %rci = arith.index_cast %rc : index to {'i32' if dtype == 'i32' else 'i32'}\n"
            + (f"  %rv = arith.sitofp %rci : i32 to {dtype}\n" if not dtype.startswith("i") else "  %rv = arith.addi %rci, %rci : i32\n")
            + f"  %s = tensor.splat %rv : {s.tensor}\n"
            "  %shape = arith.constant dense<[32]> : tensor<1xi32>\n"
            f"  %r = tensor.reshape %x(%shape) : ({x.tensor}, tensor<1xi32>) -> {r.tensor}\n")
        text = io_kernel("tensor.generate/yield, cast, dim, splat, reshape", [x], [g, s, r], body)
        yield run_draft(f"core.tensor.generate_dims.{dtype}", "core", text, [x], [g, s, r], "exact", "tensor generate, dim, splat, reshape",
                        model=models.computed(_generate_dims))


def _slicing(a: models.Inputs) -> dict[str, np.ndarray]:
    t, u = a["t_ptr"], a["u_ptr"]
    w = u.copy()
    w[2, 1] = t[1, 2]
    w[2:4, :] = t[0:2, :]
    padded = np.zeros((6, 10), t.dtype)
    padded[1:5, 1:9] = t
    return {"slices_ptr": w, "reshaped_ptr": t.reshape(8, 4).copy(), "cat_ptr": np.concatenate([t, u]), "padded_ptr": padded}


def _generate_dims(a: models.Inputs) -> dict[str, np.ndarray]:
    x = a["x_ptr"]
    gen = np.multiply.outer(np.arange(4), np.arange(8)).astype(np.int32)
    count = 4 * 8  # tensor.dim of the rows times that of the columns
    value = 2 * count if x.dtype.kind in "iu" else count  # i32: %rci + %rci; floats: sitofp
    return {"g_ptr": gen + gen, "s_ptr": np.full((4, 8), value).astype(x.dtype), "r_ptr": x.reshape(32).copy()}


def _memref_views(a: models.Inputs) -> dict[str, np.ndarray]:
    x = a["x_ptr"]
    y = x.copy()  # the whole tile of x, stored whole
    y[0, 0] = x[1, 2]  # through the alloca'd scratch %tmp
    y[0, 1] = x[3, 3]  # the subview from row 2, element [1, 3]
    y[0, 2] = x.reshape(64)[8]  # the flat reinterpret_cast at memref.dim of the rows (8)
    y[1, 0] = 1  # the value stored into and read back from the alloc
    return {"y_ptr": y}


def memref_ops() -> Iterator[Draft]:
    for dtype in ("f16", "f32", "i32"):
        rec = {"recipe": "int", "low": -50, "high": 50} if dtype.startswith("i") else NORMAL
        x = Arr("x", (8, 8), dtype, dict(rec))
        y = Arr("y", (8, 8), dtype)
        body = (
            "  %c1 = arith.constant 1 : index\n"
            "  %c2 = arith.constant 2 : index\n"
            "  %c3 = arith.constant 3 : index\n"
            f"  %buf = memref.alloc() : memref<8x8x{dtype}>\n"
            f"  %tmp = memref.alloca() : memref<4x{dtype}>\n"
            f"  %v = memref.load %x_view[%c1, %c2] : memref<8x8x{dtype}>\n"
            f"  memref.store %v, %tmp[%c3] : memref<4x{dtype}>\n"
            f"  %w = memref.load %tmp[%c3] : memref<4x{dtype}>\n"
            f"  %sub = memref.subview %x_view[2, 0] [2, 8] [1, 1] : memref<8x8x{dtype}> to memref<2x8x{dtype}, strided<[8, 1], offset: 16>>\n"
            f"  %s = memref.load %sub[%c1, %c3] : memref<2x8x{dtype}, strided<[8, 1], offset: 16>>\n"
            f"  %dyn = memref.cast %x_view : memref<8x8x{dtype}> to memref<?x?x{dtype}>\n"
            f"  %rows = memref.dim %dyn, %c0 : memref<?x?x{dtype}>\n"
            f"  %flat = memref.reinterpret_cast %x_view to offset: [0], sizes: [64], strides: [1] : memref<8x8x{dtype}> to memref<64x{dtype}, strided<[1]>>\n"
            f"  %f = memref.load %flat[%rows] : memref<64x{dtype}, strided<[1]>>\n"
            "  %y = ktdp.load %x_tile : !ktdp.access_tile<8x8xindex> -> " + f"tensor<8x8x{dtype}>\n"
            f"  memref.store %w, %y_oview_pre[%c0, %c0] : memref<8x8x{dtype}>\n"
            f"  memref.store %s, %y_oview_pre[%c0, %c1] : memref<8x8x{dtype}>\n"
            f"  memref.store %f, %y_oview_pre[%c0, %c2] : memref<8x8x{dtype}>\n"
            f"  %b = memref.load %buf[%c0, %c0] : memref<8x8x{dtype}>\n")
        # the body stores scalars into the output view after the whole-tile store: use a view made before
        text = io_kernel("memref.alloc, alloca, load, store, subview, cast, dim, reinterpret_cast on memory views",
                         [x], [y], body)
        text = _memref_fixup(text, dtype)
        yield run_draft(f"core.memref.views.{dtype}", "core", text, [x], [y], "exact", "memref ops on views",
                        model=models.computed(_memref_views))


def _memref_fixup(text: str, dtype: str) -> str:
    """Move the scalar memref.stores after the whole store, and drop the read of the
    uninitialised alloc (reading unwritten memory is a dynamic error)."""
    lines = text.splitlines()
    stores = [ln for ln in lines if Memref.store in ln and "%y_oview_pre" in ln]
    lines = [ln for ln in lines if ln not in stores and "%buf[%c0, %c0]" not in ln]
    ret = lines.index("  func.return")
    lines[ret:ret] = [s.replace("%y_oview_pre", "%y_oview") for s in stores]
    fill = [f"  %one = arith.constant {'1' if dtype.startswith('i') else '1.000000e+00'} : {dtype}",
            f"  memref.store %one, %buf[%c1, %c1] : memref<8x8x{dtype}>",
            f"  %b = memref.load %buf[%c1, %c1] : memref<8x8x{dtype}>",
            f"  memref.store %b, %y_oview[%c1, %c0] : memref<8x8x{dtype}>"]
    lines[ret + len(stores):ret + len(stores)] = fill
    return "\n".join(lines) + "\n"


def cases() -> Iterator[Draft]:
    from conformance.gen.control import cases as control_cases

    yield from linalg_elementwise()
    yield from contractions()
    yield from reductions()
    yield from generic_map()
    yield from data_movement()
    yield from tensor_ops()
    yield from memref_ops()
    yield from control_cases()
