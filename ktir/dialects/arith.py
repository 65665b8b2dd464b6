"""The `arith` dialect: scalar and elementwise integer and float arithmetic."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, Result, constraints


def _binary(name: str, summary: str, kind: str, accuracy: str = "exact") -> OpDef:
    return OpDef(
        name=f"arith.{name}",
        format="BINARY",
        summary=summary,
        operands=(Operand("lhs", kind), Operand("rhs", kind)),
        results=(Result("result", kind),),
        traits=frozenset({"Pure", "Elementwise", "SameOperandsAndResultType"}),
        constraints=constraints(
            "All operands and the result have the same type.",
            f"The element type is a {'float' if kind == _FLOAT else 'signless integer or index'} type.",
        ),
        accuracy=accuracy,
        options={"operand_class": kind},
    )


def _cast(name: str, summary: str, src: str, dst: str, rule: str, accuracy: str = "exact") -> OpDef:
    return OpDef(
        name=f"arith.{name}",
        format="CAST",
        summary=summary,
        operands=(Operand("in", src),),
        results=(Result("out", dst),),
        traits=frozenset({"Pure", "Elementwise"}),
        constraints=constraints(
            "Operand and result have the same shape (both scalars or tensors of equal shape).",
            rule,
        ),
        accuracy=accuracy,
        options={"src_class": src, "dst_class": dst},
    )


_INT = "signless integer or index (scalar or tensor)"
_FLOAT = "float (scalar or tensor)"
_CR = "correctly-rounded"

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
    ("divf", "Float division.", _FLOAT, _CR),
    ("remf", "Float remainder (fmod semantics).", _FLOAT, _CR),
    ("minimumf", "Float minimum; NaN if either operand is NaN; -0 < +0.", _FLOAT, "exact"),
    ("maximumf", "Float maximum; NaN if either operand is NaN; -0 < +0.", _FLOAT, "exact"),
    ("minnumf", "Float minimum; returns the other operand when one is NaN.", _FLOAT, "exact"),
    ("maxnumf", "Float maximum; returns the other operand when one is NaN.", _FLOAT, "exact"),
)

_CASTS = (
    ("extf", "Widen a float.", _FLOAT, _FLOAT, "The result float type is wider than the operand's.", "exact"),
    ("truncf", "Narrow a float, rounding to nearest even.", _FLOAT, _FLOAT, "The result float type is narrower than the operand's.", _CR),
    ("extsi", "Sign-extend an integer.", _INT, _INT, "The result integer type is wider than the operand's.", "exact"),
    ("extui", "Zero-extend an integer.", _INT, _INT, "The result integer type is wider than the operand's.", "exact"),
    ("trunci", "Truncate an integer to its low bits.", _INT, _INT, "The result integer type is narrower than the operand's.", "exact"),
    ("sitofp", "Signed integer to float, rounding to nearest even.", _INT, _FLOAT, "The operand is an integer and the result a float.", _CR),
    ("uitofp", "Unsigned integer to float, rounding to nearest even.", _INT, _FLOAT, "The operand is an integer and the result a float.", _CR),
    ("fptosi", "Float to signed integer, rounding toward zero.", _FLOAT, _INT, "The operand is a float and the result an integer.", "exact"),
    ("fptoui", "Float to unsigned integer, rounding toward zero.", _FLOAT, _INT, "The operand is a float and the result an integer.", "exact"),
    ("index_cast", "Convert between index and an integer type (sign-extending).", _INT, _INT, "Exactly one of operand and result is `index`.", "exact"),
    ("index_castui", "Convert between index and an integer type (zero-extending).", _INT, _INT, "Exactly one of operand and result is `index`.", "exact"),
    ("bitcast", "Reinterpret the bits as another type of the same width.", "any scalar", "any scalar", "Operand and result element types have the same bit width.", "exact"),
)

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="arith.constant",
        format="CONSTANT",
        summary="A constant scalar or dense tensor.",
        attributes=(Attr("value", "typed attribute"),),
        results=(Result("result", "the value's type"),),
        traits=frozenset({"Pure", "ConstantLike"}),
        constraints=constraints("The result type equals the type of `value`."),
    ),
    *(_binary(n, s, k, a) for n, s, k, a in _BINARIES),
    OpDef(
        name="arith.negf",
        format="UNARY",
        summary="Float negation (flips the sign bit).",
        operands=(Operand("operand", _FLOAT),),
        results=(Result("result", _FLOAT),),
        traits=frozenset({"Pure", "Elementwise", "SameOperandsAndResultType"}),
        constraints=constraints(
            "All operands and the result have the same type.",
            "The element type is a float type.",
        ),
        options={"operand_class": _FLOAT},
    ),
    OpDef(
        name="arith.cmpi",
        format="CMP",
        summary="Integer comparison: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge.",
        operands=(Operand("lhs", _INT), Operand("rhs", _INT)),
        results=(Result("result", "i1 (scalar or tensor of the operands' shape)"),),
        attributes=(Attr("predicate", "integer comparison predicate"),),
        traits=frozenset({"Pure", "Elementwise"}),
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
        results=(Result("result", "i1 (scalar or tensor of the operands' shape)"),),
        attributes=(Attr("predicate", "float comparison predicate"),),
        traits=frozenset({"Pure", "Elementwise"}),
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
        operands=(Operand("condition", "i1 or tensor of i1"), Operand("true_value", "any"), Operand("false_value", "any")),
        results=(Result("result", "any"),),
        traits=frozenset({"Pure", "Elementwise"}),
        constraints=constraints(
            "The condition is i1, or a tensor of i1 with the result's shape.",
            "Both values and the result have the same type.",
        ),
    ),
    *(_cast(n, s, a, b, r, acc) for n, s, a, b, r, acc in _CASTS),
)
