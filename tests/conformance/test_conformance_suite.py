"""The suite's acceptance counts: size, op coverage, constraint coverage, up-to-date files."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

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
    from conformance.regen import STALE_ADVICE

    changes = write_suite(all_drafts(), check=True)
    assert (changes.added, changes.changed, changes.removed) == ([], [], []), "\n".join([*changes.lines(), STALE_ADVICE])


def test_regen_reports_what_changed(tmp_path: object) -> None:
    from pathlib import Path

    import numpy as np

    from conformance.gen.core import elementwise_cases
    from conformance.values import write_npz

    root = Path(str(tmp_path))
    drafts = [d for d in elementwise_cases() if d.id.startswith("core.arith.addf.f32")]
    first = write_suite(drafts, root=root)
    assert len(first.added) == 2 * len(drafts) + 6 + 5  # cases + goldens, six manifests, five schemas
    golden = root / "goldens" / "core" / "arith.addf.f32.16.npz"
    arrays = read_npz(golden)
    arrays["y_ptr"] = arrays["y_ptr"].copy()
    arrays["y_ptr"][3] += np.float32(0.5)
    write_npz(golden, arrays)
    (root / "cases" / "core" / "stale.ktir").write_text("// left over\n")
    check = write_suite(drafts, root=root, check=True)
    assert check.changed == ["goldens/core/arith.addf.f32.16.npz (y_ptr: 1 elements, max |diff| 0.5)"]
    assert check.removed == ["cases/core/stale.ktir"] and (root / "cases" / "core" / "stale.ktir").exists()
    write_suite(drafts, root=root)
    assert write_suite(drafts, root=root, check=True).lines()[0].startswith("0 added, 0 changed, 0 removed")


def test_case_count_stated_in_readme_and_guide_is_current() -> None:
    # the docs state a lower bound ("more than N cases"), so generating cases for a new op
    # needs no hand edit here; a bound 500 or more behind the suite is stale all the same
    root = Path(__file__).resolve().parents[2]
    count = len(load_suite())
    for doc in (root / "README.md", root / "docs" / "guides" / "conformance.md"):
        stated = re.findall(r"more than ([\d,]+) cases over six levels", doc.read_text(encoding="utf-8"))
        assert stated, doc
        assert all(0 <= count - int(s.replace(",", "")) < 500 for s in stated), (doc, stated, count)


def test_inputs_are_seeded_by_case_and_argument(suite: tuple[conformance.Case, ...]) -> None:
    # a case's inputs depend on its own id only: adding or removing a generator row leaves
    # every other case's inputs (and golden) alone
    from conformance.gen.models import seed_of
    from conformance.regen import SEEDED

    seeded = [(c.id, a) for c in suite for a in c.args if a.recipe in SEEDED]
    assert len(seeded) >= 1000
    assert [(cid, a.name) for cid, a in seeded if a.seed != seed_of(cid, a.name)] == []
