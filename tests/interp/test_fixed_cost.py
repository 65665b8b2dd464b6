"""What a run keeps from earlier runs to cut its fixed cost (executor._Entry per module and
function: the grid, the compiled function and binding plan per compile key; executor._options:
one Options per set of run() arguments) never changes a result: a sequence of runs of one
parsed module that changes, between runs, the function (and so the grid), the arguments
(shapes, dtypes, values, placement, Local and At arguments, memory=) and every run() option
gives, run for run, the outputs, returns, statistics, addresses, trace and error of the same
run of a freshly parsed copy, tile by tile and in lockstep. Also: the race tracker's clock
joins and collection are those of the plain loops they replaced."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, located, ssa
from ktir.dialects.names import Memref
from ktir.ir import types as ty
from ktir.syntax.printer import print_module
from reference_interp import blas, races

_F32 = ty.F32
_TEXT: str | None = None
_BIG = 600_000  # f32 elements per tile: more than a spyre scratchpad (2 MiB) holds


def _text() -> str:
    """Functions of one signature (a: index, c: index, w: memref<4xf32>, s: f32) -> f32, each
    returning s: @k2 (grid [2]) and @k4 (grid [4]) store a[4t : 4t+4] + w + s to c[4t : 4t+4];
    @racy (grid [2]) stores it to c[0 : 4] on every tile; @lenient (grid [2]) adds the contents
    of a tensor.empty instead of s. Each first allocates a memref<4xf32> (checked against
    max_value_bytes on every run; test_limits_every_run checks tensor.empty and linalg.generic)."""
    global _TEXT
    if _TEXT is None:
        b = Builder()
        mem = ty.MemRefType(shape=(4,), element_type=_F32)
        tensor = ty.TensorType(shape=(4,), element_type=_F32)
        signature = [("a", ty.INDEX), ("c", ty.INDEX), ("w", mem), ("s", _F32)]
        for name, grid, racy, empty in (("k2", 2, False, False), ("k4", 4, False, False), ("racy", 2, True, False),
                                        ("lenient", 2, False, True)):
            with b.func(name, signature, results=[_F32], grid=[grid]) as (a, c, w, s):
                b.create(Memref.alloc, [], [mem])
                (t,) = b.tile_id(1)
                n = 4 * grid
                va = b.memory_view(a, [n], [1], _F32, coordinate_set=box(n))
                vc = b.memory_view(c, [n], [1], _F32, coordinate_set=box(n))
                x = b.load(b.access_tile(va, [ssa(t) * 4], box(4), [4]), _F32)
                y = b.load(b.access_tile(w, [0], box(4), [4]), _F32)
                z = b.empty(tensor) if empty else b.fill(s, b.empty(tensor))
                b.store(b.arith.addf(b.arith.addf(x, y), z), b.access_tile(vc, [0 if racy else ssa(t) * 4], box(4), [4]))
                b.func_return(s)
        _TEXT = print_module(located(b.module, "fixed.ktir"))
    return _TEXT


def _fresh() -> ktir.Module:
    return ktir.parse(_text(), "fixed.ktir")


def _args(n: int, seed: int, dtype: type[np.generic] = np.float32) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal(n).astype(dtype), "c": np.zeros(n, dtype),
            "w": rng.standard_normal(4).astype(np.float32), "s": float(seed) / 4}


def _runs() -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """(function, arguments, other run() arguments, the outcome: "ok" or the error's kind): each
    differs from its neighbours in what the kept state depends on."""
    a8, a16 = _args(8, 1), _args(16, 2)
    pieces = np.stack([np.full(4, 1.0, np.float32), np.full(4, -2.0, np.float32)])
    return [
        ("k2", a8, {}, "ok"),
        ("k4", a16, {}, "ok"),  # another function: another grid
        ("k2", _args(8, 3), {}, "ok"),  # other values
        ("k2", a16, {}, "ok"),  # longer arrays than the views (the views read the first 8)
        ("k4", a8, {}, "out-of-bounds"),  # shorter arrays than the views
        ("k2", {**a8, "a": a8["a"].astype(np.float64)}, {}, "ok"),  # another dtype (its bytes read as f32)
        ("k2", _args(8, 4, np.float64), {}, "out-of-bounds"),  # c's element address counts f64s: 2x too far
        ("k2", {**a8, "w": a8["w"].astype(np.float64)}, {}, "argument"),  # a memref argument of the wrong dtype
        ("k2", {**a8, "w": np.zeros(5, np.float32)}, {}, "argument"),  # ... of the wrong shape
        ("k2", {**a8, "a": ri.At(a8["a"], 64), "c": ri.At(a8["c"], 256)}, {}, "ok"),  # placed at given addresses
        ("k2", {**a8, "c": ri.At(a8["c"], 0)}, {}, "argument"),  # overlapping a
        ("k2", a8, {"memory": {"m": ri.At(np.ones(64, np.float32), 0)}}, "ok"),  # arguments placed above m
        ("k2", {**a8, "w": ri.Local(pieces)}, {}, "ok"),  # one piece per tile
        ("k2", {**a8, "w": ri.Local(pieces)}, {"scratchpad_bytes": 8}, "capacity"),
        ("k2", {**a8, "w": ri.Local(np.zeros((2, _BIG), np.float32))}, {}, "argument"),  # the wrong shape
        ("k2", {**a8, "w": ri.Local(np.zeros((2, _BIG), np.float32))}, {"target": "spyre"}, "capacity"),
        ("k2", a8, {"step_limit": 3}, "step-limit"),
        ("k2", a8, {"max_value_bytes": 8}, "memory-limit"),
        ("racy", a8, {}, "race"),
        ("racy", a8, {"check_races": False}, "ok"),
        ("lenient", a8, {}, "undefined"),
        ("lenient", a8, {"strict": False}, "ok"),
        ("k2", a8, {"trace": True}, "ok"),
        ("k2", {**a8, "c": np.ones(8, np.float32)}, {"trace": True, "shapes_only": True}, "ok"),  # c: zeros stored
        ("k4", {k: v for k, v in a16.items() if k != "s"}, {}, "argument"),  # missing
        ("k4", {**a16, "z": 1}, {}, "argument"),  # unknown
        ("k2", {**a8, "s": 2}, {"blas_threads": None}, "ok"),
    ]


def _given(v: Any) -> np.ndarray:
    return v.array if isinstance(v, ri.At) else v


def _reference(func: str, args: dict[str, Any], kw: dict[str, Any]) -> np.ndarray:
    """c after the run, computed with numpy on the arrays' bytes as f32 (the views' type); with
    shapes_only, the zeros that the tensor ops give instead of their results (Options.shapes_only)."""
    grid = 4 if func == "k4" else 2
    a = np.ascontiguousarray(_given(args["a"])).view(np.float32)
    c = np.array(_given(args["c"]))
    out = c.view(np.float32).reshape(-1)
    if kw.get("shapes_only"):
        out[: 4 * grid] = 0
        return c
    w = args["w"]
    s = np.float32(0.0 if func == "lenient" else args["s"])
    for t in range(grid):
        piece = w.arrays[t] if isinstance(w, ri.Local) else w
        at = 0 if func == "racy" else 4 * t  # racy: the last tile's store is the one left
        out[at: at + 4] = a[4 * t: 4 * t + 4] + piece + s
    return c


def _bytes(v: Any) -> Any:
    return v.dtype.str, v.shape, v.tobytes()


def _outcome(m: ktir.Module, func: str, args: dict[str, Any], kw: dict[str, Any], lockstep: bool | str) -> tuple[Any, ...]:
    """Everything a run reports but whether it ran in lockstep (timing may choose either: the
    results are the same)."""
    try:
        r = ri.run(m, func, args=args, lockstep=lockstep, **kw)
    except ri.KtirRuntimeError as e:
        return "error", e.kind, e.message, e.tile, str(e)
    return ("ok", {k: _bytes(v) for k, v in r.outputs.items()}, r.returns, [s.to_dict() for s in r.stats],
            r.addresses, r.grid, r.trace)


@pytest.mark.parametrize("lockstep", [False, True, "always"])
def test_runs_of_one_module_are_first_runs(lockstep: bool | str) -> None:
    """Each run against a fresh module's, and against what it must give: the kind of error, or
    c as numpy computes it and a trace exactly when asked (a stale memo shared by both modules
    would pass the first comparison, not the second)."""
    runs = _runs()
    m = _fresh()
    for order in (runs, runs[::-1], runs[::2] + runs[1::2]):
        for func, args, kw, expect in order:
            got = _outcome(m, func, args, kw, lockstep)
            assert got == _outcome(_fresh(), func, args, kw, lockstep), (func, kw)
            assert (got[1] if got[0] == "error" else "ok") == expect, (func, kw, got[:3])
            if got[0] == "ok":
                assert (got[-1] is not None) == bool(kw.get("trace")), (func, kw)
                assert got[1]["c"] == _bytes(_reference(func, args, kw)), (func, kw)


def test_the_threads_asked_of_blas_follow_each_run(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int | None] = []
    begin = blas.begin

    def recorded(threads: int | None) -> None:
        asked.append(threads)
        begin(threads)

    monkeypatch.setattr(blas, "begin", recorded)
    m = _fresh()
    for threads in (1, None, 2, 1):
        ri.run(m, "k2", args=_args(8, 0), blas_threads=threads)
    assert asked == [1, None, 2, 1]


def test_an_unwritten_output_is_the_given_array_read_only() -> None:
    """README: an array the run never wrote is a read-only view of the array given; a written
    one is the run's own copy (the caller's array unchanged)."""
    args = _args(8, 5)
    r = ri.run(_fresh(), "k2", args=args)
    a, c = r.outputs["a"], r.outputs["c"]
    assert np.shares_memory(a, args["a"]) and not a.flags.writeable and a.shape == (8,) and a.dtype == np.float32
    assert not np.shares_memory(c, args["c"]) and not args["c"].any()
    with pytest.raises(ValueError):
        a[0] = 1.0
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)  # an N-d array bound to an index argument
    r = ri.run(_fresh(), "k2", args={**args, "a": matrix})
    assert r.outputs["a"].shape == (3, 4) and np.shares_memory(r.outputs["a"], matrix)
    np.testing.assert_array_equal(r.outputs["a"], matrix)
    strided = np.arange(16, dtype=np.float32)[::2]  # not contiguous: placed as a contiguous copy
    r = ri.run(_fresh(), "k2", args={**args, "a": strided})
    np.testing.assert_array_equal(r.outputs["a"], strided)
    assert not np.shares_memory(r.outputs["a"], strided) and not r.outputs["a"].flags.writeable


# ---------------------------------------------------------------------- the race tracker's clocks


def _join(mine: list[int], t: int, snaps: list[list[int]]) -> None:
    """The clock join as a loop: every entry but t's own takes the largest of the snapshots'."""
    for snap in snaps:
        for u, v in enumerate(snap):
            if v > mine[u] and u != t:
                mine[u] = v


def _passed(n: int, vc: list[list[int] | None], finished: set[int]) -> list[int]:
    """collect()'s bound as a loop: per tile u, the least entry for u in the clocks of the
    running tiles other than u (a missing clock reads as zeros; none: never)."""
    out = []
    for u in range(n):
        low = races._NEVER
        for t in range(n):
            if t != u and t not in finished:
                c = vc[t]
                low = min(low, 0 if c is None else c[u])
        out.append(low)
    return out


class _Reads:
    def __init__(self, u: int, dropped: list[tuple[int, int]]) -> None:
        self.u, self.dropped = u, dropped

    def drop_before(self, epoch: int) -> None:
        self.dropped.append((self.u, epoch))


class _Alloc:
    def __init__(self, readers: dict[int, _Reads]) -> None:
        self.readers = readers


def test_clock_joins_and_collection_are_the_loops() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        n = rng.randint(1, 9)
        tracker = races.RaceTracker(n)
        tracker.vc = [None if rng.random() < 0.3 else [rng.randint(0, 5) for _ in range(n)] for _ in range(n)]
        tracker.finished = {u for u in range(n) if rng.random() < 0.4}
        dropped: list[tuple[int, int]] = []
        tracker.tracked = [_Alloc({u: _Reads(u, dropped) for u in range(n)})]  # type: ignore[list-item]
        tracker.collect()
        assert dropped == [(u, p) for u, p in enumerate(_passed(n, tracker.vc, tracker.finished)) if p]
        t = rng.randrange(n)
        mine = [rng.randint(0, 5) for _ in range(n)]
        snaps = [[rng.randint(0, 5) for _ in range(n)] for _ in range(rng.choice([0, 1, 2, 8, 9, 12]))]
        tracker.vc[t] = list(mine)
        tracker._syncs = 1  # no collection inside this join
        _join(mine, t, snaps)
        tracker.join(t, snaps)
        assert tracker.vc[t] == mine


# ---------------------------------------------------------------------- floating-point errors


def _divide_text() -> str:
    """x / 0 (infinities and a NaN) stored at p[far]: with far beyond p, an error after
    the division."""
    b = Builder()
    t4 = ty.TensorType(shape=(4,), element_type=_F32)
    with b.func("d", [("x", t4), ("p", ty.INDEX), ("far", ty.INDEX)], results=[t4], grid=[1]) as (x, p, far):
        q = b.arith.divf(x, b.fill(b.constant(0.0, _F32), b.empty(t4)))
        view = b.memory_view(p, [1 << 20], [1], _F32, coordinate_set=box(1 << 20))
        b.store(q, b.access_tile(view, [ssa(far)], box(4), [4]))
        b.func_return(q)
    return print_module(located(b.module, "divide.ktir"))


@pytest.mark.parametrize("lockstep", [False, True])
def test_a_run_ignores_floating_point_errors_and_restores_the_callers_state(lockstep: bool) -> None:
    m = ktir.parse(_divide_text(), "divide.ktir")
    x, p = np.array([1, 0, -1, 2], np.float32), np.zeros(8, np.float32)
    for outer in ({"all": "raise"}, {"divide": "warn", "invalid": "ignore"}, {"all": "ignore"}):
        with np.errstate(**outer):  # type: ignore[arg-type]
            state = np.geterr()
            for _ in range(2):
                r = ri.run(m, args={"x": x, "p": p, "far": 0}, lockstep=lockstep)
                assert r.returns[0][0].tolist()[::2] == [np.inf, -np.inf] and np.isnan(r.returns[0][0][1])
                assert np.geterr() == state
                with pytest.raises(ri.KtirRuntimeError, match="out-of-bounds|reaches byte"):
                    ri.run(m, args={"x": x, "p": p, "far": 1 << 19}, lockstep=lockstep)
                assert np.geterr() == state


def test_limits_equal_in_value_but_not_in_type_are_kept_apart() -> None:
    """Options are kept per set of run() arguments: 3 and 3.0 are one dict key, but a message
    spells the limit it was given."""
    m = _fresh()
    for limit in (3, 3.0, 3, np.int64(3)):
        with pytest.raises(ri.KtirRuntimeError) as info:
            ri.run(m, "k2", args=_args(8, 0), step_limit=limit)  # type: ignore[arg-type]
        assert f"executed more than {limit} ops" in info.value.message
        assert info.value.message == _outcome(_fresh(), "k2", _args(8, 0), {"step_limit": limit}, False)[2]


@pytest.mark.parametrize("lockstep", [False, "always"])
@pytest.mark.parametrize("step", [3, 4])
def test_stores_of_tiles_sharing_one_element_race(lockstep: bool | str, step: int) -> None:
    """Tile t stores 4 elements at 3t (the last element of tile t's box is the first of tile
    t + 1's: the byte spans touch in one element) or at 4t (apart): the race tracker's box path
    (races.RaceTracker._write_box skips boxes whose spans are apart) reports the first, not the
    second."""
    b = Builder()
    tensor = ty.TensorType(shape=(4,), element_type=_F32)
    with b.func("touch", [("c", ty.INDEX)], grid=[4]) as (c,):
        (t,) = b.tile_id(1)
        view = b.memory_view(c, [16], [1], _F32, coordinate_set=box(16))
        b.store(b.fill(b.constant(1.0, _F32), b.empty(tensor)), b.access_tile(view, [ssa(t) * step], box(4), [4]))
        b.func_return()
    m = ktir.parse(print_module(located(b.module, "touch.ktir")), "touch.ktir")
    if step == 4:
        assert ri.run(m, args={"c": np.zeros(16, np.float32)}, lockstep=lockstep).outputs["c"].tolist() == [1.0] * 16
        return
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(m, args={"c": np.zeros(16, np.float32)}, lockstep=lockstep)
    assert info.value.kind == "race" and "coordinate (3,)" in info.value.message and info.value.tile == 1


def test_local_outputs_are_arrays_of_their_own() -> None:
    """A Local argument's output: the pieces stacked (or by tile), writable, sharing memory with
    neither the caller's pieces nor each other."""
    pieces = np.stack([np.full(4, 1.0, np.float32), np.full(4, -2.0, np.float32)])
    m = _fresh()
    for w in (ri.Local(pieces), ri.Local({0: pieces[0], 1: pieces[1]})):
        out = ri.run(m, "k2", args={**_args(8, 6), "w": w}).outputs["w"]
        got = [out[0], out[1]]
        for t in (0, 1):
            np.testing.assert_array_equal(got[t], pieces[t])
            assert got[t].flags.writeable and not np.shares_memory(got[t], pieces)
        assert not np.shares_memory(got[0], got[1])
        got[0][:] = 7.0  # the caller's to change
        np.testing.assert_array_equal(pieces[0], np.full(4, 1.0, np.float32))
