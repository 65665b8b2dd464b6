"""Lockstep against the per-tile run for `x @ x^T`-shaped contractions.

Per tile, a narrow-float box loaded twice (or one loaded value used as both operands) is
widened once per run, so both operands of the contraction are one f32 array (an f32 box is
the tile's own array, one buffer too), and numpy computes a contraction reading it transposed
with BLAS's syrk instead of gemm (different roundings), where lanes, widening each operand on
their own, got gemm. Contractions now multiply operands in buffers of their own
(ops/linalg._apart), so both runs use gemm: lockstep runs these forms and gives the per-tile
bits (test_lockstep._compare: outputs, statistics, returns). Named matmuls with transposed
indexing maps and `linalg.generic` contractions, f16/bf16/f8/f32.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.dialects.names import Linalg
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty

from .helpers import FAST
from .test_lockstep import _compare

TYPES = {"f16": (ty.F16, np.float16), "bf16": (ty.BF16, ml_dtypes.bfloat16),
         "f8": (ty.F8E4M3FN, ml_dtypes.float8_e4m3fn), "f32": (ty.F32, np.float32)}
TILES = 4


def _maps(*results: tuple[af.AffineExpr, ...]) -> tuple[at.AffineMapAttr, ...]:
    return tuple(at.AffineMapAttr(value=af.AffineMap(num_dims=3, num_symbols=0, results=r)) for r in results)


def _kernel(et: ty.Type, m: int, k: int, twice: bool, generic: bool, shared: bool = False):  # type: ignore[no-untyped-def]
    """Tile t: X_t = rows t*m.. of A (m x k); C_t = X_t X_t^T (m x m, f32), the second operand
    the same value or the same box loaded again (`twice`); a named matmul with transposed maps
    or a linalg.generic `out + ext(a) * ext(b)`. With `shared`, every tile reads rows 0.. (the
    same operands in every tile: lockstep computes the contraction once, as a tile does)."""
    f32 = ty.F32
    acc_t = ty.TensorType(shape=(m, m), element_type=f32)
    d0, d1, d2 = af.dim(0), af.dim(1), af.dim(2)
    maps = _maps((d0, d2), (d1, d2), (d0, d1))
    b = Builder()
    with b.func("k", [("a", ty.INDEX), ("c", ty.INDEX)], grid=[TILES]) as (ap, cp):
        (t,) = b.tile_id(1)
        va = b.memory_view(ap, [TILES * m, k], [k, 1], et, coordinate_set=box(TILES * m, k))
        vc = b.memory_view(cp, [TILES * m, m], [m, 1], f32, coordinate_set=box(TILES * m, m))
        row = 0 if shared else ssa(t) * m
        x = b.load(b.access_tile(va, [row, 0], box(m, k), [m, k]), et)
        y = b.load(b.access_tile(va, [row, 0], box(m, k), [m, k]), et) if twice else x
        z = b.fill(b.constant(0.0, f32), b.empty(acc_t))
        if generic:
            with b.generic([x, y], [z], [m_.value for m_ in maps], ["parallel", "parallel", "reduction"]) as (p, q, o):
                if et != f32:
                    p = b.arith.extf(p, result_types=[f32])
                    q = b.arith.extf(q, result_types=[f32])
                b.yield_(b.arith.addf(o, b.arith.mulf(p, q)), op=Linalg.yield_)
            (r,) = b.last_results
        else:
            r = b.dps(Linalg.matmul, [x, y], [z], attributes={"indexing_maps": at.ArrayAttr(elements=maps)})
        b.store(r, b.access_tile(vc, [ssa(t) * m, 0], box(m, m), [m, m]))
        b.func_return()
    return b.module


@FAST
@given(st.sampled_from(sorted(TYPES)), st.sampled_from([2, 7, 32]), st.sampled_from([3, 64, 300]), st.booleans(),
       st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_a_box_contracted_with_its_own_transpose_gives_the_per_tile_bits(dtype: str, m: int, k: int, twice: bool,
                                                                        generic: bool, shared: bool, seed: int) -> None:
    et, npt = TYPES[dtype]
    rng = np.random.default_rng(seed)
    # ordinary values: sums that round (syrk and gemm round differently on these sizes)
    A = rng.standard_normal((TILES * m, k)).astype(npt)
    got = _compare(_kernel(et, m, k, twice, generic, shared), {"a": A, "c": np.zeros((TILES * m, m), np.float32)})
    assert isinstance(got, ri.RunResult)
    assert got.lockstep
    a = A.astype(np.float64).reshape(TILES, m, k)
    if shared:
        a = np.broadcast_to(a[0], a.shape)
    want = np.concatenate([blk @ blk.T for blk in a])
    np.testing.assert_allclose(got.outputs["c"], want, rtol=1e-4, atol=1e-3 * k)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("twice", [False, True])
def test_each_form_runs_in_lockstep_and_matches(twice: bool, generic: bool, shared: bool) -> None:
    """Every form (lane by lane and uniform; named and generic; one value or two loads) at a size
    where syrk and gemm round differently on this data, f16."""
    A = np.random.default_rng(1).standard_normal((TILES * 32, 64)).astype(np.float16)
    got = _compare(_kernel(ty.F16, 32, 64, twice, generic, shared), {"a": A, "c": np.zeros((TILES * 32, 32), np.float32)})
    assert isinstance(got, ri.RunResult) and got.lockstep
