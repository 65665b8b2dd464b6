"""Locations are 1-based (spec/diagnostics.md): no diagnostic is printed at `:0:0`."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktir
from ktir.cli import main
from ktir.syntax.diagnostics import Diagnostic, render

ROOT = Path(__file__).resolve().parents[2]
LEGACY_FUTURE = ROOT / "tests" / "corpus" / "legacy" / "ring_reduce_tile_future_old.ktir"


def test_the_legacy_tile_future_warning_points_at_its_op() -> None:
    module = ktir.parse(LEGACY_FUTURE.read_text(), str(LEGACY_FUTURE))
    result_form = [w for w in module.warnings if "result form" in w.message]
    assert result_form and all(w.line >= 1 and w.column >= 1 for w in module.warnings)
    assert "inter_tile_produce" in LEGACY_FUTURE.read_text().splitlines()[result_form[0].line - 1]


def test_no_warning_of_the_corpus_is_printed_at_0_0(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted((ROOT / "tests" / "corpus").rglob("*.ktir"))
    assert files
    main(["validate", *map(str, files)])
    assert ":0:0:" not in capsys.readouterr().err


def test_a_diagnostic_without_a_position_names_only_the_file() -> None:
    assert render(Diagnostic("warning", "legacy", "m", 0, 0, "k.ktir")) == "k.ktir: warning[legacy]: m"
    assert render(Diagnostic("error", "syntax", "m", 3, 7, "k.ktir")).startswith("k.ktir:3:7: error[syntax]: m")
