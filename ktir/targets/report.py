"""The cost report: estimate, roofline bound, busy resources, memory traffic; as JSON or a table."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .machine import Machine
from .records import CT_LOCAL, GLOBAL, KernelTrace, Kind
from .roofline import Roofline, roofline
from .schema import Target
from .timeline import Sharing, Timeline, critical_path, simulate


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResourceUse(_Model):
    name: str = Field(description="tileN.dma|port|matrix|vector|local|comm, memory.LEVEL, or link.A->B.")
    category: str = Field(description="compute, dma, local, comm, off-chip or interconnect.")
    tile: int | None = Field(description="The tile of a per-tile resource; null for shared channels.")
    busy_cycles: float = Field(
        description="Cycles busy. Compute and local queues: their ops' durations. dma and comm queues: time occupied, "
        "waits included (dma averaged over its engines). Ports and channels: bytes / bandwidth."
    )
    utilisation: float = Field(description="busy_cycles / estimated cycles.")


class PathShare(_Model):
    resource: str = Field(
        description="A compute queue (tileN.matrix|vector|local), fixed transfer latency (tileN.latency), "
        "a DMA engine's rate (tileN.port), a shared channel (memory.LEVEL, link.A->B), or idle."
    )
    category: str = Field(description="compute, latency, dma, local, off-chip, interconnect or idle.")
    cycles: float = Field(description="Cycles of the critical path spent on this resource.")
    fraction: float = Field(description="cycles / estimated cycles.")


class RooflineTerm(_Model):
    resource: str = Field(description="The resource the term bounds.")
    category: str = Field(description="compute, dma, local, comm, off-chip or interconnect.")
    cycles: float = Field(description="Lower bound from this resource alone.")


class MemoryTraffic(_Model):
    level: str = Field(description="Memory level of the target.")
    scope: Literal["global", "ct_local"] = Field(description="global or ct_local (per tile, summed over tiles here).")
    bytes_read: int = Field(description="global: bytes transfers read. ct_local: explicit reads plus data leaving the tile (stores to global).")
    bytes_written: int = Field(description="global: bytes transfers wrote. ct_local: explicit writes plus data arriving (loads, receives).")
    bytes_moved: int = Field(description="bytes_read + bytes_written in whole granules: each contiguous run of a transfer rounded out to the level's granularity, a granule shared by runs counted once.")


class ScratchpadUse(_Model):
    tile: int = Field(description="Linear tile id.")
    peak_bytes: int = Field(description="Largest ct_local use over time: resident buffers plus live tensor values.")
    capacity_bytes: int = Field(description="The target's ct_local capacity per tile.")
    fits: bool = Field(description="peak_bytes <= capacity_bytes.")


class CostReport(_Model):
    """What `ktir run --report` prints and `--report-json` writes (JSON Schema: report.schema.json)."""

    schema_version: Literal[1] = Field(default=1, description="Version of the report format.")
    kernel: str = Field(description="The function that ran.")
    target: str = Field(description="Name of the target description.")
    grid: list[int] = Field(description="The kernel's tile grid.")
    clock_hz: float = Field(description="The target's clock (cycles below are of this clock).")
    sharing: Literal["static", "maxmin", "fair"] = Field(description="How shared channels were divided between tiles (see ktir.targets.timeline).")
    estimate_cycles: float = Field(description="Timeline estimate, cycles of the target's clock.")
    estimate_seconds: float = Field(description="estimate_cycles / clock_hz.")
    roofline_cycles: float = Field(description="Lower bound: the busiest resource's work alone.")
    roofline_seconds: float = Field(description="roofline_cycles / clock_hz.")
    binding: RooflineTerm | None = Field(description="The resource that sets the roofline bound.")
    roofline_terms: list[RooflineTerm] = Field(description="The largest roofline term of each category.")
    ratio_to_roofline: float = Field(description="estimate / roofline bound (>= 1; 1 means the bound is reached).")
    bottleneck: PathShare | None = Field(
        description="The resource the critical path of the timeline spends most time on: what to speed up first."
    )
    critical_path: list[PathShare] = Field(description="Where the critical path of the timeline spends its time, largest first.")
    resources: list[ResourceUse] = Field(description="Every resource that did work, busiest first.")
    memory: list[MemoryTraffic] = Field(description="Bytes per memory level.")
    scratchpad: list[ScratchpadUse] = Field(description="ct_local peak per tile.")
    op_counts: dict[str, int] = Field(description="Records per kind.")
    warnings: list[str] = Field(description="Fallback rates, capacity overflows, records the adapter could not map exactly.")


REPORT_SCHEMA_PATH = Path(__file__).with_name("report.schema.json")


def report_schema_text() -> str:
    """The JSON Schema of the cost report (what `report.schema.json` holds)."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:ktir:schema:cost-report:v1",
              **CostReport.model_json_schema()}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


@dataclass
class Estimate:
    """Everything one cost estimate produced."""

    trace: KernelTrace
    machine: Machine
    timeline: Timeline
    roofline: Roofline
    report: CostReport


def estimate(trace: KernelTrace, target: Target | Machine, warnings: list[str] | None = None,
             sharing: Sharing | None = None) -> Estimate:
    """Simulate `trace` on `target` (`sharing`: None for the timeline's default), bound it, and build the report."""
    machine = target if isinstance(target, Machine) else Machine(target)
    timeline = simulate(trace, machine, sharing)
    bound = roofline(trace, machine)
    report = build_report(trace, timeline, bound, list(warnings or []))
    return Estimate(trace, machine, timeline, bound, report)


_TILE = re.compile(r"^tile(\d+)\.(\w+)$")


def _category(name: str) -> tuple[str, int | None]:
    m = _TILE.match(name)
    if m:
        unit = m.group(2)
        category = {"matrix": "compute", "vector": "compute", "port": "dma"}.get(unit, unit)
        return category, int(m.group(1))
    return ("off-chip" if name.startswith("memory.") else "interconnect"), None


def build_report(trace: KernelTrace, timeline: Timeline, bound: Roofline, warnings: list[str]) -> CostReport:
    m = timeline.machine
    total = timeline.makespan
    resources = []
    for name, busy in timeline.busy.items():
        if busy <= 0:
            continue
        category, tile = _category(name)
        resources.append(ResourceUse(name=name, category=category, tile=tile, busy_cycles=busy,
                                     utilisation=busy / total if total > 0 else 0.0))
    resources.sort(key=lambda r: (-r.busy_cycles, r.name))
    terms = sorted(bound.by_category().values(), key=lambda t: -t.cycles)
    path = [PathShare(resource=name, category=_category(name)[0] if name != "idle" else "idle", cycles=cycles,
                      fraction=cycles / total if total > 0 else 0.0)
            for name, cycles in sorted(critical_path(timeline).items(), key=lambda kv: (-kv[1], kv[0]))]
    counts = Counter(r.kind.value for r in trace.records)
    all_warnings = list(dict.fromkeys([*warnings, *bound.warnings, *timeline.warnings]))
    return CostReport(
        kernel=trace.name, target=m.name, grid=list(trace.grid), clock_hz=m.clock_hz, sharing=timeline.sharing,
        estimate_cycles=total, estimate_seconds=m.seconds(total),
        roofline_cycles=bound.bound, roofline_seconds=m.seconds(bound.bound),
        binding=RooflineTerm(resource=bound.binding.resource, category=bound.binding.category, cycles=bound.binding.cycles)
        if bound.binding else None,
        roofline_terms=[RooflineTerm(resource=t.resource, category=t.category, cycles=t.cycles) for t in terms],
        ratio_to_roofline=total / bound.bound if bound.bound > 0 else 1.0,
        bottleneck=path[0] if path else None,
        critical_path=path,
        resources=resources,
        memory=_traffic(trace, m),
        scratchpad=[ScratchpadUse(tile=t, peak_bytes=timeline.peak_local.get(t, 0), capacity_bytes=m.local_capacity,
                                  fits=timeline.peak_local.get(t, 0) <= m.local_capacity) for t in range(trace.n_tiles)],
        op_counts={k.value: counts[k.value] for k in Kind if counts[k.value]},
        warnings=all_warnings,
    )


def _traffic(trace: KernelTrace, m: Machine) -> list[MemoryTraffic]:
    g_rd = g_wr = g_moved = 0
    l_rd = l_wr = l_moved = 0
    for r in trace.records:
        grd, gwr = r.bytes_read.get(GLOBAL, 0), r.bytes_written.get(GLOBAL, 0)
        lrd, lwr = r.bytes_read.get(CT_LOCAL, 0), r.bytes_written.get(CT_LOCAL, 0)
        received = sum(n for src, n in r.sources if src != r.tile) if r.kind is Kind.RECEIVE else 0
        g_rd += grd
        g_wr += gwr
        g_moved += sum(m.global_moved(r))
        l_rd += lrd + gwr
        l_wr += lwr + grd + received
        l_moved += sum(m.local_bytes(n) for n in (lrd + gwr, lwr + grd + received) if n)
    return [
        MemoryTraffic(level=m.global_name, scope="global", bytes_read=g_rd, bytes_written=g_wr, bytes_moved=g_moved),
        MemoryTraffic(level=m.local_name, scope="ct_local", bytes_read=l_rd, bytes_written=l_wr, bytes_moved=l_moved),
    ]


# ---------------------------------------------------------------------- terminal


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def print_report(report: CostReport, console: Console | None = None, top: int = 8) -> None:
    """The report as rich tables: summary, busiest resources by category, memory, scratchpad."""
    console = console or Console()
    # a kernel's name is the program's text: escaped, `[/x]` in it is no markup
    summary = Table(title=escape(f"{report.kernel} on {report.target}  (grid {report.grid}, {report.clock_hz / 1e9:.3g} GHz)"),
                    show_header=False, title_justify="left")
    summary.add_column("what", style="bold")
    summary.add_column("value")
    summary.add_row("estimate", f"{_time(report.estimate_seconds)}  ({report.estimate_cycles:,.0f} cycles)")
    # this run's own busiest resource: `ktir schedule` calls "roofline" the kernel's compulsory work spread
    # over every tile, a bound no schedule of the kernel beats; this one bounds this schedule only
    binding = f"  bound by {report.binding.resource} ({report.binding.category})" if report.binding else ""
    summary.add_row("resource bound", f"{_time(report.roofline_seconds)}  ({report.roofline_cycles:,.0f} cycles){binding}, "
                    "this run's busiest resource")
    summary.add_row("estimate / bound", f"{report.ratio_to_roofline:.2f}")
    if report.bottleneck is not None:
        path = ", ".join(f"{p.resource} {p.fraction:.0%}" for p in report.critical_path[:3])
        summary.add_row("bottleneck", f"{report.bottleneck.resource} ({report.bottleneck.category})")
        summary.add_row("critical path", path)
    summary.add_row("records", ", ".join(f"{k} {v}" for k, v in report.op_counts.items()))
    console.print(summary)

    usage = Table(title="Busiest resource of each category", title_justify="left")
    usage.add_column("category", no_wrap=True)
    usage.add_column("resource", no_wrap=True)
    usage.add_column("busy cycles", justify="right", no_wrap=True)
    usage.add_column("util.", justify="right", no_wrap=True)
    usage.add_column("of n", justify="right", no_wrap=True)
    usage.add_column("mean util.", justify="right", no_wrap=True)
    by_cat: dict[str, list[ResourceUse]] = {}
    for r in report.resources:
        by_cat.setdefault(r.category, []).append(r)
    for category, items in sorted(by_cat.items(), key=lambda kv: -kv[1][0].busy_cycles):
        first = items[0]
        mean = sum(i.utilisation for i in items) / len(items)
        usage.add_row(category, first.name, f"{first.busy_cycles:,.0f}", f"{first.utilisation:.0%}", str(len(items)), f"{mean:.0%}")
    console.print(usage)

    mem = Table(title="Memory traffic", title_justify="left")
    for col in ("level", "scope", "read", "written", "moved (rounded)"):
        mem.add_column(col, justify="left" if col in ("level", "scope") else "right", no_wrap=True)
    for t in report.memory:
        mem.add_row(t.level, t.scope, _bytes(t.bytes_read), _bytes(t.bytes_written), _bytes(t.bytes_moved))
    console.print(mem)

    peaks = sorted(report.scratchpad, key=lambda s: -s.peak_bytes)
    if peaks:
        over = [s for s in peaks if not s.fits]
        cap = peaks[0].capacity_bytes
        line = f"scratchpad peak {_bytes(peaks[0].peak_bytes)} on tile {peaks[0].tile} of {_bytes(cap)}"
        line += f"; {len(over)} tile(s) over capacity" if over else " (every tile fits)"
        console.print(line)
    for w in report.warnings[:top]:
        console.print(f"[yellow]warning:[/yellow] {w}")
