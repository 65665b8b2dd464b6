"""The op registry: every op KTIR defines, by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet

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


class OpsOfCost(AbstractSet[str]):
    """The names of the ops whose cost class is one of `classes`, read from the registry at
    each use (so an op added to the registry is seen): `name in TRANSCENDENTAL`. `also` and
    `but_not` add or remove single op names."""

    def __init__(self, *classes: CostClass, also: Iterable[str] = (), but_not: Iterable[str] = ()) -> None:
        self.classes = frozenset(classes)
        self.also = frozenset(also)
        self.but_not = frozenset(but_not)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or name in self.but_not:
            return False
        return name in self.also or cost_class(name) in self.classes

    def __iter__(self) -> Iterator[str]:
        names = [n for n, op in OPS.items() if op.cost in self.classes or n in self.also]
        names += sorted(self.also - set(OPS))
        return iter(n for n in names if n in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __hash__(self) -> int:
        return hash((self.classes, self.also, self.but_not))


def ops_of_cost(*classes: CostClass) -> frozenset[str]:
    """The names of the ops whose cost class is one of `classes`, now."""
    return frozenset(name for name, op in OPS.items() if op.cost in classes)


def contractions() -> dict[str, str]:
    """Every named contraction (`linalg.matmul`, ...) and its einsum letters per operand
    (`"mk,kn->mn"`), as its definition declares them (`OpDef.structure`): the one place the
    verifier, the interpreter, the MLIR generic form and the schedulers read them from."""
    return {
        name: op.structure.einsum
        for name, op in OPS.items()
        if op.structure is not None and op.structure.kind == "contraction"
    }
