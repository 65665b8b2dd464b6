"""examples/distributed_copy.ktir at the sizes it takes (M a multiple of 256, N of 1,024: its
256 x 1024 panels) against numpy's X.T, and the sizes it does not take refused with an error,
not a wrong answer.

The input is random f32 bit patterns (NaNs with payloads included): a transpose moves bits, so
Y must equal X.T bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri

from .helpers import example, fails

KERNEL = example("distributed_copy.ktir")


def args_for(x: np.ndarray, m: int, n: int) -> dict[str, object]:
    return {"x_ptr": x, "y_ptr": np.zeros(x.shape[::-1], np.float32), "scratch": 0, "M": m, "N": n}


def run(x: np.ndarray, m: int, n: int, **kw: object) -> ri.RunResult:
    return ri.run(KERNEL, args=args_for(x, m, n), target="spyre", **kw)


@settings(max_examples=4, deadline=None)
@given(panel_rows=st.integers(1, 3), panel_cols=st.integers(1, 2), seed=st.integers(0, 2**32 - 1),
       lockstep=st.booleans())
def test_y_is_x_transposed_at_every_size_it_takes(panel_rows: int, panel_cols: int, seed: int, lockstep: bool) -> None:
    m, n = 256 * panel_rows, 1024 * panel_cols
    x = np.random.default_rng(seed).integers(0, 2**32, (m, n), dtype=np.uint32).view(np.float32)
    r = run(x, m, n, lockstep=lockstep)
    np.testing.assert_array_equal(r.outputs["y_ptr"].view(np.uint32), x.T.view(np.uint32))
    panels = panel_rows * panel_cols
    for s in r.stats:
        assert s.scratchpad_peak == 64 * 1024 * 4  # one 64 x 1024 f32 band per tile, reused for every panel
        assert s.bytes_read["ct_local"] == panels * 256 * 256 * 4  # a 256 x 256 column block per panel


@pytest.mark.parametrize("m, n, kind", [
    (300, 1024, "out-of-view"),  # M not a multiple of 256: a band leaves the view
    (256, 1000, "out-of-view"),  # N not a multiple of 1,024
    (128, 1024, "out-of-view"),  # less than one panel
])
def test_a_size_it_does_not_take_is_an_error(m: int, n: int, kind: str) -> None:
    fails(kind, KERNEL, args=args_for(np.zeros((m, n), np.float32), m, n), target="spyre")


def test_arrays_smaller_than_the_sizes_are_an_error() -> None:
    fails("out-of-bounds", KERNEL, args=args_for(np.zeros((256, 1024), np.float32), 512, 1024), target="spyre")
