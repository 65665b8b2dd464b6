"""The plainest malformed or unusual files: empty, comments only, CRLF, a byte order mark,
look-alike characters pasted from documents, tabs, long lines, unicode strings, no final
newline, directories and stdin. Each is read, or rejected with a located diagnostic and no
traceback, by `ktir validate` and `ktir fmt`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from ktir.cli import main

PROGRAM = "func.func @f(%x: f32) -> f32 {\n  %0 = arith.addf %x, %x : f32\n  return %0 : f32\n}\n"
CANONICAL = "func.func @f(%x: f32) -> f32 {\n  %0 = arith.addf %x, %x : f32\n  func.return %0 : f32\n}\n"

VALID = {
    "empty": "",
    "blank_lines": "\n\n\n",
    "comments_only": "// a comment\n// another\n",
    "crlf": PROGRAM.replace("\n", "\r\n"),
    "tabs": PROGRAM.replace("  ", "\t"),
    "no_final_newline": PROGRAM.rstrip("\n"),
    "long_line": PROGRAM.replace(" : f32\n  return", " : f32" + " " * 20000 + "// " + "x" * 50000 + "\n  return"),
    "unicode_string": 'func.func @f() attributes {note = "héllo ✓ 数"} {\n  return\n}\n',
}

# character, what the diagnostic must name, where it sits in the text
LOOKALIKES = {
    "bom": ("\ufeff" + PROGRAM, "byte order mark", (1, 1)),
    "no_break_space": (PROGRAM.replace("  return", "\u00a0 return"), "no-break space", (3, 1)),
    "typographic_quote": ('func.func @f() attributes {a = \u201cx\u201d} {\n  return\n}\n', "typographic quote", (1, 32)),
    "unicode_minus": ("func.func @f() {\n  %c = arith.constant \u22121 : i32\n  return\n}\n", "minus sign", (2, 23)),
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.mlir"
    path.write_bytes(text.encode())  # as written: no newline translation
    return path


@pytest.mark.parametrize("name", sorted(VALID))
def test_unusual_but_valid_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = _write(tmp_path, name, VALID[name])
    assert main(["validate", str(path)]) == 0
    assert main(["fmt", str(path)]) == 0
    out = capsys.readouterr().out
    if name in ("crlf", "tabs", "no_final_newline"):
        assert out.endswith(CANONICAL)
    if name == "unicode_string":
        assert '"héllo ✓ 数"' in out


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_lookalike_characters_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    text, named, (line, col) = LOOKALIKES[name]
    path = _write(tmp_path, name, text)
    for command in ("validate", "fmt"):
        assert main([command, str(path)]) == 1
        err = capsys.readouterr().err
        assert f"{path}:{line}:{col}: error[syntax]: unexpected character" in err
        assert named in err and "Traceback" not in err


def test_directory_and_stdin(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in VALID.items():
        _write(tmp_path, name, text)
    assert main(["validate", "-q", str(tmp_path)]) == 0
    _write(tmp_path, "bom", LOOKALIKES["bom"][0])
    assert main(["validate", "-q", str(tmp_path)]) == 1
    assert "bom.mlir:1:1: error[syntax]" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PROGRAM.encode())))
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == CANONICAL


def test_run_of_a_file_without_a_kernel_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("empty", "comments_only"):
        path = _write(tmp_path, name, VALID[name])
        assert main(["run", str(path)]) == 1
        err = capsys.readouterr().err
        assert "no function with a body: there is nothing to run" in err and "Traceback" not in err
    path = _write(tmp_path, "two", "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n")
    assert main(["run", str(path)]) == 1
    assert "choose one with func= (ktir run --func)" in capsys.readouterr().err
