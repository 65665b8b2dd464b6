"""The `multi-tile` level: grids of tiles, distributed views, indirect access, runtime args.

Tiles do not communicate here: each tile computes its own part of the output. A kernel
that skips a tile, or runs every tile on tile 0's data, leaves part of the output wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.draft import Draft, run_draft
from conformance.gen.kernel import Arr, box_set, identity_map
from conformance.oracle import scalar
from conformance.oracle.elementwise import by_class, float_result, map_elements
from conformance.oracle.expect import Expected
from ktir.dialects.names import Arith, Math

NORMAL: dict[str, Any] = {"recipe": "normal"}
INT: dict[str, Any] = {"recipe": "int", "low": -50, "high": 50}
GLOBAL = "#ktdp.memory_space<global>"


def _view(name: str, ptr: str, shape: tuple[int, ...], dtype: str) -> str:
    st = [1]
    for n in reversed(shape[1:]):
        st.insert(0, st[0] * n)
    return (f"  %{name} = ktdp.construct_memory_view {ptr}, sizes: [{', '.join(map(str, shape))}], "
            f"strides: [{', '.join(map(str, st))}] {{coordinate_set = {box_set(shape)}, memory_space = {GLOBAL}}} "
            f": memref<{'x'.join(map(str, shape))}x{dtype}>\n")


def _tile(name: str, view: str, base: list[str], shape: tuple[int, ...], box: tuple[int, ...], dtype: str) -> str:
    return (f"  %{name} = ktdp.construct_access_tile %{view}[{', '.join(base)}] "
            f"{{access_tile_order = {identity_map(len(box))}, access_tile_set = {box_set(box)}}} "
            f": memref<{'x'.join(map(str, shape))}x{dtype}> -> !ktdp.access_tile<{'x'.join(map(str, box))}xindex>\n")


def grid_elementwise() -> Iterator[Draft]:
    for grid in (2, 4, 8):
        for dtype in ("f16", "f32", "i32"):
            for op in ("add", "mul"):
                full = 64
                part = full // grid
                name = (Arith.addi if op == "add" else Arith.muli) if dtype == "i32" else (Arith.addf if op == "add" else Arith.mulf)
                rec = INT if dtype == "i32" else NORMAL
                a = Arr("a", (full,), dtype, dict(rec))
                b = Arr("b", (full,), dtype, dict(rec))
                c = Arr("c", (full,), dtype)
                T = f"tensor<{part}x{dtype}>"
                at = f"!ktdp.access_tile<{part}xindex>"
                text = (f"// grid [{grid}]: tile t computes c = a {op} b on elements [{part} t, {part} (t + 1))\n"
                        f"func.func @kernel(%a_ptr: index, %b_ptr: index, %c_ptr: index) attributes {{grid = [{grid}]}} {{\n"
                        "  %t = ktdp.get_compute_tile_id : index\n"
                        f"  %off = affine.apply affine_map<(d0) -> (d0 * {part})>(%t)\n"
                        + "".join(_view(f"{n}v", f"%{n}_ptr", (full,), dtype) for n in "abc")
                        + "".join(_tile(f"{n}t", f"{n}v", ["%off"], (full,), (part,), dtype) for n in "abc")
                        + f"  %a = ktdp.load %at : {at} -> {T}\n"
                        f"  %b = ktdp.load %bt : {at} -> {T}\n"
                        f"  %c = {name} %a, %b : {T}\n"
                        f"  ktdp.store %c, %ct : {T}, {at}\n"
                        "  func.return\n}\n")
                yield run_draft(f"multi-tile.grid{grid}.{name}.{dtype}", "multi-tile", text, [a, b], [c], "exact",
                                f"{name} split over {grid} tiles", grid=[grid],
                                model=models.elementwise(name, ["a_ptr", "b_ptr"], "c_ptr", dtype, "exact"))


def _twice_exp(x: np.ndarray, t: str) -> Expected:
    """exp(x) * 2: the multiplication by two is exact (no overflow or underflow for these inputs),
    so the result is within 1 ulp of 2 e^x exactly when exp's result is within 1 ulp of e^x."""
    twice = map_elements(lambda v: scalar.mulf(v, Fraction(2)), float_result(Math.exp, x))
    return by_class(twice, t, "1 ulp")


def grid_2d() -> Iterator[Draft]:
    for dtype in ("f16", "bf16", "f32"):
        for gm, gn in ((2, 2), (2, 4), (4, 2)):
            bm, bn = 4, 8
            shape = (gm * bm, gn * bn)
            x = Arr("x", shape, dtype, dict(NORMAL))
            y = Arr("y", shape, dtype)
            T = f"tensor<{bm}x{bn}x{dtype}>"
            at = f"!ktdp.access_tile<{bm}x{bn}xindex>"
            text = (f"// grid [{gm}, {gn}]: tile (i, j) writes y = exp(x) * 2 on its {bm}x{bn} block\n"
                    f"func.func @kernel(%x_ptr: index, %y_ptr: index) attributes {{grid = [{gm}, {gn}]}} {{\n"
                    "  %i, %j = ktdp.get_compute_tile_id : index, index\n"
                    f"  %r = affine.apply affine_map<(d0) -> (d0 * {bm})>(%i)\n"
                    f"  %c = affine.apply affine_map<(d0) -> (d0 * {bn})>(%j)\n"
                    + _view("xv", "%x_ptr", shape, dtype) + _view("yv", "%y_ptr", shape, dtype)
                    + _tile("xt", "xv", ["%r", "%c"], shape, (bm, bn), dtype)
                    + _tile("yt", "yv", ["%r", "%c"], shape, (bm, bn), dtype)
                    + f"  %x = ktdp.load %xt : {at} -> {T}\n"
                    f"  %e = math.exp %x : {T}\n"
                    f"  %two = arith.constant dense<2.000000e+00> : {T}\n"
                    f"  %y = arith.mulf %e, %two : {T}\n"
                    f"  ktdp.store %y, %yt : {T}, {at}\n"
                    "  func.return\n}\n")
            yield run_draft(f"multi-tile.grid{gm}x{gn}.exp.{dtype}", "multi-tile", text, [x], [y], "1 ulp",
                            f"2-D grid [{gm}, {gn}]", grid=[gm, gn], model=lambda a, t=dtype: {"y_ptr": _twice_exp(a["x_ptr"], t)})


def distributed_views() -> Iterator[Draft]:
    for dtype in ("f16", "f32", "i32"):
        for grid in (2, 4):
            rec = INT if dtype == "i32" else NORMAL
            lo = Arr("lo", (4, 16), dtype, dict(rec))
            hi = Arr("hi", (4, 16), dtype, dict(rec))
            y = Arr("y", (16, 8), dtype)
            rows = 16 // grid
            M = f"memref<4x16x{dtype}>"
            lo_set = "affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 15 >= 0)>"
            hi_set = "affine_set<(d0, d1) : (d0 - 4 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>"
            text = (f"// Two 4x16 global arrays seen as one 8x16 distributed view; grid [{grid}]: tile t\n"
                    f"// writes rows [{rows} t, {rows} (t + 1)) of y = transpose of the whole view\n"
                    f"func.func @kernel(%lo_ptr: index, %hi_ptr: index, %y_ptr: index) attributes {{grid = [{grid}]}} {{\n"
                    "  %c0 = arith.constant 0 : index\n"
                    "  %t = ktdp.get_compute_tile_id : index\n"
                    f"  %lv = ktdp.construct_memory_view %lo_ptr, sizes: [4, 16], strides: [16, 1] {{coordinate_set = {lo_set}, memory_space = {GLOBAL}}} : {M}\n"
                    f"  %hv = ktdp.construct_memory_view %hi_ptr, sizes: [4, 16], strides: [16, 1] {{coordinate_set = {hi_set}, memory_space = {GLOBAL}}} : {M}\n"
                    f"  %all = ktdp.construct_distributed_memory_view(%lv, %hv : {M}, {M}) : memref<8x16x{dtype}>\n"
                    f"  %col = affine.apply affine_map<(d0) -> (d0 * {rows})>(%t)\n"
                    f"  %src = ktdp.construct_access_tile %all[%c0, %col] {{access_tile_order = affine_map<(d0, d1) -> (d1, d0)>, access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + {rows - 1} >= 0)>}} : memref<8x16x{dtype}> -> !ktdp.access_tile<{rows}x8xindex>\n"
                    f"  %v = ktdp.load %src : !ktdp.access_tile<{rows}x8xindex> -> tensor<{rows}x8x{dtype}>\n"
                    + _view("yv", "%y_ptr", (16, 8), dtype)
                    + _tile("yt", "yv", ["%col", "%c0"], (16, 8), (rows, 8), dtype)
                    + f"  ktdp.store %v, %yt : tensor<{rows}x8x{dtype}>, !ktdp.access_tile<{rows}x8xindex>\n"
                    "  func.return\n}\n")
            yield run_draft(f"multi-tile.distributed_view.grid{grid}.{dtype}", "multi-tile", text, [lo, hi], [y], "exact",
                            "distributed memory view, transposed access order", grid=[grid],
                            model=models.computed(lambda a: {"y_ptr": np.concatenate([a["lo_ptr"], a["hi_ptr"]]).T.copy()}))


def indirect_gather() -> Iterator[Draft]:
    for dtype in ("f16", "bf16", "f32"):
        for grid in (1, 2, 4):
            V, N, D = 32, 16, 8
            rows = N // grid
            table = Arr("table", (V, D), dtype, dict(NORMAL))
            ids = Arr("ids", (N,), "i32", {"recipe": "int", "low": 0, "high": V})
            y = Arr("y", (N, D), dtype)
            text = (f"// Embedding gather: y[r, :] = table[ids[r], :]; grid [{grid}], tile t gathers rows [{rows} t, {rows} (t + 1))\n"
                    f"func.func @kernel(%table_ptr: index, %ids_ptr: index, %y_ptr: index) attributes {{grid = [{grid}]}} {{\n"
                    "  %c0 = arith.constant 0 : index\n"
                    "  %t = ktdp.get_compute_tile_id : index\n"
                    f"  %r = affine.apply affine_map<(d0) -> (d0 * {rows})>(%t)\n"
                    + _view("tv", "%table_ptr", (V, D), dtype) + _view("iv", "%ids_ptr", (N,), "i32")
                    + _view("yv", "%y_ptr", (N, D), dtype)
                    + f"  %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tv[ind(%iv[%r + %m]), (%k)] "
                    f"{{variables_space_order = affine_map<(d0, d1) -> (d0, d1)>, variables_space_set = {box_set((rows, D))}}} "
                    f": memref<{V}x{D}x{dtype}>, memref<{N}xi32> -> !ktdp.access_tile<{rows}x{D}xindex>\n"
                    f"  %g = ktdp.load %src : !ktdp.access_tile<{rows}x{D}xindex> -> tensor<{rows}x{D}x{dtype}>\n"
                    + _tile("yt", "yv", ["%r", "%c0"], (N, D), (rows, D), dtype)
                    + f"  ktdp.store %g, %yt : tensor<{rows}x{D}x{dtype}>, !ktdp.access_tile<{rows}x{D}xindex>\n"
                    "  func.return\n}\n")
            yield run_draft(f"multi-tile.indirect_gather.grid{grid}.{dtype}", "multi-tile", text, [table, ids], [y], "exact",
                            "indirect access tile gathering rows", grid=[grid],
                            model=models.computed(lambda a: {"y_ptr": a["table_ptr"][a["ids_ptr"].astype(np.int64)]}))


def runtime_args() -> Iterator[Draft]:
    for M in (8, 16, 32):
        for dtype in ("f16", "f32"):
            a = Arr("a", (M, 16), dtype, dict(NORMAL))
            y = Arr("y", (M, 16), dtype)
            dyn = f"memref<?x16x{dtype}>"
            cset = "affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 15 >= 0)>"
            blk = "affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 15 >= 0)>"
            text = (f"// A runtime argument M (a multiple of 4, at most 64) sizes the views; grid [2]: tile t\n"
                    "// negates the 4-row blocks starting at rows 4 t, 4 t + 8, ...\n"
                    f"func.func @kernel(%a_ptr: index, %y_ptr: index, %M_arg: !ktdp.runtime_arg<index, granularity=4, upperbound=64>) attributes {{grid = [2]}} {{\n"
                    "  %M = ktdp.runtime_arg_extract value from %M_arg : !ktdp.runtime_arg<index, granularity=4, upperbound=64> -> index\n"
                    "  %c0 = arith.constant 0 : index\n"
                    "  %c8 = arith.constant 8 : index\n"
                    "  %t = ktdp.get_compute_tile_id : index\n"
                    "  %first = affine.apply affine_map<(d0) -> (d0 * 4)>(%t)\n"
                    f"  %av = ktdp.construct_memory_view %a_ptr, sizes: [%M, 16], strides: [16, 1] {{coordinate_set = {cset}, memory_space = {GLOBAL}}} : {dyn}\n"
                    f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [%M, 16], strides: [16, 1] {{coordinate_set = {cset}, memory_space = {GLOBAL}}} : {dyn}\n"
                    "  scf.for %r = %first to %M step %c8 {\n"
                    f"    %at = ktdp.construct_access_tile %av[%r, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = {blk}}} : {dyn} -> !ktdp.access_tile<4x16xindex>\n"
                    f"    %yt = ktdp.construct_access_tile %yv[%r, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = {blk}}} : {dyn} -> !ktdp.access_tile<4x16xindex>\n"
                    f"    %x = ktdp.load %at : !ktdp.access_tile<4x16xindex> -> tensor<4x16x{dtype}>\n"
                    f"    %n = arith.negf %x : tensor<4x16x{dtype}>\n"
                    f"    ktdp.store %n, %yt : tensor<4x16x{dtype}>, !ktdp.access_tile<4x16xindex>\n"
                    "  }\n"
                    "  func.return\n}\n")
            d = run_draft(f"multi-tile.runtime_arg.M{M}.{dtype}", "multi-tile", text, [a], [y], "exact",
                          "runtime_arg_extract sizing dynamic views", grid=[2], model=models.computed(lambda a: {"y_ptr": -a["a_ptr"]}))
            d.scalars["M_arg"] = ("index", M)
            yield d


def cases() -> Iterator[Draft]:
    yield from grid_elementwise()
    yield from grid_2d()
    yield from distributed_views()
    yield from indirect_gather()
    yield from runtime_args()
