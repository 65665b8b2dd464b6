"""examples/ring_allreduce.ktir at several vector lengths L against numpy oracles.

@ring_allreduce_steps fixes the order of every addition (the ring's), so its oracle adds in
that order and the outputs must be equal bit for bit. @ring_allreduce's inter_tile_reduce
leaves the order of its combiner to the executor (spec/conformance.md#reduction), so its
oracle is the exact sum and the test accepts the spec's bound for a sum of 8 f32 terms in any
order. Each function runs per tile and in lockstep (the two must agree with the oracle alike).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri
from conformance.oracle import kernels

from .helpers import example, fails

TILES = 8
BLOCK = 65536  # @ring_allreduce: elements per tile and block
CHUNK = 65536  # @ring_allreduce_steps: elements per ring message; a block is TILES chunks
MODULE = example("ring_allreduce.ktir")
MODES = (False, "always")  # per tile, lockstep
SOME = settings(max_examples=3, deadline=None)


def inputs(L: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # magnitudes over a few binades, both signs: roundings in most additions
    return (rng.standard_normal((TILES, L)) * 2.0 ** rng.integers(-4, 5, (TILES, L))).astype(np.float32)


def args_for(X: np.ndarray) -> dict[str, object]:
    return {"x_ptr": X, "out_ptr": np.zeros_like(X), "L": X.shape[1]}


def run(func: str, X: np.ndarray, lockstep: bool | str) -> ri.RunResult:
    return ri.run(MODULE, func, args=args_for(X), lockstep=lockstep)


def ring_order_sum(X: np.ndarray) -> np.ndarray:
    """The ring's sum (the conformance model's: chunk k of each block starts on tile k and
    travels right, each tile adding its own piece, f32 additions in that order), on every row."""
    return np.broadcast_to(kernels.ring_order_sum(X, CHUNK), X.shape)


def reduction_bound(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact column sums (float64 holds a sum of 8 f32 of these magnitudes exactly) and the
    spec's bound for f32 summation of 8 terms in any order, gamma(7) * sum |x|."""
    u = 2.0**-24
    exact = X.astype(np.float64).sum(0)
    return exact, 7 * u / (1 - 7 * u) * np.abs(X.astype(np.float64)).sum(0)


@pytest.mark.parametrize("lockstep", MODES)
@SOME
@given(blocks=st.integers(1, 2), seed=st.integers(0, 2**32 - 1))
def test_steps_equal_the_ring_order_sum(blocks: int, seed: int, lockstep: bool | str) -> None:
    X = inputs(blocks * TILES * CHUNK, seed)
    r = run("ring_allreduce_steps", X, lockstep)
    np.testing.assert_array_equal(r.outputs["out_ptr"], ring_order_sum(X))
    # 7 + 7 messages of one chunk per block and tile
    assert [s.bytes_sent for s in r.stats] == [14 * CHUNK * 4 * blocks] * TILES


@pytest.mark.parametrize("lockstep", MODES)
@SOME
@given(blocks=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_collective_within_the_reduction_bound(blocks: int, seed: int, lockstep: bool | str) -> None:
    X = inputs(blocks * BLOCK, seed)
    out = run("ring_allreduce", X, lockstep).outputs["out_ptr"]
    exact, bound = reduction_bound(X)
    err = np.abs(out.astype(np.float64) - exact)
    assert (err <= bound).all(), float((err - bound).max())
    assert (out == out[0]).all()  # every tile holds the same sum


@pytest.mark.parametrize(("func", "L"), [("ring_allreduce", 2 * BLOCK), ("ring_allreduce_steps", TILES * CHUNK)])
def test_lockstep_equals_the_per_tile_run(func: str, L: int) -> None:
    """Lockstep folds an all-reduce's partials once for all tiles (every consumer takes the
    same producers): the same additions in the same order as each tile's own fold."""
    X = inputs(L, 9)
    np.testing.assert_array_equal(run(func, X, "always").outputs["out_ptr"], run(func, X, False).outputs["out_ptr"])


def test_the_ring_order_matters() -> None:
    """The exact comparison above can fail: another order (numpy's row by row sum) differs."""
    X = inputs(TILES * CHUNK, 5)
    assert (ring_order_sum(X) != np.broadcast_to(X.sum(0), X.shape)).any()


@pytest.mark.parametrize(("func", "L"), [("ring_allreduce", BLOCK + 8), ("ring_allreduce", BLOCK // 2),
                                         ("ring_allreduce_steps", TILES * CHUNK + CHUNK),
                                         ("ring_allreduce_steps", TILES * CHUNK // 2)])
def test_a_length_the_blocks_do_not_divide_is_an_error(func: str, L: int) -> None:
    """The last block would reach past the vectors: the run stops with a runtime error."""
    fails("out-of-view", MODULE, func=func, args=args_for(np.ones((TILES, L), np.float32)), lockstep=True)
