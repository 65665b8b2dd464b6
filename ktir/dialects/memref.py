"""The `memref` dialect subset KTIR uses: views, element access and casts."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, Result, constraints


def _alloc(name: str, summary: str) -> OpDef:
    return OpDef(
        name=f"memref.{name}",
        format="EMPTY",
        summary=summary,
        operands=(Operand("dynamic_sizes", "index", variadic=True),),
        results=(Result("memref", "memref"),),
        constraints=constraints("There is one size operand per dynamic dimension of the result."),
    )


OPS: tuple[OpDef, ...] = (
    _alloc("alloc", "Allocate a memref (its contents are uninitialised)."),
    _alloc("alloca", "Allocate a memref on the stack of the executing tile (contents uninitialised)."),
    OpDef(
        name="memref.subview",
        format="SLICE",
        summary="A strided sub-view of a memref.",
        operands=(
            Operand("source", "memref"),
            Operand("offsets", "index", variadic=True),
            Operand("sizes", "index", variadic=True),
            Operand("strides", "index", variadic=True),
        ),
        results=(Result("result", "memref"),),
        attributes=(
            Attr("static_offsets", "DenseI64ArrayAttr"),
            Attr("static_sizes", "DenseI64ArrayAttr"),
            Attr("static_strides", "DenseI64ArrayAttr"),
        ),
        traits=frozenset({"Pure", "AttrSizedOperandSegments"}),
        constraints=constraints(
            "Offsets, sizes and strides have one entry per source dimension.",
            "The number of dynamic operands equals the number of `?` entries.",
            "The slice lies within the source's bounds where they are static.",
        ),
    ),
    OpDef(
        name="memref.cast",
        format="CAST",
        summary="Change static/dynamic shape or layout information of a memref.",
        operands=(Operand("source", "memref"),),
        results=(Result("dest", "memref"),),
        traits=frozenset({"Pure"}),
        constraints=constraints("Source and result have the same element type, rank and memory space."),
    ),
    OpDef(
        name="memref.reinterpret_cast",
        format="REINTERPRET_CAST",
        summary="A view of the source's memory with new offset, sizes and strides.",
        operands=(
            Operand("source", "memref"),
            Operand("offsets", "index", variadic=True),
            Operand("sizes", "index", variadic=True),
            Operand("strides", "index", variadic=True),
        ),
        results=(Result("result", "memref"),),
        attributes=(
            Attr("static_offsets", "DenseI64ArrayAttr"),
            Attr("static_sizes", "DenseI64ArrayAttr"),
            Attr("static_strides", "DenseI64ArrayAttr"),
        ),
        traits=frozenset({"Pure", "AttrSizedOperandSegments"}),
        constraints=constraints(
            "There is exactly one offset, and one size and stride per result dimension.",
            "Source and result have the same element type and memory space.",
        ),
    ),
    OpDef(
        name="memref.load",
        format="EXTRACT",
        summary="Read one element of a memref.",
        operands=(Operand("memref", "memref"), Operand("indices", "index", variadic=True)),
        results=(Result("result", "the element type"),),
        attributes=(Attr("nontemporal", "bool", optional=True),),
        constraints=constraints("There is one index per memref dimension.", "Indices are within bounds."),
    ),
    OpDef(
        name="memref.store",
        format="MEMREF_STORE",
        summary="Write one element of a memref.",
        operands=(Operand("value", "element type"), Operand("memref", "memref"), Operand("indices", "index", variadic=True)),
        attributes=(Attr("nontemporal", "bool", optional=True),),
        constraints=constraints(
            "There is one index per memref dimension.",
            "The value's type is the memref's element type.",
            "Indices are within bounds.",
        ),
    ),
    OpDef(
        name="memref.dim",
        format="DIM",
        summary="The extent of a memref along a dimension.",
        operands=(Operand("source", "memref"), Operand("index", "index")),
        results=(Result("result", "index"),),
        traits=frozenset({"Pure"}),
        constraints=constraints("A constant index is less than the rank."),
    ),
)
