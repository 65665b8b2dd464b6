"""The race tracker against a brute-force happens-before oracle.

Random schedules of reads, writes, posts (`inter_tile_produce`) and joins (delivery ops)
drive `RaceTracker` directly. The oracle keeps every access with the exact set of segments
known to happen before it (sets, not vector clocks) and compares each new access with all
earlier ones byte by byte; the tracker must report a race at exactly the first access where
the oracle finds one, naming one of the tiles it races with, and never before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_interp.memory import Allocation, BoxDesc, Desc, IdxDesc
from reference_interp.races import MAX_DESCS, RaceFound, RaceTracker

from .race_schedules import schedules

NBYTES = 64


@dataclass
class Oracle:
    n: int
    epoch: list[int] = field(default_factory=list)
    known: list[set[tuple[int, int]]] = field(default_factory=list)
    posts: list[set[tuple[int, int]]] = field(default_factory=list)
    accesses: list[tuple[int, tuple[int, int], frozenset[int], bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.epoch = [0] * self.n
        self.known = [set() for _ in range(self.n)]

    def post(self, t: int) -> None:
        self.known[t].add((t, self.epoch[t]))  # the segment it closes, after all its earlier ones
        self.posts.append(set(self.known[t]))
        self.epoch[t] += 1

    def join(self, t: int, which: list[int]) -> None:
        for p in which:
            self.known[t] |= self.posts[p]

    def access(self, t: int, cells: frozenset[int], write: bool) -> set[int]:
        """The tiles whose earlier accesses race with this one."""
        seg = (t, self.epoch[t])
        racing = {
            u for u, useg, ucells, uwrite in self.accesses
            if u != t and (write or uwrite) and ucells & cells and useg not in self.known[t]
        }
        self.accesses.append((t, seg, cells, write))
        return racing


def _desc(kind: str, start: int, count: int, stride: int, itemsize: int) -> tuple[Desc, frozenset[int]]:
    offs = [start + i * stride for i in range(count)]
    cells = frozenset(o + j for o in offs for j in range(itemsize))
    if kind == "box":
        return BoxDesc(start, (count,), (stride,), itemsize), cells
    return IdxDesc(np.array(offs[::-1], dtype=np.int64), itemsize), cells


@st.composite
def accesses(draw: st.DrawFn) -> tuple[str, int, int, int, int]:
    # mostly the array's element size; smaller ones (a view of another element type) make the
    # tracker switch the array to byte granularity. Offsets are multiples of the access's own
    # itemsize, as views and arrays are aligned (memory.py).
    itemsize = draw(st.sampled_from([1, 2, 4, 4, 4]))
    count = draw(st.integers(1, 4))
    stride = draw(st.sampled_from([itemsize, 2 * itemsize, 4 * itemsize]))
    top = NBYTES - (count - 1) * stride - itemsize
    start = draw(st.integers(0, top // itemsize)) * itemsize
    kind = draw(st.sampled_from(["box", "box", "idx"]))
    return kind, start, count, stride, itemsize


def _replay(n: int, steps: list[tuple]) -> None:  # type: ignore[type-arg]
    tracker = RaceTracker(n)
    oracle = Oracle(n)
    alloc = Allocation("A", "global", 0, np.zeros(NBYTES, np.uint8), NBYTES)
    alloc.dtype, alloc.shape = np.dtype(np.float32), (NBYTES // 4,)
    snaps: list[list[int]] = []
    for step in steps:
        if step[0] == "post":
            snaps.append(tracker.snapshot_and_advance(step[1]))
            oracle.post(step[1])
        elif step[0] == "join":
            tracker.join(step[1], [snaps[p] for p in step[2]])
            oracle.join(step[1], step[2])
        else:
            what, t, (kind, start, count, stride, itemsize) = step
            desc, cells = _desc(kind, start, count, stride, itemsize)
            racing = oracle.access(t, cells, what == "write")
            try:
                (tracker.write if what == "write" else tracker.read)(alloc, desc, t, what)
            except RaceFound as e:
                assert racing, f"false race at {step}"
                assert e.other_tile in racing
                return
            assert not racing, f"missed race at {step} with tiles {racing}"


@settings(max_examples=200, deadline=None)
@given(schedules(accesses(), max_steps=60, mix=("read", "write", "read", "write", "post", "join", "join")))
def test_tracker_reports_exactly_the_races_of_the_oracle(schedule: tuple[int, list[tuple]]) -> None:  # type: ignore[type-arg]
    _replay(*schedule)


def test_reads_every_tile_has_passed_are_dropped() -> None:
    """Four tiles with a barrier per iteration: the reads kept per allocation stay bounded by
    those since the last collection (every 8 synchronisations here), not the iterations."""
    tracker = RaceTracker(4)
    alloc = Allocation("A", "global", 0, np.zeros(4096, np.uint8), 4096)
    alloc.dtype, alloc.shape = np.dtype(np.float32), (1024,)
    most = 0
    for i in range(300):
        for t in range(4):
            slot = t * 1024 + (i % 64) * 16
            tracker.read(alloc, BoxDesc(slot, (4,), (4,), 4), t, "load")
            tracker.write(alloc, BoxDesc(slot, (4,), (4,), 4), t, "store")
        snaps = [tracker.snapshot_and_advance(t) for t in range(4)]
        for t in range(4):
            tracker.join(t, snaps)
        most = max(most, sum(len(r.descs) for r in alloc.readers.values()))
    assert most <= 4 * 3
    # a tile that never synchronised would keep them all: its reads still race
    tracker.read(alloc, BoxDesc(0, (4,), (4,), 4), 0, "load")
    try:
        tracker.write(alloc, BoxDesc(0, (4,), (4,), 4), 1, "store")
    except RaceFound as e:
        assert e.other_tile == 0 and e.kind == "read-write"
    else:
        raise AssertionError("the unordered read was forgotten")


def test_a_box_read_again_keeps_one_record_at_its_latest_epoch() -> None:
    """A loop re-reading one block (a weight row read once per row of a kernel) keeps a bounded
    number of read records per tile (repeats are dropped when the records reach MAX_DESCS), not
    one per iteration, and never turns them into a per-byte map; the record kept carries the
    latest epoch, so a write ordered after the first read but not the last still races."""
    tracker = RaceTracker(2)
    alloc = Allocation("A", "global", 0, np.zeros(256, np.uint8), 256)
    alloc.dtype, alloc.shape = np.dtype(np.float32), (64,)
    w, x = BoxDesc(0, (8,), (4,), 4), BoxDesc(128, (4,), (4,), 4)
    snaps = []
    for _ in range(5000):
        tracker.read(alloc, w, 0, "load")
        tracker.read(alloc, x, 0, "load")
        tracker.read(alloc, x, 0, "load")
        snaps.append(tracker.snapshot_and_advance(0))
    assert len(alloc.readers[0].descs) <= MAX_DESCS and alloc.readers[0].emap is None
    tracker.join(1, [snaps[-2]])  # tile 1 has seen every epoch of tile 0 but the last
    try:
        tracker.write(alloc, BoxDesc(4, (1,), (4,), 4), 1, "store")
    except RaceFound as e:
        assert e.other_tile == 0 and e.kind == "read-write"
    else:
        raise AssertionError("the read of tile 0's last epoch was forgotten")
