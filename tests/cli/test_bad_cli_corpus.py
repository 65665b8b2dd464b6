"""A corpus of bad command lines, for every subcommand: wrong flags, numbers, paths, encodings
and hostile files. Each must end with a non-zero exit and an error that is located
(`file:line:col: error[...]`) or names what is wrong, never a Python traceback.

Each case runs `ktir` in a child process (so a crash, a recursion or a memory blow-up is seen
as the user sees it), under a memory limit and a timeout. A case whose fix is still to come may
name its owner (`owner=`): it is then a strict xfail, so the fix landing is noticed.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
VECTOR_ADD = str(EXAMPLES / "vector_add.ktir")
SOFTMAX = str(EXAMPLES / "softmax.ktir")
LOCATED = re.compile(r"^\S.*:\d+:\d+: error\[[\w.-]+\]: ", re.M)


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]  # {tmp} is the case's directory, with the files of `files()` in it
    names: str  # what the message must mention (the file, the option, the value at fault)
    owner: str | None = None  # whose fix it awaits (xfail), None: must pass now
    stdin: bytes | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _nested(depth: int) -> str:
    body = "  " * depth + "%x = arith.constant 0 : index\n"
    for d in reversed(range(depth)):
        body = "  " * d + "scf.execute_region {\n" + body + "  " * d + "  scf.yield\n" + "  " * d + "}\n"
    return "func.func @deep() {\n" + body + "  func.return\n}\n"


def files(tmp: Path) -> None:
    """The hostile and helper files the cases name."""
    (tmp / "latin1.ktir").write_bytes("// caf\xe9\nfunc.func @f() {\n  func.return\n}\n".encode("latin-1"))
    (tmp / "nul.ktir").write_bytes(b"func.func @f() {\x00\n  func.return\n}\n")
    (tmp / "png.ktir").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (tmp / "syntax.ktir").write_text("func.func @f( {\n  func.return\n}\n")
    (tmp / "nested.ktir").write_text(_nested(600))
    (tmp / "grid.ktir").write_text("func.func @f() attributes {grid = [1000000000000]} {\n  func.return\n}\n")
    (tmp / "empty").mkdir()
    (tmp / "garbage.npy").write_bytes(b"not an array")
    np.savez(tmp / "pair.npz", a=np.zeros(2), b=np.ones(2))
    np.save(tmp / "objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    np.save(tmp / "strings.npy", np.array(["ab"] * 1024))
    np.save(tmp / "lossy.npy", np.arange(1024, dtype=np.float32) + 0.1)
    np.save(tmp / "ones.npy", np.ones(1024, np.float16))
    (tmp / "notjson.json").write_text("{ this is not json")
    (tmp / "array.json").write_text("[1, 2, 3]")
    (tmp / "latin1.json").write_bytes('{"a": "caf\xe9"}'.encode("latin-1"))
    (tmp / "not.pt2").write_bytes(b"PK\x03\x04 not really a zip")
    with zipfile.ZipFile(tmp / "empty.pt2", "w") as z:
        z.writestr("nothing.txt", "no program here")
    (tmp / "bad.toml").write_text("name = [unclosed\n")
    (tmp / "latin1.toml").write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    (tmp / "results.bin").write_bytes(b"\xff\xfe\x00garbage")


CASES = [
    # ---------------------------------------------------------------- the command line itself
    Case("no command", [], "COMMAND"),
    Case("unknown command", ["frobnicate"], "frobnicate"),
    Case("unknown global flag", ["--frobnicate"], "--frobnicate"),
    # ---------------------------------------------------------------- validate
    Case("validate missing file", ["validate", "{tmp}/missing.ktir"], "missing.ktir"),
    Case("validate empty directory", ["validate", "{tmp}/empty"], "empty"),
    Case("validate latin-1 file", ["validate", "{tmp}/latin1.ktir"], "latin1.ktir"),
    Case("validate NUL byte", ["validate", "{tmp}/nul.ktir"], "nul.ktir"),
    Case("validate binary file", ["validate", "{tmp}/png.ktir"], "png.ktir"),
    Case("validate syntax error", ["validate", "{tmp}/syntax.ktir"], "syntax.ktir"),
    Case("validate bad format", ["validate", "--format", "xml", VECTOR_ADD], "--format"),
    Case("validate fractional jobs", ["validate", "-j", "1.5", VECTOR_ADD], "-j"),
    Case("validate negative jobs", ["validate", "-j", "-3", VECTOR_ADD], "-j"),
    Case("validate jobs not a number", ["validate", "-j", "many", VECTOR_ADD], "-j"),
    Case("validate unknown flag", ["validate", "--strict-ish", VECTOR_ADD], "--strict-ish"),
    Case("validate bad stdin", ["validate", "-"], "<stdin>", stdin=b"\xff\xfe\xfd"),
    Case("validate 600 levels of nesting", ["validate", "{tmp}/nested.ktir"], "nested.ktir"),
    # ---------------------------------------------------------------- fmt
    Case("fmt missing file", ["fmt", "{tmp}/missing.ktir"], "missing.ktir"),
    Case("fmt latin-1 file", ["fmt", "{tmp}/latin1.ktir"], "latin1.ktir"),
    Case("fmt syntax error", ["fmt", "{tmp}/syntax.ktir"], "syntax.ktir"),
    Case("fmt output into a missing directory", ["fmt", VECTOR_ADD, "-o", "{tmp}/no/such/dir/out.ktir"], "out.ktir"),
    Case("fmt output is a directory", ["fmt", VECTOR_ADD, "-o", "{tmp}/empty"], "empty"),
    Case("fmt -i with -o", ["fmt", "-i", "-o", "{tmp}/o.ktir", VECTOR_ADD], "-o"),
    Case("fmt several files without --check", ["fmt", VECTOR_ADD, SOFTMAX], "--check"),
    Case("fmt 600 levels of nesting", ["fmt", "{tmp}/nested.ktir"], "nested.ktir"),
    # ---------------------------------------------------------------- run
    Case("run missing file", ["run", "{tmp}/missing.ktir"], "missing.ktir"),
    Case("run latin-1 file", ["run", "{tmp}/latin1.ktir"], "latin1.ktir"),
    Case("run --arg without =", ["run", VECTOR_ADD, "--arg", "A"], "--arg"),
    Case("run --arg empty name", ["run", VECTOR_ADD, "--arg", "=5"], "--arg"),
    Case("run --arg not a number", ["run", VECTOR_ADD, "--arg", "A=twelve"], "twelve"),
    Case("run --arg missing npy", ["run", VECTOR_ADD, "--arg", "A={tmp}/missing.npy"], "missing.npy"),
    Case("run --arg not an npy", ["run", VECTOR_ADD, "--arg", "A={tmp}/garbage.npy"], "garbage.npy"),
    Case("run --arg an npz as npy", ["run", VECTOR_ADD, "--arg", "A={tmp}/pair.npz"], "pair.npz"),
    Case("run --arg pickled objects", ["run", VECTOR_ADD, "--arg", "A={tmp}/objects.npy"], "objects.npy"),
    Case("run --arg strings", ["run", VECTOR_ADD, "--arg", "A={tmp}/strings.npy", "--arg", "B={tmp}/ones.npy",
                               "--arg", "C={tmp}/ones.npy"], "A"),
    Case("run --arg lossy dtype", ["run", VECTOR_ADD, "--arg", "A={tmp}/lossy.npy", "--arg", "B={tmp}/ones.npy",
                                   "--arg", "C={tmp}/ones.npy"], "A"),
    Case("run --arg float for an index", ["run", SOFTMAX, "--random-inputs", "0", "--arg", "R=1.5"], "R"),
    Case("run --arg nan for an index", ["run", SOFTMAX, "--random-inputs", "0", "--arg", "R=nan"], "R"),
    Case("run --arg huge integer", ["run", SOFTMAX, "--random-inputs", "0", "--arg", "R=" + "9" * 400], "R"),
    Case("run --arg unknown name", ["run", VECTOR_ADD, "--random-inputs", "0", "--arg", "Q=1"], "Q"),
    Case("run --arg ct_local missing", ["run", VECTOR_ADD, "--arg", "A=ct_local:{tmp}/missing.npy"], "missing.npy"),
    Case("run missing arguments", ["run", VECTOR_ADD], "A"),
    Case("run --random-inputs not a number", ["run", VECTOR_ADD, "--random-inputs", "x"], "--random-inputs"),
    Case("run --random-inputs negative", ["run", VECTOR_ADD, "--random-inputs", "-1"], "-1"),
    Case("run --step-limit not a number", ["run", VECTOR_ADD, "--step-limit", "lots"], "--step-limit"),
    Case("run --func unknown", ["run", VECTOR_ADD, "--func", "nosuch", "--random-inputs", "0"], "nosuch"),
    Case("run --target unknown", ["run", VECTOR_ADD, "--random-inputs", "0", "--target", "nosuch"], "nosuch"),
    Case("run --target bad toml", ["run", VECTOR_ADD, "--random-inputs", "0", "--target", "{tmp}/bad.toml"], "bad.toml"),
    Case("run --out into a missing directory", ["run", VECTOR_ADD, "--random-inputs", "0", "--arg", "N=65536", "--out",
                                                "{tmp}/no/dir/o.npz"], "o.npz"),
    Case("run --timeline into a missing directory", ["run", VECTOR_ADD, "--random-inputs", "0", "--arg", "N=65536", "--timeline",
                                                     "{tmp}/no/dir/t.svg"], "t.svg"),
    Case("run --trace into a directory", ["run", VECTOR_ADD, "--random-inputs", "0", "--arg", "N=65536", "--trace",
                                          "{tmp}/empty"], "empty"),
    Case("run grid of 10^12 tiles", ["run", "{tmp}/grid.ktir"], "grid"),
    # ---------------------------------------------------------------- lower
    Case("lower without a source", ["lower"], "lower"),
    Case("lower sdsc missing path", ["lower", "sdsc", "{tmp}/missing.json"], "missing.json"),
    Case("lower sdsc not JSON", ["lower", "sdsc", "{tmp}/notjson.json"], "notjson.json"),
    Case("lower sdsc a JSON array", ["lower", "sdsc", "{tmp}/array.json"], "array.json"),
    Case("lower sdsc latin-1 JSON", ["lower", "sdsc", "{tmp}/latin1.json"], "latin1.json"),
    Case("lower torch missing file", ["lower", "torch", "{tmp}/missing.pt2", "-o", "{tmp}/o.ktir"], "missing.pt2"),
    Case("lower torch not a zip", ["lower", "torch", "{tmp}/not.pt2", "-o", "{tmp}/o.ktir"], "not.pt2"),
    Case("lower torch a zip without a program", ["lower", "torch", "{tmp}/empty.pt2", "-o", "{tmp}/o.ktir"], "empty.pt2"),
    Case("lower torch output directory missing", ["lower", "torch", "{tmp}/empty.pt2", "-o", "{tmp}/no/dir/o.ktir"], "o.ktir"),
    # ---------------------------------------------------------------- run-program
    Case("run-program missing manifest", ["run-program", "{tmp}/missing.manifest.json"], "missing.manifest.json"),
    Case("run-program not JSON", ["run-program", "{tmp}/notjson.json"], "notjson.json"),
    Case("run-program a JSON array", ["run-program", "{tmp}/array.json"], "array.json"),
    Case("run-program latin-1 manifest", ["run-program", "{tmp}/latin1.json"], "latin1.json"),
    Case("run-program --random-inputs not a number", ["run-program", "{tmp}/array.json", "--random-inputs", "x"],
         "--random-inputs"),
    # ---------------------------------------------------------------- targets
    Case("targets without an action", ["targets"], "ACTION"),
    Case("targets show unknown", ["targets", "show", "nosuch"], "nosuch"),
    Case("targets show bad toml", ["targets", "show", "{tmp}/bad.toml"], "bad.toml"),
    Case("targets show latin-1 toml", ["targets", "show", "{tmp}/latin1.toml"], "latin1.toml"),
    Case("targets schema into a missing directory", ["targets", "schema", "-o", "{tmp}/no/dir/s.json"], "s.json"),
    # ---------------------------------------------------------------- schedule
    Case("schedule missing file", ["schedule", "{tmp}/missing.ktir", "--target", "spyre"], "missing.ktir"),
    Case("schedule without --target", ["schedule", SOFTMAX], "--target"),
    Case("schedule --size without =", ["schedule", SOFTMAX, "--target", "spyre", "--size", "R"], "R"),
    Case("schedule --size not a number", ["schedule", SOFTMAX, "--target", "spyre", "--size", "R=big"], "R"),
    Case("schedule --size negative", ["schedule", SOFTMAX, "--target", "spyre", "--size", "R=-5"], "R"),
    Case("schedule unknown scheduler", ["schedule", SOFTMAX, "--target", "spyre", "--size", "R=1024", "--scheduler",
                                        "nope"], "nope"),
    Case("schedule --time-budget not a number", ["schedule", SOFTMAX, "--target", "spyre", "--time-budget", "soon"],
         "--time-budget"),
    # ---------------------------------------------------------------- conformance
    Case("conformance without an action", ["conformance"], "ACTION"),
    Case("conformance report missing file", ["conformance", "report", "{tmp}/missing.json"], "missing.json"),
    Case("conformance report not UTF-8", ["conformance", "report", "{tmp}/results.bin"], "results.bin"),
    Case("conformance report not JSON", ["conformance", "report", "{tmp}/notjson.json"], "notjson.json"),
    Case("conformance compare one file", ["conformance", "compare", "{tmp}/notjson.json"], "compare"),
    Case("conformance run unknown level", ["conformance", "run", "--level", "gold"], "--level"),
    Case("conformance run zero jobs", ["conformance", "run", "-j", "0", "-k", "nothing-matches"], "-j"),
    Case("conformance run unknown adapter", ["conformance", "run", "--adapter", "python:no.such:Thing", "-k",
                                             "core.arith.addf.f32.16"], "no.such"),
    Case("conformance run missing capabilities", ["conformance", "run", "--capabilities", "{tmp}/missing.toml"],
         "missing.toml"),
]


def test_the_corpus_is_broad() -> None:
    commands = {c.argv[0] for c in CASES if c.argv}
    assert len(CASES) >= 66 and commands >= {"validate", "fmt", "run", "lower", "run-program", "targets", "schedule",
                                             "conformance"}
    assert len({c.name for c in CASES}) == len(CASES)


def _limits() -> None:  # in the child: 3 GiB of address space, so a blow-up is a MemoryError, not the OOM killer
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bad-cli")
    files(path)
    return path


def _params() -> list[object]:
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(reason=f"fix owned by {c.owner}", strict=True)] if c.owner else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_bad_command_line_gives_a_clean_error(case: Case, tmp: Path) -> None:
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80", **case.extra}
    done = subprocess.run([sys.executable, "-m", "ktir.cli", *argv], input=case.stdin or b"", capture_output=True,
                          cwd=tmp, env=env, timeout=120, preexec_fn=_limits)
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback (most recent call last)" not in err, err[-3000:]
    assert done.returncode not in (0, None) and done.returncode > 0, (done.returncode, err[-2000:])
    assert err.strip(), "no message"
    assert case.names in err, f"the message does not name {case.names!r}:\n{err[-2000:]}"
    first = err.strip().splitlines()[0]
    assert LOCATED.search(err) or first.startswith(("ktir", "usage: ktir")) or case.names in first, first

