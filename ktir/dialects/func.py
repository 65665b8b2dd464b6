"""The `func` dialect and `builtin.module`."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, RegionSpec, Result, constraints
from ktir.dialects.constraints import ANY, STRING, AttrKind, array_of, enum_attr
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import ISOLATED_FROM_ABOVE, TERMINATOR

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="builtin.module",
        format="MODULE",
        cost=CostClass.CONTROL,
        summary="A container of functions.",
        attributes=(Attr("sym_name", STRING, optional=True),),
        regions=(RegionSpec("body", "Functions and nested modules."),),
        traits=frozenset({ISOLATED_FROM_ABOVE}),
        aliases=("module",),
    ),
    OpDef(
        name="func.func",
        format="FUNC",
        cost=CostClass.CONTROL,
        summary="A kernel or function; `grid` gives its SPMD tile grid.",
        attributes=(
            Attr("sym_name", STRING),
            Attr("function_type", AttrKind("FunctionType")),
            Attr("sym_visibility", enum_attr("private", "public", "nested"), optional=True),
            Attr("arg_attrs", array_of(AttrKind("dictionaries")), optional=True),
            Attr("res_attrs", array_of(AttrKind("dictionaries")), optional=True),
            Attr("grid", array_of(AttrKind("positive integers"), note="default [1]"), optional=True),
        ),
        regions=(RegionSpec("body", "The function body (absent for declarations).", "the arguments", "func.return"),),
        traits=frozenset({ISOLATED_FROM_ABOVE}),
        constraints=constraints(
            "The entry block's arguments match the function type's inputs.",
            "`grid`, when present, is a non-empty array of positive integers.",
            "Every func.return returns values of the function's result types.",
            "Symbol names are unique within the module.",
            "A function is defined at the top level of the file or of a `builtin.module`, not inside another op.",
        ),
    ),
    OpDef(
        name="func.return",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Return from a function.",
        operands=(Operand("operands", ANY, variadic=True),),
        traits=frozenset({TERMINATOR}),
        aliases=("return",),
    ),
    OpDef(
        name="func.call",
        format="CALL",
        cost=CostClass.CONTROL,
        summary="Call a function of the module.",
        operands=(Operand("operands", ANY, variadic=True),),
        results=(Result("results", ANY, variadic=True),),
        attributes=(Attr("callee", AttrKind("FlatSymbolRefAttr")),),
        constraints=constraints(
            "The callee is a function of the module.",
            "Operand and result types match the callee's function type.",
        ),
        aliases=("call",),
    ),
)
