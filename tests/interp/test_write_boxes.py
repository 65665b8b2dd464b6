"""Box writes kept as boxes (races.py: alloc.w_boxes) instead of a per-granule write map.

`boxes_meet` is compared with the sets of cells of random boxes (exact whenever it answers);
the tracker with box writes is compared with the same tracker made to use the per-granule map
from the first write (MAX_WRITE_BOXES = 0, the check as it was): on random schedules of
multi-dimensional box accesses, posts and joins, both raise at the same access with the same
report (kind, other tile, other op, cell), or both never raise.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reference_interp import races
from reference_interp.memory import Allocation, BoxDesc, KeptBoxes
from reference_interp.races import RaceFound, RaceTracker, UninitFound, boxes_meet

from .race_schedules import schedules

NBYTES = 512


def _cells(b: BoxDesc) -> set[int]:
    return {b.b0 + sum(i * s for i, s in zip(idx, b.bstrides, strict=True)) + j
            for idx in itertools.product(*(range(e) for e in b.ext)) for j in range(b.itemsize)}


@st.composite
def boxes(draw: st.DrawFn, top: int = 200) -> BoxDesc:
    rank = draw(st.integers(1, 3))
    ext = tuple(draw(st.integers(0, 4)) for _ in range(rank))
    strides = tuple(draw(st.integers(1, 40)) for _ in range(rank))
    return BoxDesc(draw(st.integers(0, top)), ext, strides, draw(st.sampled_from([1, 2, 4])))


@settings(max_examples=400, deadline=None)
@given(boxes(), boxes())
def test_boxes_meet_is_exact_when_it_answers(a: BoxDesc, b: BoxDesc) -> None:
    got = boxes_meet(a, b)
    assert got is None or got == bool(_cells(a) & _cells(b))
    assert boxes_meet(b, a) in (None, got)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(0, 600), st.sampled_from([1, 4]))
def test_boxes_of_one_shape_always_get_an_answer(e0: int, e1: int, e2: int, shift: int, isz: int) -> None:
    """Blocks of one array at different offsets (strides of a row-major layout): decided."""
    ext, strides = (e0, e1, e2), (64 * isz, 8 * isz, isz)
    a, b = BoxDesc(0, ext, strides, isz), BoxDesc(shift * isz, ext, strides, isz)
    assert boxes_meet(a, b) == bool(_cells(a) & _cells(b))


@st.composite
def accesses(draw: st.DrawFn) -> BoxDesc:
    """A box of 4-byte elements (sometimes 2-byte ones: the allocation turns to byte granules)."""
    isz = draw(st.sampled_from([4, 4, 4, 2]))
    rank = draw(st.integers(1, 3))
    ext = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    strides = tuple(isz * draw(st.sampled_from([1, 2, 3, 4, 8, 16])) for _ in range(rank))
    reach = sum((e - 1) * s for e, s in zip(ext, strides, strict=True)) + isz
    assume(reach <= NBYTES)  # inside the allocation, as every access the interpreter records
    start = draw(st.integers(0, (NBYTES - reach) // isz)) * isz
    return BoxDesc(start, ext, strides, isz)


def _replay(n: int, steps: list[tuple], boxes_kept: int, near: int | None = None) -> list[tuple | None]:  # type: ignore[type-arg]
    """The outcome of each step (None, or the race reported), with `boxes_kept` as MAX_WRITE_BOXES
    (and `near` as _NEAR_LIMIT)."""
    saved, saved_near = races.MAX_WRITE_BOXES, races._NEAR_LIMIT
    races.MAX_WRITE_BOXES = boxes_kept
    races._NEAR_LIMIT = saved_near if near is None else near
    try:
        tracker = RaceTracker(n)
        alloc = Allocation("A", "global", 0, np.zeros(NBYTES, np.uint8), NBYTES)
        alloc.dtype, alloc.shape = np.dtype(np.float32), (NBYTES // 4,)
        snaps: list[list[int]] = []
        out: list[tuple | None] = []  # type: ignore[type-arg]
        for step in steps:
            if step[0] == "post":
                snaps.append(tracker.snapshot_and_advance(step[1]))
            elif step[0] == "join":
                tracker.join(step[1], [snaps[p] for p in step[2]])
            else:
                what, t, desc = step
                try:
                    (tracker.write if what == "write" else tracker.read)(alloc, desc, t, f"{what}{len(out)}")
                except RaceFound as e:
                    out.append((e.kind, e.other_tile, e.other_op, e.flat))
                    return out
                except UninitFound as e:  # not expected: global arrays are initialised
                    out.append(("uninit", e.flat))
                    return out
                out.append(None)
        return out
    finally:
        races.MAX_WRITE_BOXES, races._NEAR_LIMIT = saved, saved_near


@settings(max_examples=300, deadline=None)
@given(schedules(accesses(), max_steps=40, mix=("read", "write", "write", "write", "post", "join")))
def test_box_writes_report_exactly_what_the_write_map_reports(schedule: tuple[int, list[tuple]]) -> None:  # type: ignore[type-arg]
    n, steps = schedule
    assert _replay(n, steps, races.MAX_WRITE_BOXES) == _replay(n, steps, 0)


def test_interleaved_blocks_of_unsynchronised_tiles_stay_boxes() -> None:
    """Four tiles writing interleaved row blocks (rope's and the embedding's stores in lockstep:
    one box per tile over all iterations) keep boxes; a fifth box over a block of tile 0 written
    by tile 1 is the write-write race, found once the boxes become the map."""
    tracker = RaceTracker(4)
    alloc = Allocation("Y", "global", 0, np.zeros(4096 * 4, np.uint8), 4096 * 4)
    alloc.dtype, alloc.shape = np.dtype(np.float32), (4096,)
    for t in range(4):  # rows of 16 floats; tile t: rows 2t, 2t + 8, ... (8 iterations of 2 rows)
        tracker.write(alloc, BoxDesc(t * 128, (8, 2, 16), (512, 64, 4), 4), t, "store")
    assert alloc.w_seg is None and len(alloc.w_boxes) == 4
    try:
        tracker.write(alloc, BoxDesc(512 + 64, (1, 16), (64, 4), 4), 1, "store")
    except RaceFound as e:
        assert (e.kind, e.other_tile, e.flat) == ("write-write", 0, 0)
    else:
        raise AssertionError("the overlapping write was not found")


@st.composite
def with_continued_blocks(draw: st.DrawFn) -> tuple[int, list[tuple]]:  # type: ignore[type-arg]
    """A random schedule in which some writes are followed by the same tile's writes of the
    next blocks along the first dimension (as a tile storing consecutive row blocks does):
    the boxes the tracker extends instead of keeping one per write."""
    n, steps = draw(schedules(accesses(), max_steps=30, mix=("read", "write", "write", "post", "join")))
    out: list[tuple] = []  # type: ignore[type-arg]
    for step in steps:
        out.append(step)
        if step[0] != "write":
            continue
        _, t, b = step
        for _ in range(draw(st.integers(0, 3))):
            nxt = BoxDesc(b.b0 + b.ext[0] * b.bstrides[0], b.ext, b.bstrides, b.itemsize)
            if nxt.hi >= NBYTES:
                break
            out.append(("write", t, nxt))
            b = nxt
    return n, out


@settings(max_examples=300, deadline=None)
@given(with_continued_blocks())
def test_extended_boxes_report_exactly_what_the_write_map_reports(schedule: tuple[int, list[tuple]]) -> None:  # type: ignore[type-arg]
    n, steps = schedule
    want = _replay(n, steps, 0)
    assert _replay(n, steps, races.MAX_WRITE_BOXES) == want
    # the boxes becoming the map part way, and an access giving up on the boxes near it
    assert _replay(n, steps, 3) == want
    assert _replay(n, steps, races.MAX_WRITE_BOXES, near=1) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(-1, 60)), max_size=40), st.integers(0, 400),
       st.integers(0, 80), st.integers(1, 50))
def test_kept_boxes_find_exactly_the_spans_that_meet(spans: list[tuple[int, int]], lo: int, width: int, limit: int) -> None:
    """KeptBoxes.near against a pass over every box: the same boxes whose byte spans meet
    [lo, hi], or None only when more than `limit` start near it."""
    kept = KeptBoxes()
    for k, (b0, w) in enumerate(spans):
        kept.append(BoxDesc(b0, (w + 1,), (1,), 1), k + 1)  # w = -1: an empty box
    hi = lo + width
    want = sorted(v for box, v in kept if box.hi >= lo and box.lo <= hi)
    got = kept.near(lo, hi, limit)
    if got is None:
        assert len(kept) > limit
    else:
        assert sorted(v for _, v in got) == want
    assert sorted(v for _, v in kept.near(lo, hi, len(spans)) or []) == want


def test_consecutive_blocks_of_a_tile_keep_one_box() -> None:
    """Eight tiles each storing 4 consecutive row blocks (a band of rows per tile) keep one box
    per tile; a block of tile 3 stored again by tile 4 is the race."""
    tracker = RaceTracker(8)
    rows, width = 8 * 4 * 2, 16
    alloc = Allocation("Y", "global", 0, np.zeros(rows * width * 4, np.uint8), rows * width * 4)
    alloc.dtype, alloc.shape = np.dtype(np.float32), (rows, width)
    for t in range(8):
        for i in range(4):  # rows [8t + 2i, 8t + 2i + 2)
            tracker.write(alloc, BoxDesc(((8 * t + 2 * i) * width) * 4, (2, width), (width * 4, 4), 4), t, "store")
    assert alloc.w_seg is None and len(alloc.w_boxes) == 8
    assert [b.ext for b, _ in alloc.w_boxes] == [(8, width)] * 8
    try:
        tracker.write(alloc, BoxDesc((8 * 3 + 5) * width * 4, (1, width), (width * 4, 4), 4), 4, "store")
    except RaceFound as e:
        assert (e.kind, e.other_tile) == ("write-write", 3)
    else:
        raise AssertionError("the overlapping write was not found")
