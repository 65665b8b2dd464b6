"""Named access to an op's operands, results and attributes, derived from its definition.

`named(op).operand("source")` is the one way to reach an operand by what it means instead of
where it sits. The positions come from the op's `OpDef` the way MLIR's ODS derives them:

- every operand that is neither variadic nor optional takes exactly one position;
- with one variadic or optional operand, it takes what the others leave;
- with several, the op's `operandSegmentSizes` attribute gives each declared operand's
  count, in declaration order (MLIR's `AttrSizedOperandSegments`).

Results follow the same rules (`resultSegmentSizes`). A name the definition does not declare,
or an op whose operands do not fit its definition, raises `AccessError` naming both.

This lives beside the definitions, not in `ktir.ir`: the IR's data structures know no op
definitions (the import-graph test keeps `ktir.ir` from importing `ktir.dialects`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ktir.dialects.base import OpDef, Operand, Result
from ktir.dialects.registry import lookup
from ktir.ir.attributes import DenseArrayAttr
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Operation


class AccessError(ValueError):
    """An op whose operands or results do not fit its definition, or a name it does not declare."""


def _sizes(op: Operation, declared: Sequence[Operand | Result], count: int, segment_attr: str) -> list[int]:
    """How many values each declared operand (or result) of `op` stands for."""
    grouped = [i for i, d in enumerate(declared) if d.variadic or getattr(d, "optional", False)]
    if len(grouped) > 1 or segment_attr in op.attributes:
        seg = op.attributes.get(segment_attr)
        if not isinstance(seg, DenseArrayAttr):
            raise AccessError(f"{op.name} needs {segment_attr} (it has {len(grouped)} variadic or optional groups)")
        sizes = [int(v) for v in seg.values]
        if len(sizes) != len(declared) or sum(sizes) != count or any(s < 0 for s in sizes):
            raise AccessError(f"{op.name}: {segment_attr} {sizes} does not split {count} values into "
                              f"{', '.join(d.name for d in declared)}")
        return sizes
    fixed = len(declared) - len(grouped)
    if not grouped:
        if count != fixed:
            raise AccessError(f"{op.name} has {count} values where its definition declares {fixed}")
        return [1] * fixed
    rest = count - fixed
    only = declared[grouped[0]]
    if rest < 0 or (not only.variadic and rest > 1):
        raise AccessError(f"{op.name} has {count} values, which do not fit {', '.join(d.name for d in declared)}")
    return [rest if i == grouped[0] else 1 for i in range(len(declared))]


def _ranges(op: Operation, declared: Sequence[Operand | Result], count: int, segment_attr: str) -> dict[str, range]:
    out: dict[str, range] = {}
    start = 0
    for d, n in zip(declared, _sizes(op, declared, count, segment_attr), strict=True):
        out[d.name] = range(start, start + n)
        start += n
    return out


@dataclass
class OpView:
    """An operation seen through its definition; build one with `named(op)`."""

    op: Operation
    opdef: OpDef
    _operands: dict[str, range] | None = field(default=None, repr=False)
    _results: dict[str, range] | None = field(default=None, repr=False)

    # ------------------------------------------------------------ operands

    def operand_positions(self, name: str) -> range:
        """Where operand group `name` sits in `op.operands` (empty for an absent optional one)."""
        if self._operands is None:
            self._operands = _ranges(self.op, self.opdef.operands, len(self.op.operands), "operandSegmentSizes")
        found = self._operands.get(name)
        if found is None:
            raise AccessError(f"{self.op.name} declares no operand {name!r} "
                              f"(operands: {', '.join(self._operands) or 'none'})")
        return found

    def operands(self, name: str) -> list[str]:
        """The SSA values of operand group `name` (variadic or optional: any number)."""
        return [self.op.operands[i] for i in self.operand_positions(name)]

    def operand_types(self, name: str) -> list[Type]:
        return [self.op.operand_types[i] for i in self.operand_positions(name)]

    def operand_position(self, name: str) -> int:
        """The position of operand `name`, which the definition declares as exactly one value."""
        where = self.operand_positions(name)
        if any(o.name == name and (o.variadic or o.optional) for o in self.opdef.operands):
            raise AccessError(f"{self.op.name}: operand {name!r} is variadic or optional: use operands({name!r})")
        return where[0]

    def operand(self, name: str) -> str:
        return self.op.operands[self.operand_position(name)]

    def operand_type(self, name: str) -> Type:
        return self.op.operand_types[self.operand_position(name)]

    def has_operand(self, name: str) -> bool:
        """Whether operand `name` (declared by the op) is present: false for an absent optional one."""
        return len(self.operand_positions(name)) > 0

    # ------------------------------------------------------------ results

    def result_positions(self, name: str) -> range:
        # counted by the result types: an op written without result names still has its results
        if self._results is None:
            self._results = _ranges(self.op, self.opdef.results, len(self.op.result_types), "resultSegmentSizes")
        found = self._results.get(name)
        if found is None:
            raise AccessError(f"{self.op.name} declares no result {name!r} "
                              f"(results: {', '.join(self._results) or 'none'})")
        return found

    def results(self, name: str) -> list[str]:
        return [self.op.results[i] for i in self.result_positions(name)]

    def result_types(self, name: str) -> list[Type]:
        return [self.op.result_types[i] for i in self.result_positions(name)]

    def result_position(self, name: str) -> int:
        where = self.result_positions(name)
        if any(r.name == name and r.variadic for r in self.opdef.results):
            raise AccessError(f"{self.op.name}: result {name!r} is variadic: use results({name!r})")
        return where[0]

    def result(self, name: str) -> str:
        return self.op.results[self.result_position(name)]

    def result_type(self, name: str) -> Type:
        return self.op.result_types[self.result_position(name)]

    # ------------------------------------------------------------ attributes

    def attr(self, name: str) -> Attribute | None:
        """Attribute `name` as the op carries it (None when absent); `name` must be declared."""
        if all(a.name != name for a in self.opdef.attributes):
            declared = ", ".join(a.name for a in self.opdef.attributes) or "none"
            raise AccessError(f"{self.op.name} declares no attribute {name!r} (attributes: {declared})")
        return self.op.attributes.get(name)


def named(op: Operation, opdef: OpDef | None = None) -> OpView:
    """`op` seen through its definition (looked up by name unless given)."""
    found = opdef or lookup(op.name)
    if found is None:
        raise AccessError(f"{op.name} has no definition in KTIR's dialects")
    return OpView(op, found)
