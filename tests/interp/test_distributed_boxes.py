"""Loads and stores of boxes through distributed views: the whole-box path (pieces cut along
the partitions) against numpy, and its errors against the point-by-point path.

The partitions are row bands of one 16 x 16 array, drawn at random: they may tile the rows,
leave a gap or overlap, so the access box may be covered once, not at all or twice in places.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri
from ktir.builder import Builder, box
from ktir.ir import affine as af
from ktir.ir import types as ty
from reference_interp import access
from reference_interp.ops import ktdp

N = 16


def _band(lo: int, hi: int) -> af.IntegerSet:
    d0, d1 = af.dim(0), af.dim(1)
    cons = (d0 - lo, -d0 + (hi - 1), d1, -d1 + (N - 1))
    return af.IntegerSet(num_dims=2, num_symbols=0,
                         constraints=tuple(af.Constraint(expr=e, is_equality=False) for e in cons))


def _kernel(bands: list[tuple[int, int]], r0: int, c0: int, h: int, w: int):  # type: ignore[no-untyped-def]
    f32 = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX), ("w", ty.INDEX)], grid=[1]) as (x, y, wp):
        def distributed(base):  # type: ignore[no-untyped-def]
            parts = []
            for lo, hi in bands:
                off = b.create("arith.addi", [base, b.index(lo * N)], [ty.INDEX])[0]
                parts.append(b.memory_view(off, [hi - lo, N], [N, 1], f32, coordinate_set=_band(lo, hi)))
            return b.distributed_view(parts, [N, N])

        dx, dw = distributed(x), distributed(wp)
        plain = b.memory_view(y, [N, N], [N, 1], f32, coordinate_set=box(N, N))
        tile = b.access_tile(dx, [r0, c0], box(h, w), [h, w])
        z = b.load(tile, f32)
        b.store(z, b.access_tile(plain, [0, 0], box(h, w), [h, w]))
        b.store(z, b.access_tile(dw, [r0, c0], box(h, w), [h, w]))
        b.func_return()
    return b.module


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[tuple[int, int]], int, int, int, int]:
    cuts = sorted(draw(st.sets(st.integers(1, N - 1), max_size=3)))
    edges = [0, *cuts, N]
    bands = [(a, b) for a, b in zip(edges, edges[1:], strict=False)]
    how = draw(st.sampled_from(["tile", "tile", "gap", "overlap", "both"]))
    if how in ("overlap", "both") and len(bands) > 1:
        k = draw(st.integers(0, len(bands) - 2))
        bands[k] = (bands[k][0], bands[k + 1][0] + 1)
    if how in ("gap", "both") and len(bands) > 1:  # one row fewer: with an overlap too, the sizes can add up
        j = draw(st.integers(0, len(bands) - 1))
        lo, hi = bands[j]
        if hi - lo > 1:
            bands[j] = (lo, hi - 1) if j < len(bands) - 1 or how == "gap" else (lo + 1, hi)
    h, w = draw(st.integers(1, N)), draw(st.integers(1, N))
    r0, c0 = draw(st.integers(0, N - h)), draw(st.integers(0, N - w))
    return bands, r0, c0, h, w


def _run(module, X: np.ndarray):  # type: ignore[no-untyped-def]
    args = {"x": X, "y": np.zeros((N, N), np.float32), "w": np.zeros((N, N), np.float32)}
    try:
        return ri.run(module, args=args), None
    except ri.KtirRuntimeError as e:
        return None, (e.kind, e.message, e.coordinate)


@settings(max_examples=80, deadline=None)
@given(case=cases())
def test_box_path_agrees_with_numpy_and_with_the_point_path(case) -> None:  # type: ignore[no-untyped-def]
    bands, r0, c0, h, w = case
    X = np.arange(N * N, dtype=np.float32).reshape(N, N)
    module = _kernel(bands, r0, c0, h, w)
    got, err = _run(module, X)
    covered = np.zeros(N, int)
    for lo, hi in bands:
        covered[lo:hi] += 1
    if (covered[r0 : r0 + h] == 1).all():
        assert err is None, err
        np.testing.assert_array_equal(got.outputs["y"][:h, :w], X[r0 : r0 + h, c0 : c0 + w])
        want = np.zeros((N, N), np.float32)
        want[r0 : r0 + h, c0 : c0 + w] = X[r0 : r0 + h, c0 : c0 + w]
        np.testing.assert_array_equal(got.outputs["w"], want)
    else:
        assert err is not None and err[0] == "out-of-view"
    with pytest.MonkeyPatch.context() as mp:  # the point-by-point path: the same outputs, the same diagnostic
        mp.setattr(access, "box_parts", lambda *a: None)
        mp.setattr(ktdp, "box_parts", lambda *a: None)
        slow, slow_err = _run(module, X)
    assert slow_err == err
    if got is not None:
        assert slow is not None
        for name in ("y", "w"):
            np.testing.assert_array_equal(slow.outputs[name], got.outputs[name])
        assert [s.bytes_read for s in slow.stats] == [s.bytes_read for s in got.stats]
