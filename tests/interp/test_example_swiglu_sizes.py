"""examples/swiglu.ktir at the sizes it allows (M, N multiples of 256, K of 512), against numpy.

The oracle is float64: g = X Wg and u = X Wu (products of f16 values are exact in float64;
the float64 sums of K terms are within K 2^-53 |X| @ |W|), h = silu(g) u. The kernel sums
the K products in f32 in some order, so its g is within
    eg = gamma |X| @ |Wg|,  gamma = K (u32 + 2^-53) / (1 - K u32),  u32 = 2^-24
of the float64 g (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1: any
summation order; plus the float64 sums' own error), and likewise u. With |silu'| <= 1.1
everywhere, the gate computed exactly from the kernel's g and u is within
    pre = 1.1 |u| eg + |silu(g)| eu + 1.1 eg eu
of h. Its five f32 ops (negf exact; exp within 4 ulps; addf of two positive values, divf
and mulf correctly rounded) add a relative error below 8 ulps, bounded here by 2^-19 |h|.
Rounding to f16 adds half an ulp of the rounded value, at most 2^-11 (|h| + that error),
or half the smallest subnormal, 2^-25. The sum is the tolerance per element; the test fails
when a block is missing, misplaced or summed twice (errors of the size of h itself, as
test_the_oracle_catches_a_missing_k_block checks).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import FAST, assert_within, example, fails

SWIGLU = example("swiglu.ktir")
U32 = 2.0**-24


def args_for(X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, M: int, N: int, K: int) -> dict[str, object]:
    return {"x_ptr": X, "wg_ptr": Wg, "wu_ptr": Wu, "h_ptr": np.zeros((M, N), np.float16), "M": M, "N": N, "K": K}


def run(X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray, M: int, N: int, K: int) -> np.ndarray:
    return ri.run(SWIGLU, args=args_for(X, Wg, Wu, M, N, K)).outputs["h_ptr"]


def oracle(X: np.ndarray, Wg: np.ndarray, Wu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """h in float64 and the tolerance per element (the module docstring's bound)."""
    x, wg, wu = (a.astype(np.float64) for a in (X, Wg, Wu))
    K = x.shape[1]
    g, u = x @ wg, x @ wu
    gamma = K * (U32 + 2.0**-53) / (1 - K * U32)
    eg, eu = gamma * (np.abs(x) @ np.abs(wg)), gamma * (np.abs(x) @ np.abs(wu))
    silu = g / (1 + np.exp(-g))
    h = silu * u
    before = 1.1 * np.abs(u) * eg + np.abs(silu) * eu + 1.1 * eg * eu + 2.0**-19 * np.abs(h)
    tol = before + 2.0**-11 * (np.abs(h) + before) + 2.0**-25
    return h, tol


def inputs(M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # scaled so that g and u are of order 1 (the gate's interesting range) whatever K is
    X = (rng.standard_normal((M, K)) * 0.25).astype(np.float16)
    Wg = (rng.standard_normal((K, N)) * 4 / np.sqrt(K)).astype(np.float16)
    Wu = (rng.standard_normal((K, N)) * 4 / np.sqrt(K)).astype(np.float16)
    return X, Wg, Wu


# blocks of 256 x 256 and K steps of 512: up to 5 row blocks (tiles (0, j) take two when M > 1024) and 9 column
# blocks (tile (i, 0) takes two when N > 2048)
@settings(FAST, max_examples=5)
@given(
    mb=st.sampled_from([1, 2, 5]), nb=st.sampled_from([1, 3, 9]), kb=st.integers(1, 2), seed=st.integers(0, 2**32 - 1)
)
def test_swiglu_matches_numpy_at_every_allowed_size(mb: int, nb: int, kb: int, seed: int) -> None:
    M, N, K = 256 * mb, 256 * nb, 512 * kb
    X, Wg, Wu = inputs(M, N, K, seed)
    want, tol = oracle(X, Wg, Wu)
    assert_within(run(X, Wg, Wu, M, N, K), want, tol, f"M={M} N={N} K={K}")


def test_the_oracle_catches_a_missing_k_block() -> None:
    """The tolerance is tight enough to notice the kernel skipping the last K block."""
    X, Wg, Wu = inputs(256, 256, 1024, 0)
    want, tol = oracle(X, Wg, Wu)
    wrong, _ = oracle(X[:, :512], Wg[:512], Wu[:512])
    assert (np.abs(wrong.astype(np.float16).astype(np.float64) - want) > tol).mean() > 0.9


@pytest.mark.parametrize(("M", "N", "K"), [(300, 256, 512), (256, 320, 512), (256, 256, 768)])
def test_a_size_that_is_not_a_multiple_of_the_block_is_an_error(M: int, N: int, K: int) -> None:
    X, Wg, Wu = inputs(M, N, K, 1)
    assert "outside the view's sizes" in fails("out-of-view", SWIGLU, args=args_for(X, Wg, Wu, M, N, K)).message


def test_sizes_larger_than_the_arrays_are_an_error() -> None:
    X, Wg, Wu = inputs(256, 256, 512, 2)
    assert "x_ptr" in fails("out-of-bounds", SWIGLU, args=args_for(X, Wg, Wu, 512, 256, 512)).message
