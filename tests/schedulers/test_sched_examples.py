"""Every example kernel through every built-in scheduler: valid output, equal results.

Kernels of a recognised class are rewritten and checked in the reference interpreter
against the input on random inputs; the others must come back unchanged with a reason.
"""

from __future__ import annotations

import pytest
from conftest_paths import EXAMPLES, example

import ktir
import schedulers
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from schedulers import naive
from schedulers.check import check_equivalent

# index arguments that size the examples' tensors (the smallest sizes each example allows)
SIZES: dict[str, dict[str, int]] = {
    "softmax.ktir": {"R": 1024},
    "rmsnorm.ktir": {"R": 256},
    "layernorm.ktir": {"R": 128},
    "rope.ktir": {"T": 128},
    "causal_attention.ktir": {"S": 256},
    "tiled_matmul.ktir": {"M": 2048, "N": 2048, "K": 256},
    "embedding_gather.ktir": {"V": 1000, "B": 256, "H": 1024},
    "paged_attention.ktir": {"NP": 64, "S": 4, "W": 16},
    "ring_allreduce.ktir": {"L": 65536},
    "vector_add.ktir": {"N": 65536},
    "distributed_copy.ktir": {"M": 256, "N": 1024},
    "swiglu.ktir": {"M": 256, "N": 256, "K": 512},
    "fp8_dequant_matmul.ktir": {"M": 512, "N": 256, "K": 256},
}
REWRITTEN = {"softmax.ktir", "rmsnorm.ktir", "layernorm.ktir", "rope.ktir", "tiled_matmul.ktir",
             "causal_attention.ktir", "vector_add.ktir"}
FUNCS = {"ring_allreduce.ktir": "ring_allreduce"}
SCHEDULERS = ("baseline", "exact", "search")


def test_the_list_covers_every_example() -> None:
    names = {p.name for p in EXAMPLES.glob("*.ktir")}
    assert names >= REWRITTEN and len(names) >= 13


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.ktir")))
def test_example(name: str, scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    before = example(name)
    options = schedulers.ScheduleOptions(sizes=SIZES.get(name, {}), time_budget=0.2, func=FUNCS.get(name))
    result = schedulers.schedule(before, spyre, scheduler, options)
    report = result.report
    text = print_module(result.module)
    _, diags = validate_text(text, f"{name}.scheduled")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    if name not in REWRITTEN:
        assert not report.applied and report.reason and report.kernel_class == "unrecognized"
        assert result.module == before
        return
    assert report.applied and report.schedule is not None and report.ratio is not None
    assert report.ratio >= 1.0 - 1e-9  # an estimate below the roofline bound would be a cost-model bug
    assert report.scratchpad_peak_bytes is not None and report.scratchpad_peak_bytes <= spyre.local_memory.capacity_bytes.value
    assert result.module != before
    verdict = check_equivalent(before, result.module, SIZES.get(name), seed=7)
    assert verdict.ok, verdict.message


NAIVE = {
    "matmul": lambda: naive.matmul(64, 128, 256, "f16"),
    "matmul_bf16_decode": lambda: naive.matmul(1, 256, 128, "bf16"),
    "rmsnorm": lambda: naive.rmsnorm(64, 256, "bf16"),
    "softmax": lambda: naive.softmax(64, 256, "f16"),
    "rope": lambda: naive.rope(64, 4, 64),
}


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("name", sorted(NAIVE))
def test_single_tile_kernel(name: str, scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    """The typical input, one tile over whole tensors, is divided over tiles and stays equal."""
    before = ktir.parse(NAIVE[name](), f"{name}.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.2))
    assert result.report.applied and result.report.schedule is not None
    _, diags = validate_text(print_module(result.module), f"{name}.scheduled")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    assert result.report.schedule.grid != [1] or name == "matmul_bf16_decode"
    verdict = check_equivalent(before, result.module, seed=3)
    assert verdict.ok, verdict.message


# examples left alone, and what the reason must name: the grid they are divided over already,
# the tile-id op that divides them, and the op of a form the schedulers do not take
DECLINED = {
    "paged_attention.ktir": ("grid [32]", "`ktdp.get_compute_tile_id` at line",
                             "indirect access (`ktdp.construct_indirect_access_tile` at line 59)"),
    "swiglu.ktir": ("grid [4, 8]", "`ktdp.get_compute_tile_id` at line", "`linalg.matmul` at line 40"),
    "fp8_dequant_matmul.ktir": ("grid [4, 8]", "`ktdp.get_compute_tile_id` at line", "`linalg.generic` at line 46"),
    "distributed_copy.ktir": ("grid [4]", "`ktdp.get_compute_tile_id` at line",
                              "a distributed memory view (`ktdp.construct_distributed_memory_view` at line"),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_a_declined_example_names_what_blocks_it(name: str, spyre) -> None:  # type: ignore[no-untyped-def]
    options = schedulers.ScheduleOptions(sizes=SIZES.get(name, {}), time_budget=0.2, func=FUNCS.get(name))
    report = schedulers.schedule(example(name), spyre, "exact", options).report
    assert not report.applied and report.reason
    grid, tile_id, blocker = DECLINED[name]
    assert f"already divided over {grid}" in report.reason and tile_id in report.reason, report.reason
    assert blocker is None or blocker in report.reason, report.reason
