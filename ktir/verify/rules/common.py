"""Small type predicates and text helpers shared by the rules."""

from __future__ import annotations

from ktir.dialects.constraints import element as elem
from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.base import Type


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


def t(x: Type) -> str:
    return type_text(x)


def fmt_shape(s: tuple[int | None, ...] | None) -> str:
    if s is None:
        return "*"
    return "x".join("?" if d is None else str(d) for d in s) or "scalar"
