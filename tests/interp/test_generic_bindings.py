"""linalg.generic (parallel) binds only the block arguments its body reads (ops/linalg.py
_generic_parallel): a body reading its output argument gets the output's values, one that
does not read it runs without it, strict or not, per tile and in lockstep."""

from __future__ import annotations

import numpy as np
import pytest

import reference_interp as ri
from ktir.builder import Builder, box
from ktir.dialects.names import Linalg
from ktir.ir import affine as af
from ktir.ir import types as ty


def _kernel(reads_out: bool, empty_out: bool):  # type: ignore[no-untyped-def]
    f32 = ty.F32
    mat = ty.TensorType(shape=(8, 16), element_type=f32)
    d0, d1 = af.dim(0), af.dim(1)
    id2 = af.AffineMap(num_dims=2, num_symbols=0, results=(d0, d1))
    row = af.AffineMap(num_dims=2, num_symbols=0, results=(d0,))
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("s", ty.INDEX), ("o", ty.INDEX), ("y", ty.INDEX)], grid=[1]) as (xp, sp, op_, yp):
        vx = b.memory_view(xp, [8, 16], [16, 1], f32, coordinate_set=box(8, 16))
        vs = b.memory_view(sp, [8], [1], f32, coordinate_set=box(8))
        vo = b.memory_view(op_, [8, 16], [16, 1], f32, coordinate_set=box(8, 16))
        vy = b.memory_view(yp, [8, 16], [16, 1], f32, coordinate_set=box(8, 16))
        x = b.load(b.access_tile(vx, [0, 0], box(8, 16), [8, 16]), f32)
        s = b.load(b.access_tile(vs, [0], box(8), [8]), f32)
        out = b.empty(mat) if empty_out else b.load(b.access_tile(vo, [0, 0], box(8, 16), [8, 16]), f32)
        with b.generic([x, s], [out], [id2, row, id2], ["parallel", "parallel"]) as (p, q, o):
            v = b.arith.mulf(p, q)
            b.yield_(b.arith.addf(v, o) if reads_out else v, op=Linalg.yield_)
        b.store(b.last_results[0], b.access_tile(vy, [0, 0], box(8, 16), [8, 16]))
        b.func_return()
    return b.module


@pytest.mark.parametrize("lockstep", [False, "always"])
@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize(("reads_out", "empty_out"), [(True, False), (False, False), (False, True)])
def test_a_body_sees_exactly_the_arguments_it_reads(reads_out: bool, empty_out: bool, strict: bool, lockstep: bool | str) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 6, (8, 16)).astype(np.float32)
    s = rng.integers(-5, 6, 8).astype(np.float32)
    o = rng.integers(-5, 6, (8, 16)).astype(np.float32)
    r = ri.run(_kernel(reads_out, empty_out), args={"x": x, "s": s, "o": o, "y": np.zeros((8, 16), np.float32)},
               strict=strict, lockstep=lockstep)
    want = x * s[:, None] + (o if reads_out else 0)
    np.testing.assert_array_equal(r.outputs["y"], want)


def test_a_body_reading_an_empty_output_is_an_undefined_read_in_strict_mode() -> None:
    """The output argument is still bound when read: strict mode still reports tensor.empty's
    unspecified contents."""
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(_kernel(True, True), args={"x": np.ones((8, 16), np.float32), "s": np.ones(8, np.float32),
                                          "o": np.ones((8, 16), np.float32), "y": np.zeros((8, 16), np.float32)},
               strict=True, lockstep=False)
    assert info.value.kind == "undefined"
