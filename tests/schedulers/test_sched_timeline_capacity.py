"""A schedule the cost model fits but whose scratchpad peak on the timeline exceeds the target's
capacity is rejected (`schedulers.rerank`): the timeline holds the buffers the emitted program
owns, so its peak is the verdict; the report says how many were rejected and why, and when every
schedule simulated overflows, the kernel is declined with the peak and the capacity named."""

from __future__ import annotations

import time

import pytest

from ktir.targets.schema import Target
from schedulers import single_tile
from schedulers.api import NoLegalSchedule, ScheduleOptions
from schedulers.builtin import ExactScheduler, evaluate_point, exact_strategy
from schedulers.classes import Forms, Match, NaturalClass
from schedulers.rerank import Simulated, rerank


def _match(spyre: Target) -> Match:
    module = single_tile.rmsnorm(256, 4096)
    found = NaturalClass().match(Forms(module, ScheduleOptions()), ScheduleOptions(), spyre)
    assert isinstance(found, Match), found
    return found


def test_a_schedule_beyond_the_scratchpad_on_the_timeline_loses_the_rerank(spyre: Target) -> None:
    m = _match(spyre)
    space = m.space
    chosen, _ = exact_strategy(space, ScheduleOptions())
    capacity = space.fig.local_capacity

    def timeline(p: dict[str, int], deadline: float | None) -> Simulated:
        cycles = float(evaluate_point(space, p).cycles[0])
        return Simulated(cycles, capacity + 1 if p == chosen else capacity)

    ranked = rerank(space, chosen, time.perf_counter() + 30, timeline)
    assert ranked.point != chosen and ranked.timeline is not None
    assert ranked.over == [(chosen, capacity + 1)]


def test_when_every_schedule_overflows_on_the_timeline_the_kernel_is_declined(spyre: Target) -> None:
    m = _match(spyre)
    capacity = m.space.fig.local_capacity
    m.timeline = lambda p, deadline: Simulated(1000.0, capacity + 4096)
    from schedulers.report import ScheduleReport

    report = ScheduleReport(scheduler="exact", target=spyre.name, kernel="rmsnorm", kernel_class="natural", applied=False)
    with pytest.raises(NoLegalSchedule, match=f"up to {capacity + 4096:,} bytes on a tile, beyond its {capacity:,}"):
        ExactScheduler()._run(m, spyre, ScheduleOptions(), report, time.perf_counter())


def test_the_report_says_how_many_schedules_the_timeline_rejected(spyre: Target) -> None:
    m = _match(spyre)
    space = m.space
    chosen, _ = exact_strategy(space, ScheduleOptions())
    capacity = space.fig.local_capacity
    m.timeline = lambda p, deadline: Simulated(float(evaluate_point(space, p).cycles[0]),
                                               capacity + 1 if p == chosen else 0)
    from schedulers.report import ScheduleReport

    report = ScheduleReport(scheduler="exact", target=spyre.name, kernel="rmsnorm", kernel_class="natural", applied=False)
    result = ExactScheduler()._run(m, spyre, ScheduleOptions(), report, time.perf_counter())
    assert result.report.applied and result.report.schedule is not None
    assert any(n.startswith("rejected 1 schedule(s) the cost model fits: on the timeline their scratchpad peaks beyond")
               for n in result.report.notes), result.report.notes
