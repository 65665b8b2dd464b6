"""The shared-panel matmul: B panels spread over the scratchpads and read over the ring."""

from __future__ import annotations

import pytest

import ktir
import reference_interp as ri
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


@pytest.mark.parametrize("order", [SHARED, SHARED_STREAM])
@pytest.mark.parametrize("tiles,bm,bk", [(8, 32, 64), (4, 64, 128)])
def test_the_model_charges_the_ring_as_the_timeline_does(order: int, tiles: int, bm: int, bk: int, spyre) -> None:  # type: ignore[no-untyped-def]
    """Reads of the other tiles' panel parts cross the ring; the timeline charges them from the
    interpreter's trace (each read names the scratchpad it reaches), the model must agree."""
    import numpy as np

    from ktir.targets.from_interp import from_interp
    from ktir.targets.timeline import simulate
    from schedulers.cost import figures
    from schedulers.space_choice import space_for

    before = ktir.parse(naive.matmul(256, 256, 512, "f16"), "mm.ktir")
    rec = recognise(before)
    point = {"gm": tiles, "gn": 1, "bm": bm, "bn": 256, "bk": bk, "order": order, "db": 1, "pp": 1, "sk": 1}
    est = float(space_for(rec.kernel, figures(spyre)).evaluate({k: np.array([v]) for k, v in point.items()}).cycles[0])
    after = emit_matmul(rec.kernel, rec.fn, point)
    run = ri.run(after, args=infer_args(after, None, {}, 0, {}), trace=True)
    simulated = simulate(from_interp(after, run).trace, spyre).makespan
    assert 0.75 <= est / simulated <= 1.25
