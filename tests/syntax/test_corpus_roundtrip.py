"""Every .ktir/.mlir file in the repository parses, and parse -> print -> parse is a fixpoint.

Files under `invalid_syntax/` directories must instead fail at the position their first
line names (`// error-at: LINE:COL`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ktir

ROOT = Path(__file__).resolve().parents[2]
_SKIP_DIRS = {"site", "build", "node_modules", "ci-artifacts"}


def _all_files() -> list[Path]:
    # hidden directories (.git, .venv, a regeneration's .staging) hold no sources
    files = [p for ext in ("*.ktir", "*.mlir") for p in ROOT.rglob(ext)]
    parts = [p.relative_to(ROOT).parts for p in files]
    return sorted(
        p for p, ps in zip(files, parts, strict=True)
        if not _SKIP_DIRS.intersection(ps) and not any(x.startswith(".") for x in ps)
    )


# tests/verify/invalid holds `// -----`-separated verifier cases, checked by tests/verify
VALID = [p for p in _all_files() if "invalid_syntax" not in p.parts and "invalid" not in p.parts]
INVALID = [p for p in _all_files() if "invalid_syntax" in p.parts]


def _id(p: Path) -> str:
    return str(p.relative_to(ROOT))


def test_corpus_is_not_empty() -> None:
    assert len(VALID) >= 40
    assert len(INVALID) >= 10


@pytest.mark.parametrize("path", VALID, ids=_id)
def test_round_trip(path: Path) -> None:
    source = path.read_text()
    module = ktir.parse(source, str(path))
    text = ktir.print_module(module)
    again = ktir.parse(text, str(path) + " (printed)")
    assert again == module
    assert ktir.print_module(again) == text


@pytest.mark.parametrize("path", INVALID, ids=_id)
def test_invalid_syntax_is_located(path: Path) -> None:
    source = path.read_text()
    m = re.match(r"//\s*error-at:\s*(\d+):(\d+)", source)
    assert m, f"{path} needs a first line '// error-at: LINE:COL'"
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(source, str(path))
    err = info.value
    assert (err.line, err.column) == (int(m.group(1)), int(m.group(2))), err.message
