"""examples/embedding_gather.ktir at the sizes it allows (B a multiple of 128, H a multiple of
1,024, any V), against numpy's E[ids]: a gather copies f16 values, so equality is exact. The
output starts as NaN, so a block left unwritten fails too."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import FAST, example, fails

KERNEL = example("embedding_gather.ktir")


def _inputs(V: int, B: int, H: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((V, H), dtype=np.float32).astype(np.float16)
    ids = rng.integers(0, V, B).astype(np.int32)
    return {"e_ptr": table, "ids_ptr": ids, "y_ptr": np.full((B, H), np.nan, np.float16), "V": V, "B": B, "H": H}


def _check(args: dict[str, Any]) -> None:
    got = ri.run(KERNEL, args=args).outputs["y_ptr"]
    np.testing.assert_array_equal(got, args["e_ptr"][args["ids_ptr"]])


@settings(FAST, max_examples=5)
@given(V=st.integers(1, 500), blocks=st.integers(1, 6), H=st.sampled_from([1024, 2048, 3072]), seed=st.integers(0, 2**32 - 1))
def test_sizes_the_kernel_allows(V: int, blocks: int, H: int, seed: int) -> None:
    _check(_inputs(V, 128 * blocks, H, seed))


def test_more_blocks_than_tiles() -> None:
    """33 blocks of 128 rows: tile 0 gathers the first and, a round later, the last."""
    _check(_inputs(1000, 128 * 33, 1024, 3))


def test_the_check_can_fail() -> None:
    """A table row off by one, or a block's rows shifted by one, is seen."""
    args = _inputs(300, 256, 1024, 1)
    got = ri.run(KERNEL, args=args).outputs["y_ptr"]
    table, ids = args["e_ptr"], args["ids_ptr"]
    assert not np.array_equal(got, table[(ids + 1) % 300])
    assert not np.array_equal(got, table[np.roll(ids, 1)])


@pytest.mark.parametrize(("B", "H", "coordinate"), [
    (200, 1024, (200,)),  # B not a multiple of 128: tile 1's block reads ids past the end
    (256, 1000, (None, 1000)),  # H not a multiple of 1024: the block's columns leave the table
])
def test_sizes_the_kernel_does_not_allow_are_errors(B: int, H: int, coordinate: tuple[int | None, ...]) -> None:
    e = fails("out-of-view", KERNEL, args=_inputs(300, B, H, 2))
    assert e.coordinate is not None and len(e.coordinate) == len(coordinate)
    assert all(want is None or got == want for got, want in zip(e.coordinate, coordinate, strict=True))


def test_an_id_outside_the_table_is_an_error() -> None:
    args = _inputs(300, 256, 1024, 4)
    args["ids_ptr"][130] = -1
    e = fails("out-of-view", KERNEL, args=args)
    assert e.tile == 1 and e.coordinate == (-1, 0)
