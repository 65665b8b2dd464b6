"""The op definition: one declarative record per op, the single source of truth.

Parser dispatch (the op's assembly `format`), printing, verification (numbered
`constraints`), interpreter registration and the docs pages all read these records.
This module knows no text syntax, execution or command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ktir.dialects.constraints import AttrKind, OpConstraint, TypeConstraint
from ktir.dialects.cost import CostClass
from ktir.dialects.structure import Structure
from ktir.dialects.traits import Trait, trait


def _typed(owner: str, name: str, value: object, kind: type) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{owner} {name!r}: type must be a {kind.__name__}, not {value!r}")


@dataclass(frozen=True)
class Operand:
    name: str
    type: TypeConstraint  # what the operand may be; its prose is `type.describe()`
    variadic: bool = False
    optional: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        _typed("operand", self.name, self.type, TypeConstraint)


@dataclass(frozen=True)
class Result:
    name: str
    type: TypeConstraint
    variadic: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        _typed("result", self.name, self.type, TypeConstraint)


@dataclass(frozen=True)
class Attr:
    name: str
    type: AttrKind
    optional: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        _typed("attribute", self.name, self.type, AttrKind)


@dataclass(frozen=True)
class RegionSpec:
    name: str
    doc: str = ""
    # Types of the entry block's arguments, in words.
    arguments: str = ""
    terminator: str = ""


@dataclass(frozen=True)
class Constraint:
    """A numbered rule; its stable ID is `<op name>.<id>` (e.g. `ktdp.load.C1`).

    With `check`, the rule is a typed constraint: the verifier's generic pass checks it under
    this ID and its text is generated from it (any `text` given is replaced). Without, `text`
    is the rule in words and a per-op rule function in `ktir.verify.rules` checks it."""

    id: str
    text: str = ""
    check: OpConstraint | None = None


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
    traits: frozenset[Trait] = frozenset()
    constraints: tuple[Constraint, ...] = ()
    examples: tuple[str, ...] = ()
    # Accuracy class used by the conformance runner: exact, correctly-rounded, "N ulp", ...
    accuracy: str = "exact"
    # Other spellings of the op name accepted on input (`return` for func.return).
    aliases: tuple[str, ...] = ()
    # Format-specific options (see ktir.syntax.printer for their meaning).
    options: dict[str, object] = field(default_factory=dict)
    # The kind of work, read by the cost model; every op declares one (a test checks).
    cost: CostClass | None = None
    # Structured ops: the loop nest they are (`ktir.dialects.structure`: indexing maps, iterator types)
    structure: Structure | None = None

    def __post_init__(self) -> None:
        # traits may be spelled by name; the registry holds the objects
        object.__setattr__(self, "traits", frozenset(trait(t) for t in self.traits))
        # a typed constraint's text is generated from the object, never written by hand
        generated = tuple(
            Constraint(c.id, c.check.describe(self), c.check) if c.check is not None else c for c in self.constraints
        )
        object.__setattr__(self, "constraints", generated)
        object.__setattr__(self, "_checked", tuple(c for c in generated if c.check is not None))

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

    def has_trait(self, t: Trait | str) -> bool:
        return t in self.traits

    def checked_constraints(self) -> tuple[Constraint, ...]:
        """The numbered constraints the verifier's generic pass checks (those with a typed check)."""
        checked: tuple[Constraint, ...] = self._checked  # type: ignore[attr-defined]
        return checked


def constraints(*rules: str | OpConstraint) -> tuple[Constraint, ...]:
    """Number constraints C1, C2, ... in the order written; IDs never get reused.

    A rule is its text in words, or a typed `OpConstraint` that the verifier checks."""
    return tuple(
        Constraint(id=f"C{i}", check=r) if isinstance(r, OpConstraint) else Constraint(id=f"C{i}", text=r)
        for i, r in enumerate(rules, start=1)
    )
