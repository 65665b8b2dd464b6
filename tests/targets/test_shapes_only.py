"""A shapes-only run (no tensor arithmetic) traces exactly what a full run traces, for every kind
of scheduled kernel: the benchmarks simulate full-size schedules from it in a second."""

from __future__ import annotations

import pytest

import ktir
from ktir.syntax.printer import print_module
from ktir.targets import load_target
from ktir.targets.from_interp import from_interp
from ktir.targets.timeline import simulate

ri = pytest.importorskip("reference_interp")
schedulers = pytest.importorskip("schedulers")
from reference_interp.inputs import infer_args  # noqa: E402
from schedulers import naive  # noqa: E402
from schedulers import single_tile as nat  # noqa: E402
from schedulers.emit_attention import attention_text  # noqa: E402
from schedulers.emit_matmul import emit_matmul  # noqa: E402
from schedulers.kernels import recognise  # noqa: E402
from schedulers.spaces import SHARED  # noqa: E402


def _shared() -> ktir.Module:
    before = ktir.parse(naive.matmul(64, 256, 256, "f16"), "mm.ktir")
    rec = recognise(before)
    return emit_matmul(rec.kernel, rec.fn, {"gm": 4, "gn": 1, "bm": 16, "bn": 64, "bk": 64, "order": SHARED,
                                            "db": 1, "pp": 1})


KERNELS = {
    "matmul": lambda: naive.matmul(128, 256, 512, "f16"),
    "split-K decode matmul": lambda: naive.matmul(1, 512, 2048, "bf16"),
    "row softmax": lambda: naive.softmax(64, 512, "f16"),
    "rope": lambda: naive.rope(8, 4, 64),
    "attention": lambda: attention_text(2, 64, 32, "f16", causal=True),
    "natural softmax over columns": lambda: print_module(nat.softmax(64, 256, 0, "f16")),
    "natural matmul + bias + SiLU": lambda: print_module(nat.matmul_bias_act(64, 256, 512, "f16", act="silu")),
    "natural sum to a scalar": lambda: print_module(nat.reduce_sum(64, 256, "f16")),
}


def _records(module: ktir.Module, shapes_only: bool) -> list[dict]:
    run = ri.run(module, None, infer_args(module, None, {}, 0, {}), trace=True, shapes_only=shapes_only)
    return [r.to_dict() for r in from_interp(module, run).trace.records]


@pytest.mark.parametrize("name", list(KERNELS))
def test_scheduled_kernels_trace_the_same(name: str) -> None:
    spyre = load_target("spyre")
    before = ktir.parse(KERNELS[name](), f"{name}.ktir")
    result = schedulers.schedule(before, spyre, "exact")
    assert result.report.applied, result.report.reason
    module = ktir.parse(print_module(result.module), "scheduled.ktir")
    full, quick = _records(module, False), _records(module, True)
    assert quick == full


def test_shared_panels_trace_the_same() -> None:
    module = _shared()
    assert _records(module, True) == _records(module, False)


def test_outputs_of_a_shapes_only_run_are_not_results() -> None:
    """The flag skips the arithmetic: a kernel's output stays as the zeros it computed."""
    module = ktir.parse(naive.softmax(8, 256, "f16"), "softmax.ktir")
    args = infer_args(module, None, {}, 0, {})
    quick = ri.run(module, None, {k: v.copy() if hasattr(v, "copy") else v for k, v in args.items()},
                   trace=True, shapes_only=True)
    full = ri.run(module, None, args, trace=True)
    assert simulate(from_interp(module, quick).trace, load_target("spyre")).makespan == \
        simulate(from_interp(module, full).trace, load_target("spyre")).makespan
    y = next(n for n in full.outputs if n.startswith("y"))
    assert (quick.outputs[y] == 0).all() and not (full.outputs[y] == 0).all()


def test_zero_inputs_size_pointer_arguments_like_random_ones() -> None:
    """`infer_args(..., zeros=True)` sizes the arrays behind pointer arguments with a shapes-only probe."""
    module = ktir.parse(naive.matmul(64, 128, 256, "f16"), "mm.ktir")
    rand = infer_args(module, None, {}, 0, {})
    zero = infer_args(module, None, {}, 0, {"shapes_only": True}, zeros=True)
    assert rand.keys() == zero.keys()
    for name, value in rand.items():
        assert zero[name].shape == value.shape and zero[name].dtype == value.dtype and not zero[name].any()
