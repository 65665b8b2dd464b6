"""`ktir conformance run | report | compare | schema | list`: thin wrappers over the runner and reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.levels import LEVELS, OPTIONAL_DTYPES, OPTIONAL_LEVELS

MAY_BE_OPTIONAL = sorted({lv for levels in OPTIONAL_LEVELS.values() for lv in levels})

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_conformance_parser(sub: Any) -> None:
    conf = sub.add_parser("conformance", help="run the KTIR conformance suite against an implementation",
                          description="Run the conformance suite, render a saved run, or print the results schema.")
    csub = conf.add_subparsers(dest="conformance_command", required=True, metavar="ACTION")

    run = csub.add_parser("run", help="run cases against an adapter",
                          description="Exit 0 when every selected case passes or is excused (left out by the "
                                      "capability file, or waived); 1 otherwise; 2 on usage errors. The results say "
                                      "per level whether it is certified, and whether the implementation is conformant.")
    who = run.add_mutually_exclusive_group()
    who.add_argument("--adapter", default="reference", metavar="NAME",
                     help="`reference` (default) or `python:pkg.mod:Class`")
    who.add_argument("--adapter-cmd", metavar="CMD", help="external program: 'CMD {ktir} {inputs} {outputs}' (per case), "
                     "or with --adapter-protocol persistent a server of JSON-line requests")
    run.add_argument("--adapter-protocol", choices=("per-case", "persistent"), default="per-case",
                     help="how --adapter-cmd is driven: started once per case (default) or once per worker, serving "
                          "many cases over stdin/stdout")
    run.add_argument("--level", action="append", choices=LEVELS, help="run only this level (repeatable)")
    run.add_argument("-k", dest="pattern", metavar="PATTERN", help="only case ids containing PATTERN (or matching a glob)")
    run.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    run.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds per case (default 60; 0 = none)")
    run.add_argument("--capabilities", type=Path, metavar="FILE",
                     help="the implementation's capability file (TOML or JSON): name, version, kinds, levels, optional "
                          "types and ops; cases outside it are not run")
    run.add_argument("--waivers", type=Path, metavar="FILE", help="reviewed waivers (TOML or JSON), one reason per case")
    run.add_argument("--optional", action="append", choices=MAY_BE_OPTIONAL, default=[], metavar="LEVEL",
                     help=f"without a capability file: leave out a level the spec lets be optional ({', '.join(MAY_BE_OPTIONAL)})")
    run.add_argument("--optional-dtype", action="append", choices=OPTIONAL_DTYPES, default=[], metavar="TYPE",
                     help="without a capability file: leave out an optional element type (f64, f8E4M3FN, f8E5M2)")
    run.add_argument("--report", type=Path, metavar="results.json", help="write the results as JSON")
    run.add_argument("--junit", type=Path, metavar="results.xml", help="write JUnit XML")
    run.add_argument("--html", type=Path, metavar="report.html", help="write an HTML report")
    run.add_argument("--suite", type=Path, help=argparse.SUPPRESS)  # another suite root (tests)
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    run.set_defaults(run=cmd_run)

    rep = csub.add_parser("report", help="render a saved results.json", description="Print the summary of a saved run; "
                          "optionally convert it to JUnit XML or HTML. Exit status as for `run`.")
    rep.add_argument("results", type=Path, metavar="results.json")
    rep.add_argument("--junit", type=Path, metavar="results.xml")
    rep.add_argument("--html", type=Path, metavar="report.html")
    rep.set_defaults(run=cmd_report)

    cmp = csub.add_parser("compare", help="what changed between two saved runs",
                          description="Show suite, implementation, verdict and case status changes from A to B. "
                                      "Exit 1 when B regressed (a case or a level got worse), 0 otherwise, 2 on usage errors.")
    cmp.add_argument("a", type=Path, metavar="A.json")
    cmp.add_argument("b", type=Path, metavar="B.json")
    cmp.set_defaults(run=cmd_compare)

    sch = csub.add_parser("schema", help="print the JSON Schema of results (or capability, waivers) files")
    sch.add_argument("which", nargs="?", default="results", choices=("results", "capabilities", "waivers"))
    sch.set_defaults(run=cmd_schema)

    lst = csub.add_parser("list", help="list the cases (id, level, ops)")
    lst.add_argument("--level", action="append", choices=LEVELS)
    lst.add_argument("-k", dest="pattern", metavar="PATTERN")
    lst.set_defaults(run=cmd_list)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from conformance.adapters import AdapterError
    from conformance.capability import DeclarationError, load_capabilities, load_waivers
    from conformance.model import SUITE_ROOT, ManifestError, load_suite
    from conformance.reports import print_report, write_reports
    from conformance.runner import AdapterSpec, run_suite, select

    console = Console(stderr=True)
    root = args.suite or SUITE_ROOT
    if not 1 <= args.jobs <= 1024:
        print("ktir conformance: -j must be at least 1 (and at most 1024)", file=sys.stderr)
        return EXIT_USAGE
    if not 0 <= args.timeout <= 1e6:  # also NaN; the timer takes at most about 3e7 years
        print("ktir conformance: --timeout is seconds from 0 (none) to 1000000", file=sys.stderr)
        return EXIT_USAGE
    if args.capabilities and (args.optional or args.optional_dtype):
        print("ktir conformance: --optional and --optional-dtype go in the capability file when one is given", file=sys.stderr)
        return EXIT_USAGE
    try:
        suite = load_suite(root)
        cases = select(suite, args.level, args.pattern)
        capabilities = load_capabilities(args.capabilities) if args.capabilities else None
        waivers = load_waivers(args.waivers, suite) if args.waivers else None
    except (ManifestError, DeclarationError) as e:
        print(f"ktir conformance: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not cases:
        print("ktir conformance: no case matches the selection", file=sys.stderr)
        return EXIT_USAGE
    spec = AdapterSpec(adapter=args.adapter, command=args.adapter_cmd, protocol=args.adapter_protocol)
    selection = {k: v for k, v in (("level", ",".join(args.level or [])), ("pattern", args.pattern or "")) if v}
    timeout = args.timeout or None
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("[red]{task.fields[bad]}"), console=console, transient=True, disable=args.quiet) as bar:
        task = bar.add_task("conformance", total=len(cases), bad="")
        failed = 0

        def tick(result: Any) -> None:
            nonlocal failed
            if result.status != "pass" and result.excused is None:
                failed += 1
            bar.update(task, advance=1, description=result.level, bad=f"{failed} not passing" if failed else "")

        try:
            results = run_suite(cases, spec, jobs=args.jobs, timeout=timeout, capabilities=capabilities, waivers=waivers,
                                optional_levels=set(args.optional), optional_dtypes=set(args.optional_dtype),
                                selection=selection, root=root, on_result=tick)
        except AdapterError as e:
            print(f"ktir conformance: {e}", file=sys.stderr)
            return EXIT_USAGE
    print_report(results, console)
    try:
        write_reports(results, args.report, args.junit, args.html, root)
    except OSError as e:
        print(f"ktir conformance: cannot write a report: {e.strerror}: {e.filename}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if results.passed else EXIT_FAILED


def cmd_report(args: argparse.Namespace) -> int:
    from rich.console import Console

    from conformance.reports import print_report, write_reports
    from conformance.results import ResultsError, load_results

    console = Console()
    try:
        results = load_results(args.results)
    except ResultsError as e:
        print(f"ktir conformance report: {e}", file=sys.stderr)
        return EXIT_USAGE
    print_report(results, console)
    try:
        write_reports(results, None, args.junit, args.html)
    except OSError as e:
        print(f"ktir conformance report: cannot write: {e.strerror}: {e.filename}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if results.passed else EXIT_FAILED


def cmd_compare(args: argparse.Namespace) -> int:
    from conformance.compare import compare_runs
    from conformance.results import ResultsError, load_results

    try:
        a, b = load_results(args.a), load_results(args.b)
    except ResultsError as e:
        print(f"ktir conformance compare: {e}", file=sys.stderr)
        return EXIT_USAGE
    diff = compare_runs(a, b)
    try:
        print("\n".join(diff.lines()))
    except BrokenPipeError:  # `| head`
        sys.stderr.close()
    return EXIT_FAILED if diff.worse else EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from conformance.capability import json_schemas
    from conformance.reports import schema_text

    sys.stdout.write(schema_text() if args.which == "results" else json.dumps(json_schemas()[args.which], indent=2) + "\n")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from conformance.model import ManifestError, load_suite
    from conformance.runner import select

    try:
        cases = select(load_suite(), args.level, args.pattern)
    except ManifestError as e:
        print(f"ktir conformance: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        for c in cases:
            print(f"{c.id}\t{c.level}\t{c.expect}\t{' '.join(c.ops)}")
    except BrokenPipeError:  # `| head`
        sys.stderr.close()
    return EXIT_OK
