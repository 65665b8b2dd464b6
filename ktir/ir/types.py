"""Builtin and ktdp types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import field_validator

from ktir.ir.base import Attribute, Type

# `None` in a shape is a dynamic dimension (`?`).
Shape = tuple[int | None, ...]

# MLIR's ShapedType::kDynamic: the entry of a `static_*` array whose value is an SSA operand.
KDYNAMIC = -(2**63)
# shapes, strides, offsets, affine constants and ct_ids are int64 in MLIR
INT64_MAX = 2**63 - 1

FLOAT_KINDS = ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2", "f8E4M3", "f8E5M2FNUZ", "f8E4M3FNUZ", "tf32")
FLOAT_WIDTHS = {
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 19,
    "f8E4M3FN": 8, "f8E5M2": 8, "f8E4M3": 8, "f8E5M2FNUZ": 8, "f8E4M3FNUZ": 8,
}


class IndexType(Type):
    pass


class NoneType(Type):
    pass


class IntegerType(Type):
    width: int
    signedness: Literal["signless", "signed", "unsigned"] = "signless"


class FloatType(Type):
    kind: str

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in FLOAT_WIDTHS:
            raise ValueError(f"unknown float type {kind!r}; KTIR's float types are {', '.join(FLOAT_KINDS)}")
        return kind

    @property
    def width(self) -> int:
        return FLOAT_WIDTHS[self.kind]


class ComplexType(Type):
    element_type: Type


class TensorType(Type):
    shape: Shape
    element_type: Type
    encoding: Attribute | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def has_static_shape(self) -> bool:
        return all(d is not None for d in self.shape)


class UnrankedTensorType(Type):
    element_type: Type


class VectorType(Type):
    shape: tuple[int, ...]
    element_type: Type
    scalable: tuple[bool, ...] = ()


class MemRefType(Type):
    shape: Shape
    element_type: Type
    layout: Attribute | None = None
    memory_space: Attribute | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)


class UnrankedMemRefType(Type):
    element_type: Type
    memory_space: Attribute | None = None


class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]


class TupleType(Type):
    types: tuple[Type, ...]


class AccessTileType(Type):
    """`!ktdp.access_tile<32x64xindex>`: a coordinate set; its element type is always index."""

    shape: Shape

    @property
    def rank(self) -> int:
        return len(self.shape)


class TileFutureType(Type):
    """`!ktdp.tile_future<(T1, ...), groups = affine_set<(g) : ...>>`."""

    partial_types: tuple[Type, ...]
    groups: Attribute  # an IntegerSetAttr, or an alias reference to one


class RuntimeArgType(Type):
    """`!ktdp.runtime_arg<index, granularity = 3, upperbound = 300>`."""

    value_type: Type
    granularity: int | None = None
    upperbound: int | None = None


class DialectType(Type):
    """A type of a dialect we do not model (`!foo.bar<...>`), kept verbatim."""

    dialect: str
    name: str
    body: str | None = None


class TypeAliasRef(Type):
    """A use of a type alias `!name`; resolved through the module's alias table."""

    name: str


def unaliased(t: Type, aliases: Mapping[str, Type]) -> Type:
    """`t` with a type alias reference (`!view`) replaced by the type it names, through
    aliases of aliases; a name `aliases` does not define stays a reference (the verifier
    reports it), and a cycle stops after 64 steps."""
    for _ in range(64):
        if not isinstance(t, TypeAliasRef) or t.name not in aliases:
            break
        t = aliases[t.name]
    return t


def i(width: int) -> IntegerType:
    return IntegerType(width=width)


INDEX = IndexType()
I1 = IntegerType(width=1)
I8 = IntegerType(width=8)
I16 = IntegerType(width=16)
I32 = IntegerType(width=32)
I64 = IntegerType(width=64)
F16 = FloatType(kind="f16")
BF16 = FloatType(kind="bf16")
F32 = FloatType(kind="f32")
F64 = FloatType(kind="f64")
F8E4M3FN = FloatType(kind="f8E4M3FN")
F8E5M2 = FloatType(kind="f8E5M2")


def tensor(shape: Shape, element_type: Type) -> TensorType:
    return TensorType(shape=tuple(shape), element_type=element_type)


def memref(shape: Shape, element_type: Type, memory_space: Attribute | None = None) -> MemRefType:
    return MemRefType(shape=tuple(shape), element_type=element_type, memory_space=memory_space)


def is_float(t: Type) -> bool:
    return isinstance(t, FloatType)


def is_integer_like(t: Type) -> bool:
    return isinstance(t, IntegerType | IndexType)


def i1_like(t: Type) -> Type:
    """i1 with the shape of `t` (the result type of a comparison)."""
    if isinstance(t, TensorType):
        return TensorType(shape=t.shape, element_type=I1, encoding=t.encoding)
    if isinstance(t, VectorType):
        return VectorType(shape=t.shape, element_type=I1)
    return I1


def storage_bits(e: Type) -> int:
    """Bits one element of type `e` takes in memory: tf32 is stored in 32 bits; index and
    anything else in 64."""
    if isinstance(e, FloatType):
        return 32 if e.kind == "tf32" else e.width
    if isinstance(e, IntegerType):
        return e.width
    return 64


def element_type(t: Type) -> Type:
    """The element type of a shaped type, or the type itself for scalars."""
    if isinstance(t, TensorType | MemRefType | VectorType | UnrankedTensorType | UnrankedMemRefType):
        return t.element_type
    return t
