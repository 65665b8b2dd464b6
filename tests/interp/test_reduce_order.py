"""Float reductions sum each result's own elements in one order, whatever the layout of the
operand (ops/linalg._c_order): a lockstep lane array, tiles interleaved in memory, reduces every
lane bit for bit as the per-tile run reduces that tile's array.

Found by comparing lockstep with the per-tile run on scheduled random kernels: a reduction
over the middle dimension of 64 x 7 x 48, split over 7 tiles, differed in the last bit in two
of the seven results (numpy's float sum follows the memory layout).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.dialects.names import Linalg
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from reference_interp.ops.linalg import _reduce

from .helpers import FAST
from .test_lockstep import _compare

DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
          "f64": np.dtype(np.float64)}


@st.composite
def laid_out(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...], int, str]:
    """(lanes in front as a view of an array laid out in a drawn order, reduced axes of one
    lane, the lane count, dtype name). Extents up to 300 cross numpy's pairwise blocks (8, 128)."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 7, 9, 130, 300]), min_size=rank, max_size=rank)))
    if np.prod(shape) > 40_000:
        shape = tuple(min(d, 9) for d in shape)
    lanes = draw(st.integers(1, 4))
    axes = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    perm = draw(st.permutations(range(rank + 1)))  # the memory order of (lane, *dims)
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    seed = draw(st.integers(0, 2**32 - 1))
    full = (lanes, *shape)
    data = np.random.default_rng(seed).standard_normal([full[p] for p in perm]).astype(DTYPES[dtype])
    inverse = np.argsort(perm)
    return data.transpose(inverse), axes, lanes, dtype


@given(laid_out(), st.sampled_from(["add", "mul"]))
@FAST
def test_each_lane_reduces_as_its_own_contiguous_array(case: tuple[np.ndarray, tuple[int, ...], int, str], kind: str) -> None:
    x, axes, lanes, dtype = case
    out_dt = np.dtype(np.float64) if dtype == "f64" else np.dtype(np.float32)
    together = _reduce(kind, x, tuple(a + 1 for a in axes), out_dt)
    for lane in range(lanes):
        alone = _reduce(kind, np.ascontiguousarray(x[lane]), axes, out_dt)
        assert np.asarray(together[lane]).tobytes() == np.asarray(alone).tobytes(), (lane, x.shape, axes)
        # and a Fortran-ordered copy of the lane: the layout never matters
        fortran = _reduce(kind, np.asfortranarray(x[lane]), axes, out_dt)
        assert np.asarray(fortran).tobytes() == np.asarray(alone).tobytes()


def test_a_reduction_split_over_tiles_runs_in_lockstep_as_per_tile() -> None:
    """Tile t sums X[:, t, :] (a 64 x 1 x 48 box of a 64 x 7 x 48 array) with a generic
    reducing d0 and d2: the lockstep lane array interleaves the tiles' boxes in memory."""
    f32 = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("r", ty.INDEX)], grid=[7]) as (xp, rp):
        (t,) = b.tile_id(1)
        xv = b.memory_view(xp, [64, 7, 48], [336, 48, 1], f32, coordinate_set=box(64, 7, 48))
        rv = b.memory_view(rp, [7], [1], f32, coordinate_set=box(7))
        x = b.load(b.access_tile(xv, [0, ssa(t), 0], box(64, 1, 48), [64, 1, 48]), f32)
        init = b.fill(b.constant(0.0, f32), b.empty(ty.TensorType(shape=(1,), element_type=f32)))
        d0, d1, d2 = af.dim(0), af.dim(1), af.dim(2)
        maps = [at.AffineMapAttr(value=af.AffineMap(num_dims=3, num_symbols=0, results=r)) for r in ((d0, d1, d2), (d1,))]
        with b.generic([x], [init], maps, ["reduction", "parallel", "reduction"], ["a", "acc"], "s") as (a, acc):
            b.yield_(b.arith.addf(acc, a), op=Linalg.yield_)
        (s,) = b.last_results
        b.store(s, b.access_tile(rv, [ssa(t)], box(1), [1]))
        b.func_return()
    X = np.random.default_rng(0).standard_normal((64, 7, 48)).astype(np.float32)
    got = _compare(b.module, {"x": X, "r": np.zeros(7, np.float32)})
    assert isinstance(got, ri.RunResult) and got.lockstep
    np.testing.assert_allclose(got.outputs["r"], X.astype(np.float64).sum(axis=(0, 2)), rtol=1e-5)
