"""Lockstep loops whose trip count differs between tiles (masked lanes, lockstep_ops._masked_loop).

Iteration k of such a loop runs for the tiles with k < their trip count only: on a sub-frame
of those tiles' lanes. Random kernels with per-tile trip counts (some zero, one tile alone
active, all equal), scalar and tensor iter_args, loads and stores at tile-dependent addresses,
an inner loop (masked too, vectorised, or uniform), an access out of the array in an
iteration only one tile runs, a race only the extra iterations make: each runs tile by tile
and in lockstep, which must give the same bytes, statistics and errors; where the per-tile run
succeeds, lockstep must really run (not give up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, Value, box, ssa
from ktir.dialects.names import Arith, Linalg, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty

from .helpers import example
from .test_lockstep import _outcome, _same

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class Spec:
    grid: list[int]
    trips: list[int]  # per tile (flat id)
    block: int = 4
    lo_odd: bool = False  # the loop starts at t % 2 (else 0)
    step2: bool = False  # tiles t with t % 2 == 1 step by 2 (else 1)
    load: tuple[int, int, int] = (0, 1, 0)  # x's block at (t * a + k * b + c) * block
    store_shared: bool = False  # iterations store to y's block k (every tile the same: races)
    inner: str = "none"  # "none" | "masked" (trips t % 3) | "uniform" (2 trips) | "vector" (no iter_args)
    scalar: bool = True  # carry an f32 scalar (the blocks' sums) too
    x_size: int | None = None  # elements of x (None: enough for every access)
    branch: bool = False  # an scf.if on (t + k) % 3 == 0: a value from either branch, a store in one
    carry: bool = True  # iter_args (else none: the loop may be vectorised, and is masked when trips differ)
    stage: bool = False  # the value through the tile's scratchpad (at block k) before it is stored


def _select_chain(b: Builder, t: Value, values: list[int]) -> Value:
    """values[t] as an index value (a chain of selects on the tile id)."""
    out = b.index(values[-1])
    for i in reversed(range(len(values) - 1)):
        hit = b.cmp(Arith.cmpi, "eq", t, b.index(i))
        out = b.create(Arith.select, [hit, b.index(values[i]), out], [ty.INDEX])[0]
    return out


def _span(s: Spec) -> int:
    return max(s.trips) + 1


def _x_size(s: Spec) -> int:
    if s.x_size is not None:
        return s.x_size
    n = math.prod(s.grid)
    a, bb, c = s.load
    k_max = 2 * _span(s) + 2  # the induction variable reaches lo + trips * step
    return (n * a + k_max * bb + c + 4) * s.block


def _y_size(s: Spec) -> int:
    n = math.prod(s.grid)
    return (n * 2 * _span(s) + n * 2 + 2) * s.block


def _z_size(s: Spec) -> int:
    n = math.prod(s.grid)
    return n * 2 * _span(s) * 2 * s.block


def build(s: Spec) -> ktir.Module:
    et = ty.F32
    B = s.block
    n = math.prod(s.grid)
    vec = ty.TensorType(shape=(B,), element_type=et)
    one = ty.TensorType(shape=(), element_type=et)
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX), ("z", ty.INDEX)], results=[vec], grid=s.grid) as (xp, yp, zp):
        ids = b.tile_id(len(s.grid))
        t = ids[0]
        if len(s.grid) == 2:
            t = b.create(Arith.addi, [ids[0], b.create(Arith.muli, [ids[1], b.index(s.grid[0])], [ty.INDEX])[0]],
                         [ty.INDEX])[0]
        c0, c1 = b.index(0), b.index(1)
        x = b.memory_view(xp, [_x_size(s)], [1], et, coordinate_set=box(_x_size(s)))
        y = b.memory_view(yp, [_y_size(s)], [1], et, coordinate_set=box(_y_size(s)))
        z = b.memory_view(zp, [_z_size(s)], [1], et, coordinate_set=box(_z_size(s)))
        local = None
        if s.stage:
            words = 2 * _span(s) * B
            local = b.memory_view(c0, [words], [1], et, memory_space=at.MemorySpaceAttr(kind="ct_local"),
                                  coordinate_set=box(words))
        odd = b.create(Arith.remui, [t, b.index(2)], [ty.INDEX])[0]
        lo = odd if s.lo_odd else c0
        step = b.create(Arith.addi, [c1, odd], [ty.INDEX])[0] if s.step2 else c1
        trips = _select_chain(b, t, s.trips)
        hi = b.create(Arith.addi, [lo, b.create(Arith.muli, [trips, step], [ty.INDEX])[0]], [ty.INDEX])[0]
        zero = b.constant(0.0, et)
        inits = [b.fill(zero, b.empty(vec))] if s.carry else []
        if s.scalar and s.carry:
            inits.append(zero)
        span = _span(s)
        with b.for_(lo, hi, step, inits) as loop:
            k = loop[0]
            a, bb, c = s.load
            v = b.load(b.access_tile(x, [(ssa(t) * a + ssa(k) * bb + c) * B], box(B), [B]), et)
            acc2 = b.create(Arith.addf, [loop[1], v], [vec])[0] if s.carry else v
            if s.inner in ("masked", "uniform"):
                inner_hi = b.create(Arith.remui, [t, b.index(3)], [ty.INDEX])[0] if s.inner == "masked" else b.index(2)
                with b.for_(c0, inner_hi, c1, [acc2]) as inner:
                    j, acc_in = inner
                    w = b.load(b.access_tile(x, [ssa(j) * B], box(B), [B]), et)
                    b.yield_(b.create(Arith.mulf, [acc_in, w], [vec])[0])
                acc2 = b.last_results[0]
            elif s.inner == "vector":
                with b.for_(c0, b.index(2), c1) as inner:
                    j = inner[0]
                    b.store(v, b.access_tile(z, [((ssa(t) * 2 * span + ssa(k)) * 2 + ssa(j)) * B], box(B), [B]))
            if s.branch:
                tk = b.create(Arith.remui, [b.create(Arith.addi, [t, k], [ty.INDEX])[0], b.index(3)], [ty.INDEX])[0]
                hit = b.cmp(Arith.cmpi, "eq", tk, c0)
                acc2 = b.if_values(hit, lambda: [b.create(Arith.mulf, [acc2, v], [vec])[0]], [acc2])[0]
                with b.if_(hit):
                    b.store(v, b.access_tile(z, [((ssa(t) * 2 * span + ssa(k)) * 2 + 1) * B], box(B), [B]))
            if local is not None:
                staged = b.access_tile(local, [ssa(k) * B], box(B), [B])
                b.store(acc2, staged)
                acc2 = b.load(staged, et)
            where = ssa(k) * B if s.store_shared else (ssa(t) * 2 * span + ssa(k)) * B
            b.store(acc2, b.access_tile(y, [where], box(B), [B]))
            if s.carry:
                yields = [acc2]
                if s.scalar:
                    part = b.reduce(Arith.addf, [v], [b.fill(zero, b.empty(one))], [0])
                    total = b.create(Tensor.extract, [part], [et])[0]
                    yields.append(b.create(Arith.addf, [loop[2], total], [et])[0])
                b.yield_(*yields)
        if not s.carry:
            b.func_return(b.fill(zero, b.empty(vec)))
            return b.module
        results = b.last_results
        tail = n * 2 * span * B
        b.store(results[0], b.access_tile(y, [ssa(t) * B + tail], box(B), [B]))
        if s.scalar:
            splat = b.create(Tensor.splat, [results[1]], [vec])[0]
            b.store(splat, b.access_tile(y, [ssa(t) * B + tail + n * B], box(B), [B]))
        b.func_return(results[0])
    return b.module


def args_for(s: Spec, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    # values near 1 (products of the inner loop stay finite), on a grid of 1/8 (sums exact)
    x = (rng.integers(-8, 9, _x_size(s)) / 8 + 1).astype(np.float32)
    return {"x": x, "y": np.zeros(_y_size(s), np.float32), "z": np.zeros(_z_size(s), np.float32)}


def compare(m: ktir.Module, args: dict[str, Any], runs: int = 3, **kw: Any) -> tuple[Any, list[bool]]:
    """The per-tile outcome, checked equal to `runs` lockstep runs ("always"), and whether each
    of those ran in lockstep (a run may give up and teach the next not to vectorise a loop)."""
    tiled = _outcome(m, args, lockstep=False, **kw)
    modes = []
    for _ in range(runs):
        got = _outcome(m, args, lockstep="always", **kw)
        if isinstance(tiled, tuple):
            assert got == tiled
            modes.append(False)
        else:
            assert isinstance(got, ri.RunResult), got
            _same(tiled, got)
            modes.append(got.lockstep)
    return tiled, modes


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    grid = draw(st.sampled_from([[2], [3], [4], [2, 2], [5]]))
    n = math.prod(grid)
    how = draw(st.sampled_from(["random", "random", "one", "equal", "zeros"]))
    if how == "random":
        trips = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    elif how == "one":  # one tile alone runs the extra iterations
        base = draw(st.integers(0, 2))
        trips = [base] * n
        trips[draw(st.integers(0, n - 1))] += draw(st.integers(1, 3))
    elif how == "equal":
        trips = [draw(st.integers(0, 3))] * n
    else:
        trips = [0] * n
        trips[draw(st.integers(0, n - 1))] = draw(st.integers(0, 3))
    load = draw(st.sampled_from([(0, 1, 0), (2, 1, 0), (1, 0, 1), (3, 2, 1)]))
    return Spec(grid=grid, trips=trips, block=draw(st.sampled_from([1, 4])), lo_odd=draw(st.booleans()),
                step2=draw(st.booleans()), load=load, store_shared=draw(st.sampled_from([False, False, False, True])),
                inner=draw(st.sampled_from(["none", "none", "masked", "uniform", "vector"])), scalar=draw(st.booleans()),
                branch=draw(st.booleans()), carry=draw(st.sampled_from([True, True, False])), stage=draw(st.booleans()))


@given(specs(), st.integers(0, 2**32 - 1), st.booleans())
@SETTINGS
def test_masked_loops_match_the_per_tile_run(spec: Spec, seed: int, races: bool) -> None:
    m = build(spec)
    tiled, modes = compare(m, args_for(spec, seed), check_races=races)
    if isinstance(tiled, ri.RunResult) and (races or isinstance(_outcome(m, args_for(spec, seed), lockstep=False),
                                                                 ri.RunResult)):
        # lockstep checks races always (it gives up on a racy kernel run without the check)
        assert modes[-1], "the per-tile run succeeded: lockstep must run (masked)"


@given(specs(), st.integers(0, 2**32 - 1))
@SETTINGS
def test_an_access_out_of_the_array_in_some_tiles_iterations(spec: Spec, seed: int) -> None:
    """x ends where one tile's last iteration (or an iteration only some tiles run) reads:
    the per-tile run's error, or its results when no tile reaches it."""
    s = Spec(**{**spec.__dict__, "x_size": None, "store_shared": False})
    a, bb, c = s.load
    reach = []  # per tile: the end of the last block it loads (an inner loop reads the first blocks)
    for t, n in enumerate(s.trips):
        lo = t % 2 if s.lo_odd else 0
        step = 1 + t % 2 if s.step2 else 1
        ks = [lo + i * step for i in range(n)]
        reach.append(max([(t * a + k * bb + c + 1) * s.block for k in ks], default=0))
    top = max(reach)
    cut = Spec(**{**s.__dict__, "x_size": max(top - s.block + 1, 2 * s.block + 1)})
    m = build(cut)
    tiled, modes = compare(m, args_for(cut, seed))
    if isinstance(tiled, ri.RunResult):
        assert modes[-1]
    else:
        assert tiled[0] in ("out-of-view", "out-of-bounds"), tiled


# (trips per tile, what the case shows)
CASES = [
    ([1, 2, 3, 4], "every tile a different count (causal attention's shape)"),
    ([0, 0, 0, 3], "one tile alone runs the loop"),
    ([3, 0, 2, 0], "some tiles never run it"),
    ([2, 2, 2, 2], "all equal: the unmasked path"),
    ([4, 1, 1, 1], "tile 0 alone in the extra iterations"),
]


@pytest.mark.parametrize("trips, why", CASES)
@pytest.mark.parametrize("inner", ["none", "masked", "uniform", "vector"])
@pytest.mark.parametrize("branch", [False, True])
@pytest.mark.parametrize("stage", [False, True])
def test_lockstep_runs_masked_loops(trips: list[int], why: str, inner: str, branch: bool, stage: bool) -> None:
    s = Spec(grid=[4], trips=trips, inner=inner, load=(2, 1, 0), branch=branch, stage=stage)
    m = build(s)
    tiled, modes = compare(m, args_for(s))
    assert isinstance(tiled, ri.RunResult), tiled
    assert modes[-1], why


@pytest.mark.parametrize("trips", [[1, 2, 3, 4], [0, 3, 0, 1], [2, 2, 2, 2]])
@pytest.mark.parametrize("inner", ["none", "masked", "vector"])
def test_a_loop_without_iter_args_runs_masked_in_the_first_run(trips: list[int], inner: str) -> None:
    """A loop without iter_args whose iterations touch disjoint bytes is vectorised; when its
    trip count differs between tiles it runs sequentially, masked, in the same run. (When
    it is vectorised, an inner loop whose trip count differs between the tiles gives up the
    first run, which teaches the next not to vectorise the outer loop.)"""
    s = Spec(grid=[4], trips=trips, inner=inner, load=(2, 1, 0), carry=False)
    tiled, modes = compare(build(s), args_for(s))
    assert isinstance(tiled, ri.RunResult), tiled
    if inner == "masked" and len(set(trips)) == 1:
        assert modes == [False, True, True]
    else:
        assert all(modes)


def _rotating_stores(trips: list[int], shift: int) -> ktir.Module:
    """Tile t runs trips[t] iterations; iteration k stores y's block (t + shift * k) mod 4."""
    B = 4
    et = ty.F32
    vec = ty.TensorType(shape=(B,), element_type=et)
    b = Builder()
    with b.func("k", [("y", ty.INDEX)], grid=[len(trips)]) as (yp,):
        t = b.tile_id()[0]
        y = b.memory_view(yp, [4 * B], [1], et, coordinate_set=box(4 * B))
        c0, c1 = b.index(0), b.index(1)
        data = b.fill(b.constant(1.0, et), b.empty(vec))
        with b.for_(c0, _select_chain(b, t, trips), c1) as loop:
            moved = b.create(Arith.muli, [loop[0], b.index(shift)], [ty.INDEX])[0]
            slot = b.create(Arith.remui, [b.create(Arith.addi, [t, moved], [ty.INDEX])[0], b.index(4)], [ty.INDEX])[0]
            b.store(data, b.access_tile(y, [ssa(slot) * B], box(B), [B]))
        b.func_return()
    return b.module


@pytest.mark.parametrize("trips, shift, race", [
    ([1, 1, 1, 2], 1, True),  # tile 3 alone in iteration 1 stores tile 0's block
    ([1, 1, 2, 2], 2, True),  # tiles 2 and 3 in iteration 1 store tiles 0's and 1's blocks
    ([2, 1, 1, 2], 3, True),  # tiles 0 and 3 in iteration 1: tile 3 stores tile 2's block
    ([1, 1, 1, 2], 4, False),  # tile 3 stores its own block again: no race
    ([1, 1, 1, 1], 1, False),  # no tile runs an extra iteration
    ([0, 0, 0, 2], 1, False),  # tile 3 alone stores blocks 3 and 0, nobody else stores
])
def test_races_only_the_extra_iterations_make(trips: list[int], shift: int, race: bool) -> None:
    """The race tracker hears a sub-frame's lanes as the tiles they are (a lane reported as
    the sub-frame's position would make tile 3's store tile 0's, no race)."""
    tiled, modes = compare(_rotating_stores(trips, shift), {"y": np.zeros(16, np.float32)})
    if race:
        assert isinstance(tiled, tuple) and tiled[0] == "race", tiled
    else:
        assert isinstance(tiled, ri.RunResult), tiled
        assert modes[-1]


def test_causal_attention_runs_in_lockstep() -> None:
    m = example("causal_attention.ktir")
    rng = np.random.default_rng(3)
    args: dict[str, Any] = {k: rng.standard_normal((512, 64)).astype(np.float16) for k in ("q_ptr", "k_ptr", "v_ptr")}
    args["o_ptr"], args["S"] = np.zeros((512, 64), np.float16), 512  # tiles 0..3 walk 4..1 key blocks, the rest none
    tiled = ri.run(m, args=args, lockstep=False)
    got = ri.run(m, args=args, lockstep="always")
    assert got.lockstep
    _same(tiled, got)


def test_a_counter_the_same_in_every_lane_gives_up() -> None:
    """A loop-carried value the analysis finds the same for every lane (a counter from a
    constant) would differ between tiles that run the loop different numbers of times:
    lockstep gives up (the per-tile results)."""
    b = Builder()
    with b.func("k", [], results=[ty.INDEX], grid=[3]) as ():
        t = b.tile_id()[0]
        c0, c1 = b.index(0), b.index(1)
        with b.for_(c0, t, c1, [c0]) as (_k, count):
            b.yield_(b.create(Arith.addi, [count, c1], [ty.INDEX])[0])
        b.func_return(b.last_results[0])
    m = b.module
    tiled, modes = compare(m, {})
    assert isinstance(tiled, ri.RunResult)
    assert [r[0] for r in tiled.returns] == [0, 1, 2]
    assert not any(modes)


def _pipelined(trips: list[int], rows: list[bool], after: bool) -> ktir.Module:
    """A software-pipelined row loop: tiles with rows (rows[t]) load their first block before
    the loop, the others yield tensor.empty; iteration k stores the block in hand, then loads
    the next (or keeps the one in hand in the last). `after`: every tile stores the loop's
    result after it (an undefined value for a tile without rows that runs no iteration)."""
    B = 4
    et = ty.F32
    vec = ty.TensorType(shape=(B,), element_type=et)
    n = len(trips)
    size = n * (max(trips) + 2) * B
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[n]) as (xp, yp):
        t = b.tile_id()[0]
        x = b.memory_view(xp, [size], [1], et, coordinate_set=box(size))
        y = b.memory_view(yp, [size + n * B], [1], et, coordinate_set=box(size + n * B))
        c0, c1 = b.index(0), b.index(1)
        hi = _select_chain(b, t, trips)
        has = b.cmp(Arith.cmpi, "ne", _select_chain(b, t, [int(r) for r in rows]), c0)
        row = max(trips) + 1

        def block(k: Any) -> Value:
            return b.load(b.access_tile(x, [(ssa(t) * row + ssa(k)) * B], box(B), [B]), et)

        first = b.if_values(has, lambda: [block(c0)], [b.empty(vec)])[0]
        with b.for_(c0, hi, c1, [first]) as (k, cur):
            b.store(cur, b.access_tile(y, [(ssa(t) * row + ssa(k)) * B], box(B), [B]))
            k1 = b.create(Arith.addi, [k, c1], [ty.INDEX])[0]
            more = b.cmp(Arith.cmpi, "slt", k1, hi)
            b.yield_(b.if_values(more, lambda: [block(k1)], [cur])[0])
        if after:
            b.store(b.last_results[0], b.access_tile(y, [ssa(t) * B + size], box(B), [B]))
        b.func_return()
    return b.module


@pytest.mark.parametrize("trips, rows, after, ok", [
    ([2, 3, 0, 1], [True, True, False, True], False, True),  # tile 2 has no rows, runs nothing
    ([0, 0, 2, 0], [False, False, True, False], False, True),
    ([2, 3, 1, 1], [True, True, False, True], False, False),  # tile 2 reads its undefined block
    ([2, 3, 0, 1], [True, True, False, True], True, False),  # tile 2 stores its undefined result
    ([2, 3, 1, 1], [True, True, True, True], True, True),  # every tile has rows
])
def test_a_pipelined_loop_whose_prologue_some_tiles_skip(trips: list[int], rows: list[bool], after: bool,
                                                         ok: bool) -> None:
    """The tiles without rows hold tensor.empty's value (lockstep_ops._masked_if keeps it per
    lane, lockstep.Partial) and never read it: lockstep runs; a tile that reads it fails in
    the per-tile run (strict mode), and lockstep gives the same error."""
    m = _pipelined(trips, rows, after)
    size = len(trips) * (max(trips) + 2) * 4
    args = {"x": np.arange(size, dtype=np.float32), "y": np.zeros(size + len(trips) * 4, np.float32)}
    tiled, modes = compare(m, args)
    if ok:
        assert isinstance(tiled, ri.RunResult), tiled
        assert all(modes)
    else:
        assert isinstance(tiled, tuple) and tiled[0] == "undefined", tiled


def test_a_name_defined_laned_in_one_region_and_uniform_in_another() -> None:
    """Scheduled kernels reuse value names in sibling regions: %v is a tile's load in the first
    branch (laned) and a sum of constants in the second (the same for every tile), whose tiles differ
    (a masked branch: the second runs on tiles 1-3 only). The constant must reach the
    linalg.generic as a laned value, each tile the whole tensor."""
    B = 4
    et = ty.F32
    vec = ty.TensorType(shape=(B,), element_type=et)
    ident = af.AffineMap.identity(1)
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[4]) as (xp, yp):
        t = b.tile_id()[0]
        x = b.memory_view(xp, [4 * B], [1], et, coordinate_set=box(4 * B))
        y = b.memory_view(yp, [8 * B], [1], et, coordinate_set=box(8 * B))
        first = b.cmp(Arith.cmpi, "eq", t, b.index(0))

        def laned() -> None:
            v = b.load(b.access_tile(x, [ssa(t) * B], box(B), [B]), et, name="v")
            b.store(v, b.access_tile(y, [ssa(t) * B], box(B), [B]))

        def uniform() -> None:
            c = b.create(Arith.constant, [], [vec], {"value": at.DenseAttr(type=vec, values=(0.5, 1.0, 1.5, 2.0))})[0]
            v = b.create(Arith.addf, [c, c], [vec], result_names=["v"])[0]  # an elementwise lane implementation
            with b.generic([v], [b.empty(vec)], [ident, ident], ["parallel"]) as (a, _o):
                b.yield_(b.create(Arith.addf, [a, a], [et])[0], op=Linalg.yield_)
            b.store(b.last_results[0], b.access_tile(y, [ssa(t) * B + 4 * B], box(B), [B]))

        b.if_else(first, laned, uniform)
        b.func_return()
    m = b.module
    args = {"x": np.arange(4 * B, dtype=np.float32), "y": np.zeros(8 * B, np.float32)}
    tiled, modes = compare(m, args)
    assert isinstance(tiled, ri.RunResult), tiled
    assert tiled.outputs["y"][4 * B + 4 : 4 * B + 8].tolist() == [2.0, 4.0, 6.0, 8.0]
    assert all(modes)
