"""Checks that the specification covers the op registry (used by the tests and usable in CI).

Each function returns a list of problems, empty when all is well.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ktir.dialects.base import OpDef
from ktir.docsgen.pages import op_page
from ktir.docsgen.semantics import DialectText

MIN_WORDS = 5


def semantics_problems(op: OpDef, texts: Mapping[str, DialectText]) -> list[str]:
    """The op has a section in `spec/ops/<dialect>.md` with real text."""
    where = f"spec/ops/{op.dialect}.md"
    if op.dialect not in texts:
        return [f"{where} is missing ({op.name} has no semantics)"]
    text = texts[op.dialect].sections.get(op.name)
    if text is None:
        return [f"{where} has no '## {op.name}' section"]
    if len(text.split()) < MIN_WORDS:
        return [f"{where}: the semantics of {op.name} are too short: {text.strip()!r}"]
    return []


def constraint_problems(op: OpDef, page: str | None = None) -> list[str]:
    """Every constraint has a well-formed, unique ID, text, and an anchor on the op's page."""
    page = page if page is not None else op_page(op, None)
    problems = []
    ids = op.constraint_ids()
    if len(ids) != len(set(ids)):
        problems.append(f"{op.name} has duplicate constraint IDs: {ids}")
    for cid, constraint in zip(ids, op.constraints, strict=True):
        if not re.fullmatch(rf"{re.escape(op.name)}\.C[1-9][0-9]*", cid):
            problems.append(f"{op.name}: malformed constraint ID {cid!r}")
        if not constraint.text.strip():
            problems.append(f"{cid} has no text")
        if f'<a id="{cid}"></a>`{cid}`' not in page:
            problems.append(f"{cid} is not on the page of {op.name}")
    return problems


def unknown_sections(ops: Mapping[str, OpDef], texts: Mapping[str, DialectText]) -> list[str]:
    """Sections naming ops the registry does not define, or defined in another dialect."""
    return [
        f"spec/ops/{d}.md:{t.lines[name]}: '{name}' is not an op of the {d} dialect"
        for d, t in texts.items()
        for name in t.sections
        if name not in ops or ops[name].dialect != d
    ]
