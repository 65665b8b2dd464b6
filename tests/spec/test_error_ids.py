"""Every diagnostic ID the code can raise appears in the spec, and every ID the spec names is
one the code raises (issue 20). The code side is read from the source (an AST scan of the
literal kinds passed to the interpreter's error constructors, the verifier's rule IDs and
warnings), the spec side from spec/ with its generated pages and directives expanded."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ktir.dialects.registry import OPS
from ktir.docsgen import pages
from ktir.verify import STRUCTURAL_RULES, WARNINGS
from reference_interp.errors import KINDS

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec"


def _spec_text() -> str:
    hand = [pages.expand_directives(p.read_text()) for p in sorted(SPEC.rglob("*.md"))]
    return "\n".join(hand + list(pages.generate(SPEC).values()))


def _raised_runtime_kinds() -> set[str]:
    """Kinds passed as literals to fail(), KtirRuntimeError() and CompileError(kind=...)."""
    found: set[str] = set()
    for path in (ROOT / "reference_interp").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in ("fail", "KtirRuntimeError") and node.args and isinstance(node.args[0], ast.Constant):
                found.add(str(node.args[0].value))
            if name == "CompileError":
                kinds = [k.value for k in node.keywords if k.arg == "kind" and isinstance(k.value, ast.Constant)]
                found.update(str(getattr(k, "value", "")) for k in kinds)
                found.add("unsupported")  # CompileError's default kind
    return found


def test_every_runtime_kind_the_interpreter_raises_is_declared_and_every_declared_kind_is_raised() -> None:
    raised = _raised_runtime_kinds()
    assert raised - set(KINDS) == set(), "kinds raised but not declared in reference_interp/errors.py"
    assert set(KINDS) - raised == set(), "kinds declared but never raised"


def test_every_runtime_kind_is_in_the_spec_with_the_rule_that_raises_it() -> None:
    execution = (SPEC / "execution.md").read_text()
    rows = dict(re.findall(r"^\| `runtime\.([a-z-]+)` \| (.+)$", execution, re.MULTILINE))
    assert set(rows) == set(KINDS), f"execution.md tables list {sorted(rows)}"
    for kind, rest in rows.items():
        assert len(rest.strip(" |")) > 20, f"runtime.{kind} needs its condition in execution.md"


def test_every_runtime_id_the_spec_or_the_guides_name_exists() -> None:
    texts = [_spec_text()] + [p.read_text() for p in sorted((ROOT / "docs").rglob("*.md"))]
    named = {m for t in texts for m in re.findall(r"runtime\.([a-z][a-z-]*[a-z])", t)}
    assert named - set(KINDS) == set()


def test_every_verifier_id_is_in_the_spec_and_the_reverse() -> None:
    text = _spec_text()
    constraint_ids = {i for op in OPS.values() for i in op.constraint_ids()}
    expected = constraint_ids | set(STRUCTURAL_RULES) | set(WARNINGS) | {"syntax"}
    missing = sorted(i for i in expected if f"`{i}`" not in text)
    assert not missing, f"IDs missing from the spec: {missing[:20]}"
    # the reverse: every constraint-like ID the spec names is a real one
    named = set(re.findall(r"\b((?:[a-z_]+\.)+C\d+)\b", text))
    assert named - constraint_ids == set()
    verifier_sources = "\n".join(p.read_text() for p in (ROOT / "ktir" / "verify").rglob("*.py"))
    literal = set(re.findall(r'(?:error|emit)\(\s*(?:"(?:error|warning|note)",\s*)?"([a-z_]+\.[a-z_.0-9A-Z]+)"',
                             verifier_sources))
    assert literal - expected == set(), "the verifier reports IDs the spec does not list"


def test_diagnostic_ids_page_expands() -> None:
    page = pages.expand_directives((SPEC / "diagnostics.md").read_text())
    assert "<!-- ktir:" not in page
    for kind in KINDS:
        assert f"`runtime.{kind}`" in page
