"""The `math` dialect: elementwise transcendental and rounding functions."""

from __future__ import annotations

from ktir.dialects.base import OpDef, Operand, Result, constraints

_FLOAT = "float (scalar or tensor)"
_INT = "signless integer (scalar or tensor)"

# name, arity, operand class, accuracy, summary
_TABLE = (
    ("exp", 1, _FLOAT, "1 ulp", "e raised to the operand."),
    ("exp2", 1, _FLOAT, "1 ulp", "2 raised to the operand."),
    ("expm1", 1, _FLOAT, "1 ulp", "exp(x) - 1, accurate near zero."),
    ("log", 1, _FLOAT, "1 ulp", "Natural logarithm."),
    ("log2", 1, _FLOAT, "1 ulp", "Base-2 logarithm."),
    ("log10", 1, _FLOAT, "1 ulp", "Base-10 logarithm."),
    ("log1p", 1, _FLOAT, "1 ulp", "log(1 + x), accurate near zero."),
    ("sqrt", 1, _FLOAT, "correctly-rounded", "Square root."),
    ("rsqrt", 1, _FLOAT, "2 ulp", "Reciprocal square root."),
    ("tanh", 1, _FLOAT, "2 ulp", "Hyperbolic tangent."),
    ("sin", 1, _FLOAT, "2 ulp", "Sine (radians)."),
    ("cos", 1, _FLOAT, "2 ulp", "Cosine (radians)."),
    ("tan", 1, _FLOAT, "2 ulp", "Tangent (radians)."),
    ("atan", 1, _FLOAT, "2 ulp", "Arc tangent."),
    ("erf", 1, _FLOAT, "2 ulp", "Error function."),
    ("absf", 1, _FLOAT, "exact", "Float absolute value."),
    ("ceil", 1, _FLOAT, "exact", "Round toward positive infinity."),
    ("floor", 1, _FLOAT, "exact", "Round toward negative infinity."),
    ("round", 1, _FLOAT, "exact", "Round to nearest, ties away from zero."),
    ("roundeven", 1, _FLOAT, "exact", "Round to nearest, ties to even."),
    ("trunc", 1, _FLOAT, "exact", "Round toward zero."),
    ("absi", 1, _INT, "exact", "Integer absolute value (wrapping at the minimum)."),
    ("ctpop", 1, _INT, "exact", "Population count (number of set bits)."),
    ("atan2", 2, _FLOAT, "2 ulp", "Arc tangent of lhs/rhs using both signs."),
    ("powf", 2, _FLOAT, "2 ulp", "lhs raised to rhs."),
    ("copysign", 2, _FLOAT, "exact", "Magnitude of lhs with the sign of rhs."),
    ("fma", 3, _FLOAT, "correctly-rounded", "Fused multiply-add a*b + c with one rounding."),
)

_FORMATS = {1: "UNARY", 2: "BINARY", 3: "TERNARY"}
_NAMES = {1: ("operand",), 2: ("lhs", "rhs"), 3: ("a", "b", "c")}

OPS: tuple[OpDef, ...] = tuple(
    OpDef(
        name=f"math.{name}",
        format=_FORMATS[arity],
        summary=summary,
        operands=tuple(Operand(n, kind) for n in _NAMES[arity]),
        results=(Result("result", kind),),
        traits=frozenset({"Pure", "Elementwise", "SameOperandsAndResultType"}),
        constraints=constraints(
            "All operands and the result have the same type.",
            f"The element type is a {'float' if kind == _FLOAT else 'signless integer'} type.",
        ),
        accuracy=accuracy,
        options={"operand_class": kind},
    )
    for name, arity, kind, accuracy, summary in _TABLE
)
