"""Element types as numpy dtypes, and the representation of values.

Values at run time:

- a tensor is a numpy array of its element type's dtype (`index` is int64, `i1` is bool,
  signless `iN` is the signed numpy integer of width N, `f16`/`bf16`/`f8*` come from
  numpy and `ml_dtypes`);
- a scalar `index` or integer is a Python `int` holding the two's-complement value
  normalised to the signed range of its width (`i1` is a Python `bool`);
- a scalar float is a numpy scalar of its dtype (`np.float16(1.5)`), so arithmetic
  rounds to the declared type after every op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from ktir.ir import types as ty
from ktir.ir.base import Type

INDEX_BITS = 64

_FLOATS: dict[str, Any] = {
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3": ml_dtypes.float8_e4m3,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
}

_SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


class UnsupportedType(Exception):
    pass


def np_dtype(t: Type) -> np.dtype[Any]:
    """The numpy dtype of an element type."""
    if isinstance(t, ty.IndexType):
        return np.dtype(np.int64)
    if isinstance(t, ty.IntegerType):
        if t.width == 1:
            return np.dtype(np.bool_)
        table = _UNSIGNED if t.signedness == "unsigned" else _SIGNED
        if t.width not in table:
            raise UnsupportedType(f"integer width {t.width} (supported: 1, 8, 16, 32, 64)")
        return np.dtype(table[t.width])
    if isinstance(t, ty.FloatType):
        if t.kind not in _FLOATS:
            raise UnsupportedType(f"float type {t.kind}")
        return np.dtype(_FLOATS[t.kind])
    raise UnsupportedType(f"{type(t).__name__} has no element dtype")


def width(t: Type) -> int:
    if isinstance(t, ty.IndexType):
        return INDEX_BITS
    if isinstance(t, ty.IntegerType):
        return t.width
    if isinstance(t, ty.FloatType):
        return t.width
    raise UnsupportedType(f"{type(t).__name__} has no bit width")


def unsigned_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    """The unsigned integer dtype of the same width (for unsigned comparisons, shifts, casts)."""
    if dt == np.bool_:
        return np.dtype(np.uint8)
    return np.dtype(_UNSIGNED[dt.itemsize * 8])


def is_float_dtype(dt: np.dtype[Any]) -> bool:
    return dt.kind == "f" or dt.type in _ML_FLOAT_TYPES


_ML_FLOAT_TYPES = {np.dtype(v).type for k, v in _FLOATS.items() if k not in ("f16", "f32", "f64")}


def int_normaliser(t: Type) -> Callable[[int], Any]:
    """A function wrapping a Python int to the value range of integer type `t`."""
    if isinstance(t, ty.IntegerType) and t.width == 1:
        return lambda v: bool(v & 1)
    w = width(t)
    if isinstance(t, ty.IntegerType) and t.signedness == "unsigned":
        mask = (1 << w) - 1
        return lambda v: v & mask
    lo, hi, span = -(1 << (w - 1)), 1 << (w - 1), 1 << w

    def norm(v: int) -> int:
        if lo <= v < hi:
            return v
        return ((v - lo) % span) + lo

    return norm


def scalar_from_element(x: Any, t: Type) -> Any:
    """A scalar-mode value from a numpy element of type `t`."""
    if isinstance(t, ty.IndexType | ty.IntegerType):
        if isinstance(t, ty.IntegerType) and t.width == 1:
            return bool(x)
        return int(x)
    return np_dtype(t).type(x)


def to_scalar(value: Any, t: Type) -> Any:
    """Convert a Python number to the scalar-mode value of type `t` (rounding floats)."""
    if isinstance(t, ty.IndexType | ty.IntegerType):
        if isinstance(value, float | np.floating):
            raise TypeError(f"expected an integer for type {t}, got {value!r}")
        return int_normaliser(t)(int(value))
    dt = np_dtype(t)
    return dt.type(np.asarray(value, dtype=np.float64).astype(dt))
