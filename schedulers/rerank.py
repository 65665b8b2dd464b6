"""Re-rank the cost model's best schedules by the timeline simulation.

The analytic model (`schedulers.cost`, `space_natural`) prices thousands of schedules in
milliseconds but assumes no overlap and simplifies queues; the timeline simulation of
`ktir.targets` replays each op on the target's queues and channels and is the better
judge, at about a millisecond per thousand records. So the model's `TOP` best schedules
that fit (and the strategy's own choice) are simulated, cheapest first, while the time
budget lasts, and the fastest on the timeline wins; the report keeps both figures. A schedule
whose scratchpad peak on the timeline exceeds the target's capacity is rejected, whatever the
model said of it: the timeline holds the buffers the emitted program owns. A `floor` point (the
baseline's, for `search`) is simulated right after the choice, whatever the model thinks of it,
and nothing slower than it on the timeline is returned: a strategy that promises to be no worse
than its seeds keeps the promise on the figure it is judged by.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ktir.targets.timeline import simulate

from .space_natural import NaturalSpace
from .trace_natural import MAX_RECORDS, natural_trace

TOP = 8
RATE = 4000  # records the timeline simulates per second, conservatively (a trace too long for the time left is skipped)
TIE = 0.01  # schedules this close on the timeline are not told apart
SMALL = 2000  # a trace this short (a decode kernel's) is simulated in milliseconds, whatever the time left
# records per second when the rewritten module itself is traced (a shapes-only run in the interpreter,
# then simulated; attention, row loops): 5,000 to 8,000 measured, warm
MODULE_RATE = 5000
INTERP_IMPORT = 2.0  # seconds to import the interpreter's input probing and the trace conversion the first time (1.4-1.9 measured)


@dataclass(frozen=True)
class Simulated:
    """A schedule on the timeline: its cycles and the busiest tile's scratchpad peak (bytes)."""

    cycles: float
    peak: int


@dataclass
class Ranked:
    point: dict[str, int]
    timeline: float | None  # cycles on the timeline of the chosen point (None: not simulated)
    simulated: int  # schedules simulated
    analytic_first: dict[str, int]  # the strategy's choice before re-ranking
    analytic_first_timeline: float | None
    # schedules simulated whose scratchpad peak on the timeline exceeds the capacity: (point, peak)
    over: list[tuple[dict[str, int], int]] = field(default_factory=list)


def split_result(found: Simulated | float | None) -> tuple[float | None, int | None]:
    """(cycles, peak) of what a timeline callable returned: a `Simulated`, or cycles alone (peak unknown)."""
    if isinstance(found, Simulated):
        return found.cycles, found.peak
    return found, None


def timeline_of(space: NaturalSpace, p: dict[str, int], split: object | None = None,
                deadline: float | None = None) -> Simulated | None:
    """The schedule on the timeline; None when its trace would not be simulated before `deadline`."""
    limit = MAX_RECORDS if deadline is None else max(SMALL, int(max(0.0, deadline - time.perf_counter()) * RATE))
    trace = natural_trace(space, p, split, limit)
    if trace is None:
        return None
    t = simulate(trace, space.fig.machine)
    return Simulated(float(t.makespan), max(t.peak_local.values(), default=0))


def tiles_used(space: object, p: dict[str, int]) -> int:
    """How many tiles a point's grid has (from the space's description of it)."""
    used = getattr(space, "tiles_used", None)
    if callable(used):
        return int(used(p))
    return math.prod(space.describe(p).grid)  # type: ignore[attr-defined]


def _fits(space: Any, p: dict[str, int]) -> bool:
    """Whether the model fits `p` in the scratchpad (a point from outside the candidate table too)."""
    ev = space.evaluate({n: np.array([v]) for n, v in p.items()})
    return bool(ev.scratch[0] <= space.fig.local_capacity)


def rerank(space: Any, chosen: dict[str, int], deadline: float,
           timeline: Callable[[dict[str, int], float | None], Simulated | float | None] | object | None = None,
           top: int = TOP, floor: dict[str, int] | None = None) -> Ranked:
    """The fastest on the timeline among `chosen`, `floor` and the model's `top` best fitting schedules.

    `timeline(point, deadline)` simulates a point (None when it would not finish in time); for a
    natural-form space it may be left out, or be the split reduction the space's kernel runs.
    `floor`, when it fits the scratchpad in the model, is simulated second under the same rule as
    `chosen` (before the deadline check that ends the model's list) and bounds the result: the
    re-rank returns no schedule slower than it on the timeline."""
    if callable(timeline):
        sim = timeline
    else:
        def sim(p: dict[str, int], d: float | None, split: object = timeline) -> Simulated | None:
            return timeline_of(space, p, split, d)
    capacity = space.fig.local_capacity
    over: list[tuple[dict[str, int], int]] = []

    def run(p: dict[str, int], d: float | None) -> float | None:
        """Cycles of `p` on the timeline; None when not simulated, or (noted in `over`) beyond the scratchpad."""
        cycles, peak = split_result(sim(p, d))
        if cycles is not None and peak is not None and peak > capacity:
            over.append((p, peak))
            return None
        return cycles

    cols = space.candidates()
    ev = space.evaluate(cols)
    cost = np.where(ev.scratch <= space.fig.local_capacity, ev.cycles, np.inf)
    # the model's best, one per blocking: loop orders the model prices the same are not told apart
    # on the timeline either, and would take the budget from other blockings
    order: list[int] = []
    keys: set[tuple[tuple[str, int], ...]] = set()
    for i in np.argsort(cost, kind="stable"):
        if not np.isfinite(cost[i]) or len(order) >= top:
            break
        key = tuple((n, int(v[i])) for n, v in cols.items() if n != "perm") + ((("cost", int(cost[i])),))
        if key not in keys:
            keys.add(key)
            order.append(int(i))
    points = [chosen] + [{n: int(v[i]) for n, v in cols.items()} for i in order]
    seen: list[dict[str, int]] = []
    for p in points:
        if p not in seen:
            seen.append(p)
    first = run(chosen, deadline)
    if first is None and not over:
        # the strategy's choice could not be simulated in the time left: the schedules that could
        # (smaller traces) would be compared with nothing, and the fastest of them on the timeline
        # may be slower than the choice; the model's choice stands
        return Ranked(chosen, None, 1, chosen, None, over)
    timed: list[tuple[dict[str, int], float]] = [] if first is None else [(chosen, first)]
    simulated = 1
    floor_t = None
    if floor is not None and floor != chosen and _fits(space, floor):
        floor_t = run(floor, deadline)
        simulated += 1
        if floor_t is not None:
            timed.append((floor, floor_t))
    for p in seen[1:]:
        if p == floor:
            continue
        # a chosen point beyond the scratchpad needs another, whatever the budget says
        if time.perf_counter() >= deadline and (timed or not over):
            break
        t = run(p, deadline)
        simulated += 1
        if t is not None:
            timed.append((p, t))
    if not timed:
        return Ranked(chosen, None, simulated, chosen, first, over)
    fastest = min(t for _, t in timed)
    # within the timeline's own resolution of the fastest, the schedule on the most tiles: it
    # leaves less of the machine idle for the same time (ties keep the earlier, the model's order)
    # ... but never one slower than the floor: the tie is the timeline's resolution, not a licence
    # to return less than the seed it was promised against
    near = [(p, t) for p, t in timed if t <= fastest * (1 + TIE) and (floor_t is None or t <= floor_t)]
    best, best_t = max(near, key=lambda pt: (tiles_used(space, pt[0]), -pt[1]))
    return Ranked(best, best_t, simulated, chosen, first, over)
