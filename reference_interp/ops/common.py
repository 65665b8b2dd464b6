"""Helpers shared by the op implementations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.types import KDYNAMIC

from ..compiler import FuncCompiler
from ..dtypes import int_normaliser, np_dtype
from ..errors import CompileError, fail


def element(t: Type) -> Type:
    return ty.element_type(t)


def array_mode(c: FuncCompiler, t: Type) -> bool:
    """Whether values of type `t` are numpy arrays here (tensors, or any value in a body)."""
    return c.vector or isinstance(t, ty.TensorType | ty.VectorType)


def is_int_like(t: Type) -> bool:
    return isinstance(t, ty.IntegerType | ty.IndexType)


def coercer(dt: np.dtype[Any]) -> Any:
    """Turn Python scalars into numpy scalars of `dt` (vector mode mixes both)."""
    typ = dt.type

    def co(x: Any) -> Any:
        if isinstance(x, np.ndarray | np.generic):
            return x
        return typ(x)

    return co


def int_array(values: Any) -> list[int]:
    if isinstance(values, at.DenseArrayAttr):
        return [int(v) for v in values.values]
    if isinstance(values, at.ArrayAttr):
        return [int(getattr(e, "value", 0)) for e in values.elements]
    raise CompileError(f"expected an integer array attribute, found {type(values).__name__}")


def mixed(c: FuncCompiler, static: list[int], dyn_slots: list[int]) -> tuple[list[int | None], list[int]]:
    """Static entries with None where a dynamic operand (in order) supplies the value."""
    out: list[int | None] = []
    for v in static:
        out.append(None if v == KDYNAMIC else v)
    n_dyn = sum(1 for v in out if v is None)
    if n_dyn != len(dyn_slots):
        raise CompileError(f"{n_dyn} dynamic entries but {len(dyn_slots)} operands")
    return out, dyn_slots


def resolve_mixed(entries: list[int | None], slots: list[int], fr: list[Any]) -> list[int]:
    it = iter(slots)
    return [int(fr[next(it)]) if v is None else v for v in entries]


def shape_of(t: Type) -> tuple[int | None, ...]:
    if isinstance(t, ty.TensorType | ty.MemRefType | ty.AccessTileType):
        return tuple(t.shape)
    return ()


def check_shape(value: np.ndarray, t: Type, what: str) -> None:
    expect = shape_of(t)
    got = value.shape
    if len(expect) != len(got) or any(e is not None and e != g for e, g in zip(expect, got, strict=True)):
        raise fail("type", f"{what} has shape {_dims(got)} but its type says {_dims(expect)}")


def _dims(shape: tuple[Any, ...]) -> str:
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


def dims_text(shape: tuple[Any, ...]) -> str:
    return _dims(shape)


# ---------------------------------------------------------------------- constants


def constant_value(c: FuncCompiler, attr: Attribute, t: Type) -> Any:
    """The run-time value of a constant attribute of type `t`."""
    attr = c.program.attr(attr)  # type: ignore[assignment]
    if isinstance(attr, at.DenseAttr):
        return dense_value(attr, c.type(attr.type), c.vector)
    if isinstance(attr, at.DenseResourceAttr):
        raise CompileError("dense_resource constants carry no data in KTIR text")
    et = element(t)
    if isinstance(t, ty.TensorType):
        return np.full(tuple(d or 0 for d in t.shape), scalar_attr(attr, et, True), dtype=np_dtype(et))
    return scalar_attr(attr, et, c.vector)


def _rounded(value: Any, dt: np.dtype) -> Any:
    """A float literal rounded to `dt`; beyond its range it is an infinity, as MLIR's parser
    makes it (`arith.constant 1.0e10 : f16` is 0x7C00), without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return dt.type(np.float64(value).astype(dt))


def scalar_attr(attr: Attribute | None, t: Type, as_numpy: bool = False) -> Any:
    if isinstance(attr, at.BoolAttr):
        v: Any = attr.value
    elif isinstance(attr, at.IntegerAttr):
        v = attr.value
    elif isinstance(attr, at.FloatAttr):
        if isinstance(t, ty.FloatType):
            dt = np_dtype(t)
            if attr.bits is not None:
                u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
                return np.array([attr.bits], dtype=u).view(dt)[0]
            return _rounded(attr.value, dt)
        v = attr.value
    else:
        raise CompileError(f"cannot use {type(attr).__name__} as a {t} constant")
    if isinstance(t, ty.FloatType):
        return _rounded(v, np_dtype(t))
    if is_int_like(t):
        norm = int_normaliser(t)
        iv = norm(int(v))
        if as_numpy:
            return np_dtype(t).type(iv)
        return iv
    raise CompileError(f"unsupported constant type {t}")


def dense_value(attr: at.DenseAttr, t: Type, vector: bool = False) -> Any:
    if not isinstance(t, ty.TensorType | ty.VectorType):
        raise CompileError("dense constants must have a tensor type")
    et = element(t)
    dt = np_dtype(et)
    shape = tuple(int(d) for d in t.shape if d is not None)
    if len(shape) != len(t.shape):
        raise CompileError("dense constants must have a static shape")
    if attr.hex is not None:
        try:
            raw = bytes.fromhex(attr.hex[2:])
        except ValueError:
            raise CompileError(f"dense hex blob {attr.hex[:24]!r} is not bytes of two hex digits each") from None
        count = int(math.prod(shape)) if shape else 1
        if dt == np.bool_:
            return _bool_blob(raw, count, shape)
        if len(raw) % dt.itemsize:
            raise CompileError(f"dense hex blob has {len(raw)} bytes, not a whole number of {dt.itemsize}-byte elements")
        flat = np.frombuffer(raw, dtype=dt).copy()
        if flat.size == 1:
            return np.full(shape, flat[0], dtype=dt)
        if flat.size != count:
            raise CompileError(f"dense hex blob has {flat.size} elements, the type needs {count}")
        return flat.reshape(shape)
    if attr.is_splat:
        return np.full(shape, _elem(attr.values, et, dt), dtype=dt)
    nested = attr.values
    arr = np.array(_map_nested(nested, lambda x: _elem(x, et, dt)), dtype=object)
    if arr.size == 0 and int(math.prod(shape)) == 0:
        return np.zeros(shape, dtype=dt)
    out = np.empty(arr.shape, dtype=dt)
    out[...] = arr
    if out.shape != shape:
        if out.size == int(math.prod(shape)):
            return out.reshape(shape)
        raise CompileError(f"dense literal has shape {out.shape}, the type says {shape}")
    return out


def _bool_blob(raw: bytes, count: int, shape: tuple[int, ...]) -> np.ndarray:
    """MLIR's hex blob of i1 elements: one bit per element, least significant bit first
    (ceil(count / 8) bytes), or one byte 0x00 / 0xFF for a splat."""
    if len(raw) == 1 and raw[0] in (0x00, 0xFF):
        return np.full(shape, raw[0] != 0, dtype=np.bool_)
    if len(raw) != (count + 7) // 8:
        raise CompileError(f"dense hex blob of i1 has {len(raw)} bytes, the type needs {(count + 7) // 8} (one bit per element)")
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:count]
    return bits.astype(np.bool_).reshape(shape)


def _map_nested(v: Any, fn: Any) -> Any:
    if isinstance(v, tuple):
        return [_map_nested(x, fn) for x in v]
    return fn(v)


def _elem(x: Any, et: Type, dt: np.dtype[Any]) -> Any:
    if isinstance(et, ty.FloatType):
        if isinstance(x, bool):
            x = float(x)
        return dt.type(np.float64(x).astype(dt))
    if isinstance(x, float):
        raise CompileError(f"float literal {x} in an integer dense constant")
    return int_normaliser(et)(int(x))
