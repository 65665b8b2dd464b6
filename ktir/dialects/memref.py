"""The `memref` dialect subset KTIR uses: views, element access and casts."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, Result, constraints
from ktir.dialects.constraints import BOOL, DENSE_I64_ARRAY, INDEX, MEMREF, AnyScalar, CompatibleCast, Derived
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import ATTR_SIZED_OPERAND_SEGMENTS, PURE


def _alloc(name: str, summary: str) -> OpDef:
    return OpDef(
        name=f"memref.{name}",
        format="EMPTY",
        summary=summary,
        cost=CostClass.FREE,
        operands=(Operand("dynamic_sizes", INDEX, variadic=True),),
        results=(Result("memref", MEMREF),),
        constraints=constraints("There is one size operand per dynamic dimension of the result."),
    )


OPS: tuple[OpDef, ...] = (
    _alloc("alloc", "Allocate a memref (its contents are uninitialised)."),
    _alloc("alloca", "Allocate a memref on the stack of the executing tile (contents uninitialised)."),
    OpDef(
        name="memref.subview",
        format="SLICE",
        cost=CostClass.FREE,
        summary="A strided sub-view of a memref.",
        operands=(
            Operand("source", MEMREF),
            Operand("offsets", INDEX, variadic=True),
            Operand("sizes", INDEX, variadic=True),
            Operand("strides", INDEX, variadic=True),
        ),
        results=(Result("result", MEMREF),),
        attributes=(
            Attr("static_offsets", DENSE_I64_ARRAY),
            Attr("static_sizes", DENSE_I64_ARRAY),
            Attr("static_strides", DENSE_I64_ARRAY),
        ),
        traits=frozenset({PURE, ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "Offsets, sizes and strides have one entry per source dimension.",
            "The number of dynamic operands equals the number of `?` entries.",
            "The slice lies within the source's bounds where they are static.",
        ),
    ),
    OpDef(
        name="memref.cast",
        format="CAST",
        cost=CostClass.FREE,
        summary="Change static/dynamic shape or layout information of a memref.",
        operands=(Operand("source", MEMREF),),
        results=(Result("dest", MEMREF),),
        traits=frozenset({PURE}),
        constraints=constraints(CompatibleCast(memory_space=True)),
    ),
    OpDef(
        name="memref.reinterpret_cast",
        format="REINTERPRET_CAST",
        cost=CostClass.FREE,
        summary="A view of the source's memory with new offset, sizes and strides.",
        operands=(
            Operand("source", MEMREF),
            Operand("offsets", INDEX, variadic=True),
            Operand("sizes", INDEX, variadic=True),
            Operand("strides", INDEX, variadic=True),
        ),
        results=(Result("result", MEMREF),),
        attributes=(
            Attr("static_offsets", DENSE_I64_ARRAY),
            Attr("static_sizes", DENSE_I64_ARRAY),
            Attr("static_strides", DENSE_I64_ARRAY),
        ),
        traits=frozenset({PURE, ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "There is exactly one offset, and one size and stride per result dimension.",
            "Source and result have the same element type and memory space.",
        ),
    ),
    OpDef(
        name="memref.load",
        format="EXTRACT",
        cost=CostClass.DATA_MOVEMENT,
        summary="Read one element of a memref.",
        operands=(Operand("memref", MEMREF), Operand("indices", INDEX, variadic=True)),
        results=(Result("result", Derived("the element type", AnyScalar())),),
        attributes=(Attr("nontemporal", BOOL, optional=True),),
        constraints=constraints("There is one index per memref dimension.", "Indices are within bounds."),
    ),
    OpDef(
        name="memref.store",
        format="MEMREF_STORE",
        cost=CostClass.DATA_MOVEMENT,
        summary="Write one element of a memref.",
        operands=(Operand("value", Derived("the element type", AnyScalar())), Operand("memref", MEMREF), Operand("indices", INDEX, variadic=True)),
        attributes=(Attr("nontemporal", BOOL, optional=True),),
        constraints=constraints(
            "There is one index per memref dimension.",
            "The value's type is the memref's element type.",
            "Indices are within bounds.",
        ),
    ),
    OpDef(
        name="memref.dim",
        format="DIM",
        cost=CostClass.FREE,
        summary="The extent of a memref along a dimension.",
        operands=(Operand("source", MEMREF), Operand("index", INDEX)),
        results=(Result("result", INDEX),),
        traits=frozenset({PURE}),
        constraints=constraints("A constant index is less than the rank."),
    ),
)
