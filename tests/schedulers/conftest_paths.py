"""Paths of the scheduler tests (importable by name: the test directory is not a package)."""

from __future__ import annotations

from pathlib import Path

import ktir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLUGIN = Path(__file__).resolve().parent / "plugin_example"
PLUGIN_NAME = "largest-block"


def example(name: str) -> ktir.Module:
    path = EXAMPLES / name
    return ktir.parse(path.read_text(), str(path))


def ktir_schedule(argv: list[str]) -> int:
    """`ktir schedule ARGV` through the subcommand's own parser (as ktir.cli wires it)."""
    import argparse

    from schedulers.cli import add_schedule_parser

    parser = argparse.ArgumentParser(prog="ktir")
    add_schedule_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["schedule", *argv])
    except SystemExit as e:
        return int(e.code or 0)
    return int(args.run(args))
