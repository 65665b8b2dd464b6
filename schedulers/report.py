"""The schedule report: what was chosen, what the cost model expects, how far from the bound.

Written by `ktir schedule --report-json` and printed as a table on the terminal. Versioned
(`schema_version`); `ScheduleReport.model_json_schema()` is its JSON Schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
    ratio: float | None = Field(default=None, description="estimate / roofline bound (1.0 is the hardware limit)")
    timeline_cycles: float | None = Field(
        default=None, description="the chosen schedule simulated on the target's timeline (ktir.targets.timeline), cycles; "
        "None when the kernel class has no timeline re-ranking")
    timeline_ratio: float | None = Field(default=None, description="timeline_cycles / roofline bound")
    bytes_per_level: dict[str, int] = Field(default_factory=dict,
                                            description="bytes moved per memory level (global, ct_local)")
    scratchpad_peak_bytes: int | None = Field(default=None, description="largest scratchpad use of any tile")
    scratchpad_capacity_bytes: int | None = Field(default=None, description="the target's scratchpad per tile")
    candidates_evaluated: int = Field(default=0, description="schedules the cost model evaluated")
    schedule_seconds: float = Field(default=0.0, description="wall time spent scheduling")
    notes: list[str] = Field(default_factory=list, description="remarks for people")


def render_table(report: ScheduleReport) -> object:
    """A rich renderable summarising the report."""
    from rich.table import Table

    table = Table(title=f"{report.kernel} on {report.target}: {report.scheduler} ({report.kernel_class})",
                  show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    if report.schedule is not None:
        s = report.schedule
        table.add_row("grid", str(s.grid))
        table.add_row("splits", _kv(s.splits))
        table.add_row("tile sizes", _kv(s.tile_sizes))
        table.add_row("loop order", s.loop_order)
        table.add_row("double buffered", "yes" if s.double_buffered else "no")
        for p in s.placements:
            table.add_row(f"  {p.tensor}", f"{p.mode} in {p.memory}, block {'x'.join(map(str, p.block))}")
    if report.estimate_cycles is not None and report.roofline_cycles is not None:
        table.add_row("estimate", f"{report.estimate_cycles:,.0f} cycles ({(report.estimate_seconds or 0) * 1e6:,.1f} us)")
        table.add_row("roofline", f"{report.roofline_cycles:,.0f} cycles ({report.roofline_binding})")
        table.add_row("ratio", "-" if report.ratio is None else f"{report.ratio:.3f}")
    if report.timeline_cycles is not None and report.timeline_ratio is not None:
        table.add_row("timeline", f"{report.timeline_cycles:,.0f} cycles (ratio {report.timeline_ratio:.3f})")
    for level, n in report.bytes_per_level.items():
        table.add_row(f"bytes {level}", f"{n:,}")
    if report.scratchpad_peak_bytes is not None and report.scratchpad_capacity_bytes is not None:
        table.add_row("scratchpad peak", f"{report.scratchpad_peak_bytes:,} of {report.scratchpad_capacity_bytes:,} B")
    table.add_row("applied", "yes" if report.applied else f"no: {report.reason}")
    table.add_row("candidates", f"{report.candidates_evaluated:,} in {report.schedule_seconds:.3f} s")
    for note in report.notes:
        table.add_row("note", note)
    return table


def _kv(d: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())
