"""Strided transfers are charged the granules their contiguous runs touch.

The memory moves whole granules per contiguous run, so a column block of a row-major matrix
(many short runs) costs more than a row block of the same bytes. `granules` counts the
granules a box touches exactly; hypothesis compares it with a brute-force count of distinct
granule indices over every byte the box touches, on boxes built as the adapter builds them
(from the interpreter's access span).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_interp as ri
from ktir.builder import Builder, box
from ktir.dialects.names import Ktdp
from ktir.ir import types as ty
from ktir.targets import load_target
from ktir.targets.from_interp import _global_box, from_interp
from ktir.targets.machine import Machine, granules
from ktir.targets.records import GLOBAL, KernelTrace, Kind, OpRecord
from ktir.targets.report import estimate
from ktir.targets.timeline import simulate
from reference_interp.trace import access_span


@st.composite
def accesses(draw: Any) -> tuple[Any, int]:
    """An access tile over a global view with padded, permuted (transposed) or negative strides, any box."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 9)) for _ in range(rank)]
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    order = draw(st.permutations(range(rank)))
    strides = [0] * rank
    step = itemsize
    for d in reversed(order):  # the last dimension of `order` is the innermost in memory
        strides[d] = step
        step *= shape[d] + draw(st.integers(0, 3))  # padding between rows
    signs = [draw(st.sampled_from([1, 1, -1])) for _ in range(rank)]
    strides = [s * sign for s, sign in zip(strides, signs, strict=True)]
    lo = [draw(st.integers(0, n - 1)) for n in shape]
    ext = [draw(st.integers(1, n - a)) for a, n in zip(lo, shape, strict=True)]
    # the view's origin: far enough from 0 that negative strides stay in memory, any alignment
    boff = sum(abs(s) * n for s, n in zip(strides, shape, strict=True)) + draw(st.integers(0, 300))
    alloc = SimpleNamespace(base=1 << 20, owner=None)
    view = SimpleNamespace(alloc=alloc, boff=boff, bstrides=tuple(strides), space="global", itemsize=itemsize)
    tile = SimpleNamespace(view=view, lo=tuple(lo), ext=tuple(ext), coords=None)
    return tile, draw(st.sampled_from([1, 3, 16, 64, 128]))


def brute_force(tile: Any, g: int) -> int:
    """Distinct granule indices over every byte the tile touches."""
    v = tile.view
    addr = np.array([v.alloc.base + v.boff], dtype=np.int64)
    for a, n, s in zip(tile.lo, tile.ext, v.bstrides, strict=True):
        addr = (addr[:, None] + s * np.arange(a, a + n, dtype=np.int64)).ravel()
    touched = (addr[:, None] + np.arange(v.itemsize, dtype=np.int64)).ravel()
    return len(np.unique(touched // g))


@settings(max_examples=400, deadline=None)
@given(accesses())
def test_granule_count_matches_brute_force(access: tuple[Any, int]) -> None:
    tile, g = access
    span = access_span(tile)
    nbytes = math.prod(tile.ext) * tile.view.itemsize
    ev = SimpleNamespace(span=span)
    found = _global_box(ev, SimpleNamespace(name=Ktdp.load), {GLOBAL: nbytes}, {})
    assert found is not None
    assert found[1] == tile.view.itemsize
    assert granules(found, g) == brute_force(tile, g)


def test_runs_that_straddle_or_share_granules() -> None:
    # 8-byte runs every 64 bytes starting 4 bytes before a 16-byte boundary: each touches 2 granules of 16
    assert granules((12, 4, ((4, 2), (64, 10))), 16) == 20
    # 8-byte runs every 8 bytes are one 80-byte run: 5 granules of 16 (not 10 x 1)
    assert granules((0, 4, ((4, 2), (8, 10))), 16) == 5
    # 4-byte runs every 8 bytes share granules of 128: one granule
    assert granules((0, 4, ((8, 10),)), 128) == 1
    assert granules((0, 4, ((8, 0),)), 128) == 0


def _block_kernel(rows: int, cols: int, n: int = 256) -> Any:
    """Load a rows x cols block of an n x n f32 row-major matrix X and store it to Y (rows x cols)."""
    b = Builder()
    with b.func("block", [("X", ty.INDEX), ("Y", ty.INDEX)], grid=[1]) as (x_arg, y_arg):
        x = b.memory_view(x_arg, [n, n], [n, 1], ty.F32, coordinate_set=box(n, n))
        y = b.memory_view(y_arg, [rows, cols], [cols, 1], ty.F32, coordinate_set=box(rows, cols))
        tx = b.access_tile(x, [0, 0], box(rows, cols), [rows, cols])
        ty_ = b.access_tile(y, [0, 0], box(rows, cols), [rows, cols])
        b.store(b.load(tx, ty.F32), ty_)
        b.func_return()
    x = np.arange(n * n, dtype=np.float32).reshape(n, n)
    result = ri.run(b.module, None, {"X": x, "Y": np.zeros((rows, cols), np.float32)}, trace=True)
    np.testing.assert_array_equal(result.outputs["Y"], x[:rows, :cols])
    return from_interp(b.module, result).trace


def test_a_strided_block_costs_more_than_a_contiguous_one_of_the_same_bytes() -> None:
    target = load_target("spyre")
    m = Machine(target)
    assert m.global_granularity == 128
    rows_block = _block_kernel(8, 256)  # 8 whole rows: one 8 KiB run
    column_block = _block_kernel(256, 8)  # 256 runs of 32 bytes, one granule each
    load_rows, load_cols = (next(r for r in t.records if r.op == Ktdp.load) for t in (rows_block, column_block))
    assert load_rows.bytes_read == load_cols.bytes_read == {GLOBAL: 8192}
    assert m.global_moved(load_rows) == (8192, 0)
    assert m.global_moved(load_cols) == (256 * 128, 0)
    assert simulate(column_block, target).makespan > simulate(rows_block, target).makespan
    moved = {t.level: t.bytes_moved for t in estimate(column_block, target).report.memory}
    assert moved[m.global_name] == 256 * 128 + 8192  # the strided load, then the contiguous store


def test_records_without_a_box_keep_one_rounding_and_the_box_survives_json() -> None:
    m = Machine(load_target("spyre"))
    plain = OpRecord(0, 0, Ktdp.load, Kind.TRANSFER, bytes_read={GLOBAL: 200})
    assert m.global_moved(plain) == (256, 0)
    strided = OpRecord(0, 0, Ktdp.load, Kind.TRANSFER, bytes_read={GLOBAL: 200}, global_box=(0, 4, ((4, 1), (512, 50))))
    assert m.global_moved(strided) == (50 * 128, 0)
    trace = KernelTrace([strided])
    assert KernelTrace.from_dict(trace.to_dict()).records == [strided]
