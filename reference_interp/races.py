"""Happens-before tracking: data races between tiles and reads of unwritten memory.

Each tile's execution is cut into *segments* at every `inter_tile_produce` it executes as
a producer. A segment is identified by (tile, epoch). Each tile carries a vector clock
`vc[t]`: segment (u, e) happens before tile t's current point iff `u == t` or
`vc[t][u] > e`. A producer posts a snapshot of its clock with its own entry advanced
past the segment it just closed; a consumer joins the snapshots of the producers it
waits for (`inter_tile_consume`/`reduce`/...). That is the only source of order between
tiles, besides kernel end.

Per allocation, per *granule*: the element size of an argument array for as long as every
access to it is element-aligned (the usual case: it halves to eighths the bookkeeping of
byte granularity and gives the same answers, since no aligned access touches part of an
element), refined once to bytes at the first access that is not; scratchpads and
allocations are tracked per byte.

- `w_seg[g]` is 1 + the segment that last wrote granule g (0: never written; zero-filled
  arrays cost nothing until touched); `writer_segs` lists segments that
  wrote the allocation. A read or write checks the previous writers only when some
  writer segment is not ordered before the accessing tile (a set test, O(#segments)),
  then vectorised over the accessed bytes (a lookup table indexed by segment).
- reads are recorded per segment as access descriptors with their byte range (cheap);
  a write checks them only for segments that are unordered with it and whose byte range
  overlaps, by materialising a bitmap of that segment's reads once.

So correct programs pay O(1) per access for the race check, and a race is reported with
the two tiles, both ops and the coordinate. Segments that every running tile has passed
are dropped (they can no longer race).
"""

from __future__ import annotations

import numpy as np

from .memory import Allocation, BoxDesc, Desc, IdxDesc, assign_cells

MAX_DESCS = 2048
_ONES = b"\x01" * 4096
_ZEROS = b"\x00" * 4096


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


def scaled(desc: Desc, g: int) -> Desc | None:
    """`desc` in units of g-byte granules, or None when it is not granule-aligned."""
    if g == 1:
        return desc
    if type(desc) is BoxDesc:
        if desc.b0 % g or desc.itemsize % g:
            return None
        key = (desc.bstrides, g)
        if key in _GRANULE_STRIDES:  # this runs once per store: the strides repeat
            gbs = _GRANULE_STRIDES[key]
        else:
            gbs = None if any(st % g for st in desc.bstrides) else tuple(st // g for st in desc.bstrides)
            if len(_GRANULE_STRIDES) > 4096:
                _GRANULE_STRIDES.clear()
            _GRANULE_STRIDES[key] = gbs
        if gbs is None:
            return None
        return BoxDesc(desc.b0 // g, desc.ext, gbs, desc.itemsize // g, (desc.hi + 1) // g - 1)
    assert isinstance(desc, IdxDesc)
    if desc.itemsize % g or (desc.offs.size and (desc.offs % g).any()):
        return None
    return IdxDesc(desc.offs // g, desc.itemsize // g)


class ReadRecord:
    """The reads one segment made of one allocation.

    `descs`, `lo` and `hi` are in bytes; the bitmap, once materialised, has one entry per
    granule of `g` bytes (`bm_lo` in granules)."""

    __slots__ = ("lo", "hi", "descs", "bitmap", "bm_lo", "ops", "g")

    def __init__(self, g: int = 1) -> None:
        self.lo = 1 << 62
        self.hi = -1
        self.descs: list[tuple[Desc, str]] = []
        self.bitmap: np.ndarray | None = None
        self.bm_lo = 0
        self.ops: set[str] = set()
        self.g = g

    def refine(self) -> None:
        """Switch the bitmap to byte granularity (the allocation got an unaligned access)."""
        if self.bitmap is not None and self.g > 1:
            self.bitmap = np.repeat(self.bitmap, self.g)
            self.bm_lo *= self.g
        self.g = 1

    def add(self, desc: Desc, span: tuple[int, int], opname: str) -> None:
        lo, hi = span
        if hi < lo:
            return
        if self.bitmap is not None:
            self._cover(lo // self.g, hi // self.g)
            assign_cells(self.bitmap, _scaled(desc, self.g), True, self.bm_lo)
            self.ops.add(opname)
            self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
            return
        if lo < self.lo:
            self.lo = lo
        if hi > self.hi:
            self.hi = hi
        self.descs.append((desc, opname))
        if len(self.descs) > MAX_DESCS:
            self.materialise()
            self.descs = []

    def _cover(self, lo: int, hi: int) -> None:
        """Grow the bitmap over granules lo..hi."""
        assert self.bitmap is not None
        if lo >= self.bm_lo and hi < self.bm_lo + len(self.bitmap):
            return
        new_lo = min(lo, self.bm_lo)
        new_hi = max(hi, self.bm_lo + len(self.bitmap) - 1)
        bm = np.zeros(new_hi - new_lo + 1, dtype=bool)
        bm[self.bm_lo - new_lo : self.bm_lo - new_lo + len(self.bitmap)] = self.bitmap
        self.bitmap, self.bm_lo = bm, new_lo

    def materialise(self) -> np.ndarray:
        if self.bitmap is None:
            g = self.g
            self.bm_lo = self.lo // g
            self.bitmap = np.zeros(max(self.hi // g - self.lo // g + 1, 0), dtype=bool)
            for desc, opname in self.descs:
                assign_cells(self.bitmap, _scaled(desc, g), True, self.bm_lo)
                self.ops.add(opname)
        return self.bitmap

    def hits(self, gdesc: Desc, span: tuple[int, int]) -> np.ndarray | None:
        """Bool array over the access's cells (`gdesc`: the access in granules, `span`: its
        bytes): which of them this segment read (None if none)."""
        lo, hi = span
        if hi < self.lo or lo > self.hi or hi < lo:
            return None
        bm = self.materialise()
        glo, ghi = gdesc.span()
        # clip: cells outside the bitmap were not read
        if isinstance(gdesc, BoxDesc):
            if glo >= self.bm_lo and ghi < self.bm_lo + len(bm):
                cells = gdesc.cells(bm, self.bm_lo).reshape(-1)
            else:
                idx = _box_index(gdesc).reshape(-1) - self.bm_lo
                cells = _clipped(bm, idx)
        else:
            cells = _clipped(bm, gdesc.index(self.bm_lo))
        return cells if cells.any() else None

    def op_covering(self, byte: int) -> str:
        for desc, opname in self.descs:
            lo, hi = desc.span()
            if lo <= byte <= hi:
                idx = _box_index(desc).reshape(-1) if isinstance(desc, BoxDesc) else desc.index()
                if np.any(idx == byte):
                    return opname
        return " or ".join(sorted(self.ops)) or "an earlier access"


def _box_cells(w: np.ndarray, desc: BoxDesc, g: int) -> np.ndarray | None:
    """The write-map entries of a box access whose elements are whole granules, shaped like
    the box (the same flat order as `scaled(desc, g).cells(w)`); None for any other access."""
    if desc.itemsize != g or desc.b0 % g:
        return None
    bs = desc.bstrides
    ext = desc.ext
    key = (bs, g)
    if key in _GRANULE_STRIDES:
        gbs = _GRANULE_STRIDES[key]
    else:
        gbs = None if any(st % g for st in bs) else tuple(st // g for st in bs)
        if len(_GRANULE_STRIDES) > 4096:
            _GRANULE_STRIDES.clear()
        _GRANULE_STRIDES[key] = gbs
    if gbs is None:
        return None
    b0 = desc.b0 // g
    if len(ext) == 1 and gbs[0] == 1:
        return w[b0 : b0 + ext[0]]
    if len(ext) == 2 and gbs[1] == 1 and gbs[0] >= ext[1] and b0 + ext[0] * gbs[0] <= len(w):
        return w[b0 : b0 + ext[0] * gbs[0]].reshape(ext[0], gbs[0])[:, : ext[1]]
    if 0 in ext:
        return None
    isz = w.itemsize
    return np.ndarray(shape=ext, dtype=w.dtype, buffer=w, offset=b0 * isz, strides=tuple(st * isz for st in gbs))


def _scaled(desc: Desc, g: int) -> Desc:
    found = scaled(desc, g)
    assert found is not None, "descriptors recorded at granule g are g-aligned"
    return found


def _box_index(desc: BoxDesc) -> np.ndarray:
    grids = np.indices(desc.ext, dtype=np.int64) if desc.ext else np.zeros((0,), dtype=np.int64)
    base = np.full(desc.ext, desc.b0, dtype=np.int64)
    for g, s in zip(grids, desc.bstrides, strict=True):
        base = base + g * s
    return (base[..., None] + np.arange(desc.itemsize)).reshape(-1)


def _clipped(bm: np.ndarray, idx: np.ndarray) -> np.ndarray:
    ok = (idx >= 0) & (idx < len(bm))
    out = np.zeros(idx.shape, dtype=bool)
    out[ok] = bm[idx[ok]]
    return out


def desc_bytes(desc: Desc) -> np.ndarray:
    return _box_index(desc) if isinstance(desc, BoxDesc) else desc.index()


_MAP_LIMIT = {1: 255, 2: 32767, 4: 2**31 - 1}


def _map_dtype(top: int) -> type[np.generic]:
    """Write-map entry type for values up to `top` (1 + a segment id)."""
    return np.uint8 if top <= 255 else np.int16 if top <= 32767 else np.int32


class RaceTracker:
    """Vector clocks and per-allocation access records for all tiles of one run."""

    def __init__(self, n_tiles: int, enabled: bool = True) -> None:
        self.n = n_tiles
        self.enabled = enabled and n_tiles > 1
        self.vc: list[list[int]] = [[0] * n_tiles for _ in range(n_tiles)]
        self.seg_tile: list[int] = list(range(n_tiles))
        self.seg_epoch: list[int] = [0] * n_tiles
        self.cur: list[int] = list(range(n_tiles))
        self.finished: set[int] = set()
        self.tracked: list[Allocation] = []
        self._syncs = 0
        self._last_writer_op: dict[tuple[int, int], str] = {}
        self.version = 0  # bumped whenever a clock or the set of segments changes

    # ------------------------------------------------------------------ clocks

    def hb(self, seg: int, t: int) -> bool:
        st = self.seg_tile[seg]
        return st == t or self.vc[t][st] > self.seg_epoch[seg]

    def snapshot_and_advance(self, t: int) -> list[int]:
        """A producer posts: the clock others will join; the producer starts a new segment."""
        snap = list(self.vc[t])
        snap[t] += 1
        self.vc[t][t] += 1
        self.seg_tile.append(t)
        self.seg_epoch.append(self.vc[t][t])
        self.cur[t] = len(self.seg_tile) - 1
        self.version += 1
        return snap

    def join(self, t: int, snaps: list[list[int]]) -> None:
        mine = self.vc[t]
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
        """Drop segments that every unfinished tile has passed."""
        running = [u for u in range(self.n) if u not in self.finished]

        def dead(seg: int) -> bool:
            st, e = self.seg_tile[seg], self.seg_epoch[seg]
            return all(self.vc[u][st] > e for u in running if u != st)

        for alloc in self.tracked:
            gone = [s for s in alloc.writer_segs if dead(s)]
            for s in gone:
                alloc.writer_segs.discard(s)
            for s in [s for s in alloc.readers if dead(s)]:
                del alloc.readers[s]

    # ------------------------------------------------------------------ accesses

    def _track(self, alloc: Allocation) -> None:
        """First access to `alloc`: choose its granule (the write map waits for a first write:
        arrays that are only read never pay for one)."""
        g = alloc.dtype.itemsize if alloc.dtype is not None and not alloc.growable else 1
        if g < 1 or alloc.base % g or len(alloc.raw) % g:
            g = 1
        alloc.granule = g
        self.tracked.append(alloc)

    def _write_map(self, alloc: Allocation) -> np.ndarray:
        if alloc.w_seg is None:
            # the narrowest type that holds 1 + every segment so far; write() widens it when needed
            alloc.w_seg = np.zeros(len(alloc.raw) // alloc.granule, dtype=_map_dtype(len(self.seg_tile)))
        return alloc.w_seg

    def _refine(self, alloc: Allocation) -> None:
        """An access that is not granule-aligned: track this allocation per byte from now on."""
        if alloc.w_seg is not None:
            alloc.w_seg = np.repeat(alloc.w_seg, alloc.granule)
        alloc.granule = 1
        for rec in alloc.readers.values():
            rec.refine()

    def _granules(self, alloc: Allocation, desc: Desc) -> Desc:
        """`desc` in the allocation's granules (refining the allocation if it must)."""
        if alloc.granule == 1:
            return desc
        found = scaled(desc, alloc.granule)
        if found is None:
            self._refine(alloc)
            return desc
        return found

    def _unordered(self, alloc: Allocation, t: int) -> np.ndarray | None:
        """A lookup table indexed by w_seg values: True for writer segments unordered with tile t."""
        cached = alloc.tables.get(t)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        others = [s for s in alloc.writer_segs if not self.hb(s, t)]
        table = None
        if others:
            table = np.zeros(len(self.seg_tile) + 1, dtype=bool)
            table[np.asarray(others) + 1] = True
        alloc.tables[t] = (self.version, table)
        return table

    def read(self, alloc: Allocation, desc: Desc, t: int, opname: str) -> None:
        if alloc.init is not None:
            ok = desc.cells(alloc.init)
            if not _all_true(ok):
                raise UninitFound(int(np.argmin(ok.reshape(-1))))
        if not self.enabled or alloc.private:
            return
        if not alloc.granule:
            self._track(alloc)
        g = alloc.granule
        if g > 1 and (desc.itemsize % g or (type(desc) is BoxDesc and desc.b0 % g)):
            # recorded reads must be granule-aligned; access.py builds descriptors whose strides
            # and offsets are multiples of the itemsize, so the itemsize and a box's start decide
            self._refine(alloc)
        if alloc.writer_segs:
            cached = alloc.tables.get(t)
            table = cached[1] if cached is not None and cached[0] == self.version else self._unordered(alloc, t)
            if table is not None:
                assert alloc.w_seg is not None
                gdesc = self._granules(alloc, desc)
                g = alloc.granule
                prev = gdesc.cells(alloc.w_seg)
                if not _unwritten(prev):
                    self._check(table, prev, alloc, "write-read", g)
        seg = self.cur[t]
        rec = alloc.readers.get(seg)
        if rec is None:
            rec = ReadRecord(alloc.granule)
            alloc.readers[seg] = rec
        if rec.bitmap is None and len(rec.descs) < MAX_DESCS and desc.hi >= desc.lo:
            if desc.lo < rec.lo:
                rec.lo = desc.lo
            if desc.hi > rec.hi:
                rec.hi = desc.hi
            rec.descs.append((desc, opname))
        else:
            rec.add(desc, (desc.lo, desc.hi), opname)

    def _check(self, table: np.ndarray, prev: np.ndarray, alloc: Allocation, kind: str, g: int) -> None:
        flat = prev.reshape(-1)
        bad = table[flat]
        if bad.any():
            k = int(np.argmax(bad))
            seg = int(flat[k]) - 1
            raise RaceFound(k * g, self.seg_tile[seg], self._writer_op(alloc, seg), kind)

    def write(self, alloc: Allocation, desc: Desc, t: int, opname: str) -> None:
        if not self.enabled or alloc.private:
            if alloc.init is not None:
                assign_cells(alloc.init, desc, True)
            return
        if not alloc.granule:
            self._track(alloc)
        if alloc.w_seg is None:
            self._write_map(alloc)
        assert alloc.w_seg is not None
        seg = self.cur[t]
        if seg + 1 > _MAP_LIMIT[alloc.w_seg.dtype.itemsize]:
            alloc.w_seg = alloc.w_seg.astype(_map_dtype(seg + 1))
        g = alloc.granule
        gdesc: Desc | None = None
        cells = _box_cells(alloc.w_seg, desc, g) if type(desc) is BoxDesc else None
        if cells is None:
            gdesc = self._granules(alloc, desc)
            g = alloc.granule
            cells = gdesc.cells(alloc.w_seg)
        if alloc.writer_segs:
            cached = alloc.tables.get(t)
            table = cached[1] if cached is not None and cached[0] == self.version else self._unordered(alloc, t)
            if table is not None and not _unwritten(cells):
                self._check(table, cells, alloc, "write-write", g)
        if alloc.readers:
            span = desc.span()
            for rseg, rec in alloc.readers.items():
                if self.hb(rseg, t):
                    continue
                if gdesc is None:
                    gdesc = self._granules(alloc, desc)
                hit = rec.hits(gdesc, span)
                if hit is not None:
                    k = int(np.argmax(hit))
                    byte = int(desc_bytes(gdesc)[k]) * g
                    raise RaceFound(k * g, self.seg_tile[rseg], rec.op_covering(byte), "read-write")
        if isinstance(gdesc, IdxDesc):
            alloc.w_seg[gdesc.index()] = seg + 1  # cells of an index descriptor are a copy, not a view
        else:
            cells[...] = seg + 1
        if seg not in alloc.writer_segs:
            alloc.writer_segs.add(seg)
            self.version += 1
            self._last_writer_op[(id(alloc), seg)] = opname
        if alloc.init is not None:
            assign_cells(alloc.init, desc, True)

    def _writer_op(self, alloc: Allocation, seg: int) -> str:
        return self._last_writer_op.get((id(alloc), seg), "a store")


def note_init(alloc: Allocation, desc: Desc) -> None:
    if alloc.init is not None:
        assign_cells(alloc.init, desc, True)

