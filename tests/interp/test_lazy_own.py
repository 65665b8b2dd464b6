"""A large array's first box store owns it lazily (memory.Allocation.own_lazy): a new
buffer, each chunk of the caller's bytes copied in only when an access reaches it, and not at
all when a store covers it whole. Checked against the eager copy it replaces (own()), which
the interpreter still uses below memory._ZERO_SCAN bytes:

- a model of the bytes (numpy) under random sequences of stores (covering their chunks or
  not), loads and whole-buffer reads, over caller arrays of zeros, of random bytes and of
  both by chunk;
- whole runs of random generated kernels (benchmarks/kernelgen) and their schedules, with
  tiny chunks and the lazy path forced on every array, against the same runs with the eager
  copy: the same output bytes and the same errors;
- a kernel built with ktir.builder that stores one block of a large output given as random
  values, reads part of it back and leaves the rest: the caller's values survive where
  nothing was stored.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, box
from ktir.ir import types as ty
from ktir.targets import load_target
from reference_interp import memory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kernelgen  # noqa: E402

CHUNK = 64  # bytes per lazy chunk in the model tests: many chunks in a small array


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "LAZY_CHUNK", CHUNK)
    monkeypatch.setattr(memory, "_ZERO_SCAN", 0)


def _caller_bytes(data: st.DataObject, n: int) -> np.ndarray:
    kind = data.draw(st.sampled_from(["zeros", "random", "mixed"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    b = rng.integers(0, 256, n, dtype=np.uint8) if kind != "zeros" else np.zeros(n, np.uint8)
    if kind == "mixed":  # zero chunks, and chunks zero but for one byte
        for c in range(0, n, CHUNK):
            r = rng.random()
            if r < 0.4:
                b[c : c + CHUNK] = 0
            elif r < 0.6:
                b[c : c + CHUNK] = 0
                b[min(c + int(rng.integers(0, CHUNK)), n - 1)] = 7
    return b


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_lazy_bytes_follow_a_model(data: st.DataObject, tiny_chunks: None) -> None:
    n = data.draw(st.integers(1, 40)) * CHUNK - data.draw(st.integers(0, CHUNK - 1))
    given_bytes = _caller_bytes(data, n)
    src = given_bytes.copy()
    src.setflags(write=False)
    alloc = memory.Allocation("a", "global", 0, src, n)
    alloc.shared = True
    alloc.dtype, alloc.shape = src.dtype, src.shape
    model = given_bytes.copy()
    alloc.own_lazy()
    assert not alloc.shared and alloc.pending is not None
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for _ in range(data.draw(st.integers(1, 12))):
        op = data.draw(st.sampled_from(["store", "store", "partial", "load", "all"]))
        lo = data.draw(st.integers(0, n - 1))
        hi = data.draw(st.integers(lo, min(n - 1, lo + 4 * CHUNK)))
        raw = alloc.typed(np.dtype(np.uint8), False)
        if op == "store":  # every byte of [lo, hi]
            alloc.settle(lo, hi, True)
            vals = rng.integers(0, 256, hi - lo + 1, dtype=np.uint8)
            raw[lo : hi + 1] = vals
            model[lo : hi + 1] = vals
        elif op == "partial":  # every other byte: the chunks must be brought in first
            alloc.settle(lo, hi, False)
            vals = rng.integers(0, 256, len(range(lo, hi + 1, 2)), dtype=np.uint8)
            raw[lo : hi + 1 : 2] = vals
            model[lo : hi + 1 : 2] = vals
        elif op == "load":
            alloc.settle(lo, hi, False)
            np.testing.assert_array_equal(raw[lo : hi + 1], model[lo : hi + 1])
        else:  # raw settles every chunk
            np.testing.assert_array_equal(alloc.raw[:n], model)
            assert alloc.pending is None
    np.testing.assert_array_equal(alloc.contents(copy=False)[:n], model)
    np.testing.assert_array_equal(src, given_bytes)  # the caller's bytes were never written


def test_a_covering_store_copies_nothing(tiny_chunks: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that covers whole chunks neither copies nor scans them (the point of the lazy
    path); the chunks it only meets are copied, and the rest when raw is read."""
    n = 10 * CHUNK
    src = np.arange(n, dtype=np.uint8) | 1  # no zero byte
    alloc = memory.Allocation("a", "global", 0, src, n)
    alloc.shared = True
    alloc.own_lazy()
    filled: list[tuple[int, int]] = []
    fill = memory.Allocation._fill

    def counted(self: memory.Allocation, a: int, b: int) -> None:
        filled.append((a, b))
        fill(self, a, b)

    monkeypatch.setattr(memory.Allocation, "_fill", counted)
    alloc.settle(CHUNK, 4 * CHUNK - 1, True)  # chunks 1-3 whole
    assert filled == []
    alloc.settle(5 * CHUNK + 3, 7 * CHUNK - 1, True)  # chunk 5 in part, 6 whole
    assert filled == [(5 * CHUNK, 6 * CHUNK)]
    assert alloc.npending == 10 - 5
    np.testing.assert_array_equal(alloc.raw[:CHUNK], src[:CHUNK])  # raw settles the rest
    assert sorted(filled) == [(c * CHUNK, (c + 1) * CHUNK) for c in (0, 4, 5, 7, 8, 9)]
    assert alloc.pending is None


def _run_all(text: str, kernel: kernelgen.Generated, lockstep: bool) -> tuple[str, dict[str, np.ndarray]]:
    try:
        result = ri.run(ktir.parse(text, "k.ktir"), None, kernel.args(), lockstep=lockstep)
    except ri.KtirRuntimeError as e:
        return f"error: {e}", {}
    return "ok", {k: np.asarray(v).copy() for k, v in result.outputs.items()}


@settings(max_examples=24, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kernel=kernelgen.kernels())
def test_random_kernels_and_schedules_lazy_as_eager(kernel: kernelgen.Generated, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every array of a generated kernel and of its schedules owned lazily in 16-byte chunks
    gives the bytes and errors of the eager copy, per tile and in lockstep (which settles
    every chunk at its first access)."""
    from kernelgen.campaign import try_schedulers

    texts = [kernel.text()]
    texts += [o.scheduled for o in try_schedulers(kernel, load_target("spyre"), ("exact", "search"), 0.05, kernelgen.check_generator(kernel))
              if o.scheduled is not None]
    for text, lockstep in itertools.product(texts, (False, True)):
        monkeypatch.setattr(memory, "_ZERO_SCAN", 1 << 62)  # eager: own() copies below this size
        eager = _run_all(text, kernel, lockstep)
        monkeypatch.setattr(memory, "_ZERO_SCAN", 0)
        monkeypatch.setattr(memory, "LAZY_CHUNK", 16)
        lazy = _run_all(text, kernel, lockstep)
        monkeypatch.setattr(memory, "LAZY_CHUNK", 1 << 16)
        assert eager[0] == lazy[0], text
        assert eager[1].keys() == lazy[1].keys()
        for name, want in eager[1].items():
            got = lazy[1][name]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert got.tobytes() == want.tobytes(), f"{name} differs\n{text}"


def _block_store_kernel(n: int, block: int) -> ktir.Module:
    """y (n f32), z (2 block f32): s = x + y[3 block:4 block] (a load before any store), then
    y[block + 4:2 block + 4] = s (a store meeting chunks in part at both ends), z[0:block] =
    y[0:block] (nothing stored there) and z[block:2 block] = y[block - 8:2 block - 8] (stored
    and not); w (rows x 1024 f32): w[8:72, 16:144] = x[0:8192] as 64 x 128 (a box that skips
    bytes between its rows: every chunk it meets must be copied first)."""
    f32 = ty.F32
    b = Builder()
    args = [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX), ("z_ptr", ty.INDEX), ("w_ptr", ty.INDEX)]
    with b.func("k", args, grid=[1]) as (x_ptr, y_ptr, z_ptr, w_ptr):
        x = b.memory_view(x_ptr, [block], [1], f32, coordinate_set=box(block))
        y = b.memory_view(y_ptr, [n], [1], f32, coordinate_set=box(n))
        z = b.memory_view(z_ptr, [2 * block], [1], f32, coordinate_set=box(2 * block))

        def tile(view: Any, at: int) -> Any:
            return b.access_tile(view, [b.index(at)], box(block), [block])

        s = b.arith.addf(b.load(tile(x, 0), f32), b.load(tile(y, 3 * block), f32))
        b.store(s, tile(y, block + 4))
        b.store(b.load(tile(y, 0), f32), tile(z, 0))
        b.store(b.load(tile(y, block - 8), f32), tile(z, block))
        rows = n // 1024
        x2 = b.memory_view(x_ptr, [64, 128], [128, 1], f32, coordinate_set=box(64, 128))
        w = b.memory_view(w_ptr, [rows, 1024], [1024, 1], f32, coordinate_set=box(rows, 1024))
        c0 = b.index(0)
        part = b.load(b.access_tile(x2, [c0, c0], box(64, 128), [64, 128]), f32)
        b.store(part, b.access_tile(w, [b.index(8), b.index(16)], box(64, 128), [64, 128]))
        b.func_return()
    return b.module


def test_a_large_output_keeps_the_callers_values_where_nothing_is_stored() -> None:
    n, block = 1 << 19, 1 << 16  # 2 MiB of f32: over memory._ZERO_SCAN, the lazy path
    assert n * 4 >= memory._ZERO_SCAN
    rng = np.random.default_rng(5)
    x = rng.standard_normal(block).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    y_before = y.copy()
    w = rng.standard_normal((n // 1024, 1024)).astype(np.float32)
    want = y_before.copy()
    want[block + 4 : 2 * block + 4] = x + y_before[3 * block : 4 * block]
    want_w = w.copy()
    want_w[8:72, 16:144] = x[:8192].reshape(64, 128)
    for lockstep in (False, True):
        r = ri.run(_block_store_kernel(n, block), "k",
                   {"x_ptr": x, "y_ptr": y, "z_ptr": np.zeros(2 * block, np.float32), "w_ptr": w}, lockstep=lockstep)
        assert r.outputs["w_ptr"].tobytes() == want_w.tobytes()
        assert r.outputs["y_ptr"].tobytes() == want.tobytes()
        assert r.outputs["z_ptr"].tobytes() == np.concatenate([y_before[:block], want[block - 8 : 2 * block - 8]]).tobytes()
        np.testing.assert_array_equal(y, y_before)  # the caller's array is not written
