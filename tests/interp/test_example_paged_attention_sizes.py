"""examples/paged_attention.ktir at the sizes it allows (any pool size NP and number of
sequences S, a block table W pages wide with W a multiple of 16, lengths in [1, 16 W]),
against softmax(q K^T / sqrt(128)) V over each sequence's tokens, computed in float64 from
the same f16 inputs and the kernel's f32 scale.

Tolerance, per sequence b with values V_b (its gathered tokens). Each score is a sum of 128
products of f16 values (each exact in f32) accumulated in f32: off by at most
g = 128 * 2^-24 * sum_d |q_d k_d| before the (exact) scaling, so every exponent is off by at
most e = scale * g (plus a few f32 roundings, 2^-20 covers them and the exp). A weight p_t / l
then moves by a relative factor within exp(+-2 e') with e' = e + 2^-20, so the convex
combination O moves by at most 2 (exp(2 e') - 1) max|V_b|. The f32 sums of p V over up to
16 W tokens, rescaled once per chunk, add at most 16 W * 2^-23 max|V_b|; storing O as f16
adds half an ulp, 2^-11 |O| <= 2^-11 max|V_b|. The output starts as NaN, so a sequence left
unwritten fails too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import FAST, example, fails

KERNEL = example("paged_attention.ktir")
SCALE = float(np.float32(0.0883883461))  # the kernel's 1 / sqrt(128), an f32 constant


def _inputs(S: int, W: int, NP: int, lens: list[int], seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((S, 128), dtype=np.float32).astype(np.float16)
    kc, vc = (rng.standard_normal((NP, 16, 128), dtype=np.float32).astype(np.float16) for _ in range(2))
    bt = rng.integers(0, NP, (S, W)).astype(np.int32)  # pages may be shared: they are only read
    return {"q_ptr": q, "kc_ptr": kc, "vc_ptr": vc, "bt_ptr": bt, "lens_ptr": np.asarray(lens, np.int32),
            "o_ptr": np.full((S, 128), np.nan, np.float16), "NP": NP, "S": S, "W": W}


def _tokens(args: dict[str, Any], b: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequence b's first n keys and values (float64), page by page through its block table."""
    t = np.arange(n)
    pages = args["bt_ptr"][b, t // 16]
    return (args["kc_ptr"][pages, t % 16].astype(np.float64), args["vc_ptr"][pages, t % 16].astype(np.float64))


def _attention(args: dict[str, Any], lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's output in float64 and its bound (see the module docstring)."""
    S = args["S"]
    out, bound = np.empty((S, 128)), np.empty((S, 1))
    for b in range(S):
        k, v = _tokens(args, b, int(lens[b]))
        q = args["q_ptr"][b].astype(np.float64)
        s = k @ q * SCALE
        p = np.exp(s - s.max())
        out[b] = p @ v / p.sum()
        e = SCALE * 128 * 2.0**-24 * np.abs(k * q).sum(1).max() + 2.0**-20
        bound[b] = (2 * np.expm1(2 * e) + 16 * args["W"] * 2.0**-23 + 2.0**-11) * np.abs(v).max()
    return out, bound


def _check(args: dict[str, Any]) -> None:
    got = ri.run(KERNEL, args=args).outputs["o_ptr"].astype(np.float64)
    want, bound = _attention(args, args["lens_ptr"])
    assert np.isfinite(got).all()  # every sequence was stored
    assert (np.abs(got - want) <= bound).all(), np.abs(got - want).max()


@st.composite
def sizes(draw: st.DrawFn) -> dict[str, Any]:
    S = draw(st.integers(1, 40))
    W = 16 * draw(st.integers(1, 3))
    NP = draw(st.integers(1, 100))
    lens = draw(st.lists(st.integers(1, 16 * W), min_size=S, max_size=S))
    return _inputs(S, W, NP, lens, draw(st.integers(0, 2**32 - 1)))


@settings(FAST, max_examples=5)
@given(sizes())
def test_sizes_the_kernel_allows(args: dict[str, Any]) -> None:
    _check(args)


def test_chunk_edges_and_more_sequences_than_tiles() -> None:
    """Lengths at and around the 16-token page and 256-token chunk edges; 34 sequences, so
    tiles 0 and 1 take a second one."""
    lens = [1, 15, 16, 17, 255, 256, 257, 511, 512, 768] * 3 + [100, 200, 300, 400]
    _check(_inputs(34, 48, 200, lens, 6))


def test_the_bound_can_fail() -> None:
    """The bound is tight enough to see a page off by one in every sequence, and one token too
    many or too few in sequences of up to a hundred tokens (in longer ones a token's weight can
    be below the bound)."""
    lens = np.array([17, 100, 256, 300])
    args = _inputs(4, 32, 64, list(lens), 7)
    got = ri.run(KERNEL, args=args).outputs["o_ptr"].astype(np.float64)
    _, bound = _attention(args, lens)
    for wrong in (lens + 1, lens - 1):
        off, _ = _attention(args, wrong)
        assert (np.abs(got - off) > bound).any(axis=1)[:2].all()
    shifted = {**args, "bt_ptr": (args["bt_ptr"] + 1) % 64}
    off, _ = _attention(shifted, lens)
    assert (np.abs(got - off) > bound).any(axis=1).all()


@pytest.mark.parametrize(("W", "lens", "coordinate"), [
    (8, [1, 1], (0, 8)),  # W not a multiple of 16: the first chunk reads columns 8..15 of BT
    (24, [1, 257], (1, 24)),  # W = 24: a sequence past 256 tokens reads columns 24..31
    (16, [1, 257], (1, 16)),  # a length past 16 W reads past the block table
])
def test_sizes_the_kernel_does_not_allow_are_errors(W: int, lens: list[int], coordinate: tuple[int, int]) -> None:
    e = fails("out-of-view", KERNEL, args=_inputs(2, W, 64, lens, 8))
    assert e.coordinate == coordinate


def test_a_page_outside_the_pool_is_an_error() -> None:
    args = _inputs(2, 16, 64, [40, 256], 9)
    args["bt_ptr"][1, 15] = 64
    e = fails("out-of-view", KERNEL, args=args)
    assert e.tile == 1 and e.coordinate == (64, 0, 0)
