"""Roofline: a lower bound on a kernel's time from the total work on each resource.

Every resource can do at most its rate of work per cycle, so the kernel cannot finish
before the busiest resource has done its share. The terms:

- compute, per tile: MACs / matrix rate and elements / vector rate (no rounding, no startup);
- off-chip memory: global bytes (the granules each transfer touches, as the timeline charges
  them: `Machine.global_moved`) / bandwidth, plus the smallest
  latency before the first byte can move;
- interconnect, per link: bytes routed over it / link bandwidth, plus the smallest latency of
  the flows that cross it;
- per tile: the network port (every data phase at the best rate its route allows, one at a
  time), the DMA queue (each transfer's latency plus data phase, summed over the engines,
  and never less than the longest single transfer), ct_local accesses, and receives.

The bound is the largest term; its resource is the binding one. The timeline simulation
uses the same routes, roundings and rates, so its estimate is never below this bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .machine import Flow, Machine
from .records import KernelTrace, Kind
from .schema import Target


@dataclass(frozen=True)
class Term:
    resource: str  # "tile3.matrix", "memory.lpddr5", "link.3->4", ...
    category: str  # compute, off-chip, interconnect, dma, local, comm
    cycles: float


@dataclass
class Roofline:
    bound: float  # cycles
    binding: Term | None
    terms: list[Term]  # every resource with work, largest first
    warnings: list[str] = field(default_factory=list)

    def by_category(self) -> dict[str, Term]:
        """The largest term of each category."""
        out: dict[str, Term] = {}
        for t in self.terms:
            if t.category not in out or t.cycles > out[t.category].cycles:
                out[t.category] = t
        return out


def roofline(trace: KernelTrace, target: Target | Machine) -> Roofline:
    machine = target if isinstance(target, Machine) else Machine(target)
    warnings: list[str] = []
    per_tile: dict[str, float] = {}
    longest: dict[str, float] = {}  # a queue is busy at least as long as its longest op
    capacity = machine.channel_capacity()
    channel_bytes: dict[str, float] = {}
    channel_latency: dict[str, float] = {}

    def add(key: str, cycles: float, single: float | None = None) -> None:
        per_tile[key] = per_tile.get(key, 0.0) + cycles
        longest[key] = max(longest.get(key, 0.0), cycles if single is None else single)

    def rate(value: float, warning: str | None) -> float:
        if warning is not None and warning not in warnings:
            warnings.append(warning)
        return value

    def best_rate(f: Flow) -> float:
        return min([machine.dma_bw] + [capacity[c] for c in f.channels])

    for r in trace.records:
        t = r.tile
        if r.kind is Kind.MATRIX and r.macs:
            add(f"tile{t}.matrix", r.macs / rate(*machine.matrix_rate(r.dtype)))
        elif r.kind is Kind.VECTOR and r.elements:
            add(f"tile{t}.vector", r.elements / rate(*machine.vector_rate(r.dtype, r.transcendental)))
        elif r.kind is Kind.LOCAL:
            add(f"tile{t}.local", machine.local_cycles(r))
        elif r.kind in (Kind.TRANSFER, Kind.RECEIVE):
            flows = machine.flows(r)
            if r.kind is Kind.TRANSFER and not flows:
                one = machine.local_cycles(r)
                add(f"tile{t}.dma", one / machine.dma_engines, one)
            for f in flows:
                for c in f.channels:
                    channel_bytes[c] = channel_bytes.get(c, 0.0) + f.nbytes
                    channel_latency[c] = min(channel_latency.get(c, f.latency), f.latency)
            if flows:
                add(f"tile{t}.port", max(f.nbytes / best_rate(f) for f in flows))
            if flows and r.kind is Kind.TRANSFER:
                one = max(f.latency for f in flows) + max(f.nbytes / best_rate(f) for f in flows)
                add(f"tile{t}.dma", one / machine.dma_engines, one)
            elif flows:
                add(f"tile{t}.comm", max(f.latency for f in flows) + max(f.nbytes / best_rate(f) for f in flows))

    terms = [Term(key, _category(key), max(cycles, longest[key])) for key, cycles in per_tile.items()]
    for c, nbytes in channel_bytes.items():
        terms.append(Term(c, "off-chip" if c.startswith("memory.") else "interconnect",
                          channel_latency[c] + nbytes / capacity[c]))
    terms.sort(key=lambda term: (-term.cycles, term.resource))
    binding = terms[0] if terms else None
    return Roofline(bound=binding.cycles if binding else 0.0, binding=binding, terms=terms, warnings=warnings)


def _category(key: str) -> str:
    unit = key.rsplit(".", 1)[1]
    return {"matrix": "compute", "vector": "compute", "port": "dma"}.get(unit, unit)
