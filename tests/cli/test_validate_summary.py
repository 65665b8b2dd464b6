"""`ktir validate`'s one-line verdict says what it could not prove, and how to see it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ktir.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.ktir")))
def test_the_summary_counts_the_notes_that_notes_shows(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / name)
    assert main(["validate", path]) == 0
    summary = capsys.readouterr().err.strip()
    assert main(["validate", "--notes", path]) == 0
    shown = capsys.readouterr().err
    accesses = len(re.findall(r"note\[undecided\]: could not prove the access tile stays inside its view", shown))
    others = len(re.findall(r"note\[", shown)) - accesses
    assert summary.startswith(f"{path}: valid") and "\n" not in summary
    if accesses:
        assert f"{accesses} access{'es' if accesses > 1 else ''} not proven in bounds" in summary, summary
    if others:
        assert f"{others} other propert" in summary, summary
    if accesses or others:
        assert "--notes shows" in summary, summary
        assert shown.strip().endswith("(the notes above)")
    else:
        assert summary == f"{path}: valid"


def test_some_example_has_unproven_accesses() -> None:
    """The test above checks the counted case on the repository's examples: keep one."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        main(["validate", str(EXAMPLES / "softmax.ktir")])
    assert "not proven in bounds" in err.getvalue()
