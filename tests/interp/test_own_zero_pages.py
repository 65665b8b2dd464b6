"""An argument array's first write copies it (Allocation.own); a large array given as zeros is
owned as fresh zero pages instead. Either way the owned bytes are exactly the caller's, and the
caller's array is not changed: checked here on arrays whose only nonzero byte sits anywhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_interp import memory
from reference_interp.memory import GlobalMemory


def _own(array: np.ndarray) -> np.ndarray:
    alloc = GlobalMemory().place("Y", array)
    assert alloc.shared
    alloc.own()
    assert not alloc.shared and alloc.raw.flags.writeable
    assert not alloc.raw[alloc.nbytes :].any()  # the padding past the array is zero too
    return alloc.raw[: alloc.nbytes]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2), st.integers(0, (1 << 20) + 37), st.integers(1, 255), st.sampled_from([0, 1, 3]))
def test_owned_bytes_are_the_callers(kind: int, where: int, value: int, extra: int) -> None:
    n = memory._ZERO_SCAN + extra  # at the scan threshold: a length that is not a multiple of 8 too
    array = np.zeros(n, np.uint8)
    if kind:  # one nonzero byte (kind 2: also in the 4 KB head the scan looks at first)
        array[where % n] = value
        if kind == 2:
            array[where % 4096] = value
    before = array.copy()
    owned = _own(array)
    np.testing.assert_array_equal(owned, before)
    np.testing.assert_array_equal(array, before)
    owned[:] = 7  # the owned buffer is the run's own: the caller's array stays as it was
    np.testing.assert_array_equal(array, before)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int64])
def test_a_zero_output_is_owned_without_a_copy_and_reads_back_zero(dtype: type) -> None:
    array = np.zeros((1024, 1024), dtype)
    owned = _own(array)
    assert not owned.any()
    assert not memory._all_zero(np.ones(memory._ZERO_SCAN, np.uint8))
    assert memory._all_zero(np.zeros(memory._ZERO_SCAN, np.uint8))
    assert not memory._all_zero(np.zeros(memory._ZERO_SCAN - 1, np.uint8))  # small arrays: just copied
    tail = np.zeros(memory._ZERO_SCAN + 5, np.uint8)
    tail[-1] = 1  # past the last whole 8-byte word
    assert not memory._all_zero(tail)
