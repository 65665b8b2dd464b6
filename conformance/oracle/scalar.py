"""The exact value of every elementwise op of `arith` and `math`, one element at a time, as
spec/ops/arith.md and spec/ops/math.md define it.

Float operands and results are exact values (`conformance.oracle.formats`): the result is
the mathematical value before the op's one rounding, which the caller does (`round_exact`).
Integer operands are Python ints holding the signed reading of their bits; results are the
signed reading of the result's bits. A case whose inputs reach a dynamic error
(`runtime.undefined`: a zero divisor, an oversized shift) is a generator bug: `Undefined`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from conformance.oracle import transcendental
from conformance.oracle.formats import Exact, is_inf, is_nan, is_zero, negative


class Undefined(ValueError):
    """The op has no defined result for these operands (a dynamic error)."""


# ---------------------------------------------------------------------- floats


def _neg(a: Exact) -> Exact:
    return -a


def addf(a: Exact, b: Exact) -> Exact:
    if is_nan(a) or is_nan(b):
        return math.nan
    if is_inf(a) or is_inf(b):
        if is_inf(a) and is_inf(b) and negative(a) != negative(b):
            return math.nan
        return a if is_inf(a) else b
    if is_zero(a) and is_zero(b):
        return -0.0 if negative(a) and negative(b) else 0.0
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    s = a + b
    return s if s != 0 else 0.0  # exact cancellation is +0 when rounding to nearest


def subf(a: Exact, b: Exact) -> Exact:
    return addf(a, _neg(b))


def _sign_xor(a: Exact, b: Exact) -> bool:
    return negative(a) != negative(b)


def mulf(a: Exact, b: Exact) -> Exact:
    if is_nan(a) or is_nan(b):
        return math.nan
    if (is_inf(a) and is_zero(b)) or (is_zero(a) and is_inf(b)):
        return math.nan
    if is_inf(a) or is_inf(b):
        return -math.inf if _sign_xor(a, b) else math.inf
    if is_zero(a) or is_zero(b):
        return -0.0 if _sign_xor(a, b) else 0.0
    return a * b


def divf(a: Exact, b: Exact) -> Exact:
    if is_nan(a) or is_nan(b) or (is_inf(a) and is_inf(b)) or (is_zero(a) and is_zero(b)):
        return math.nan
    neg = _sign_xor(a, b)
    if is_inf(a) or is_zero(b):
        return -math.inf if neg else math.inf
    if is_zero(a) or is_inf(b):
        return -0.0 if neg else 0.0
    return a / b


def remf(a: Exact, b: Exact) -> Exact:
    """C's fmod: a - b * trunc(a / b), exact; the sign of a zero result is a's."""
    if is_nan(a) or is_nan(b) or is_inf(a) or is_zero(b):
        return math.nan
    if is_inf(b) or is_zero(a):
        return a
    assert isinstance(a, Fraction) and isinstance(b, Fraction)
    q = a / b
    t = q.numerator // q.denominator if q >= 0 else -((-q.numerator) // q.denominator)
    r = a - b * t
    return r if r != 0 else (-0.0 if negative(a) else 0.0)


def _order(a: Exact, b: Exact) -> bool:
    """a < b for non-NaN values, with -0 < +0."""
    if is_zero(a) and is_zero(b):
        return negative(a) and not negative(b)
    return a < b  # Fractions and floats (zeros, infinities) compare by value


def maximumf(a: Exact, b: Exact) -> Exact:
    if is_nan(a) or is_nan(b):
        return math.nan
    return b if _order(a, b) else a


def minimumf(a: Exact, b: Exact) -> Exact:
    if is_nan(a) or is_nan(b):
        return math.nan
    return a if _order(a, b) else b


def maxnumf(a: Exact, b: Exact) -> Exact:
    """IEEE 754-2019 maximumNumber: a NaN operand gives the other operand; -0 < +0."""
    if is_nan(a):
        return b
    if is_nan(b):
        return a
    return maximumf(a, b)


def minnumf(a: Exact, b: Exact) -> Exact:
    if is_nan(a):
        return b
    if is_nan(b):
        return a
    return minimumf(a, b)


def negf(a: Exact) -> Exact:
    return math.nan if is_nan(a) else _neg(a)


def absf(a: Exact) -> Exact:
    if is_nan(a):
        return math.nan
    if isinstance(a, Fraction):
        return abs(a)
    return abs(a) if not is_zero(a) else 0.0


def copysign(a: Exact, b: Exact) -> Exact:
    mag = absf(a)
    if is_nan(mag):
        return math.nan
    return _neg(mag) if negative(b) else mag


def _integral(a: Exact, how: Callable[[Fraction], Any]) -> Exact:
    if not isinstance(a, Fraction):
        return a
    r = how(a)
    return Fraction(r) if r != 0 else (-0.0 if a < 0 else 0.0)


def _round_half_away(q: Fraction) -> int:
    t = math.floor(abs(q) + Fraction(1, 2))
    return -t if q < 0 else t


def _round_half_even(q: Fraction) -> int:
    return round(q)  # Fraction.__round__ rounds ties to even


FLOAT_UNARY: dict[str, Callable[[Exact], Exact]] = {
    "negf": negf, "absf": absf,
    "ceil": lambda a: _integral(a, math.ceil), "floor": lambda a: _integral(a, math.floor),
    "trunc": lambda a: _integral(a, math.trunc), "round": lambda a: _integral(a, _round_half_away),
    "roundeven": lambda a: _integral(a, _round_half_even),
}


def float_unary(name: str) -> Callable[[Exact], Exact]:
    """math.NAME / arith.NAME on one float operand (the functions of
    `conformance.oracle.transcendental.FUNCTIONS` included)."""
    if name in FLOAT_UNARY:
        return FLOAT_UNARY[name]
    if name in transcendental.FUNCTIONS:
        return lambda a: transcendental.unary(name, a)
    raise KeyError(f"the oracle has no exact semantics for {name!r}")

FLOAT_BINARY: dict[str, Callable[[Exact, Exact], Exact]] = {
    "addf": addf, "subf": subf, "mulf": mulf, "divf": divf, "remf": remf, "maximumf": maximumf,
    "minimumf": minimumf, "maxnumf": maxnumf, "minnumf": minnumf, "copysign": copysign,
    "powf": transcendental.powf, "atan2": transcendental.atan2,
}


def fma(a: Exact, b: Exact, c: Exact) -> Exact:
    """a * b + c with one rounding (the caller's)."""
    return addf(mulf(a, b), c)


# ---------------------------------------------------------------------- integers


def wrap(v: int, width: int) -> int:
    """The signed reading of the low `width` bits of v."""
    if width == 1:
        return v & 1
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def unsigned(v: int, width: int) -> int:
    return v & ((1 << width) - 1)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _signed_division(a: int, b: int, width: int) -> None:
    if b == 0:
        raise Undefined("division by zero")
    if a == -(1 << (width - 1)) and b == -1:
        raise Undefined("the most negative value divided by -1")


def int_binary(name: str, a: int, b: int, width: int) -> int:
    ua, ub = unsigned(a, width), unsigned(b, width)
    if name == "addi":
        return wrap(a + b, width)
    if name == "subi":
        return wrap(a - b, width)
    if name == "muli":
        return wrap(a * b, width)
    if name in ("divsi", "remsi", "ceildivsi", "floordivsi"):
        _signed_division(a, b, width)
        q = _trunc_div(a, b)
        if name == "divsi":
            return wrap(q, width)
        if name == "remsi":
            return wrap(a - b * q, width)
        if name == "floordivsi":
            return wrap(a // b, width)
        return wrap(-((-a) // b), width)
    if name in ("divui", "remui"):
        if ub == 0:
            raise Undefined("division by zero")
        return wrap(ua // ub if name == "divui" else ua % ub, width)
    if name in ("shli", "shrsi", "shrui"):
        if ub >= width:
            raise Undefined(f"shift by {ub} of an i{width}")
        if name == "shli":
            return wrap(a << ub, width)
        if name == "shrsi":
            return wrap(a >> ub, width)
        return wrap(ua >> ub, width)
    if name == "andi":
        return wrap(ua & ub, width)
    if name == "ori":
        return wrap(ua | ub, width)
    if name == "xori":
        return wrap(ua ^ ub, width)
    if name == "maxsi":
        return max(a, b)
    if name == "minsi":
        return min(a, b)
    if name == "maxui":
        return wrap(max(ua, ub), width)
    if name == "minui":
        return wrap(min(ua, ub), width)
    raise KeyError(name)


def int_unary(name: str, a: int, width: int) -> int:
    if name == "absi":
        return wrap(abs(a), width)
    if name == "ctpop":
        return bin(unsigned(a, width)).count("1")
    raise KeyError(name)


INT_BINARY = ("addi", "subi", "muli", "divsi", "remsi", "ceildivsi", "floordivsi", "divui", "remui", "shli", "shrsi",
              "shrui", "andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui")
INT_UNARY = ("absi", "ctpop")


# ---------------------------------------------------------------------- comparisons and conversions


def cmpf(pred: str, a: Exact, b: Exact) -> bool:
    if pred == "false":
        return False
    if pred == "true":
        return True
    unordered = is_nan(a) or is_nan(b)
    if pred == "ord":
        return not unordered
    if pred == "uno":
        return unordered
    if unordered:
        return pred.startswith("u")
    rel = pred[1:]
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[rel]


def cmpi(pred: str, a: int, b: int, width: int) -> bool:
    if pred in ("ult", "ule", "ugt", "uge"):
        a, b = unsigned(a, width), unsigned(b, width)
        pred = "s" + pred[1:]
    return {"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b, "sge": a >= b}[pred]


def to_integer(a: Exact, width: int, signed: bool) -> int:
    """fptosi / fptoui: rounding toward zero; a value that does not fit is undefined."""
    if is_nan(a) or is_inf(a):
        raise Undefined(f"converting {a} to an integer")
    if is_zero(a):
        return 0
    assert isinstance(a, Fraction)
    t = math.trunc(a)
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if not lo <= t <= hi:
        raise Undefined(f"{float(a)} does not fit in an i{width}")
    return wrap(t, width)


def from_integer(a: int, width: int, signed: bool) -> Exact:
    """sitofp / uitofp before the rounding."""
    v = a if signed else unsigned(a, width)
    return Fraction(v) if v != 0 else 0.0
