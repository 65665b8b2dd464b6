"""A small TOML writer for manifests (the standard library reads TOML but does not write it)."""

from __future__ import annotations

import json
from typing import Any


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def manifest(header: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """`header` keys at the top, then one `[[case]]` table per case; list-of-dict fields
    (`args`, `outputs`) become arrays of inline tables."""
    lines = [f"{k} = {value(v)}" for k, v in header.items()]
    for case in cases:
        lines.append("")
        lines.append("[[case]]")
        for k, v in case.items():
            if v is None or v == [] or v == "":
                continue
            if isinstance(v, list) and v and isinstance(v[0], dict):
                lines.append(f"{k} = [")
                lines.extend(f"  {value(x)}," for x in v)
                lines.append("]")
            else:
                lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n"
