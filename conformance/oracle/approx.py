"""Float64 models of whole kernels with proven error bounds, computed the same way on every
machine.

An `Approx` is a float64 array `v` with a bound `e` per element: every conforming
implementation's value of that stage, and the stage's exact mathematical value, lie within `e`
of `v`. Each op below propagates the bound rigorously (no first-order approximation) from
the bounds of its operands, the class of the op the kernel applies (correctly rounded in type
T: unit roundoff u_T, plus half the smallest subnormal; an N-ulp function: N * 2 u_T relative
plus N smallest subnormals; an order-free sum of n terms: Higham's gamma_(n-1)), and the
float64 model's own rounding (u_64 = 2^-53 per op; fsum is correctly rounded; exact sums of
products where the inputs are exact).

Only float64 operations that IEEE 754 defines bit for bit are used (+ - * / sqrt, scaling by
powers of two, rint), `math.fsum`, and BLAS products of small integers (exact in any order).
`exp64` is this module's own exponential (argument reduction and a Taylor polynomial in
basic operations), not libm's, whose last bit differs between machines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.oracle.expect import gamma
from conformance.oracle.formats import FORMATS

U64 = 2.0**-53
EXP_REL = 2.0**-44  # a bound on exp64's relative error (derivation in exp64; checked against mpmath in the tests)
_UP = 1 + 2.0**-50  # a factor that covers the float64 rounding of a bound's own computation


def unit(t: str) -> float:
    return float(FORMATS[t].unit_roundoff)


def tiny(t: str) -> float:
    return float(FORMATS[t].tiny)


def gamma_f(k: int, t: str) -> float:
    return float(gamma(k, FORMATS[t])) * _UP if k > 0 else 0.0


def mag(x: np.ndarray) -> np.ndarray:
    return np.abs(x) * _UP


@dataclass(frozen=True)
class Approx:
    v: np.ndarray
    e: np.ndarray

    def __getitem__(self, key: Any) -> Approx:
        return Approx(self.v[key], self.e[key])


def exact(x: Any) -> Approx:
    v = np.asarray(x).astype(np.float64)
    return Approx(v, np.zeros_like(v))


def _finite_only(v: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Infinite values here only come from exact constants (a mask's -inf): no error."""
    return np.where(np.isfinite(v), e, 0.0)


def rnd(a: Approx, t: str) -> Approx:
    """A correctly rounded conversion of a computed value to type t (arith.truncf)."""
    e = a.e + unit(t) * (mag(a.v) + a.e) + tiny(t) / 2
    return Approx(a.v, _finite_only(a.v, e))


def add(a: Approx, b: Approx, t: str) -> Approx:
    with np.errstate(invalid="ignore"):
        s = a.v + b.v
        d = a.e + b.e
        e = d + U64 * mag(s) + unit(t) * (mag(s) + d) + tiny(t) / 2
    return Approx(s, _finite_only(s, e))


def neg(a: Approx) -> Approx:
    return Approx(-a.v, a.e)


def sub(a: Approx, b: Approx, t: str) -> Approx:
    return add(a, neg(b), t)


def mul(a: Approx, b: Approx, t: str) -> Approx:
    with np.errstate(invalid="ignore"):
        p = a.v * b.v
        d = (mag(a.v) * b.e + mag(b.v) * a.e + a.e * b.e) * _UP
        e = d + U64 * mag(p) + unit(t) * (mag(p) + d) + tiny(t) / 2
    return Approx(p, _finite_only(p, e))


def div(a: Approx, b: Approx, t: str) -> Approx:
    """a / b; the divisor's bound must keep it away from zero."""
    den = np.abs(b.v) - b.e
    if not (den > 0).all():
        raise ValueError("a divisor's error bound reaches zero: no bound for the quotient")
    q = a.v / b.v
    d = (a.e + mag(q) * b.e) / den * _UP
    e = d + U64 * mag(q) + unit(t) * (mag(q) + d) + tiny(t) / 2
    return Approx(q, _finite_only(q, e))


def exp(a: Approx, t: str, ulps: int = 1) -> Approx:
    """math.exp of an N-ulp class in type t."""
    if not (a.e <= 0.5).all():
        raise ValueError("an exponent's error bound above 0.5")
    w = exp64(a.v)
    big = w * (1 + EXP_REL) * _UP
    # |e^(x + d) - e^x| <= e^x (e^|d| - 1) <= e^x |d| (1 + 2 |d|) for |d| <= 1/2
    d = big * a.e * (1 + 2 * a.e) * _UP
    e = d + EXP_REL * big + ulps * 2 * unit(t) * (big + d) + ulps * tiny(t)
    return Approx(w, _finite_only(w, e))


def sqrt(a: Approx, t: str) -> Approx:
    lo = a.v - a.e
    if not (lo > 0).all():
        raise ValueError("a square root's operand bound reaches zero")
    w = np.sqrt(a.v)
    d = a.e / np.sqrt(lo) * _UP  # |sqrt(x) - sqrt(y)| = |x - y| / (sqrt x + sqrt y)
    e = d + U64 * mag(w) + unit(t) * (mag(w) + d) + tiny(t) / 2
    return Approx(w, e)


def rsqrt(a: Approx, t: str, ulps: int = 2) -> Approx:
    lo = a.v - a.e
    if not (lo > 0).all():
        raise ValueError("an rsqrt operand's bound reaches zero")
    w = 1.0 / np.sqrt(a.v)
    d = a.e / (2 * lo * np.sqrt(lo)) * _UP  # |f'| = 1 / (2 x^1.5) is largest at the low end
    e = d + 3 * U64 * mag(w) + ulps * 2 * unit(t) * (mag(w) + d) + ulps * tiny(t)
    return Approx(w, e)


def _fsum_last(x: np.ndarray) -> np.ndarray:
    """math.fsum along the last axis (correctly rounded, so the same everywhere)."""
    flat = x.reshape(-1, x.shape[-1])
    return np.array([math.fsum(r) for r in flat.tolist()], dtype=np.float64).reshape(x.shape[:-1])


def total(a: Approx, axis: int, t: str, init: Approx | None = None) -> Approx:
    """An order-free sum in type t along `axis` (linalg.reduce with addf, a reduction iterator),
    starting from `init` (one more term) or from zero."""
    v = np.moveaxis(a.v, axis, -1)
    e = np.moveaxis(a.e, axis, -1)
    n = v.shape[-1]
    s = _fsum_last(v)
    m = _fsum_last(mag(v) + e) * _UP
    se = _fsum_last(e) * _UP
    if init is not None:
        s, m, se, n = s + init.v, m + mag(init.v) + init.e, se + init.e, n + 1
        s = np.asarray(s)
    err = se + gamma_f(n - 1, t) * m + 2 * U64 * mag(s)
    return Approx(s, err * _UP)


def maximum(a: Approx, axis: int, init: Approx | None = None) -> Approx:
    """max along `axis` (exact in any order): off by at most the largest bound."""
    v = a.v.max(axis=axis)
    e = a.e.max(axis=axis)
    if init is not None:
        v, e = np.maximum(v, init.v), np.maximum(e, init.e)
    return Approx(v, e)


def _limbs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """x = (hi * 2^20 + lo) * 2^-s with hi, lo integers below 2^20 in magnitude (float64)."""
    m, ex = np.frexp(x)
    nz = x != 0
    if not nz.any():
        return np.zeros_like(x), np.zeros_like(x), 0
    whole = np.abs(m * 2.0**53).astype(np.int64)  # x = whole * 2^(ex - 53)
    low = whole & -whole  # the lowest set bit
    quantum = ex - 53 + (np.frexp(low.astype(np.float64))[1] - 1)
    s = int(-quantum[nz].min())
    n = np.ldexp(x, s)  # exact integers: every x is a multiple of 2^-s
    if np.abs(n).max(initial=0) >= 2.0**40:
        raise ValueError("inputs span too many binades for the exact product (more than 40 bits)")
    hi = np.trunc(n / 2.0**20)
    return hi, n - hi * 2.0**20, s


def limb_matmul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a @ b and |a| @ |b| for exact inputs of few significant bits (f16, bf16, f8 values; f32
    of a narrow range), and a bound on the float64 error of the first. Each input is split into
    20-bit integer limbs; a product of limbs summed over K <= 2^13 terms stays below 2^53, so
    BLAS computes each of the four limb products exactly whatever its order. They are added,
    scaled, in float64: three roundings of sums below 4 |a| @ |b|, an error below 16 u64 |a| @ |b|."""
    if a.shape[-1] > 2**13:
        raise ValueError("too many terms for exact limb products")
    ah, al, sa = _limbs(np.asarray(a, np.float64))
    bh, bl, sb = _limbs(np.asarray(b, np.float64))
    scale = -(sa + sb)
    out = []
    for (xh, xl), (yh, yl) in (((ah, al), (bh, bl)), ((np.abs(ah), np.abs(al)), (np.abs(bh), np.abs(bl)))):
        top, low = xh @ yh, xl @ yl  # exact integers below 2^53
        mid = xh @ yl + xl @ yh  # two exact integers below 2^53, their sum rounded once
        out.append(np.ldexp(top, scale + 40) + np.ldexp(mid, scale + 20) + np.ldexp(low, scale))
    m = out[1] * (1 + 4 * U64)
    return out[0], m, 16 * U64 * m


def fsum_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b (2-D) with each entry summed by fsum: correctly rounded, the same everywhere."""
    prod = a[:, :, None] * b[None, :, :]  # (M, K, N): each product rounded once
    return _fsum_last(np.moveaxis(prod, 1, -1))


def matmul(a: Approx, b: Approx, t: str, init: Approx | None = None) -> Approx:
    """C = init + a @ b (2-D), an order-free sum of K products in type t."""
    k = a.v.shape[-1]
    if not a.e.any() and not b.e.any():
        s, m, s_err = limb_matmul(a.v, b.v)
        d = np.zeros_like(s)
    else:
        s = fsum_matmul(a.v, b.v)
        m = fsum_matmul(mag(a.v), mag(b.v)) * _UP
        d = np.zeros_like(s)
        if b.e.any():
            d = d + fsum_matmul(mag(a.v) + a.e, b.e)
        if a.e.any():
            d = d + fsum_matmul(a.e, mag(b.v))
        d = d * _UP
        # each product's float64 rounding (K of them, u64 |a b| each) and fsum's rounding
        s_err = U64 * m + U64 * mag(s)
    terms = k
    if init is not None:
        s = s + init.v
        m = m + mag(init.v)
        d = d + init.e
        s_err = s_err + U64 * mag(s)
        terms = k + 1
    err = d + gamma_f(terms, t) * (m + d) + k * tiny(t) + s_err
    return Approx(s, err * _UP)


# ---------------------------------------------------------------------- the exponential

_LN2_HI = 0.693147180369123816490  # ln 2 to 32 bits: k * _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700
_TAYLOR = [1.0 / math.factorial(i) for i in range(14)]


def exp64(x: np.ndarray) -> np.ndarray:
    """e^x for float64 arrays, with relative error below EXP_REL = 2^-44.

    k = rint(x / ln 2), r = (x - k ln2_hi) - k ln2_lo with |r| <= 0.35: ln2_hi has 32 bits, so
    k ln2_hi and x - k ln2_hi are exact for |x| < 2^20; the representation error of ln2_hi +
    ln2_lo (< 2^-60 |k|) and the one rounding of r (2^-53 |r|) perturb r by less than 2^-50 in
    absolute value, i.e. e^r by a relative 2^-50. The Taylor polynomial of degree 13 misses less
    than 0.35^14 / 14! < 2^-57; its Horner evaluation in float64 adds at most 14 * 2^-53 * 1.5 <
    2^-48 (every term is below 1.5 in magnitude). The scaling by 2^k is exact (no subnormal
    results: e^x of values above -700; below, the result is 0, off by less than e^-700, which the
    absolute term of `exp` covers). Total below 2^-46; EXP_REL keeps a margin of 4.
    """
    x = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(x) & (x > -700.0)  # below, 0: off by less than e^-700, far below every tiny(t)
    if (x[np.isfinite(x)] > 700.0).any():
        raise ValueError("exp64 of an argument above 700")
    xs = np.where(finite, x, 0.0)
    k = np.rint(xs * _INV_LN2)
    r = (xs - k * _LN2_HI) - k * _LN2_LO
    p = np.full_like(r, _TAYLOR[13])
    for c in reversed(_TAYLOR[:13]):
        p = p * r + c
    out = np.ldexp(p, k.astype(np.int64))
    return np.where(finite, out, np.where(x > 0, np.inf, 0.0))
