"""Command-line pieces: `ktir targets list|show|schema`, and the cost options of `ktir run`.

Wiring, in ktir/cli.py inside build_parser(), next to the other subcommands:

    from ktir.targets.cli import add_targets_parser
    add_targets_parser(sub)

and in `ktir run` (reference_interp/cli.py): rename its raw event-trace option to
`--event-trace`, call `add_cost_arguments(p)` in add_run_parser (it adds `--report`,
`--report-json PATH` and `--trace PATH`), run with
`trace=bool(args.event_trace) or wants_cost(args)`, and end cmd_run with
`return emit_cost_outputs(args, module, result)`. The cost target is the run's `--target`
(default spyre).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads with the command that prints a table, not with `ktir run --help`
    from rich.console import Console

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
DEFAULT_TARGET = "spyre"


def add_targets_parser(subparsers: Any) -> argparse.ArgumentParser:
    """`ktir targets list | show NAME | schema`."""
    p = subparsers.add_parser(
        "targets", help="list and show hardware target descriptions",
        description="Hardware target descriptions: the built-in ones (spyre, ...) or any .toml file.",
    )
    sub = p.add_subparsers(dest="targets_command", required=True, metavar="ACTION")
    ls = sub.add_parser("list", help="the built-in targets", description="List the built-in target descriptions.")
    ls.add_argument("--json", action="store_true", help="one JSON object per target on stdout")
    ls.set_defaults(run=cmd_targets_list)
    show = sub.add_parser("show", help="every figure of a target with its source",
                          description="Validate a target (built-in name or .toml path) and show every figure with its provenance.")
    show.add_argument("name", metavar="NAME|FILE", help="a built-in target name, or a .toml file to validate")
    show.add_argument("--json", action="store_true", help="print the validated description as JSON")
    show.set_defaults(run=cmd_targets_show)
    schema = sub.add_parser("schema", help="print the JSON Schema of target descriptions",
                            description="Print (or write) the JSON Schema that target descriptions follow.")
    schema.add_argument("-o", "--output", metavar="PATH", help="write it here instead of stdout")
    schema.set_defaults(run=cmd_targets_schema)
    return p


WIDE = 120  # from this width on, figures are a four-column table; below, a list (piped output: 80)


def _console() -> Console:
    """stdout at the terminal's width, or 80 columns when piped: every table here fits that,
    wrapping its text rather than dropping a column."""
    from rich.console import Console

    return Console(file=sys.stdout)


def cmd_targets_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from .loader import TargetError, builtin_targets, load_target

    rows = []
    for name in builtin_targets():
        try:
            t = load_target(name)
        except TargetError as e:
            print(f"ktir targets: {e}", file=sys.stderr)
            return EXIT_INVALID
        rows.append(_summary(t))
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return EXIT_OK
    # one column per target and one row per figure: seven figures side by side do not fit 80
    # columns, a handful of targets do (a long title wraps in its cell)
    table = Table(title="Built-in targets", title_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    for r in rows:
        table.add_column(r["name"], overflow="fold")
    lines = {
        "title": [r["title"] for r in rows],
        "tiles": [str(r["tiles"]) for r in rows],
        "interconnect": [r["interconnect"] for r in rows],
        "clock": [f"{r['clock_hz'] / 1e9:.3g} GHz" for r in rows],
        "global memory": [f"{r['global_bandwidth_bytes_per_s'] / 1e9:.0f} GB/s" for r in rows],
        "local memory": [f"{r['local_capacity_bytes'] / 2**20:.3g} MiB / tile" for r in rows],
        "peak": [r["peak"] for r in rows],
    }
    for label, cells in lines.items():
        table.add_row(label, *cells)
    _console().print(table)
    return EXIT_OK


def _summary(t: Any) -> dict[str, Any]:
    from .machine import Machine

    m = Machine(t)
    best = max(((d, t.peak_macs_per_cycle(d)) for d in t.dtypes), key=lambda p: p[1], default=("", 0.0))
    ic = t.interconnect
    shape = f" {ic.shape.value[0]}x{ic.shape.value[1]}" if ic.topology == "mesh2d" else ""
    return {
        "name": t.name, "title": t.title, "tiles": m.n_tiles, "interconnect": f"{ic.topology}{shape}",
        "clock_hz": m.clock_hz, "global_bandwidth_bytes_per_s": m.global_bw * m.clock_hz,
        "local_capacity_bytes": m.local_capacity,
        "peak": f"{2 * best[1] * m.clock_hz / 1e12:.3g} T{'FLOP' if best[0].startswith(('f', 'b')) else 'OP'}/s {best[0]}",
    }


def cmd_targets_show(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from .loader import TargetError, load_target

    try:
        t = load_target(args.name)
    except TargetError as e:
        print(f"ktir targets show: {e}", file=sys.stderr)
        return EXIT_INVALID if Path(args.name).exists() else EXIT_USAGE
    if args.json:
        print(t.model_dump_json(indent=2, exclude_none=True))
        return EXIT_OK
    console = _console()
    # the file's text is escaped: `[/x]` in a title or note is no markup
    console.print(f"[bold]{escape(t.title)}[/bold]  " + escape(f"({t.name}, schema version {t.schema_version})"))
    console.print(escape(" ".join(t.description.split())))
    console.print()
    _print_figures(console, t)
    derived = Table(title="Derived peaks", title_justify="left")
    for col in ("dtype", "MACs/cycle per tile", "whole target"):
        derived.add_column(col)
    for d in t.dtypes:
        total = t.peak_macs_per_cycle(d)
        if total:
            derived.add_row(d, f"{total / t.tiles.count.value:g}", f"{2 * total * t.clock_hz / 1e12:.4g} T{'FLOP' if d[0] in 'fb' else 'OP'}/s")
    console.print(derived)
    sources = Table(title="Sources", title_justify="left")
    for col in ("key", "document", "url"):
        sources.add_column(col, overflow="fold")
    for key, s in t.sources.items():
        sources.add_row(escape(key), escape(s.title), escape(s.url or ""))
    console.print(sources)
    if t.assumptions:
        assumptions = Table(title="Assumptions", title_justify="left")
        assumptions.add_column("key")
        assumptions.add_column("reasoning", overflow="fold")
        for key, a in t.assumptions.items():
            assumptions.add_row(escape(key), escape(" ".join(a.reasoning.split())))
        console.print(assumptions)
    return EXIT_OK


def _print_figures(console: Console, t: Any) -> None:
    """Every figure with its value, provenance and derivation: a table on a wide terminal; on a
    narrow one (piped: 80 columns) a list, each derivation wrapped under its figure."""
    from rich.markup import escape
    from rich.padding import Padding
    from rich.table import Table

    from .schema import iter_quantities

    rows = []
    for path, q in iter_quantities(t):
        value = getattr(q, "value", None)
        unit = getattr(q, "unit", "")
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        # the file's text is escaped: `[/x]` in a path or note is no markup
        prov = escape(f"source: {q.source}") if q.source else f"[yellow]{escape(f'assumption: {q.assumption}')}[/yellow]"
        rows.append((escape(path), f"{shown} {unit}".strip(), prov, escape(q.note or "")))
    if console.width >= WIDE:
        figures = Table(title="Figures", title_justify="left")
        figures.add_column("figure", overflow="fold")
        figures.add_column("value", no_wrap=True)
        figures.add_column("provenance", overflow="fold")
        figures.add_column("derivation", ratio=1)
        for row in rows:
            figures.add_row(*row)
        console.print(figures)
        return
    console.print("[bold]Figures[/bold]  (figure = value, provenance; the derivation below it)")
    for path, value, prov, note in rows:
        console.print(f"[bold]{path}[/bold] = {value}  ({prov})", overflow="fold")
        if note:
            console.print(Padding(note, (0, 0, 0, 4), expand=False))


def cmd_targets_schema(args: argparse.Namespace) -> int:
    from ktir.fileio import write_atomic

    from .schema import json_schema_text

    text = json_schema_text()
    if args.output:
        try:
            write_atomic(args.output, text)
        except OSError as e:
            print(f"ktir targets schema: cannot write {args.output}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    sys.stdout.write(text)
    return EXIT_OK


# ---------------------------------------------------------------------- ktir run


def add_cost_arguments(parser: argparse.ArgumentParser, trace_option: str = "--trace") -> None:
    """The cost-model options of `ktir run`. The target comes from the run's --target (default spyre)."""
    group = parser.add_argument_group("cost model", "estimate the kernel's time on --target from the run's event trace")
    group.add_argument("--report", action="store_true", help="print the cost report (estimate, roofline, bottleneck) as tables")
    group.add_argument("--report-json", metavar="PATH", help="write the cost report as JSON")
    group.add_argument(trace_option, dest="perfetto", metavar="PATH",
                       help="write the timeline as Chrome/Perfetto trace-event JSON (open in ui.perfetto.dev)")
    group.add_argument("--timeline", metavar="OUT.svg",
                       help="draw the timeline as a picture (SVG: each resource of the first tiles, the busiest shared channels)")


def wants_cost(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "report", False) or getattr(args, "report_json", None) or getattr(args, "perfetto", None)
                or getattr(args, "timeline", None))


def emit_cost_outputs(args: argparse.Namespace, module: Any, result: Any) -> int:
    """After `ktir run`: estimate on args.target and print/write what was asked. Returns an exit code."""
    if not wants_cost(args):
        return EXIT_OK
    return cost_outputs(
        module, result, target=getattr(args, "target", None) or DEFAULT_TARGET, func=getattr(args, "func", None),
        report=bool(getattr(args, "report", False)), report_json=getattr(args, "report_json", None),
        trace_path=getattr(args, "perfetto", None), timeline_path=getattr(args, "timeline", None),
        name=getattr(args, "file", None),
    )


def cost_outputs(module: Any, result: Any, target: str, func: str | None = None, report: bool = True,
                 report_json: str | None = None, trace_path: str | None = None, console: Console | None = None,
                 timeline_path: str | None = None, name: str | None = None) -> int:
    from ktir.fileio import write_atomic

    from .from_interp import from_interp
    from .loader import TargetError, load_target
    from .perfetto import write_trace
    from .records import TraceError
    from .report import estimate, print_report

    try:
        spec = load_target(target)
    except TargetError as e:
        print(f"ktir run: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        converted = from_interp(module, result, func)
        est = estimate(converted.trace, spec, converted.warnings)
    except (TraceError, ValueError) as e:
        print(f"ktir run: cannot estimate on {spec.name}: {e}", file=sys.stderr)
        return EXIT_INVALID
    try:
        if report_json:
            write_atomic(report_json, est.report.model_dump_json(indent=2) + "\n")
        if trace_path:
            write_trace(est.timeline, trace_path, converted.trace.name)
        if timeline_path:
            write_atomic(timeline_path, timeline_picture(est, spec.name, name or converted.trace.name))
    except OSError as e:
        print(f"ktir run: cannot write output: {e}", file=sys.stderr)
        return EXIT_USAGE
    if report:
        print_report(est.report, console or _console())
    return EXIT_OK


def timeline_picture(est: Any, target: str, name: str) -> str:
    """`ktir run --timeline`: the estimate's timeline as SVG, titled with what it shows."""
    from .svg import render_svg

    r = est.report
    bound = f", bound by {r.binding.resource}" if r.binding else ""
    title = (f"{Path(name).name} on {target}: {r.estimate_seconds * 1e6:.3g} µs, "
             f"{r.ratio_to_roofline:.2f} x the roofline bound{bound}")
    return render_svg(est.timeline, title)
