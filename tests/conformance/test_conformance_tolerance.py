"""Tolerance classes: each accepts what its bound allows and rejects what it does not."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conformance.tolerance import check_class, compare, ulp


def nudge(a: np.ndarray, steps: int) -> np.ndarray:
    """`a` moved by `steps` ulps (by bit arithmetic on positive finite values)."""
    bits = a.view(np.uint16) if a.dtype.itemsize == 2 else a.view(np.uint32)
    return (bits + steps).view(a.dtype)


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_exact_rejects_one_ulp(dt: object) -> None:
    want = np.linspace(0.5, 4.0, 16).astype(dt)
    assert compare(want.copy(), want, "exact").ok
    v = compare(nudge(want, 1), want, "correctly-rounded")
    assert not v.ok and v.mismatches == 16


@pytest.mark.parametrize("n", [1, 2])
def test_ulp_class_allows_twice_its_bound_between_two_conforming_results(n: int) -> None:
    want = np.linspace(0.5, 4.0, 16).astype(np.float32)
    assert compare(nudge(want, 2 * n), want, f"{n} ulp").ok
    assert not compare(nudge(want, 2 * n + 1), want, f"{n} ulp").ok


def test_specials_must_match_including_the_sign_of_zero() -> None:
    want = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
    assert compare(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32), want, "exact").ok
    got = np.array([np.nan, np.inf, -np.inf, -0.0, -0.0, 1.0], np.float32)
    v = compare(got, want, "2 ulp")
    assert not v.ok and v.worst_index == (3,)
    assert not compare(np.array([1.0, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32), want, "2 ulp").ok


def test_reduction_bound_scales_with_the_length_and_the_magnitude() -> None:
    want = np.array([1.0], np.float32)
    magnitude = np.array([1000.0], np.float32)  # sum of |x_i|: heavy cancellation
    u = 2.0**-24
    off = np.array([1.0 + 2 * 99 * u * 1000 * 0.9], np.float32)
    assert compare(off, want, "reduction", n=100, magnitude=magnitude).ok
    assert not compare(off, want, "reduction", n=2, magnitude=magnitude).ok


def test_matmul_bound_uses_k_plus_one() -> None:
    want = np.array([[10.0]], np.float32)
    u = 2.0**-24
    got = np.array([[10.0 + 2 * 9 * u * 10.0]], np.float32)
    assert compare(got, want, "matmul", n=8).ok
    assert not compare(got, want, "matmul", n=1).ok


def test_integers_are_exact_whatever_the_class() -> None:
    want = np.arange(8, dtype=np.int32)
    got = want.copy()
    got[5] += 1
    v = compare(got, want, "2 ulp")
    assert not v.ok and v.worst_index == (5,) and v.got == 6 and v.want == 5


def test_shape_and_dtype_mismatches_fail() -> None:
    want = np.zeros(4, np.float32)
    assert "shape" in compare(np.zeros(5, np.float32), want, "exact").message
    assert "dtype" in compare(np.zeros(4, np.float16), want, "exact").message


def test_unknown_class_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown tolerance class"):
        check_class("close enough")


def test_ulp_of_powers_of_two() -> None:
    x = np.array([1.0, 2.0, 0.0])
    assert list(ulp(x, np.dtype(np.float16))) == [2.0**-10, 2.0**-9, 2.0**-24]
