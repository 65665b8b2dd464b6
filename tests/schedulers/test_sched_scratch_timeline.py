"""The split-K and K-split ring matmuls on the timeline: the scratchpad peak the schedulers'
model gives a point against the peak of the interpreter's trace on Spyre.

Both count an accumulator once: a `linalg.matmul` that is the last user of its `outs` tensor
writes over it (spec/ops/linalg.md, storage). Before the timeline followed that rule, it held
the previous accumulator beside the new one for every matmul, and the K-split ring of a
512 x 4096 x 14336 projection peaked at 2.82 MB (model 1.90 MB). The ring's combine extracts
every row chunk of the accumulator before the reduces that use them (nothing orders an extract
after the previous chunk's reduce), and the timeline gives each extract its own storage: the
model counts that phase as the timeline holds it
(`test_the_ring_combine_is_counted_as_the_timeline_holds_it`).
"""

from __future__ import annotations

import dataclasses

import pytest

import ktir
from ktir.targets.records import KernelTrace
from ktir.targets.schema import Target
from ktir.targets.timeline import simulate
from schedulers import naive
from schedulers.builtin import evaluate_point
from schedulers.cost import figures
from schedulers.emit_splitk import SplitKSpace, emit_splitk
from schedulers.kernels import MatmulKernel, recognise
from schedulers.space_ring import RING

SPLIT = {"bm": 64, "bn": 1024, "bk": 128, "order": 0, "db": 1, "gm": 1, "gn": 4, "pp": 0, "sk": 2}
RING_SPLIT = {"bm": 64, "bn": 512, "bk": 64, "order": RING, "db": 1, "gm": 1, "gn": 8, "pp": 0, "sk": 4}


def _trace(M: int, N: int, K: int, point: dict[str, int], spyre: Target) -> tuple[KernelTrace, float]:
    """The shapes-only trace of the scheduled bf16 matmul, and the model's scratchpad for the point."""
    import reference_interp as ri
    from ktir.targets.from_interp import from_interp
    from reference_interp.inputs import infer_args

    before = ktir.parse(naive.matmul(M, N, K, "bf16"), "mm.ktir")
    rec = recognise(before)
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    after = emit_splitk(rec.kernel, rec.fn, point)
    model = float(evaluate_point(SplitKSpace(rec.kernel, figures(spyre)), point).scratch[0])
    args = infer_args(after, None, {}, 0, {"shapes_only": True}, zeros=True)
    run = ri.run(after, None, args, trace=True, shapes_only=True)
    return from_interp(after, run, None).trace, model


def _peak(trace: KernelTrace, spyre: Target, in_place: bool = True) -> int:
    if not in_place:
        trace = dataclasses.replace(trace, records=[dataclasses.replace(r, reuses=-1) for r in trace.records])
    return max(simulate(trace, spyre).peak_local.values())


@pytest.mark.parametrize("point", [SPLIT, RING_SPLIT], ids=["split-K", "K-split ring"])
def test_the_timeline_counts_the_accumulator_once_and_stays_within_the_model(point: dict[str, int],
                                                                           spyre: Target) -> None:
    """64 x 4096 x 14336, at each emitter's fastest point of the model: the K loop holds one
    accumulator (the timeline without the rule holds two: exactly one accumulator more), and the
    peak is within the model's estimate and the 2 MiB scratchpad."""
    trace, model = _trace(64, 4096, 14336, point, spyre)
    peak = _peak(trace, spyre)
    acc = point["bm"] * point["bn"] * 4
    assert _peak(trace, spyre, in_place=False) - peak == acc
    capacity = spyre.local_memory.capacity_bytes.value
    assert peak <= model <= capacity, (peak, model, capacity)


def test_the_ring_combine_is_counted_as_the_timeline_holds_it(spyre: Target) -> None:
    """512 x 4096 x 14336 on the K-split ring at the point `exact` used to pick (4 splits, 512
    columns): nothing orders a chunk's extract after the previous chunk's reduce, so during the
    combine the timeline holds the accumulator and most of a second copy of it in row chunks (7 of
    the 8 rows of chunks; the model used to count 4 chunks and a rounded one: 1,556,480 B against
    the timeline's 2,031,616). The model now counts the combine as the timeline holds it: never
    below the timeline's peak, within 15 % of it, and beyond the scratchpad, so `exact` picks
    another point, whose peak on the timeline is within the scratchpad and the model."""
    capacity = spyre.local_memory.capacity_bytes.value
    point = {**RING_SPLIT, "bm": 512, "db": 0}
    trace, model = _trace(512, 4096, 14336, point, spyre)
    peak = _peak(trace, spyre)
    acc = 512 * 512 * 4
    assert peak > acc + acc * 3 // 4, peak  # the accumulator and most of a copy of it
    assert peak <= model <= 1.15 * peak, (peak, model)
    assert model > capacity

    import reference_interp as ri
    import schedulers
    from ktir.targets.from_interp import from_interp
    from reference_interp.inputs import infer_args

    result = schedulers.schedule(ktir.parse(naive.matmul(512, 4096, 14336, "bf16"), "mm.ktir"), spyre, "exact")
    report = result.report
    assert report.schedule is not None and report.schedule.loop_order.startswith("ring with K split"), report
    assert report.schedule.tile_sizes["N"] < point["bn"] or report.schedule.grid[0] != point["sk"]
    args = infer_args(result.module, None, {}, 0, {"shapes_only": True}, zeros=True)
    run = ri.run(result.module, None, args, trace=True, shapes_only=True)
    peak = _peak(from_interp(result.module, run, None).trace, spyre)
    assert report.scratchpad_peak_bytes is not None
    assert peak <= report.scratchpad_peak_bytes <= capacity, (report.schedule, peak, report.scratchpad_peak_bytes)


@pytest.mark.xfail(strict=True, reason="the ring's transfers run ahead of its compute on the timeline: a tile passes "
                   "each A chunk on as soon as it arrives and loads its B blocks as soon as its DMA queue reaches "
                   "them, nothing waits for the product that frees a buffer, so a compute-bound ring holds many "
                   "chunks and blocks at once (the model counts two of each)")
def test_a_compute_bound_ring_stays_within_the_scratchpad(spyre: Target) -> None:
    """2048 x 4096 x 4096 (prefill, compute-bound), `exact`'s ring schedule (grid [2, 16], 1024 rows x
    256 columns, chunks of 64): 3,506,176 B at the timeline's peak against 1,572,864 in the model and
    2,097,152 available. Every ring schedule `exact` picks at 2048 tokens is in this case (3.5-7.6 MB
    on the timeline, Llama and Granite projections); at 512 tokens the ports bound the ring and
    little runs ahead."""
    import reference_interp as ri
    import schedulers
    from ktir.targets.from_interp import from_interp
    from reference_interp.inputs import infer_args

    result = schedulers.schedule(ktir.parse(naive.matmul(2048, 4096, 4096, "bf16"), "mm.ktir"), spyre, "exact")
    report = result.report
    assert report.schedule is not None and report.schedule.loop_order.startswith("ring"), report
    assert report.scratchpad_peak_bytes is not None
    args = infer_args(result.module, None, {}, 0, {"shapes_only": True}, zeros=True)
    run = ri.run(result.module, None, args, trace=True, shapes_only=True)
    peak = _peak(from_interp(result.module, run, None).trace, spyre)
    assert peak <= report.scratchpad_peak_bytes <= spyre.local_memory.capacity_bytes.value, (
        report.schedule, peak, report.scratchpad_peak_bytes)
