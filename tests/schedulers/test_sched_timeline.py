"""Timeline figures of natural-form schedules: the synthetic records equal the interpreter's.

`schedulers.trace_natural` writes a scheduled natural kernel's trace records without running
it; the timeline of those records must equal the timeline of the records `ktir.targets`
derives from the interpreter's trace of the emitted module, or re-ranking would judge
schedules by something else than what they do.
"""

from __future__ import annotations

import math

import pytest

import ktir
import reference_interp as ri
import schedulers
from ktir.syntax.printer import print_module
from ktir.targets.from_interp import from_interp
from ktir.targets.schema import Target
from ktir.targets.timeline import simulate
from reference_interp.inputs import infer_args
from schedulers import single_tile as nat
from schedulers.builtin import exact_strategy
from schedulers.cost import figures
from schedulers.emit_natural import emit_natural
from schedulers.emit_reduction import emit_split_reduction, find_split_reduction, reduction_kernel
from schedulers.natural import NaturalKernel, natural_reason_or_kernel
from schedulers.space_natural import NaturalSpace
from schedulers.trace_natural import natural_trace

KERNELS = {
    "rmsnorm": lambda: nat.rmsnorm(256, 512),
    "matmul_bias_relu": lambda: nat.matmul_bias_act(128, 256, 128),
    "softmax_columns": lambda: nat.softmax(128, 256, axis=0),
    "rope": lambda: nat.rope(16, 8, 128),
    "batch_matmul_transpose_b": lambda: nat.batch_matmul_tb(4, 64, 64, 64),
    "reduce_sum": lambda: nat.reduce_sum(256, 256),
    "transpose": lambda: nat.transpose(128, 256),
    # a reduction from an init that is not the identity: partials start from a fill, the init is applied once
    "reduce_sum_from_one": lambda: _init(nat.reduce_sum(256, 256), "1.0"),
    "decode_rmsnorm_from_two": lambda: _init(nat.rmsnorm(1, 4096), "2.0"),
    # a sequential loop kept whole (a scan carrying its state), its columns divided
    "scan": lambda: nat.scan(8, 512, "f16", decay=0.5),
    # rows of a table read through an indirect access tile (an embedding lookup)
    "gather": lambda: nat.gather(100, 64, 256),
    # extents no block divides: the last block of each is partial, emitted apart
    "transpose_odd": lambda: nat.transpose(97, 131, dtype="f32"),
    "softmax_4099_rows": lambda: nat.softmax(4099, 64, dtype="f32"),
}


def _init(m: ktir.Module, value: str) -> ktir.Module:
    """`m` with its reductions starting from `value` instead of 0."""
    return ktir.parse(print_module(m).replace("arith.constant 0.0 : f32", f"arith.constant {value} : f32"), "k.ktir")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_synthetic_records_simulate_like_the_interpreters(name: str, spyre: Target) -> None:
    module = ktir.parse(print_module(KERNELS[name]()), f"{name}.ktir")
    k = natural_reason_or_kernel(module, module.functions()[0], {})
    assert isinstance(k, NaturalKernel)
    split = None
    if not k.splittable():
        found = find_split_reduction(k)
        assert not isinstance(found, str), found
        split, k = found, reduction_kernel(k, found)
    space = NaturalSpace(k, figures(spyre))
    point, _ = exact_strategy(space, schedulers.ScheduleOptions())
    out = emit_natural(space, point) if split is None else emit_split_reduction(space, point, split)
    # a gather's indices must lie in its table: random inputs would not know that
    args = nat.gather_inputs(100, 64, 256) if name == "gather" else infer_args(out, None, {}, 0, {})
    run = ri.run(out, None, args, trace=True)
    real = from_interp(out, run).trace
    synthetic = natural_trace(space, point, split)
    assert synthetic is not None and len(synthetic.records) == len(real.records)
    assert simulate(synthetic, spyre).makespan == pytest.approx(simulate(real, spyre).makespan, rel=1e-9)


def test_the_report_gives_both_figures(spyre: Target) -> None:
    module = ktir.parse(print_module(nat.swiglu(256, 1024)), "swiglu.ktir")
    r = schedulers.schedule(module, spyre, "exact").report
    assert r.estimate_cycles and r.timeline_cycles and r.ratio and r.timeline_ratio
    assert any("timeline" in n for n in r.notes)


@pytest.mark.parametrize("make", [lambda: nat.matmul_bias_act(64, 128, 256), lambda: nat.batch_matmul_tb(2, 64, 64, 256),
                                  lambda: nat.matmul_bias_act(64, 128, 256, dtype="bf16", act="silu")])
def test_a_k_loop_accumulates_right_and_simulates_like_the_interpreter(make, spyre: Target) -> None:  # type: ignore[no-untyped-def]
    """A contraction's K cut into a loop of blocks, the accumulator carried: results equal the
    input's, and the synthetic records simulate like the interpreter's."""
    module = ktir.parse(print_module(make()), "k.ktir")
    k = natural_reason_or_kernel(module, module.functions()[0], {})
    assert isinstance(k, NaturalKernel) and k.kloop is not None
    space = NaturalSpace(k, figures(spyre))
    assert space.kclass is not None
    i = space.cut.index(space.kclass)
    cols = space.candidates()
    ev = space.evaluate(cols)
    rows = [j for j in range(ev.size) if cols[f"b{i}"][j] * 4 == k.extent[space.kclass]
            and ev.scratch[j] <= space.fig.local_capacity and max(cols[f"g{m}"][j] for m in range(len(space.cut))) > 1]
    # the largest blocks of those: fewest loop steps, so the traces stay small
    best = max(rows, key=lambda j: math.prod(int(cols[f"b{m}"][j]) for m in range(len(space.cut))))
    point = {n: int(v[best]) for n, v in cols.items()}
    out = emit_natural(space, point)
    assert print_module(out).count("scf.for") >= 2
    from schedulers.check import check_equivalent

    verdict = check_equivalent(module, out)
    assert verdict.ok, verdict.message
    run = ri.run(out, None, infer_args(out, None, {}, 0, {}), trace=True)
    real = from_interp(out, run).trace
    synthetic = natural_trace(space, point)
    assert synthetic is not None and len(synthetic.records) == len(real.records)
    assert simulate(synthetic, spyre).makespan == pytest.approx(simulate(real, spyre).makespan, rel=1e-9)


def test_a_store_with_one_owner_simulates_like_the_interpreter(spyre: Target) -> None:
    """Two results of different shapes, the rows of the large one over the grid: the small one is
    stored by tile 0 alone (`emit_natural.owner_axes`), in the records as in the emitted code."""
    k0 = nat.Kernel("two", ["x", "w", "y", "z"])
    x, w = k0.load(k0.view("x", [256, 128], "f32")), k0.load(k0.view("w", [64], "f32"))
    k0.store(k0.op("arith.addf", x, x), k0.view("y", [256, 128], "f32"))
    k0.store(k0.op("arith.mulf", w, w), k0.view("z", [64], "f32"))
    module = ktir.parse(print_module(k0.done()), "two.ktir")
    k = natural_reason_or_kernel(module, module.functions()[0], {})
    assert isinstance(k, NaturalKernel)
    space = NaturalSpace(k, figures(spyre))
    point = space.baseline()
    out = emit_natural(space, point)
    assert "scf.if" in print_module(out)
    run = ri.run(out, None, infer_args(out, None, {}, 0, {}), trace=True)
    real = from_interp(out, run).trace
    synthetic = natural_trace(space, point)
    assert synthetic is not None and len(synthetic.records) == len(real.records)
    assert simulate(synthetic, spyre).makespan == pytest.approx(simulate(real, spyre).makespan, rel=1e-9)


@pytest.mark.parametrize("make", [lambda: nat.layernorm_stats(16, 1024), lambda: nat.softmax(16, 1024),
                                  lambda: nat.rmsnorm(16, 1024), lambda: nat.layernorm(16, 1024),
                                  lambda: nat.row_sum(37, 512)])
def test_a_chunked_reduction_runs_in_phases_right_and_simulates_like_the_interpreter(make, spyre: Target) -> None:  # type: ignore[no-untyped-def]
    """A reduced dimension looped over in blocks (`natural.Chunk`): one loop per phase, what each
    phase needs loaded and computed again in it. Results equal the input's, and the synthetic
    records simulate like the interpreter's."""
    module = ktir.parse(print_module(make()), "k.ktir")
    k = natural_reason_or_kernel(module, module.functions()[0], {})
    assert isinstance(k, NaturalKernel) and k.chunk is not None
    space = NaturalSpace(k, figures(spyre))
    i = space.cut.index(k.chunk.cls)
    cols = space.candidates()
    rows = [j for j in range(len(cols["perm"])) if cols[f"b{i}"][j] * 4 == k.extent[k.chunk.cls]
            and max(cols[f"g{m}"][j] for m in range(len(space.cut))) > 1]
    point = {n: int(v[rows[0]]) for n, v in cols.items()}
    out = emit_natural(space, point)
    assert print_module(out).count("scf.for") == 1 + len(k.chunk.loop_phases)
    from schedulers.check import check_equivalent

    verdict = check_equivalent(module, out)
    assert verdict.ok, verdict.message
    run = ri.run(out, None, infer_args(out, None, {}, 0, {}), trace=True)
    real = from_interp(out, run).trace
    synthetic = natural_trace(space, point)
    assert synthetic is not None and len(synthetic.records) == len(real.records)
    assert simulate(synthetic, spyre).makespan == pytest.approx(simulate(real, spyre).makespan, rel=1e-9)
