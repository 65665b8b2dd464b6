"""The `func` dialect and `builtin.module`."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, RegionSpec, Result, constraints

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="builtin.module",
        format="MODULE",
        summary="A container of functions.",
        attributes=(Attr("sym_name", "string", optional=True),),
        regions=(RegionSpec("body", "Functions and nested modules."),),
        aliases=("module",),
    ),
    OpDef(
        name="func.func",
        format="FUNC",
        summary="A kernel or function; `grid` gives its SPMD tile grid.",
        attributes=(
            Attr("sym_name", "string"),
            Attr("function_type", "FunctionType"),
            Attr("sym_visibility", "private | public | nested", optional=True),
            Attr("arg_attrs", "array of dictionaries", optional=True),
            Attr("res_attrs", "array of dictionaries", optional=True),
            Attr("grid", "array of positive integers (default [1])", optional=True),
        ),
        regions=(RegionSpec("body", "The function body (absent for declarations).", "the arguments", "func.return"),),
        constraints=constraints(
            "The entry block's arguments match the function type's inputs.",
            "`grid`, when present, is a non-empty array of positive integers.",
            "Every func.return returns values of the function's result types.",
            "Symbol names are unique within the module.",
        ),
    ),
    OpDef(
        name="func.return",
        format="TERMINATOR",
        summary="Return from a function.",
        operands=(Operand("operands", "any", variadic=True),),
        traits=frozenset({"Terminator"}),
        aliases=("return",),
    ),
    OpDef(
        name="func.call",
        format="CALL",
        summary="Call a function of the module.",
        operands=(Operand("operands", "any", variadic=True),),
        results=(Result("results", "any", variadic=True),),
        attributes=(Attr("callee", "FlatSymbolRefAttr"),),
        constraints=constraints(
            "The callee is a function of the module.",
            "Operand and result types match the callee's function type.",
        ),
        aliases=("call",),
    ),
)
