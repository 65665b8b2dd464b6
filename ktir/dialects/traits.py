"""Op traits as objects that code reads: `TERMINATOR in op.traits`.

A trait compares and hashes equal to its name, so the older string spelling
(`"Terminator" in op.traits`) still reads the same set.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class Trait:
    name: str
    doc: str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Trait):
            return self.name == other.name
        if isinstance(other, str):
            return self.name == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __lt__(self, other: object) -> bool:
        return self.name < str(other)

    def __str__(self) -> str:
        return self.name


PURE = Trait("Pure", "No side effects: the op may be removed when unused, or moved.")
ELEMENTWISE = Trait("Elementwise", "Applies independently to each element of its tensor operands.")
SAME_OPERANDS_AND_RESULT_TYPE = Trait(
    "SameOperandsAndResultType", "All operands and the result have the same type."
)
TERMINATOR = Trait("Terminator", "Ends a block; it is the last op of its block.")
ATTR_SIZED_OPERAND_SEGMENTS = Trait(
    "AttrSizedOperandSegments", "The variadic operand groups' sizes are given by `operandSegmentSizes`."
)
DESTINATION_STYLE = Trait("DestinationStyle", "Writes its results into `outs` operands of the same types.")
RECURSIVE_MEMORY_EFFECTS = Trait("RecursiveMemoryEffects", "Its memory effects are those of the ops in its regions.")
CONSTANT_LIKE = Trait("ConstantLike", "Materialises a constant value from an attribute.")
ISOLATED_FROM_ABOVE = Trait("IsolatedFromAbove", "Its regions do not see values defined outside the op.")
VARIADIC_REGIONS = Trait(
    "VariadicRegions", "The number of regions varies (optional bodies, one combiner per operand)."
)

ALL: dict[str, Trait] = {
    t.name: t
    for t in (
        PURE,
        ELEMENTWISE,
        SAME_OPERANDS_AND_RESULT_TYPE,
        TERMINATOR,
        ATTR_SIZED_OPERAND_SEGMENTS,
        DESTINATION_STYLE,
        RECURSIVE_MEMORY_EFFECTS,
        CONSTANT_LIKE,
        ISOLATED_FROM_ABOVE,
        VARIADIC_REGIONS,
    )
}


def trait(name_or_trait: str | Trait) -> Trait:
    """The trait object for a name (the older string spelling); unknown names are an error."""
    if isinstance(name_or_trait, Trait):
        return name_or_trait
    found = ALL.get(name_or_trait)
    if found is None:
        raise ValueError(f"unknown trait {name_or_trait!r}; traits are {', '.join(sorted(ALL))}")
    return found
