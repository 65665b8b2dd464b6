"""Recycled result buffers (reference_interp/recycle.py): a buffer is handed out again only
when nothing but the pool refers to it. Checked on the pool itself, on a kernel whose loop
keeps earlier results alive (iter_args, a returned tensor held by the caller across runs)
against numpy, and on random generated kernels (benchmarks/kernelgen) run with every
elementwise result recycled against the same runs with none."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import ktir
import reference_interp as ri
from ktir.builder import Builder, Value, box
from ktir.ir import types as ty
from reference_interp import recycle

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kernelgen  # noqa: E402


def test_a_buffer_comes_back_only_when_nothing_refers_to_it() -> None:
    recycle.clear()
    a = recycle.empty((4, 8), np.float32)
    b = recycle.empty((4, 8), np.float32)
    assert a is not b  # `a` is still referred to
    view = a[1:]
    del a
    c = recycle.empty((4, 8), np.float32)
    assert c is not b and c.base is None and view.base is not c  # the view keeps `a` reserved
    del view
    d = recycle.empty((4, 8), np.float32)  # `a` is free now
    assert d is not b and d is not c
    assert recycle.empty((4, 8), np.float64) is not d  # another dtype: never the same buffer
    recycle.clear()


def test_the_pool_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    recycle.clear()
    monkeypatch.setattr(recycle, "MAX_BUFFERS", 3)
    held = [recycle.empty((16,), np.float32) for _ in range(10)]
    assert len(recycle._pool()) == 3 and len({id(h) for h in held}) == 10
    recycle.clear()


def _running_sum(n: int, steps: int) -> ktir.Module:
    """acc = x[0]; acc = acc + x[i] * 2 - acc / 4 for i in 1..steps-1 (iter_args), each
    partial stored to p[i]; returns acc (a tensor result the caller keeps)."""
    f32 = ty.F32
    t = ty.TensorType(shape=(1, n), element_type=f32)
    b = Builder()
    with b.func("k", [("x_ptr", ty.INDEX), ("p_ptr", ty.INDEX)], results=[t], grid=[1]) as (x_ptr, p_ptr):
        x = b.memory_view(x_ptr, [steps, n], [n, 1], f32, coordinate_set=box(steps, n))
        p = b.memory_view(p_ptr, [steps, n], [n, 1], f32, coordinate_set=box(steps, n))
        c0, c1, cs = b.index(0), b.index(1), b.index(steps)

        def row(view: Value, i: Value) -> Value:
            return b.access_tile(view, [i, c0], box(1, n), [1, n])

        first = b.load(row(x, c0), f32)
        two = b.fill(b.constant(2.0, f32), b.empty(t))
        four = b.fill(b.constant(4.0, f32), b.empty(t))
        with b.for_(c1, cs, c1, [first], results=("acc",)) as (i, acc):
            xi = b.load(row(x, i), f32)
            nxt = b.arith.subf(b.arith.addf(acc, b.arith.mulf(xi, two)), b.arith.divf(acc, four))
            b.store(nxt, row(p, i))
            b.yield_(nxt)
        (result,) = b.last_results
        b.func_return(result)
    return b.module


def _oracle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's p rows and result in numpy, op by op in f32 (the same roundings)."""
    acc = x[0].copy()
    p = np.zeros_like(x)
    for i in range(1, len(x)):
        acc = (acc + x[i] * np.float32(2)) - acc / np.float32(4)
        p[i] = acc
    return p, acc


def test_a_loop_keeping_its_results_alive_gets_numpys_bits_run_after_run() -> None:
    n, steps = 1 << 15, 6  # 128 KiB rows: recycled (recycle.MIN_BYTES)
    assert n * 4 >= recycle.MIN_BYTES
    m = _running_sum(n, steps)
    rng = np.random.default_rng(3)
    kept = []
    for _ in range(3):  # the caller holds each run's returned tensor while the next runs
        x = rng.standard_normal((steps, n)).astype(np.float32)
        r = ri.run(m, "k", {"x_ptr": x, "p_ptr": np.zeros_like(x)}, lockstep=False)
        p, acc = _oracle(x)
        assert r.outputs["p_ptr"][1:].tobytes() == p[1:].tobytes()
        (got,) = r.returns[0]
        assert np.asarray(got).tobytes() == acc.tobytes()
        kept.append((got, acc))
        assert recycle._pool()  # the loop's results went through the pool
    for got, acc in kept:  # later runs wrote none of the buffers an earlier result still uses
        assert np.asarray(got).tobytes() == acc.tobytes()


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kernel=kernelgen.kernels())
def test_random_kernels_recycling_every_result_as_none(kernel: kernelgen.Generated, monkeypatch: pytest.MonkeyPatch) -> None:
    text = kernel.text()
    runs: list[object] = []
    for least in (1 << 62, 0):  # no result recycled; every array result recycled
        monkeypatch.setattr(recycle, "MIN_BYTES", least)
        recycle.clear()
        for lockstep in (False, True):
            try:
                r = ri.run(ktir.parse(text, "k.ktir"), None, kernel.args(), lockstep=lockstep)
                runs.append({k: np.asarray(v).tobytes() for k, v in r.outputs.items()})
            except ri.KtirRuntimeError as e:
                runs.append(str(e))
    assert all(r == runs[0] for r in runs), text
    recycle.clear()
