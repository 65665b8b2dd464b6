"""The `ktir` command. Each subcommand is a thin call into a library function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ktir.fileio import InputError, read_source, write_atomic
from ktir.syntax.diagnostics import KtirError, render

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def _report(error: KtirError, source: str) -> None:
    for diag in error.diagnostics:
        print(render(diag, source), file=sys.stderr)


def cmd_fmt(args: argparse.Namespace) -> int:
    from ktir.syntax.parser import parse
    from ktir.syntax.printer import print_module

    name = "<stdin>" if args.file == "-" else args.file
    try:
        source = read_source(args.file)
    except InputError as e:
        print(f"ktir fmt: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        module = parse(source, name)
    except KtirError as e:
        _report(e, source)
        return EXIT_INVALID
    if not args.quiet:
        for w in module.warnings:
            print(render(w, source), file=sys.stderr)
    text = print_module(module)
    if args.check:
        if text != source:
            print(f"{name}: not in canonical form (run `ktir fmt {args.file} -o {args.file}`)", file=sys.stderr)
            return EXIT_INVALID
        return EXIT_OK
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return EXIT_OK
    try:
        write_atomic(args.output, text)
    except OSError as e:
        print(f"ktir fmt: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from ktir.verify import validate_text

    worst = EXIT_OK
    for path in args.files:
        name = "<stdin>" if path == "-" else path
        try:
            source = read_source(path)
        except InputError as e:
            print(f"ktir validate: {e}", file=sys.stderr)
            worst = max(worst, EXIT_USAGE)
            continue
        _, diagnostics = validate_text(source, name)
        shown = [d for d in diagnostics if args.notes or d.severity != "note"]
        failed = any(d.severity == "error" or (args.werror and d.severity == "warning") for d in diagnostics)
        for d in shown:
            if args.format == "json":
                print(json.dumps(d.to_dict()))
            else:
                print(render(d, source), file=sys.stderr)
        if failed:
            worst = max(worst, EXIT_INVALID)
        elif args.format == "text" and not args.quiet:
            print(f"{name}: valid", file=sys.stderr)
    return worst


class _VersionAction(argparse.Action):
    """argparse's version action, reading the installed version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        import ktir

        print(f"ktir {ktir.__version__} (KTIR specification {ktir.SPEC_VERSION})")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `ktir` argument parser; with `command`, only the subcommands it needs are loaded."""
    parser = argparse.ArgumentParser(prog="ktir", description="Kernel Tile IR tools.")
    parser.add_argument("--version", action=_VersionAction, help="show the library and specification versions and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fmt = sub.add_parser("fmt", help="print a KTIR file in canonical form", description="Parse FILE and print it in canonical KTIR form.")
    fmt.add_argument("file", metavar="FILE", help="a .ktir or .mlir file, or - for stdin")
    fmt.add_argument("-o", "--output", metavar="OUT", help="write here (atomically) instead of stdout")
    fmt.add_argument("--check", action="store_true", help="exit 1 if FILE is not already canonical; write nothing")
    fmt.add_argument("-q", "--quiet", action="store_true", help="do not print legacy-spelling warnings")
    fmt.set_defaults(run=cmd_fmt)

    val = sub.add_parser(
        "validate",
        help="check KTIR files: syntax, structure, types and every op constraint",
        description="Exit 0 when every file is valid (warnings allowed), 1 when any is invalid, 2 on usage or I/O errors.",
    )
    val.add_argument("files", nargs="+", metavar="FILE", help=".ktir/.mlir files, or - for stdin")
    val.add_argument("--format", choices=("text", "json"), default="text", help="json: one object per diagnostic on stdout")
    val.add_argument("--werror", action="store_true", help="treat warnings as errors")
    val.add_argument("--notes", action="store_true", help="also show notes (properties that could not be decided statically)")
    val.add_argument("-q", "--quiet", action="store_true", help="print nothing for valid files")
    val.set_defaults(run=cmd_validate)

    for register in _package_parsers(command):
        register(sub)
    return parser


# Subcommands owned by their packages: (names it adds, module, function adding them). Only
# the module of the command being run is imported, so `ktir validate` never loads numpy,
# torch, rich tables or the conformance suite; help and unknown names load them all.
_PACKAGE_COMMANDS = (
    (("run",), "reference_interp.cli", "add_run_parser"),
    (("lower", "run-program"), "ktir.lower.cli", "add_lower_parser"),
    (("targets",), "ktir.targets.cli", "add_targets_parser"),
    (("conformance",), "conformance.cli", "add_conformance_parser"),
    (("schedule",), "schedulers.cli", "add_schedule_parser"),
)
_CORE_COMMANDS = ("fmt", "validate")


def _package_parsers(command: str | None) -> list[Callable[[Any], Any]]:
    import importlib

    if command in _CORE_COMMANDS:
        return []
    chosen = [entry for entry in _PACKAGE_COMMANDS if command in entry[0]] or list(_PACKAGE_COMMANDS)
    return [getattr(importlib.import_module(module), function) for _, module, function in chosen]


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the top level has no options taking values)."""
    for arg in argv:
        if arg == "--version":
            return "fmt"  # argparse prints the version and exits before any subcommand runs
        if not arg.startswith("-"):
            return arg
    return None


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
