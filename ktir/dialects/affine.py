"""The `affine` dialect subset: applying affine maps to index values."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, Result, constraints
from ktir.dialects.constraints import AFFINE_MAP, INDEX
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import PURE


def _apply(name: str, summary: str) -> OpDef:
    return OpDef(
        name=f"affine.{name}",
        format="AFFINE_APPLY",
        summary=summary,
        cost=CostClass.FREE,
        operands=(Operand("map_operands", INDEX, variadic=True),),
        results=(Result("result", INDEX),),
        attributes=(Attr("map", AFFINE_MAP),),
        traits=frozenset({PURE}),
        constraints=constraints(
            "The number of operands equals the map's dimensions plus symbols.",
            "The map has exactly one result." if name == "apply" else "The map has at least one result.",
        ),
    )


OPS: tuple[OpDef, ...] = (
    _apply("apply", "Evaluate a one-result affine map on index operands."),
    _apply("min", "The minimum of an affine map's results."),
    _apply("max", "The maximum of an affine map's results."),
)
