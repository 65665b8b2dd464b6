"""Binding arguments with the plan remembered per compiled function (executor._Plan: the
argument names and resolved types, made at the first run): a run of a module that ran before
binds, fails and reports exactly as the first run of a freshly parsed copy does, and nothing
of one run's arguments reaches the next (a run after a failed run, other arrays of the same
shape, arrays the caller changed in between, Local() and At() arguments, a Local() memref
whose view differs per tile, scalars)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, located, ssa
from ktir.ir import types as ty
from ktir.syntax.printer import print_module

_F32 = ty.F32
_TEXT: str | None = None


def _text() -> str:
    """c[4t : 4t+4] = a[4t : 4t+4] + w + k on tile t of grid [2]; returns k (a scalar)."""
    global _TEXT
    if _TEXT is None:
        b = Builder()
        mem = ty.MemRefType(shape=(4,), element_type=_F32)
        tensor = ty.TensorType(shape=(4,), element_type=_F32)
        with b.func("k", [("a", ty.INDEX), ("c", ty.INDEX), ("w", mem), ("k", _F32)], results=[_F32],
                    grid=[2]) as (a, c, w, k):
            (t,) = b.tile_id(1)
            va = b.memory_view(a, [8], [1], _F32, coordinate_set=box(8))
            vc = b.memory_view(c, [8], [1], _F32, coordinate_set=box(8))
            x = b.load(b.access_tile(va, [ssa(t) * 4], box(4), [4]), _F32)
            y = b.load(b.access_tile(w, [0], box(4), [4]), _F32)
            kk = b.fill(k, b.empty(tensor))
            b.store(b.arith.addf(b.arith.addf(x, y), kk), b.access_tile(vc, [ssa(t) * 4], box(4), [4]))
            b.func_return(k)
        _TEXT = print_module(located(b.module, "plan.ktir"))
    return _TEXT


def _fresh() -> ktir.Module:
    return ktir.parse(_text(), "plan.ktir")


def _good(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal(8).astype(np.float32), "c": np.zeros(8, np.float32),
            "w": rng.standard_normal(4).astype(np.float32), "k": 0.5}


def _bytes(v: Any) -> Any:
    if isinstance(v, dict):  # a Local given as a dict: its pieces by tile
        return {t: _bytes(p) for t, p in v.items()}
    return v.dtype.str, v.shape, v.tobytes()


def _result(r: ri.RunResult) -> tuple[Any, ...]:
    outs = {k: _bytes(v) for k, v in r.outputs.items()}
    return outs, r.returns, [s.to_dict() for s in r.stats], r.addresses, r.grid


def _error(m: ktir.Module, args: dict[str, Any], **kw: Any) -> tuple[str, str]:
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(m, args=args, **kw)
    return info.value.kind, info.value.message


def _bad_arguments() -> list[dict[str, Any]]:
    good = _good()
    return [
        {k: v for k, v in good.items() if k != "w"},  # missing
        {**good, "z": 1},  # unknown
        {k: v for k, v in {**good, "z": 1}.items() if k != "a"},  # unknown and missing
        {**good, "w": good["w"].astype(np.float64)},  # memref dtype
        {**good, "w": np.zeros(5, np.float32)},  # memref shape
        {**good, "w": np.zeros((4, 1), np.float32)},  # memref rank
        {**good, "k": np.zeros(3, np.float32)},  # an array for a float
        {**good, "a": 1.5},  # a float for an index
        {**good, "a": "text"},  # not a value
        {**good, "a": ri.Local(np.zeros((3, 8), np.float32))},  # not one piece per tile
        {**good, "a": ri.Local({})},  # no pieces
        {**good, "c": ri.At(np.zeros(8, np.float32), 3)},  # misaligned
        {**good, "c": ri.At(np.zeros(8, np.float32), 0)},  # overlaps a
    ]


@pytest.mark.parametrize("case", range(len(_bad_arguments())))
def test_bad_arguments_fail_alike_before_and_after_the_plan_is_made(case: int) -> None:
    bad = _bad_arguments()[case]
    cold = _error(_fresh(), bad)
    warm_module = _fresh()
    ri.run(warm_module, args=_good())
    assert _error(warm_module, bad) == cold
    assert _error(warm_module, bad) == cold  # and again, after a failed run


def test_a_run_after_a_failed_run_is_a_first_run() -> None:
    m = _fresh()
    for bad in _bad_arguments():
        with pytest.raises(ri.KtirRuntimeError):
            ri.run(m, args=bad)
        assert _result(ri.run(m, args=_good(1))) == _result(ri.run(_fresh(), args=_good(1)))


@pytest.mark.parametrize("lockstep", [False, True, "always"])
def test_other_arrays_and_changed_arrays_are_bound_afresh(lockstep: bool | str) -> None:
    m = _fresh()
    args = _good(2)
    first = ri.run(m, args=args, lockstep=lockstep)
    np.testing.assert_array_equal(first.outputs["c"], args["a"] + np.tile(args["w"], 2) + np.float32(0.5))
    for seed in range(3, 6):
        other = _good(seed)  # other arrays of the same shapes
        got = ri.run(m, args=other, lockstep=lockstep)
        assert _result(got) == _result(ri.run(_fresh(), args=other, lockstep=lockstep))
        np.testing.assert_array_equal(got.outputs["c"], other["a"] + np.tile(other["w"], 2) + np.float32(0.5))
    args["a"][:] = 7.0  # the caller changes its arrays in place between runs
    args["w"][:] = 1.0
    args["k"] = 2.0
    got = ri.run(m, args=args, lockstep=lockstep)
    np.testing.assert_array_equal(got.outputs["c"], np.full(8, 10.0, np.float32))
    assert got.returns == [(2.0,), (2.0,)]
    assert not args["c"].any()  # the caller's arrays are never written


def test_local_and_at_arguments_per_run() -> None:
    m = _fresh()
    good = _good(7)
    pieces = np.stack([np.full(4, 1.0, np.float32), np.full(4, 2.0, np.float32)])
    runs = [
        {**good, "w": ri.Local(pieces)},  # a view of each tile's own piece
        {**good, "w": ri.Local({0: pieces[0], 1: pieces[1]})},
        {**good, "a": ri.At(good["a"], 64), "c": ri.At(good["c"], 256)},
        {**good, "a": ri.At(good["a"], 512)},
        good,
        {**good, "w": ri.Local(pieces[::-1].copy())},
    ]
    for args in runs + runs[::-1]:
        got = ri.run(m, args=args)
        assert _result(got) == _result(ri.run(_fresh(), args=args))
        w = args["w"]
        per_tile = (np.stack([w.arrays[0], w.arrays[1]]) if isinstance(w, ri.Local) and isinstance(w.arrays, dict)
                    else np.asarray(w.arrays) if isinstance(w, ri.Local) else np.stack([w, w]))
        a = args["a"].array if isinstance(args["a"], ri.At) else args["a"]
        want = a.reshape(2, 4) + per_tile + np.float32(0.5)
        np.testing.assert_array_equal(got.outputs["c"], want.reshape(-1))
    addresses = ri.run(m, args=runs[2]).addresses
    assert addresses["a"] == 64 and addresses["c"] == 256 and addresses["w"] >= 256 + 8  # w placed above c


def test_the_fields_in_the_order_the_interpreter_fills_them() -> None:
    """TileContext.stats and executor._attempt build TileStats and RunResult positionally."""
    assert [f.name for f in dataclasses.fields(ri.TileStats)] == [
        "tile", "coords", "ops", "bytes_read", "bytes_written", "scratchpad_peak", "bytes_sent", "bytes_received"]
    assert [f.name for f in dataclasses.fields(ri.RunResult)] == [
        "grid", "outputs", "returns", "stats", "addresses", "trace", "lockstep"]
    r = ri.run(_fresh(), args={**_good(), "w": ri.Local(np.ones((2, 4), np.float32))}, trace=True)
    assert r.grid == (2,) and r.returns == [(0.5,), (0.5,)] and r.trace is not None and not r.lockstep
    s = r.stats[1]
    assert s.tile == 1 and s.coords == (1,) and s.ops > 0 and s.bytes_read["global"] == 16
    assert s.bytes_read["ct_local"] == 16 and s.bytes_written == {"global": 16} and s.scratchpad_peak >= 16
    assert s.bytes_sent == s.bytes_received == 0


def test_numbers_bound_to_index_wrap_to_64_bits() -> None:
    b = Builder()
    with b.func("n", [("x", ty.INDEX), ("n", ty.INDEX)], results=[ty.INDEX], grid=[2]) as (_, n):
        b.func_return(n)
    m = ktir.parse(print_module(located(b.module, "n.ktir")), "n.ktir")
    x = np.zeros(4, np.float32)
    for given, want in [(0, 0), (5, 5), (-3, -3), (2**63, -(2**63)), (2**64 + 5, 5), (True, 1), (np.int64(7), 7),
                        (np.uint8(3), 3)]:
        got = ri.run(m, args={"x": x, "n": given}).returns
        assert got == [(want,), (want,)] and all(type(r[0]) is int for r in got), (given, got)
    for bad in (1.5, np.float32(2.0)):
        with pytest.raises(ri.KtirRuntimeError) as info:
            ri.run(m, args={"x": x, "n": bad})
        assert info.value.kind == "argument" and "argument n has type index but a float" in info.value.message


@pytest.mark.parametrize("lockstep", [False, True])
def test_arrays_of_python_objects_are_argument_errors(lockstep: bool) -> None:
    """An object array has no bytes to place: bound as a pointer, a memref, At() or Local(), the
    run reports an argument error (numpy's TypeError from viewing it as bytes escaped before)."""
    objects = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], dtype=object)
    for name, value in [("a", objects), ("a", ri.At(objects, 1024)), ("w", objects[:4]),
                        ("w", ri.Local(np.zeros((2, 4), dtype=object)))]:
        with pytest.raises(ri.KtirRuntimeError) as info:
            ri.run(_fresh(), args={**_good(), name: value}, lockstep=lockstep)
        assert info.value.kind == "argument" and "Python objects" in info.value.message, (name, info.value.message)
