"""Happens-before tracking: data races between tiles and reads of unwritten memory.

Each tile's execution is cut into *segments* at every `inter_tile_produce` it executes as
a producer. Segment k of tile u has *epoch* k; it gets a global segment id. Each tile t
carries a vector clock `vc[t]`: segment (u, e) happens before tile t's current point iff
`u == t` or `vc[t][u] > e`. A producer posts a snapshot of its clock with its own entry
advanced past the segment it just closed; a consumer joins the snapshots of the producers
it waits for (`inter_tile_consume`/`reduce`/...). That is the only source of order between
tiles, besides kernel end. A tile's clock is allocated when it first posts or joins, so a
grid of tiles that never communicate costs nothing per pair of tiles.

Per allocation, per *granule*: the element size of an argument array for as long as every
access to it is element-aligned (the usual case: it halves to eighths the bookkeeping of
byte granularity and gives the same answers, since no aligned access touches part of an
element), refined once to bytes at the first access that is not; scratchpads and
allocations are tracked per byte.

Writes. `w_seg[g]` is 1 + the segment that last wrote granule g (0: never written). The
last writer is the only one to check: any earlier writer is ordered before it (or the race
was reported then), hence before whatever the last writer is ordered before. `w_last[u]`
is the latest epoch at which tile u wrote the allocation; tile t must look at the write map
only when some `w_last[u] >= vc[t][u]` (u != t), a test over the writer *tiles* (cached
until a clock changes), never over the segments. The look itself is vectorised over the
accessed granules: segment -> (tile, epoch) by two table lookups, compared with t's clock.
Until the map is needed, writes of boxes are kept as boxes (`w_boxes`: up to MAX_WRITE_BOXES,
with 1 + their segment, in order; a box continuing the same segment's last one extends it):
an access then looks at the map only if a box written by a segment unordered with it may
meet it (`boxes_meet`, an exact test of two strided boxes that may answer "cannot tell"; only
the boxes whose byte spans meet the access's are looked at, found by bisection in
`memory.KeptBoxes`, and when more than _NEAR_LIMIT start near it the map is taken instead);
if none does, no granule it touches has an unordered last writer
(the last writer wrote one of those boxes) and no map is made. Otherwise, or at a write that
is not a box, the boxes become the map and the check is the one above, with the same report.
So the stores of lockstep, one box per tile over all iterations of a loop (rows interleaved
between tiles), cost a few integer steps each, not a pass over the stored elements.

Reads. Per allocation and reading tile u, the reads are kept as access descriptors tagged
with their epoch (cheap to record), and turned into a map "1 + latest epoch at which u
read this granule" only when a write of another tile needs them: that write races with u's
reads iff some granule it touches has latest read epoch >= vc[writer][u] (again the latest
is the only one to check). Descriptors of epochs every running tile has passed are dropped
(`collect`, every few synchronisations).

So every access costs a constant number of numpy calls plus O(tiles) Python, whatever the
number of segments: a loop with an inter-tile op per iteration pays the same per iteration
at the 10th and at the 10,000th, whether or not its tiles all synchronise with each other.
A race is reported with the two tiles, both ops and the coordinate.
"""

from __future__ import annotations

import bisect

import numpy as np

from .memo import MISSING, Memo
from .memory import Allocation, BoxDesc, Desc, IdxDesc, KeptBoxes, assign_cells

MAX_DESCS = 2048  # descriptors per (allocation, tile) before they become a map
_ONES = b"\x01" * 4096
_ZEROS = b"\x00" * 4096
_NEVER = 1 << 62  # a clock entry beyond every epoch: "ordered" (the tile itself, no writer)


def _all_true(cells: np.ndarray) -> bool:
    """cells (bool) are all True; a byte comparison is ten times faster than .all() on small arrays."""
    nb = cells.nbytes
    if nb <= 4096:
        return cells.tobytes() == _ONES[:nb]
    return bool(cells.all())


def _unwritten(prev: np.ndarray) -> bool:
    """prev (1 + writer segment) are all 0."""
    nb = prev.nbytes
    if nb <= 4096:
        return prev.tobytes() == _ZEROS[:nb]
    return not prev.any()


class RaceFound(Exception):
    """Raised by the tracker; the memory op turns it into a KtirRuntimeError with the coordinate."""

    def __init__(self, flat: int, other_tile: int, other_op: str, kind: str) -> None:
        super().__init__(kind)
        self.flat = flat  # position in the access's cell array (byte granularity)
        self.other_tile = other_tile
        self.other_op = other_op
        self.kind = kind  # "write-write", "read-write" (earlier read), "write-read" (earlier write)


class UninitFound(Exception):
    def __init__(self, flat: int) -> None:
        super().__init__("uninitialised")
        self.flat = flat


# (byte strides, granule) -> the strides in granules, or None when some stride is not a multiple
_GRANULE_STRIDES: dict[tuple[tuple[int, ...], int], tuple[int, ...] | None] = {}


def _granule_strides(bs: tuple[int, ...], g: int) -> tuple[int, ...] | None:
    key = (bs, g)
    if key in _GRANULE_STRIDES:  # this runs once per access: the strides repeat
        return _GRANULE_STRIDES[key]
    gbs = None if any(st % g for st in bs) else tuple(st // g for st in bs)
    if len(_GRANULE_STRIDES) > 4096:
        _GRANULE_STRIDES.clear()
    _GRANULE_STRIDES[key] = gbs
    return gbs


def scaled(desc: Desc, g: int) -> Desc | None:
    """`desc` in units of g-byte granules, or None when it is not granule-aligned."""
    if g == 1:
        return desc
    if type(desc) is BoxDesc:
        if desc.b0 % g or desc.itemsize % g:
            return None
        gbs = _granule_strides(desc.bstrides, g)
        if gbs is None:
            return None
        return BoxDesc(desc.b0 // g, desc.ext, gbs, desc.itemsize // g, (desc.hi + 1) // g - 1)
    assert isinstance(desc, IdxDesc)
    if desc.itemsize % g or (desc.offs.size and (desc.offs % g).any()):
        return None
    return IdxDesc(desc.offs // g, desc.itemsize // g)


def _scaled(desc: Desc, g: int) -> Desc:
    found = scaled(desc, g)
    assert found is not None, "descriptors recorded at granule g are g-aligned"
    return found


MAX_WRITE_BOXES = 1024  # box writes kept per allocation before they become the write map
# boxes starting near an access that it looks at before it takes the write map instead
_NEAR_LIMIT = 32
_MEET_BUDGET = 256  # search nodes boxes_meet spends before it answers "cannot tell"


# (a's extents, strides, itemsize, b's, b.b0 - a.b0) -> boxes_meet's answer: a loop's stores
# meet the same boxes at the same distances in every run
_MEETS: Memo[tuple[object, ...], bool | None] = Memo(4096)


def _keep_box(alloc: Allocation, gbox: Desc, v: int) -> None:
    """Keep a box write (1 + its segment `v`) in alloc.w_boxes. A box that continues the last
    one kept (the same segment, strides and extents but the first, starting where the last
    one's first dimension ends) extends it instead: their union is exactly the longer box, and
    nothing was kept between them, so a tile storing consecutive blocks keeps one box."""
    boxes = alloc.w_boxes
    if boxes and type(gbox) is BoxDesc and gbox.ext:
        last, lv = boxes.items[-1]
        if lv == v and last.bstrides == gbox.bstrides and last.itemsize == gbox.itemsize \
                and last.ext[1:] == gbox.ext[1:] and 0 not in last.ext and 0 not in gbox.ext \
                and gbox.b0 == last.b0 + last.ext[0] * last.bstrides[0]:
            boxes.replace_last(BoxDesc(last.b0, (last.ext[0] + gbox.ext[0], *last.ext[1:]), last.bstrides, last.itemsize), v)
            return
    boxes.append(gbox, v)


def boxes_meet(a: BoxDesc, b: BoxDesc) -> bool | None:
    """Whether boxes a and b share a cell (same units for both): exact when True or False, None
    when the search would take more than _MEET_BUDGET steps.

    A shared cell is a solution of sum(i * s over a's dims and its itemsize) - sum(i' * s' over
    b's) = b.b0 - a.b0 with every index in its extent: a depth-first search over the terms by
    decreasing stride, each index limited to the values that leave a remainder the later terms
    can still reach (so boxes of one shape at different offsets take a step per dimension)."""
    if a.hi < b.lo or b.hi < a.lo or 0 in a.ext or 0 in b.ext:
        return False
    key = (a.ext, a.bstrides, a.itemsize, b.ext, b.bstrides, b.itemsize, b.b0 - a.b0)
    found = _MEETS.get(key)
    if found is MISSING:
        return _MEETS.put(key, _meet(a, b))
    return found


def _meet(a: BoxDesc, b: BoxDesc) -> bool | None:
    ranges: dict[int, list[int]] = {}  # stride -> [lowest, highest] coefficient
    for box, side in ((a, 1), (b, 0)):
        for e, st in (*zip(box.ext, box.bstrides, strict=True), (box.itemsize, 1)):
            if e > 1:
                ranges.setdefault(st, [0, 0])[side] += (e - 1) if side else 1 - e
    terms = sorted(((st, lo, hi) for st, (lo, hi) in ranges.items()), reverse=True)
    n = len(terms)
    low = [0] * (n + 1)  # low[k], high[k]: the least and greatest sum of terms k.. (exact bounds)
    high = [0] * (n + 1)
    for k in range(n - 1, -1, -1):
        st, lo, hi = terms[k]
        low[k] = low[k + 1] + lo * st
        high[k] = high[k + 1] + hi * st
    budget = [_MEET_BUDGET]

    def search(k: int, rest: int) -> bool | None:
        if k == n:
            return rest == 0
        st, lo, hi = terms[k]
        first = max(lo, -((high[k + 1] - rest) // st))  # ceil((rest - high) / st)
        last = min(hi, (rest - low[k + 1]) // st)
        unknown = False
        for c in range(first, last + 1):
            budget[0] -= 1
            if budget[0] < 0:
                return None
            found = search(k + 1, rest - c * st)
            if found:
                return True
            unknown = unknown or found is None
        return None if unknown else False

    return search(0, b.b0 - a.b0)


class TileReads:
    """The reads one tile made of one allocation, with the epoch of each.

    `descs` (in epoch order), `lo` and `hi` are in bytes; once materialised, `emap` holds per
    granule of `g` bytes (from granule `em_lo`) 1 + the latest epoch that read it, 0 none. The
    map is made when a write of another tile must be compared with these reads, or when the
    descriptors would take more memory than it."""

    __slots__ = ("descs", "epochs", "lo", "hi", "last", "emap", "em_lo", "ops", "g", "limit", "last_b0")

    def __init__(self, g: int = 1) -> None:
        self.descs: list[tuple[Desc, str]] = []
        self.epochs: list[int] = []  # ascending, one per descriptor
        self.lo = 1 << 62
        self.hi = -1
        self.last = -1  # the latest epoch of any read recorded
        self.emap: np.ndarray | None = None
        self.em_lo = 0
        self.ops: set[str] = set()
        self.g = g
        self.limit = MAX_DESCS  # descriptors kept before full() looks at them
        self.last_b0 = -1  # first byte of the box last recorded by read() (a hint: -1 none)

    def refine(self) -> None:
        """Switch the map to byte granularity (the allocation got an unaligned access)."""
        if self.emap is not None and self.g > 1:
            self.emap = np.repeat(self.emap, self.g)
            self.em_lo *= self.g
        self.g = 1

    def add(self, epoch: int, desc: Desc, opname: str) -> None:
        lo, hi = desc.lo, desc.hi
        if hi < lo:
            return
        if lo < self.lo:
            self.lo = lo
        if hi > self.hi:
            self.hi = hi
        self.last = epoch
        if self.emap is not None:
            if epoch + 1 > _MAP_LIMIT[self.emap.dtype.itemsize]:
                self.emap = self.emap.astype(_map_dtype(epoch + 1))
            self._cover(lo // self.g, hi // self.g)
            assign_cells(self.emap, _scaled(desc, self.g), epoch + 1, self.em_lo)
            self.ops.add(opname)
            return
        self.descs.append((desc, opname))
        self.epochs.append(epoch)
        if len(self.descs) > MAX_DESCS and self.overflowing():
            self.materialise()

    def full(self) -> bool:
        """Called when the descriptors reach `limit`: first drop those a later descriptor
        repeats (the same box read by the same op: only the latest epoch of a byte counts, so a
        loop re-reading one block keeps one descriptor, not one per iteration), then whether the
        rest take more memory than the map would. The next look is at twice what is left (at
        least MAX_DESCS): O(1) amortised per read."""
        seen: set[tuple[object, ...]] = set()
        keep: list[int] = []
        for k in range(len(self.descs) - 1, -1, -1):
            d, name = self.descs[k]
            if type(d) is BoxDesc:
                key = (d.b0, d.ext, d.bstrides, d.itemsize, name)
                if key in seen:
                    continue
                seen.add(key)
            keep.append(k)
        if len(keep) < len(self.descs):
            keep.reverse()  # ascending epochs, as before
            self.descs = [self.descs[k] for k in keep]
            self.epochs = [self.epochs[k] for k in keep]
        self.limit = max(MAX_DESCS, 2 * len(self.descs))
        return len(self.descs) >= MAX_DESCS and self.overflowing()

    def overflowing(self) -> bool:
        """The descriptors take more memory than the map would (about 32 map entries each)."""
        return len(self.descs) * 32 > (self.hi - self.lo) // self.g
    def drop_before(self, epoch: int) -> None:
        """Forget reads of epochs every other running tile has passed (they race with nothing)."""
        if self.emap is not None or not self.epochs or self.epochs[0] >= epoch:
            return
        k = bisect.bisect_left(self.epochs, epoch)
        del self.descs[:k]
        del self.epochs[:k]
        if not self.descs:
            self.lo, self.hi = 1 << 62, -1

    def _cover(self, lo: int, hi: int) -> None:
        """Grow the map over granules lo..hi."""
        assert self.emap is not None
        if lo >= self.em_lo and hi < self.em_lo + len(self.emap):
            return
        new_lo = min(lo, self.em_lo)
        new_hi = max(hi, self.em_lo + len(self.emap) - 1)
        em = np.zeros(new_hi - new_lo + 1, dtype=self.emap.dtype)
        em[self.em_lo - new_lo : self.em_lo - new_lo + len(self.emap)] = self.emap
        self.emap, self.em_lo = em, new_lo

    def materialise(self) -> np.ndarray:
        if self.emap is None:
            g = self.g
            self.em_lo = self.lo // g if self.hi >= self.lo else 0
            self.emap = np.zeros(max(self.hi // g - self.em_lo + 1, 0), dtype=_map_dtype(self.last + 1))
            for (desc, opname), epoch in zip(self.descs, self.epochs, strict=True):
                assign_cells(self.emap, _scaled(desc, g), epoch + 1, self.em_lo)  # ascending epochs: the latest wins
                self.ops.add(opname)
            self.descs, self.epochs = [], []
        return self.emap

    def hits(self, gdesc: Desc, span: tuple[int, int], since: int) -> np.ndarray | None:
        """Bool array over the access's cells (`gdesc`: the access in granules, `span`: its
        bytes): which of them this tile read at an epoch >= `since` (None if none)."""
        lo, hi = span
        if self.last < since or hi < self.lo or lo > self.hi or hi < lo:
            return None
        em = self.materialise()
        glo, ghi = gdesc.span()
        if isinstance(gdesc, BoxDesc):
            if glo >= self.em_lo and ghi < self.em_lo + len(em):
                cells = gdesc.cells(em, self.em_lo).reshape(-1)
            else:
                cells = _clipped(em, _box_index(gdesc).reshape(-1) - self.em_lo)
        else:
            cells = _clipped(em, gdesc.index(self.em_lo))
        hit = cells > since
        return hit if hit.any() else None

    def op_covering(self, byte: int) -> str:
        return " or ".join(sorted(self.ops)) or "an earlier access"


def _same_box(record: tuple[Desc, str], desc: BoxDesc, opname: str) -> bool:
    """Whether a read record is the box `desc` read by `opname`."""
    d, name = record
    return (type(d) is BoxDesc and d.b0 == desc.b0 and name == opname and d.ext == desc.ext
            and d.bstrides == desc.bstrides and d.itemsize == desc.itemsize)


def _box_cells(alloc: Allocation, desc: BoxDesc, g: int) -> np.ndarray | None:
    """The write-map entries (alloc.w_seg) of a box access whose elements are whole granules,
    shaped like the box (the same flat order as `scaled(desc, g).cells(w)`); None for any
    other access."""
    w = alloc.w_seg
    assert w is not None
    if desc.itemsize != g or desc.b0 % g:
        return None
    gbs = _granule_strides(desc.bstrides, g)
    if gbs is None:
        return None
    ext = desc.ext
    b0 = desc.b0 // g
    if len(ext) == 1 and gbs[0] == 1:
        return w[b0 : b0 + ext[0]]
    if len(ext) == 2 and gbs[1] == 1 and gbs[0] >= ext[1] and b0 + ext[0] * gbs[0] <= len(w):
        return w[b0 : b0 + ext[0] * gbs[0]].reshape(ext[0], gbs[0])[:, : ext[1]]
    if 0 in ext:
        return None
    # a box of another shape: one write-map window per granule, made once per write map and box
    # (indexing it is a tenth of the cost of an ndarray over the buffer per access)
    key = (ext, gbs)
    found = alloc.w_windows.get(key)
    if found is None or found[0] is not w:  # none yet, or made for a write map since replaced
        isz = w.itemsize
        reach = sum((e - 1) * st for e, st in zip(ext, gbs, strict=True))
        n = max(len(w) - reach, 0)
        found = (w, np.ndarray(shape=(n, *ext), dtype=w.dtype, buffer=w, offset=0, strides=(isz, *(st * isz for st in gbs))))
        if len(alloc.w_windows) > 64:
            alloc.w_windows.clear()
        alloc.w_windows[key] = found
    if b0 >= len(found[1]):
        return None
    return found[1][b0]  # type: ignore[no-any-return]


def _box_index(desc: BoxDesc) -> np.ndarray:
    grids = np.indices(desc.ext, dtype=np.int64) if desc.ext else np.zeros((0,), dtype=np.int64)
    base = np.full(desc.ext, desc.b0, dtype=np.int64)
    for g, s in zip(grids, desc.bstrides, strict=True):
        base = base + g * s
    return (base[..., None] + np.arange(desc.itemsize)).reshape(-1)


def _clipped(m: np.ndarray, idx: np.ndarray) -> np.ndarray:
    ok = (idx >= 0) & (idx < len(m))
    out = np.zeros(idx.shape, dtype=m.dtype)
    out[ok] = m[idx[ok]]
    return out


def desc_bytes(desc: Desc) -> np.ndarray:
    return _box_index(desc) if isinstance(desc, BoxDesc) else desc.index()


_MAP_LIMIT = {1: 255, 2: 32767, 4: 2**31 - 1}


def _map_dtype(top: int) -> type[np.generic]:
    """Write-map entry type for values up to `top` (1 + a segment id)."""
    return np.uint8 if top <= 255 else np.int16 if top <= 32767 else np.int32


# 0, 1, 2, ... up to the largest grid so far: its slices are lists of tile ids (cheaper than list(range(n)))
_RANGE: list[int] = []


class RaceTracker:
    """Vector clocks and per-allocation access records for all tiles of one run."""

    def __init__(self, n_tiles: int, enabled: bool = True) -> None:
        self.n = n_tiles
        self.enabled = enabled and n_tiles > 1
        # clocks, allocated at a tile's first post or join (None reads as all zeros)
        self.vc: list[list[int] | None] = [None] * n_tiles
        if len(_RANGE) < n_tiles:
            _RANGE[:] = range(n_tiles)
        self.seg_tile: list[int] = _RANGE[:n_tiles]
        self.seg_epoch: list[int] = [0] * n_tiles
        self.epoch: list[int] = [0] * n_tiles  # each tile's current epoch
        self.cur: list[int] = _RANGE[:n_tiles]
        self.finished: set[int] = set()
        self.tracked: list[Allocation] = []
        self._syncs = 0
        self._last_writer_op: dict[tuple[int, int], str] = {}
        self.version = 0  # bumped whenever a clock changes or an allocation gets a new writer epoch
        # indexed by a write-map value (1 + segment; 0: never written): the writer's tile (n for
        # none) and epoch; grown by doubling. Made at the first post or check (_tables): a run
        # whose tiles neither communicate nor race does not pay for them.
        self._wt: np.ndarray | None = None
        self._we: np.ndarray | None = None
        self._vcx: dict[int, tuple[int, np.ndarray]] = {}  # tile -> (version, its clock as a lookup table)

    # ------------------------------------------------------------------ clocks

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(_wt, _we), made at the first use, covering every segment so far."""
        if self._wt is None or self._we is None:
            n = self.n
            wt = np.empty(max(2 * len(self.seg_tile) + 2, 64), dtype=np.int64)
            wt.fill(n)  # (np.full costs twice as much)
            we = np.zeros(len(wt), dtype=np.int64)
            wt[1 : len(self.seg_tile) + 1] = self.seg_tile
            we[1 : len(self.seg_tile) + 1] = self.seg_epoch
            self._wt, self._we = wt, we
        return self._wt, self._we

    def _clock(self, t: int) -> list[int]:
        c = self.vc[t]
        if c is None:
            c = self.vc[t] = [0] * self.n
            c[t] = self.epoch[t]
        return c

    def seen(self, t: int, u: int) -> int:
        """Tile t's clock entry for tile u: u's segments of epochs below it are ordered before t."""
        if u == t:
            return _NEVER
        c = self.vc[t]
        return 0 if c is None else c[u]

    def hb(self, seg: int, t: int) -> bool:
        st = self.seg_tile[seg]
        if st == t:
            return True
        c = self.vc[t]
        return c is not None and c[st] > self.seg_epoch[seg]

    def snapshot_and_advance(self, t: int) -> list[int]:
        """A producer posts: the clock others will join; the producer starts a new segment."""
        mine = self._clock(t)
        mine[t] += 1
        self.epoch[t] = mine[t]
        snap = list(mine)
        seg = len(self.seg_tile)
        self.seg_tile.append(t)
        self.seg_epoch.append(mine[t])
        wt, we = (self._wt, self._we) if self._wt is not None and self._we is not None else self._tables()
        if seg + 1 >= len(wt):
            wt = self._wt = np.concatenate([wt, np.full(len(wt), self.n, dtype=np.int64)])
            we = self._we = np.concatenate([we, np.zeros(len(we), dtype=np.int64)])
        wt[seg + 1] = t
        we[seg + 1] = mine[t]
        self.cur[t] = seg
        self.version += 1
        return snap

    def join(self, t: int, snaps: list[list[int]]) -> None:
        """Tile t has waited for the producers that posted `snaps`: its clock becomes the
        entrywise maximum of its own and theirs, except its own entry (its epoch)."""
        mine = self._clock(t)
        if len(snaps) > 8:  # many producers: a max call per entry over all of them beats the loop
            own = mine[t]
            mine[:] = map(max, mine, *snaps)
            mine[t] = own
        else:
            for snap in snaps:
                for u, v in enumerate(snap):
                    if v > mine[u] and u != t:
                        mine[u] = v
        self._syncs += 1
        self.version += 1
        if self._syncs % max(self.n, 8) == 0:
            self.collect()

    def finish(self, t: int) -> None:
        self.finished.add(t)

    def collect(self) -> None:
        """Drop the reads of epochs that every other running tile has passed. O(tiles^2 +
        allocations * tiles), once every max(tiles, 8) synchronisations."""
        n = self.n
        # per running tile t, its clock with "ordered" at t itself: passed[u] is the least entry
        # for u over the running tiles other than u (_NEVER when there is none)
        rows = []
        for t in range(n):
            if t in self.finished:
                continue
            c = self.vc[t]
            row = [0] * n if c is None else c[:]
            row[t] = _NEVER
            rows.append(row)
        passed = list(map(min, *rows)) if len(rows) > 1 else rows[0] if rows else [_NEVER] * n
        for alloc in self.tracked:
            for u, reads in alloc.readers.items():
                if passed[u]:
                    reads.drop_before(passed[u])

    def _vc_table(self, t: int) -> np.ndarray:
        """Tile t's clock as an array indexed by tile, with "ordered" at t and at n (no writer)."""
        hit = self._vcx.get(t)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        c = self.vc[t]
        table = np.zeros(self.n + 1, dtype=np.int64) if c is None else np.array([*c, _NEVER], dtype=np.int64)
        table[t] = table[self.n] = _NEVER
        self._vcx[t] = (self.version, table)
        return table

    # ------------------------------------------------------------------ accesses

    def _track(self, alloc: Allocation) -> None:
        """First access to `alloc`: choose its granule (the write map waits for a first write:
        arrays that are only read never pay for one)."""
        g = alloc.dtype.itemsize if alloc.dtype is not None and not alloc.growable else 1
        if g < 1 or alloc.base % g or alloc.raw_len % g:
            g = 1
        alloc.granule = g
        self.tracked.append(alloc)

    def _refine(self, alloc: Allocation) -> None:
        """An access that is not granule-aligned: track this allocation per byte from now on."""
        if alloc.w_boxes:
            self._write_map(alloc)
        if alloc.w_seg is not None:
            alloc.w_seg = np.repeat(alloc.w_seg, alloc.granule)
        alloc.granule = 1
        for reads in alloc.readers.values():
            reads.refine()

    def _granules(self, alloc: Allocation, desc: Desc) -> Desc:
        """`desc` in the allocation's granules (refining the allocation if it must)."""
        if alloc.granule == 1:
            return desc
        found = scaled(desc, alloc.granule)
        if found is None:
            self._refine(alloc)
            return desc
        return found

    def _concurrent_writes(self, alloc: Allocation, t: int) -> bool:
        """Whether some tile other than t wrote `alloc` at an epoch t has not passed."""
        cached = alloc.tables.get(t)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        c = self.vc[t]
        found = False
        for u, e in alloc.w_last.items():
            if u != t and (c is None or e >= c[u]):
                found = True
                break
        alloc.tables[t] = (self.version, found)
        return found

    def read(self, alloc: Allocation, desc: Desc, t: int, opname: str) -> None:
        if self.check_read(alloc, desc, t):
            self._record_read(alloc, desc, t, opname)

    def read_all(self, alloc: Allocation, items: list[tuple[int, Desc]], opname: str) -> None:
        """read(alloc, desc, t, opname) for each (t, desc) of `items`, in order: the same records
        and the same first failure. While nothing has written the allocation (and it has no
        init map) a read has nothing to check; that holds for all of them (reads write nothing)."""
        if alloc.init is not None or not self.enabled or alloc.private or alloc.w_last:
            for t, desc in items:
                self.read(alloc, desc, t, opname)
            return
        if not alloc.granule:
            self._track(alloc)
        readers = alloc.readers
        for t, desc in items:
            g = alloc.granule
            if g > 1 and (desc.itemsize % g or (type(desc) is BoxDesc and desc.b0 % g)):
                self._refine(alloc)  # as check_read does
            if t not in readers and desc.hi >= desc.lo:
                # the tile's first read of the allocation: what _record_read records then
                reads = readers[t] = TileReads(alloc.granule)
                epoch = self.epoch[t]
                reads.lo, reads.hi, reads.last = desc.lo, desc.hi, epoch
                reads.last_b0 = desc.b0 if type(desc) is BoxDesc else -1
                reads.descs.append((desc, opname))
                reads.epochs.append(epoch)
                continue
            self._record_read(alloc, desc, t, opname)

    def _record_read(self, alloc: Allocation, desc: Desc, t: int, opname: str) -> None:
        """Record a read that passed check_read."""
        reads = alloc.readers.get(t)
        if reads is None:
            reads = alloc.readers[t] = TileReads(alloc.granule)
        epoch = self.epoch[t]
        if reads.emap is None and (len(reads.descs) < reads.limit or not reads.full()) and desc.hi >= desc.lo:
            if desc.lo < reads.lo:
                reads.lo = desc.lo
            if desc.hi > reads.hi:
                reads.hi = desc.hi
            reads.last = epoch
            descs = reads.descs
            if type(desc) is BoxDesc:
                b0 = desc.b0
                if b0 == reads.last_b0 and descs and _same_box(descs[-1], desc, opname):
                    # the box the last record holds, read again by the same op: the new record
                    # replaces it (only the latest epoch of a byte counts); repeats further back
                    # are dropped by full()
                    descs.pop()
                    reads.epochs.pop()
                reads.last_b0 = b0
            else:
                reads.last_b0 = -1
            descs.append((desc, opname))
            reads.epochs.append(epoch)
        else:
            reads.add(epoch, desc, opname)

    def check_read(self, alloc: Allocation, desc: Desc, t: int) -> bool:
        """The checks of a read by tile t, without recording it: no byte unwritten (scratchpads),
        no earlier write of another tile unordered with t. False when the allocation needs no
        race bookkeeping."""
        if alloc.init is not None and desc.hi >= alloc.init_upto:
            ok = desc.cells(alloc.init)
            if not _all_true(ok):
                raise UninitFound(int(np.argmin(ok.reshape(-1))))
        if not self.enabled or alloc.private:
            return False
        if not alloc.granule:
            self._track(alloc)
        g = alloc.granule
        if g > 1 and (desc.itemsize % g or (type(desc) is BoxDesc and desc.b0 % g)):
            # recorded reads must be granule-aligned; access.py builds descriptors whose strides
            # and offsets are multiples of the itemsize, so the itemsize and a box's start decide
            self._refine(alloc)
        if alloc.w_last and self._concurrent_writes(alloc, t):
            gdesc = self._granules(alloc, desc)
            if alloc.w_seg is None and self._boxes_clear(alloc, gdesc, t):
                return True
            prev = gdesc.cells(self._write_map(alloc))
            if not _unwritten(prev):
                self._check(t, prev, alloc, "write-read", alloc.granule)
        return True

    def check_write(self, alloc: Allocation, desc: Desc, t: int) -> None:
        """The checks of a write by tile t, without recording it (the bytes are marked
        initialised): no earlier access of another tile unordered with t."""
        if not self.enabled or alloc.private:
            if alloc.init is not None:
                mark_init(alloc, desc)
            return
        if not alloc.granule:
            self._track(alloc)
        if alloc.w_last and self._concurrent_writes(alloc, t):
            gdesc = self._granules(alloc, desc)
            if alloc.w_seg is not None or not self._boxes_clear(alloc, gdesc, t):
                cells = gdesc.cells(self._write_map(alloc))
                if not _unwritten(cells):
                    self._check(t, cells, alloc, "write-write", alloc.granule)
        if alloc.readers:
            self._check_readers(alloc, desc, t)
        if alloc.init is not None:
            mark_init(alloc, desc)

    def _check_readers(self, alloc: Allocation, desc: Desc, t: int, gdesc: Desc | None = None) -> Desc | None:
        """Raise if another tile read a byte of `desc` at an epoch t has not passed. `gdesc` is
        `desc` in the allocation's granules when the caller has it; returns it (made here if
        a reader needed it, else None)."""
        span = (desc.lo, desc.hi)
        c = self.vc[t]
        for u, reads in alloc.readers.items():
            if u == t:
                continue
            since = 0 if c is None else c[u]
            if reads.last < since:
                continue
            if gdesc is None:
                gdesc = self._granules(alloc, desc)
            hit = reads.hits(gdesc, span, since)
            if hit is not None:
                k = int(np.argmax(hit))
                byte = int(desc_bytes(gdesc)[k]) * alloc.granule
                raise RaceFound(k * alloc.granule, u, reads.op_covering(byte), "read-write")
        return gdesc

    def _check(self, t: int, prev: np.ndarray, alloc: Allocation, kind: str, g: int) -> None:
        """Raise if a granule's last writer (prev: 1 + segment, per granule) is unordered with t."""
        flat = prev.reshape(-1)
        wt_of, we_of = self._tables()
        wt = wt_of[flat]
        bad = self._vc_table(t)[wt] <= we_of[flat]
        if bad.any():
            k = int(np.argmax(bad))
            seg = int(flat[k]) - 1
            raise RaceFound(k * g, self.seg_tile[seg], self._writer_op(alloc, seg), kind)

    def write(self, alloc: Allocation, desc: Desc, t: int, opname: str) -> None:
        if not self.enabled or alloc.private:
            if alloc.init is not None:
                mark_init(alloc, desc)
            return
        if not alloc.granule:
            self._track(alloc)
        seg = self.cur[t]
        if alloc.w_seg is None:
            if type(desc) is BoxDesc and len(alloc.w_boxes) < MAX_WRITE_BOXES:
                gbox = scaled(desc, alloc.granule)
                if gbox is not None and (not alloc.w_last or not self._concurrent_writes(alloc, t)
                                         or self._boxes_clear(alloc, gbox, t)):
                    # no box written by a segment unordered with t meets this one: no
                    # write-write race; kept as a box (a store of a block costs O(1) here)
                    if alloc.readers:
                        self._check_readers(alloc, desc, t)
                    _keep_box(alloc, gbox, seg + 1)
                    self._wrote(alloc, desc, t, seg, opname)
                    return
            self._write_map(alloc)
        assert alloc.w_seg is not None
        if seg + 1 > _MAP_LIMIT[alloc.w_seg.dtype.itemsize]:
            alloc.w_seg = alloc.w_seg.astype(_map_dtype(seg + 1))
        g = alloc.granule
        gdesc: Desc | None = None
        cells = _box_cells(alloc, desc, g) if type(desc) is BoxDesc else None
        if cells is None:
            gdesc = self._granules(alloc, desc)
            g = alloc.granule
            cells = gdesc.cells(alloc.w_seg)
        if alloc.w_last and self._concurrent_writes(alloc, t) and not _unwritten(cells):
            self._check(t, cells, alloc, "write-write", g)
        if alloc.readers and gdesc is None:
            gdesc = self._check_readers(alloc, desc, t)
            g = alloc.granule  # _granules may have refined the allocation to bytes
        elif alloc.readers:
            self._check_readers(alloc, desc, t, gdesc)
        if isinstance(gdesc, IdxDesc):
            alloc.w_seg[gdesc.index()] = seg + 1  # cells of an index descriptor are a copy, not a view
        else:
            cells[...] = seg + 1
        self._wrote(alloc, desc, t, seg, opname)

    def write_all(self, alloc: Allocation, items: list[tuple[int, Desc]], opname: str) -> None:
        """write(alloc, desc, t, opname) for each (t, desc) of `items`, in order: the same
        records and the same first failure. Boxes of one shape (a lattice of tiles' boxes, as
        lockstep stores them, are translates of each other) are compared once per distance
        between them, not once per pair: whether two translates meet depends on nothing else."""
        meets: dict[int, bool | None] = {}
        for t, desc in items:
            if not self._write_box(alloc, desc, t, opname, meets):
                self.write(alloc, desc, t, opname)

    def _write_box(self, alloc: Allocation, desc: Desc, t: int, opname: str, meets: dict[int, bool | None]) -> bool:
        """write()'s path of a box kept as a box (True: done), with boxes_meet's answers for
        boxes of desc's shape by distance in `meets`; False, having recorded nothing, when
        write() must take another path."""
        if not self.enabled or alloc.private or alloc.w_seg is not None or type(desc) is not BoxDesc \
                or len(alloc.w_boxes) >= MAX_WRITE_BOXES:
            return False
        if not alloc.granule:
            self._track(alloc)
        g = alloc.granule
        if g == 1:
            gbox = desc
        else:  # scaled(desc, g)
            if desc.b0 % g or desc.itemsize % g:
                return False
            gbs = _granule_strides(desc.bstrides, g)
            if gbs is None:
                return False
            gbox = BoxDesc(desc.b0 // g, desc.ext, gbs, desc.itemsize // g, (desc.hi + 1) // g - 1)
        if alloc.w_last and self._concurrent_writes(alloc, t):
            seg_tile, seg_epoch, c = self.seg_tile, self.seg_epoch, self.vc[t]
            ext, bstrides, itemsize, b0, lo, hi = gbox.ext, gbox.bstrides, gbox.itemsize, gbox.b0, gbox.lo, gbox.hi
            near = alloc.w_boxes.near(lo, hi, _NEAR_LIMIT)
            if near is None:
                return False
            for box, v in near:  # the others' byte spans are apart: they do not meet
                st = seg_tile[v - 1]  # hb(v - 1, t)
                if st == t or (c is not None and c[st] > seg_epoch[v - 1]):
                    continue
                if box.ext == ext and box.bstrides == bstrides and box.itemsize == itemsize:
                    d = b0 - box.b0
                    met = meets.get(d, MISSING)
                    if met is MISSING:
                        met = meets[d] = boxes_meet(box, gbox)
                else:
                    met = boxes_meet(box, gbox)
                if met is not False:
                    return False
        if alloc.readers:
            self._check_readers(alloc, desc, t)
        _keep_box(alloc, gbox, self.cur[t] + 1)
        self._wrote(alloc, desc, t, self.cur[t], opname)
        return True

    def _wrote(self, alloc: Allocation, desc: Desc, t: int, seg: int, opname: str) -> None:
        """Bookkeeping after tile t's write of `desc` in segment `seg` is recorded."""
        epoch = self.epoch[t]
        if alloc.w_last.get(t, -1) != epoch:
            alloc.w_last[t] = epoch
            self.version += 1
            self._last_writer_op[(id(alloc), seg)] = opname
        if alloc.init is not None:
            mark_init(alloc, desc)

    def _write_map(self, alloc: Allocation) -> np.ndarray:
        """alloc.w_seg, made at its first need: the box writes kept so far applied in order."""
        if alloc.w_seg is None:
            # the narrowest type that holds 1 + every segment so far; widened in write() when needed
            w = np.zeros(alloc.raw_len // alloc.granule, dtype=_map_dtype(len(self.seg_tile)))
            for box, v in alloc.w_boxes:
                box.cells(w)[...] = v
            alloc.w_seg = w
            alloc.w_boxes = KeptBoxes()
        return alloc.w_seg

    def _boxes_clear(self, alloc: Allocation, gdesc: Desc, t: int) -> bool:
        """Whether no box write kept for `alloc` (alloc.w_boxes) by a segment unordered with
        tile t meets `gdesc` (in granules). Then no granule of `gdesc` has a last writer
        unordered with t: its last writer wrote one of those boxes. False when unsure."""
        if type(gdesc) is not BoxDesc:
            return False
        near = alloc.w_boxes.near(gdesc.lo, gdesc.hi, _NEAR_LIMIT)
        return near is not None and all(self.hb(v - 1, t) or boxes_meet(box, gdesc) is False for box, v in near)

    def _writer_op(self, alloc: Allocation, seg: int) -> str:
        return self._last_writer_op.get((id(alloc), seg), "a store")


def note_init(alloc: Allocation, desc: Desc) -> None:
    if alloc.init is not None:
        mark_init(alloc, desc)


def mark_init(alloc: Allocation, desc: Desc) -> None:
    """The bytes of `desc` are written (alloc.init is not None): set them in the init map,
    unless they lie below the initialised prefix, which a dense write reaching it extends."""
    k = alloc.init_upto
    if desc.hi < k:
        return
    assert alloc.init is not None
    assign_cells(alloc.init, desc, True)
    if desc.lo <= k and _dense(desc):
        alloc.init_upto = desc.hi + 1


def _dense(desc: Desc) -> bool:
    """Whether `desc` covers every byte from its first to its last (BoxDesc.dense)."""
    return type(desc) is BoxDesc and desc.dense()
