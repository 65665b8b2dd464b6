"""The bookkeeping shortcuts of lockstep gathers and stores (issue 31) give the answers of the
long way, bit for bit, errors included:

- `RaceTracker.write_all` and `read_all` (one call per access for all tiles) record what a
  `write` / `read` per tile records and fail where the first of those fails; write_all compares
  boxes of one shape once per distance;
- a view's checks and an access tile's type check are remembered per op for the values that
  passed them: values that fail still fail, after runs that passed;
- gathers through indirect tiles in a loop lockstep vectorises (grids, block rows, steps and
  overlapping stores drawn by hypothesis, indices inside and outside the view and the array)
  give the per-tile run's outputs and statistics, or its error with the same message.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, ind, ssa
from ktir.ir import affine as af
from ktir.ir import types as ty
from reference_interp.lockstep_memory import BoxPlan
from reference_interp.memory import Allocation, BoxDesc, Desc, IdxDesc
from reference_interp.races import RaceFound, RaceTracker, UninitFound, desc_bytes

from .helpers import FAST
from .test_lockstep import _compare, _outcome

INDEX, F32, F16, I32 = ty.INDEX, ty.F32, ty.F16, ty.i(32)


# ---------------------------------------------------------------------- the tracker


def _alloc(nbytes: int, itemsize: int, scratch: bool) -> Allocation:
    raw = np.zeros(nbytes, np.uint8)
    a = Allocation("a", "global", 0, raw, nbytes, capacity=nbytes if scratch else None, track_init=scratch)
    if not scratch:
        a.dtype, a.shape = np.dtype(f"u{itemsize}"), (nbytes // itemsize,)
    return a


def _state(tr: RaceTracker, a: Allocation) -> Any:
    reads = {t: ([(type(d).__name__, d.lo, d.hi, desc_bytes(d).tobytes(), n) for d, n in r.descs], r.epochs,
                 r.lo, r.hi, r.last, r.last_b0, r.g, None if r.emap is None else r.emap.tobytes())
             for t, r in a.readers.items()}
    return ([(b.b0, b.ext, b.bstrides, b.itemsize, v) for b, v in a.w_boxes],
            None if a.w_seg is None else (a.w_seg.dtype.str, a.w_seg.tobytes()), dict(a.w_last), a.granule,
            None if a.init is None else a.init.tobytes(), a.init_upto, reads, tr.version,
            dict(tr._last_writer_op) and sorted(tr._last_writer_op.values()))


def _failure(e: Exception) -> tuple[Any, ...]:
    if isinstance(e, RaceFound):
        return ("race", e.flat, e.other_tile, e.other_op, e.kind)
    assert isinstance(e, UninitFound)
    return ("uninit", e.flat)


def _desc(kind: int, b0: int, ext: tuple[int, ...], bstrides: tuple[int, ...], isz: int) -> Desc:
    d = BoxDesc(b0, ext, bstrides, isz)
    if kind:  # the same bytes as a list of elements
        offs = (np.indices(ext).reshape(len(ext), -1).T @ np.asarray(bstrides, np.int64)).astype(np.int64) + b0 \
            if ext else np.asarray([b0], np.int64)
        return IdxDesc(np.asarray(offs, np.int64).reshape(-1), isz)
    return d


@st.composite
def tracker_cases(draw: Any) -> dict[str, Any]:
    """A grid of tiles, some earlier accesses (with posts and joins between them), then one
    access per tile: boxes of one shape at a lattice of offsets (as lockstep makes them), some
    shifted or given as element lists."""
    n = draw(st.integers(2, 5))
    isz = draw(st.sampled_from([1, 2, 4]))
    ext = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    # element strides: rows of ext[-1] elements, sometimes spaced out or overlapping
    row = draw(st.integers(max(1, ext[-1] - 2), ext[-1] + 3))
    bstrides = ((row * isz, isz) if len(ext) == 2 else (isz,))
    step = draw(st.integers(0, 3 * row)) * isz + draw(st.sampled_from([0, 0, 0, 1]))  # 1: unaligned boxes
    first = draw(st.integers(0, 8)) * isz
    tiles = draw(st.permutations(range(n)))
    items = [(t, first + k * step + draw(st.sampled_from([0, 0, 0, isz, 3 * isz])), draw(st.sampled_from([0, 0, 0, 1])))
             for k, t in enumerate(tiles)]
    events = draw(st.lists(st.tuples(st.sampled_from(["write", "read", "post", "join"]), st.integers(0, n - 1),
                                     st.integers(0, 40), st.integers(0, n - 1)), max_size=draw(st.sampled_from([0, 3, 8]))))
    return {"n": n, "isz": isz, "ext": ext, "bstrides": bstrides, "items": items, "events": events,
            "scratch": draw(st.booleans()), "write": draw(st.booleans())}


def _replay(case: dict[str, Any], bulk: bool) -> tuple[Any, ...]:
    n, isz, ext, bs = case["n"], case["isz"], case["ext"], case["bstrides"]
    reach = max(b0 for _, b0, _ in case["items"]) + sum((e - 1) * s for e, s in zip(ext, bs, strict=True)) + isz
    a = _alloc(max(reach, 64 * isz) + 64, isz, case["scratch"])
    tr = RaceTracker(n, True)
    snaps: list[list[int]] = []
    try:
        for kind, t, at, u in case["events"]:
            box = BoxDesc(at * isz, (2,), (isz,), isz)
            if kind == "write":
                tr.write(a, box, t, "ktdp.store")
            elif kind == "read":
                tr.read(a, box, t, "ktdp.load")
            elif kind == "post":
                snaps.append(tr.snapshot_and_advance(t))
            elif snaps:
                tr.join(u, [snaps[-1]])
    except (RaceFound, UninitFound) as e:
        return ("before", _failure(e))
    items = [(t, _desc(k, b0, ext, bs, isz)) for t, b0, k in case["items"]]
    op = "ktdp.store" if case["write"] else "ktdp.load"
    try:
        if bulk:
            (tr.write_all if case["write"] else tr.read_all)(a, items, op)
        else:
            for t, d in items:
                (tr.write if case["write"] else tr.read)(a, d, t, op)
    except (RaceFound, UninitFound) as e:
        return ("failed", _failure(e), _state(tr, a))
    return ("done", _state(tr, a))


@given(tracker_cases())
@settings(max_examples=300, deadline=None)  # no kernel runs: a few ms per example
def test_write_all_and_read_all_record_what_one_call_per_tile_records(case: dict[str, Any]) -> None:
    assert _replay(case, True) == _replay(case, False)


def test_translated_boxes_that_meet_are_a_race() -> None:
    """Rows 0-1 of tile 0 and rows 1-2 of tile 1 (one box shape, one row apart): write_all
    finds the write-write race that two writes find."""
    case = {"n": 2, "isz": 4, "ext": (2, 4), "bstrides": (16, 4), "items": [(0, 0, 0), (1, 16, 0)], "events": [],
            "scratch": False, "write": True}
    got = _replay(case, True)
    assert got == _replay(case, False)
    assert got[0] == "failed" and got[1][0] == "race" and got[1][4] == "write-write"


# ---------------------------------------------------------------------- gathers in lockstep


def gather_kernel(grid: int, rows: int, spread: int, step: int, cols: int, dtype: ty.Type) -> ktir.Module:
    """Grid [grid]: tile t gathers blocks of `rows` table rows (block i: rows ids[r + m], r =
    t * spread + step * i, m < rows) of `cols` columns and stores them into rows r.. of Y, in a
    loop lockstep vectorises. Blocks of two tiles overlap when spread < rows (a race)."""
    b = Builder()
    s0 = af.sym(0)
    tab_set = b.alias("tab", box(s0, cols))
    ids_set = b.alias("ids", box(s0))
    vars_set = b.alias("vars", box(rows, cols))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    params = [("e_ptr", INDEX), ("ids_ptr", INDEX), ("y_ptr", INDEX), ("V", INDEX), ("B", INDEX)]
    with b.func("k", params, grid=[grid]) as (e_ptr, ids_ptr, y_ptr, v, n):
        c0 = b.index(0, "c0")
        c_spread, c_step, c_rows = b.index(spread, "cs"), b.index(step, "cst"), b.index(rows, "cr")
        (t,) = b.tile_id(names=["t"])
        tab = b.memory_view(e_ptr, [v, cols], [cols, 1], dtype, coordinate_set=tab_set, name="tab")
        idv = b.memory_view(ids_ptr, [n], [1], I32, coordinate_set=ids_set, name="idv")
        yv = b.memory_view(y_ptr, [n, cols], [cols, 1], dtype, coordinate_set=tab_set, name="yv")
        first = b.arith.muli(t, c_spread, name="first")
        last = b.arith.subi(n, c_rows, name="last")
        end = b.arith.addi(last, b.index(1, "c1"), name="end")
        with b.for_(first, end, c_step, names=["r"]) as (r,):
            src = b.indirect_access_tile(tab, [rows, cols], lambda m, k: [ind(idv, ssa(r) + ssa(m)), k],
                                         tile_set=vars_set, order=id2, variables=["m", "k"], name="src")
            got = b.load(src, dtype, name="got")
            b.store(got, b.access_tile(yv, [r, c0], vars_set, [rows, cols], id2, name="dst"))
        b.func_return()
    return b.module


@st.composite
def gather_cases(draw: Any) -> tuple[ktir.Module, dict[str, Any]]:
    grid = draw(st.integers(1, 4))
    rows = draw(st.integers(1, 4))
    spread = draw(st.integers(1, 5))
    # mostly iterations of a tile that touch disjoint rows; sometimes overlapping ones (the loop
    # is then not vectorised: later iterations overwrite earlier ones)
    step = draw(st.integers(1, 3)) * max(grid * spread, rows) if draw(st.integers(0, 3)) else draw(st.integers(1, rows))
    cols = draw(st.sampled_from([1, 4, 8]))
    dtype = draw(st.sampled_from([F32, F16]))
    B = draw(st.integers(rows, 24))
    table_rows = draw(st.integers(1, 12))
    view_rows = draw(st.integers(1, 14))
    ids = draw(st.lists(st.integers(-1, 14) | st.integers(0, min(table_rows, view_rows) - 1), min_size=B, max_size=B))
    dt = np.float32 if dtype == F32 else np.float16
    table = np.arange(table_rows * cols, dtype=dt).reshape(table_rows, cols)
    args = {"e_ptr": table, "ids_ptr": np.asarray(ids, np.int32), "y_ptr": np.full((B, cols), -1, dt), "V": view_rows,
            "B": B}
    return gather_kernel(grid, rows, spread, step, cols, dtype), args


@given(gather_cases())
@FAST
def test_random_gathers_match_the_per_tile_run(case: tuple[ktir.Module, dict[str, Any]]) -> None:
    m, args = case
    _compare(m, args)


def test_an_embedding_gather_runs_in_lockstep_and_each_error_is_the_per_tile_one() -> None:
    m = gather_kernel(4, 8, 8, 32, 16, F16)
    table = np.arange(20 * 16, dtype=np.float16).reshape(20, 16)
    ids = np.arange(64, dtype=np.int32) % 20
    args = {"e_ptr": table, "ids_ptr": ids, "y_ptr": np.zeros((64, 16), np.float16), "V": 20, "B": 64}
    got = _compare(m, args)
    assert isinstance(got, ri.RunResult) and got.lockstep
    np.testing.assert_array_equal(got.outputs["y_ptr"], table[ids])
    for bad, kind in [(20, "out-of-view"), (-3, "out-of-view")]:
        wrong = ids.copy()
        wrong[37] = bad
        out = _compare(m, {**args, "ids_ptr": wrong})
        assert isinstance(out, tuple) and out[0] == kind, out
    past = _compare(m, {**args, "V": 24, "ids_ptr": np.where(np.arange(64) == 5, 22, ids).astype(np.int32)})
    assert isinstance(past, tuple) and past[0] == "out-of-bounds", past
    again = _compare(m, args)  # and the same program passes again
    assert isinstance(again, ri.RunResult) and again.lockstep


# ---------------------------------------------------------------------- remembered checks


def offset_view(rows: int) -> ktir.Module:
    """Tile t copies a row of 4 f32 from a view at element offset %off of X (the array) into Y."""
    b = Builder()
    s0 = af.sym(0)
    row_set = b.alias("row", box(1, 4, fixed=[0]))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    with b.func("k", [("x_ptr", INDEX), ("y_ptr", INDEX), ("off", INDEX), ("R", INDEX)], grid=[2]) as (x, y, off, n):
        (t,) = b.tile_id(names=["t"])
        at = b.arith.addi(x, off, name="at")
        xv = b.memory_view(at, [n, 4], [4, 1], F32, coordinate_set=b.alias("xs", box(s0, 4)), name="xv")
        yv = b.memory_view(y, [rows, 4], [4, 1], F32, coordinate_set=b.alias("ys", box(rows, 4)), name="yv")
        c0 = b.index(0, "c0")
        got = b.load(b.access_tile(xv, [t, c0], row_set, [1, 4], id2, name="src"), F32, name="got")
        b.store(got, b.access_tile(yv, [t, c0], row_set, [1, 4], id2, name="dst"))
        b.func_return()
    return b.module


@pytest.mark.parametrize("lockstep", [True, False])
def test_a_view_that_failed_its_checks_fails_after_runs_that_passed(lockstep: bool) -> None:
    """The view checks, and an access tile's check in its view, are remembered for the values
    that passed: an offset reaching past the 64-bit range, a negative size, a row outside a view
    of fewer rows still fail (as on a fresh program) between runs that pass."""
    m = offset_view(2)
    good = {"x_ptr": np.arange(8, dtype=np.float32), "y_ptr": np.zeros((2, 4), np.float32), "off": 0, "R": 2}
    bad = [{**good, "off": 1 << 61}, {**good, "R": -1}, {**good, "R": 1}]  # R = 1: tile 1's row is out of view
    want = [_outcome(offset_view(2), b, lockstep=False) for b in bad]
    assert all(isinstance(w, tuple) for w in want), want
    for _ in range(2):
        ok = _outcome(m, good, lockstep="always" if lockstep else False)
        assert isinstance(ok, ri.RunResult)
        np.testing.assert_array_equal(ok.outputs["y_ptr"], np.arange(8, dtype=np.float32).reshape(2, 4))
        assert [_outcome(m, b, lockstep="always" if lockstep else False) for b in bad] == want


def symbol_tile() -> ktir.Module:
    """An access tile whose set has a symbol %n (rows 0 <= d0 < n) and whose type says 2 rows:
    n = 2 is the type's shape; any other n is a type error."""
    b = Builder()
    s0 = af.sym(0)
    rows_set = b.alias("rs", box(s0, 4))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    with b.func("k", [("x_ptr", INDEX), ("y_ptr", INDEX), ("n", INDEX)], grid=[2]) as (x, y, n):
        (t,) = b.tile_id(names=["t"])
        c0, c2 = b.index(0, "c0"), b.index(2, "c2")
        r = b.arith.muli(t, c2, name="r")
        xv = b.memory_view(x, [4, 4], [4, 1], F32, coordinate_set=b.alias("xs", box(4, 4)), name="xv")
        yv = b.memory_view(y, [4, 4], [4, 1], F32, coordinate_set=b.alias("ys", box(4, 4)), name="yv")
        got = b.load(b.access_tile(xv, [r, c0], rows_set, [2, 4], id2, symbols=[n], name="src"), F32, name="got")
        b.store(got, b.access_tile(yv, [r, c0], rows_set, [2, 4], id2, symbols=[n], name="dst"))
        b.func_return()
    return b.module


def test_an_access_tile_of_another_shape_fails_after_runs_that_passed() -> None:
    m = symbol_tile()
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    good = {"x_ptr": x, "y_ptr": np.zeros((4, 4), np.float32), "n": 2}
    want = _outcome(symbol_tile(), {**good, "n": 3}, lockstep=False)
    assert isinstance(want, tuple) and want[0] == "type", want
    for _ in range(2):
        ok = _compare(m, good)
        assert isinstance(ok, ri.RunResult) and ok.lockstep
        np.testing.assert_array_equal(ok.outputs["y_ptr"], x)
        assert _outcome(m, {**good, "n": 3}, lockstep="always") == want


def test_one_program_run_on_arrays_of_other_sizes_and_contents_checks_each_run() -> None:
    """An indirect tile remembers its subscripts and index rows, a store its boxes, by the values
    they depend on, among them the size of the array: a shorter ids array under the same view
    is out-of-bounds, other ids are gathered anew, each run as the per-tile run of a fresh program."""
    m = gather_kernel(4, 8, 8, 32, 16, F16)
    table = np.arange(20 * 16, dtype=np.float16).reshape(20, 16)
    ids = np.arange(64, dtype=np.int32) % 20
    good = {"e_ptr": table, "ids_ptr": ids, "y_ptr": np.zeros((64, 16), np.float16), "V": 20, "B": 64}
    # and the store's boxes by the size of Y's array among others: a longer Y keeps its rows past
    # the stored ones (the store writes only part of it), a shorter one is out-of-bounds
    runs = [good, {**good, "ids_ptr": ids[:60].copy()}, {**good, "ids_ptr": ids[::-1].copy()},
            {**good, "e_ptr": table[:10].copy(), "V": 20}, {**good, "y_ptr": np.full((80, 16), 7, np.float16)},
            {**good, "y_ptr": np.zeros((60, 16), np.float16)}, good]
    for args in runs:
        want = _outcome(gather_kernel(4, 8, 8, 32, 16, F16), args, lockstep=False)
        got = _outcome(m, args, lockstep="always")
        if isinstance(want, tuple):
            assert got == want
        else:
            assert isinstance(got, ri.RunResult) and got.lockstep
            np.testing.assert_array_equal(got.outputs["y_ptr"], want.outputs["y_ptr"])
            assert got.stats == want.stats
    assert isinstance(_outcome(m, runs[1], lockstep=False), tuple) and isinstance(_outcome(m, runs[5], lockstep=False), tuple)


@given(st.integers(0, 64), st.integers(1, 64), st.integers(1, 64), st.integers(1, 5), st.integers(2, 6),
       st.integers(-1, 80))
@settings(max_examples=200, deadline=None)
def test_a_box_plan_orders_its_lanes_spans_only_when_they_ascend_without_overlap(
        first: int, tile_step: int, step: int, tiles: int, iters: int, span: int) -> None:
    """BoxPlan.ordered (Region.access then skips its comparison of a store's spans) holds
    exactly when, along each tile's iterations, every span [lo, lo + span] is non-empty and
    ends before the next begins: what the comparison finds first."""
    lo = first + tile_step * np.arange(tiles)[:, None] + step * np.arange(iters)[None, :]
    plan = BoxPlan(lo, span, (first, (tile_step, step)), lo, [], False, 0)
    hi = lo + span
    assert plan.ordered == bool((hi[:, :-1] < lo[:, 1:]).all() and (hi >= lo).all())
    assert not BoxPlan(lo, span, None, lo, [], False, 0).ordered  # no lattice: compared


def bounded_copy() -> ktir.Module:
    """Grid [2]: tile t copies rows r, r + 1 of X into Y for r = lo + 2t, lo + 2t + 4, ... < hi
    (lo and hi arguments), in a loop lockstep vectorises."""
    b = Builder()
    two = b.alias("two", box(2, 4))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    params = [("x_ptr", INDEX), ("y_ptr", INDEX), ("lo", INDEX), ("hi", INDEX)]
    with b.func("k", params, grid=[2]) as (x, y, lo, hi):
        (t,) = b.tile_id(names=["t"])
        c0, c2, c4 = b.index(0, "c0"), b.index(2, "c2"), b.index(4, "c4")
        xv = b.memory_view(x, [16, 4], [4, 1], F32, coordinate_set=b.alias("xs", box(16, 4)), name="xv")
        yv = b.memory_view(y, [16, 4], [4, 1], F32, coordinate_set=b.alias("ys", box(16, 4)), name="yv")
        first = b.arith.addi(lo, b.arith.muli(t, c2, name="t2"), name="first")
        with b.for_(first, hi, c4, names=["r"]) as (r,):
            got = b.load(b.access_tile(xv, [r, c0], two, [2, 4], id2, name="src"), F32, name="got")
            b.store(got, b.access_tile(yv, [r, c0], two, [2, 4], id2, name="dst"))
        b.func_return()
    return b.module


def test_a_vectorised_loop_with_other_bounds_runs_its_own_iterations() -> None:
    """A vectorised loop's iterations are remembered by its bounds: other bounds on the same
    program copy other rows, each run as the per-tile run."""
    m = bounded_copy()
    x = np.arange(64, dtype=np.float32).reshape(16, 4)
    # the last: the tiles' trip counts differ (1 and 0): the loop runs sequentially, masked
    for lo, hi in [(0, 16), (4, 16), (0, 8), (4, 16), (0, 16), (8, 9), (0, 16)]:
        args = {"x_ptr": x, "y_ptr": np.full((16, 4), -1, np.float32), "lo": lo, "hi": hi}
        got = _compare(m, args)
        assert isinstance(got, ri.RunResult) and got.lockstep
        want = np.full((16, 4), -1, np.float32)
        for r in range(lo, hi, 2):
            want[r : r + 2] = x[r : r + 2]
        np.testing.assert_array_equal(got.outputs["y_ptr"], want)
