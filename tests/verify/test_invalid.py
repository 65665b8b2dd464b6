"""Every `tests/verify/invalid/*.ktir` case reports exactly its expected diagnostics, and
every constraint ID of every op (and every structural rule) has a negative test."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktir.dialects.registry import OPS
from ktir.dialects.traits import TERMINATOR
from ktir.verify import STRUCTURAL_RULES, validate_text
from tests.verify.generated import NegativeCase, negative_cases
from tests.verify.harness import all_cases, check_case, expectations

INVALID = Path(__file__).parent / "invalid"
CASES = all_cases(INVALID)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case(case) -> None:  # type: ignore[no-untyped-def]
    problems = check_case(case)
    assert not problems, "\n".join(problems)


# Rules that no text can violate (the parser already enforces them) are listed here with why.
UNREACHABLE = {
    "op.unknown": "a warning, not an error; covered in test_validate",
}


GENERATED = [case for op in OPS.values() for case in negative_cases(op)]


@pytest.mark.parametrize("case", GENERATED, ids=lambda c: c.expected)
def test_generated_negative_case(case: NegativeCase) -> None:
    _, diagnostics = validate_text(case.text, f"{case.op}.ktir")
    errors = [d.id for d in diagnostics if d.severity == "error"]
    assert errors == [case.expected], case.text


def test_every_typed_constraint_has_a_generated_negative_test() -> None:
    """Of ops the generator can build alone (no variadic groups, no regions: scf.if and
    scf.condition keep their written tests)."""
    simple = [op for op in OPS.values() if not op.regions and not op.traits & {TERMINATOR}
              and not any(x.variadic for x in (*op.operands, *op.results))]
    typed = {f"{op.name}.{c.id}" for op in simple for c in op.checked_constraints()}
    assert len(typed) >= 138 and typed <= {c.expected for c in GENERATED}


def test_every_rule_has_a_negative_test() -> None:
    covered = {e.id for c in CASES for e in expectations(c) if e.severity == "error"}
    covered |= {c.expected for op in OPS.values() for c in negative_cases(op)}
    wanted = {i for op in OPS.values() for i in op.constraint_ids()} | set(STRUCTURAL_RULES)
    missing = sorted(wanted - covered - set(UNREACHABLE))
    assert not missing, f"{len(missing)} rule IDs have no negative test: {missing}"
