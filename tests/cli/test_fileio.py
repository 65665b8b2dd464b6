"""Atomic output files: text or bytes, earlier file intact on failure, ordinary permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ktir.fileio import write_atomic


def test_text_and_bytes(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.txt", "héllo\n")
    write_atomic(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]  # no temporary left


def test_permissions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "out.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o644


def test_failed_write_leaves_the_earlier_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    write_atomic(target, "old")

    class Boom(str):
        def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(target, Boom("new"))
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_toml_depth_is_checked_outside_strings_and_comments() -> None:
    import tomllib

    from ktir.fileio import MAX_TOML_DEPTH, toml_loads

    deep = "a = " + "[" * (MAX_TOML_DEPTH + 1) + "1" + "]" * (MAX_TOML_DEPTH + 1) + "\n"
    with pytest.raises(RecursionError):
        toml_loads(deep)
    ok = "a = " + "[" * MAX_TOML_DEPTH + "1" + "]" * MAX_TOML_DEPTH + "\n"
    assert toml_loads(ok) == tomllib.loads(ok)
    brackets = "[" * 500
    text = f"s = \"{brackets}\"\nt = '{brackets}'\nu = \"\"\"\n{brackets}\n\"\"\"\n# {brackets}\n[x]\ny = [[1], {{z = 2}}]\n"
    assert toml_loads(text) == tomllib.loads(text)


def test_a_deep_target_file_is_a_user_error() -> None:
    """Refused before parsing: near the recursion limit tomllib failed with SystemError, not
    RecursionError (fuzz seed 41204, input 105993)."""
    from ktir.targets import TargetError
    from ktir.targets.loader import parse_target

    with pytest.raises(TargetError, match="nested too deeply"):
        parse_target("deep = " + "[" * 150 + "1" + "]" * 150 + "\n", "t.toml")
