"""examples/causal_attention.ktir at the sequence lengths it allows (S a multiple of 128),
against softmax(Q K^T / 8 + causal mask) V computed in float64 from the same f16 inputs.

Tolerance. The kernel rounds P to f16 for the P V product while its denominator l sums the
f32 P: each weight is off by at most 2^-11 relative, so a row's output moves by at most
2^-11 max|V| (a convex combination of V's rows). Storing O as f16 adds half an ulp,
2^-11 |O| <= 2^-11 max|V|. The f32 scores (64 products of f16 values, exact in f32, summed
with a relative error under 64 * 2^-24), exp and sums move a weight by far less than 1e-4
relative at these magnitudes. So |O - exact| <= (2^-10 + 1e-4) max|V| per element. A
dropped or misplaced key block, a wrong mask or a block left unwritten (O starts as NaN)
is off by far more.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import FAST, example, fails

KERNEL = example("causal_attention.ktir")
BLOCK = 128


def _inputs(S: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((S, 64)).astype(np.float16) for _ in range(3))
    return {"q_ptr": q, "k_ptr": k, "v_ptr": v, "o_ptr": np.full((S, 64), np.nan, np.float16), "S": S}


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(Q K^T / sqrt(64) + causal mask) V in float64, a block of 512 query rows at a time."""
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    out = np.empty(q64.shape)
    for r in range(0, len(q64), 512):
        s = q64[r:r + 512] @ k64.T / 8.0
        s[np.arange(r, r + len(s))[:, None] < np.arange(len(k64))[None, :]] = -np.inf
        p = np.exp(s - s.max(1, keepdims=True))
        out[r:r + 512] = p @ v64 / p.sum(1, keepdims=True)
    return out


def _check(args: dict[str, Any]) -> None:
    got = ri.run(KERNEL, args=args).outputs["o_ptr"].astype(np.float64)
    want = _attention(args["q_ptr"], args["k_ptr"], args["v_ptr"])
    bound = (2.0**-10 + 1e-4) * np.abs(args["v_ptr"].astype(np.float64)).max()
    assert np.isfinite(got).all()  # every row was stored
    np.testing.assert_array_less(np.abs(got - want), bound)


@settings(FAST, max_examples=5)
@given(blocks=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_lengths_up_to_six_blocks(blocks: int, seed: int) -> None:
    _check(_inputs(BLOCK * blocks, seed))


def test_more_blocks_than_tiles() -> None:
    """33 query blocks: tile 0 takes the last one and, a round later, the first; every key block
    is walked up to the query block's own."""
    _check(_inputs(BLOCK * 33, 5))


def test_the_bound_can_fail() -> None:
    """The bound is tight enough to see a mask one key too late or a key block read one row off."""
    args = _inputs(2 * BLOCK, 1)
    q, k, v = args["q_ptr"], args["k_ptr"], args["v_ptr"]
    got = ri.run(KERNEL, args=args).outputs["o_ptr"].astype(np.float64)
    bound = (2.0**-10 + 1e-4) * np.abs(v.astype(np.float64)).max()
    late = np.concatenate([_attention(q[i:i + 1], k[:i + 2], v[:i + 2]) for i in range(len(q) - 1)])
    assert np.abs(got[:-1] - late).max() > bound
    off = _attention(q, np.roll(k, 1, axis=0), np.roll(v, 1, axis=0))
    assert np.abs(got - off).max() > bound


@pytest.mark.parametrize("S", [64, 130, 200, 4100])
def test_a_length_not_a_multiple_of_128_is_an_error(S: int) -> None:
    """The last query block's key loop (or, below 128 rows, its query block) reaches past row S:
    every such S is an out-of-view error, never a partial answer."""
    fails("out-of-view", KERNEL, args=_inputs(S, 0))
