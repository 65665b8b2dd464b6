"""Builtin and ktdp attributes."""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import Any, Literal

from pydantic import field_validator

from ktir.ir import types as ty
from ktir.ir.affine import AffineMap, IntegerSet
from ktir.ir.base import Attribute, Type


class UnitAttr(Attribute):
    pass


class BoolAttr(Attribute):
    value: bool


class IntegerAttr(Attribute):
    """`42` or `42 : i32`; `type` is None when the text gave no type."""

    value: int
    type: Type | None = None


class FloatAttr(Attribute):
    """`1.5 : f32`, or a bit pattern `0xFC00 : f16` (kept as `bits` so it prints back)."""

    value: float
    type: Type | None = None
    bits: int | None = None

    def _key(self) -> tuple[object, ...]:
        # NaN equals NaN here: attributes compare by their bits, not IEEE semantics
        return (self.type, self.bits, float.hex(self.value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloatAttr) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class StringAttr(Attribute):
    value: str
    type: Type | None = None


class TypeAttr(Attribute):
    value: Type


class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...]


class DictAttr(Attribute):
    """`{a = 1, b}`: entries sorted by name, as MLIR keeps (and prints) them, so that two
    dictionaries with the same entries are equal however they were written."""

    entries: tuple[tuple[str, Attribute], ...]

    @field_validator("entries")
    @classmethod
    def _sorted(cls, entries: tuple[tuple[str, Attribute], ...]) -> tuple[tuple[str, Attribute], ...]:
        return tuple(sorted(entries, key=itemgetter(0)))

    def get(self, key: str) -> Attribute | None:
        for name, value in self.entries:
            if name == key:
                return value
        return None


class DenseArrayAttr(Attribute):
    """`array<i64: 1, 2, 3>`."""

    element_type: Type
    values: tuple[int | float, ...]




class DenseAttr(Attribute):
    """`dense<...> : tensor<...>`; `values` is a splat scalar, nested tuples, or a hex blob."""

    type: Type
    # a scalar (splat), or nested tuples of scalars (one nesting level per dimension)
    values: Any = None
    hex: str | None = None

    @property
    def is_splat(self) -> bool:
        return self.hex is None and not isinstance(self.values, tuple)

    # Attributes compare by value, and a NaN element (written as a bit pattern) is a value
    # like any other: equal to a NaN of the same bits (IEEE comparison would make a
    # literal holding one unequal to itself, and its hash depend on the object).
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseAttr):
            return False
        if self.type != other.type or self.hex != other.hex:
            return False
        return bool(self.values == other.values) or _same_bits(self.values, other.values)

    def __hash__(self) -> int:
        return hash((self.type, self.hex, _hashable(self.values)))


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and v != v


def _same_bits(a: object, b: object) -> bool:
    """`a == b` for dense values, but NaN equal to a NaN of the same bits."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(x == y or _same_bits(x, y) for x, y in zip(a, b, strict=True))
    return _is_nan(a) and _is_nan(b) and struct.pack("<d", a) == struct.pack("<d", b)  # type: ignore[arg-type]


def _hashable(values: object) -> object:
    """`values` with each NaN replaced by its bits (hash(nan) depends on the object)."""
    if isinstance(values, tuple):
        return tuple(_hashable(v) for v in values) if any(_has_nan(v) for v in values) else values
    return ("nan", struct.pack("<d", values)) if _is_nan(values) else values


def _has_nan(v: object) -> bool:
    if isinstance(v, tuple):
        return any(_has_nan(x) for x in v)
    return _is_nan(v)


class DenseResourceAttr(Attribute):
    """`dense_resource<blob> : tensor<...>`."""

    handle: str
    type: Type


class AffineMapAttr(Attribute):
    value: AffineMap


class IntegerSetAttr(Attribute):
    value: IntegerSet


class StridedLayoutAttr(Attribute):
    """`strided<[s0, s1], offset: o>`; None entries are dynamic (`?`)."""

    strides: tuple[int | None, ...]
    offset: int | None = 0


class SymbolRefAttr(Attribute):
    """`@name` or `@root::@nested`."""

    root: str
    nested: tuple[str, ...] = ()


class MemorySpaceAttr(Attribute):
    """`#ktdp.memory_space<global>` / `<ct_local[, ct_id = N]>`.

    Legacy `#ktdp.spyre_memory_space<HBM|LX[, core = N]>` parses to this with HBM as
    global and LX as ct_local.
    """

    kind: Literal["global", "ct_local"]
    ct_id: int | None = None


class EnumAttr(Attribute):
    """A dialect enum written `#dialect.name<value>` (e.g. `#linalg.iterator_type<parallel>`)."""

    dialect: str
    name: str
    value: str


class DialectAttr(Attribute):
    """An attribute of a dialect we do not model (`#foo.bar<...>`), kept verbatim."""

    dialect: str
    name: str
    body: str | None = None


class AttrAliasRef(Attribute):
    """A use of an attribute alias `#name`; resolved through the module's alias table."""

    name: str


def int_attr(value: int, type: Type | None = None) -> IntegerAttr:
    return IntegerAttr(value=value, type=type)


def array(*elements: Attribute) -> ArrayAttr:
    return ArrayAttr(elements=tuple(elements))


def int_array(values: list[int] | tuple[int, ...]) -> ArrayAttr:
    return ArrayAttr(elements=tuple(IntegerAttr(value=v) for v in values))


def i64_array(values: list[int] | tuple[int, ...]) -> DenseArrayAttr:
    from ktir.ir.types import I64

    return DenseArrayAttr(element_type=I64, values=tuple(values))


def constant_type(value: Attribute) -> Type:
    """The result type of `arith.constant` with this value (`42` alone is i64, `1.0` f64)."""
    if isinstance(value, BoolAttr):
        return ty.I1
    if isinstance(value, IntegerAttr):
        return value.type or ty.I64
    if isinstance(value, FloatAttr):
        return value.type or ty.F64
    if isinstance(value, DenseAttr):
        return value.type
    if isinstance(value, StringAttr) and value.type is not None:
        return value.type
    raise ValueError("arith.constant needs a typed value")
