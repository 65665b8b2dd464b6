"""Contractions multiply C-contiguous operands (ops/linalg._c_order): BLAS rounds a product
differently with the operand's layout (a matrix-vector product of rows `lda` apart, a
transposed operand), and a lockstep lane array lays a tile's operand out otherwise than the
per-tile run (an elementwise result of a column block keeps the tiles interleaved).

Found after the reduction-order case (test_reduce_order.py): tile t multiplies x_t * x_t, x_t
columns [t K, t K + K) of X, by a K x 1 matrix; in lockstep 9 of 21 such runs differed in the
last bit from the per-tile run.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.dialects.names import Linalg
from ktir.ir import types as ty
from reference_interp.ops.linalg import _NAMED_SPECS, contractor

from .helpers import FAST
from .test_lockstep import _compare

SIZES = st.sampled_from([1, 2, 3, 8, 17, 33, 64])


def _column_blocks(M: int, K: int, N: int, T: int):  # type: ignore[no-untyped-def]
    """Tile t: Y_t = (X_t * X_t) @ W, X_t = X[:, t K : t K + K] (M x K), W K x N, Y_t rows t M.."""
    f32 = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("w", ty.INDEX), ("y", ty.INDEX)], grid=[T]) as (xp, wp, yp):
        (t,) = b.tile_id(1)
        xv = b.memory_view(xp, [M, T * K], [T * K, 1], f32, coordinate_set=box(M, T * K))
        wv = b.memory_view(wp, [K, N], [N, 1], f32, coordinate_set=box(K, N))
        yv = b.memory_view(yp, [T * M, N], [N, 1], f32, coordinate_set=box(T * M, N))
        x = b.load(b.access_tile(xv, [0, ssa(t) * K], box(M, K), [M, K]), f32)
        w = b.load(b.access_tile(wv, [0, 0], box(K, N), [K, N]), f32)
        z = b.fill(b.constant(0.0, f32), b.empty(ty.TensorType(shape=(M, N), element_type=f32)))
        p = b.dps(Linalg.matmul, [b.arith.mulf(x, x), w], [z])
        b.store(p, b.access_tile(yv, [ssa(t) * M, 0], box(M, N), [M, N]))
        b.func_return()
    return b.module


@given(SIZES, SIZES, SIZES, st.sampled_from([2, 3, 4]), st.integers(0, 2**32 - 1))
@FAST
def test_products_of_interleaved_lanes_match_the_per_tile_run(M: int, K: int, N: int, T: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((M, T * K)).astype(np.float32)
    W = rng.standard_normal((K, N)).astype(np.float32)
    got = _compare(_column_blocks(M, K, N, T), {"x": X, "w": W, "y": np.zeros((T * M, N), np.float32)})
    assert isinstance(got, ri.RunResult) and got.lockstep
    want = np.concatenate([(X[:, t * K:(t + 1) * K].astype(np.float64) ** 2) @ W for t in range(T)])
    np.testing.assert_allclose(got.outputs["y"], want, rtol=1e-4, atol=1e-4 * K)


def test_the_matrix_vector_case_that_differed() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 12)).astype(np.float32)
    got = _compare(_column_blocks(8, 3, 1, 4), {"x": X, "w": rng.standard_normal((3, 1)).astype(np.float32),
                                                 "y": np.zeros((32, 1), np.float32)})
    assert isinstance(got, ri.RunResult) and got.lockstep


@given(SIZES, SIZES, SIZES, st.sampled_from(["c", "f", "rows apart", "cols apart"]), st.sampled_from(["f32", "f16"]),
       st.integers(0, 2**32 - 1))
@FAST
def test_a_contraction_does_not_depend_on_its_operands_layout(M: int, K: int, N: int, layout: str, dtype: str,
                                                              seed: int) -> None:
    rng = np.random.default_rng(seed)
    dt = np.dtype(np.float32 if dtype == "f32" else np.float16)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    acc = rng.standard_normal((M, N)).astype(np.float32)

    def laid(x: np.ndarray) -> np.ndarray:
        """The same values: column-major, rows further apart than their length, or every other
        element of a buffer twice as wide."""
        rows, cols = x.shape
        if layout == "f":
            return np.asfortranarray(x)
        buffer = np.zeros((rows, cols * 2 + 3), x.dtype)
        if layout == "rows apart":
            buffer[:, :cols] = x
            return buffer[:, :cols]
        if layout == "cols apart":
            buffer[:, : 2 * cols : 2] = x
            return buffer[:, : 2 * cols : 2]
        return x

    contract = contractor(_NAMED_SPECS[Linalg.matmul], np.dtype(np.float32))
    want = contract(a, b, acc, None)
    got = contract(laid(a), laid(b), acc, None)
    assert got.tobytes() == want.tobytes(), (M, K, N, layout, dtype)
