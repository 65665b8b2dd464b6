"""The attention rewrite on the timeline: its scratchpad peak within what the cost model reserves
for it (so a schedule the model fits, fits), the model's cycles near the timeline's on the
double-buffered schedules, and the schedulers re-ranking attention schedules on the timeline with
its scratchpad check (`schedulers.rerank`)."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import ktir
from ktir.targets.schema import Target
from schedulers.api import ScheduleOptions
from schedulers.builtin import ExactScheduler, evaluate_point
from schedulers.classes import AttentionClass, Forms, Match
from schedulers.cost import figures, roofline_bound
from schedulers.emit_attention import attention_text
from schedulers.rerank import Simulated


def _match(text: str, spyre: Target) -> Match:
    found = AttentionClass().match(Forms(ktir.parse(text, "attention.ktir"), ScheduleOptions()), ScheduleOptions(), spyre)
    assert isinstance(found, Match), found
    return found


CAUSAL_GQA = attention_text(2, 256, 64, "bf16", causal=True, group=2)
SPLIT = attention_text(2, 128, 64, "f16", causal=False, kv_len=512)
# query blocks smaller and larger than the key blocks, with and without double buffering (the
# pipelined loop streams K/V `DEPTH` blocks ahead; short causal blocks have fewer steps than that)
PEAK_POINTS = [(CAUSAL_GQA, dict(bq=bq, bkv=bkv, db=db, s=1)) for bq, bkv, db in itertools.product((64, 256, 512), (64, 128), (0, 1))]
PEAK_POINTS += [(SPLIT, dict(bq=bq, bkv=bkv, db=db, s=s)) for bq, bkv, db, s in itertools.product((32, 128), (64,), (0, 1), (2, 4))]


@pytest.mark.parametrize(("text", "point"), PEAK_POINTS,
                         ids=[f"{'causal' if t is CAUSAL_GQA else 'split'}-bq{p['bq']}-bkv{p['bkv']}-db{p['db']}-s{p['s']}"
                              for t, p in PEAK_POINTS])
def test_the_model_reserves_the_rewrites_scratchpad_peak(text: str, point: dict[str, int], spyre: Target) -> None:
    """The model's scratchpad figure bounds what the emitted program holds on the timeline, so the
    strategies' capacity filter never passes a schedule that overflows when it runs."""
    m = _match(text, spyre)
    assert m.timeline is not None
    found = m.timeline(point, None)
    assert isinstance(found, Simulated)
    reserved = float(evaluate_point(m.space, point).scratch[0])
    assert 0 < found.peak <= reserved, (found.peak, reserved)


def test_the_model_is_near_the_timeline_when_double_buffered(spyre: Target) -> None:
    """Causal grouped-query prefill (the benchmark's small self-attention): for the double-buffered
    schedules the model ranks first, the model's cycles within 10% of the timeline's."""
    m = _match(attention_text(8, 512, 64, "bf16", causal=True), spyre)
    space = m.space
    cols = space.candidates()
    ev = space.evaluate(cols)
    fits = (ev.scratch <= space.fig.local_capacity) & (cols["db"] == 1)
    best = np.argsort(np.where(fits, ev.cycles, np.inf))[:3]
    assert m.timeline is not None
    for i in best:
        p = {n: int(v[i]) for n, v in cols.items()}
        found = m.timeline(p, None)
        assert isinstance(found, Simulated)
        assert abs(ev.cycles[i] / found.cycles - 1) <= 0.10, (p, ev.cycles[i], found.cycles)


def test_attention_is_reranked_on_the_timeline(spyre: Target) -> None:
    """With the time to simulate, the chosen attention schedule's figure is the timeline's, and its
    scratchpad peak there is within the capacity."""
    module = ktir.parse(CAUSAL_GQA, "attention.ktir")
    r = ExactScheduler().schedule(module, spyre, ScheduleOptions(time_budget=60.0)).report
    assert r.applied and r.kernel_class == "attention"
    assert r.timeline_cycles is not None and r.ratio == r.timeline_ratio
    m = _match(CAUSAL_GQA, spyre)
    assert r.schedule is not None
    point = {"bq": r.schedule.tile_sizes["rows"], "bkv": r.schedule.tile_sizes["kv"], "s": r.schedule.splits["kv"],
             "db": int(r.schedule.double_buffered)}
    assert m.timeline is not None
    found = m.timeline(point, None)
    assert isinstance(found, Simulated)
    assert found.cycles == pytest.approx(r.timeline_cycles)
    assert found.peak <= figures(spyre).local_capacity
    bound = roofline_bound(m.space.work(), figures(spyre)).cycles
    assert r.timeline_ratio == pytest.approx(found.cycles / bound)


def test_the_timeline_is_skipped_when_it_would_overrun(spyre: Target) -> None:
    """A deadline too close for the trace: no simulation (None), so the budget is kept."""
    m = _match(CAUSAL_GQA, spyre)
    assert m.timeline is not None
    assert m.timeline({"bq": 64, "bkv": 64, "db": 1, "s": 1}, time.perf_counter()) is None


def test_row_loops_are_reranked_on_the_timeline_too(spyre: Target) -> None:
    """The row-loop class simulates its rewrite the same way: the chosen schedule's figure is the
    timeline's, and its peak there within the capacity."""
    from schedulers import naive

    module = ktir.parse(naive.softmax(256, 512, "f16"), "softmax.ktir")
    r = ExactScheduler().schedule(module, spyre, ScheduleOptions(time_budget=60.0)).report
    assert r.applied and r.kernel_class == "rowwise"
    assert r.timeline_cycles is not None and r.ratio == r.timeline_ratio
    assert r.notes and any("timeline" in n for n in r.notes)


def test_a_choice_not_simulated_in_time_is_kept(spyre: Target) -> None:
    """When the strategy's choice cannot be simulated before the deadline but smaller schedules can,
    those are not compared with nothing: the choice stands, its figure the model's (the search
    scheduler had taken the only simulated schedule, 2.33x the bound on the timeline, over its own
    choice, 2.00x)."""
    from schedulers.builtin import exact_strategy
    from schedulers.rerank import rerank

    m = _match(CAUSAL_GQA, spyre)
    chosen, _ = exact_strategy(m.space, ScheduleOptions())

    def timeline(p: dict[str, int], deadline: float | None) -> Simulated | None:
        return None if p == chosen else Simulated(1.0, 0)

    ranked = rerank(m.space, chosen, time.perf_counter() + 30, timeline)
    assert ranked.point == chosen and ranked.timeline is None and not ranked.over


def test_a_figure_from_the_model_is_not_said_to_be_confirmed(spyre: Target) -> None:
    """No time to simulate: the report says the ratio is the model's, and not that the timeline
    confirms the choice."""
    module = ktir.parse(CAUSAL_GQA, "attention.ktir")
    r = ExactScheduler().schedule(module, spyre, ScheduleOptions(time_budget=0.0)).report
    assert r.applied and r.timeline_cycles is None
    assert any("not simulated" in n for n in r.notes)
    assert not any("confirms" in n for n in r.notes), r.notes


@pytest.mark.parametrize("causal", [True, False])
def test_a_stream_longer_than_its_depth_is_equivalent(causal: bool) -> None:
    """Query blocks with more key blocks than the K/V stream runs ahead (16 against `DEPTH` 8), so
    the loop's own loads run, several query blocks per tile (the next one's Q and first blocks
    prefetched, each O stored during the next block): equal to the input in the interpreter."""
    from schedulers.check import check_equivalent
    from schedulers.emit_attention import DEPTH, emit_attention, match_attention
    from schedulers.kernels import function_of

    before = ktir.parse(attention_text(2, 1024, 64, "f16", causal=causal), "long.ktir")
    found = match_attention(before)
    assert found is not None
    assert DEPTH + 1 < 1024 // 64
    after = emit_attention(found, function_of(before, None), {"bq": 256, "bkv": 64, "db": 1, "s": 1}, 4)
    verdict = check_equivalent(before, after, seed=7)
    assert verdict.ok, verdict.message
