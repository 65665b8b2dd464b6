"""`ktir fmt`: canonical output, --check, atomic output, clean errors and exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ktir.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "vector_add.ktir"


def test_fmt_prints_canonical_text(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["fmt", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// Vector add over a grid of 4 compute tiles")  # comments are kept
    assert "\n#vec = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>\n" in out
    assert "\n  // this tile's first block starts at tile * 65536; the next is 4 blocks further\n  %first = " in out
    assert "func.func @vector_add(%A: index, %B: index, %C: index, %N: index) attributes {grid = [4]} {" in out


def test_fmt_output_file_and_check(tmp_path: Path) -> None:
    out = tmp_path / "canon.ktir"
    assert main(["fmt", str(EXAMPLE), "-o", str(out)]) == 0
    assert main(["fmt", str(out), "--check"]) == 0
    messy = tmp_path / "messy.ktir"
    messy.write_text("func.func @f() {\n    return\n}\n")  # `return`, four-space indent
    assert main(["fmt", str(messy), "--check"]) == 1


def test_examples_are_canonical() -> None:
    for path in sorted(EXAMPLE.parent.glob("*.ktir")):
        assert main(["fmt", "-q", str(path), "--check"]) == 0, path


def test_bad_input_leaves_previous_output_intact(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.ktir"
    bad.write_text("func.func @f() {\n  %x = arith.addf %a %b : f32\n}\n")
    out = tmp_path / "out.ktir"
    out.write_text("previous\n")
    assert main(["fmt", str(bad), "-o", str(out)]) == 1
    assert out.read_text() == "previous\n"
    assert list(tmp_path.iterdir()) == [bad, out] or sorted(tmp_path.iterdir()) == sorted([bad, out])
    err = capsys.readouterr().err
    assert f"{bad}:2:22: error[syntax]: unexpected '%b'; expected ','" in err
    assert "  %x = arith.addf %a %b : f32\n" in err
    assert "\n                       ^" in err


def test_bad_input_writes_no_new_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ktir"
    bad.write_text("func.func @f( {")
    out = tmp_path / "new.ktir"
    assert main(["fmt", str(bad), "-o", str(out)]) == 1
    assert not out.exists()


def test_usage_and_io_errors_exit_2(tmp_path: Path) -> None:
    assert main(["fmt", str(tmp_path / "missing.ktir")]) == 2
    assert main(["fmt"]) == 2
    assert main(["nonsense"]) == 2


def test_console_script_never_prints_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ktir"
    bad.write_bytes(b'func.func @f() attributes {s = "\xff\xfe} {')
    proc = subprocess.run(
        [sys.executable, "-m", "ktir.cli", "fmt", str(bad)], capture_output=True, text=True, check=False
    )
    assert proc.returncode in (1, 2)
    assert "Traceback" not in proc.stderr


def test_stdin(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("func.func @f() { return }"))
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == "func.func @f() {\n  func.return\n}\n"
