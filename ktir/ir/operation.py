"""Operations, blocks, regions and modules: MLIR's generic structure.

Every op, whatever text form it was written in, is an `Operation` with a name,
operands (SSA names) and their types, results and their types, attributes and regions.
Source locations ride along for diagnostics but do not take part in equality.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from ktir.ir.base import Attribute, Type, trusted


class Location(NamedTuple):
    """Where an op or block starts in its source text (1-based)."""

    line: int
    column: int
    file: str | None = None


_new_tuple = tuple.__new__


def new_location(line: int, column: int) -> Location:
    """Location(line, column), at a fraction of the NamedTuple constructor's cost (the
    parser makes one per op)."""
    return _new_tuple(Location, (line, column, None))  # type: ignore[no-any-return]


# Fields that ride along for people (positions, comments) and take no part in equality.
_METADATA = frozenset({"loc", "comments", "trailing_comment"})


# Fields holding lists of nodes: equality walks them with an explicit stack, so that
# comparing deeply nested regions costs no Python recursion (a recursive comparison takes
# about a dozen frames per level of regions).
_NESTED = frozenset({"regions", "blocks", "operations"})


class _Node(BaseModel):
    """Structural equality over fields, ignoring source positions and comments."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def _key(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in _METADATA}

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return False
        stack: list[tuple[Any, Any]] = [(self, other)]
        while stack:
            a, b = stack.pop()
            if type(a) is not type(b):
                return False
            ka, kb = a._key(), b._key()
            if ka.keys() != kb.keys():
                return False
            for name, x in ka.items():
                y = kb[name]
                if name in _NESTED:
                    if len(x) != len(y):
                        return False
                    stack.extend(zip(x, y, strict=True))
                elif x != y:
                    return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        """A copy of the node tree (what `copy.deepcopy` and `model_copy(deep=True)` give):
        fresh nodes, lists and dicts, the frozen types and attributes shared. Pydantic's
        generic deep copy costs about twenty frames per level of regions."""
        fields: dict[str, Any] = {}
        for name, value in self.__dict__.items():
            if isinstance(value, list):
                fields[name] = [x.__deepcopy__(memo) if isinstance(x, _Node) else x for x in value]
            elif isinstance(value, dict):
                fields[name] = {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
            else:
                fields[name] = value
        return trusted(type(self), fields, set(self.__pydantic_fields_set__))


class BlockArgument(_Node):
    name: str
    type: Type
    loc: Location | None = Field(default=None, repr=False)


class Block(_Node):
    label: str | None = None
    arguments: list[BlockArgument] = Field(default_factory=list)
    operations: list[Operation] = Field(default_factory=list)
    loc: Location | None = Field(default=None, repr=False)


class Region(_Node):
    blocks: list[Block] = Field(default_factory=list)

    @property
    def entry(self) -> Block:
        return self.blocks[0]


class Operation(_Node):
    name: str
    operands: list[str] = Field(default_factory=list)
    operand_types: list[Type] = Field(default_factory=list)
    # Result value names, flattened: `%r:2 = ...` gives `%r#0`, `%r#1`.
    results: list[str] = Field(default_factory=list)
    result_types: list[Type] = Field(default_factory=list)
    attributes: dict[str, Attribute] = Field(default_factory=dict)
    # MLIR's `<{...}>` properties of ops KTIR does not define (kept apart to print back).
    properties: dict[str, Attribute] | None = None
    regions: list[Region] = Field(default_factory=list)
    successors: list[str] = Field(default_factory=list)
    loc: Location | None = Field(default=None, repr=False)
    # `//` comment lines written before the op, and one written after it on its line
    comments: list[str] = Field(default_factory=list, repr=False)
    trailing_comment: str | None = Field(default=None, repr=False)

    def walk(self) -> Iterator[Operation]:
        """This op and every op nested in its regions, in pre-order."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in block.operations:
                    yield from op.walk()

    def attr(self, name: str) -> Attribute | None:
        return self.attributes.get(name)


class Module(_Node):
    """A parsed file: alias definitions, then top-level ops (often one builtin.module)."""

    attr_aliases: dict[str, Attribute] = Field(default_factory=dict)
    type_aliases: dict[str, Type] = Field(default_factory=dict)
    operations: list[Operation] = Field(default_factory=list)
    filename: str | None = Field(default=None, repr=False)
    # Warnings found while parsing (legacy spellings); not part of equality.
    warnings: list[Any] = Field(default_factory=list, repr=False)
    # Comments before each alias definition (by alias name, `#x` / `!t`) and at the end.
    alias_comments: dict[str, list[str]] = Field(default_factory=dict, repr=False)
    # Definition order of the aliases as written (`#a`, `!t`); the printer keeps it.
    alias_order: list[str] = Field(default_factory=list, repr=False)
    trailing_comments: list[str] = Field(default_factory=list, repr=False)

    def _key(self) -> dict[str, Any]:
        return {
            "attr_aliases": self.attr_aliases,
            "type_aliases": self.type_aliases,
            "operations": self.operations,
        }

    def walk(self) -> Iterator[Operation]:
        for op in self.operations:
            yield from op.walk()

    def functions(self) -> list[Operation]:
        return [op for op in self.walk() if op.name == "func.func"]

    def function(self, name: str) -> Operation:
        for fn in self.functions():
            sym = fn.attributes.get("sym_name")
            if sym is not None and getattr(sym, "value", None) == name:
                return fn
        raise KeyError(name)


Block.model_rebuild()
Region.model_rebuild()
Operation.model_rebuild()


_OPERATION_FIELDS = set(Operation.model_fields)
_BLOCK_FIELDS = set(Block.model_fields)
_ARGUMENT_FIELDS = set(BlockArgument.model_fields)


def trusted_block(operations: list[Operation], arguments: list[BlockArgument], label: str | None, loc: Location | None) -> Block:
    """A Block from fields already of the right types, without validation (see
    trusted_operation; the caller owns the lists)."""
    return trusted(Block, {"label": label, "arguments": arguments, "operations": operations, "loc": loc}, _BLOCK_FIELDS)


def trusted_region(blocks: list[Block]) -> Region:
    """A Region of `blocks` (owned by it), without validation."""
    return trusted(Region, {"blocks": blocks})


def trusted_argument(name: str, type_: Type, loc: Location | None = None) -> BlockArgument:
    """A BlockArgument without validation."""
    return trusted(BlockArgument, {"name": name, "type": type_, "loc": loc}, _ARGUMENT_FIELDS)


def trusted_operation(
    name: str,
    operands: list[str],
    operand_types: list[Type],
    results: list[str],
    result_types: list[Type],
    attributes: dict[str, Attribute],
    properties: dict[str, Attribute] | None,
    regions: list[Region],
    successors: list[str],
    loc: Location | None,
) -> Operation:
    """An Operation from fields already of the right types, without validation.

    What `Operation.model_construct` with every field gives (the same `__dict__`, fields
    set and pydantic slots), at a quarter of its cost: the parser builds one per op.
    The caller owns the lists and dicts it passes (they are not copied)."""
    return trusted(
        Operation,
        {
            "name": name,
            "operands": operands,
            "operand_types": operand_types,
            "results": results,
            "result_types": result_types,
            "attributes": attributes,
            "properties": properties,
            "regions": regions,
            "successors": successors,
            "loc": loc,
            "comments": [],
            "trailing_comment": None,
        },
        _OPERATION_FIELDS,
    )
