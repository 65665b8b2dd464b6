"""A load from an array the run has not written yet reads it in place (a read-only view, no
copy): the loaded value must still be the contents at the load after the run writes the
array, the caller's array must stay as given, and a returned value must not change when the
caller writes its array after the run. Per tile and in lockstep."""

from __future__ import annotations

import numpy as np
import pytest

import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.ir import types as ty

TILES, W = 4, 8


def _kernel():  # type: ignore[no-untyped-def]
    """Tile t loads row t of x, overwrites it with row t of y, and returns what it loaded."""
    f32 = ty.F32
    row = ty.TensorType(shape=(1, W), element_type=f32)
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], results=[row], grid=[TILES]) as (x, y):
        (t,) = b.tile_id()
        vx = b.memory_view(x, [TILES, W], [W, 1], f32, coordinate_set=box(TILES, W))
        vy = b.memory_view(y, [TILES, W], [W, 1], f32, coordinate_set=box(TILES, W))
        before = b.load(b.access_tile(vx, [ssa(t), 0], box(1, W), [1, W]), f32)
        other = b.load(b.access_tile(vy, [ssa(t), 0], box(1, W), [1, W]), f32)
        b.store(other, b.access_tile(vx, [ssa(t), 0], box(1, W), [1, W]))
        b.func_return(before)
    return b.module


@pytest.mark.parametrize("lockstep", [False, "always"])
def test_a_value_loaded_in_place_keeps_the_contents_at_the_load(lockstep: bool | str) -> None:
    X = np.arange(TILES * W, dtype=np.float32).reshape(TILES, W)
    Y = -X - 1
    given = X.copy()
    r = ri.run(_kernel(), args={"x": X, "y": Y}, lockstep=lockstep)
    assert r.lockstep == (lockstep == "always")
    np.testing.assert_array_equal(X, given)  # the caller's array is not written
    np.testing.assert_array_equal(r.outputs["x"], Y)  # the run's copy of it is
    for t in range(TILES):
        np.testing.assert_array_equal(r.returns[t][0], given[t : t + 1])  # loaded before the store
    X[...] = 7  # the caller writes its array after the run: the results stay
    for t in range(TILES):
        np.testing.assert_array_equal(r.returns[t][0], given[t : t + 1])
