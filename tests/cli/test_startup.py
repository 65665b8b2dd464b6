"""A subcommand loads only what it needs (measured in benchmarks/bench_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ktir.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("lark", "numpy", "torch", "rich", "scipy", "ml_dtypes", "conformance", "reference_interp", "schedulers",
         "ktir.targets", "ktir.lower")


def _loaded_after(argv: list[str]) -> set[str]:
    code = (
        "import json, sys\n"
        "from ktir.cli import main\n"
        f"code = main({argv!r})\n"
        f"print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r})]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    exit_code, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert exit_code == 0, done.stderr
    return set(modules)


def test_version_loads_nothing_heavy() -> None:
    assert _loaded_after(["--version"]) == set()


def test_validate_loads_no_other_subcommand_and_no_lark() -> None:
    """With the parse tables cached, a valid file needs neither lark nor numpy."""
    _loaded_after(["validate", "-q", "examples/vector_add.ktir"])  # fills the table cache
    assert _loaded_after(["validate", "-q", "examples/vector_add.ktir"]) == set()


def test_fmt_loads_no_other_subcommand() -> None:
    _loaded_after(["fmt", "--check", "examples/vector_add.ktir"])
    assert _loaded_after(["fmt", "--check", "examples/vector_add.ktir"]) == set()


@pytest.mark.parametrize("command", ["run", "lower", "run-program", "targets", "conformance", "schedule"])
def test_each_package_subcommand_is_registered_on_its_own(command: str) -> None:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")
    assert command in sub.choices  # type: ignore[operator]
    assert {"fmt", "validate"} <= set(sub.choices)  # type: ignore[arg-type]


def test_help_and_unknown_commands_see_every_subcommand() -> None:
    for command in (None, "no-such-command"):
        sub = next(a for a in build_parser(command)._actions if a.dest == "command")
        assert {"fmt", "validate", "run", "lower", "run-program", "targets", "conformance", "schedule"} <= set(
            sub.choices  # type: ignore[arg-type]
        )


@pytest.mark.parametrize(
    "argv", [["--help"], ["run", "--help"], ["lower", "--help"], ["schedule", "--help"], ["conformance", "list"]]
)
def test_help_and_listing_load_no_numeric_stack(argv: list[str]) -> None:
    """Package `__init__`s export lazily (ktir.lazy): adding a subcommand's parser, or
    listing the conformance cases, loads no numpy, scipy, ml_dtypes or torch."""
    loaded = _loaded_after(argv)
    assert not {m.split(".")[0] for m in loaded} & {"numpy", "scipy", "ml_dtypes", "torch"}, sorted(loaded)
