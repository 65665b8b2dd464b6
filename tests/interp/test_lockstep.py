"""Lockstep execution (reference_interp/lockstep.py) against the per-tile run.

Random SPMD kernels: tile-dependent offsets, loops whose trip counts may differ between
tiles, loads and stores that may overlap between tiles (races) or between iterations of one
tile (order-dependent results), that may leave the arrays (errors), scratchpad staging,
reductions, branches on the tile id, loop-carried accumulators. Each runs tile by tile
(`lockstep=False`) and with lockstep on: the outputs, returns and statistics must be the
same bytes, or both runs must fail with the same error. A second test checks that lockstep
really runs (not only falls back) on the kernels it is meant for.
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
from ktir.builder import Builder, box, ssa
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty

from .helpers import example

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class Spec:
    grid: list[int]
    dtype: str  # "f32" | "f16"
    block: int
    trips: int
    diverge: int  # tiles t >= diverge run one more iteration (0: all the same)
    load: tuple[int, int, int]  # element offset = t * a + k * b + c
    store: tuple[int, int, int]
    second: tuple[int, int, int] | None  # a second load, added
    op: str  # "addf" | "mulf" | "subf"
    reduce: bool  # add the block's sum (splat) to every element
    stage: int  # 0: none; 1: through ct_local at k * block; 2: at 0 (iterations share it)
    branch: int  # -1: none; else tiles t == branch store a second time
    accumulate: bool  # carry a running sum in iter_args and store it after the loop
    size: int  # elements of each array
    races: bool
    allreduce: bool = False  # every iteration: the sum of v over all tiles, added to v (a barrier)
    reread: tuple[int, int, int] | None = None  # also load y (what other tiles stored) before the store


def _build(s: Spec) -> ktir.Module:
    et = ty.F32 if s.dtype == "f32" else ty.F16
    b = Builder()
    B = s.block
    vec = ty.TensorType(shape=(B,), element_type=et)
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=s.grid) as (xp, yp):
        ids = b.tile_id(len(s.grid))
        t = ids[0]
        if len(s.grid) == 2:
            g0 = b.index(s.grid[0])
            t = b.create("arith.addi", [ids[0], b.create("arith.muli", [ids[1], g0], [ty.INDEX])[0]], [ty.INDEX])[0]
        c0, c1 = b.index(0), b.index(1)
        x = b.memory_view(xp, [s.size], [1], et, coordinate_set=box(s.size))
        y = b.memory_view(yp, [s.size], [1], et, coordinate_set=box(s.size))
        local = None
        if s.stage:
            local = b.memory_view(c0, [max(B * s.trips + B, B)], [1], et, memory_space=at.MemorySpaceAttr(kind="ct_local"),
                                  coordinate_set=box(max(B * s.trips + B, B)))
        trips = b.index(s.trips)
        if s.diverge:
            more = b.cmp("arith.cmpi", "uge", t, b.index(s.diverge))
            extra = b.create("arith.select", [more, c1, c0], [ty.INDEX])[0]
            trips = b.create("arith.addi", [trips, extra], [ty.INDEX])[0]
        zero = b.constant(0.0, et)
        inits = []
        if s.accumulate:
            inits = [b.fill(zero, b.empty(vec))]
        with b.for_(c0, trips, c1, inits) as loop:
            k = loop[0]

            def at_(view: Any, coef: tuple[int, int, int]) -> Any:
                a, bb, cc = coef
                return b.access_tile(view, [ssa(t) * a + ssa(k) * bb + cc], box(B), [B])

            v = b.load(at_(x, s.load), et)
            if s.second is not None:
                w = b.load(at_(x, s.second), et)
                v = b.create(f"arith.{s.op}", [v, w], [vec])[0]
            else:
                v = b.create(f"arith.{s.op}", [v, v], [vec])[0]
            if s.reread is not None:
                v = b.create("arith.addf", [v, b.load(at_(y, s.reread), et)], [vec])[0]
            if s.allreduce:
                groups = af.IntegerSet(num_dims=1, num_symbols=0, constraints=(af.Constraint(expr=af.dim(0), is_equality=True),))
                n = math.prod(s.grid)
                every = af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
                    af.Constraint(expr=af.dim(0) - af.sym(0) * n, is_equality=False),
                    af.Constraint(expr=-af.dim(0) + af.sym(0) * n + (n - 1), is_equality=False)))
                fty = ty.TileFutureType(partial_types=(vec,), groups=at.IntegerSetAttr(value=groups))
                with b.produce(every, fty):
                    b.yield_(v, op="ktdp.yield_partial")
                (future,) = b.last_results
                ident = b.fill(zero, b.empty(vec))
                with b.reduce_tiles(future, every, [ident]) as (lhs, rhs):
                    b.yield_(b.create("arith.addf", [lhs, rhs], [vec])[0], op="ktdp.yield_reduced")
                v = b.create("arith.addf", [v, b.last_results[0]], [vec])[0]
            if s.reduce:
                one = ty.TensorType(shape=(), element_type=et)
                part = b.reduce("arith.addf", [v], [b.fill(zero, b.empty(one))], [0])
                scalar = b.create("tensor.extract", [part], [et])[0]
                v = b.create("arith.addf", [v, b.create("tensor.splat", [scalar], [vec])[0]], [vec])[0]
            if local is not None:
                off = ssa(k) * B if s.stage == 1 else af.const(0)
                lt = b.access_tile(local, [off], box(B), [B])
                b.store(v, lt)
                v = b.load(lt, et)
            if s.accumulate:
                v = b.create("arith.addf", [loop[1], v], [vec])[0]
            b.store(v, at_(y, s.store))
            if s.branch >= 0:
                cond = b.cmp("arith.cmpi", "eq", t, b.index(s.branch))
                with b.if_(cond):
                    b.store(v, at_(y, (s.store[0], s.store[1], s.store[2] + B)))
            if s.accumulate:
                b.yield_(v)
        if s.accumulate:  # after the blocks the loops store (with the usual coefficients)
            tail = math.prod(s.grid) * (s.trips + 1) * B
            b.store(b.last_results[0], b.access_tile(y, [ssa(t) * B + tail], box(B), [B]))
        b.func_return()
    return b.module


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    grid = draw(st.sampled_from([[1], [2], [3], [4], [2, 2], [4, 1]]))
    n = math.prod(grid)
    B = draw(st.sampled_from([1, 2, 4, 8]))
    trips = draw(st.integers(0, 5))
    diverge = draw(st.sampled_from([0, 0, 0, 0, 1, 2]))
    span = n * (trips + 2) * B

    def coef() -> tuple[int, int, int]:
        how = draw(st.sampled_from(["tiles", "tiles", "tiles", "iters", "shared", "free"]))
        if how == "tiles":  # tile t, iteration k: its own block
            return (B * (trips + 1), B, 0)
        if how == "iters":  # iterations interleave the tiles
            return (B, B * n, 0)
        if how == "shared":  # every tile the same blocks (a race when stored)
            return (0, B, draw(st.integers(0, B)))
        return (draw(st.integers(0, 2 * B)), draw(st.integers(0, 2 * B)), draw(st.integers(0, 2 * B)))

    size = span + draw(st.sampled_from([0, 0, 0, -B, B]))  # sometimes too small: out of view
    return Spec(
        grid=grid, dtype=draw(st.sampled_from(["f32", "f16"])), block=B, trips=trips, diverge=diverge,
        load=coef(), store=coef(), second=draw(st.one_of(st.none(), st.just(coef()))),
        op=draw(st.sampled_from(["addf", "mulf", "subf"])), reduce=draw(st.booleans()),
        stage=draw(st.sampled_from([0, 0, 1, 2])), branch=draw(st.sampled_from([-1, -1, 0, 1])),
        accumulate=draw(st.booleans()), size=max(size, 1), races=draw(st.booleans()),
        allreduce=draw(st.booleans()), reread=draw(st.one_of(st.none(), st.just(coef()))),
    )


def _same(a: ri.RunResult, b: ri.RunResult) -> None:
    assert a.outputs.keys() == b.outputs.keys()
    for k in a.outputs:
        x, y = np.asarray(a.outputs[k]), np.asarray(b.outputs[k])
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), k
    assert a.stats == b.stats
    assert len(a.returns) == len(b.returns)
    for p, q in zip(a.returns, b.returns, strict=True):
        assert [np.asarray(v).tobytes() for v in p] == [np.asarray(v).tobytes() for v in q]


def _outcome(m: ktir.Module, args: dict[str, Any], **kw: Any) -> ri.RunResult | tuple[str, str]:
    try:
        return ri.run(m, args=args, **kw)
    except ri.KtirRuntimeError as e:
        return e.kind, str(e)


def _compare(m: ktir.Module, args: dict[str, Any], **kw: Any) -> ri.RunResult | tuple[str, str]:
    tiled = _outcome(m, args, lockstep=False, **kw)
    locked = _outcome(m, args, lockstep="always", **kw)
    again = _outcome(m, args, lockstep="always", **kw)  # after what the first run memoised (returned)
    for got in (locked, again):
        if isinstance(tiled, tuple):
            assert got == tiled
        else:
            assert isinstance(got, ri.RunResult), got
            _same(tiled, got)
    return again


@given(specs(), st.integers(0, 2**32 - 1))
@SETTINGS
def test_random_kernels_match_the_per_tile_run(spec: Spec, seed: int) -> None:
    m = _build(spec)
    dt = np.float32 if spec.dtype == "f32" else np.float16
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(spec.size).astype(dt)
    args = {"x": x, "y": np.zeros(spec.size, dt)}
    _compare(m, args, check_races=spec.races)


def _spec(**kw: Any) -> Spec:
    base = dict(grid=[4], dtype="f32", block=8, trips=4, diverge=0, load=(40, 8, 0), store=(40, 8, 0), second=None,
                op="addf", reduce=False, stage=0, branch=-1, accumulate=False, size=4 * 6 * 8, races=True)
    base.update(kw)
    return Spec(**base)  # type: ignore[arg-type]


def _args(s: Spec, seed: int = 0) -> dict[str, Any]:
    dt = np.float32 if s.dtype == "f32" else np.float16
    x = np.random.default_rng(seed).standard_normal(s.size).astype(dt)
    return {"x": x, "y": np.zeros(s.size, dt)}


@pytest.mark.parametrize("kw", [
    {},
    {"reduce": True, "dtype": "f16"},
    {"second": (40, 8, 8), "op": "mulf"},
    {"stage": 1},
    {"accumulate": True},
    {"grid": [2, 2]},
    {"allreduce": True},
    {"allreduce": True, "reread": (40, 8, 40)},  # reads what the next tile stored an iteration before
])
def test_lockstep_runs_on_spmd_kernels(kw: dict[str, Any]) -> None:
    s = _spec(**kw)
    got = _compare(_build(s), _args(s))
    assert isinstance(got, ri.RunResult) and got.lockstep


@pytest.mark.parametrize("kw, lockstep", [
    ({"diverge": 2}, True),  # trip counts differ between tiles: not vectorised, masked
    ({"branch": 1}, True),  # one tile takes the branch: not vectorised, masked
    ({"stage": 2}, True),  # iterations share a scratchpad block: not vectorised, still lockstep
    ({"store": (40, 0, 0)}, True),  # iterations overwrite one block: not vectorised
])
def test_lockstep_gives_up_where_lanes_diverge(kw: dict[str, Any], lockstep: bool) -> None:
    s = _spec(**kw)
    m = _build(s)
    got = _compare(m, _args(s))
    assert isinstance(got, ri.RunResult)
    assert ri.run(m, args=_args(s), lockstep="always").lockstep is lockstep


@pytest.mark.parametrize("kw, kind", [
    ({"store": (0, 8, 0)}, "race"),
    ({"size": 100}, "out-of-view"),
])
def test_errors_are_the_per_tile_errors(kw: dict[str, Any], kind: str) -> None:
    s = _spec(**kw)
    got = _compare(_build(s), _args(s))
    assert isinstance(got, tuple) and got[0] == kind


@pytest.mark.parametrize("name, args", [
    ("rope.ktir", lambda: {"q_ptr": np.random.default_rng(1).standard_normal((128, 4, 64)).astype(np.float32),
                           "cos_ptr": np.random.default_rng(2).standard_normal((128, 32)).astype(np.float32),
                           "sin_ptr": np.random.default_rng(3).standard_normal((128, 32)).astype(np.float32),
                           "y_ptr": np.zeros((128, 4, 64), np.float32), "T": 128}),
    ("embedding_gather.ktir", lambda: {"e_ptr": np.random.default_rng(4).standard_normal((300, 1024)).astype(np.float16),
                                       "ids_ptr": np.random.default_rng(5).integers(0, 300, 256).astype(np.int32),
                                       "y_ptr": np.zeros((256, 1024), np.float16), "V": 300, "B": 256, "H": 1024}),
    ("paged_attention.ktir", lambda: {"q_ptr": np.random.default_rng(4).standard_normal((4, 128)).astype(np.float16),
                                      "kc_ptr": np.random.default_rng(5).standard_normal((64, 16, 128)).astype(np.float16),
                                      "vc_ptr": np.random.default_rng(6).standard_normal((64, 16, 128)).astype(np.float16),
                                      "bt_ptr": np.random.default_rng(7).permutation(64).reshape(4, 16).astype(np.int32),
                                      "lens_ptr": np.array([256, 100, 17, 1], np.int32),
                                      "o_ptr": np.zeros((4, 128), np.float16), "NP": 64, "S": 4, "W": 16}),
    ("vector_add.ktir", lambda: {"A": (np.arange(3 * 65536) % 2048).astype(np.float16), "B": np.ones(3 * 65536, np.float16),
                                 "C": np.zeros(3 * 65536, np.float16), "N": 3 * 65536}),
])
def test_examples_in_lockstep(name: str, args: Any) -> None:
    m = example(name)
    got = _compare(m, args())
    assert isinstance(got, ri.RunResult) and got.lockstep


def test_repeated_runs_settle_on_the_faster_way() -> None:
    """lockstep=True alternates lockstep and per-tile runs until both have run
    Timing.SAMPLES (3) times, then keeps one of them; every run gives the same results."""
    from reference_interp.lockstep import Timing

    s = _spec()
    m = _build(s)
    args = _args(s)
    first = ri.run(m, args=args, lockstep=False)
    modes = []
    trials = 2 * Timing.SAMPLES
    for _ in range(trials + 3):
        r = ri.run(m, args=args)
        _same(first, r)
        modes.append(r.lockstep)
    assert modes[:trials] == [True, False] * Timing.SAMPLES
    assert len(set(modes[trials:])) == 1



@pytest.mark.parametrize("shift, vectorised", [(-8, False), (-8, True), (8, False), (8, True), (0, True)])
def test_views_reaching_beyond_their_array(shift: int, vectorised: bool) -> None:
    """A view based `shift` elements off its array's start: tile 0 (shift -8) or the last
    tile (shift 8) reaches bytes before or after the array. The accesses are in the view,
    so only the bounds check sees them (out-of-bounds tile by tile; lockstep must give up
    and report the same)."""
    B, n = 8, 4 * 8
    et = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[4]) as (xp, yp):
        (t,) = b.tile_id(1)
        base = b.create("arith.addi", [xp, b.index(shift)], [ty.INDEX])[0] if shift > 0 else \
            b.create("arith.subi", [xp, b.index(-shift)], [ty.INDEX])[0]
        x = b.memory_view(base, [n], [1], et, coordinate_set=box(n))
        y = b.memory_view(yp, [2 * n], [1], et, coordinate_set=box(2 * n))
        if vectorised:  # every tile loads its block twice, in a loop lockstep vectorises
            c0, c1, c2 = b.index(0), b.index(1), b.index(2)
            with b.for_(c0, c2, c1) as loop:
                k = loop[0]
                v = b.load(b.access_tile(x, [ssa(t) * B + ssa(k) * 0], box(B), [B]), et)
                b.store(v, b.access_tile(y, [ssa(t) * B + ssa(k) * n], box(B), [B]))
        else:
            v = b.load(b.access_tile(x, [ssa(t) * B], box(B), [B]), et)
            b.store(v, b.access_tile(y, [ssa(t) * B], box(B), [B]))
        b.func_return()
    args = {"x": np.arange(n, dtype=np.float32), "y": np.zeros(2 * n, np.float32)}
    got = _compare(b.module, args)
    if shift:
        assert isinstance(got, tuple) and got[0] == "out-of-bounds", got
    else:
        assert isinstance(got, ri.RunResult) and got.lockstep


@pytest.mark.parametrize("vectorised", [False, True])
def test_a_view_smaller_than_its_array(vectorised: bool) -> None:
    """The view covers the first half of x; the last tile's block lies past the view but
    inside the array: only the view check sees it (out-of-view tile by tile and in lockstep)."""
    B, n = 8, 4 * 8
    et = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[4]) as (xp, yp):
        (t,) = b.tile_id(1)
        x = b.memory_view(xp, [n - 4], [1], et, coordinate_set=box(n - 4))
        y = b.memory_view(yp, [2 * n], [1], et, coordinate_set=box(2 * n))
        if vectorised:
            c0, c1, c2 = b.index(0), b.index(1), b.index(2)
            with b.for_(c0, c2, c1) as loop:
                k = loop[0]
                v = b.load(b.access_tile(x, [ssa(t) * B + ssa(k) * 0], box(B), [B]), et)
                b.store(v, b.access_tile(y, [ssa(t) * B + ssa(k) * n], box(B), [B]))
        else:
            v = b.load(b.access_tile(x, [ssa(t) * B], box(B), [B]), et)
            b.store(v, b.access_tile(y, [ssa(t) * B], box(B), [B]))
        b.func_return()
    args = {"x": np.arange(2 * n, dtype=np.float32), "y": np.zeros(2 * n, np.float32)}
    got = _compare(b.module, args)
    assert isinstance(got, tuple) and got[0] == "out-of-view", got


@pytest.mark.parametrize("capacity", [96, 124, 128])
def test_staging_beyond_the_scratchpad_capacity(capacity: int) -> None:
    """Staging 4 blocks of 8 f32 per tile (the last iteration reaches byte 127 of the
    scratchpad) with a smaller scratchpad: the same error tile by tile and in lockstep; with
    128 bytes it fits and lockstep runs."""
    s = _spec(stage=1)
    got = _compare(_build(s), _args(s), scratchpad_bytes=capacity)
    if capacity < 128:
        assert isinstance(got, tuple) and got[0] == "capacity", got
    else:
        assert isinstance(got, ri.RunResult) and got.lockstep
