"""Typed constraints of op definitions: what an operand, result or attribute may be, and rules
over a whole op.

Each object generates its prose (`describe()`, read by the docs) and decides (`accepts()` for one
type, `violation()` for an op). Code decides from the objects, never from their prose: rewording
a doc string changes no verdict. A numbered constraint (`Constraint`) linked to an `OpConstraint`
is checked by the verifier's generic pass under the constraint's stable ID (`math.exp.C2`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ktir.ir import types as ty
from ktir.ir.base import Type


class _Declared(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> TypeConstraint: ...


class Signature(Protocol):
    """What a constraint reads of the op definition it checks (a `ktir.dialects.base.OpDef`,
    which imports this module: naming it here would make an import cycle)."""

    @property
    def name(self) -> str: ...
    @property
    def operands(self) -> Sequence[_Declared]: ...

# How a message shows a type; the verifier passes the printer's spelling.
Show = Callable[[Type], str]

_CONTAINERS = (ty.TensorType, ty.UnrankedTensorType, ty.VectorType)
SHAPED = (ty.TensorType, ty.MemRefType, ty.VectorType)


def element(t: Type) -> Type:
    """The element type of a shaped type, the type itself otherwise."""
    if isinstance(t, SHAPED + (ty.UnrankedTensorType, ty.UnrankedMemRefType)):
        return t.element_type
    return t


def bit_width(t: Type) -> int | None:
    e = element(t)
    return e.width if isinstance(e, ty.IntegerType | ty.FloatType) else None


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


# ------------------------------------------------------------------ one type


class TypeConstraint:
    """What one operand or result may be."""

    def describe(self) -> str:
        raise NotImplementedError

    def accepts(self, t: Type) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class AnyType(TypeConstraint):
    def describe(self) -> str:
        return "any"

    def accepts(self, t: Type) -> bool:
        return True


@dataclass(frozen=True)
class AnyFloat(TypeConstraint):
    """A float type; `widths` restricts the bit widths (None: every float type)."""

    widths: tuple[int, ...] | None = None

    def describe(self) -> str:
        if self.widths is None:
            return "float"
        return "float of width " + " or ".join(str(w) for w in self.widths)

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.FloatType) and (self.widths is None or t.width in self.widths)


@dataclass(frozen=True)
class AnyInteger(TypeConstraint):
    """An integer type of any signedness (not `index`)."""

    def describe(self) -> str:
        return "integer"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.IntegerType)


@dataclass(frozen=True)
class SignlessInteger(TypeConstraint):
    """A signless integer type; `widths` restricts the bit widths (None: every width)."""

    widths: tuple[int, ...] | None = None

    def describe(self) -> str:
        if self.widths is not None and len(self.widths) == 1:
            return f"i{self.widths[0]}"
        if self.widths is not None:
            return "signless integer of width " + " or ".join(str(w) for w in self.widths)
        return "signless integer"

    def accepts(self, t: Type) -> bool:
        return (
            isinstance(t, ty.IntegerType)
            and t.signedness == "signless"
            and (self.widths is None or t.width in self.widths)
        )


@dataclass(frozen=True)
class Index(TypeConstraint):
    def describe(self) -> str:
        return "index"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.IndexType)


@dataclass(frozen=True)
class AnyScalar(TypeConstraint):
    """An integer, index or float type."""

    def describe(self) -> str:
        return "scalar"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.IntegerType | ty.IndexType | ty.FloatType)


@dataclass(frozen=True)
class AnyOf(TypeConstraint):
    """One of several constraints."""

    options: tuple[TypeConstraint, ...]

    def describe(self) -> str:
        return " or ".join(o.describe() for o in self.options)

    def accepts(self, t: Type) -> bool:
        return any(o.accepts(t) for o in self.options)


@dataclass(frozen=True)
class ScalarOrTensorOf(TypeConstraint):
    """A scalar of `element`, or a tensor or vector of it (the elementwise ops' operands)."""

    element: TypeConstraint

    def describe(self) -> str:
        return f"{self.element.describe()} (scalar or tensor)"

    def accepts(self, t: Type) -> bool:
        if isinstance(t, _CONTAINERS):
            return self.element.accepts(t.element_type)
        return self.element.accepts(t)


@dataclass(frozen=True)
class RankedTensorOf(TypeConstraint):
    """A ranked tensor, optionally of a given element constraint and rank."""

    element: TypeConstraint = AnyType()
    rank: int | None = None

    def describe(self) -> str:
        rank = f"{self.rank}-D " if self.rank is not None else ""
        of = "" if isinstance(self.element, AnyType) else f" of {self.element.describe()}"
        return f"{rank}ranked tensor{of}"

    def accepts(self, t: Type) -> bool:
        return (
            isinstance(t, ty.TensorType)
            and self.element.accepts(t.element_type)
            and (self.rank is None or t.rank == self.rank)
        )


@dataclass(frozen=True)
class TensorOf(TypeConstraint):
    """A ranked or unranked tensor."""

    element: TypeConstraint = AnyType()

    def describe(self) -> str:
        return "tensor" if isinstance(self.element, AnyType) else f"tensor of {self.element.describe()}"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.TensorType | ty.UnrankedTensorType) and self.element.accepts(t.element_type)


@dataclass(frozen=True)
class MemRefOf(TypeConstraint):
    element: TypeConstraint = AnyType()

    def describe(self) -> str:
        return "memref" if isinstance(self.element, AnyType) else f"memref of {self.element.describe()}"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.MemRefType | ty.UnrankedMemRefType) and self.element.accepts(t.element_type)


@dataclass(frozen=True)
class AccessTile(TypeConstraint):
    def describe(self) -> str:
        return "!ktdp.access_tile"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.AccessTileType)


@dataclass(frozen=True)
class TileFuture(TypeConstraint):
    def describe(self) -> str:
        return "!ktdp.tile_future"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.TileFutureType)


@dataclass(frozen=True)
class RuntimeArg(TypeConstraint):
    def describe(self) -> str:
        return "!ktdp.runtime_arg"

    def accepts(self, t: Type) -> bool:
        return isinstance(t, ty.RuntimeArgType)


@dataclass(frozen=True)
class Derived(TypeConstraint):
    """A type fixed by other parts of the op (`the dest type`): `base` bounds it, and the op's
    numbered constraints check the relation. `relation` is documentation only."""

    relation: str
    base: TypeConstraint = AnyType()

    def describe(self) -> str:
        if isinstance(self.base, AnyType):
            return self.relation
        return f"{self.base.describe()} ({self.relation})"

    def accepts(self, t: Type) -> bool:
        return self.base.accepts(t)


# Spellings used by many ops.
FLOAT = AnyFloat()
INDEX = Index()
I1 = SignlessInteger((1,))
INT_OR_INDEX = AnyOf((SignlessInteger(), Index()))
FLOAT_LIKE = ScalarOrTensorOf(FLOAT)
INT_OR_INDEX_LIKE = ScalarOrTensorOf(INT_OR_INDEX)
SIGNLESS_INT_LIKE = ScalarOrTensorOf(SignlessInteger())
RANKED_TENSOR = RankedTensorOf()
MEMREF = MemRefOf()
ANY = AnyType()


# ------------------------------------------------------------------ attributes


@dataclass(frozen=True)
class AttrKind:
    """What an attribute holds, for the docs and messages. `name` is the kind's spelling
    (`DenseI64ArrayAttr`, `AffineMap`); `values` lists the allowed keywords of an enum;
    `of` is the element kind of an array; `note` qualifies it."""

    name: str
    values: tuple[str, ...] = ()
    of: AttrKind | None = None
    note: str = ""

    def spelling(self) -> str:
        """The kind without its note (what messages show: notes are documentation)."""
        if self.values:
            return " | ".join(self.values)
        if self.of is not None:
            return f"array of {self.of.spelling()}"
        return self.name

    def describe(self) -> str:
        of = f"array of {self.of.describe()}" if self.of is not None and not self.values else self.spelling()
        return f"{of} ({self.note})" if self.note else of

    def __str__(self) -> str:
        return self.describe()


def enum_attr(*values: str) -> AttrKind:
    return AttrKind("enum", values=values)


def array_of(kind: AttrKind, note: str = "") -> AttrKind:
    return AttrKind("array", of=kind, note=note)


DENSE_I64_ARRAY = AttrKind("DenseI64ArrayAttr")
INTEGER_SET = AttrKind("affine_set", note="IntegerSet attribute")
AFFINE_MAP = AttrKind("AffineMap")
STRING = AttrKind("string")
I64 = AttrKind("i64")
BOOL = AttrKind("bool")
UNIT = AttrKind("unit")


# ------------------------------------------------------------------ whole op


class OpConstraint:
    """A rule over one op's operand and result types, checked by the generic verifier pass.

    `violation` returns the diagnostic message, or None when the op satisfies the rule."""

    def describe(self, op: Signature) -> str:
        raise NotImplementedError

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        raise NotImplementedError


@dataclass(frozen=True)
class SameOperandsAndResultType(OpConstraint):
    """All operands and the one result have the same type."""

    def describe(self, op: Signature) -> str:
        return "All operands and the result have the same type."

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        types = [*operands, *results]
        if len(results) == 1 and all(x == types[0] for x in types):
            return None
        return f"operands and result must have the same type, found {', '.join(show(x) for x in types)}"


def _element_of(c: TypeConstraint) -> TypeConstraint:
    return c.element if isinstance(c, ScalarOrTensorOf) else c


@dataclass(frozen=True)
class DeclaredOperandTypes(OpConstraint):
    """Every operand has the type its declaration (`Operand.type`) allows; for elementwise
    ops this is a condition on the element type."""

    def describe(self, op: Signature) -> str:
        kinds = {_element_of(o.type).describe() for o in op.operands}
        if len(kinds) == 1:
            return f"The element type is a {kinds.pop()} type."
        return "Every operand has the type its declaration allows."

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        for declared, t in zip(op.operands, operands, strict=False):
            if not declared.type.accepts(t):
                return f"'{op.name}' needs {_element_of(declared.type).describe()} operands, found {show(t)}"
        return None


def same_container(a: Type, b: Type) -> bool:
    """Both scalars, or both containers of the same kind and shape."""
    if not isinstance(a, SHAPED) and not isinstance(b, SHAPED):
        return True
    return isinstance(a, SHAPED) and type(a) is type(b) and shape(a) == shape(b)


@dataclass(frozen=True)
class SameShape(OpConstraint):
    """The one operand and the one result are both scalars, or containers of the same kind and shape."""

    def describe(self, op: Signature) -> str:
        return "Operand and result have the same shape (both scalars or tensors of equal shape)."

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        a, b = operands[0], results[0]
        if same_container(a, b):
            return None
        return f"operand and result must have the same shape, found {show(a)} and {show(b)}"


@dataclass(frozen=True)
class ElementCast(OpConstraint):
    """A conversion between element types: the operand's element meets `source`, the result's
    `target`, and with `width` the result is `wider` or `narrower` than the operand."""

    source: TypeConstraint
    target: TypeConstraint
    width: str = ""  # "", "wider" or "narrower"

    def describe(self, op: Signature) -> str:
        src, dst = self.source.describe(), self.target.describe()
        if self.width:
            return f"The result {dst} type is {self.width} than the operand's."
        return f"The operand is {_article(src)} {src} and the result {_article(dst)} {dst}."

    def holds(self, a: Type, b: Type) -> bool:
        if not (self.source.accepts(element(a)) and self.target.accepts(element(b))):
            return False
        wa, wb = bit_width(a), bit_width(b)
        if self.width == "wider":
            return wa is not None and wb is not None and wb > wa
        if self.width == "narrower":
            return wa is not None and wb is not None and wb < wa
        return True

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        a, b = operands[0], results[0]
        if self.holds(a, b):
            return None
        return f"{self.describe(op)[:-1]}; found {show(element(a))} to {show(element(b))}"


@dataclass(frozen=True)
class IndexCast(ElementCast):
    """Between `index` and a signless integer: exactly one side is `index`."""

    source: TypeConstraint = INT_OR_INDEX
    target: TypeConstraint = INT_OR_INDEX

    def describe(self, op: Signature) -> str:
        return "Exactly one of operand and result is `index`."

    def holds(self, a: Type, b: Type) -> bool:
        ea, eb = element(a), element(b)
        both = INT_OR_INDEX.accepts(ea) and INT_OR_INDEX.accepts(eb)
        return both and isinstance(ea, ty.IndexType) != isinstance(eb, ty.IndexType)


@dataclass(frozen=True)
class SameBitWidth(ElementCast):
    """Operand and result element types have the same bit width."""

    source: TypeConstraint = AnyScalar()
    target: TypeConstraint = AnyScalar()

    def describe(self, op: Signature) -> str:
        return "Operand and result element types have the same bit width."

    def holds(self, a: Type, b: Type) -> bool:
        return bit_width(a) is not None and bit_width(a) == bit_width(b)


@dataclass(frozen=True)
class OperandIs(OpConstraint):
    """The operand named `operand` meets `constraint`. With `stops=False` the op's other rules
    still run when it is broken (they do not depend on it)."""

    operand: str
    constraint: TypeConstraint
    stops: bool = True

    def describe(self, op: Signature) -> str:
        return f"The {self.operand} is {self.constraint.describe()}."

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        index = next(i for i, o in enumerate(op.operands) if o.name == self.operand)
        t = operands[index]
        if self.constraint.accepts(t):
            return None
        return f"the {self.operand} must be {self.constraint.describe()}, found {show(t)}"


def shape(t: Type) -> tuple[int | None, ...] | None:
    """A shaped type's shape, () for a scalar, None when unranked."""
    if isinstance(t, SHAPED + (ty.AccessTileType,)):
        return tuple(t.shape)
    if isinstance(t, ty.UnrankedTensorType | ty.UnrankedMemRefType):
        return None
    return ()


def shapes_compatible(a: tuple[int | None, ...] | None, b: tuple[int | None, ...] | None) -> bool:
    """Same rank and equal extents where both are static, or one side unranked (None)."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class CompatibleCast(OpConstraint):
    """A shape cast: the one operand and the one result have the same element type and
    compatible shapes (equal where both are static), and with `memory_space` the same memory space."""

    memory_space: bool = False

    def describe(self, op: Signature) -> str:
        if self.memory_space:
            return "Source and result have the same element type, rank and memory space."
        return "Source and result have the same element type and compatible shapes."

    def violation(self, op: Signature, operands: Sequence[Type], results: Sequence[Type], show: Show) -> str | None:
        a, b = operands[0], results[0]
        same_space = getattr(a, "memory_space", None) == getattr(b, "memory_space", None)
        if element(a) == element(b) and shapes_compatible(shape(a), shape(b)) and (same_space or not self.memory_space):
            return None
        what = "element type, rank and memory space" if self.memory_space else "element type and compatible shapes"
        return f"{show(a)} and {show(b)} must have the same {what}"
