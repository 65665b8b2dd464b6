"""Every `tests/verify/invalid/*.ktir` case reports exactly its expected diagnostics, and
every constraint ID of every op (and every structural rule) has a negative test."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktir.dialects.registry import OPS
from ktir.verify import STRUCTURAL_RULES
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


def test_every_rule_has_a_negative_test() -> None:
    covered = {e.id for c in CASES for e in expectations(c) if e.severity == "error"}
    wanted = {i for op in OPS.values() for i in op.constraint_ids()} | set(STRUCTURAL_RULES)
    missing = sorted(wanted - covered - set(UNREACHABLE))
    assert not missing, f"{len(missing)} rule IDs have no negative test: {missing}"
