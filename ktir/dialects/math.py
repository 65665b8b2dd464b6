"""The `math` dialect: elementwise transcendental and rounding functions."""

from __future__ import annotations

from ktir.dialects.base import OpDef, Operand, Result, constraints
from ktir.dialects.constraints import (
    FLOAT_LIKE,
    SIGNLESS_INT_LIKE,
    DeclaredOperandTypes,
    SameOperandsAndResultType,
    TypeConstraint,
)
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import ELEMENTWISE, PURE, SAME_OPERANDS_AND_RESULT_TYPE

_TR = CostClass.TRANSCENDENTAL
_V = CostClass.VECTOR
_FLOAT = FLOAT_LIKE
_INT = SIGNLESS_INT_LIKE  # math's integer ops take signless integers, not index

# name, arity, operand class, accuracy, cost class, summary
_TABLE: tuple[tuple[str, int, TypeConstraint, str, CostClass, str], ...] = (  # see `Row`
    ("exp", 1, _FLOAT, "1 ulp", _TR, "e raised to the operand."),
    ("exp2", 1, _FLOAT, "1 ulp", _TR, "2 raised to the operand."),
    ("expm1", 1, _FLOAT, "1 ulp", _TR, "exp(x) - 1, accurate near zero."),
    ("log", 1, _FLOAT, "1 ulp", _TR, "Natural logarithm."),
    ("log2", 1, _FLOAT, "1 ulp", _TR, "Base-2 logarithm."),
    ("log10", 1, _FLOAT, "1 ulp", _TR, "Base-10 logarithm."),
    ("log1p", 1, _FLOAT, "1 ulp", _TR, "log(1 + x), accurate near zero."),
    ("sqrt", 1, _FLOAT, "correctly-rounded", _TR, "Square root."),
    ("rsqrt", 1, _FLOAT, "2 ulp", _TR, "Reciprocal square root."),
    ("tanh", 1, _FLOAT, "2 ulp", _TR, "Hyperbolic tangent."),
    ("sin", 1, _FLOAT, "2 ulp", _TR, "Sine (radians)."),
    ("cos", 1, _FLOAT, "2 ulp", _TR, "Cosine (radians)."),
    ("tan", 1, _FLOAT, "2 ulp", _TR, "Tangent (radians)."),
    ("atan", 1, _FLOAT, "2 ulp", _TR, "Arc tangent."),
    ("erf", 1, _FLOAT, "2 ulp", _TR, "Error function."),
    ("absf", 1, _FLOAT, "exact", _V, "Float absolute value."),
    ("ceil", 1, _FLOAT, "exact", _V, "Round toward positive infinity."),
    ("floor", 1, _FLOAT, "exact", _V, "Round toward negative infinity."),
    ("round", 1, _FLOAT, "exact", _V, "Round to nearest, ties away from zero."),
    ("roundeven", 1, _FLOAT, "exact", _V, "Round to nearest, ties to even."),
    ("trunc", 1, _FLOAT, "exact", _V, "Round toward zero."),
    ("absi", 1, _INT, "exact", _V, "Integer absolute value (wrapping at the minimum)."),
    ("ctpop", 1, _INT, "exact", _V, "Population count (number of set bits)."),
    ("atan2", 2, _FLOAT, "2 ulp", _TR, "Arc tangent of lhs/rhs using both signs."),
    ("powf", 2, _FLOAT, "2 ulp", _TR, "lhs raised to rhs."),
    ("copysign", 2, _FLOAT, "exact", _V, "Magnitude of lhs with the sign of rhs."),
    ("fma", 3, _FLOAT, "correctly-rounded", _V, "Fused multiply-add a*b + c with one rounding."),
)

_FORMATS = {1: "UNARY", 2: "BINARY", 3: "TERNARY"}
_NAMES = {1: ("operand",), 2: ("lhs", "rhs"), 3: ("a", "b", "c")}

Row = tuple[str, int, TypeConstraint, str, CostClass, str]


def op_from_row(row: Row) -> OpDef:
    """The definition of one math op from its row of `_TABLE`."""
    name, arity, kind, accuracy, cost, summary = row
    return OpDef(
        name=f"math.{name}",
        format=_FORMATS[arity],
        summary=summary,
        operands=tuple(Operand(n, kind) for n in _NAMES[arity]),
        results=(Result("result", kind),),
        traits=frozenset({PURE, ELEMENTWISE, SAME_OPERANDS_AND_RESULT_TYPE}),
        constraints=constraints(SameOperandsAndResultType(), DeclaredOperandTypes()),
        accuracy=accuracy,
        cost=cost,
    )


OPS: tuple[OpDef, ...] = tuple(op_from_row(row) for row in _TABLE)
