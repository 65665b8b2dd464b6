"""Transcendental functions and square roots to 256 bits with mpmath (pure-integer
arithmetic, the same on every machine), special values as C23 Annex F says.

mpmath evaluates with a few ulp of error at its working precision (2^-256 relative). A result
within 2^-200 (relative) of a dyadic number of at most 64 significant bits is taken to be that
number: this is how exact values show (`exp(0) = 1`, `log2(8) = 3`, `sqrt(2.25) = 1.5`,
`pow(4, 0.5) = 2`). Every other result is kept as the 256-bit value. For the formats of KTIR
(at most 53 bits) the rounding to nearest of a value, and the ends of its N-ulp interval, only
change within 2^-64 of such a dyadic number; the known worst cases of these functions (the
"table maker's dilemma" searches for binary64) come no closer than about 2^-120, so the
decisions made on the 256-bit value are those for the true value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import mpmath

from conformance.oracle.formats import Exact, is_inf, is_nan, is_zero, negative

PREC = 256
SNAP_BITS = 64
SNAP_DISTANCE = 200



# math.NAME -> its mpmath function (for finite, non-zero operands in its domain). A new
# elementwise math op of the registry needs one entry here for its cases' goldens.
FUNCTIONS: dict[str, Callable[[mpmath.mpf], mpmath.mpf]] = {
    "exp": mpmath.exp, "exp2": lambda v: mpmath.power(2, v), "expm1": mpmath.expm1, "log": mpmath.log,
    "log2": lambda v: mpmath.log(v, 2), "log10": mpmath.log10, "log1p": mpmath.log1p, "tanh": mpmath.tanh,
    "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "atan": mpmath.atan, "erf": mpmath.erf,
    "sqrt": mpmath.sqrt, "rsqrt": lambda v: 1 / mpmath.sqrt(v),
}


def _mpf(v: Fraction) -> mpmath.mpf:
    return mpmath.mpf(v.numerator) / v.denominator  # exact at PREC bits: numerators here have far fewer


def _exactish(r: mpmath.mpf) -> Exact:
    """The exact value of a 256-bit result, snapped to a short dyadic number when it is one."""
    if not mpmath.isfinite(r):
        return math.nan if mpmath.isnan(r) else (math.inf if r > 0 else -math.inf)
    if r == 0:
        return 0.0
    sign, man, exp, _ = r._mpf_  # r = (-1)^sign * man * 2^exp exactly
    q = (-1) ** sign * Fraction(man) * Fraction(2) ** exp
    e = man.bit_length() + exp - 1
    step = Fraction(2) ** (e - SNAP_BITS + 1)
    snapped = round(q / step) * step
    if abs(q - snapped) <= Fraction(2) ** (e - SNAP_DISTANCE):
        return snapped if snapped != 0 else 0.0
    return q


def _finite(fn: Callable[..., mpmath.mpf], *args: Fraction) -> Exact:
    with mpmath.workprec(PREC):
        return _exactish(fn(*(_mpf(a) for a in args)))


def _signed_zero(neg: bool) -> float:
    return -0.0 if neg else 0.0


def _pi_multiple(k: Fraction, neg: bool) -> Exact:
    v = _finite(lambda: mpmath.pi * k.numerator / k.denominator)
    return -v if neg and isinstance(v, Fraction) else v


def unary(name: str, x: Exact) -> Exact:
    """The exact value of math.NAME(x)."""
    if is_nan(x):
        return math.nan
    if name not in _SPECIALS:  # a function without a table of its own: mpmath's special values
        return _finite(FUNCTIONS[name], x) if isinstance(x, Fraction) else _exactish(_special_mpf(name, x))
    if is_inf(x):
        neg = negative(x)
        table: dict[str, Exact] = {
            "exp": 0.0 if neg else math.inf, "exp2": 0.0 if neg else math.inf, "expm1": Fraction(-1) if neg else math.inf,
            "log": math.nan if neg else math.inf, "log2": math.nan if neg else math.inf, "log10": math.nan if neg else math.inf,
            "log1p": math.nan if neg else math.inf, "tanh": Fraction(-1) if neg else Fraction(1),
            "sin": math.nan, "cos": math.nan, "tan": math.nan, "erf": Fraction(-1) if neg else Fraction(1),
            "sqrt": math.nan if neg else math.inf, "rsqrt": math.nan if neg else 0.0,
        }
        if name == "atan":
            return _pi_multiple(Fraction(1, 2), neg)
        return table[name]
    if is_zero(x):
        neg = negative(x)
        if name in ("exp", "exp2", "cos"):
            return Fraction(1)
        if name in ("log", "log2", "log10"):
            return -math.inf
        if name == "rsqrt":
            return -math.inf if neg else math.inf
        return _signed_zero(neg)  # expm1, log1p, tanh, sin, tan, atan, erf, sqrt keep the zero
    assert isinstance(x, Fraction)
    if name in ("log", "log2", "log10", "sqrt", "rsqrt") and x < 0:
        return math.nan
    if name == "log1p" and x <= -1:
        return -math.inf if x == -1 else math.nan
    if name == "exp2" and x.denominator == 1 and abs(x) < 100_000:
        return Fraction(2) ** int(x)
    if name in ("exp", "exp2", "expm1") and x > 100_000:
        return math.inf
    if name in ("exp", "exp2") and x < -100_000:
        return Fraction(1, 1 << 200_000)  # positive, below every format's smallest subnormal
    r = _finite(FUNCTIONS[name], x)
    if is_zero(r):  # an underflow of the 256-bit value (never for these inputs): keep the sign
        return _signed_zero(negative(x) and name not in ("exp", "exp2", "cos"))
    return r


_SPECIALS = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sin", "cos", "tan", "atan", "erf",
             "sqrt", "rsqrt")


def _special_mpf(name: str, x: float) -> mpmath.mpf:
    with mpmath.workprec(PREC):
        return FUNCTIONS[name](mpmath.mpf(x))


def _odd_integer(y: Fraction) -> bool:
    return y.denominator == 1 and y.numerator % 2 == 1


def powf(x: Exact, y: Exact) -> Exact:
    """C's pow(x, y) (C23 F.10.4.5)."""
    if is_zero(y):
        return Fraction(1)
    if isinstance(x, Fraction) and x == 1:
        return Fraction(1)
    if is_nan(x) or is_nan(y):
        return math.nan
    yodd = isinstance(y, Fraction) and _odd_integer(y)
    yneg = negative(y)
    if is_zero(x):
        if yneg:
            return (-math.inf if negative(x) else math.inf) if yodd else math.inf
        return _signed_zero(negative(x)) if yodd else 0.0
    if is_inf(y):
        ax = abs(x) if isinstance(x, Fraction) else abs(float(x))
        if ax == 1:
            return Fraction(1)
        if (ax < 1) == yneg:
            return math.inf
        return 0.0
    if is_inf(x):
        if not negative(x):
            return 0.0 if yneg else math.inf
        if yneg:
            return -0.0 if yodd else 0.0
        return -math.inf if yodd else math.inf
    assert isinstance(x, Fraction) and isinstance(y, Fraction)
    if x < 0 and y.denominator != 1:
        return math.nan
    if y.denominator == 1 and abs(y) <= 64:
        return x ** int(y)  # an integer power is rational: exact
    sign = -1 if x < 0 and yodd else 1
    r = _finite(mpmath.power, abs(x), y)
    return -r if sign < 0 and isinstance(r, Fraction) else r


def atan2(y: Exact, x: Exact) -> Exact:
    """C's atan2(y, x): the angle of the point (x, y) (C23 F.10.1.4)."""
    if is_nan(x) or is_nan(y):
        return math.nan
    yneg = negative(y)
    if is_zero(y):
        if negative(x):  # -0 or x < 0 (or -inf)
            return _pi_multiple(Fraction(1), yneg)
        return _signed_zero(yneg)
    if is_inf(y):
        if is_inf(x):
            return _pi_multiple(Fraction(3, 4) if negative(x) else Fraction(1, 4), yneg)
        return _pi_multiple(Fraction(1, 2), yneg)
    if is_zero(x):
        return _pi_multiple(Fraction(1, 2), yneg)
    if is_inf(x):
        return _pi_multiple(Fraction(1), yneg) if negative(x) else _signed_zero(yneg)
    assert isinstance(x, Fraction) and isinstance(y, Fraction)
    return _finite(mpmath.atan2, y, x)
