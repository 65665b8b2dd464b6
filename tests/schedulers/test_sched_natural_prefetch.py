"""Double buffering in the natural form: the innermost block loop loads its next blocks an
iteration ahead (`emit_natural.prefetched`).

Without it, a loop that loads a small block and stores its result each iteration runs its
transfers and its compute one after the other on the timeline: the tile's DMA queue keeps program
order, so the next block's load waits behind this block's store, which waits for the compute
(batched Q K^T at 2048 tokens, one query row per step: 1.469x the bound on the timeline where the
model said 1.237). Checked here on a smaller Q K^T, whose every schedule point is checked against
the unscheduled kernel in the interpreter and measured on the timeline of the interpreter's own
trace.
"""

from __future__ import annotations

import numpy as np

import ktir
import reference_interp as ri
from ktir.syntax.printer import print_module
from ktir.targets.from_interp import from_interp
from ktir.targets.records import Kind
from ktir.targets.schema import Target
from ktir.targets.timeline import simulate
from reference_interp.inputs import infer_args
from schedulers import single_tile as nat
from schedulers.check import check_equivalent
from schedulers.cost import figures
from schedulers.emit_natural import emit_natural
from schedulers.natural import NaturalKernel, natural_reason_or_kernel
from schedulers.proof import prove
from schedulers.space_natural import NaturalSpace

# Q K^T of 16 heads, 256 queries, 2048 keys, head dim 64; one query row of 2 heads per step on 32 tiles
# (as `exact` schedules Llama's 2048-token scores: K resident, a stored row of 8 KiB per step)
POINT = {"g0": 8, "b0": 2, "g1": 4, "b1": 1, "g2": 1, "b2": 2048, "g3": 1, "b3": 64, "perm": 0}


def _space(spyre: Target) -> tuple[ktir.Module, NaturalSpace]:
    module = ktir.parse(print_module(nat.batch_matmul_tb(16, 256, 2048, 64, "bf16")), "qk.ktir")
    k = natural_reason_or_kernel(module, module.functions()[0], {})
    assert isinstance(k, NaturalKernel), k
    space = NaturalSpace(k, figures(spyre))
    assert [k.label(c) for c in space.cut] == ["d0", "d1", "d3", "d2"]
    return module, space


def test_the_next_query_block_is_loaded_before_this_blocks_store(spyre: Target) -> None:
    """Every tile loads its first Q block before the loop and each later one during the step before
    (a trace of the emitted module: the i-th Q load precedes the (i-1)-th store); the output equals
    the unscheduled kernel's in the interpreter, and the legality proof holds."""
    before, space = _space(spyre)
    assert space.double_buffered(POINT)
    after = emit_natural(space, POINT)
    assert check_equivalent(before, after).ok
    assert prove(before, after) is None
    run = ri.run(after, None, infer_args(after, None, {}, 0, {"shapes_only": True}, zeros=True), trace=True,
                 shapes_only=True)
    trace = from_interp(after, run, None).trace
    for tile, records in trace.by_tile().items():
        q_loads = [r.seq for r in records if r.kind is Kind.TRANSFER and r.bytes_read and r.bytes_read.get("global", 0) == 2 * 64 * 2]
        stores = [r.seq for r in records if r.kind is Kind.TRANSFER and r.bytes_written]
        assert len(q_loads) == len(stores) == 256 // 4, (tile, len(q_loads), len(stores))
        assert all(q_loads[i] < stores[i - 1] for i in range(1, len(stores))), tile


def test_the_model_and_the_timeline_agree_on_the_double_buffered_loop(spyre: Target) -> None:
    """The model's cycles for the point within 10 % of the timeline's (the interpreter's trace of the
    emitted module), and its scratchpad at least the timeline's peak: the Q block loaded ahead
    counted beside the resident K, the scores and their rounding."""
    _, space = _space(spyre)
    after = emit_natural(space, POINT)
    run = ri.run(after, None, infer_args(after, None, {}, 0, {"shapes_only": True}, zeros=True), trace=True,
                 shapes_only=True)
    timeline = simulate(from_interp(after, run, None).trace, spyre)
    model = space.evaluate({n: np.array([v]) for n, v in POINT.items()})
    assert abs(float(model.cycles[0]) / timeline.makespan - 1) <= 0.10, (float(model.cycles[0]), timeline.makespan)
    assert max(timeline.peak_local.values()) <= float(model.scratch[0])
