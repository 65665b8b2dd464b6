"""The natural space's scratchpad estimate: the tensors live at once, not every tensor of the kernel."""

from __future__ import annotations

import numpy as np
import pytest

import ktir
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from schedulers import single_tile as nat
from schedulers.cost import figures
from schedulers.kernels import recognise
from schedulers.natural import NaturalKernel, natural_reason_or_kernel
from schedulers.space_natural import NaturalSpace


def _space(module: ktir.Module, spyre: Target) -> NaturalSpace:
    m = ktir.parse(print_module(module), "k.ktir")
    k = natural_reason_or_kernel(m, recognise(m).fn, {})
    assert isinstance(k, NaturalKernel)
    return NaturalSpace(k, figures(spyre))


def _scratch(space: NaturalSpace, point: dict[str, int]) -> float:
    return float(space.evaluate({n: np.array([v]) for n, v in point.items()}).scratch[0])


@pytest.mark.parametrize("bm,bn,bk", [(64, 128, 64), (32, 64, 128), (64, 256, 512)])
def test_matmul_epilogue_peak_is_the_k_loop_or_the_epilogue(bm: int, bn: int, bk: int, spyre: Target) -> None:
    """In the K loop: the carried f32 accumulator and the product made from it, a block of A and
    of B, the bias; after it: the accumulator, the rounded result and the bias (not all at once)."""
    M, N, K = 64, 256, 512
    space = _space(nat.matmul_bias_act(M, N, K, "f16", act="silu"), spyre)
    names = [space.k.label(c) for c in space.cut]
    assert names == ["d0", "d2", "d1"] and space.kclass == space.cut[-1]  # M, N, then the looped K
    point = {"g0": 1, "b0": bm, "g1": 1, "b1": bn, "g2": 1, "b2": bk, "perm": 0}
    in_loop = 2 * bm * bn * 4 + bm * bk * 2 + bk * bn * 2 + bn * 2
    after = bm * bn * 4 + bm * bn * 2 + bn * 2
    assert _scratch(space, point) == max(in_loop, after)
    everything = in_loop + bm * bn * 2
    assert _scratch(space, point) < everything


def test_a_value_read_in_a_deeper_loop_stays_live(spyre: Target) -> None:
    """RMSNorm's weight is loaded once per tile, before the row loop, and read in every iteration:
    it is live beside each row block. The peak is at the normalisation: the block in f32, the
    sums of squares, the weight and the output (the f16 block and the sums' init are dead by then);
    and, when a tile runs the row loop more than once, the next f16 row block, loaded an iteration
    ahead (`emit_natural.prefetched`)."""
    R, C = 256, 512
    space = _space(nat.rmsnorm(R, C, "f16"), spyre)
    # the rows, then the columns: reduced, they may be chunked (`natural.Chunk`); whole here
    assert [space.k.label(c) for c in space.cut] == ["d0", "d1"] and space.kclass == space.cut[1]
    for rb in (8, 32):
        point = {"g0": 8, "b0": rb, "g1": 1, "b1": C, "perm": 0}
        block = rb * C
        weight = C * 2
        ahead = block * 2 if R // (8 * rb) > 1 else 0
        assert space.double_buffered(point) == (ahead > 0)
        assert _scratch(space, point) == block * 4 + rb * 4 + weight + block * 2 + ahead
