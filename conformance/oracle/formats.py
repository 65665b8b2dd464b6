"""Floating-point formats and rounding of exact values into them, done once.

An *exact value* is a Python object: a `Fraction` for a finite non-zero number, or a `float`
for the values a fraction cannot carry (`±0.0`, `±inf`, `nan`). Rounding works on fractions
with integer arithmetic only, so the result is the same on every machine; it never goes
through a float type narrower than the exact value (no double rounding).

A value known only approximately (a transcendental function's value, an irrational square
root) is a `Fraction` accurate to far more bits than any format holds and never a short
dyadic number (see `conformance.oracle.transcendental`), so every rounding decision made on
it is the decision for the true value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import ml_dtypes
import numpy as np

Exact = Fraction | float
Mode = Literal["nearest", "up", "down"]


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: `p` significant bits (with the hidden one), normal
    exponents `emin..emax`, and what an overflow gives (`inf`, or NaN for `f8E4M3FN`)."""

    name: str
    p: int
    emin: int
    emax: int
    has_inf: bool
    largest: Fraction  # the largest finite value

    @property
    def tiny(self) -> Fraction:
        """The smallest positive (subnormal) value."""
        return Fraction(2) ** (self.emin - self.p + 1)

    @property
    def unit_roundoff(self) -> Fraction:
        return Fraction(1, 1 << self.p)

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(_NUMPY[self.name])


def _fmt(name: str, p: int, emin: int, emax: int, has_inf: bool, largest_mant: int | None = None) -> Format:
    mant = largest_mant if largest_mant is not None else (1 << p) - 1
    return Format(name, p, emin, emax, has_inf, Fraction(mant) * Fraction(2) ** (emax - p + 1))


FORMATS: dict[str, Format] = {
    "f16": _fmt("f16", 11, -14, 15, True),
    "bf16": _fmt("bf16", 8, -126, 127, True),
    "f32": _fmt("f32", 24, -126, 127, True),
    "f64": _fmt("f64", 53, -1022, 1023, True),
    # f8E4M3FN: no infinities; the all-ones pattern of the top binade is NaN, so its largest
    # significand is 1.110 (448)
    "f8E4M3FN": _fmt("f8E4M3FN", 4, -6, 8, False, largest_mant=0b1110),
    "f8E5M2": _fmt("f8E5M2", 3, -14, 15, True),
}
_NUMPY: dict[str, Any] = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
                          "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}


def format_of(dtype: Any) -> Format:
    """The format of a numpy dtype (or a KTIR type name)."""
    if isinstance(dtype, str) and dtype in FORMATS:
        return FORMATS[dtype]
    dt = np.dtype(dtype)
    for f in FORMATS.values():
        if f.dtype == dt:
            return f
    raise ValueError(f"{dt} is not a floating-point format of KTIR")


# ---------------------------------------------------------------------- predicates


def is_nan(v: Exact) -> bool:
    return isinstance(v, float) and math.isnan(v)


def is_inf(v: Exact) -> bool:
    return isinstance(v, float) and math.isinf(v)


def is_zero(v: Exact) -> bool:
    return isinstance(v, float) and v == 0.0


def negative(v: Exact) -> bool:
    """The sign bit (also of zeros and NaN)."""
    if isinstance(v, Fraction):
        return v < 0
    return math.copysign(1.0, v) < 0


def exponent(q: Fraction) -> int:
    """floor(log2 |q|) for q != 0, by integer arithmetic."""
    n, d = abs(q.numerator), q.denominator
    e = n.bit_length() - d.bit_length()
    # 2^e <= n/d < 2^(e+1) after at most one correction
    if (n << max(-e, 0)) < (d << max(e, 0)):
        e -= 1
    return e


def quantum(q: Fraction, f: Format) -> Fraction:
    """The spacing of `f`'s values around |q| (its ulp): for subnormal |q| the smallest
    subnormal, beyond the largest finite value the spacing of the top binade."""
    e = min(max(exponent(q), f.emin), f.emax)
    return Fraction(2) ** (e - f.p + 1)


def ulp(v: Exact, f: Format) -> Fraction:
    """ulp(x) of the N ulp class (spec/conformance.md): the distance between the two values of
    `f` nearest to x (Kahan's definition). Inside a binade that is its spacing; at a power of
    two in the normal range, where the value below is nearer than the one above, the spacing
    below; beyond the largest finite value the spacing of the top binade; zero's is the
    smallest subnormal."""
    if not isinstance(v, Fraction):
        return f.tiny
    q = quantum(v, f)
    a = abs(v)
    e = exponent(a)
    if f.emin < e <= f.emax and a == Fraction(2) ** e:
        return q / 2
    return q


# ---------------------------------------------------------------------- rounding


def _round_int(m: Fraction, mode: Mode) -> int:
    """Round a non-negative rational to an integer: to nearest even, or up/down (toward +-inf of
    the magnitude, the caller folds the sign in)."""
    fl = m.numerator // m.denominator
    rest = m - fl
    if mode == "down" or rest == 0:
        return fl
    if mode == "up":
        return fl + 1
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and fl % 2 == 1):
        return fl + 1
    return fl


def round_exact(v: Exact, f: Format, mode: Mode = "nearest") -> Exact:
    """`v` rounded once into format `f`: a Fraction (a value of `f`), a signed zero, ±inf or
    nan. `up`/`down` round toward +inf/-inf and saturate at the largest finite value only in
    the direction away from the overflow (`down` of a huge positive value is the largest)."""
    if isinstance(v, float):
        if math.isinf(v) and not f.has_inf:
            return math.nan if mode == "nearest" else (float(f.largest) if (v > 0) == (mode == "down") else v)
        return v
    if v == 0:
        return 0.0
    neg = v < 0
    a = -v if neg else v
    magnitude_mode: Mode = mode if mode == "nearest" else (("down" if mode == "up" else "up") if neg else mode)
    q = Fraction(2) ** (max(exponent(a), f.emin) - f.p + 1)
    m = _round_int(a / q, magnitude_mode)
    if m == 0:
        return -0.0 if neg else 0.0
    r = m * q
    if r > f.largest:
        if magnitude_mode == "down":
            r = f.largest
        else:
            return (math.nan if not f.has_inf and mode == "nearest" else (-math.inf if neg else math.inf))
    return -r if neg else r


def to_float(v: Exact) -> float:
    """An exact value that is a value of some format (after `round_exact`) as a Python float."""
    return float(v)


def exact_of(x: Any) -> Exact:
    """The exact value of one element of a float array (numpy scalar of any float type)."""
    f = float(np.float64(x)) if not isinstance(x, float) else x
    if math.isnan(f) or math.isinf(f) or f == 0.0:
        return f
    return Fraction(f)


def exact_array(a: np.ndarray) -> np.ndarray:
    """An object array of exact values for a float array of any format (bf16 and f8 too)."""
    wide = np.asarray(a).astype(np.float64)
    out = np.empty(wide.shape, dtype=object)
    flat = wide.reshape(-1)
    res = out.reshape(-1)
    for i, x in enumerate(flat.tolist()):
        res[i] = exact_of(x)
    return out


def to_numpy(values: np.ndarray, f: Format) -> np.ndarray:
    """Values of format `f` (object array of exact values already rounded) as an array of its dtype."""
    flat = [to_float(v) for v in np.asarray(values, dtype=object).reshape(-1)]
    return np.array(flat, dtype=np.float64).reshape(np.shape(values)).astype(f.dtype)


def round_array(values: np.ndarray, f: Format, mode: Mode = "nearest") -> np.ndarray:
    """Element-wise `round_exact` of an object array; the result is an object array."""
    out = np.empty(np.shape(values), dtype=object)
    src = np.asarray(values, dtype=object).reshape(-1)
    dst = out.reshape(-1)
    for i, v in enumerate(src):
        dst[i] = round_exact(v, f, mode)
    return out


# ---------------------------------------------------------------------- float64 arrays, vectorised


def round_float64(x: np.ndarray, f: Format, mode: Mode = "nearest") -> np.ndarray:
    """float64 values rounded once into `f` (result as float64 holding values of `f`), with
    numpy's exact operations only: scaling by powers of two, rint/floor/ceil. For the
    `full` level's float64 models, whose arrays are too large for fractions."""
    x = np.asarray(x, dtype=np.float64)
    if f.name == "f64":
        return x.copy()
    finite = np.isfinite(x) & (x != 0)
    a = np.where(finite, np.abs(x), 1.0)
    _, e2 = np.frexp(a)  # a = m * 2^e2, 0.5 <= m < 1: floor(log2 a) = e2 - 1
    e = np.maximum(e2 - 1, f.emin)
    scale = np.ldexp(1.0, (f.p - 1 - e).astype(np.int64))
    m = a * scale  # exact: a power-of-two scaling of a float64 into the float64 range
    neg = x < 0
    if mode == "nearest":
        k = np.rint(m)
    else:
        toward_up = (mode == "up") != neg  # magnitude rounded up?
        k = np.where(toward_up, np.ceil(m), np.floor(m))
    with np.errstate(over="ignore"):
        r = k / scale  # exact, or an overflow far beyond the largest value
    big = r > float(f.largest)
    if mode == "nearest":
        over = math.inf if f.has_inf else math.nan
        r = np.where(big, over, r)
    else:
        toward_up = (mode == "up") != neg
        r = np.where(big, np.where(toward_up, math.inf, float(f.largest)), r)
    r = np.where(neg, -r, r)
    return np.where(finite, r, np.where(np.isinf(x) & (not f.has_inf) & (mode == "nearest"), math.nan, x))
