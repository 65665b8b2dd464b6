"""The ring matmul with K split (`emit_ringsplit`): sk rings over K's shares, partials added by
`inter_tile_reduce` on each ring position's first tile, in chunks of rows."""

from __future__ import annotations

import pytest

import ktir
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from schedulers import ScheduleOptions, naive, single_tile
from schedulers.check import check_equivalent
from schedulers.classes import Forms
from schedulers.cost import figures
from schedulers.emit_ringsplit import emit_ringsplit
from schedulers.emit_splitk import emit_splitk
from schedulers.kernels import MatmulKernel, recognise
from schedulers.proof import prove
from schedulers.space_choice import space_for
from schedulers.space_ring import RING


def _kernel(module: ktir.Module) -> tuple[MatmulKernel, object]:
    rec = recognise(module)
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    return rec.kernel, rec.fn


@pytest.mark.parametrize(("M", "N", "K", "sk", "g", "bn", "kp", "dtype", "chunk"), [
    (16, 256, 512, 2, 4, 64, 64, "f16", 1 << 16),  # one chunk of rows per block
    (16, 256, 512, 2, 4, 32, 32, "f16", 256),  # two blocks per tile, two sub-rings, 2-row chunks
    (8, 128, 384, 3, 2, 64, 64, "bf16", 512),  # three splits, 4-row chunks
    (16, 128, 256, 4, 2, 32, 32, "f32", 1 << 16),
])
def test_split_rings_compute_the_matmul(M: int, N: int, K: int, sk: int, g: int, bn: int, kp: int, dtype: str,
                                        chunk: int) -> None:
    before = ktir.parse(naive.matmul(M, N, K, dtype), "mm.ktir")
    k, fn = _kernel(before)
    after = emit_ringsplit(k, fn, {"sk": sk, "gn": g, "bn": bn, "bk": kp}, chunk)  # type: ignore[arg-type]
    text = print_module(after)
    _, diags = validate_text(text, "rs.ktir")
    assert not [d for d in diags if d.severity == "error"], diags
    assert "ktdp.inter_tile_reduce" in text and "producer_dependency_per_consumer" in text
    scheduled = ktir.parse(text, "rs.ktir")
    assert prove(before, scheduled) is None
    verdict = check_equivalent(before, scheduled, seed=2)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize(("ta", "tb"), [(True, False), (False, True), (True, True)])
def test_transposed_operands(ta: bool, tb: bool) -> None:
    """A or B stored transposed: the views keep the input's strides."""
    before = ktir.parse(print_module(single_tile.matmul_transposed(16, 128, 256, ta, tb)), "mmt.ktir")
    rec = Forms(before, ScheduleOptions()).recognised  # the transposes read as transposed views
    k, fn = rec.kernel, rec.fn
    assert isinstance(k, MatmulKernel), rec.reason
    assert (k.a.layout == (1, 16)) == ta and (k.b.layout == (1, 256)) == tb, (k.a.layout, k.b.layout)
    after = emit_splitk(k, fn, {"sk": 2, "gn": 2, "bn": 64, "bk": 32, "bm": 16, "gm": 1, "order": RING,  # type: ignore[arg-type]
                                "db": 1, "pp": 0})
    assert prove(before, after) is None
    verdict = check_equivalent(before, after, seed=3)
    assert verdict.ok, verdict.message


def test_wrong_neighbour_is_caught() -> None:
    """Receiving from the tile two splits back (not one ring step back) uses the wrong chunks."""
    before = ktir.parse(naive.matmul(16, 256, 512, "f16"), "mm.ktir")
    k, fn = _kernel(before)
    text = print_module(emit_ringsplit(k, fn, {"sk": 2, "gn": 4, "bn": 64, "bk": 64}))  # type: ignore[arg-type]
    wrong = text.replace("(d0 - s0 + 2) mod 8 == 0", "(d0 - s0 + 4) mod 8 == 0")
    assert wrong != text
    assert not check_equivalent(before, ktir.parse(wrong, "wrong.ktir")).ok


def test_chosen_for_a_512_token_projection_and_priced_near_the_plain_ring(spyre) -> None:  # type: ignore[no-untyped-def]
    """512 x 4096 x 14336 (Llama's mlp_down at a 512-token chunk): a split ring beats every
    ring over all of K under the model, with the same global traffic: each byte read once."""
    k, _ = _kernel(ktir.parse(naive.matmul(512, 4096, 14336, "bf16"), "down.ktir"))
    space = space_for(k, figures(spyre))
    cols = space.candidates()
    ev = space.evaluate(cols)
    fits = ev.scratch <= space.fig.local_capacity
    ring = fits & (cols["order"] == RING)
    split = ring & (cols["sk"] > 1)
    assert split.any()
    best = int(split.nonzero()[0][ev.cycles[split].argmin()])
    assert ev.cycles[best] < ev.cycles[ring & (cols["sk"] == 1)].min()
    compulsory = (512 * 14336 + 14336 * 4096 + 512 * 4096) * 2
    assert ev.global_bytes[best] == pytest.approx(compulsory, rel=1e-3)
    assert space.describe({n: int(v[best]) for n, v in cols.items()}).loop_order.startswith("ring with K split")


def test_no_split_ring_when_c_does_not_start_from_zero(spyre) -> None:  # type: ignore[no-untyped-def]
    """C = init + A B: each split's partial would add the init again."""
    module = ktir.parse(print_module(single_tile.matmul_transposed(64, 512, 1024, True, False, init=-1.5)), "i.ktir")
    k = Forms(module, ScheduleOptions()).recognised.kernel
    assert isinstance(k, MatmulKernel) and k.init == -1.5
    cols = space_for(k, figures(spyre)).candidates()
    assert not ((cols["order"] == RING) & (cols["sk"] > 1)).any()
