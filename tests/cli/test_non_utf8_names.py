"""A file whose name is not UTF-8 (any byte string is a valid POSIX name) is read, run and
reported like any other, in a UTF-8 and in a C locale: its name prints escaped, never a
UnicodeEncodeError (the fuzz lane's seed 74113, input 29305: `ktir run` on `\\xff.ktir`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAME = b"\xff\xfe-kernel.ktir"  # not UTF-8: Python sees it as the surrogates \udcff\udcfe


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
@pytest.mark.parametrize("argv", [["validate"], ["run", "--random-inputs", "3"], ["fmt"],
                                  ["schedule", "--target", "spyre", "--size", "N=65536", "--check"]])
def test_a_name_that_is_not_utf8(tmp_path: Path, argv: list[str], locale: str) -> None:
    path = os.path.join(os.fsencode(tmp_path), NAME)
    shutil.copyfile(ROOT / "examples" / "vector_add.ktir", path)
    env = {**os.environ, "LC_ALL": locale, "PYTHONIOENCODING": "", "PYTHONUTF8": "0"}
    done = subprocess.run([sys.executable, "-m", "ktir.cli", *argv, path], capture_output=True, env=env,
                          cwd=tmp_path, timeout=120)
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode == 0, out
    assert "Traceback" not in out
    if argv[0] in ("validate", "run"):  # fmt and schedule print the module
        assert "\\udcff\\udcfe-kernel.ktir" in out, out
