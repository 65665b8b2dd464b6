"""`ktir schedule`: schedule a kernel for a target, optionally check it and write the report.

Wire it into `ktir/cli.py` with:

    from schedulers.cli import add_schedule_parser
    add_schedule_parser(sub)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_schedule_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "schedule",
        help="divide a kernel over a target's tiles, tile it for the scratchpad, double-buffer its loads",
        description="Schedule FILE's kernel for --target with a scheduler plugin and print its report. "
        "Exit 0 on success, 1 when the input is invalid, no legal schedule exists or --check fails, 2 on usage "
        "or I/O errors. Outputs are written atomically, and only on success: a failed run leaves earlier files "
        "intact.",
    )
    p.add_argument("file", metavar="FILE", help="a .ktir or .mlir file, or - for stdin")
    p.add_argument("--target", required=True, metavar="NAME", help="target name (see `ktir targets`) or a .toml path")
    p.add_argument("--scheduler", default="exact", metavar="NAME",
                   help="scheduler (entry-point group ktir.schedulers); built-in: baseline, exact, search")
    p.add_argument("-o", "--output", metavar="OUT.ktir", help="write the scheduled module here (atomically)")
    p.add_argument("--report-json", metavar="PATH", help="write the schedule report as JSON")
    p.add_argument("--check", action="store_true",
                   help="run input and output in the reference interpreter on random inputs and compare; "
                   "on a mismatch exit 1 and write nothing")
    p.add_argument("--time-budget", type=_seconds, default=1.5, metavar="S", help="seconds a search may spend (default 1.5)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=INT",
                   help="value of an index argument that sizes tensors (e.g. --size M=2048); repeatable")
    p.add_argument("--func", metavar="NAME", help="the function to schedule when the file has several")
    p.add_argument("--seed", type=int, default=0, help="seed of randomized schedulers and of --check inputs")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the report table")
    p.set_defaults(run=cmd_schedule)
    return p


def _seconds(text: str) -> float:
    """A --time-budget value: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, got {text!r}")
    return value


def _sizes(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name.strip().lstrip("%")] = int(value, 0)
        except ValueError:
            raise ValueError(f"--size {item!r}: expected NAME=INT") from None
    return out


def cmd_schedule(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ktir.fileio import InputError, read_source, write_atomic
    from ktir.syntax.diagnostics import KtirError, render
    from ktir.syntax.printer import print_module
    from ktir.targets.loader import TargetError, load_target
    from ktir.verify import validate_text

    from . import ScheduleError, ScheduleOptions, schedule
    from .check import check_equivalent
    from .report import render_table

    err = Console(file=sys.stderr)
    name = "<stdin>" if args.file == "-" else args.file
    try:
        source = read_source(args.file)
        sizes = _sizes(args.size)
        target = load_target(args.target)
    except (InputError, ValueError, TargetError) as e:
        print(f"ktir schedule: {e}", file=sys.stderr)
        return EXIT_USAGE
    module, diagnostics = validate_text(source, name)
    errors = [d for d in diagnostics if d.severity == "error"]
    if module is None or errors:
        for d in errors:
            print(render(d, source), file=sys.stderr)
        return EXIT_INVALID
    options = ScheduleOptions(sizes=sizes, time_budget=args.time_budget, seed=args.seed, func=args.func)
    try:
        with err.status(f"scheduling {name} with {args.scheduler}"):
            result = schedule(module, target, args.scheduler, options)
    except ScheduleError as e:
        print(f"ktir schedule: {name}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    text = print_module(result.module)
    _, out_diags = validate_text(text, args.output or "<scheduled>")
    bad = [d for d in out_diags if d.severity == "error"]
    if bad:
        for d in bad:
            print(render(d, text), file=sys.stderr)
        print(f"ktir schedule: scheduler {args.scheduler!r} produced an invalid module", file=sys.stderr)
        return EXIT_INVALID
    if args.check:
        with err.status("checking the scheduled module against the input in the reference interpreter"):
            try:
                verdict = check_equivalent(module, result.module, sizes, args.func, args.seed)
            except KtirError as e:
                for d in e.diagnostics:
                    print(render(d, source), file=sys.stderr)
                return EXIT_INVALID
            except ScheduleError as e:
                print(f"ktir schedule: {name}: error: {e}", file=sys.stderr)
                return EXIT_INVALID
        print(f"check: {'ok' if verdict.ok else 'FAILED'}: {verdict.message}", file=sys.stderr)
        result.report.notes.append(f"--check: {verdict.message}")
        if not verdict.ok:
            # nothing is written: a wrong module must not replace an earlier good one, nor reach a pipe
            if not args.quiet:
                Console(file=sys.stderr).print(render_table(result.report))
            written = [p for p in (args.output, args.report_json) if p]
            print(f"ktir schedule: {name}: error: --check failed"
                  + (f"; not written: {', '.join(written)}" if written else ""), file=sys.stderr)
            return EXIT_INVALID
    # every destination is checked before the first is replaced: one bad path leaves all earlier files intact
    for path in (args.output, args.report_json):
        parent = Path(path).resolve().parent if path else None
        if parent is not None and not (parent.is_dir() and os.access(parent, os.W_OK)):
            print(f"ktir schedule: cannot write {path}: {parent} is not a writable directory; nothing written",
                  file=sys.stderr)
            return EXIT_USAGE
    try:
        if args.output:
            write_atomic(args.output, text)
        if args.report_json:
            write_atomic(args.report_json, result.report.model_dump_json(indent=2) + "\n")
    except OSError as e:
        print(f"ktir schedule: cannot write output: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    if not args.quiet:
        Console(file=sys.stdout if args.output else sys.stderr).print(render_table(result.report))
    if not args.output:
        sys.stdout.write(text)
    return EXIT_OK
