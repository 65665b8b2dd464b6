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
from typing import TYPE_CHECKING, Any

from ktir.dialects.names import Func

if TYPE_CHECKING:
    from ktir.ir.operation import Module, Operation
    from ktir.targets.schema import Target

    from .report import ScheduleReport

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
    p.add_argument("--report-html", metavar="PATH",
                   help="write the report as an HTML page with the timeline before and after scheduling")
    p.add_argument("--check", action="store_true",
                   help="run input and output in the reference interpreter on random inputs and compare; "
                   "on a mismatch exit 1 and write nothing")
    p.add_argument("--time-budget", type=_seconds, default=1.5, metavar="S", help="seconds a search may spend (default 1.5)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=INT",
                   help="value of an index argument that sizes tensors, a positive integer (e.g. --size M=2048); "
                   "repeatable")
    p.add_argument("--func", metavar="NAME", help="the function to schedule when the file has several")
    p.add_argument("--seed", type=int, default=0, help="seed of randomized schedulers and of --check inputs")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="do not print the report table (the outcome, applied or declined, is still stated per function)")
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


class UsageError(ValueError):
    """A command-line value that cannot be used (exit 2)."""


def _sizes(items: list[str]) -> dict[str, int]:
    """`--size NAME=INT` values: a name and a positive integer each."""
    out: dict[str, int] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip().lstrip("%")
        try:
            number = int(value, 0)
        except ValueError:
            number = None
        if not eq or not name or number is None:
            raise UsageError(f"--size {item!r}: expected NAME=INT, an index argument's name and an integer")
        if number <= 0:
            raise UsageError(f"--size {item!r}: a size must be a positive integer, not {number}")
        if name in out and out[name] != number:
            raise UsageError(f"--size {name} is given twice ({out[name]} and {number})")
        out[name] = number
    return out


def _check_size_names(module: Module, sizes: dict[str, int], func: str | None) -> None:
    """Refuse a --size that names no index argument of the function(s) that may be scheduled."""
    from ktir.ir import types as ty

    functions = [f for f in module.functions() if func is None or _name(f) == func]
    if func is not None and not functions:
        raise UsageError(f"--func {func}: the module has no function @{func} "
                         f"(functions: {', '.join('@' + _name(f) for f in module.functions()) or 'none'})")
    known = {a.name.lstrip("%") for f in functions if f.regions and f.regions[0].blocks
             for a in f.regions[0].blocks[0].arguments if isinstance(a.type, ty.IndexType)}
    unknown = sorted(set(sizes) - known)
    if unknown:
        where = (f"@{_name(functions[0])} has" if len(functions) == 1 else "no function of the module has")
        raise UsageError(f"--size {unknown[0]}={sizes[unknown[0]]}: {where} no index argument %{unknown[0]} "
                         f"(index arguments: {', '.join(sorted(known)) or 'none'})")


def _name(fn: Operation) -> str:
    return str(getattr(fn.attributes.get("sym_name"), "value", ""))


def whole_module(original: Module, scheduled: Module, func: str) -> Module:
    """`original` with function @func replaced by its schedule: `-o` always writes the whole module,
    other functions unchanged, whether the scheduler rewrote one function or returned them all.
    Aliases the schedule defines are added; one whose name the input uses for something else is
    renamed (`#a` -> `#a_sched`)."""
    import re

    from ktir.syntax.parser import parse
    from ktir.syntax.printer import print_module

    wanted = {_name(f) for f in original.functions()}
    if wanted <= {_name(f) for f in scheduled.functions()}:
        return scheduled
    clash = [k for k, v in scheduled.attr_aliases.items() if k in original.attr_aliases and original.attr_aliases[k] != v]
    clash += [k for k, v in scheduled.type_aliases.items() if k in original.type_aliases and original.type_aliases[k] != v]
    if clash:
        text = print_module(scheduled)
        for k in clash:
            text = re.sub(rf"([#!]){re.escape(k)}(?![\w$.-])", rf"\g<1>{k}_sched", text)
        scheduled = parse(text, original.filename or "<scheduled>")
    try:
        new = scheduled.function(func)
    except KeyError:
        return scheduled  # nothing to splice: the scheduler's module is the output
    merged = original.model_copy(deep=True)
    _replace_function(merged.operations, func, new)
    for key in scheduled.alias_order:
        bare = key[1:]
        table = merged.attr_aliases if key.startswith("#") else merged.type_aliases
        source = scheduled.attr_aliases if key.startswith("#") else scheduled.type_aliases
        if bare in source and bare not in table:
            table[bare] = source[bare]  # type: ignore[assignment]
            merged.alias_order.append(key)
            if key in scheduled.alias_comments:
                merged.alias_comments[key] = scheduled.alias_comments[key]
    return merged


def _replace_function(ops: list[Operation], func: str, new: Operation) -> bool:
    for i, op in enumerate(ops):
        if op.name == Func.func and _name(op) == func:
            ops[i] = new
            return True
        for region in op.regions:
            for block in region.blocks:
                if _replace_function(block.operations, func, new):
                    return True
    return False


def outcome_lines(report: ScheduleReport, module: Module) -> list[str]:
    """One line per function: what happened to it (stated even with -q)."""
    lines = []
    for fn in module.functions():
        name = _name(fn)
        if name != report.kernel:
            lines.append(f"@{name}: unchanged (not scheduled; --func {name} schedules it)")
        elif report.applied:
            grid = report.schedule.grid if report.schedule is not None else "?"
            ratio = (f", {report.timeline_ratio:.2f}x the roofline bound on the timeline"
                     if report.timeline_ratio is not None else "")
            lines.append(f"@{name}: applied by {report.scheduler} ({report.kernel_class}), grid {grid}{ratio}")
        else:
            lines.append(f"@{name}: declined by {report.scheduler}, written unchanged: {report.reason}")
    return lines


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
    except (InputError, UsageError, TargetError) as e:
        print(f"ktir schedule: {e}", file=sys.stderr)
        return EXIT_USAGE
    module, diagnostics = validate_text(source, name)
    errors = [d for d in diagnostics if d.severity == "error"]
    if module is None or errors:
        for d in errors:
            print(render(d, source), file=sys.stderr)
        return EXIT_INVALID
    try:
        _check_size_names(module, sizes, args.func)
    except UsageError as e:
        print(f"ktir schedule: {e}", file=sys.stderr)
        return EXIT_USAGE
    options = ScheduleOptions(sizes=sizes, time_budget=args.time_budget, seed=args.seed, func=args.func)
    try:
        with err.status(f"scheduling {name} with {args.scheduler}"):
            result = schedule(module, target, args.scheduler, options)
    except ScheduleError as e:
        print(f"ktir schedule: {name}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    report = result.report
    # a fresh parse of the input: the scheduler may have kept references into `module`
    original, _ = validate_text(source, name)
    assert original is not None
    output = whole_module(original, result.module, report.kernel)
    text = print_module(output)
    _, out_diags = validate_text(text, args.output or "<scheduled>")
    bad = [d for d in out_diags if d.severity == "error"]
    if bad:
        for d in bad:
            print(render(d, text), file=sys.stderr)
        print(f"ktir schedule: scheduler {args.scheduler!r} produced an invalid module", file=sys.stderr)
        return EXIT_INVALID
    if report.applied and report.timeline_cycles is None and report.roofline_cycles:
        with err.status("measuring the schedule on the timeline"):
            _fill_timeline(report, output, target, sizes)
    if args.check:
        with err.status("checking the scheduled module against the input in the reference interpreter"):
            try:
                verdict = check_equivalent(module, output, sizes, report.kernel or args.func, args.seed)
            except KtirError as e:
                for d in e.diagnostics:
                    print(render(d, source), file=sys.stderr)
                return EXIT_INVALID
            except ScheduleError as e:
                print(f"ktir schedule: {name}: error: {e}", file=sys.stderr)
                return EXIT_INVALID
        print(f"check: {'ok' if verdict.ok else 'FAILED'}: {verdict.message}", file=sys.stderr)
        report.notes.append(f"--check: {verdict.message}")
        if not verdict.ok:
            # nothing is written: a wrong module must not replace an earlier good one, nor reach a pipe
            if not args.quiet:
                Console(file=sys.stderr).print(render_table(report))
            written = [p for p in (args.output, args.report_json, args.report_html) if p]
            print(f"ktir schedule: {name}: error: --check failed"
                  + (f"; not written: {', '.join(written)}" if written else ""), file=sys.stderr)
            return EXIT_INVALID
    # every destination is checked before the first is replaced: one bad path leaves all earlier files intact
    for path in (args.output, args.report_json, args.report_html):
        parent = Path(path).resolve().parent if path else None
        if parent is not None and not (parent.is_dir() and os.access(parent, os.W_OK)):
            print(f"ktir schedule: cannot write {path}: {parent} is not a writable directory; nothing written",
                  file=sys.stderr)
            return EXIT_USAGE
    html = None
    if args.report_html:
        with err.status("drawing the timeline before and after scheduling"):
            html = _html(report, original, output, target, sizes, name)
    try:
        if args.output:
            write_atomic(args.output, text)
        if args.report_json:
            write_atomic(args.report_json, report.model_dump_json(indent=2) + "\n")
        if html is not None:
            write_atomic(args.report_html, html)
    except OSError as e:
        print(f"ktir schedule: cannot write output: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    if not args.quiet:
        Console(file=sys.stdout if args.output else sys.stderr).print(render_table(report))
    for line in outcome_lines(report, output):
        print(f"ktir schedule: {line}", file=sys.stderr)
    if not args.output:
        sys.stdout.write(text)
    return EXIT_OK


def _fill_timeline(report: ScheduleReport, module: Module, target: Target, sizes: dict[str, int]) -> None:
    """The schedule's timeline figure, when the scheduler did not simulate it: the report's ratio becomes
    the timeline's (the model's estimate stays in `estimate_cycles`)."""
    from .report import simulate_module

    try:
        timeline = simulate_module(module, target, report.kernel, sizes)
    except Exception as e:  # noqa: BLE001 - a figure that cannot be measured is said so, not a failed schedule
        report.notes.append(f"not measured on the timeline: {e}")
        return
    report.timeline_cycles = float(timeline.makespan)
    if report.roofline_cycles:
        report.timeline_ratio = report.ratio = report.timeline_cycles / report.roofline_cycles
    report.notes.append("timeline: measured by ktir schedule from the interpreter's shapes-only trace; the ratio is "
                        "the timeline's")


def _html(report: ScheduleReport, before: Module, after: Module, target: Target, sizes: dict[str, int],
          name: str) -> str:
    from .report import render_html, simulate_module

    pictures: dict[str, Any] = {}
    for label, module in (("before", before), ("after", after)):
        try:
            pictures[label] = simulate_module(module, target, report.kernel, sizes)
        except Exception as e:  # noqa: BLE001 - the page says why a picture is missing
            pictures[label] = f"not simulated: {e}"
    return render_html(report, pictures["before"], pictures["after"], name)
