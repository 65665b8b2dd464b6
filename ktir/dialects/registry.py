"""The op registry: every op KTIR defines, by name."""

from __future__ import annotations

from ktir.dialects import affine, arith, func, ktdp, linalg, math, memref, scf, tensor
from ktir.dialects.base import OpDef
from ktir.dialects.cost import CostClass

DIALECT_MODULES = (ktdp, arith, math, linalg, tensor, memref, scf, affine, func)


def _build() -> dict[str, OpDef]:
    ops: dict[str, OpDef] = {}
    for module in DIALECT_MODULES:
        for op in module.OPS:
            if op.name in ops:
                raise ValueError(f"op {op.name} defined twice")
            ops[op.name] = op
    return ops


OPS: dict[str, OpDef] = _build()

# Accepted spellings of op names on input, including aliases like `return`.
SPELLINGS: dict[str, OpDef] = {
    **{alias: op for op in OPS.values() for alias in op.aliases},
    **OPS,
}


def lookup(name: str) -> OpDef | None:
    return SPELLINGS.get(name)


def dialects() -> list[str]:
    return sorted({op.dialect for op in OPS.values()})


def cost_class(name: str) -> CostClass | None:
    """The cost class of the op named `name` (any accepted spelling); None for unknown ops."""
    op = SPELLINGS.get(name)
    return op.cost if op is not None else None


def ops_of_cost(*classes: CostClass) -> frozenset[str]:
    """The names of the ops whose cost class is one of `classes`."""
    return frozenset(name for name, op in OPS.items() if op.cost in classes)
