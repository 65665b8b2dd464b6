"""`math`: elementwise transcendental, rounding and bit functions.

Exact functions (`absf`, `ceil`, `floor`, `roundeven`, `trunc`, `copysign`, `sqrt`) are
evaluated in the operand's type. Every other function on a type narrower than f64 is
evaluated in float64 and rounded once to the declared type: numpy's own float32 kernels
are up to 3 ulp off, outside the ops' accuracy classes. `fma` rounds once: below f64 the
product is exact in float64 and the sum is rounded to odd there, which a second rounding to
the narrower type turns into the correctly rounded result; on f64 it is computed with
fractions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ktir.dialects.registry import OPS
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from ..compiler import FuncCompiler, OpFn, impl
from ..dtypes import np_dtype, unsigned_dtype
from ..errors import CompileError
from .common import coercer, element

try:  # scipy is optional; erf falls back to math.erf
    from scipy.special import erf as _scipy_erf
except ImportError:  # pragma: no cover - depends on the environment
    _scipy_erf = None


_NATIVE = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}
# exact in every type (IEEE sqrt is correctly rounded): no need for a wider evaluation
_EXACT = {"absf", "ceil", "floor", "roundeven", "trunc", "copysign", "sqrt"}


def _wide(dt: np.dtype[Any]) -> np.dtype[Any]:
    return np.dtype(np.float64)


def _via_wide(fn: Callable[..., Any], dt: np.dtype[Any]) -> Callable[..., Any]:
    wide = _wide(dt)
    asarray = np.asarray

    def run1(x: Any) -> Any:  # run() for one operand (most functions), without the generator
        return asarray(fn(asarray(x, dtype=wide))).astype(dt)

    def run(*xs: Any) -> Any:
        if len(xs) == 1:
            return run1(xs[0])
        return asarray(fn(*(asarray(x, dtype=wide) for x in xs))).astype(dt)

    return run


def _libm_erf(x: Any) -> Any:
    import math

    # frompyfunc gives a bare Python float for a scalar: asarray takes both
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.float64)


def _erf_for(dt: np.dtype[Any]) -> Callable[..., Any]:
    # f64 results must meet erf's 2-ulp class on their own: libm's erf does, scipy's is off
    # by up to 3 ulp. Narrower types round a float64 value once, so scipy's speed is
    # harmless there; without scipy they use libm too.
    if dt == np.dtype(np.float64) or _scipy_erf is None:
        return _libm_erf
    return _scipy_erf


def _fma_round_to_odd(a: Any, b: Any, c: Any) -> Any:
    """a * b + c in float64, rounded to odd: exact products (operands of at most 26 bits), the
    sum's rounding error by TwoSum, and an inexact sum moved to its odd neighbour. Rounding that
    to a type of p <= 51 bits gives the correctly rounded a * b + c (no double rounding)."""
    p = a * b
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c
        bp = s - c
        err = (p - bp) + (c - (s - bp))
        bits = np.asarray(s).view(np.int64)
        even = (bits & 1) == 0
        fix = np.isfinite(s) & (err != 0) & even
        toward = np.where(err > 0, np.inf, -np.inf)
        return np.where(fix, np.nextafter(s, toward), s)


def _fma_f64(a: Any, b: Any, c: Any) -> Any:
    """f64 fma, rounded once: fractions for finite non-zero operands (Python's float(Fraction)
    rounds correctly), float arithmetic where it is exact or special (zeros, infinities, NaN)."""
    from fractions import Fraction

    def one(x: float, y: float, z: float) -> float:
        if np.isfinite(x) and np.isfinite(y) and np.isinf(z):
            return z  # the exact product is finite even where x * y overflows: inf - inf is not NaN here
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)) or x == 0 or y == 0 or z == 0:
            return x * y + z
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact == 0:
            return 0.0
        try:
            return float(exact)
        except OverflowError:
            return float("inf") if exact > 0 else float("-inf")

    out = np.frompyfunc(one, 3, 1)(a, b, c)
    return np.asarray(out, dtype=np.float64) if isinstance(out, np.ndarray) else np.float64(out)


def _round_away(x: Any) -> Any:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


# Float functions numpy provides, by mnemonic: a new elementwise math op whose numpy function
# meets its accuracy class (evaluated in float64 below f64) needs one entry here, nothing more
# (`math_op` is registered for every op of the math dialect).
FLOAT_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "atan": np.arctan, "absf": np.abs, "ceil": np.ceil,
    "floor": np.floor, "roundeven": np.rint, "trunc": np.trunc, "atan2": np.arctan2,
    "powf": np.power, "copysign": np.copysign,
}


def _float_fn(name: str, dt: np.dtype[Any]) -> Callable[..., Any]:
    direct = FLOAT_FUNCTIONS
    if name in direct:
        if dt in _NATIVE and (name in _EXACT or dt == np.dtype(np.float64)):
            return direct[name]
        # numpy's float32 kernels (SIMD) are up to 3 ulp off, beyond the 1-2 ulp classes:
        # evaluate in float64 and round once, as for bf16 / f8
        return _via_wide(direct[name], dt)
    if name == "rsqrt":
        return _via_wide(lambda x: 1.0 / np.sqrt(x), dt)
    if name == "erf":
        return _via_wide(_erf_for(dt), dt)
    if name == "round":
        return _via_wide(_round_away, dt)
    if name == "fma":
        return _fma_f64 if dt == np.dtype(np.float64) else _via_wide(_fma_round_to_odd, dt)
    raise CompileError(f"math.{name} is not implemented")


def _int_fn(name: str, dt: np.dtype[Any]) -> Callable[..., Any]:
    if name == "absi":
        return np.abs  # wraps at the minimum, as MLIR defines
    if name == "ctpop":
        if dt == np.bool_:
            return lambda x: np.asarray(x, dtype=bool)
        udt = unsigned_dtype(dt)
        return lambda x: np.bitwise_count(np.asarray(x).view(udt)).astype(dt)
    raise CompileError(f"math.{name} is not an integer function")


# every op of the math dialect, read from the registry: a new row is registered by itself
@impl(*(name for name, d in OPS.items() if d.dialect == "math"))
def math_op(c: FuncCompiler, op: Operation) -> OpFn:
    slots = c.operand_slots(op)
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    et = element(t)
    dt = np_dtype(et)
    name = op.name.split(".")[1]
    tensor = isinstance(t, ty.TensorType)
    fn = _float_fn(name, dt) if isinstance(et, ty.FloatType) else _int_fn(name, dt)
    co = coercer(dt)
    typ = dt.type
    scalar_int = not tensor and not c.vector and not isinstance(et, ty.FloatType)

    if len(slots) == 1:
        (a,) = slots

        def run1(fr: list[Any]) -> None:
            v = fn(co(fr[a]))
            if isinstance(v, np.ndarray) and (tensor or v.ndim):
                fr[r] = v if v.dtype == dt else v.astype(dt)
            else:
                fr[r] = _scalar(v, typ, scalar_int)

        return run1

    def run(fr: list[Any]) -> None:
        v = fn(*(co(fr[s]) for s in slots))
        if isinstance(v, np.ndarray) and (tensor or v.ndim):
            fr[r] = v if v.dtype == dt else v.astype(dt)
        else:
            fr[r] = _scalar(v, typ, scalar_int)

    return run


def _scalar(v: Any, typ: Any, as_int: bool) -> Any:
    if as_int:
        x = np.asarray(v)[()]
        return bool(x) if isinstance(x, np.bool_) else int(x)
    return typ(v)
