"""Rendering results: a rich summary table, JUnit XML and a standalone HTML page."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console
from rich.table import Table

from conformance.results import STATUSES, Results, json_schema

STYLE = {"pass": "green", "fail": "red", "error": "magenta", "not_supported": "yellow", "timeout": "red"}


def summary_table(results: Results) -> Table:
    table = Table(title=f"KTIR conformance — adapter {results.adapter}")
    table.add_column("level")
    for s in STATUSES:
        table.add_column(s, justify="right", style=STYLE[s])
    table.add_column("total", justify="right")
    for row in results.summary:
        name = f"{row.level} (optional)" if row.optional else row.level
        table.add_row(name, *(str(row.counts.get(s, 0)) for s in STATUSES), str(row.total))
    totals = {s: sum(r.counts.get(s, 0) for r in results.summary) for s in STATUSES}
    table.add_row("all", *(str(totals[s]) for s in STATUSES), str(sum(r.total for r in results.summary)), style="bold")
    return table


def print_report(results: Results, console: Console, failures: int = 20) -> None:
    """The summary table, then the first `failures` cases that did not pass."""
    console.print(summary_table(results))
    bad = [c for c in results.cases if c.status != "pass"]
    for c in bad[:failures]:
        console.print(f"[{STYLE[c.status]}]{c.status}[/] {c.id}: {c.message}", highlight=False)
    if len(bad) > failures:
        console.print(f"... and {len(bad) - failures} more (see the JSON report)")
    verdict = "[green]conformant[/green]" if results.conformant else "[red]not conformant[/red]"
    console.print(f"{verdict}: {len(results.cases)} cases in {results.duration_s:.1f} s with {results.jobs} job(s)")


def to_json(results: Results) -> str:
    return results.model_dump_json(indent=1) + "\n"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


def to_junit(results: Results) -> str:
    suites = ET.Element("testsuites", name="ktir-conformance", tests=str(len(results.cases)),
                        time=f"{results.duration_s:.3f}")
    for row in results.summary:
        mine = [c for c in results.cases if c.level == row.level]
        suite = ET.SubElement(suites, "testsuite", name=row.level, tests=str(row.total),
                              failures=str(row.counts["fail"]), errors=str(row.counts["error"] + row.counts["timeout"]),
                              skipped=str(row.counts["not_supported"]), time=f"{sum(c.duration_s for c in mine):.3f}")
        for c in mine:
            case = ET.SubElement(suite, "testcase", classname=f"ktir.conformance.{c.level}", name=c.id, time=f"{c.duration_s:.4f}")
            if c.status == "fail":
                ET.SubElement(case, "failure", message=c.message).text = c.message
            elif c.status in ("error", "timeout"):
                ET.SubElement(case, "error", message=c.message, type=c.status).text = c.message
            elif c.status == "not_supported":
                ET.SubElement(case, "skipped", message=c.message or "not supported")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}td.n{text-align:right}
.pass{color:#176f2c}.fail,.timeout{color:#b00020}.error{color:#8e24aa}.not_supported{color:#a66f00}
details{margin:.3em 0}code{font-size:90%}"""


def to_html(results: Results) -> str:
    e = html.escape
    head = "".join(f"<th>{s}</th>" for s in STATUSES)
    rows = "".join(
        f"<tr><td>{e(r.level)}{' (optional)' if r.optional else ''}</td>"
        + "".join(f"<td class='n {s}'>{r.counts.get(s, 0)}</td>" for s in STATUSES)
        + f"<td class='n'>{r.total}</td></tr>"
        for r in results.summary
    )
    bad = [c for c in results.cases if c.status != "pass"]
    failing = "".join(
        f"<tr><td class='{c.status}'>{c.status}</td><td><code>{e(c.id)}</code></td><td>{e(c.message)}</td></tr>" for c in bad
    ) or "<tr><td colspan='3'>every case passed</td></tr>"
    every = "".join(
        f"<tr><td class='{c.status}'>{c.status}</td><td><code>{e(c.id)}</code></td><td class='n'>{c.duration_s:.3f}</td></tr>"
        for c in results.cases
    )
    verdict = "conformant" if results.conformant else "not conformant"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>KTIR conformance: {e(results.adapter)}</title>"
            f"<style>{_CSS}</style></head><body><h1>KTIR conformance</h1>"
            f"<p>Adapter <code>{e(results.adapter)}</code>, started {e(results.started)}, {results.duration_s:.1f} s, "
            f"{results.jobs} job(s): <strong class='{'pass' if results.conformant else 'fail'}'>{verdict}</strong>.</p>"
            f"<h2>Summary</h2><table><tr><th>level</th>{head}<th>total</th></tr>{rows}</table>"
            f"<h2>Cases that did not pass</h2><table><tr><th>status</th><th>case</th><th>why</th></tr>{failing}</table>"
            f"<details><summary>All {len(results.cases)} cases</summary><table><tr><th>status</th><th>case</th>"
            f"<th>seconds</th></tr>{every}</table></details></body></html>\n")


def write_reports(results: Results, json_path: Path | None, junit: Path | None, html_path: Path | None) -> None:
    from ktir.fileio import write_atomic

    if json_path is not None:
        write_atomic(json_path, to_json(results))
    if junit is not None:
        write_atomic(junit, to_junit(results))
    if html_path is not None:
        write_atomic(html_path, to_html(results))
