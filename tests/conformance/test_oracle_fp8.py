"""The fp8_dequant_matmul model's fast path (conformance/oracle/kernels.py): exact scaled
weights and limb products give an interval that holds every f32 summation order, agrees with
exact rational sums, and is no wider than the general bound it replaces."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np

from conformance.oracle import approx
from conformance.oracle import kernels as models


def _inputs(seed: int, M: int = 8, N: int = 16, K: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(np.float16)
    w = (rng.standard_normal((K, N)) * 4).astype(ml_dtypes.float8_e4m3fn)  # subnormal weights too
    s = rng.uniform(0, 0.0625, N).astype(np.float32)
    s[0], s[1] = 0.0, 1e-30  # a zero column and a tiny scale
    return x, w, s


def _scaled(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    return (w.astype(np.float32) * s[None, :]).astype(np.float32)  # arith.mulf in f32


def test_the_scaled_weights_are_the_f32_products() -> None:
    x, w, s = _inputs(1)
    via_f64 = (w.astype(np.float64) * s.astype(np.float64)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(via_f64.view(np.uint32), _scaled(w, s).view(np.uint32))


def test_the_fast_path_is_exact_and_its_interval_holds_f32_sums_in_any_order() -> None:
    x, w, s = _inputs(2)
    wd = _scaled(w, s)
    y = models._scaled_columns_matmul(x.astype(np.float64), wd.astype(np.float64))
    for i, j in ((0, 0), (1, 1), (3, 7), (7, 15)):
        exact = sum(Fraction(float(x[i, k])) * Fraction(float(wd[k, j])) for k in range(x.shape[1]))
        assert Fraction(y.v[i, j]) == exact
    x32 = x.astype(np.float32)
    for order in (range(x.shape[1]), reversed(range(x.shape[1]))):
        acc = np.zeros((x.shape[0], wd.shape[1]), np.float32)
        for k in order:
            acc = acc + x32[:, k : k + 1] * wd[k][None, :]
        assert (np.abs(acc.astype(np.float64) - y.v) <= y.e).all()
    assert (np.abs((x32 @ wd).astype(np.float64) - y.v) <= y.e).all()


def test_the_fast_path_is_no_wider_than_the_general_bound() -> None:
    x, w, s = _inputs(3)
    xs, ws, ss = x.astype(np.float64), w.astype(np.float64), s.astype(np.float64)[None, :]
    fast = models._scaled_columns_matmul(xs, _scaled(w, s).astype(np.float64))
    general = approx.matmul(approx.exact(xs), approx.mul(approx.exact(ws), approx.exact(ss), "f32"), "f32")
    assert (np.abs(fast.v - general.v) <= general.e).all()
    assert (fast.e <= general.e).all()


def test_non_finite_weights_take_the_general_bound() -> None:
    x, w, s = _inputs(4)
    w[3, 2] = np.nan  # E4M3FN has a NaN (and no infinities)
    got = models.fp8_dequant_matmul({"x_ptr": x, "w_ptr": w, "s_ptr": s})["y_ptr"]
    xs, ws, ss = x.astype(np.float64), w.astype(np.float64), s.astype(np.float64)[None, :]
    general = approx.matmul(approx.exact(xs), approx.mul(approx.exact(ws), approx.exact(ss), "f32"), "f32")
    want = models._derived(general, np.float16)
    assert got.lo is not None and got.hi is not None and want.lo is not None and want.hi is not None
    np.testing.assert_array_equal(got.lo, want.lo)
    np.testing.assert_array_equal(got.hi, want.hi)
