"""Core cases for control flow (scf), affine index arithmetic and function calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.draft import Draft, run_draft
from conformance.gen.kernel import Arr, io_kernel
from conformance.oracle.folds import fold
from ktir.dialects.names import Arith

NORMAL: dict[str, Any] = {"recipe": "normal"}
FLOATS = ("f16", "bf16", "f32")


def loops() -> Iterator[Draft]:
    for dtype in FLOATS:
        x = Arr("x", (8, 16), dtype, dict(NORMAL))
        acc = Arr("acc", (16,), dtype)
        # scf.for with a store in the loop (row by row) and one with iter_args (a running sum)
        body = (
            "  %c1 = arith.constant 1 : index\n"
            "  %c8 = arith.constant 8 : index\n"
            f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [8, 16], strides: [16, 1] {{coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>, memory_space = #ktdp.memory_space<global>}} : memref<8x16x{dtype}>\n"
            "  scf.for %i = %c0 to %c8 step %c1 {\n"
            f"    %row = tensor.extract_slice %x[%i, 0] [1, 16] [1, 1] : tensor<8x16x{dtype}> to tensor<1x16x{dtype}>\n"
            f"    %neg = arith.negf %row : tensor<1x16x{dtype}>\n"
            f"    %t = ktdp.construct_access_tile %yv[%i, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 15 >= 0)>}} : memref<8x16x{dtype}> -> !ktdp.access_tile<1x16xindex>\n"
            f"    ktdp.store %neg, %t : tensor<1x16x{dtype}>, !ktdp.access_tile<1x16xindex>\n"
            "  }\n"
            f"  %e = tensor.empty() : tensor<16x{dtype}>\n"
            f"  %zero = arith.constant 0.000000e+00 : {dtype}\n"
            f"  %init = linalg.fill ins(%zero : {dtype}) outs(%e : tensor<16x{dtype}>) -> tensor<16x{dtype}>\n"
            f"  %acc = scf.for %i = %c0 to %c8 step %c1 iter_args(%a = %init) -> (tensor<16x{dtype}>) {{\n"
            f"    %row = tensor.extract_slice %x[%i, 0] [1, 16] [1, 1] : tensor<8x16x{dtype}> to tensor<16x{dtype}>\n"
            f"    %s = arith.addf %a, %row : tensor<16x{dtype}>\n"
            f"    scf.yield %s : tensor<16x{dtype}>\n"
            "  }\n")
        text = io_kernel("scf.for: rows stored inside the loop (y = -x) and a loop-carried column sum", [x], [acc], body)
        # the loop fixes the order of the additions: each is rounded in turn, the sum is exact
        d = run_draft(f"core.scf.for.{dtype}", "core", text, [x], [acc], "exact", "scf.for with stores and iter_args",
                      model=models.computed(lambda a, t=dtype: {
                          "acc_ptr": fold("addf", a["x_ptr"].T, 1, np.zeros(16, a["x_ptr"].dtype), t), "y_ptr": -a["x_ptr"]}))
        y_arr = Arr("y_ptr", (8, 16), dtype, {"recipe": "fill", "value": -7.0})
        d.arrays.append(y_arr)
        d.outputs.append(("y_ptr", "exact", 1))
        d.text = d.text.replace("%acc_ptr: index)", "%acc_ptr: index, %y_ptr: index)")
        yield d
        v = Arr("v", (16,), dtype, dict(NORMAL))
        w = Arr("w", (16,), dtype)
        body = (
            "  %c1 = arith.constant 1 : index\n"
            "  %c5 = arith.constant 5 : index\n"
            # while: double v until the step counter reaches 5
            f"  %r:2 = scf.while (%cur = %v, %k = %c0) : ({v.tensor}, index) -> ({v.tensor}, index) {{\n"
            "    %go = arith.cmpi slt, %k, %c5 : index\n"
            f"    scf.condition(%go) %cur, %k : {v.tensor}, index\n"
            "  } do {\n"
            f"  ^bb0(%c: {v.tensor}, %n: index):\n"
            f"    %d = arith.addf %c, %c : {v.tensor}\n"
            "    %n1 = arith.addi %n, %c1 : index\n"
            f"    scf.yield %d, %n1 : {v.tensor}, index\n"
            "  }\n"
            # if with results on the scalar flag, and an execute_region
            "  %big = arith.cmpi sgt, %flag, %c0 : index\n"
            f"  %sel = scf.if %big -> ({v.tensor}) {{\n"
            f"    scf.yield %r#0 : {v.tensor}\n"
            "  } else {\n"
            f"    %m = arith.negf %r#0 : {v.tensor}\n"
            f"    scf.yield %m : {v.tensor}\n"
            "  }\n"
            f"  %w = scf.execute_region -> {v.tensor} {{\n"
            f"    %h = arith.mulf %sel, %v : {v.tensor}\n"
            f"    scf.yield %h : {v.tensor}\n"
            "  }\n")
        for flag in (1, 0) if dtype == "f32" else (1,):
            text = io_kernel("scf.while doubling v five times, scf.if on a scalar flag, scf.execute_region",
                             [v], [w], body, scalars="%flag: index")
            d = run_draft(f"core.scf.while_if.{dtype}.flag{flag}", "core", text, [v], [w], "exact", "while, if, execute_region",
                          model=models.computed(lambda a, t=dtype, flag=flag: {"w_ptr": _while_if(a["v_ptr"], t, flag)}))
            d.scalars["flag"] = ("index", flag)
            yield d
        u = Arr("u", (64,), dtype, dict(NORMAL))
        f_out = Arr("f", (64,), dtype)
        p_out = Arr("p", (1,), "f32")
        body = (
            f"  %f = scf.forall (%i) in (4) shared_outs(%o = %u) -> ({u.tensor}) {{\n"
            "    %c16 = arith.constant 16 : index\n"
            "    %off = arith.muli %i, %c16 : index\n"
            f"    %sl = tensor.extract_slice %u[%off] [16] [1] : {u.tensor} to tensor<16x{dtype}>\n"
            f"    %ng = math.absf %sl : tensor<16x{dtype}>\n"
            "    scf.forall.in_parallel {\n"
            f"      tensor.parallel_insert_slice %ng into %o[%off] [16] [1] : tensor<16x{dtype}> into {u.tensor}\n"
            "    }\n"
            "  }\n"
            "  %c1 = arith.constant 1 : index\n"
            "  %c64 = arith.constant 64 : index\n"
            "  %fz = arith.constant 0.000000e+00 : f32\n"
            "  %sum = scf.parallel (%iv) = (%c0) to (%c64) step (%c1) init (%fz) -> f32 {\n"
        )
        # a narrow element is widened to the f32 accumulator; f32 is summed as it is
        if dtype != "f32":
            body += (
                f"    %el = tensor.extract %u[%iv] : {u.tensor}\n"
                f"    %el32 = arith.extf %el : {dtype} to f32\n"
            )
        else:
            body += f"    %el32 = tensor.extract %u[%iv] : {u.tensor}\n"
        body += (
            "    scf.reduce(%el32 : f32) {\n"
            "    ^bb0(%lhs: f32, %rhs: f32):\n"
            "      %r = arith.addf %lhs, %rhs : f32\n"
            "      scf.reduce.return %r : f32\n"
            "    }\n"
            "  }\n"
            "  %p = tensor.splat %sum : tensor<1xf32>\n")
        text = io_kernel("scf.forall with parallel_insert_slice (|u| per 16-element slice); scf.parallel sum with scf.reduce",
                         [u], [f_out, p_out], body)
        yield run_draft(f"core.scf.forall_parallel.{dtype}", "core", text, [u], [f_out, p_out], ["exact", "reduction"],
                        "forall and parallel", n=64, model=models.combine(
                            models.computed(lambda a: {"f_ptr": np.abs(a["u_ptr"])}),
                            models.row_sums("u_ptr", "p_ptr", "f32", 0)))


def _while_if(v: np.ndarray, t: str, flag: int) -> np.ndarray:
    r = v
    for _ in range(5):  # scf.while: doubled (c + c) while the counter is below 5
        r = models.rounded_op(Arith.addf, t, r, r)
    sel = r if flag > 0 else -r
    return models.rounded_op(Arith.mulf, t, sel, v)


def _window(x: np.ndarray, n: int, off: int) -> np.ndarray:
    base = max(min(2 * n + off, n + 40), 3)  # affine.apply, affine.min, affine.max
    w = x[base:base + 8]
    return w + w if x.dtype.kind in "iu" else models.rounded_op(Arith.addf, "f32" if x.dtype == np.float32 else "f16", w, w)


def affine_and_calls() -> Iterator[Draft]:
    for k, dtype in enumerate(("f16", "f32", "i32")):
        rec: dict[str, Any] = {"recipe": "int", "low": -50, "high": 50} if dtype == "i32" else NORMAL
        x = Arr("x", (64,), dtype, dict(rec))
        y = Arr("y", (8,), dtype)
        off = 4 * (k + 1)
        # the access tile's base comes from affine.apply / min / max of the scalar %n
        body = (
            f"  %a = affine.apply affine_map<(d0) -> (d0 * 2 + {off})>(%n)\n"
            "  %b = affine.min affine_map<(d0)[s0] -> (d0, s0 + 40)>(%a)[%n]\n"
            "  %base = affine.max affine_map<(d0) -> (d0, 3)>(%b)\n"
            f"  %win = ktdp.construct_access_tile %x_view[%base] {{access_tile_order = affine_map<(d0) -> (d0)>, access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>}} : memref<64x{dtype}> -> !ktdp.access_tile<8xindex>\n"
            f"  %w = ktdp.load %win : !ktdp.access_tile<8xindex> -> tensor<8x{dtype}>\n"
            f"  %y = func.call @twice(%w) : (tensor<8x{dtype}>) -> tensor<8x{dtype}>\n")
        add = Arith.addi if dtype == "i32" else Arith.addf
        helper = (f"func.func private @twice(%t: tensor<8x{dtype}>) -> tensor<8x{dtype}> {{\n"
                  f"  %s = {add} %t, %t : tensor<8x{dtype}>\n"
                  f"  func.return %s : tensor<8x{dtype}>\n}}\n")
        for n in (3, 20):
            text = io_kernel("affine.apply/min/max compute a window's base; func.call doubles it", [x], [y], body,
                             scalars="%n: index", helpers=helper)
            d = run_draft(f"core.affine.window.{dtype}.n{n}", "core", text, [x], [y], "exact", "affine index arithmetic and func.call",
                          function="kernel", model=models.computed(lambda a, n=n, off=off: {"y_ptr": _window(a["x_ptr"], n, off)}))
            d.scalars["n"] = ("index", n)
            yield d


def cases() -> Iterator[Draft]:
    yield from loops()
    yield from affine_and_calls()
