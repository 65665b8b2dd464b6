"""examples/fp8_dequant_matmul.ktir at the sizes it allows (M a multiple of 512, N and K of
256), against numpy.

The oracle: the scaled weights wd = W * s rounded to f32, which the kernel's arith.mulf
computes exactly so (the product of an f8 value, 4 significant bits, and an f32 scale, 24
bits, is exact in float64, and numpy rounds it to f32 once, correctly); then y = X @ wd in
float64 (products of f16 and f32 values are exact in float64; the sums of K terms are within
K 2^-53 |X| @ |wd|). The kernel sums the K products in f32 in some order, so its value
before the final rounding is within
    e = gamma |X| @ |wd|,  gamma = K (u32 + 2^-53) / (1 - K u32),  u32 = 2^-24
of the float64 y (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1: any
summation order; plus the float64 sums' own error). Rounding to f16 adds half an ulp of the
rounded value, at most 2^-11 (|y| + e), or half the smallest subnormal, 2^-25. The sum is
the tolerance per element: the test fails when a block is missing or misplaced or the
scales are applied along the wrong axis (errors of the size of y itself).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import FAST, assert_within, example, fails

FP8 = example("fp8_dequant_matmul.ktir")
U32 = 2.0**-24


def args_for(X: np.ndarray, W: np.ndarray, S: np.ndarray, M: int, N: int, K: int) -> dict[str, object]:
    return {"x_ptr": X, "w_ptr": W, "s_ptr": S, "y_ptr": np.zeros((M, N), np.float16), "M": M, "N": N, "K": K}


def run(X: np.ndarray, W: np.ndarray, S: np.ndarray, M: int, N: int, K: int) -> np.ndarray:
    return ri.run(FP8, args=args_for(X, W, S, M, N, K)).outputs["y_ptr"]


def oracle(X: np.ndarray, W: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y in float64 and the tolerance per element (the module docstring's bound)."""
    x = X.astype(np.float64)
    wd = (W.astype(np.float64) * S.astype(np.float64)).astype(np.float32).astype(np.float64)
    K = x.shape[1]
    y = x @ wd
    e = K * (U32 + 2.0**-53) / (1 - K * U32) * (np.abs(x) @ np.abs(wd))
    return y, e + 2.0**-11 * (np.abs(y) + e) + 2.0**-25


def inputs(M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((M, K)).astype(np.float16)
    # weights over most of E4M3's range (subnormals below 2^-6 included), scales of any size
    W = (rng.standard_normal((K, N)) * 4).astype(ml_dtypes.float8_e4m3fn)
    S = (rng.random(N) / 16 / np.sqrt(K)).astype(np.float32)
    return X, W, S


# up to 5 row blocks of 512 (tiles (0, j) take two when M > 2048) and 9 column blocks of 256
# (tiles (i, 0) take two when N > 2048)
@settings(FAST, max_examples=5)
@given(
    mb=st.sampled_from([1, 2, 5]), nb=st.sampled_from([1, 3, 9]), kb=st.integers(1, 3), seed=st.integers(0, 2**32 - 1)
)
def test_fp8_matmul_matches_numpy_at_every_allowed_size(mb: int, nb: int, kb: int, seed: int) -> None:
    M, N, K = 512 * mb, 256 * nb, 256 * kb
    X, W, S = inputs(M, N, K, seed)
    want, tol = oracle(X, W, S)
    assert_within(run(X, W, S, M, N, K), want, tol, f"M={M} N={N} K={K}")


def test_the_oracle_catches_scales_on_the_wrong_axis() -> None:
    """The tolerance is tight enough to notice the scales broadcast along the rows of W."""
    X, W, S = inputs(512, 256, 256, 0)
    want, tol = oracle(X, W, S)
    wrong = X.astype(np.float64) @ (W.astype(np.float64) * S.astype(np.float64)[:, None])
    assert (np.abs(wrong.astype(np.float16).astype(np.float64) - want) > tol).mean() > 0.9


@pytest.mark.parametrize(("M", "N", "K"), [(256, 256, 256), (512, 320, 256), (512, 256, 384)])
def test_a_size_that_is_not_a_multiple_of_the_block_is_an_error(M: int, N: int, K: int) -> None:
    X, W, S = inputs(M, N, K, 1)
    assert "outside the view's sizes" in fails("out-of-view", FP8, args=args_for(X, W, S, M, N, K)).message


def test_sizes_larger_than_the_arrays_are_an_error() -> None:
    X, W, S = inputs(512, 256, 256, 2)
    fails("out-of-bounds", FP8, args=args_for(X, W, S, 512, 512, 256))
