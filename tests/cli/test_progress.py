"""Long commands show what they are doing with the elapsed time on an interactive stderr,
and nothing of it in a pipe."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from ktir.builder import Builder
from ktir.cli import main
from ktir.syntax.printer import print_module

ELAPSED = re.compile(r"\d:\d\d:\d\d")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _spin(path: Path) -> Path:
    """A kernel whose one loop runs for a moment (200,000 trips)."""
    b = Builder()
    with b.func("spin", [], grid=[1]):
        lo, hi, one = b.index(0), b.index(200_000), b.index(1)
        with b.for_(lo, hi, one) as (i,):
            b.arith.addi(i, one)
        b.func_return()
    path.write_text(print_module(b.module))
    return path


@pytest.mark.parametrize("terminal", [True, False])
def test_run_shows_the_step_and_elapsed_time_on_a_terminal_only(terminal: bool, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    code = main(["run", str(_spin(tmp_path / "spin.ktir"))])
    text = err.getvalue()
    assert code == 0
    drawn = "running " in text
    assert bool(ELAPSED.search(text)) == terminal and drawn == terminal, text[:2000]


def test_lower_torch_shows_its_stages_with_the_elapsed_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).eval()
    torch.export.save(torch.export.export(model, (torch.randn(2, 64),)), str(tmp_path / "m.pt2"))
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    assert main(["lower", "torch", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "m.ktir")]) == 0
    text = err.getvalue()
    assert ELAPSED.search(text) and ("reading m.pt2" in text or "lowering to KTIR" in text), text[:2000]
    assert (tmp_path / "m.manifest.json").exists()
