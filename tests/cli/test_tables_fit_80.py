"""Tables printed into a pipe fit 80 columns and keep every column: text wraps or folds, no
cell is cut short (no ellipsis) and no column is dropped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ktir.cli import main
from ktir.targets import load_target
from ktir.targets.loader import builtin_targets
from ktir.targets.schema import iter_quantities

ROOT = Path(__file__).resolve().parents[2]


def _words(text: str) -> str:
    """Box-drawing and whitespace gone, so wrapped text reads as one line."""
    return " ".join(re.sub(r"[│┃┏┓┗┛┡┩└┘┌┐├┤┼━─┳┻╇┴┬╋]", " ", text).split())


def _printed(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(argv) == 0
    out = capsys.readouterr().out
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert not too_wide, too_wide[:3]
    assert "…" not in out, [line for line in out.splitlines() if "…" in line][:3]
    return out


def test_targets_list_keeps_every_target_and_title(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    flat = _words(_printed(["targets", "list"], capsys, monkeypatch))
    assert flat.startswith("Built-in targets")
    for name in builtin_targets():
        t = load_target(name)
        assert name in flat
        for word in t.title.split():
            assert word in flat, (name, word)
    for label in ("tiles", "interconnect", "clock", "global memory", "local memory", "peak"):
        assert label in flat


@pytest.mark.parametrize("name", builtin_targets())
def test_targets_show_keeps_every_figure_and_its_derivation(name: str, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    flat = _words(_printed(["targets", "show", name], capsys, monkeypatch))
    for path, q in iter_quantities(load_target(name)):
        assert path in flat, path
        if q.note:
            assert " ".join(q.note.split()) in flat, (path, q.note)


def test_run_stats_and_report_keep_every_column(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    out = _printed(["run", str(ROOT / "examples" / "tiled_matmul.ktir"), "--random-inputs", "--arg", "M=512", "--arg",
                    "N=512", "--arg", "K=256", "--target", "spyre", "--stats", "--report"], capsys, monkeypatch)
    flat = _words(out)
    # the per-tile table's two-line headers, then the report's tables
    assert "global global local local scratch tile ops read written read written peak sent received" in flat
    for title in ("estimate", "resource bound", "Busiest resource of each category", "Memory traffic"):
        assert title in flat, title
