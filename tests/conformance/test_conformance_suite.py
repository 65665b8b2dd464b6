"""The suite's acceptance counts: size, op coverage, constraint coverage, up-to-date files."""

from __future__ import annotations

import tomllib
from collections import Counter

import pytest

import conformance
from conformance.coverage import executing_cases_per_op, markdown
from conformance.model import LEVELS, SUITE_ROOT, Manifest, load_suite
from conformance.regen import write_suite
from conformance.values import read_npz
from ktir.dialects.registry import OPS
from ktir.verify import checked_constraints


@pytest.fixture(scope="module")
def suite() -> tuple[conformance.Case, ...]:
    return tuple(load_suite())


def test_at_least_600_cases_at_every_level(suite: tuple[conformance.Case, ...]) -> None:
    assert len(suite) >= 600
    per_level = Counter(c.level for c in suite)
    assert set(per_level) == set(LEVELS)


def test_every_op_runs_in_at_least_three_cases(suite: tuple[conformance.Case, ...]) -> None:
    counts = executing_cases_per_op(suite)
    assert {op: counts.get(op, 0) for op in OPS if counts.get(op, 0) < 3} == {}


def test_every_constraint_id_has_a_validation_case(suite: tuple[conformance.Case, ...]) -> None:
    diagnosed = {c.diagnostic for c in suite if c.level == "validation"}
    assert set(checked_constraints()) - diagnosed == set()


def test_cases_per_op_is_the_status_table_provider() -> None:
    counts = conformance.cases_per_op()
    assert set(counts) >= set(OPS)
    assert counts["ktdp.load"] > counts["ktdp.inter_tile_scatter"] >= 3


def test_manifests_validate_and_name_existing_files(suite: tuple[conformance.Case, ...]) -> None:
    for level in LEVELS:
        Manifest.model_validate(tomllib.loads((SUITE_ROOT / "manifest" / f"{level}.toml").read_text()))
    for case in suite:
        assert (SUITE_ROOT / case.file).is_file(), case.id
        if case.expect == "run":
            assert case.golden is not None
            golden = read_npz(SUITE_ROOT / case.golden)
            assert {o.name for o in case.outputs} <= set(golden), case.id


def test_coverage_table_has_a_row_per_op(suite: tuple[conformance.Case, ...]) -> None:
    table = markdown(suite)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(OPS)
    row = next(r for r in rows if r.startswith("| `arith.addf`"))
    assert "bf16" in row and "f16" in row


def test_stored_suite_is_what_the_generators_make() -> None:
    from conformance.gen import all_drafts

    changes = write_suite(all_drafts(), check=True)
    assert (changes.added, changes.changed, changes.removed) == ([], [], []), changes.lines()
