"""The op definition: one declarative record per op, the single source of truth.

Parser dispatch (the op's assembly `format`), printing, verification (numbered
`constraints`), interpreter registration and the docs pages all read these records.
This module knows no text syntax, execution or command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Operand:
    name: str
    type: str  # a type constraint, in words ("index", "ranked tensor", "any float")
    variadic: bool = False
    optional: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Result:
    name: str
    type: str
    variadic: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Attr:
    name: str
    type: str
    optional: bool = False
    doc: str = ""


@dataclass(frozen=True)
class RegionSpec:
    name: str
    doc: str = ""
    # Types of the entry block's arguments, in words.
    arguments: str = ""
    terminator: str = ""


@dataclass(frozen=True)
class Constraint:
    """A numbered rule; its stable ID is `<op name>.<id>` (e.g. `ktdp.load.C1`)."""

    id: str
    text: str


@dataclass(frozen=True)
class OpDef:
    name: str
    format: str  # assembly format: the grammar's op-name terminal is OP_<format>
    summary: str
    description: str = ""
    operands: tuple[Operand, ...] = ()
    results: tuple[Result, ...] = ()
    attributes: tuple[Attr, ...] = ()
    regions: tuple[RegionSpec, ...] = ()
    traits: frozenset[str] = frozenset()
    constraints: tuple[Constraint, ...] = ()
    examples: tuple[str, ...] = ()
    # Accuracy class used by the conformance runner: exact, correctly-rounded, "N ulp", ...
    accuracy: str = "exact"
    # Other spellings of the op name accepted on input (`return` for func.return).
    aliases: tuple[str, ...] = ()
    # Format-specific options (see ktir.syntax.printer for their meaning).
    options: dict[str, object] = field(default_factory=dict)

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def mnemonic(self) -> str:
        return self.name.split(".", 1)[1]

    def constraint_ids(self) -> list[str]:
        return [f"{self.name}.{c.id}" for c in self.constraints]

    def option(self, key: str, default: object = None) -> object:
        return self.options.get(key, default)


def constraints(*texts: str) -> tuple[Constraint, ...]:
    """Number constraints C1, C2, ... in the order written; IDs never get reused."""
    return tuple(Constraint(id=f"C{i}", text=t) for i, t in enumerate(texts, start=1))
