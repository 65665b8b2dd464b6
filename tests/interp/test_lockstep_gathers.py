"""Lockstep gathers (lockstep_memory._gather) decide their bounds check from the coordinates'
known minimum and maximum when those prove every row inside the array, and from the exact
rows otherwise. Whatever decides, a run in lockstep gives the per-tile run's outputs and
statistics, or its error with the same message and coordinate: an index outside the view
(out-of-view) or a row inside the view but past the array (out-of-bounds), in a loop that
lockstep vectorises, as in the embedding example. Kernels are text, as in
test_indirect_checks.py: the builder has no indirect access tiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference_interp as ri
from ktir.dialects.names import Func
from reference_interp.compiler import FuncCompiler

from .helpers import FAST, module
from .test_lockstep import _compare

# Grid [2]; each tile gathers blocks of 2 rows of 8 f32 (rows 2t + 4i, i < B / 4) of a table
# viewed as V rows (the array may hold fewer: `rows` of them), in a loop lockstep vectorises.
GATHER = """
#tab = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#ids = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
#vars = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @k(%e_ptr: index, %ids_ptr: index, %y_ptr: index, %V: index, %B: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %t = ktdp.get_compute_tile_id : index
  %tab = ktdp.construct_memory_view %e_ptr, sizes: [%V, 8], strides: [8, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<?x8xf32>
  %idv = ktdp.construct_memory_view %ids_ptr, sizes: [%B], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<?xi32>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [%B, 8], strides: [8, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<?x8xf32>
  %first = arith.muli %t, %c2 : index
  scf.for %r = %first to %B step %c4 {
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tab[ind(%idv[%r + %m]), (%k)] {variables_space_order = #id2, variables_space_set = #vars} : memref<?x8xf32>, memref<?xi32> -> !ktdp.access_tile<2x8xindex>
    %rows = ktdp.load %src : !ktdp.access_tile<2x8xindex> -> tensor<2x8xf32>
    %dst = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_order = #id2, access_tile_set = #vars} : memref<?x8xf32> -> !ktdp.access_tile<2x8xindex>
    ktdp.store %rows, %dst : tensor<2x8xf32>, !ktdp.access_tile<2x8xindex>
  }
  return
}
"""


def _args(ids: list[int], rows: int, view_rows: int) -> dict[str, Any]:
    return {"e_ptr": np.arange(rows * 8, dtype=np.float32).reshape(rows, 8), "ids_ptr": np.asarray(ids, np.int32),
            "y_ptr": np.zeros((len(ids), 8), np.float32), "V": view_rows, "B": len(ids)}


def test_in_bounds_gather_runs_in_lockstep_and_is_exact() -> None:
    ids = [3, 0, 9, 3, 7, 7, 1, 2]
    got = _compare(module(GATHER), _args(ids, 10, 10))
    assert isinstance(got, ri.RunResult) and got.lockstep
    np.testing.assert_array_equal(got.outputs["y_ptr"], np.arange(80, dtype=np.float32).reshape(10, 8)[ids])


@pytest.mark.parametrize(("bad", "kind"), [(10, "out-of-bounds"), (15, "out-of-bounds"), (16, "out-of-view"),
                                           (-1, "out-of-view")])
def test_a_bad_index_is_the_per_tile_error(bad: int, kind: str) -> None:
    """The view has 16 rows, the array 10: index 10 or 15 is in the view but past the array."""
    ids = [3, 0, 9, 3, 7, bad, 1, 2]
    got = _compare(module(GATHER), _args(ids, 10, 16))
    assert isinstance(got, tuple) and got[0] == kind, got


@given(st.lists(st.integers(-2, 12), min_size=4, max_size=12).map(lambda x: x[: len(x) // 4 * 4]),
       st.integers(1, 12), st.integers(1, 14))
@FAST
def test_random_gathers_match_the_per_tile_run(ids: list[int], rows: int, view_rows: int) -> None:
    _compare(module(GATHER), _args(ids, rows, view_rows))


# Two gathered coordinates whose bounds alone put the last row past the array although no
# pair of them does: rows i * 8 + j of a 2 x 8 view over 9 elements, (i, j) = (0, 7) or
# (1, 0) (the bounds say up to 1 * 8 + 7 = 15): the exact rows decide, and the run is in bounds.
PAIRS = """
#tab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#ids = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#one = affine_set<(d0) : (d0 == 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @k(%e_ptr: index, %i_ptr: index, %j_ptr: index, %y_ptr: index) attributes {grid = [2]} {
  %t = ktdp.get_compute_tile_id : index
  %tab = ktdp.construct_memory_view %e_ptr, sizes: [2, 8], strides: [8, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<2x8xf32>
  %iv = ktdp.construct_memory_view %i_ptr, sizes: [4], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  %jv = ktdp.construct_memory_view %j_ptr, sizes: [4], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [4], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %p = %t to %c4 step %c2 {
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%m) %tab[ind(%iv[%p + %m]), ind(%jv[%p + %m])] {variables_space_order = #id1, variables_space_set = #one} : memref<2x8xf32>, memref<4xi32>, memref<4xi32> -> !ktdp.access_tile<1xindex>
    %v = ktdp.load %src : !ktdp.access_tile<1xindex> -> tensor<1xf32>
    %dst = ktdp.construct_access_tile %yv[%p] {access_tile_order = #id1, access_tile_set = #one} : memref<4xf32> -> !ktdp.access_tile<1xindex>
    ktdp.store %v, %dst : tensor<1xf32>, !ktdp.access_tile<1xindex>
  }
  return
}
"""


@pytest.mark.parametrize(("i", "j", "kind"), [([0, 1, 0, 1], [7, 0, 7, 0], None),
                                              ([0, 1, 1, 1], [7, 0, 1, 0], "out-of-bounds")])
def test_loose_bounds_fall_back_to_the_exact_rows(i: list[int], j: list[int], kind: str | None) -> None:
    args = {"e_ptr": np.arange(9, dtype=np.float32), "i_ptr": np.asarray(i, np.int32),
            "j_ptr": np.asarray(j, np.int32), "y_ptr": np.zeros(4, np.float32)}
    got = _compare(module(PAIRS), args)
    if kind is None:
        assert isinstance(got, ri.RunResult) and got.lockstep
        np.testing.assert_array_equal(got.outputs["y_ptr"], [7.0, 8.0, 7.0, 8.0])
    else:
        assert isinstance(got, tuple) and got[0] == kind, got


# One tile gathers rows of a table and stores them back into the table, two rows per
# iteration (rows r, r + 1 get rows ids[r], ids[r + 1] as they are then): iterations depend on
# each other when an index names a row another iteration writes. The gather's spans reach the
# vectorised loop only when the store of the same array needs them (Region.read_later): the
# result must still be the sequential loop's.
INPLACE = GATHER.replace("attributes {grid = [2]}", "attributes {grid = [1]}").replace(
    "%first = arith.muli %t, %c2 : index", "%first = arith.muli %t, %c4 : index").replace(
    "step %c4 {", "step %c2 {").replace("%dst = ktdp.construct_access_tile %yv[%r, %c0]", "%dst = ktdp.construct_access_tile %tab[%r, %c0]")


@given(st.lists(st.integers(0, 7), min_size=8, max_size=8))
@FAST
def test_gathers_into_the_table_they_read_match_the_sequential_loop(ids: list[int]) -> None:
    got = _compare(module(INPLACE), _args(ids, 8, 8))
    assert isinstance(got, ri.RunResult)
    want = np.arange(64, dtype=np.float32).reshape(8, 8)
    for r in range(0, 8, 2):
        want[r : r + 2] = want[ids[r : r + 2]].copy()
    np.testing.assert_array_equal(got.outputs["e_ptr"], want)


def test_a_gather_of_rows_no_other_iteration_writes_stays_vectorised() -> None:
    ids = [0, 1, 2, 3, 4, 5, 6, 7]  # each iteration reads the rows it writes: no dependence
    got = _compare(module(INPLACE), _args(ids, 8, 8))
    assert isinstance(got, ri.RunResult) and got.lockstep


# The gather's values go straight into the store's destination (lockstep_memory.Gathered): a
# table of W columns, runs of K columns from column C (W a multiple of K: the table as rows of
# K; else windows of K elements), into rows of a Y of WY columns (WY = K: a contiguous
# destination, np.take writes it; else the copy through an array).
COLUMNS = """
#tab = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + {W1} >= 0)>
#ys = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + {WY1} >= 0)>
#ids = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
#vars = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + {K1} >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @k(%e_ptr: index, %ids_ptr: index, %y_ptr: index, %V: index, %B: index) attributes {{grid = [2]}} {{
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %t = ktdp.get_compute_tile_id : index
  %tab = ktdp.construct_memory_view %e_ptr, sizes: [%V, {W}], strides: [{W}, 1] {{coordinate_set = #tab, memory_space = #ktdp.memory_space<global>}} : memref<?x{W}xf32>
  %idv = ktdp.construct_memory_view %ids_ptr, sizes: [%B], strides: [1] {{coordinate_set = #ids, memory_space = #ktdp.memory_space<global>}} : memref<?xi32>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [%B, {WY}], strides: [{WY}, 1] {{coordinate_set = #ys, memory_space = #ktdp.memory_space<global>}} : memref<?x{WY}xf32>
  %first = arith.muli %t, %c2 : index
  scf.for %r = %first to %B step %c4 {{
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tab[ind(%idv[%r + %m]), (%k + {C})] {{variables_space_order = #id2, variables_space_set = #vars}} : memref<?x{W}xf32>, memref<?xi32> -> !ktdp.access_tile<2x{K}xindex>
    %rows = ktdp.load %src : !ktdp.access_tile<2x{K}xindex> -> tensor<2x{K}xf32>
    %dst = ktdp.construct_access_tile %yv[%r, %c0] {{access_tile_order = #id2, access_tile_set = #vars}} : memref<?x{WY}xf32> -> !ktdp.access_tile<2x{K}xindex>
    ktdp.store %rows, %dst : tensor<2x{K}xf32>, !ktdp.access_tile<2x{K}xindex>
  }}
  return
}}
"""


def _columns(w: int, k: int, c: int, wy: int) -> str:
    return COLUMNS.format(W=w, W1=w - 1, K=k, K1=k - 1, C=c, WY=wy, WY1=wy - 1)


@pytest.mark.parametrize(("w", "k", "c", "wy"), [(8, 4, 4, 4), (8, 4, 1, 4), (8, 3, 2, 3), (8, 4, 0, 6), (6, 6, 0, 6)])
def test_gathered_columns_stored_straight_into_the_destination(w: int, k: int, c: int, wy: int) -> None:
    ids = [3, 0, 9, 3, 7, 7, 1, 2]
    table = np.arange(10 * w, dtype=np.float32).reshape(10, w)
    args = {"e_ptr": table, "ids_ptr": np.asarray(ids, np.int32), "y_ptr": np.full((8, wy), -1, np.float32),
            "V": 10, "B": 8}
    got = _compare(module(_columns(w, k, c, wy)), args)
    assert isinstance(got, ri.RunResult) and got.lockstep
    want = np.full((8, wy), -1, np.float32)
    want[:, :k] = table[ids, c : c + k]
    np.testing.assert_array_equal(got.outputs["y_ptr"], want)


def test_a_write_between_the_load_and_its_store_keeps_the_loaded_values() -> None:
    """A store into the table between the gather and the store of its rows: the gather's values
    are those before it (the load is not left in memory: fused_loads)."""
    text = GATHER.replace("    %dst = ktdp.construct_access_tile %yv[%r, %c0]",
                          "    %z = arith.constant dense<5.0> : tensor<2x8xf32>\n"
                          "    %tz = ktdp.construct_access_tile %tab[%r, %c0] {access_tile_order = #id2, access_tile_set = #vars} : memref<?x8xf32> -> !ktdp.access_tile<2x8xindex>\n"
                          "    ktdp.store %z, %tz : tensor<2x8xf32>, !ktdp.access_tile<2x8xindex>\n"
                          "    %dst = ktdp.construct_access_tile %yv[%r, %c0]")
    m = module(text)
    ids = [0, 1, 2, 3, 4, 5, 6, 7]  # each iteration reads the rows it then overwrites with 5
    got = _compare(m, _args(ids, 8, 8))
    assert isinstance(got, ri.RunResult)
    np.testing.assert_array_equal(got.outputs["y_ptr"], np.arange(64, dtype=np.float32).reshape(8, 8))
    np.testing.assert_array_equal(got.outputs["e_ptr"], np.full((8, 8), 5.0, np.float32))
    func = next(op for op in m.walk() if op.name == Func.func)
    assert _fused(func) == [] and _fused(next(op for op in module(GATHER).walk() if op.name == Func.func)) == ["%rows"]


def _fused(func: Any) -> list[str]:
    from reference_interp.executor import _program
    from reference_interp.lockstep import Facts, fused_loads
    from reference_interp.runtime import Options

    c = FuncCompiler(_program(module(GATHER)), func, Options())
    found = fused_loads(func, Facts(c, func, set()))
    return [op.results[0] for op in func.walk() if id(op) in found]


# The same with runs of 4 elements of a 2 x 2 x 4 view over 12 elements (3 runs): run
# i * 2 + j for (i, j) = (0, 1) or (1, 0) (the bounds say up to run 3, past the array): the
# exact rows, counted in runs of 4 (the strides 8 and 4 are multiples of the run), decide.
RUNS = """
#tab = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 3 >= 0)>
#ids = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#vars = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 3 >= 0)>
#ys = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 3 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @k(%e_ptr: index, %i_ptr: index, %j_ptr: index, %y_ptr: index) attributes {grid = [2]} {
  %t = ktdp.get_compute_tile_id : index
  %tab = ktdp.construct_memory_view %e_ptr, sizes: [2, 2, 4], strides: [8, 4, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<2x2x4xf32>
  %iv = ktdp.construct_memory_view %i_ptr, sizes: [4], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  %jv = ktdp.construct_memory_view %j_ptr, sizes: [4], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<4xi32>
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [4, 4], strides: [4, 1] {coordinate_set = #ys, memory_space = #ktdp.memory_space<global>} : memref<4x4xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %p = %t to %c4 step %c2 {
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tab[ind(%iv[%p + %m]), ind(%jv[%p + %m]), (%k)] {variables_space_order = #id2, variables_space_set = #vars} : memref<2x2x4xf32>, memref<4xi32>, memref<4xi32> -> !ktdp.access_tile<1x4xindex>
    %v = ktdp.load %src : !ktdp.access_tile<1x4xindex> -> tensor<1x4xf32>
    %dst = ktdp.construct_access_tile %yv[%p, %c0] {access_tile_order = #id2, access_tile_set = #vars} : memref<4x4xf32> -> !ktdp.access_tile<1x4xindex>
    ktdp.store %v, %dst : tensor<1x4xf32>, !ktdp.access_tile<1x4xindex>
  }
  return
}
"""


@pytest.mark.parametrize(("i", "j", "kind"), [([0, 1, 0, 1], [1, 0, 1, 0], None),
                                              ([0, 1, 1, 1], [1, 0, 1, 0], "out-of-bounds")])
def test_loose_bounds_of_runs_fall_back_to_the_exact_rows(i: list[int], j: list[int], kind: str | None) -> None:
    table = np.arange(12, dtype=np.float32)
    args = {"e_ptr": table, "i_ptr": np.asarray(i, np.int32), "j_ptr": np.asarray(j, np.int32),
            "y_ptr": np.zeros((4, 4), np.float32)}
    got = _compare(module(RUNS), args)
    if kind is None:
        assert isinstance(got, ri.RunResult) and got.lockstep
        runs = [a * 2 + b for a, b in zip(i, j, strict=True)]
        np.testing.assert_array_equal(got.outputs["y_ptr"], table.reshape(3, 4)[runs])
    else:
        assert isinstance(got, tuple) and got[0] == kind, got
