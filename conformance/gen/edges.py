"""Values where implementations differ: unsigned ops on inputs with the top bit set, IEEE
special values and subnormals for comparisons, casts and reductions, reduction inits, and
indirect access with repeated and out-of-order indices.

Inputs are stored `.npy` files (`inputs/edges.*.npy`), chosen so that the signed and the
unsigned reading of the same bits give different results, and so that a flush of
subnormals to zero changes the output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.core import SPECIALS, accuracy, cmpi_model
from conformance.gen.draft import Draft, run_draft
from conformance.gen.kernel import Arr, box_set, io_kernel
from conformance.gen.structured import fold_model
from conformance.oracle.elementwise import compare_float
from conformance.values import np_dtype
from ktir.dialects.names import Arith, Math

WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}
NP_INT = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def _stored(name: str, array: np.ndarray, dtype: str, d: dict[str, np.ndarray]) -> Arr:
    path = f"inputs/edges.{name}.npy"
    # .npy has no bf16/f8: store their (exact) float32 values; the recipe converts back
    d[path] = array.astype(np.float32) if array.dtype.kind == "V" else array
    return Arr(name.rsplit(".", 1)[-1], array.shape, dtype, {"recipe": "npy", "npy": path})


def top_bit_values(dtype: str, seed: int, nonzero: bool = False) -> np.ndarray:
    """16 values of `dtype`: half with the top bit set (negative when read as signed), including
    the extremes, so that signed and unsigned arithmetic disagree."""
    w = WIDTH[dtype]
    lo, hi = -(2 ** (w - 1)), 2 ** (w - 1) - 1
    rng = np.random.default_rng(seed)
    fixed = [lo, -1, hi, 1, lo + 1, -2, 3, hi - 1]
    drawn = [int(v) for v in rng.integers(lo // 2 if w == 64 else lo, hi // 2 if w == 64 else hi, size=8, dtype=np.int64)]
    values = np.array(fixed + drawn, dtype=np.int64)
    if nonzero:
        values[values == 0] = 5
    return values.astype(NP_INT[dtype])


UNSIGNED_BINARY = (Arith.divui, Arith.remui, Arith.maxui, Arith.minui, Arith.shrui)


def unsigned_ops() -> Iterator[Draft]:
    for op in UNSIGNED_BINARY:
        for dtype in WIDTH:
            stored: dict[str, np.ndarray] = {}
            a = top_bit_values(dtype, 31000 + WIDTH[dtype])
            if op == Arith.shrui:
                b = (np.arange(16) * 3 % WIDTH[dtype]).astype(NP_INT[dtype])
            else:
                b = np.roll(top_bit_values(dtype, 31100 + WIDTH[dtype], nonzero=op in (Arith.divui, Arith.remui)), 3)
            x0 = _stored(f"{op}.{dtype}.x0", a, dtype, stored)
            x1 = _stored(f"{op}.{dtype}.x1", b, dtype, stored)
            y = Arr("y", (16,), dtype)
            text = io_kernel(f"{op} on {dtype} inputs with the top bit set (signed and unsigned readings differ)",
                             [x0, x1], [y], f"  %y = {op} %x0, %x1 : {y.tensor}\n")
            d = run_draft(f"core.{op}.top_bit.{dtype}", "core", text, [x0, x1], [y], "exact", f"{op} with the top bit set",
                          model=models.elementwise(op, ["x0_ptr", "x1_ptr"], "y_ptr", dtype, "exact"))
            d.npy = stored
            yield d
    for k, pred in enumerate(("ult", "ule", "ugt", "uge")):
        dtype = ("i8", "i16", "i32", "i64")[k]
        stored = {}
        x0 = _stored(f"cmpi.{pred}.{dtype}.a", top_bit_values(dtype, 31200 + k), dtype, stored)
        x1 = _stored(f"cmpi.{pred}.{dtype}.b", np.roll(top_bit_values(dtype, 31300 + k), 5), dtype, stored)
        y = Arr("y", (16,), "i32")
        body = (f"  %m = arith.cmpi {pred}, %a, %b : {x0.tensor}\n"
                "  %y = arith.extui %m : tensor<16xi1> to tensor<16xi32>\n")
        text = io_kernel(f"arith.cmpi {pred} on {dtype} inputs with the top bit set", [x0, x1], [y], body)
        d = run_draft(f"core.arith.cmpi.{pred}.top_bit.{dtype}", "core", text, [x0, x1], [y], "exact", f"cmpi {pred}, top bit set",
                      model=cmpi_model(pred, dtype))
        d.npy = stored
        yield d
    for op, src, dst in ((Arith.extui, "i8", "i32"), (Arith.extui, "i16", "i64"), (Arith.extui, "i32", "i64"),
                         (Arith.uitofp, "i8", "f32"), (Arith.uitofp, "i32", "f32"), (Arith.uitofp, "i16", "f32"),
                         (Arith.index_castui, "i32", "index")):
        stored = {}
        x = _stored(f"{op}.{src}_{dst}.x", top_bit_values(src, 31400 + WIDTH[src]), src, stored)
        if dst == "index":
            y = Arr("y", (16,), "i64")
            body = ("  %i = arith.index_castui %x : tensor<16xi32> to tensor<16xindex>\n"
                    "  %y = arith.index_cast %i : tensor<16xindex> to tensor<16xi64>\n")
        else:
            y = Arr("y", (16,), dst)
            body = f"  %y = {op} %x : {x.tensor} to {y.tensor}\n"
        text = io_kernel(f"{op} from {src} with the top bit set (zero extension, not sign extension)", [x], [y], body)
        chain = [(op, src, "index"), (Arith.index_cast, "index", "i64")] if dst == "index" else [(op, src, dst)]
        d = run_draft(f"core.{op}.top_bit.{src}_to_{dst}", "core", text, [x], [y], accuracy(op), f"{op}, top bit set",
                      model=models.conversion(chain, "x_ptr", "y_ptr"))
        d.npy = stored
        yield d


def out_of_range_conversions() -> Iterator[Draft]:
    """fptoui of values at or above 2^31 (top bit set in the i32 result); truncf that overflows."""
    stored: dict[str, np.ndarray] = {}
    big = np.array([3.0e9, 2147483648.0, 4.0e9, 1.0, 2.5e9, 0.0, 4294967040.0, 7.0] * 2, np.float32)
    x = _stored("fptoui.f32_i32.x", big, "f32", stored)
    y = Arr("y", (16,), "i32")
    text = io_kernel("arith.fptoui f32 -> i32 of values from 2^31 to 2^32 - 256: the results have the top bit set",
                     [x], [y], f"  %y = arith.fptoui %x : {x.tensor} to {y.tensor}\n")
    d = run_draft("core.arith.fptoui.top_bit.f32_to_i32", "core", text, [x], [y], accuracy(Arith.fptoui), "fptoui, top bit set",
                  model=models.conversion([(Arith.fptoui, "f32", "i32")], "x_ptr", "y_ptr"))
    d.npy = stored
    yield d
    for dst, values in (("f16", [65519.0, 65520.0, 7.0e4, -1.0e5, 65504.0, -65536.0, 1.0e9, 2.0]),
                        ("bf16", [3.4e38, -3.4e38, 3.38e38, 3.3895e38, 1.0, -2.0, 3.39e38, 3.0e38])):
        stored = {}
        x = _stored(f"truncf.overflow.f32_{dst}.x", np.array(values * 2, np.float32), "f32", stored)
        y = Arr("y", (16,), dst)
        text = io_kernel(f"arith.truncf f32 -> {dst} of values around and beyond the largest finite {dst}: overflow gives infinity",
                         [x], [y], f"  %y = arith.truncf %x : {x.tensor} to {y.tensor}\n")
        d = run_draft(f"core.arith.truncf.overflow.f32_to_{dst}", "core", text, [x], [y], accuracy(Arith.truncf), "truncf overflow",
                      model=models.conversion([(Arith.truncf, "f32", dst)], "x_ptr", "y_ptr"))
        d.npy = stored
        yield d


def subnormals() -> Iterator[Draft]:
    """Inputs and results in the subnormal range of each float type: a flush to zero shows."""
    tiny = {"f16": 2.0**-24, "bf16": 2.0**-133, "f32": 2.0**-149}
    steps = np.array([1, 3, 7, 100, 1000, -5, -64, 511, 2, 9, -1, 250, 17, -300, 4, 33], dtype=np.float64)
    for dtype, unit in tiny.items():
        cast = np_dtype(dtype)
        a = (steps * unit).astype(np.float32).astype(cast)
        b = (np.roll(steps, 4) * unit).astype(np.float32).astype(cast)
        for op in (Arith.addf, Arith.subf, Arith.mulf, Arith.divf, Arith.maximumf, Math.absf):
            stored: dict[str, np.ndarray] = {}
            x0 = _stored(f"subnormal.{dtype}.x0", a, dtype, stored)
            ins = [x0]
            if op in (Arith.mulf, Arith.divf):
                # multiply/divide a subnormal by an ordinary number: the result stays subnormal
                ins.append(_stored(f"subnormal.{dtype}.scale", np.array([0.5, 2.0, 1.5, -0.25] * 4, np.float32).astype(cast), dtype,
                                   stored))
            elif op != Math.absf:
                ins.append(_stored(f"subnormal.{dtype}.x1", b, dtype, stored))
            ins = [Arr(f"x{i}", a_.shape, a_.dtype, a_.recipe) for i, a_ in enumerate(ins)]
            y = Arr("y", (16,), dtype)
            operands = ", ".join(f"%{a_.name}" for a_ in ins)
            text = io_kernel(f"{op} on subnormal {dtype} inputs with subnormal results (no flush to zero)", ins, [y],
                             f"  %y = {op} {operands} : {y.tensor}\n")
            d = run_draft(f"core.{op}.subnormal.{dtype}", "core", text, ins, [y], accuracy(op), f"{op} on subnormals",
                          model=models.elementwise(op, [f"{a_.name}_ptr" for a_ in ins], "y_ptr", dtype, accuracy(op)))
            d.npy = stored
            yield d


def special_compares_and_casts() -> Iterator[Draft]:
    """cmpf with NaN, infinities and signed zeros; casts of special values."""
    stored = {"inputs/specials.0.npy": SPECIALS, "inputs/specials.1.npy": np.roll(SPECIALS, 5)}
    for k, pred in enumerate(("oeq", "one", "olt", "oge", "ult", "uge", "ueq", "une", "ord", "uno")):
        dtype = ("f16", "bf16", "f32")[k % 3]
        a = Arr("a", (16,), dtype, {"recipe": "npy", "npy": "inputs/specials.0.npy"})
        b = Arr("b", (16,), dtype, {"recipe": "npy", "npy": "inputs/specials.1.npy"})
        y = Arr("y", (16,), "i32")
        body = (f"  %m = arith.cmpf {pred}, %a, %b : {a.tensor}\n"
                "  %y = arith.extui %m : tensor<16xi1> to tensor<16xi32>\n")
        text = io_kernel(f"arith.cmpf {pred} on NaN, infinities, signed zeros and subnormals", [a, b], [y], body)
        d = run_draft(f"core.arith.cmpf.{pred}.specials.{dtype}", "core", text, [a, b], [y], "exact", f"cmpf {pred} on specials",
                      model=models.computed(lambda v, pred=pred: {
                          "y_ptr": compare_float(pred, v["a_ptr"], v["b_ptr"]).astype(np.int32)}))
        d.npy = dict(stored)
        yield d
    for op, src, dst in ((Arith.truncf, "f32", "f16"), (Arith.truncf, "f32", "bf16"), (Arith.extf, "f16", "f32"),
                         (Arith.extf, "bf16", "f32")):
        x = Arr("x", (16,), src, {"recipe": "npy", "npy": "inputs/specials.0.npy"})
        y = Arr("y", (16,), dst)
        text = io_kernel(f"{op} {src} -> {dst} of NaN, infinities, signed zeros, subnormals and the largest f16",
                         [x], [y], f"  %y = {op} %x : {x.tensor} to {y.tensor}\n")
        d = run_draft(f"core.{op}.specials.{src}_to_{dst}", "core", text, [x], [y], accuracy(op), f"{op} on specials",
                      model=models.conversion([(op, src, dst)], "x_ptr", "y_ptr"))
        d.npy = {"inputs/specials.0.npy": SPECIALS}
        yield d


def reduction_inits() -> Iterator[Draft]:
    """linalg.reduce and linalg.matmul accumulate into their `outs` operand: a non-zero init."""
    for dtype in ("f32", "i32"):
        rec: dict[str, Any] = {"recipe": "normal"} if dtype == "f32" else {"recipe": "int", "low": -50, "high": 50}
        x = Arr("x", (8, 16), dtype, dict(rec))
        init = Arr("init", (8,), dtype, dict(rec))
        y = Arr("y", (8,), dtype)
        add = Arith.addf if dtype == "f32" else Arith.addi
        body = f"  %y = linalg.reduce {{ {add} }} ins(%x : {x.tensor}) outs(%init : {init.tensor}) dimensions = [1]\n"
        text = io_kernel("y = init + row sums of x: linalg.reduce starts from its outs operand, here loaded from memory",
                         [x, init], [y], body)
        tol = "reduction" if dtype == "f32" else "exact"
        sums = (models.row_sums("x_ptr", "y_ptr", dtype, 1, init="init_ptr") if dtype == "f32"
                else fold_model("addi", "x_ptr", "y_ptr", dtype, "init_ptr"))
        yield run_draft(f"core.linalg.reduce.init.sum.{dtype}", "core", text, [x, init], [y], tol, "reduce from a non-zero init", n=17,
                        model=sums)
        mx = Arith.maximumf if dtype == "f32" else Arith.maxsi
        body = f"  %y = linalg.reduce {{ {mx} }} ins(%x : {x.tensor}) outs(%init : {init.tensor}) dimensions = [1]\n"
        text = io_kernel("y = max(init, row maxima of x): some inits are larger than their row", [x, init], [y], body)
        yield run_draft(f"core.linalg.reduce.init.max.{dtype}", "core", text, [x, init], [y], "exact", "max-reduce from an init",
                        model=fold_model("maximumf" if dtype == "f32" else "maxsi", "x_ptr", "y_ptr", dtype, "init_ptr"))
    a = Arr("a", (4, 8), "f32", {"recipe": "normal"})
    b = Arr("b", (8, 4), "f32", {"recipe": "normal"})
    c0 = Arr("acc", (4, 4), "f32", {"recipe": "normal", "low": -40, "high": 40})
    c = Arr("c", (4, 4), "f32")
    body = f"  %c = linalg.matmul ins(%a, %b : {a.tensor}, {b.tensor}) outs(%acc : {c0.tensor}) -> {c.tensor}\n"
    text = io_kernel("c = acc + a @ b: linalg.matmul accumulates into its outs operand", [a, b, c0], [c], body)
    yield run_draft("core.linalg.matmul.init.f32", "core", text, [a, b, c0], [c], "matmul", "matmul into a non-zero C", n=8,
                    model=models.contraction("mk,kn->mn", "a_ptr", "b_ptr", "c_ptr", "f32", 8, init="acc_ptr"))


def indirect_orders() -> Iterator[Draft]:
    """Indirect access with repeated, reversed and shuffled indices, on rows and on columns."""
    V, N, D = 16, 8, 4
    index_sets = {
        "repeated": np.array([3, 3, 3, 0, 0, 15, 3, 15], np.int32),
        "reversed": np.arange(N, dtype=np.int32)[::-1] * 2 + 1,
        "shuffled": np.array([9, 2, 14, 2, 7, 0, 11, 5], np.int32),
    }
    for name, ids_values in index_sets.items():
        stored: dict[str, np.ndarray] = {}
        table = Arr("table", (V, D), "f32", {"recipe": "arange"})
        ids = _stored(f"indirect.{name}.ids", ids_values, "i32", stored)
        y = Arr("y", (N, D), "f32")
        text = (f"// y[r, :] = table[ids[r], :] with {name} indices {ids_values.tolist()}\n"
                "func.func @kernel(%table_ptr: index, %ids_ptr: index, %y_ptr: index) attributes {grid = [1]} {\n"
                "  %c0 = arith.constant 0 : index\n"
                f"  %tv = ktdp.construct_memory_view %table_ptr, sizes: [{V}, {D}], strides: [{D}, 1] {{coordinate_set = {box_set((V, D))}, memory_space = #ktdp.memory_space<global>}} : memref<{V}x{D}xf32>\n"
                f"  %iv = ktdp.construct_memory_view %ids_ptr, sizes: [{N}], strides: [1] {{coordinate_set = {box_set((N,))}, memory_space = #ktdp.memory_space<global>}} : memref<{N}xi32>\n"
                f"  %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tv[ind(%iv[%m]), (%k)] "
                f"{{variables_space_order = affine_map<(d0, d1) -> (d0, d1)>, variables_space_set = {box_set((N, D))}}} "
                f": memref<{V}x{D}xf32>, memref<{N}xi32> -> !ktdp.access_tile<{N}x{D}xindex>\n"
                f"  %g = ktdp.load %src : !ktdp.access_tile<{N}x{D}xindex> -> tensor<{N}x{D}xf32>\n"
                f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [{N}, {D}], strides: [{D}, 1] {{coordinate_set = {box_set((N, D))}, memory_space = #ktdp.memory_space<global>}} : memref<{N}x{D}xf32>\n"
                f"  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = {box_set((N, D))}}} : memref<{N}x{D}xf32> -> !ktdp.access_tile<{N}x{D}xindex>\n"
                f"  ktdp.store %g, %yt : tensor<{N}x{D}xf32>, !ktdp.access_tile<{N}x{D}xindex>\n"
                "  func.return\n}\n")
        d = run_draft(f"multi-tile.indirect.rows.{name}", "multi-tile", text, [table, ids], [y], "exact",
                      f"indirect gather of rows, {name} indices",
                      model=models.computed(lambda a: {"y_ptr": a["table_ptr"][a["ids_ptr"].astype(np.int64)]}))
        d.npy = stored
        yield d
        # the same indices on the inner dimension: y[r, j] = table2[r, ids[j]]
        stored = {}
        table2 = Arr("table", (D, V), "f32", {"recipe": "arange"})
        ids2 = _stored(f"indirect.{name}.ids", ids_values, "i32", stored)
        y2 = Arr("y", (D, N), "f32")
        text2 = (f"// y[r, j] = table[r, ids[j]] with {name} indices {ids_values.tolist()} on the inner dimension\n"
                 "func.func @kernel(%table_ptr: index, %ids_ptr: index, %y_ptr: index) attributes {grid = [1]} {\n"
                 "  %c0 = arith.constant 0 : index\n"
                 f"  %tv = ktdp.construct_memory_view %table_ptr, sizes: [{D}, {V}], strides: [{V}, 1] {{coordinate_set = {box_set((D, V))}, memory_space = #ktdp.memory_space<global>}} : memref<{D}x{V}xf32>\n"
                 f"  %iv = ktdp.construct_memory_view %ids_ptr, sizes: [{N}], strides: [1] {{coordinate_set = {box_set((N,))}, memory_space = #ktdp.memory_space<global>}} : memref<{N}xi32>\n"
                 f"  %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tv[(%m), ind(%iv[%k])] "
                 f"{{variables_space_order = affine_map<(d0, d1) -> (d0, d1)>, variables_space_set = {box_set((D, N))}}} "
                 f": memref<{D}x{V}xf32>, memref<{N}xi32> -> !ktdp.access_tile<{D}x{N}xindex>\n"
                 f"  %g = ktdp.load %src : !ktdp.access_tile<{D}x{N}xindex> -> tensor<{D}x{N}xf32>\n"
                 f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [{D}, {N}], strides: [{N}, 1] {{coordinate_set = {box_set((D, N))}, memory_space = #ktdp.memory_space<global>}} : memref<{D}x{N}xf32>\n"
                 f"  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = {box_set((D, N))}}} : memref<{D}x{N}xf32> -> !ktdp.access_tile<{D}x{N}xindex>\n"
                 f"  ktdp.store %g, %yt : tensor<{D}x{N}xf32>, !ktdp.access_tile<{D}x{N}xindex>\n"
                 "  func.return\n}\n")
        d = run_draft(f"multi-tile.indirect.columns.{name}", "multi-tile", text2, [table2, ids2], [y2], "exact",
                      f"indirect gather of columns, {name} indices",
                      model=models.computed(lambda a: {"y_ptr": a["table_ptr"][:, a["ids_ptr"].astype(np.int64)]}))
        d.npy = stored
        yield d


def cases() -> Iterator[Draft]:
    yield from unsigned_ops()
    yield from out_of_range_conversions()
    yield from subnormals()
    yield from special_compares_and_casts()
    yield from reduction_inits()


def multitile_cases() -> Iterator[Draft]:
    yield from indirect_orders()
