"""examples/vector_add.ktir at the sizes it takes (N a multiple of its 65,536-element block)
against numpy, and the sizes it does not take refused with an error, not a wrong answer.

The inputs are random f16 bit patterns (subnormals, infinities and NaNs included): an f16
addition is correctly rounded, so the kernel's C must equal numpy's A + B bit for bit (NaNs
only as NaNs: their payload is not specified)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import example, fails

BLOCK = 65536
TILES = 4
KERNEL = example("vector_add.ktir")


def f16_bits(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**16, n, dtype=np.uint16).view(np.float16)


def same_f16(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


def args_for(a: np.ndarray, b: np.ndarray, n: int) -> dict[str, object]:
    return {"A": a, "B": b, "C": np.zeros(len(a), np.float16), "N": n}


def run(a: np.ndarray, b: np.ndarray, n: int, **kw: object) -> ri.RunResult:
    return ri.run(KERNEL, args=args_for(a, b, n), **kw)


@settings(max_examples=4, deadline=None)
@given(blocks=st.integers(1, 9), seed=st.integers(0, 2**32 - 1), lockstep=st.booleans())
def test_c_is_a_plus_b_at_every_size_it_takes(blocks: int, seed: int, lockstep: bool) -> None:
    n = blocks * BLOCK
    rng = np.random.default_rng(seed)
    a, b = f16_bits(rng, n), f16_bits(rng, n)
    with np.errstate(over="ignore", invalid="ignore"):
        want = a + b
    r = run(a, b, n, lockstep=lockstep)
    same_f16(r.outputs["C"], want)
    # tile t adds blocks t, t + 4, ...: the blocks are dealt out, none twice
    per_tile = [len(range(t, blocks, TILES)) * BLOCK * 2 for t in range(TILES)]
    assert [s.bytes_written.get("global", 0) for s in r.stats] == per_tile


@pytest.mark.parametrize("n, length, kind", [
    (BLOCK + 1000, BLOCK + 1000, "out-of-view"),  # not a multiple of the block: the last block leaves the view
    (1000, 1000, "out-of-view"),  # less than one block
    (2 * BLOCK, BLOCK, "out-of-bounds"),  # N larger than the arrays given
])
def test_a_size_it_does_not_take_is_an_error(n: int, length: int, kind: str) -> None:
    z = np.zeros(length, np.float16)
    fails(kind, KERNEL, args=args_for(z, z.copy(), n))
