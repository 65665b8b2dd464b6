"""Small type predicates and text helpers shared by the rules."""

from __future__ import annotations

from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.base import Type

SHAPED = (ty.TensorType, ty.MemRefType, ty.VectorType)


def elem(t: Type) -> Type:
    return t.element_type if isinstance(t, SHAPED + (ty.UnrankedTensorType, ty.UnrankedMemRefType)) else t


def shape(t: Type) -> tuple[int | None, ...] | None:
    """The shape of a shaped type, () for scalars, None when unranked."""
    if isinstance(t, SHAPED + (ty.AccessTileType,)):
        return tuple(t.shape)
    if isinstance(t, ty.UnrankedTensorType | ty.UnrankedMemRefType):
        return None
    return ()


def is_float(t: Type) -> bool:
    return isinstance(elem(t), ty.FloatType)


def is_signless_int(t: Type) -> bool:
    e = elem(t)
    return isinstance(e, ty.IndexType) or (isinstance(e, ty.IntegerType) and e.signedness == "signless")


def is_index(t: Type) -> bool:
    return isinstance(t, ty.IndexType)


def width(t: Type) -> int | None:
    e = elem(t)
    if isinstance(e, ty.IntegerType | ty.FloatType):
        return e.width
    return None


def shapes_compatible(a: tuple[int | None, ...] | None, b: tuple[int | None, ...] | None) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def same_container(a: Type, b: Type) -> bool:
    """Both scalars, or both tensors (or vectors) of the same shape."""
    if not isinstance(a, SHAPED) and not isinstance(b, SHAPED):
        return True
    return type(a) is type(b) and shape(a) == shape(b)


def t(x: Type) -> str:
    return type_text(x)


def fmt_shape(s: tuple[int | None, ...] | None) -> str:
    if s is None:
        return "*"
    return "x".join("?" if d is None else str(d) for d in s) or "scalar"
