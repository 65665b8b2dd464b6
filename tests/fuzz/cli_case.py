"""One command-line input of the fuzz lane: files in a fresh folder, and `ktir ARGS` run
in-process there (issue 33).

The command runs as a user's would: its own folder as the working directory, stdin empty
(or given), stdout and stderr UTF-8 streams set up as Python sets up a process's (stdout
strict: a path that is not UTF-8 printed there is a traceback; stderr with backslash
escapes). A failure is an exception out of `ktir.cli.main`, a
traceback or an internal error printed, or a non-zero exit with nothing said.

Files are bytes, or a `Link` (a symbolic link to a path inside the case folder, or to the
worker's `outside/` folder next to it, which stands for any file outside the folder a
reader may open). No argument names a path outside the case folder but that one, so a
command cannot write anywhere else.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Link:
    """A symbolic link; `target` is relative to the case folder (`../outside/x` leaves it)."""

    target: str


@dataclass
class CliCase:
    argv: list[str]
    files: dict[str, bytes | Link] = field(default_factory=dict)
    stdin: bytes = b""
    label: str = ""  # what the generator meant to test (for the saved failure)

    def describe(self) -> str:
        lines = [f"# {self.label}" if self.label else "#", "ktir " + " ".join(_quote(a) for a in self.argv)]
        for name, content in sorted(self.files.items()):
            if isinstance(content, Link):
                lines.append(f"{name} -> {content.target}")
            else:
                lines.append(f"{name}: {len(content)} bytes")
        return "\n".join(lines) + "\n"


def _quote(arg: str) -> str:
    return arg if arg and all(c.isalnum() or c in "-_=./,:" for c in arg) else repr(arg)


class CliFailure(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_BASE: Path | None = None


def base_dir() -> Path:
    """This process's scratch folder: `outside/` (a file outside any case folder) and the
    case folders, removed at exit."""
    global _BASE
    if _BASE is None or not _BASE.exists():
        _BASE = Path(tempfile.mkdtemp(prefix="ktir-fuzz-"))
        (_BASE / "outside").mkdir()
        (_BASE / "outside" / "secret.txt").write_text("root:x:0:0\n")
        import atexit

        atexit.register(shutil.rmtree, _BASE, True)
    return _BASE


def materialize(case: CliCase, folder: Path) -> None:
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Link):
            os.symlink(content.target, path)
        elif name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.write_bytes(content)


def run_cli(case: CliCase) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `ktir ARGV` in a fresh folder holding the case's files."""
    from ktir.cli import main

    base = base_dir()
    folder = Path(tempfile.mkdtemp(dir=base, prefix="case-"))
    old_cwd = os.getcwd()
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    # as Python sets up a process's streams: stdout strict, stderr with backslash escapes
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO(case.stdin), encoding="utf-8")
    old_stdin = sys.stdin
    try:
        materialize(case, folder)
        os.chdir(folder)
        sys.stdin = stdin
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(case.argv))
            except SystemExit as e:  # a command may exit itself; that is a normal end
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdin = old_stdin
        os.chdir(old_cwd)
        shutil.rmtree(folder, ignore_errors=True)
    return int(code or 0), out_bytes.getvalue().decode("utf-8", "replace"), err_bytes.getvalue().decode("utf-8", "replace")


def check_cli(case: CliCase) -> str:
    """Run the case; its outcome (`ok`, or `usage` / `error` for a non-zero exit), or
    raise CliFailure."""
    code, out, err = run_cli(case)
    text = out + err
    if "Traceback (most recent call last)" in text:
        raise CliFailure("exception", text[-3000:])
    if "runtime.internal" in text or "internal error" in text.lower():
        raise CliFailure("internal", text[-3000:])
    if code != 0 and not err.strip() and not out.strip():
        raise CliFailure("silent", f"exit {code} with nothing on stdout or stderr")
    return "ok" if code == 0 else "usage" if code == 2 else "error"
