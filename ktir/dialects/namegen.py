"""Generate `ktir/dialects/names.py`, the op names as typed constants, from the registry.

    python -m ktir.dialects.namegen            # print the module
    python -m ktir.dialects.namegen --write    # rewrite ktir/dialects/names.py
    python -m ktir.dialects.namegen --check    # exit 1 if the checked-in module is stale

Code outside `ktir/dialects` names an op as `Arith.addf` or `Scf.for_` (not `"arith.addf"`), so
a misspelt name is an error mypy reports, and `grep Scf.for_` finds every user of the op.
One class per dialect, named after it (capitalised: `func`, `math` and `tensor` are common
local and module names); an op's attribute is the rest of its name with dots as underscores,
and a trailing underscore when that is a Python keyword (`Scf.if_`, `Func.return_`).
"""

from __future__ import annotations

import argparse
import keyword
import sys
from pathlib import Path


def class_name(dialect: str) -> str:
    return dialect.capitalize()


def attribute(name: str) -> tuple[str, str]:
    """(class, attribute) that spell the op `name` in `ktir.dialects.names`."""
    dialect, _, rest = name.partition(".")
    attr = rest.replace(".", "_")
    if keyword.iskeyword(attr) or keyword.issoftkeyword(attr):
        attr += "_"
    return class_name(dialect), attr


def render() -> str:
    from ktir.dialects.registry import OPS

    by_class: dict[str, list[tuple[str, str]]] = {}
    for name in sorted(OPS):
        cls, attr = attribute(name)
        by_class.setdefault(cls, []).append((attr, name))
    lines = [
        '"""The name of every op KTIR defines, one class per dialect: `Arith.addf == "arith.addf"`.',
        "",
        "Generated from the registry by `python -m ktir.dialects.namegen --write`; do not edit",
        "(tests/dialects/test_op_names.py checks it is current).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
    ]
    for cls, attrs in sorted(by_class.items()):
        lines += ["", "", f"class {cls}:"]
        lines += [f'    {attr}: Final[str] = "{name}"' for attr, name in attrs]
    return "\n".join(lines) + "\n"


def names_path() -> Path:
    return Path(__file__).with_name("names.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ktir.dialects.namegen", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite ktir/dialects/names.py")
    parser.add_argument("--check", action="store_true", help="exit 1 if ktir/dialects/names.py is stale")
    args = parser.parse_args(argv)
    wanted = render()
    if not (args.write or args.check):
        print(wanted, end="")
        return 0
    path = names_path()
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if args.write:
        if wanted != current:
            path.write_text(wanted, encoding="utf-8")
            print(f"rewrote {path}")
        return 0
    if wanted != current:
        print(f"{path} is stale; run python -m ktir.dialects.namegen --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
