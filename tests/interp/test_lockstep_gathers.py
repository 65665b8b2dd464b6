"""Lockstep gathers (lockstep_memory._gather) decide their bounds check from the coordinates'
known minimum and maximum when those prove every row inside the array, and from the exact
rows otherwise. Whatever decides, a run in lockstep gives the per-tile run's outputs and
statistics, or its error with the same message and coordinate: an index outside the view
(out-of-view) or a row inside the view but past the array (out-of-bounds), in a loop that
lockstep vectorises, as in the embedding example. The kernels are built with
`Builder.indirect_access_tile`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, Value, box, ind, ssa
from ktir.dialects.names import Func
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from reference_interp.compiler import FuncCompiler

from .helpers import FAST
from .test_lockstep import _compare

INDEX, F32, I32 = ty.INDEX, ty.F32, ty.i(32)


def gather(*, grid: int = 2, spread: int = 2, step: int = 4, w: int = 8, k: int = 8, c: int = 0,
           wy: int | None = None, into_table: bool = False, overwrite: bool = False) -> ktir.Module:
    """Grid [grid]; tile t gathers blocks of 2 rows (rows t * spread + step * i) of k columns from
    column c of a table of w columns viewed as V rows (the array may hold fewer), in a loop
    lockstep vectorises, and stores them into the same rows of Y (wy columns, with a coordinate
    set of its own when given; else w, sharing the table's) or, `into_table`, of the table.
    `overwrite` stores 5s into the gathered rows of the table between the gather and its store."""
    b = Builder()
    s0 = af.sym(0)
    tab_set = b.alias("tab", box(s0, w))
    y_set = b.alias("ys", box(s0, wy)) if wy is not None else tab_set
    ids_set = b.alias("ids", box(s0))
    vars_set = b.alias("vars", box(2, k))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    params = [("e_ptr", INDEX), ("ids_ptr", INDEX), ("y_ptr", INDEX), ("V", INDEX), ("B", INDEX)]
    with b.func("k", params, grid=[grid]) as (e_ptr, ids_ptr, y_ptr, v, n):
        c0, c_spread = b.index(0, "c0"), b.index(2, "c2")
        c_step = b.index(4, "c4")
        (t,) = b.tile_id(names=["t"])
        tab = b.memory_view(e_ptr, [v, w], [w, 1], F32, coordinate_set=tab_set, name="tab")
        idv = b.memory_view(ids_ptr, [n], [1], I32, coordinate_set=ids_set, name="idv")
        yv = b.memory_view(y_ptr, [n, wy or w], [wy or w, 1], F32, coordinate_set=y_set, name="yv")
        by = {2: c_spread, 4: c_step}
        first = b.arith.muli(t, by[spread], name="first")
        with b.for_(first, n, by[step], names=["r"]) as (r,):
            def rows(m: Value, kk: Value) -> list[Any]:
                return [ind(idv, ssa(r) + ssa(m)), ssa(kk) + c if c else kk]

            src = b.indirect_access_tile(tab, [2, k], rows, tile_set=vars_set, order=id2, variables=["m", "k"],
                                         name="src")
            got = b.load(src, F32, name="rows")
            if overwrite:
                fives = b.constant(at.DenseAttr(type=ty.tensor((2, k), F32), values=5.0), name="z")
                b.store(fives, b.access_tile(tab, [r, c0], vars_set, [2, k], id2, name="tz"))
            b.store(got, b.access_tile(tab if into_table else yv, [r, c0], vars_set, [2, k], id2, name="dst"))
        b.func_return()
    return b.module


def _args(ids: list[int], rows: int, view_rows: int) -> dict[str, Any]:
    return {"e_ptr": np.arange(rows * 8, dtype=np.float32).reshape(rows, 8), "ids_ptr": np.asarray(ids, np.int32),
            "y_ptr": np.zeros((len(ids), 8), np.float32), "V": view_rows, "B": len(ids)}


def test_in_bounds_gather_runs_in_lockstep_and_is_exact() -> None:
    ids = [3, 0, 9, 3, 7, 7, 1, 2]
    got = _compare(gather(), _args(ids, 10, 10))
    assert isinstance(got, ri.RunResult) and got.lockstep
    np.testing.assert_array_equal(got.outputs["y_ptr"], np.arange(80, dtype=np.float32).reshape(10, 8)[ids])


@pytest.mark.parametrize(("bad", "kind"), [(10, "out-of-bounds"), (15, "out-of-bounds"), (16, "out-of-view"),
                                           (-1, "out-of-view")])
def test_a_bad_index_is_the_per_tile_error(bad: int, kind: str) -> None:
    """The view has 16 rows, the array 10: index 10 or 15 is in the view but past the array."""
    ids = [3, 0, 9, 3, 7, bad, 1, 2]
    got = _compare(gather(), _args(ids, 10, 16))
    assert isinstance(got, tuple) and got[0] == kind, got


@given(st.lists(st.integers(-2, 12), min_size=4, max_size=12).map(lambda x: x[: len(x) // 4 * 4]),
       st.integers(1, 12), st.integers(1, 14))
@FAST
def test_random_gathers_match_the_per_tile_run(ids: list[int], rows: int, view_rows: int) -> None:
    _compare(gather(), _args(ids, rows, view_rows))


def pairs() -> ktir.Module:
    """Two gathered coordinates whose bounds alone put the last row past the array although no
    pair of them does: element (i[p], j[p]) of a 2 x 8 view into y[p], p = t, t + 2."""
    b = Builder()
    tab_set, ids_set = b.alias("tab", box(2, 8)), b.alias("ids", box(4))
    one, id1 = b.alias("one", box(1, fixed=[0])), b.alias("id1", af.AffineMap.identity(1))
    params = [("e_ptr", INDEX), ("i_ptr", INDEX), ("j_ptr", INDEX), ("y_ptr", INDEX)]
    with b.func("k", params, grid=[2]) as (e_ptr, i_ptr, j_ptr, y_ptr):
        (t,) = b.tile_id(names=["t"])
        tab = b.memory_view(e_ptr, [2, 8], [8, 1], F32, coordinate_set=tab_set, name="tab")
        iv = b.memory_view(i_ptr, [4], [1], I32, coordinate_set=ids_set, name="iv")
        jv = b.memory_view(j_ptr, [4], [1], I32, coordinate_set=ids_set, name="jv")
        yv = b.memory_view(y_ptr, [4], [1], F32, coordinate_set=ids_set, name="yv")
        b.index(0, "c0")  # c0, c1 unused (kept from the text kernel this replaced)
        c2, c4 = b.index(2, "c2"), b.index(4, "c4")
        b.index(1, "c1")
        with b.for_(t, c4, c2, names=["p"]) as (p,):
            src = b.indirect_access_tile(tab, [1], lambda m: [ind(iv, ssa(p) + ssa(m)), ind(jv, ssa(p) + ssa(m))],
                                         tile_set=one, order=id1, variables=["m"], name="src")
            b.store(b.load(src, F32, name="v"), b.access_tile(yv, [p], one, [1], id1, name="dst"))
        b.func_return()
    return b.module


# Rows i * 8 + j of a 2 x 8 view over 9 elements, (i, j) = (0, 7) or (1, 0) (the bounds say up
# to 1 * 8 + 7 = 15): the exact rows decide, and the run is in bounds.
@pytest.mark.parametrize(("i", "j", "kind"), [([0, 1, 0, 1], [7, 0, 7, 0], None),
                                              ([0, 1, 1, 1], [7, 0, 1, 0], "out-of-bounds")])
def test_loose_bounds_fall_back_to_the_exact_rows(i: list[int], j: list[int], kind: str | None) -> None:
    args = {"e_ptr": np.arange(9, dtype=np.float32), "i_ptr": np.asarray(i, np.int32),
            "j_ptr": np.asarray(j, np.int32), "y_ptr": np.zeros(4, np.float32)}
    got = _compare(pairs(), args)
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
def inplace() -> ktir.Module:
    return gather(grid=1, spread=4, step=2, into_table=True)


@given(st.lists(st.integers(0, 7), min_size=8, max_size=8))
@FAST
def test_gathers_into_the_table_they_read_match_the_sequential_loop(ids: list[int]) -> None:
    got = _compare(inplace(), _args(ids, 8, 8))
    assert isinstance(got, ri.RunResult)
    want = np.arange(64, dtype=np.float32).reshape(8, 8)
    for r in range(0, 8, 2):
        want[r : r + 2] = want[ids[r : r + 2]].copy()
    np.testing.assert_array_equal(got.outputs["e_ptr"], want)


def test_a_gather_of_rows_no_other_iteration_writes_stays_vectorised() -> None:
    ids = [0, 1, 2, 3, 4, 5, 6, 7]  # each iteration reads the rows it writes: no dependence
    got = _compare(inplace(), _args(ids, 8, 8))
    assert isinstance(got, ri.RunResult) and got.lockstep


# The gather's values go straight into the store's destination (lockstep_memory.Gathered): a
# table of W columns, runs of K columns from column C (W a multiple of K: the table as rows of
# K; else windows of K elements), into rows of a Y of WY columns (WY = K: a contiguous
# destination, np.take writes it; else the copy through an array).
@pytest.mark.parametrize(("w", "k", "c", "wy"), [(8, 4, 4, 4), (8, 4, 1, 4), (8, 3, 2, 3), (8, 4, 0, 6), (6, 6, 0, 6)])
def test_gathered_columns_stored_straight_into_the_destination(w: int, k: int, c: int, wy: int) -> None:
    ids = [3, 0, 9, 3, 7, 7, 1, 2]
    table = np.arange(10 * w, dtype=np.float32).reshape(10, w)
    args = {"e_ptr": table, "ids_ptr": np.asarray(ids, np.int32), "y_ptr": np.full((8, wy), -1, np.float32),
            "V": 10, "B": 8}
    got = _compare(gather(w=w, k=k, c=c, wy=wy), args)
    assert isinstance(got, ri.RunResult) and got.lockstep
    want = np.full((8, wy), -1, np.float32)
    want[:, :k] = table[ids, c : c + k]
    np.testing.assert_array_equal(got.outputs["y_ptr"], want)


def test_a_write_between_the_load_and_its_store_keeps_the_loaded_values() -> None:
    """A store into the table between the gather and the store of its rows: the gather's values
    are those before it (the load is not left in memory: fused_loads)."""
    m = gather(overwrite=True)
    ids = [0, 1, 2, 3, 4, 5, 6, 7]  # each iteration reads the rows it then overwrites with 5
    got = _compare(m, _args(ids, 8, 8))
    assert isinstance(got, ri.RunResult)
    np.testing.assert_array_equal(got.outputs["y_ptr"], np.arange(64, dtype=np.float32).reshape(8, 8))
    np.testing.assert_array_equal(got.outputs["e_ptr"], np.full((8, 8), 5.0, np.float32))
    func = next(op for op in m.walk() if op.name == Func.func)
    assert _fused(func) == [] and _fused(next(op for op in gather().walk() if op.name == Func.func)) == ["%rows"]


def _fused(func: Any) -> list[str]:
    from reference_interp.executor import _program
    from reference_interp.lockstep import Facts, fused_loads
    from reference_interp.runtime import Options

    c = FuncCompiler(_program(gather()), func, Options())
    found = fused_loads(func, Facts(c, func, set()))
    return [op.results[0] for op in func.walk() if id(op) in found]


def runs() -> ktir.Module:
    """Runs of 4 elements of a 2 x 2 x 4 view: run (i[p], j[p]) into row p of y, p = t, t + 2."""
    b = Builder()
    tab_set, ids_set = b.alias("tab", box(2, 2, 4)), b.alias("ids", box(4))
    vars_set, y_set = b.alias("vars", box(1, 4, fixed=[0])), b.alias("ys", box(4, 4))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    params = [("e_ptr", INDEX), ("i_ptr", INDEX), ("j_ptr", INDEX), ("y_ptr", INDEX)]
    with b.func("k", params, grid=[2]) as (e_ptr, i_ptr, j_ptr, y_ptr):
        (t,) = b.tile_id(names=["t"])
        tab = b.memory_view(e_ptr, [2, 2, 4], [8, 4, 1], F32, coordinate_set=tab_set, name="tab")
        iv = b.memory_view(i_ptr, [4], [1], I32, coordinate_set=ids_set, name="iv")
        jv = b.memory_view(j_ptr, [4], [1], I32, coordinate_set=ids_set, name="jv")
        yv = b.memory_view(y_ptr, [4, 4], [4, 1], F32, coordinate_set=y_set, name="yv")
        c0, c2, c4 = b.index(0, "c0"), b.index(2, "c2"), b.index(4, "c4")
        with b.for_(t, c4, c2, names=["p"]) as (p,):
            def run(m: Value, k: Value) -> list[Any]:
                return [ind(iv, ssa(p) + ssa(m)), ind(jv, ssa(p) + ssa(m)), k]

            src = b.indirect_access_tile(tab, [1, 4], run, tile_set=vars_set, order=id2, variables=["m", "k"],
                                         name="src")
            b.store(b.load(src, F32, name="v"), b.access_tile(yv, [p, c0], vars_set, [1, 4], id2, name="dst"))
        b.func_return()
    return b.module


# The same with runs of 4 elements of a 2 x 2 x 4 view over 12 elements (3 runs): run
# i * 2 + j for (i, j) = (0, 1) or (1, 0) (the bounds say up to run 3, past the array): the
# exact rows, counted in runs of 4 (the strides 8 and 4 are multiples of the run), decide.
@pytest.mark.parametrize(("i", "j", "kind"), [([0, 1, 0, 1], [1, 0, 1, 0], None),
                                              ([0, 1, 1, 1], [1, 0, 1, 0], "out-of-bounds")])
def test_loose_bounds_of_runs_fall_back_to_the_exact_rows(i: list[int], j: list[int], kind: str | None) -> None:
    table = np.arange(12, dtype=np.float32)
    args = {"e_ptr": table, "i_ptr": np.asarray(i, np.int32), "j_ptr": np.asarray(j, np.int32),
            "y_ptr": np.zeros((4, 4), np.float32)}
    got = _compare(runs(), args)
    if kind is None:
        assert isinstance(got, ri.RunResult) and got.lockstep
        runs_ = [a * 2 + b for a, b in zip(i, j, strict=True)]
        np.testing.assert_array_equal(got.outputs["y_ptr"], table.reshape(3, 4)[runs_])
    else:
        assert isinstance(got, tuple) and got[0] == kind, got
