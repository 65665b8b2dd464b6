"""Lockstep contractions (lockstep_linalg.matmul): each lane runs the per-tile contraction, with
narrow-float operands widened once for all lanes. Against the per-tile run (the same bytes,
statistics and returns: test_lockstep._compare) and a numpy oracle, for operands that differ
between tiles or not, in f16, bf16, f8 and f32, plain and transposed (indexing_maps)
contractions. The values are small integers, so every sum is exact whatever the order BLAS
adds in (no dependence on BLAS's bits).
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


def _kernel(et: ty.Type, m: int, k: int, n: int, transposed: bool, shared_a: bool):  # type: ignore[no-untyped-def]
    """Tile t: C_t = A_t @ B (or A_t @ B^T given as n x k), A_t = rows t*m.. of A (the same rows
    for every tile with `shared_a`), C_t stored at rows t*m.. of C (f32)."""
    f32 = ty.F32
    bshape = (n, k) if transposed else (k, n)
    acc = ty.TensorType(shape=(m, n), element_type=f32)
    b = Builder()
    with b.func("k", [("a", ty.INDEX), ("b", ty.INDEX), ("c", ty.INDEX)], grid=[TILES]) as (ap, bp, cp):
        (t,) = b.tile_id(1)
        va = b.memory_view(ap, [TILES * m, k], [k, 1], et, coordinate_set=box(TILES * m, k))
        vb = b.memory_view(bp, list(bshape), [bshape[1], 1], et, coordinate_set=box(*bshape))
        vc = b.memory_view(cp, [TILES * m, n], [n, 1], f32, coordinate_set=box(TILES * m, n))
        row = 0 if shared_a else ssa(t) * m
        x = b.load(b.access_tile(va, [row, 0], box(m, k), [m, k]), et)
        y = b.load(b.access_tile(vb, [0, 0], box(*bshape), list(bshape)), et)
        z = b.fill(b.constant(0.0, f32), b.empty(acc))
        if transposed:
            d0, d1, d2 = af.dim(0), af.dim(1), af.dim(2)
            maps = tuple(at.AffineMapAttr(value=af.AffineMap(num_dims=3, num_symbols=0, results=r))
                         for r in ((d0, d2), (d1, d2), (d0, d1)))
            p = b.dps(Linalg.matmul, [x, y], [z], attributes={"indexing_maps": at.ArrayAttr(elements=maps)})
        else:
            p = b.dps(Linalg.matmul, [x, y], [z])
        b.store(p, b.access_tile(vc, [ssa(t) * m, 0], box(m, n), [m, n]))
        b.func_return()
    return b.module


@given(st.sampled_from(sorted(TYPES)), st.sampled_from([1, 2, 5, 40]), st.sampled_from([1, 8, 64]), st.integers(1, 5),
       st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
@FAST
def test_lockstep_contractions_match_the_per_tile_run(dtype: str, m: int, k: int, n: int, transposed: bool,
                                                      shared_a: bool, seed: int) -> None:
    et, npt = TYPES[dtype]
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, (TILES * m, k)).astype(npt)
    B = rng.integers(-3, 4, (n, k) if transposed else (k, n)).astype(npt)
    got = _compare(_kernel(et, m, k, n, transposed, shared_a), {"a": A, "b": B, "c": np.zeros((TILES * m, n), np.float32)})
    assert isinstance(got, ri.RunResult) and got.lockstep
    a = A.astype(np.float64)
    if shared_a:
        a = np.tile(a[:m], (TILES, 1))
    want = a @ (B.astype(np.float64).T if transposed else B.astype(np.float64))
    np.testing.assert_array_equal(got.outputs["c"], want.astype(np.float32))


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_the_lane_contraction_is_the_one_that_runs(dtype: str) -> None:
    """The kernel runs in lockstep through lockstep_linalg.matmul's lanes (not per_lane)."""
    from reference_interp import lockstep_linalg

    et, npt = TYPES[dtype]
    calls = []
    real = lockstep_linalg.L.contractor

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        contract = real(*a, **kw)

        def lane(*b, **kw):  # type: ignore[no-untyped-def]
            calls.append(b[0].dtype)
            return contract(*b, **kw)

        return lane

    lockstep_linalg.L.contractor = spy
    try:
        A = np.ones((TILES * 2, 64), npt)
        r = ri.run(_kernel(et, 2, 64, 3, False, False), args={"a": A, "b": np.ones((64, 3), npt), "c": np.zeros((8, 3), np.float32)},
                   lockstep="always")
    finally:
        lockstep_linalg.L.contractor = real
    assert r.lockstep and len(calls) == TILES
    assert all(d == np.float32 for d in calls)  # widened before the lanes
    np.testing.assert_array_equal(r.outputs["c"], np.full((8, 3), 64, np.float32))
