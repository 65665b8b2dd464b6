"""Rendering results: a rich summary table, JUnit XML and a standalone HTML page."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance.results import STATUSES, CaseResult, Results, json_schema
from ktir.fileio import confined_file

SHORT = {"pass": "pass", "fail": "fail", "error": "err", "not_supported": "n/s", "timeout": "t/o"}
STYLE = {"pass": "green", "fail": "red", "error": "magenta", "not_supported": "yellow", "timeout": "red"}


VERDICT_STYLE = {"certified": "green", "not certified": "red", "not attempted": "dim"}


def summary_table(results: Results) -> Table:
    impl = results.implementation
    # text from the results file is escaped: `[/x]` in a name or message is no markup
    table = Table(title=escape(f"KTIR conformance — {impl.name} {impl.version} (adapter {results.adapter})"),
                  caption="* mandatory for the declared kinds; n/s = not_supported")
    table.add_column("level", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for s in STATUSES:
        table.add_column(SHORT[s], justify="right", style=STYLE[s])
    table.add_column("run", justify="right")
    for row in results.levels:
        table.add_row(escape(row.level) + ("*" if row.mandatory else ""), f"[{VERDICT_STYLE[row.verdict]}]{row.verdict}[/]",
                      *(str(row.counts.get(s, 0)) for s in STATUSES), f"{row.run}/{row.total}")
    return table


def verdict_line(results: Results) -> str:
    """`conformant` or `not conformant`, with why, in one line (no markup)."""
    if results.conformant:
        return "conformant"
    if results.selection:
        return "no conformance verdict (a selection of cases ran; certification needs whole levels)"
    short = [f"{v.level} {v.verdict}" for v in results.levels if (v.mandatory or v.claimed) and v.verdict != "certified"]
    return "not conformant (" + ", ".join(short) + ")"


def print_report(results: Results, console: Console, failures: int = 20) -> None:
    """The verdict table, then the first `failures` cases that did not pass."""
    console.print(summary_table(results))
    for row in results.levels:
        notes = [row.why] if row.why and row.verdict != "not attempted" else []
        notes += [f"{row.excused} cases left out by the capability file"] if row.excused else []
        notes += [f"{row.waived} cases waived"] if row.waived else []
        if notes:
            console.print(escape(f"  {row.level}: {'; '.join(notes)}"), highlight=False)
    bad = [c for c in results.cases if c.status != "pass" and c.excused != "capability"]
    for c in bad[:failures]:
        waived = f" [dim](waived: {escape(str(c.waiver))})[/]" if c.excused == "waiver" else ""
        console.print(f"[{STYLE[c.status]}]{c.status}[/] {escape(c.id)}: {escape(c.message)}{waived}", highlight=False)
    if len(bad) > failures:
        console.print(f"... and {len(bad) - failures} more (see the JSON report)")
    line = verdict_line(results)
    colour = "green" if results.conformant else "red"
    console.print(f"[{colour}]{escape(line)}[/]: " + escape(f"{len(results.cases)} cases in {results.duration_s:.1f} s with "
                  f"{results.jobs} job(s); suite {results.suite.version} ({results.suite.hash[:12]})"), highlight=False)


def to_json(results: Results) -> str:
    return results.model_dump_json(indent=1) + "\n"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


def to_junit(results: Results) -> str:
    suites = ET.Element("testsuites", name="ktir-conformance", tests=str(len(results.cases)),
                        time=f"{results.duration_s:.3f}")
    for row in results.levels:
        mine = [c for c in results.cases if c.level == row.level]
        if not mine:
            continue
        suite = ET.SubElement(suites, "testsuite", name=row.level, tests=str(row.run),
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


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:90em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}td.n{text-align:right}
.pass,.certified{color:#176f2c}.fail,.timeout,.not-certified{color:#b00020}.error{color:#8e24aa}
.not_supported{color:#a66f00}.not-attempted{color:#777}details{margin:.3em 0}code{font-size:90%}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:85%}summary{cursor:pointer}
#filters label{margin-right:1em}"""

# status filter: hide the rows (and then the empty groups) whose status is unticked
_JS = """function applyFilter(){const on=new Set([...document.querySelectorAll('#filters input:checked')].map(e=>e.value));
document.querySelectorAll('tr.case').forEach(r=>{r.hidden=!on.has(r.dataset.status)});
document.querySelectorAll('details.group').forEach(g=>{g.hidden=!g.querySelector('tr.case:not([hidden])')});}
document.querySelectorAll('#filters input').forEach(e=>e.addEventListener('change',applyFilter));applyFilter();"""

DIALECTS = ("arith", "math", "linalg", "tensor", "memref", "scf", "affine", "func", "ktdp")


def group_of(case_id: str) -> str:
    """The op (or family) a case is filed under: `core.arith.addf.f16.16` -> `arith.addf`."""
    parts = case_id.split(".")
    if len(parts) > 2 and parts[1] in DIALECTS:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else case_id


def _case_row(c: CaseResult, root: Path | None) -> str:
    e = html.escape
    anchor = f"case-{e(c.id)}"
    detail = ""
    if c.status != "pass":
        parts = []
        if c.mismatch is not None:
            m = c.mismatch
            parts.append(f"<table><tr><th>output</th><th>at</th><th>expected</th><th>got</th><th>tolerance</th>"
                         f"<th>elements outside</th></tr><tr><td><code>{e(m.output)}</code></td><td>{e(str(m.index))}</td>"
                         f"<td>{e(repr(m.expected))}</td><td>{e(repr(m.got))}</td><td>{e(m.tolerance)}</td>"
                         f"<td class='n'>{m.mismatches}</td></tr></table>")
        text = _case_text(c.file, root)
        if text is not None:
            parts.append(f"<details><summary>case text <code>{e(c.file)}</code></summary><pre>{e(text)}</pre></details>")
        detail = "".join(parts)
    waiver = f"<br><em>waived: {e(c.waiver or '')}</em>" if c.excused == "waiver" else ""
    return (f"<tr class='case' id='{anchor}' data-status='{c.status}'><td class='{c.status}'>{c.status}</td>"
            f"<td><a href='#{anchor}'><code>{e(c.id)}</code></a></td><td>{e(c.message)}{waiver}{detail}</td>"
            f"<td class='n'>{c.duration_s:.3f}</td></tr>")


def _case_text(file: str, root: Path | None) -> str | None:
    if not file or root is None:
        return None
    try:
        return confined_file(root, file).read_text(encoding="utf-8")
    except (OSError, ValueError):  # ValueError: a link out of the suite, or not a regular file
        return None


def to_html(results: Results, root: Path | None = None) -> str:
    """A standalone page: verdicts per level, then every case grouped by level and op, with a
    status filter; a case that did not pass shows expected vs got and its program text
    (read from the suite at `root`, the installed suite by default)."""
    from conformance.model import SUITE_ROOT

    root = SUITE_ROOT if root is None else root
    e = html.escape
    impl = results.implementation
    head = "".join(f"<th>{s}</th>" for s in STATUSES)
    rows = "".join(
        f"<tr><td><a href='#level-{e(r.level)}'>{e(r.level)}</a>{' (mandatory)' if r.mandatory else ''}</td>"
        f"<td class='{r.verdict.replace(' ', '-')}'>{r.verdict}</td>"
        + "".join(f"<td class='n {s}'>{r.counts.get(s, 0)}</td>" for s in STATUSES)
        + f"<td class='n'>{r.run}/{r.total}</td><td>{e(r.why)}{f'; {r.waived} waived' if r.waived else ''}</td></tr>"
        for r in results.levels
    )
    filters = "".join(f"<label><input type='checkbox' value='{s}'{'' if s == 'pass' else ' checked'}> {s}</label>" for s in STATUSES)
    sections = []
    for level in results.levels:
        mine = [c for c in results.cases if c.level == level.level]
        if not mine:
            continue
        groups: dict[str, list[CaseResult]] = {}
        for c in mine:
            groups.setdefault(group_of(c.id), []).append(c)
        body = []
        for name, members in groups.items():
            bad = sum(1 for c in members if c.status != "pass")
            label = f"{e(name)} — {len(members)} case(s)" + (f", <span class='fail'>{bad} not passing</span>" if bad else "")
            body.append(f"<details class='group'{' open' if bad else ''}><summary>{label}</summary><table>"
                        f"<tr><th>status</th><th>case</th><th>why</th><th>s</th></tr>"
                        + "".join(_case_row(c, root) for c in members) + "</table></details>")
        sections.append(f"<h3 id='level-{e(level.level)}'>{e(level.level)}: <span class='{level.verdict.replace(' ', '-')}'>"
                        f"{level.verdict}</span></h3>" + "".join(body))
    verdict = verdict_line(results)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>KTIR conformance: {e(impl.name)} {e(impl.version)}</title>"
            f"<style>{_CSS}</style></head><body><h1>KTIR conformance</h1>"
            f"<p>Implementation <strong>{e(impl.name)} {e(impl.version)}</strong> through adapter <code>{e(results.adapter)}</code>; "
            f"suite {e(results.suite.version)} <code title='{e(results.suite.hash)}'>{e(results.suite.hash[:12])}</code>; "
            f"started {e(results.started)}, {results.duration_s:.1f} s, {results.jobs} job(s): "
            f"<strong class='{'pass' if results.conformant else 'fail'}'>{e(verdict)}</strong>.</p>"
            f"<h2>Verdicts</h2><table><tr><th>level</th><th>verdict</th>{head}<th>run</th><th>why</th></tr>{rows}</table>"
            f"<h2>Cases</h2><p id='filters'>Show: {filters}</p>{''.join(sections)}"
            f"<script>{_JS}</script></body></html>\n")


def write_reports(results: Results, json_path: Path | None, junit: Path | None, html_path: Path | None,
                  root: Path | None = None) -> None:
    from ktir.fileio import write_atomic

    if json_path is not None:
        write_atomic(json_path, to_json(results))
    if junit is not None:
        write_atomic(junit, to_junit(results))
    if html_path is not None:
        write_atomic(html_path, to_html(results, root))
