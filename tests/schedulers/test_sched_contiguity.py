"""The matmul cost model knows which dimension is contiguous: a transposed operand's blocks cost
their strided transfers (whole granules per contiguous run), a row-major operand's do not."""

from __future__ import annotations

import numpy as np

import ktir
import schedulers
from ktir.targets.schema import Target
from schedulers import naive
from schedulers.check import check_equivalent
from schedulers.cost import figures
from schedulers.kernels import MatmulKernel, recognise
from schedulers.space_choice import space_for
from schedulers.spaces import moved


def _kernels(M: int, N: int, K: int, operand: str = "b") -> tuple[str, str]:
    plain = naive.matmul(M, N, K, "f16")
    if operand == "b":  # B stored as its transpose (N x K, row-major): element (k, n) at n * K + k
        transposed = plain.replace(f"sizes: [{K}, {N}], strides: [{N}, 1]", f"sizes: [{K}, {N}], strides: [1, {K}]")
    else:  # A stored as its transpose (K x M): element (m, k) at k * M + m
        transposed = plain.replace(f"sizes: [{M}, {K}], strides: [{K}, 1]", f"sizes: [{M}, {K}], strides: [1, {M}]")
    assert transposed != plain
    return plain, transposed


def test_runs_are_rounded_to_granules(spyre: Target) -> None:
    _, text = _kernels(64, 512, 1024)
    k = recognise(ktir.parse(text, "t.ktir")).kernel
    assert isinstance(k, MatmulKernel) and k.b.strides == (1, 1024)
    gran = figures(spyre).granularity
    # a 64 x 128 block of the transposed B (K x N): 128 runs of 64 f16 elements = one 128-byte granule each
    assert moved(k.b, (np.array([64.0]), np.array([128.0])), gran)[0] == 128 * 128
    # 8 x 128: 128 runs of 16 bytes, each a whole granule: 8x the bytes of the block
    assert moved(k.b, (np.array([8.0]), np.array([128.0])), gran)[0] == 128 * 128
    # row-major A: a block of whole rows is one run
    assert moved(k.a, (np.array([4.0]), np.array([1024.0])), gran)[0] == 4 * 1024 * 2


def test_a_transposed_operand_costs_more_where_its_runs_are_short(spyre: Target) -> None:
    """A stored transposed: its contiguous dimension is M, so a block of fewer than 64 rows (f16)
    moves a whole granule per column; blocks of 64 rows or more cost what row-major ones do."""
    plain, transposed = (recognise(ktir.parse(t, "k.ktir")).kernel for t in _kernels(256, 512, 1024, "a"))
    fig = figures(spyre)
    sp, st = space_for(plain, fig), space_for(transposed, fig)
    cols = sp.candidates()
    cols = {n: v[(cols["order"] == 0) & (cols["db"] == 0)] for n, v in cols.items()}  # A streamed, no overlap
    cp, ct = sp.evaluate(cols).cycles, st.evaluate(cols).cycles
    assert (ct >= cp - 1e-6).all()  # never cheaper
    short = cols["bm"] * 2 < fig.granularity
    # dearer unless the other operand's longer transfer on the second DMA engine hides it
    assert short.sum() > 100 and (ct[short] > cp[short]).mean() > 0.5
    whole = cols["bm"] % (fig.granularity // 2) == 0
    assert whole.sum() > 100 and np.allclose(ct[whole], cp[whole])
    # exact picks blocks of at least one granule per run for the transposed A
    k = recognise(ktir.parse(_kernels(256, 512, 1024, "a")[1], "t.ktir")).kernel
    report = schedulers.schedule(ktir.parse(_kernels(256, 512, 1024, "a")[1], "t.ktir"), spyre, "exact").report
    assert isinstance(k, MatmulKernel) and report.schedule is not None
    assert report.schedule.tile_sizes["M"] * 2 >= fig.granularity


def test_exact_schedules_the_transposed_matmul_correctly(spyre: Target) -> None:
    _, text = _kernels(64, 256, 512)
    before = ktir.parse(text, "t.ktir")
    result = schedulers.schedule(before, spyre, "exact")
    assert result.report.applied
    verdict = check_equivalent(before, result.module, seed=3)
    assert verdict.ok, verdict.message
