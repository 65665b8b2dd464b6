"""The `ktir` command. Each subcommand is a thin call into a library function."""

from __future__ import annotations

import argparse
import io
import os
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
    generic = args.generic or args.generic_ops is not None
    if generic and args.check:
        print("ktir fmt: --check compares with the canonical form; it does not combine with --generic", file=sys.stderr)
        return EXIT_USAGE
    if generic or args.string_memory_spaces:
        from ktir.syntax.generic_printer import print_generic

        prefixes = None if args.generic_ops is None or args.generic else args.generic_ops
        text = print_generic(module, prefixes if generic else [], string_memory_spaces=args.string_memory_spaces)
    else:
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
    from ktir.batch import expand, run_many

    files, problems = expand(args.files)
    for problem in problems:
        print(f"ktir validate: {problem}", file=sys.stderr)
    if args.jobs > 1:
        import ktir.verify  # noqa: F401  (loaded once here, inherited by the worker processes)
    worst = run_many(validate_file, files, args, args.jobs, "validate")
    return max(worst, EXIT_USAGE if problems else EXIT_OK)


def validate_file(path: str, args: argparse.Namespace) -> int:
    """`ktir validate` of one file; its exit code."""
    import json

    from ktir.verify import validate_text

    name = "<stdin>" if path == "-" else path
    try:
        source = read_source(path)
    except InputError as e:
        print(f"ktir validate: {e}", file=sys.stderr)
        return EXIT_USAGE
    _, diagnostics = validate_text(source, name)
    shown = [d for d in diagnostics if args.notes or d.severity != "note"]
    failed = any(d.severity == "error" or (args.werror and d.severity == "warning") for d in diagnostics)
    for d in shown:
        if args.format == "json":
            print(json.dumps(d.to_dict()))
        else:
            print(render(d, source), file=sys.stderr)
    if failed:
        return EXIT_INVALID
    if args.format == "text" and not args.quiet:
        print(f"{name}: valid{_undecided(diagnostics, args.notes)}", file=sys.stderr)
    return EXIT_OK


ACCESS_NOTE = "access tile stays inside its view"  # the verifier's notes on accesses it could not bound


def _undecided(diagnostics: Sequence[Any], shown: bool) -> str:
    """What `valid` leaves unproven: the notes counted (accesses apart), and where to see them."""
    notes = [d.message for d in diagnostics if d.severity == "note"]
    if not notes:
        return ""
    accesses = sum(ACCESS_NOTE in m for m in notes)
    other = len(notes) - accesses
    parts = []
    if accesses:
        parts.append(f"{accesses} access{'es' if accesses != 1 else ''} not proven in bounds")
    if other:
        parts.append(f"{other} other propert{'ies' if other != 1 else 'y'} not decided statically")
    where = "the notes above" if shown else f"--notes shows {'it' if len(notes) == 1 else 'them'}"
    return f", but {' and '.join(parts)} ({where})"


def cmd_fmt_files(args: argparse.Namespace) -> int:
    """`ktir fmt` over one or many files and directories (each file through cmd_fmt)."""
    from ktir.batch import expand, run_many

    files, problems = expand(args.file)
    for problem in problems:
        print(f"ktir fmt: {problem}", file=sys.stderr)
    if problems:
        return EXIT_USAGE
    many = len(files) > 1 or len(args.file) != len(files) or any(os.path.isdir(f) for f in args.file)
    if args.in_place and args.output is not None:
        print("ktir fmt: -i (--in-place) and -o (--output) exclude each other", file=sys.stderr)
        return EXIT_USAGE
    if args.in_place and "-" in files:
        print("ktir fmt: -i (--in-place) cannot rewrite stdin", file=sys.stderr)
        return EXIT_USAGE
    if many and args.output is not None:
        print("ktir fmt: -o (--output) takes a single FILE; use -i to rewrite many in place", file=sys.stderr)
        return EXIT_USAGE
    if many and not (args.check or args.in_place):
        print("ktir fmt: several files: use --check, or -i to rewrite them in place", file=sys.stderr)
        return EXIT_USAGE
    return run_many(fmt_file, files, args, args.jobs, "fmt")


def fmt_file(path: str, args: argparse.Namespace) -> int:
    """`ktir fmt` of one file (in place with -i); its exit code."""
    one = argparse.Namespace(**vars(args))
    one.file = path
    if args.in_place:
        one.output = path
    return cmd_fmt(one)


def _add_batch_options(parser: argparse.ArgumentParser, in_place: bool = False) -> None:
    parser.add_argument(
        "-j", "--jobs", type=_jobs, default=1, metavar="N", help="check N files at a time in N processes (0: one per CPU)"
    )
    if in_place:
        parser.add_argument("-i", "--in-place", action="store_true", help="rewrite each FILE in canonical form (atomically)")


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}") from None
    if jobs < 0:
        raise argparse.ArgumentTypeError("the number of processes cannot be negative")
    if jobs == 0:
        from ktir.batch import default_jobs

        return default_jobs()
    return jobs


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
    fmt.add_argument("file", nargs="+", metavar="FILE", help="a .ktir or .mlir file, - for stdin, or a directory (with --check or -i)")
    fmt.add_argument("-o", "--output", metavar="OUT", help="write here (atomically) instead of stdout")
    fmt.add_argument("--check", action="store_true", help="exit 1 if FILE is not already canonical; write nothing")
    fmt.add_argument("-q", "--quiet", action="store_true", help="do not print legacy-spelling warnings")
    fmt.add_argument("--generic", action="store_true", help="print every op in MLIR's generic form, as MLIR 22 prints it")
    fmt.add_argument(
        "--generic-ops", action="extend", type=lambda text: [p for p in text.split(",") if p], metavar="PREFIX[,PREFIX...]",
        help="print only these ops generic: dialects (ktdp) or op names (linalg.matmul_transpose_b); repeatable",
    )
    fmt.add_argument(
        "--string-memory-spaces", action="store_true",
        help='write #ktdp.memory_space<...> in memref types as a string "#ktdp.memory_space<...>", which stock MLIR accepts',
    )
    fmt.set_defaults(run=cmd_fmt)
    _add_batch_options(fmt, in_place=True)
    fmt.set_defaults(run=cmd_fmt_files)  # each file goes through cmd_fmt

    val = sub.add_parser(
        "validate",
        help="check KTIR files: syntax, structure, types and every op constraint",
        description="Exit 0 when every file is valid (warnings allowed), 1 when any is invalid, 2 on usage or I/O errors.",
    )
    val.add_argument("files", nargs="+", metavar="FILE", help=".ktir/.mlir files, directories (searched for them), or - for stdin")
    val.add_argument("--format", choices=("text", "json"), default="text", help="json: one object per diagnostic on stdout")
    val.add_argument("--werror", action="store_true", help="treat warnings as errors")
    val.add_argument("--notes", action="store_true", help="also show notes (properties that could not be decided statically)")
    val.add_argument("-q", "--quiet", action="store_true", help="print nothing for valid files")
    val.set_defaults(run=cmd_validate)
    _add_batch_options(val)

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
    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 (or a C locale) prints escaped, never raises
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser(_command_of(argv))
    try:
        if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
            # argparse would only say that COMMAND is missing, not what was wrong
            parser.error(f"unrecognized option {argv[0]} (options of a command go after it: ktir COMMAND --help)")
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
