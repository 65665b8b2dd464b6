"""The ring matmul with blocks that are not whole sticks: a tile's whole share of N (N = 12800
over 32 tiles is 400 columns each) and chunks dividing a share of K that no stick-aligned chunk
divides. The space offers them, prices their transfers as the whole sticks they touch, and the
rewrite computes the same product."""

from __future__ import annotations

import numpy as np
import pytest

import ktir
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from schedulers import naive
from schedulers.check import check_equivalent
from schedulers.cost import figures
from schedulers.emit_matmul import emit_matmul
from schedulers.kernels import MatmulKernel, recognise
from schedulers.space_choice import space_for
from schedulers.space_ring import RING
from schedulers.spaces import moved


def _kernel(M: int, N: int, K: int, dtype: str = "f16") -> tuple[ktir.Module, MatmulKernel, object]:
    before = ktir.parse(naive.matmul(M, N, K, dtype), "mm.ktir")
    rec = recognise(before)
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    return before, rec.kernel, rec.fn


@pytest.mark.parametrize(("N", "K", "g", "bn", "kp"), [
    (4 * 40, 4 * 64, 4, 40, 64),  # 40 columns per tile: 80 bytes, not a stick
    (4 * 64, 4 * 24, 4, 64, 24),  # a share of K of 24: no stick-aligned chunk divides it
    (3 * 40, 3 * 48, 3, 40, 16),  # both, three tiles, three chunks per share
])
def test_unaligned_ring_blocks_compute_the_matmul(N: int, K: int, g: int, bn: int, kp: int) -> None:
    before, k, fn = _kernel(16, N, K)
    after = emit_matmul(k, fn, {"gm": 1, "gn": g, "bm": 16, "bn": bn, "bk": kp, "order": RING, "db": 1, "pp": 0})  # type: ignore[arg-type]
    text = print_module(after)
    _, diags = validate_text(text, "ring.ktir")
    assert not [d for d in diags if d.severity == "error"], diags
    verdict = check_equivalent(before, ktir.parse(text, "ring.ktir"), seed=1)
    assert verdict.ok, verdict.message


def test_the_space_offers_a_tiles_whole_unaligned_share(spyre) -> None:  # type: ignore[no-untyped-def]
    """N = 12800 over the 32 tiles of Spyre: 400 columns each, a ring candidate of its own, and
    one that beats every stick-aligned ring schedule under the model."""
    _, k, _ = _kernel(512, 12800, 4096, "bf16")
    space = space_for(k, figures(spyre))
    cols = space.candidates()
    ev = space.evaluate(cols)
    fits = ev.scratch <= space.fig.local_capacity
    ring = fits & (cols["order"] == RING)
    whole = ring & (cols["gn"] == 32) & (cols["bn"] == 400)
    assert whole.any()
    aligned = ring & (cols["bn"] % 64 == 0) & (cols["bk"] % 64 == 0)
    assert ev.cycles[whole].min() < ev.cycles[aligned].min()


def test_unaligned_blocks_are_priced_as_whole_sticks() -> None:
    """A row-major block 400 bf16 wide moves 7 sticks per row (896 bytes), not 800."""
    _, k, _ = _kernel(512, 12800, 4096, "bf16")
    got = moved(k.b, (np.array([64.0]), np.array([400.0])), 128)
    assert got[0] == 64 * 7 * 128
