"""Tolerance classes: the oracle's accepted intervals hold what the class allows from the exact
value and nothing more, and the runner's comparison applies them."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from conformance.oracle.expect import rounded, summed, within_ulps
from conformance.oracle.formats import FORMATS, round_exact
from conformance.tolerance import check_class, compare, ulp


def nudge(a: np.ndarray, steps: int) -> np.ndarray:
    """`a` moved by `steps` values of its type (bit arithmetic on positive finite values)."""
    bits = a.view(np.uint16) if a.dtype.itemsize == 2 else a.view(np.uint32)
    return (bits.astype(np.int64) + steps).astype(bits.dtype).view(a.dtype)


def objects(values: list[Fraction | float]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_exact_rejects_one_ulp(dt: object) -> None:
    want = np.linspace(0.5, 4.0, 16).astype(dt)
    assert compare(want.copy(), want, "exact").ok
    v = compare(nudge(want, 1), want, "correctly-rounded")
    assert not v.ok and v.mismatches == 16


@pytest.mark.parametrize("n", [1, 2, 4])
def test_n_ulp_accepts_n_ulps_from_the_exact_value_not_2n_from_the_golden(n: int) -> None:
    # x sits a quarter ulp above a float b, the golden: b + k ulp is k - 1/4 ulp from x and
    # b - k ulp is k + 1/4 away, so exactly b - (n - 1) .. b + n are accepted
    base = np.linspace(0.55, 0.95, 16).astype(np.float32)  # one binade: the spacing is the same both ways
    step = np.array([float(ulp(np.array([b]), np.dtype(np.float32))[0]) for b in base])
    x = objects([Fraction(float(b)) + Fraction(float(s)) / 4 for b, s in zip(base, step, strict=True)])
    e = within_ulps(x, "f32", n)
    assert (e.golden == base).all()

    def ok(steps: int) -> bool:
        return compare(nudge(base, steps), e.golden, f"{n} ulp", e.lo, e.hi).ok

    assert ok(n) and ok(-(n - 1))
    assert not ok(n + 1) and not ok(-n)
    assert not compare(nudge(base, 2 * n), e.golden, f"{n} ulp", e.lo, e.hi).ok  # the old "2N from the golden"


def test_ulp_at_a_power_of_two_is_the_gap_below() -> None:
    # exp(0) = 1 exactly in f16: 1 - 2^-11 is one ulp away (the gap below 1), 1 + 2^-10 is two
    e = within_ulps(objects([Fraction(1)]), "f16", 1)
    assert (float(e.lo[0]), float(e.hi[0])) == (1 - 2**-11, 1.0)


def test_specials_must_match() -> None:
    x = objects([np.nan, np.inf, -np.inf, Fraction(1)])
    e = within_ulps(x, "f32", 2)
    good = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert compare(good, e.golden, "2 ulp", e.lo, e.hi).ok
    for bad in ([1.0, np.inf, -np.inf, 1.0], [np.nan, 3e38, -np.inf, 1.0], [np.nan, np.inf, -np.inf, np.nan]):
        assert not compare(np.array(bad, np.float32), e.golden, "2 ulp", e.lo, e.hi).ok


def test_exact_classes_compare_the_sign_of_zero() -> None:
    e = rounded(objects([-0.0, 0.0, np.nan]), "f16")
    assert compare(np.array([-0.0, 0.0, np.nan], np.float16), e.golden, "exact").ok
    assert not compare(np.array([0.0, 0.0, np.nan], np.float16), e.golden, "exact").ok


def test_reduction_bound_scales_with_the_terms_and_their_magnitudes() -> None:
    # a sum of exact value 1 over terms whose magnitudes add up to 1000 (heavy cancellation)
    u = 2.0**-24
    e100 = summed(objects([Fraction(1)]), objects([Fraction(1000)]), "f32", 100, products=False)
    e2 = summed(objects([Fraction(1)]), objects([Fraction(1000)]), "f32", 2, products=False)
    off = np.array([1.0 + 99 * u * 1000 * 0.9], np.float32)
    assert compare(off, e100.golden, "reduction", e100.lo, e100.hi).ok
    assert not compare(off, e2.golden, "reduction", e2.lo, e2.hi).ok


def test_a_zero_sum_has_a_bound_like_any_other() -> None:
    e = summed(objects([0.0]), objects([Fraction(4)]), "f32", 8, products=False)
    bound = 7 * 2.0**-24 * 4
    assert 0.9 * bound < float(e.hi[0]) <= bound * (1 + 1e-6) and float(e.lo[0]) == -float(e.hi[0])
    assert not compare(np.array([1.0], np.float32), e.golden, "reduction", e.lo, e.hi).ok


def test_matmul_bound_uses_k_plus_one() -> None:
    e8 = summed(objects([Fraction(10)]), objects([Fraction(10)]), "f32", 9, products=True)
    e1 = summed(objects([Fraction(10)]), objects([Fraction(10)]), "f32", 2, products=True)
    got = np.array([10.0 + 8.5 * 2.0**-24 * 10.0], np.float32)
    assert compare(got, e8.golden, "matmul", e8.lo, e8.hi).ok
    assert not compare(got, e1.golden, "matmul", e1.lo, e1.hi).ok


def test_integers_are_exact_whatever_the_class() -> None:
    want = np.arange(8, dtype=np.int32)
    got = want.copy()
    got[5] += 1
    v = compare(got, want, "2 ulp")
    assert not v.ok and v.worst_index == (5,) and v.got == 6 and v.want == 5


def test_an_interval_class_needs_its_interval() -> None:
    with pytest.raises(ValueError, match="accepted interval"):
        compare(np.zeros(2, np.float32), np.zeros(2, np.float32), "reduction")


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


def test_overflow_accepts_infinity_only_when_rounding_may_give_it() -> None:
    f16 = FORMATS["f16"]
    assert round_exact(Fraction(65519), f16) == 65504 and round_exact(Fraction(65520), f16) == float("inf")
    near = within_ulps(objects([Fraction(65500)]), "f16", 1)
    beyond = within_ulps(objects([Fraction(65530)]), "f16", 1)
    assert float(near.hi[0]) == 65504.0 and float(beyond.hi[0]) == float("inf")
