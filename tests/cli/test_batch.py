"""`ktir validate` and `ktir fmt` over many files and directories, with -j processes."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

from ktir import batch
from ktir.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BAD = "func.func @f() {\n  %x = arith.addf %a %b : f32\n}\n"
MESSY = "func.func @f() {\n    return\n}\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """examples/ copied, plus a bad file, a non-canonical one and a hidden directory."""
    root = tmp_path / "kernels"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("*.md", "*.py"))
    (root / "sub").mkdir()
    (root / "sub" / "bad.ktir").write_text(BAD)
    (root / "sub" / "messy.mlir").write_text(MESSY)
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skipped.ktir").write_text(BAD)
    (root / "notes.txt").write_text("not a kernel")
    return root


def test_expand_walks_directories_in_order(tree: Path) -> None:
    files, problems = batch.expand([str(tree / "vector_add.ktir"), str(tree), "-"])
    assert problems == []
    assert files[0] == str(tree / "vector_add.ktir") and files[-1] == "-"
    walked = files[1:-1]
    assert walked == sorted(walked)
    assert str(tree / "sub" / "bad.ktir") in walked and str(tree / "sub" / "messy.mlir") in walked
    assert not any(".hidden" in f or f.endswith(".txt") for f in walked)
    assert len(walked) == len(list(EXAMPLES.glob("*.ktir"))) + 2


def test_validate_a_directory(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tree)]) == 1
    err = capsys.readouterr().err
    assert f"{tree / 'sub' / 'bad.ktir'}:2:22: error[syntax]" in err
    assert f"{tree / 'vector_add.ktir'}: valid" in err
    assert err.index("bad.ktir") < err.index("vector_add.ktir: valid")  # in the order walked


@pytest.mark.parametrize("argv", [["validate"], ["validate", "--format", "json"], ["validate", "--notes"]])
def test_processes_print_what_one_process_prints(tree: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, str(tree)]) == 1
    one = capsys.readouterr()
    assert main([*argv, "-j", "3", str(tree)]) == 1
    three = capsys.readouterr()
    assert (three.out, three.err) == (one.out, one.err)
    assert one.out or one.err


def test_validate_reports_an_empty_directory_and_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["validate", str(tmp_path / "empty"), str(EXAMPLES / "vector_add.ktir")]) == 2
    err = capsys.readouterr().err
    assert "no .ktir or .mlir files" in err and "vector_add.ktir: valid" in err


def test_fmt_check_a_directory(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "sub" / "bad.ktir").unlink()
    assert main(["fmt", "--check", "-j", "2", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "messy.mlir: not in canonical form" in err
    assert "vector_add" not in err


def test_fmt_in_place(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (tree / "vector_add.ktir").read_text()
    assert main(["fmt", "-i", "-q", str(tree)]) == 1  # bad.ktir cannot be formatted
    assert f"{tree / 'sub' / 'bad.ktir'}:2:22: error[syntax]" in capsys.readouterr().err
    assert (tree / "sub" / "bad.ktir").read_text() == BAD  # left as it was
    assert (tree / "sub" / "messy.mlir").read_text() == "func.func @f() {\n  func.return\n}\n"
    assert (tree / "vector_add.ktir").read_text() == before
    (tree / "sub" / "bad.ktir").unlink()
    assert main(["fmt", "--check", "-q", str(tree)]) == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fmt", "DIR"], "use --check, or -i"),
        (["fmt", "A", "A"], "use --check, or -i"),
        (["fmt", "A", "A", "-o", "OUT"], "-o (--output) takes a single FILE"),
        (["fmt", "-i", "-o", "OUT", "A"], "exclude each other"),
        (["fmt", "-i", "-"], "cannot rewrite stdin"),
        (["fmt", "--check", "EMPTY"], "no .ktir or .mlir files"),
        (["validate", "-j", "-1", "A"], "cannot be negative"),
        (["validate", "-j", "many", "A"], "not a number of processes"),
    ],
)
def test_usage_errors_exit_2(tree: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "empty").mkdir()
    names = {"DIR": str(tree), "A": str(tree / "vector_add.ktir"), "OUT": str(tree / "out.ktir"), "EMPTY": str(tree / "empty")}
    assert main([names.get(a, a) for a in argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tree / "out.ktir").exists()


def test_jobs_zero_means_every_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", "-j", "0", str(EXAMPLES / "vector_add.ktir"), str(EXAMPLES / "softmax.ktir")]) == 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_keeps_the_diagnostics(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    files, _ = batch.expand([str(tree)])
    assert len(files) >= batch.PROGRESS_MIN_FILES
    assert main(["validate", str(tree)]) == 1
    shown = terminal.getvalue()
    assert "bad.ktir:2:22: error[syntax]" in shown
    assert "vector_add.ktir: valid" in shown
