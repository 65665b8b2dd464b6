"""Find and load target descriptions: the built-in TOML files, or any file by path."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ktir.fileio import toml_loads

from .schema import SCHEMA_VERSION, Target


class TargetError(Exception):
    """A target that cannot be found, read or validated; the message names the file and field."""


def builtin_targets() -> dict[str, Path]:
    """Name -> path of every target description shipped with ktir (the *.toml beside this module)."""
    folder = resources.files("ktir.targets")
    found: dict[str, Path] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".toml"):
            path = Path(str(entry))
            found[_declared_name(path)] = path
    return dict(sorted(found.items()))


def _declared_name(path: Path) -> str:
    try:
        data = toml_loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return path.stem
    name = data.get("name")
    return name if isinstance(name, str) else path.stem


def load_target(name_or_path: str | Path) -> Target:
    """Load a built-in target by name (`spyre`) or a description file by path."""
    text = str(name_or_path)
    builtins = builtin_targets()
    if text in builtins:
        return _load_cached(str(builtins[text]))
    path = Path(text)
    if path.suffix == ".toml" or path.exists():
        return load_target_file(path)
    raise TargetError(f"unknown target '{text}' (built-in targets: {', '.join(builtins)}; or give a .toml path)")


@functools.lru_cache(maxsize=16)
def _load_cached(path: str) -> Target:
    return load_target_file(Path(path))


def load_target_file(path: Path) -> Target:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TargetError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise TargetError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return parse_target(text, str(path))


def parse_target(text: str, filename: str = "<target>") -> Target:
    """Validate TOML text as a target description."""
    try:
        data = toml_loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TargetError(f"{filename}: not valid TOML: {e}") from None
    except RecursionError:
        raise TargetError(f"{filename}: not valid TOML: nested too deeply") from None
    return target_from_dict(data, filename)


def target_from_dict(data: dict[str, Any], filename: str = "<target>") -> Target:
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        shown = "missing" if version is None else repr(version)
        raise TargetError(f"{filename}: schema_version is {shown}; this reader knows version {SCHEMA_VERSION}")
    try:
        return Target.model_validate(data)
    except ValidationError as e:
        raise TargetError(f"{filename}: invalid target description:\n" + format_errors(e)) from None


def format_errors(error: ValidationError) -> str:
    lines = []
    for err in error.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  {where}: {err['msg']}")
    return "\n".join(lines)
