"""The specification covers the op registry: every op has semantics text and a page, every
constraint has its ID on the op's page, and every ID the spec mentions exists."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from docs_support import ROOT, SPEC, generated_pages, markdown_files

from ktir.dialects.base import Constraint
from ktir.dialects.registry import OPS
from ktir.docsgen import SPEC_VERSION
from ktir.docsgen.checks import constraint_problems, semantics_problems, unknown_sections
from ktir.docsgen.pages import dialects, nav, op_page_path
from ktir.docsgen.semantics import load_semantics, parse_dialect_text

SEMANTICS = load_semantics(SPEC)
ALL_IDS = {cid for op in OPS.values() for cid in op.constraint_ids()}


@pytest.mark.parametrize("op_name", sorted(OPS))
def test_op_has_semantics_text(op_name: str) -> None:
    assert semantics_problems(OPS[op_name], SEMANTICS) == []


@pytest.mark.parametrize("op_name", sorted(OPS))
def test_op_page_lists_its_constraint_ids(op_name: str) -> None:
    page = generated_pages()[op_page_path(op_name)]
    assert constraint_problems(OPS[op_name], page) == []
    assert "## Semantics" in page and "*No semantics text yet.*" not in page


def test_semantics_sections_name_real_ops() -> None:
    assert unknown_sections(OPS, SEMANTICS) == []


def test_the_checks_catch_missing_text_and_ids() -> None:
    """The checks above would fail for an op without text or a constraint without its ID."""
    load = OPS["ktdp.load"]
    texts = {"ktdp": parse_dialect_text("# ktdp\n\nIntro.\n\n## ktdp.store\n\nStores the data tile.\n", "ktdp")}
    assert semantics_problems(load, texts) == ["spec/ops/ktdp.md has no '## ktdp.load' section"]
    assert semantics_problems(load, {}) != []
    assert unknown_sections({"ktdp.load": load}, texts) != []
    unnumbered = replace(load, constraints=(*load.constraints, Constraint(id="", text="A rule without a number.")))
    assert any("malformed constraint ID" in p for p in constraint_problems(unnumbered))
    page_without_ids = "## Constraints\n\n| ID | Rule |\n"
    assert len(constraint_problems(load, page_without_ids)) == len(load.constraints)


def test_every_dialect_has_an_introduction() -> None:
    for dialect in dialects():
        assert dialect in SEMANTICS, f"spec/ops/{dialect}.md is missing"
        assert SEMANTICS[dialect].title.strip(), f"spec/ops/{dialect}.md has no '# title'"
        assert len(SEMANTICS[dialect].intro.split()) >= 10, f"spec/ops/{dialect}.md needs an introduction"


def test_constraint_ids_mentioned_in_the_spec_exist() -> None:
    # not inside a longer dotted name: a validation case id (validation.scf.for_step.scf.for.C5.a61ba9)
    # holds a constraint ID after its file's name
    pattern = re.compile(
        r"(?<![\w.])((?:ktdp|arith|math|linalg|tensor|memref|scf|affine|func|builtin)\.[a-z_.0-9]+\.C[0-9]+)\b"
    )
    stale = []
    for path in markdown_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
            stale += [f"{path.relative_to(ROOT)}:{number}: {m}" for m in pattern.findall(line) if m not in ALL_IDS]
    assert not stale, "constraint IDs that the registry does not define:\n" + "\n".join(stale)


def _nav_pages(entries: object) -> set[str]:
    if isinstance(entries, str):
        return {entries}
    if isinstance(entries, dict):
        return set().union(*(_nav_pages(v) for v in entries.values()))
    if isinstance(entries, list):
        return set().union(*(_nav_pages(v) for v in entries))
    return set()


def test_every_op_has_a_page_a_nav_entry_and_a_status_row() -> None:
    pages = generated_pages()
    in_nav = _nav_pages(nav())
    status = pages["status.md"]
    for name in OPS:
        assert op_page_path(name) in pages
        assert op_page_path(name) in in_nav, f"{name} is missing from the nav"
        assert f"[`{name}`]({op_page_path(name)})" in status, f"{name} is missing from the status table"


def test_spec_states_its_version() -> None:
    assert f"Version {SPEC_VERSION}" in (SPEC / "index.md").read_text(encoding="utf-8")
    assert f"| {SPEC_VERSION} |" in (SPEC / "versioning.md").read_text(encoding="utf-8")
