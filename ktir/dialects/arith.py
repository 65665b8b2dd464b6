"""The `arith` dialect: scalar and elementwise integer and float arithmetic."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, Result, constraints
from ktir.dialects.constraints import (
    ANY,
    FLOAT,
    FLOAT_LIKE,
    I1,
    INT_OR_INDEX_LIKE,
    AnyInteger,
    AnyScalar,
    AttrKind,
    DeclaredOperandTypes,
    Derived,
    ElementCast,
    IndexCast,
    OpConstraint,
    SameBitWidth,
    SameOperandsAndResultType,
    SameShape,
    ScalarOrTensorOf,
    TypeConstraint,
)
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import CONSTANT_LIKE, ELEMENTWISE, PURE, SAME_OPERANDS_AND_RESULT_TYPE

_ELEMENTWISE_TRAITS = frozenset({PURE, ELEMENTWISE, SAME_OPERANDS_AND_RESULT_TYPE})


def _binary(name: str, summary: str, kind: TypeConstraint, accuracy: str = "exact",
            cost: CostClass = CostClass.VECTOR) -> OpDef:
    return OpDef(
        name=f"arith.{name}",
        format="BINARY",
        summary=summary,
        operands=(Operand("lhs", kind), Operand("rhs", kind)),
        results=(Result("result", kind),),
        traits=_ELEMENTWISE_TRAITS,
        constraints=constraints(SameOperandsAndResultType(), DeclaredOperandTypes()),
        accuracy=accuracy,
        cost=cost,
    )


def _cast(name: str, summary: str, src: TypeConstraint, dst: TypeConstraint, rule: OpConstraint,
          accuracy: str = "exact") -> OpDef:
    return OpDef(
        name=f"arith.{name}",
        format="CAST",
        summary=summary,
        operands=(Operand("in", src),),
        results=(Result("out", dst),),
        traits=frozenset({PURE, ELEMENTWISE}),
        constraints=constraints(SameShape(), rule),
        accuracy=accuracy,
        cost=CostClass.VECTOR,
    )


_INT = INT_OR_INDEX_LIKE
_FLOAT = FLOAT_LIKE
_CR = "correctly-rounded"
_ANY_SCALAR = ScalarOrTensorOf(AnyScalar())
_WIDER_FLOAT = ElementCast(FLOAT, FLOAT, "wider")
_NARROWER_FLOAT = ElementCast(FLOAT, FLOAT, "narrower")
_WIDER_INT = ElementCast(AnyInteger(), AnyInteger(), "wider")
_NARROWER_INT = ElementCast(AnyInteger(), AnyInteger(), "narrower")
_INT_TO_FLOAT = ElementCast(AnyInteger(), FLOAT)
_FLOAT_TO_INT = ElementCast(FLOAT, AnyInteger())

_BINARIES = (
    ("addi", "Integer addition, wrapping modulo 2^n.", _INT, "exact"),
    ("subi", "Integer subtraction, wrapping modulo 2^n.", _INT, "exact"),
    ("muli", "Integer multiplication, wrapping modulo 2^n.", _INT, "exact"),
    ("divsi", "Signed integer division, rounding toward zero.", _INT, "exact"),
    ("divui", "Unsigned integer division.", _INT, "exact"),
    ("remsi", "Signed remainder (sign of the dividend).", _INT, "exact"),
    ("remui", "Unsigned remainder.", _INT, "exact"),
    ("ceildivsi", "Signed division rounding toward positive infinity.", _INT, "exact"),
    ("floordivsi", "Signed division rounding toward negative infinity.", _INT, "exact"),
    ("andi", "Bitwise and.", _INT, "exact"),
    ("ori", "Bitwise or.", _INT, "exact"),
    ("xori", "Bitwise exclusive or.", _INT, "exact"),
    ("shli", "Shift left; a shift by the bit width or more yields poison.", _INT, "exact"),
    ("shrsi", "Arithmetic shift right.", _INT, "exact"),
    ("shrui", "Logical shift right.", _INT, "exact"),
    ("minsi", "Signed minimum.", _INT, "exact"),
    ("maxsi", "Signed maximum.", _INT, "exact"),
    ("minui", "Unsigned minimum.", _INT, "exact"),
    ("maxui", "Unsigned maximum.", _INT, "exact"),
    ("addf", "Float addition.", _FLOAT, _CR),
    ("subf", "Float subtraction.", _FLOAT, _CR),
    ("mulf", "Float multiplication.", _FLOAT, _CR),
    ("divf", "Float division.", _FLOAT, _CR, CostClass.TRANSCENDENTAL),
    ("remf", "Float remainder (fmod semantics).", _FLOAT, _CR, CostClass.TRANSCENDENTAL),
    ("minimumf", "Float minimum; NaN if either operand is NaN; -0 < +0.", _FLOAT, "exact"),
    ("maximumf", "Float maximum; NaN if either operand is NaN; -0 < +0.", _FLOAT, "exact"),
    ("minnumf", "Float minimum; returns the other operand when one is NaN.", _FLOAT, "exact"),
    ("maxnumf", "Float maximum; returns the other operand when one is NaN.", _FLOAT, "exact"),
)

_CASTS = (
    ("extf", "Widen a float.", _FLOAT, _FLOAT, _WIDER_FLOAT, "exact"),
    ("truncf", "Narrow a float, rounding to nearest even.", _FLOAT, _FLOAT, _NARROWER_FLOAT, _CR),
    ("extsi", "Sign-extend an integer.", _INT, _INT, _WIDER_INT, "exact"),
    ("extui", "Zero-extend an integer.", _INT, _INT, _WIDER_INT, "exact"),
    ("trunci", "Truncate an integer to its low bits.", _INT, _INT, _NARROWER_INT, "exact"),
    ("sitofp", "Signed integer to float, rounding to nearest even.", _INT, _FLOAT, _INT_TO_FLOAT, _CR),
    ("uitofp", "Unsigned integer to float, rounding to nearest even.", _INT, _FLOAT, _INT_TO_FLOAT, _CR),
    ("fptosi", "Float to signed integer, rounding toward zero.", _FLOAT, _INT, _FLOAT_TO_INT, "exact"),
    ("fptoui", "Float to unsigned integer, rounding toward zero.", _FLOAT, _INT, _FLOAT_TO_INT, "exact"),
    ("index_cast", "Convert between index and an integer type (sign-extending).", _INT, _INT, IndexCast(), "exact"),
    ("index_castui", "Convert between index and an integer type (zero-extending).", _INT, _INT, IndexCast(), "exact"),
    ("bitcast", "Reinterpret the bits as another type of the same width.", _ANY_SCALAR, _ANY_SCALAR, SameBitWidth(), "exact"),
)

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="arith.constant",
        format="CONSTANT",
        summary="A constant scalar or dense tensor.",
        attributes=(Attr("value", AttrKind("typed attribute")),),
        results=(Result("result", Derived("the value's type")),),
        traits=frozenset({PURE, CONSTANT_LIKE}),
        cost=CostClass.FREE,
        constraints=constraints(
            "The result type equals the type of `value`, and `value` is a literal of that type as MLIR reads it: an"
            " integer within the signed or unsigned range of its width (index: signed), no float for an integer type,"
            " a dense list of the type's shape, a hex blob of one element or of all (i1: one bit per element)."
        ),
    ),
    *(_binary(*row) for row in _BINARIES),
    OpDef(
        name="arith.negf",
        format="UNARY",
        summary="Float negation (flips the sign bit).",
        operands=(Operand("operand", _FLOAT),),
        results=(Result("result", _FLOAT),),
        traits=_ELEMENTWISE_TRAITS,
        constraints=constraints(SameOperandsAndResultType(), DeclaredOperandTypes()),
        cost=CostClass.VECTOR,
    ),
    OpDef(
        name="arith.cmpi",
        format="CMP",
        summary="Integer comparison: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge.",
        operands=(Operand("lhs", _INT), Operand("rhs", _INT)),
        results=(Result("result", Derived("the operands' shape", ScalarOrTensorOf(I1))),),
        attributes=(Attr("predicate", AttrKind("integer comparison predicate")),),
        traits=frozenset({PURE, ELEMENTWISE}),
        cost=CostClass.VECTOR,
        constraints=constraints(
            "Both operands have the same type.",
            "The predicate is one of eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge.",
            "The result is i1 with the operands' shape.",
        ),
        options={"predicates": ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")},
    ),
    OpDef(
        name="arith.cmpf",
        format="CMP",
        summary="Float comparison, ordered (o*) or unordered (u*), plus false/true/ord/uno.",
        operands=(Operand("lhs", _FLOAT), Operand("rhs", _FLOAT)),
        results=(Result("result", Derived("the operands' shape", ScalarOrTensorOf(I1))),),
        attributes=(Attr("predicate", AttrKind("float comparison predicate")),),
        traits=frozenset({PURE, ELEMENTWISE}),
        cost=CostClass.VECTOR,
        constraints=constraints(
            "Both operands have the same type.",
            "The predicate is one of false, oeq, ogt, oge, olt, ole, one, ord, ueq, ugt, uge, ult, ule, une, uno, true.",
            "The result is i1 with the operands' shape.",
        ),
        options={
            "predicates": (
                "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
            )
        },
    ),
    OpDef(
        name="arith.select",
        format="SELECT",
        summary="Choose between two values by an i1 condition (scalar or elementwise).",
        operands=(Operand("condition", ScalarOrTensorOf(I1)), Operand("true_value", ANY), Operand("false_value", ANY)),
        results=(Result("result", ANY),),
        traits=frozenset({PURE, ELEMENTWISE}),
        cost=CostClass.VECTOR,
        constraints=constraints(
            "The condition is i1, or a tensor of i1 with the result's shape.",
            "Both values and the result have the same type.",
        ),
    ),
    *(_cast(n, s, a, b, r, acc) for n, s, a, b, r, acc in _CASTS),
)
