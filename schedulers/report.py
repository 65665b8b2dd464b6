"""The schedule report: what was chosen, what the cost model expects, how far from the bound.

Written by `ktir schedule --report-json` and printed as a table on the terminal. Versioned
(`schema_version`); `ScheduleReport.model_json_schema()` is its JSON Schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from ktir.ir.operation import Module
    from ktir.targets.schema import Target
    from ktir.targets.timeline import Timeline

SCHEMA_VERSION = 1

KernelClass = Literal["matmul", "rowwise", "attention", "natural", "unrecognized"]


class Placement(BaseModel):
    """Where one tensor lives while the kernel runs, and how it is moved."""

    model_config = ConfigDict(extra="forbid")
    tensor: str = Field(description="the function argument (array) the tensor comes from")
    memory: Literal["global", "ct_local"] = Field(description="memory the tile reads it from during compute")
    mode: Literal["resident", "streamed", "double-buffered", "output"] = Field(
        description="resident: loaded once per tile and kept in the scratchpad; streamed: one block per step; "
        "double-buffered: the next block is loaded while the current one is computed; output: written back")
    block: list[int] = Field(description="shape of the block held in the scratchpad")


class Schedule(BaseModel):
    """The point of the schedule space that was chosen."""

    model_config = ConfigDict(extra="forbid")
    grid: list[int] = Field(description="the kernel's grid (compute tiles per dimension)")
    splits: dict[str, int] = Field(description="how many tiles share each problem dimension")
    tile_sizes: dict[str, int] = Field(description="block size per problem dimension (elements)")
    loop_order: str = Field(description="order of the block loops, outermost first")
    double_buffered: bool = Field(description="streaming loads are issued one step ahead")
    placements: list[Placement] = Field(description="one entry per tensor")


class ScheduleReport(BaseModel):
    """Everything `ktir schedule` decided and estimated for one kernel."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = Field(default=1, description="version of this report format")
    scheduler: str = Field(description="name of the scheduler that produced it")
    target: str = Field(description="target name")
    kernel: str = Field(description="the scheduled function")
    # the built-in classes' names are KernelClass; a plugin's class (schedulers.classes) names its own
    kernel_class: str = Field(description="the class the kernel was recognised as")
    dims: dict[str, int] = Field(default_factory=dict, description="problem dimensions of the recognised class")
    applied: bool = Field(description="whether the output module differs from the input")
    reason: str | None = Field(default=None, description="why the input was returned unchanged, if it was")
    schedule: Schedule | None = Field(default=None, description="the chosen schedule (None when not recognised)")
    estimate_cycles: float | None = Field(default=None, description="cost-model estimate of the kernel, cycles")
    estimate_seconds: float | None = Field(default=None, description="the estimate in seconds at the target clock")
    roofline_cycles: float | None = Field(default=None, description="roofline lower bound, cycles")
    roofline_binding: str | None = Field(default=None, description="resource that sets the roofline bound")
    ratio: float | None = Field(default=None, description="the report's figure over the roofline bound (1.0 is the hardware "
                                "limit): timeline_ratio when the schedule was simulated on the timeline (by the scheduler "
                                "or by `ktir schedule`), else the cost model's estimate / bound")
    timeline_cycles: float | None = Field(
        default=None, description="the chosen schedule simulated on the target's timeline (ktir.targets.timeline), cycles; "
        "filled by `ktir schedule` from the interpreter's shapes-only trace when the scheduler did not simulate it")
    timeline_ratio: float | None = Field(default=None, description="timeline_cycles / roofline bound: the report's ratio")
    bytes_per_level: dict[str, int] = Field(default_factory=dict,
                                            description="bytes moved per memory level (global, ct_local)")
    scratchpad_peak_bytes: int | None = Field(default=None, description="largest scratchpad use of any tile")
    scratchpad_capacity_bytes: int | None = Field(default=None, description="the target's scratchpad per tile")
    candidates_evaluated: int = Field(default=0, description="schedules the cost model evaluated")
    schedule_seconds: float = Field(default=0.0, description="wall time spent scheduling")
    notes: list[str] = Field(default_factory=list, description="remarks for people")


def render_table(report: ScheduleReport) -> object:
    """A rich renderable summarising the report. The ratio shown is the timeline's when the schedule
    was simulated (the model's estimate is given beside it)."""
    from rich.markup import escape
    from rich.table import Table

    # the kernel's name is the program's text: escaped, `[/x]` in it is no markup
    table = Table(title=escape(f"{report.kernel} on {report.target}: {report.scheduler} ({report.kernel_class})"),
                  show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    for what, value in rows(report):
        table.add_row(what, value)
    return table


def rows(report: ScheduleReport) -> list[tuple[str, str]]:
    """The report as (what, value) lines, for the table and the HTML page."""
    out: list[tuple[str, str]] = []
    if report.schedule is not None:
        s = report.schedule
        out += [("grid", str(s.grid)), ("splits", _kv(s.splits)), ("tile sizes", _kv(s.tile_sizes)),
                ("loop order", s.loop_order), ("double buffered", "yes" if s.double_buffered else "no")]
        out += [(f"  {p.tensor}", f"{p.mode} in {p.memory}, block {'x'.join(map(str, p.block))}") for p in s.placements]
    if report.roofline_cycles is not None:
        out.append(("roofline", f"{report.roofline_cycles:,.0f} cycles ({report.roofline_binding}): the kernel's "
                                "compulsory work spread over every tile"))
    if report.timeline_cycles is not None and report.timeline_ratio is not None:
        out.append(("timeline", f"{report.timeline_cycles:,.0f} cycles"))
        out.append(("ratio", f"{report.timeline_ratio:.3f} (timeline / roofline)"))
    if report.estimate_cycles is not None and report.roofline_cycles is not None:
        # the model's own ratio, whatever `ratio` holds (the timeline's once simulated)
        ratio = f"{report.estimate_cycles / report.roofline_cycles:.3f}" if report.roofline_cycles else "-"
        label = "model" if report.timeline_ratio is not None else "estimate"
        out.append((label, f"{report.estimate_cycles:,.0f} cycles ({(report.estimate_seconds or 0) * 1e6:,.1f} us), "
                           f"ratio {ratio} (cost model / roofline)"))
        if report.timeline_ratio is None:
            out.append(("ratio", f"{ratio} (cost model; not simulated on the timeline)"))
    out += [(f"bytes {level}", f"{n:,}") for level, n in report.bytes_per_level.items()]
    if report.scratchpad_peak_bytes is not None and report.scratchpad_capacity_bytes is not None:
        out.append(("scratchpad peak", f"{report.scratchpad_peak_bytes:,} of {report.scratchpad_capacity_bytes:,} B"))
    out.append(("applied", "yes" if report.applied else f"no: {report.reason}"))
    out.append(("candidates", f"{report.candidates_evaluated:,} in {report.schedule_seconds:.3f} s"))
    out += [("note", note) for note in report.notes]
    return out


def simulate_module(module: Module, target: Target, func: str | None, sizes: Mapping[str, int]) -> Timeline:
    """`func` of `module` on the target's timeline, from the interpreter's shapes-only trace
    (arguments: zero arrays, the index arguments from `sizes`)."""
    import reference_interp as ri
    from ktir.targets.from_interp import from_interp
    from ktir.targets.timeline import simulate
    from reference_interp.inputs import infer_args

    name = func or None
    args = infer_args(module, name, dict(sizes), 0, {"shapes_only": True}, zeros=True)
    run = ri.run(module, name, args, trace=True, shapes_only=True)
    return simulate(from_interp(module, run, name).trace, target)


def render_html(report: ScheduleReport, before: Timeline | str, after: Timeline | str, source: str) -> str:
    """A self-contained HTML page: the report's lines and the timeline before and after scheduling
    (`ktir.targets.svg`), or why a picture is missing."""
    from html import escape

    from ktir.targets.svg import render_svg

    def picture(label: str, timeline: Timeline | str) -> str:
        if isinstance(timeline, str):
            return f"<h2>{escape(label)}</h2><p>{escape(timeline)}</p>"
        title = f"{timeline.makespan:,.0f} cycles on {report.target}, grid of {timeline.n_tiles}"
        if report.roofline_cycles:
            title += f" ({timeline.makespan / report.roofline_cycles:.2f}x the roofline bound)"
        return f"<h2>{escape(label)}</h2>\n" + render_svg(timeline, title)

    outcome = "applied" if report.applied else f"declined: {report.reason}"
    table = "\n".join(f"<tr><th>{escape(w)}</th><td>{escape(v)}</td></tr>" for w, v in rows(report))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{escape(report.kernel)} on {escape(report.target)}: {escape(report.scheduler)}</title>
<style>body {{ font-family: Helvetica, Arial, sans-serif; margin: 2em; }} th {{ text-align: left; padding-right: 1em; }}
td, th {{ vertical-align: top; font-size: 13px; }} svg {{ max-width: 100%; height: auto; }}</style></head>
<body>
<h1>{escape(report.kernel)} ({escape(source)}) on {escape(report.target)}: {escape(report.scheduler)}, {escape(outcome)}</h1>
<table>
{table}
</table>
{picture("before: as written", before)}
{picture("after: as scheduled", after)}
</body></html>
"""


def _kv(d: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())
