"""Reading inputs and writing outputs atomically (a failed run leaves old outputs intact)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


class InputError(Exception):
    """An input file that cannot be read as text; the message says why, for the user."""


def read_source(path: str) -> str:
    """The UTF-8 text of `path` (`-` is stdin), or InputError naming the problem."""
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text (byte {e.start})") from None


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` via a temporary file in the same directory and a rename."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
