"""`ktir --version` names the library and the specification version the spec states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ktir
from ktir.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_spec_version_matches_the_spec() -> None:
    text = (ROOT / "spec" / "versioning.md").read_text(encoding="utf-8")
    stated = re.search(r"this is version \*\*([0-9.]+)\*\*", text)
    assert stated is not None
    assert stated.group(1) == ktir.SPEC_VERSION


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"ktir {ktir.__version__} (KTIR specification {ktir.SPEC_VERSION})"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", ktir.__version__)
