"""`max_value_bytes` is an option of each run: a module run once without a limit and then
with a lower one must report the same `runtime.memory-limit` errors as a fresh module does.
tensor.empty's zeros and linalg.generic's plan are kept between runs (per shape); their size
checks must not be kept with them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.builder import Builder, box
from ktir.dialects.names import Linalg
from ktir.ir import affine as af
from ktir.ir import types as ty
from ktir.syntax.printer import print_module


def _text(generic: bool) -> str:
    """Grid [2]. `generic`: y = x * 2 through a linalg.generic over 8 x 16 (an iteration space
    of 128 points, 1,024 bytes by the check's measure), its output a tensor.empty (512 bytes);
    else y = a 64 x 64 tensor.empty (16 KiB) filled with 1."""
    f32 = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[2]) as (xp, yp):
        (t,) = b.tile_id(1)
        if generic:
            mat = ty.TensorType(shape=(8, 16), element_type=f32)
            id2 = af.AffineMap(num_dims=2, num_symbols=0, results=(af.dim(0), af.dim(1)))
            vx = b.memory_view(xp, [8, 16], [16, 1], f32, coordinate_set=box(8, 16))
            vy = b.memory_view(yp, [16, 16], [16, 1], f32, coordinate_set=box(16, 16))
            x = b.load(b.access_tile(vx, [0, 0], box(8, 16), [8, 16]), f32)
            with b.generic([x], [b.empty(mat)], [id2, id2], ["parallel", "parallel"]) as (p, _o):
                b.yield_(b.arith.addf(p, p), op=Linalg.yield_)
            b.store(b.last_results[0], b.access_tile(vy, [b.arith.muli(t, b.index(8)), 0], box(8, 16), [8, 16]))
        else:
            big = ty.TensorType(shape=(64, 64), element_type=f32)
            vy = b.memory_view(yp, [128, 64], [64, 1], f32, coordinate_set=box(128, 64))
            filled = b.fill(b.constant(1.0, f32), b.empty(big))
            b.store(filled, b.access_tile(vy, [b.arith.muli(t, b.index(64)), 0], box(64, 64), [64, 64]))
        b.func_return()
    return print_module(b.module)


def _args(generic: bool) -> dict[str, Any]:
    if generic:
        return {"x": np.arange(128, dtype=np.float32).reshape(8, 16), "y": np.zeros((16, 16), np.float32)}
    return {"x": np.zeros(1, np.float32), "y": np.zeros((128, 64), np.float32)}


def _outcome(m: ktir.Module, generic: bool, lockstep: bool | str, limit: int | None) -> tuple[str, str]:
    try:
        r = ri.run(m, args=_args(generic), lockstep=lockstep, max_value_bytes=limit)
    except ri.KtirRuntimeError as e:
        return e.kind, str(e)
    return "ok", r.outputs["y"].tobytes().hex()


@pytest.mark.parametrize("lockstep", [False, True, "always"])
@pytest.mark.parametrize(("generic", "limit", "what"), [(True, 600, "linalg.generic"), (False, 8192, "64x64")])
def test_a_lower_limit_in_a_later_run_is_checked(generic: bool, limit: int, what: str, lockstep: bool | str) -> None:
    text = _text(generic)
    kept = ktir.parse(text, "limits.ktir")
    first = _outcome(kept, generic, lockstep, None)
    assert first[0] == "ok"
    later = _outcome(kept, generic, lockstep, limit)
    fresh = _outcome(ktir.parse(text, "limits.ktir"), generic, lockstep, limit)
    assert later == fresh
    assert later[0] == "memory-limit" and what in later[1], later
    # and the limit lifted again: the kept state still runs
    assert _outcome(kept, generic, lockstep, None) == first
