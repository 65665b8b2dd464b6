"""The shared-panel matmul: B panels spread over the scratchpads and read over the ring."""

from __future__ import annotations

import pytest

import ktir
import reference_interp as ri
import schedulers
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from reference_interp.inputs import infer_args
from schedulers import naive
from schedulers.check import check_equivalent
from schedulers.emit_matmul import emit_matmul
from schedulers.kernels import recognise
from schedulers.spaces import SHARED, SHARED_STREAM


@pytest.mark.parametrize("order", [SHARED, SHARED_STREAM])
@pytest.mark.parametrize("db,pp", [(0, 0), (1, 1), (1, 0), (0, 1)])
def test_shared_panels_compute_the_matmul(db: int, pp: int, order: int) -> None:
    before = ktir.parse(naive.matmul(64, 256, 256, "f16"), "mm.ktir")
    rec = recognise(before)
    after = emit_matmul(rec.kernel, rec.fn, {"gm": 4, "gn": 1, "bm": 16, "bn": 64, "bk": 64, "order": order, "db": db, "pp": pp})
    text = print_module(after)
    _, diags = validate_text(text, "shared.ktir")
    assert not [d for d in diags if d.severity == "error"]
    assert "construct_distributed_memory_view" in text and text.count("inter_tile_reduce") == 2
    verdict = check_equivalent(before, after, seed=5)
    assert verdict.ok, verdict.message


def test_without_the_second_barrier_the_next_panel_races_with_the_reads() -> None:
    """The barrier after the K loop is what orders the last read of a panel before its overwrite."""
    before = ktir.parse(naive.matmul(64, 256, 256, "f16"), "mm.ktir")
    rec = recognise(before)
    text = print_module(emit_matmul(rec.kernel, rec.fn, {"gm": 4, "gn": 1, "bm": 16, "bn": 64, "bk": 64,
                                                           "order": SHARED, "db": 0}))
    start = text.index("%sc_outf = ")
    end = text.index("ktdp.yield_reduced %sc_outx : tensor<1xf32>\n", start)
    end = text.index("}\n", end) + 2
    broken = ktir.parse(text[:start] + text[end:], "no_barrier.ktir")
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(broken, None, infer_args(broken, None, {}, 0, {}))
    assert info.value.kind in ("race", "uninitialised")


def test_exact_shares_panels_for_prefill_projections(spyre) -> None:  # type: ignore[no-untyped-def]
    module = ktir.parse(naive.matmul(2048, 4096, 4096, "bf16"), "o_proj.ktir")
    report = schedulers.schedule(module, spyre, "exact").report
    assert report.schedule is not None and "B panels shared by all tiles" in report.schedule.loop_order
    assert report.schedule.grid == [32, 1]
    # B is read from memory once; A once per column panel when it is streamed
    compulsory = 2048 * 4096 * 2 + 4096 * 4096 * 2 + 2048 * 4096 * 2
    a_again = 2048 * 4096 * 2 * (4096 // report.schedule.tile_sizes["N"] - 1)
    assert compulsory <= report.bytes_per_level["global"] <= (compulsory + a_again) * 1.05
