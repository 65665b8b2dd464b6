"""What an output must hold: the golden (the exact result rounded once) and, for the classes
that allow an error, the interval of accepted values per element.

The interval is kept as two float64 arrays `lo` and `hi` of values of the output's format (or
±inf), stored in the golden file in the output's type: a result `r` is accepted when
`lo <= r <= hi`, or when it is NaN and the golden is NaN. The interval is derived here from the exact value and the class:

- `N ulp`: every value of the result type within N ulp of the exact value x (ulp(x) as
  spec/conformance.md defines it).
- `reduction`, `matmul`: every value within the bound of the exact sum that the declared
  accumulation type and the number of terms give (`sum_bound`), scaled by the sum of the
  magnitudes of the terms of that element.
- `derived`: a whole kernel's bound, from its own structure (`conformance.oracle.kernels`).

An infinity is accepted in the N-ulp classes only when it is the golden (the exact value
rounds to it); for sums, also when a value within the bound rounds to it (an intermediate sum
may overflow). The golden itself is always inside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from conformance.oracle.formats import (
    Exact,
    Format,
    format_of,
    is_inf,
    is_nan,
    round_exact,
    round_float64,
    to_numpy,
    ulp,
)


@dataclass(frozen=True)
class Expected:
    """One output's golden and, unless it is compared bit for bit, its accepted interval."""

    golden: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    method: str = "exact"  # how the golden was computed: "exact" or a float64 model with its error bound

    @property
    def interval(self) -> bool:
        return self.lo is not None


def same(values: np.ndarray) -> Expected:
    """An output compared bit for bit: data movement, integers, and float results the model
    already rounded op by op (each op correctly rounded, so the composition is exact)."""
    return Expected(golden=np.asarray(values).copy())


def rounded(exact: np.ndarray, dtype: Any) -> Expected:
    """The exact values rounded once to `dtype`, compared bit for bit (`exact` and
    `correctly-rounded`)."""
    f = format_of(dtype)
    out = np.empty(np.shape(exact), dtype=object)
    for i, v in np.ndenumerate(np.asarray(exact, dtype=object)):
        out[i] = round_exact(v, f)
    return Expected(golden=to_numpy(out, f))


def _interval(x: Exact, bound: Fraction, f: Format, golden: Exact, overflow: bool) -> tuple[float, float]:
    """[lo, hi] of the values of `f` within `bound` of x, as floats, always holding the golden.
    With `overflow` (a computed sum may overflow on its way), an infinity is accepted when a
    value within the bound rounds to it; otherwise only when the golden is that infinity."""
    if is_nan(x):
        return math.nan, math.nan
    if is_inf(x):
        return float(x), float(x)
    q = Fraction(0) if isinstance(x, float) else x
    lo = round_exact(q - bound, f, "up") if q - bound != 0 else 0.0
    hi = round_exact(q + bound, f, "down") if q + bound != 0 else 0.0
    lo_f, hi_f = float(lo), float(hi)
    # an overflow: a value within the bound that rounds to an infinity
    if overflow and q + bound != 0 and is_inf(round_exact(q + bound, f)):
        hi_f = math.inf
    if overflow and q - bound != 0 and is_inf(round_exact(q - bound, f)):
        lo_f = -math.inf
    g = float(golden) if not is_nan(golden) else None
    if g is not None:
        lo_f, hi_f = min(lo_f, g), max(hi_f, g)
    return lo_f, hi_f


def _from_bounds(exact: np.ndarray, bounds: np.ndarray, dtype: Any, method: str, overflow: bool) -> Expected:
    f = format_of(dtype)
    ex = np.asarray(exact, dtype=object)
    gold = np.empty(ex.shape, dtype=object)
    lo = np.empty(ex.shape, dtype=np.float64)
    hi = np.empty(ex.shape, dtype=np.float64)
    for i, x in np.ndenumerate(ex):
        g = round_exact(x, f)
        gold[i] = g
        lo[i], hi[i] = _interval(x, bounds.item(i), f, g, overflow)
    return Expected(golden=to_numpy(gold, f), lo=lo, hi=hi, method=method)


def within_ulps(exact: np.ndarray, dtype: Any, n: int) -> Expected:
    """The `N ulp` class: every value within n ulp(x) of the exact x."""
    f = format_of(dtype)
    ex = np.asarray(exact, dtype=object)
    bounds = np.empty(ex.shape, dtype=object)
    for i, x in np.ndenumerate(ex):
        bounds[i] = n * ulp(x, f)
    return _from_bounds(ex, bounds, dtype, "exact", overflow=False)


def gamma(k: int, f: Format) -> Fraction:
    """Higham's gamma_k = k u / (1 - k u) for the unit roundoff u of `f`."""
    ku = k * f.unit_roundoff
    if ku >= 1:
        raise ValueError(f"{k} terms are too many for a bound in {f.name}")
    return ku / (1 - ku)


def sum_bound(magnitude: Fraction, terms: int, acc: Format, products: bool) -> Fraction:
    """A bound on |computed - exact| for a sum of `terms` values accumulated in `acc` in any
    order (tree, ring, linear, blocked; with or without fused multiply-add):

    - a sum of n values (`reduction`): gamma_(n-1) * sum |x_i|. Additions that underflow are
      exact (gradual underflow), so there is no absolute term.
    - a sum of products plus an initial value, n = K + 1 terms (`matmul`): each product rounded
      once (error u |a b| plus at most half the smallest subnormal when it underflows), then
      K additions: gamma_(K+1) * (|c0| + sum |a_k b_k|) + K * smallest subnormal.

    Accumulating in a wider type and rounding once at the end stays within the same bound
    (n >= 2), so does an exact accumulation.
    """
    if terms <= 1 and not products:
        return Fraction(0)
    if products:
        k = terms - 1
        return gamma(k + 1, acc) * magnitude + k * acc.tiny
    return gamma(terms - 1, acc) * magnitude


def summed(exact: np.ndarray, magnitude: np.ndarray, dtype: Any, terms: int | np.ndarray, *, products: bool,
           acc: Any = None) -> Expected:
    """A `reduction` (products=False) or `matmul` (products=True) output: the exact sums, the
    sums of the magnitudes of their terms, and the number of terms (one for all elements, or
    one per element)."""
    af = format_of(acc if acc is not None else dtype)
    ex = np.asarray(exact, dtype=object)
    mag = np.asarray(magnitude, dtype=object)
    count = np.broadcast_to(np.asarray(terms), ex.shape)
    bounds = np.empty(ex.shape, dtype=object)
    for i, m in np.ndenumerate(mag):
        bounds[i] = sum_bound(Fraction(m) if not isinstance(m, Fraction) else m, int(count[i]), af, products)
    return _from_bounds(ex, bounds, dtype, "exact", overflow=True)


def enclosed(center: np.ndarray, radius: np.ndarray, dtype: Any, method: str) -> Expected:
    """A `derived` output whose last op rounds correctly to `dtype`: the kernel's value before
    that rounding lies within `radius` of the float64 `center` (both computed by a float64
    model whose own error is inside `radius`), so the accepted results are the roundings of
    [center - radius, center + radius]. The golden is the rounding of the center."""
    f = format_of(dtype)
    c = np.asarray(center, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        lo_v = np.nextafter(c - r, -np.inf)  # the subtraction's own rounding, outward
        hi_v = np.nextafter(c + r, np.inf)
    lo = round_float64(lo_v, f)
    hi = round_float64(hi_v, f)
    gold = round_float64(c, f)
    nan = np.isnan(c)
    lo = np.where(nan, np.nan, lo)
    hi = np.where(nan, np.nan, hi)
    return Expected(golden=gold.astype(f.dtype), lo=lo, hi=hi, method=method)
