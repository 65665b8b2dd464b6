"""The split ring's partials reduce-scattered: when sk divides M, chunk o of every sk chunks of
rows is added, rounded and stored by the group's tile s = o (`emit_ringsplit`), so every tile
receives and stores 1 / sk of a block instead of the first tile all of it."""

from __future__ import annotations

import numpy as np
import pytest

import ktir
import reference_interp as ri
import schedulers.emit_ringsplit as emit_ringsplit_mod
import schedulers.space_ringsplit as space_ringsplit
from ktir.syntax.printer import print_module
from ktir.targets.from_interp import from_interp
from ktir.targets.records import GLOBAL
from ktir.targets.timeline import simulate
from ktir.verify import validate_text
from reference_interp.inputs import infer_args
from schedulers import naive
from schedulers.check import check_equivalent
from schedulers.cost import figures
from schedulers.emit_ringsplit import emit_ringsplit
from schedulers.kernels import MatmulKernel, recognise
from schedulers.proof import prove
from schedulers.space_choice import space_for
from schedulers.space_ring import MODEL_SHARING, RING


def _kernel(module: ktir.Module) -> tuple[MatmulKernel, object]:
    rec = recognise(module)
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    return rec.kernel, rec.fn


def _trace(module: ktir.Module) -> object:
    run = ri.run(module, None, infer_args(module, None, {}, 0, {"shapes_only": True}, zeros=True), trace=True,
                 shapes_only=True)
    return from_interp(module, run).trace


@pytest.mark.parametrize(("M", "N", "K", "sk", "g", "bn", "kp", "dtype", "chunk"), [
    (16, 256, 512, 2, 4, 64, 64, "f16", 1 << 16),  # one pair of chunks per block
    (16, 256, 512, 2, 4, 32, 32, "f16", 256),  # two blocks per tile, two sub-rings, 2-row chunks, 4 pairs
    (12, 128, 384, 3, 2, 64, 64, "bf16", 1 << 16),  # three splits of 4 rows each
    (16, 128, 256, 4, 2, 32, 32, "f32", 512),  # four splits, 4-row chunks: one chunk each
])
def test_scattered_partials_compute_the_matmul(M: int, N: int, K: int, sk: int, g: int, bn: int, kp: int, dtype: str,
                                               chunk: int) -> None:
    before = ktir.parse(naive.matmul(M, N, K, dtype), "mm.ktir")
    k, fn = _kernel(before)
    assert space_ringsplit.scattered(M, sk)
    text = print_module(emit_ringsplit(k, fn, {"sk": sk, "gn": g, "bn": bn, "bk": kp}, chunk))  # type: ignore[arg-type]
    _, diags = validate_text(text, "rs.ktir")
    assert not [d for d in diags if d.severity == "error"], diags
    assert text.count("ktdp.inter_tile_reduce") == sk  # one receive per chunk of each group tile
    scheduled = ktir.parse(text, "rs.ktir")
    assert prove(before, scheduled) is None
    verdict = check_equivalent(before, scheduled, seed=5)
    assert verdict.ok, verdict.message


def test_every_tile_stores_its_share_of_the_rows() -> None:
    """Global writes: every tile writes M N / tiles elements of C (scattered); gathered (M not a
    multiple of sk), only the first tile of each group writes."""
    for M, sk, even in ((16, 2, True), (9, 3, True), (8, 3, False)):
        before = ktir.parse(naive.matmul(M, 128, 768, "f16"), "mm.ktir")
        k, fn = _kernel(before)
        after = emit_ringsplit(k, fn, {"sk": sk, "gn": 2, "bn": 64, "bk": 64})  # type: ignore[arg-type]
        written: dict[int, int] = {}
        for r in _trace(after).records:  # type: ignore[attr-defined]
            written[r.tile] = written.get(r.tile, 0) + r.bytes_written.get(GLOBAL, 0)
        tiles = sk * 2
        if even:
            assert sorted(written) == list(range(tiles)) and len(set(written.values())) == 1, written
            assert sum(written.values()) == M * 128 * 2
        else:
            assert {t for t, n in written.items() if n} == {0, sk}, written


def test_the_model_prices_the_scattered_ring_as_the_timeline_does(spyre, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """512 x 4096 x 4096 on grid [4, 8]: the model within 5% of the timeline, scattered and gathered
    alike; scattered is faster on both (each tile receives 3 / 4 of a block's partials instead of
    the first tile three whole ones)."""
    M, N, K = 512, 4096, 4096
    before = ktir.parse(naive.matmul(M, N, K, "bf16"), "mm.ktir")
    k, fn = _kernel(before)
    space = space_for(k, figures(spyre))
    p = {"sk": 4, "gn": 8, "bn": 512, "bk": 64, "bm": M, "gm": 1, "order": RING, "db": 1, "pp": 0}

    def both() -> tuple[float, float]:
        est = float(space.evaluate({n: np.array([v]) for n, v in p.items()}).cycles[0])
        sim = float(simulate(_trace(emit_ringsplit(k, fn, p)), spyre, MODEL_SHARING).makespan)  # type: ignore[arg-type]
        assert 0.95 <= est / sim <= 1.05, (est, sim)
        return est, sim

    scattered = both()
    monkeypatch.setattr(space_ringsplit, "scattered", lambda M, sk: False)
    monkeypatch.setattr(emit_ringsplit_mod, "scattered", lambda M, sk: False)
    gathered = both()
    assert scattered[1] < 0.9 * gathered[1] and scattered[0] < 0.9 * gathered[0], (scattered, gathered)
