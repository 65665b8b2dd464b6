"""reference_interp/half.py: the fast f16 <-> f32 conversions give numpy's bits and layouts,
and the per-run cache of widened loads never serves data the run has since overwritten.

The oracle is numpy's own `astype` (which the interpreter used before): every f16 value
widened; narrowed, every f16 value, every rounding boundary (the midpoints between
neighbouring f16 values, and the f32 values either side of them), the subnormal range, the
overflow threshold, every class of NaN and random bit patterns. All 2^32 f32 inputs were
compared when narrow16 was written (`python tests/interp/test_half_convert.py`: about 10
minutes of one core; not a test for that reason).
"""

from __future__ import annotations

import numpy as np
import pytest

import reference_interp as ri
from ktir.builder import Builder, box
from ktir.ir import types as ty
from reference_interp.half import SMALL_NARROW, SMALL_WIDEN, SMALL_WIDEN8, WideCache, narrow16, widen, widen16

ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _bits32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


def _bits16(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16)


def test_widen16_gives_numpys_bits_for_every_f16_value() -> None:
    h = ALL16.view(np.float16)
    got = widen16(h)
    assert h.size >= SMALL_WIDEN  # the table path, not the fallback
    np.testing.assert_array_equal(_bits32(got), _bits32(h.astype(np.float32)))


def _narrow_inputs() -> np.ndarray:
    """f32 bit patterns around every f16 rounding decision, and then some."""
    h = ALL16.view(np.float16)
    finite = h[np.isfinite(h)]
    f = finite.astype(np.float32)
    with np.errstate(over="ignore"):
        up = np.nextafter(finite, np.float16(np.inf)).astype(np.float32)
    mid = ((f.astype(np.float64) + up.astype(np.float64)) / 2).astype(np.float32)  # exact: f16 midpoints fit in f32
    parts = [f, mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))]
    bits = [_bits32(p) for p in parts]
    rng = np.random.default_rng(2026)
    bits.append(rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32))
    # the f32 exponents around and below the f16 subnormal range, every significand pattern sampled
    exps = np.arange(90, 116, dtype=np.uint32) << np.uint32(23)
    sig = rng.integers(0, 1 << 23, 4096, dtype=np.uint64).astype(np.uint32)
    bits.append((exps[:, None] | sig[None, :]).reshape(-1))
    # overflow threshold, infinities, and NaNs with every top-10 and low-13 significand case
    special = [0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x477FFFFF, 0x47800000, 0x7F7FFFFF, 0x7F800000]
    nan_sig = np.concatenate([np.arange(1, 1 << 13), (np.arange(1, 1 << 10) << 13), (np.arange(1, 1 << 10) << 13) | 1])
    bits.append(np.array(special, dtype=np.uint32))
    bits.append(np.uint32(0x7F800000) | nan_sig.astype(np.uint32))
    allb = np.concatenate(bits)
    return np.concatenate([allb, allb | np.uint32(0x80000000)]).view(np.float32)


def test_narrow16_gives_numpys_bits_at_every_rounding_boundary() -> None:
    x = _narrow_inputs()
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    got = narrow16(x)
    bad = _bits16(got) != _bits16(want)
    assert not bad.any(), f"{int(bad.sum())} differ, first input bits {hex(int(_bits32(x)[np.argmax(bad)]))}"


@pytest.mark.parametrize("case", ["normal", "with zeros", "with subnormals", "with overflow", "with nan"])
def test_narrow16_gives_numpys_bits_on_each_path(case: str) -> None:
    x = np.random.default_rng(5).standard_normal(SMALL_NARROW * 2).astype(np.float32) * 100
    x[::7] = {"normal": 1.0, "with zeros": 0.0, "with subnormals": 3e-7, "with overflow": 7e4,
              "with nan": np.nan}[case]
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(_bits16(narrow16(x)), _bits16(want))


def test_conversions_lay_results_out_as_astype_does() -> None:
    h = np.random.default_rng(1).standard_normal((96, 128)).astype(np.float16)
    f = h.astype(np.float32)
    for src in (h, h[:, :64], h[16:80, 32:96], h.T, h[::2], h[:, ::-1], np.broadcast_to(h[0], (96, 128))):
        want = src.astype(np.float32)
        got = widen16(src)
        assert got.strides == want.strides and got.shape == want.shape
        np.testing.assert_array_equal(_bits32(got), _bits32(want))
    for src in (f, f.T, f[:, :100], f[::2]):
        want16 = src.astype(np.float16)
        got16 = narrow16(src)
        assert got16.strides == want16.strides and got16.shape == want16.shape
        np.testing.assert_array_equal(_bits16(got16), _bits16(want16))


def test_the_cache_shares_one_widened_copy_per_box() -> None:
    base = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float16)
    c = WideCache()
    a1, a2, other = base[:32], base[:32], base[32:]
    c.note(a1, ("alloc", 0, (32, 64), (128, 2), a1.dtype))
    c.note(a2, ("alloc", 0, (32, 64), (128, 2), a2.dtype))
    c.note(other, ("alloc", 4096, (32, 64), (128, 2), other.dtype))
    w1, w2, w3 = c.widen(a1), c.widen(a2), c.widen(other)
    assert w1 is w2 and w3 is not w1  # the same box: one copy
    np.testing.assert_array_equal(w1, base[:32].astype(np.float32))
    np.testing.assert_array_equal(w3, base[32:].astype(np.float32))
    fresh = base[:32].copy()  # never noted: widened on its own
    assert c.widen(fresh) is not w1


N = 64


def _overwrite_kernel():  # type: ignore[no-untyped-def]
    """P = X @ W (X loaded in place: the run has not written it), then X := Y, then the same box
    of X loaded again and Q = X @ W. Returns P and Q (Q is Y @ W, not a cached X @ W)."""
    f16, f32 = ty.F16, ty.F32
    acc = ty.TensorType(shape=(N, N), element_type=f32)
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX), ("w", ty.INDEX)], results=[acc, acc], grid=[1]) as (x, y, w):
        vx = b.memory_view(x, [N, N], [N, 1], f16, coordinate_set=box(N, N))
        vy = b.memory_view(y, [N, N], [N, 1], f16, coordinate_set=box(N, N))
        vw = b.memory_view(w, [N, N], [N, 1], f16, coordinate_set=box(N, N))
        zero = b.constant(0.0, f32)
        z = b.fill(zero, b.empty(acc))
        tx = b.access_tile(vx, [0, 0], box(N, N), [N, N])
        wt = b.load(b.access_tile(vw, [0, 0], box(N, N), [N, N]), f16)
        x1 = b.load(tx, f16)
        p = b.dps("linalg.matmul", [x1, wt], [z])
        yv = b.load(b.access_tile(vy, [0, 0], box(N, N), [N, N]), f16)
        b.store(yv, tx)
        x2 = b.load(b.access_tile(vx, [0, 0], box(N, N), [N, N]), f16)
        q = b.dps("linalg.matmul", [x2, wt], [z])
        b.func_return(p, q)
    return b.module


@pytest.mark.parametrize("lockstep", [False, "always"])
def test_a_box_loaded_again_after_a_write_is_widened_from_the_new_contents(lockstep: bool | str) -> None:
    rng = np.random.default_rng(3)
    X, Y, W = (rng.standard_normal((N, N)).astype(np.float16) for _ in range(3))
    r = ri.run(_overwrite_kernel(), args={"x": X, "y": Y, "w": W}, lockstep=lockstep)
    p, q = r.returns[0]
    wf = W.astype(np.float32)
    np.testing.assert_allclose(p, X.astype(np.float32) @ wf, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(q, Y.astype(np.float32) @ wf, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(r.outputs["x"], Y)


# ---------------------------------------------------------------------- max/min reductions' zeros


@pytest.mark.parametrize("comb", ["arith.maximumf", "arith.minimumf"])
def test_max_and_min_reductions_sign_their_zero_results_as_ieee_does(comb: str) -> None:
    """linalg.reduce with maximumf/minimumf fixes the sign of zero results only (linalg._reduce
    skips the passes over the input when no result is zero): rows of +0/-0 mixes, rows whose
    result is not zero, rows with a NaN. Oracle: Python's comparisons row by row, with
    max(-0, +0) = +0 and min(-0, +0) = -0."""
    rows, cols = 64, 16
    rng = np.random.default_rng(7)
    x = rng.choice(np.array([0.0, -0.0, 1.5, -2.0, -0.0], np.float32), size=(rows, cols))
    x[::5] = rng.choice(np.array([0.0, -0.0], np.float32), size=(len(x[::5]), cols))
    x[3::7] = np.abs(x[3::7]) + 1  # no zero result
    x[11, 4] = np.nan
    t_in = ty.TensorType(shape=(rows, cols), element_type=ty.F32)
    t_out = ty.TensorType(shape=(rows,), element_type=ty.F32)
    b = Builder()
    with b.func("r", [("x", t_in)], results=[t_out]) as (xv,):
        init = b.fill(b.constant(float("-inf") if comb == "arith.maximumf" else float("inf"), ty.F32), b.empty(t_out))
        b.func_return(b.reduce(comb, [xv], [init], [1]))
    got = ri.run(b.module, args={"x": x}).returns[0][0]
    for i in range(rows):
        row = [float(v) for v in x[i]]
        if any(v != v for v in row):
            assert np.isnan(got[i])
            continue
        m = max(row) if comb == "arith.maximumf" else min(row)
        if m == 0:
            signs = [np.signbit(v) for v in row if v == 0]
            negative = all(signs) if comb == "arith.maximumf" else any(signs)
            m = -0.0 if negative else 0.0
        assert got[i] == m and np.signbit(got[i]) == np.signbit(m), (i, row, got[i], m)


@pytest.mark.parametrize("lockstep", [False, "always"])
def test_a_returned_widened_load_is_the_callers_own_array(lockstep: bool | str) -> None:
    """arith.extf of a box loaded in place returns the run's shared (read-only) f32 copy inside the
    run; a function returning it gives the caller writable arrays (copies: writing them changes
    nothing the next run reads)."""
    f16, f32 = ty.F16, ty.F32
    t32 = ty.TensorType(shape=(N, N), element_type=f32)
    b = Builder()
    with b.func("k", [("x", ty.INDEX)], results=[t32, t32], grid=[2]) as (x,):
        vx = b.memory_view(x, [N, N], [N, 1], f16, coordinate_set=box(N, N))
        h = b.load(b.access_tile(vx, [0, 0], box(N, N), [N, N]), f16)
        w1 = b.create("arith.extf", [h], [t32])[0]
        w2 = b.create("arith.extf", [h], [t32])[0]
        b.func_return(w1, w2)
    X = np.random.default_rng(4).standard_normal((N, N)).astype(np.float16)
    r = ri.run(b.module, args={"x": X}, lockstep=lockstep)
    got = [v for tile in r.returns for v in tile]
    for v in got:
        assert v.flags.writeable
        np.testing.assert_array_equal(v, X.astype(np.float32))
    for v in got:
        v[...] = 99.0  # the caller may write them: the next run is unaffected
    again = ri.run(b.module, args={"x": X}, lockstep=lockstep)
    for tile in again.returns:
        for v in tile:
            np.testing.assert_array_equal(v, X.astype(np.float32))


def _all_f32() -> None:
    """narrow16 against astype for every float32 bit pattern, in chunks of 2^24."""
    n = 1 << 24
    for k in range(256):
        x = np.arange(k * n, (k + 1) * n, dtype=np.uint64).astype(np.uint32).view(np.float32)
        with np.errstate(all="ignore"):
            want = x.astype(np.float16)
        bad = _bits16(narrow16(x)) != _bits16(want)
        if bad.any():
            raise SystemExit(f"differs at input bits {hex(int(_bits32(x)[np.argmax(bad)]))}")
    print("narrow16 == astype(float16) for all 2^32 float32 inputs")


if __name__ == "__main__":
    _all_f32()


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e5m2fnuz", "float8_e4m3fnuz"])
def test_widen8_gives_ml_dtypes_bits_for_every_fp8_value_and_its_layout(name: str) -> None:
    import ml_dtypes

    dt = np.dtype(getattr(ml_dtypes, name))
    every = np.tile(np.arange(256, dtype=np.uint8), 8).view(dt)  # every bit pattern, NaNs included
    assert every.size >= SMALL_WIDEN8  # the table path, not the fallback
    for src in (every, every.reshape(32, 64), every.reshape(32, 64)[4:20, 8:40], every.reshape(32, 64).T,
                every.reshape(32, 64)[::2], every[:100]):
        want = src.astype(np.float32)
        got = widen(src)
        assert got.strides == want.strides and got.shape == want.shape
        np.testing.assert_array_equal(_bits32(got), _bits32(want))
