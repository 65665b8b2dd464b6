"""Memories, allocations and memory views.

Memory model (see README.md for the reasons):

- **global** memory is byte-addressed and shared by all tiles. Each array argument is an
  *allocation* placed at a 128-byte-aligned byte address, in argument order from address
  0. An `index` argument bound to an array receives the array's base address counted in
  elements of the array's dtype (byte address / itemsize).
- **ct_local** memory is one byte-addressed scratchpad per tile, from address 0 up to the
  target's capacity. `#ktdp.memory_space<ct_local>` names the executing tile's scratchpad,
  `<ct_local, ct_id = N>` the scratchpad of the tile with linear id N.
- `memref.alloc`/`alloca` create fresh private allocations (space `alloc`).

A memory view (`construct_memory_view`) counts its `offset` in elements of its element
type: the element at view coordinate `c` lies at byte
`(offset + sum((c[d] - origin[d]) * strides[d])) * itemsize`, where `origin` is the lower
corner of the bounding box of the view's `coordinate_set` (all zeros for a set that
starts at 0, which is the usual case; a partition of a distributed view whose set covers
rows 96..127 has origin row 96). Every accessed coordinate must lie in the view's sizes
(`origin <= c < origin + sizes`) and coordinate_set, and every accessed byte in the one
allocation (or scratchpad) that holds the view's first element.

Access descriptors (`BoxDesc`, `IdxDesc`) describe which bytes of an allocation an access
touches; the race detector and the initialisation tracker work on them without Python
loops over elements.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .affine_eval import CompiledSet
from .errors import fail

ALIGN = 128
_ZERO_SCAN = 1 << 20  # arrays at least this large are scanned for zeros before a copy (own), or owned lazily (own_lazy)


def _all_zero(b: np.ndarray) -> bool:
    """Whether the bytes `b` (a large contiguous uint8 array) are all zero: an output array
    given as zeros is then owned as fresh zero pages, not copied (a scan reads it once; a copy
    reads it, writes it and faults the new pages in first). Smaller arrays are simply copied."""
    n = b.size
    if n < _ZERO_SCAN or b[:4096].any():
        return False
    k = n - n % 8
    return not b[:k].view(np.uint64).max(initial=0) and not b[k:].any()


LAZY_CHUNK = 1 << 16  # the unit of a lazily owned array's copy from the caller's array
SPACES = ("global", "ct_local", "alloc")
SPACE_ID = {name: i for i, name in enumerate(SPACES)}


_BYTE = np.dtype(np.uint8)  # (a view to a dtype object skips the conversion of np.uint8)


def align_up(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


class KeptBoxes:
    """An allocation's box writes kept as boxes (races.py), in order, with their byte spans
    sorted by start: the boxes whose spans meet a given span are found by bisection, not by a
    pass over every box (a tile's stores interleaved with other tiles' in one output array
    are many boxes, each meeting few)."""

    __slots__ = ("items", "starts", "widest")

    def __init__(self) -> None:
        self.items: list[tuple[Any, int]] = []  # (box, 1 + segment), in the order written
        self.starts: list[tuple[int, int]] = []  # (box.lo, position in items), sorted
        self.widest = 0  # the largest box.hi - box.lo so far

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    def append(self, box: Any, v: int) -> None:
        bisect.insort(self.starts, (box.lo, len(self.items)))
        self.items.append((box, v))
        if box.hi - box.lo > self.widest:
            self.widest = box.hi - box.lo

    def replace_last(self, box: Any, v: int) -> None:
        """The last box, grown with its start unchanged."""
        assert box.lo == self.items[-1][0].lo
        self.items[-1] = (box, v)
        if box.hi - box.lo > self.widest:
            self.widest = box.hi - box.lo

    def near(self, lo: int, hi: int, limit: int) -> list[tuple[Any, int]] | None:
        """The kept (box, v) whose byte spans meet [lo, hi] (any order); None when more than
        `limit` boxes start close enough to be looked at."""
        starts = self.starts
        a = bisect.bisect_left(starts, (lo - self.widest, -1))
        b = bisect.bisect_right(starts, (hi, len(self.items)))
        if b - a > limit:
            return None
        items = self.items
        return [items[k] for _, k in starts[a:b] if items[k][0].hi >= lo]


class Allocation:
    """A contiguous byte range of one memory: an argument array, a scratchpad, an alloc."""

    __slots__ = (
        "name", "space", "base", "nbytes", "owner", "capacity", "growable",
        "w_seg", "w_boxes", "w_windows", "w_last", "readers", "init", "init_upto", "_typed", "_windows", "peak", "dtype", "shape", "tables", "granule",
        "private", "shared", "given", "pending", "npending", "src", "_raw",
    )

    def __init__(
        self,
        name: str,
        space: str,
        base: int,
        raw: np.ndarray,
        nbytes: int,
        owner: int | None = None,
        capacity: int | None = None,
        track_init: bool = False,
    ) -> None:
        self.name = name
        self.space = space
        self.base = base  # byte address of the first byte in its memory
        self.raw = raw  # uint8 buffer, length a multiple of ALIGN
        self.nbytes = nbytes  # valid bytes (accesses beyond are out of bounds)
        self.owner = owner  # the tile owning a scratchpad or alloc
        self.capacity = capacity  # scratchpads grow on demand up to this
        self.growable = capacity is not None
        self.w_seg: np.ndarray | None = None  # per granule: 1 + segment of the last write, 0 none
        # before w_seg is made: the writes as (box in granules, 1 + segment), in order (races.py)
        self.w_boxes = KeptBoxes()
        # bytes per w_seg entry (races.py: the element size while accesses are aligned); 0 until tracked
        self.granule = 0
        self.private = False  # only its owner tile can reach it: no race bookkeeping
        # raw is a read-only view of the caller's array, copied at the first write (own(), or
        # chunk by chunk as accesses reach it: own_lazy())
        self.shared = False
        # while shared: the caller's array as a read-only view in its own dtype and shape (what
        # contents(copy=False) returns; GlobalMemory.place)
        self.given: np.ndarray | None = None
        # lazily owned (own_lazy): per LAZY_CHUNK of raw, whether its bytes are still those of
        # `src` (the caller's bytes, read-only) and not yet in raw; None once every chunk is
        self.pending: bytearray | None = None
        self.npending = 0
        self.src: np.ndarray | None = None
        # races._box_cells: (box extents, strides) -> (the write map, its box-shaped windows)
        self.w_windows: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.w_last: dict[int, int] = {}  # tile -> the latest epoch at which it wrote (races.py)
        self.readers: dict[int, Any] = {}  # tile -> races.TileReads
        self.tables: dict[int, tuple[int, bool]] = {}  # tile -> (clock version, whether another tile's writes are unordered with it)
        self.init: np.ndarray | None = np.zeros(len(raw), dtype=bool) if track_init else None
        # bytes [0, init_upto) are all initialised (a lower bound, raised by dense writes that
        # reach it: reads and writes below it skip the init map; races.py)
        self.init_upto = 0
        self._typed: dict[Any, np.ndarray] = {}
        self._windows: dict[tuple[Any, ...], np.ndarray] = {}  # windows(): box views by dtype, extents, strides
        self.peak = 0  # highest byte touched + 1
        self.dtype: np.dtype[Any] | None = None
        self.shape: tuple[int, ...] | None = None

    @property
    def raw(self) -> np.ndarray:
        """The uint8 buffer, every byte current (a lazily owned array settles its pending chunks)."""
        if self.pending is not None:
            self.settle_all()
        return self._raw

    @raw.setter
    def raw(self, buf: np.ndarray) -> None:
        self._raw = buf

    @property
    def raw_len(self) -> int:
        """len(raw), without settling."""
        return len(self._raw)

    def typed(self, dt: np.dtype[Any], settle: bool = True) -> np.ndarray:
        """raw as elements of `dt`; without `settle`, for an access that settles the chunks of
        its own span (access._load_box, _store_box: the bytes of a pending chunk are not
        there yet)."""
        if settle and self.pending is not None:
            self.settle_all()
        arr = self._typed.get(dt)
        if arr is None:
            arr = self._raw.view(dt)
            self._typed[dt] = arr
        return arr

    def windows(self, dt: np.dtype[Any], ext: tuple[int, ...], bstrides: tuple[int, ...], settle: bool = True) -> np.ndarray:
        """One box of extents `ext` and byte strides `bstrides` per element address: indexing it
        with a box's first element address gives the box as a view of the buffer, the same as
        np.ndarray(ext, dt, buffer, offset, bstrides) at a tenth of the cost. Kept with the
        typed views (made again once the buffer changes); boxes whose extents include 0 or that
        leave the buffer are not addressed through it."""
        if settle and self.pending is not None:
            self.settle_all()
        key = (dt, ext, bstrides)
        arr = self._windows.get(key)
        if arr is None:
            isz = dt.itemsize
            reach = sum((e - 1) * st for e, st in zip(ext, bstrides, strict=True))
            n = max((len(self._raw) - reach) // isz, 0)
            arr = np.ndarray(shape=(n, *ext), dtype=dt, buffer=self._raw, offset=0, strides=(isz, *bstrides))
            if len(self._windows) > 64:
                self._windows.clear()
            self._windows[key] = arr
        return arr

    def ensure(self, end: int) -> None:
        """Make bytes [0, end) addressable (scratchpads grow; others are fixed)."""
        if end > self.peak:
            self.peak = end
        if end <= len(self._raw):
            return
        if not self.growable:
            return
        new_len = align_up(max(end, 2 * len(self.raw), 4096), 4096)
        if self.capacity is not None:
            new_len = min(new_len, align_up(self.capacity))
        self.raw = _grow(self.raw, new_len)
        if self.init is not None:
            self.init = _grow(self.init, new_len)
        if self.w_seg is not None:
            self.w_seg = _grow(self.w_seg, new_len)
        self._typed.clear()
        self._windows.clear()
        self.nbytes = len(self.raw)

    def own(self, copy: bool = True) -> None:
        """Before the first write: replace the view of the caller's array by a private copy
        (without `copy`, by a buffer whose bytes are those the write about to happen gives:
        for a write of every byte, lockstep_memory._covers_all)."""
        if self.shared:
            size = max(align_up(self.nbytes), ALIGN)
            if copy and _all_zero(self.raw[: self.nbytes]):
                raw = np.zeros(size, dtype=np.uint8)  # fresh pages are zeros already: nothing to copy
            else:
                raw = np.empty(size, dtype=np.uint8)
                if copy:
                    raw[: self.nbytes] = self.raw
                raw[self.nbytes :] = 0
            self.raw = raw
            self._typed.clear()
            self._windows.clear()
            self.shared = False
            self.given = None

    def own_lazy(self) -> None:
        """own() for a large array written box by box (access._store_box): a new buffer now,
        each LAZY_CHUNK of the caller's bytes copied into it only when an access reaches it
        (settle), and not at all when a write covers it whole. An output
        array the kernel writes entirely is then neither scanned nor copied; any access that
        does not settle its own span (every other path, through raw, typed() or windows())
        settles every chunk first."""
        if not self.shared:
            return
        if self.nbytes < _ZERO_SCAN:
            self.own()
            return
        src = self._raw[: self.nbytes]
        # np.empty: every chunk is written whole or copied before it is read (np.zeros costs a
        # memset or fresh pages' faults when the allocator reuses memory or not)
        self._raw = np.empty(max(align_up(self.nbytes), ALIGN), dtype=np.uint8)
        self._raw[self.nbytes :] = 0
        self.src = src
        self.npending = -(-self.nbytes // LAZY_CHUNK)
        self.pending = bytearray(b"\x01") * self.npending
        self._typed.clear()
        self._windows.clear()
        self.shared = False
        self.given = None

    def settle(self, lo: int, hi: int, covered: bool) -> None:
        """Bring the pending chunks that bytes [lo, hi] meet into raw: a copy of the caller's
        bytes, or nothing, when `covered` (a write about to replace every byte of [lo, hi]),
        for a chunk inside [lo, hi]."""
        pending = self.pending
        if pending is None:
            return
        c0, c1 = lo // LAZY_CHUNK, hi // LAZY_CHUNK + 1
        n = pending.count(1, c0, c1)
        if not n:
            return
        if covered:  # only the chunks at the two ends can stick out of [lo, hi]
            for c in {c0, c1 - 1}:
                a = c * LAZY_CHUNK
                b = min(a + LAZY_CHUNK, self.nbytes)
                if pending[c] and (a < lo or b - 1 > hi):
                    self._fill(a, b)
        else:
            for c in range(c0, c1):
                if pending[c]:
                    a = c * LAZY_CHUNK
                    self._fill(a, min(a + LAZY_CHUNK, self.nbytes))
        pending[c0:c1] = bytes(c1 - c0)
        self.npending -= n
        if not self.npending:
            self.pending = self.src = None

    def settle_all(self) -> None:
        if self.pending is not None:
            self.settle(0, self.nbytes - 1, False)

    def _fill(self, a: int, b: int) -> None:
        assert self.src is not None
        self._raw[a:b] = self.src[a:b]

    def contents(self, copy: bool = True) -> np.ndarray:
        """The array's current contents, in its own dtype and shape (without `copy`, for an
        array the run never wrote: a read-only view of the array it was given)."""
        if self.shared and self.given is not None:
            return self.given.copy() if copy else self.given
        assert self.dtype is not None and self.shape is not None
        count = int(math.prod(self.shape)) if self.shape else 1
        flat = self.raw[: count * self.dtype.itemsize].view(self.dtype)
        out = flat.reshape(self.shape)
        return out.copy() if copy else out


def _grow(arr: np.ndarray, n: int) -> np.ndarray:
    """`arr` followed by zeros (False, never written), n entries in all (np.zeros, not np.full:
    a fifth of the cost for a first scratchpad page)."""
    out = np.zeros(n, dtype=arr.dtype)
    if len(arr):
        out[: len(arr)] = arr
    return out


class GlobalMemory:
    """The byte-addressed global memory: argument arrays at 128-byte-aligned addresses."""

    def __init__(self) -> None:
        self.allocs: list[Allocation] = []
        self._bases: list[int] = []
        self.top = 0
        self._placed = 0  # allocations placed by place() (others are appended by the input probe)
        self._end = 0  # the end of the highest of them (base + max(nbytes, 1))

    def place(self, name: str, array: np.ndarray, address: int | None = None) -> Allocation:
        """Place `array`; returns its allocation (base address in bytes). The allocation reads
        the caller's array through a read-only view until its first write, which copies it
        (Allocation.own; a large array written by box stores, chunk by chunk as accesses reach
        it: own_lazy): arrays a run only reads are never copied, and the caller's arrays
        are never changed."""
        data = np.ascontiguousarray(array)
        if data.dtype.hasobject:
            raise fail("argument", f"array '{name}' holds Python objects (dtype {data.dtype}): only an array of "
                       "numbers has bytes to place in memory")
        nbytes = data.nbytes
        base = self.top if address is None else address
        if base % ALIGN:
            raise fail("argument", f"array '{name}' placed at byte address {base}, which is not {ALIGN}-byte aligned")
        # a view object of its own, read-only (its flag is not the caller's), and the bytes as a
        # view of it (read-only too)
        given = data.view()
        given.setflags(write=False)
        raw = (given if given.ndim == 1 else given.ravel()).view(_BYTE)
        alloc = Allocation(name, "global", base, raw, nbytes)
        alloc.shared = True
        alloc.given = given
        alloc.dtype = data.dtype
        alloc.shape = data.shape
        alloc.peak = nbytes
        end = base + (nbytes or 1)
        if len(self.allocs) == self._placed and base >= self._end:
            # above every allocation so far (the usual case: placed at the top): no overlap, last in order
            self.allocs.append(alloc)
            self._bases.append(base)
        else:
            for other in self.allocs:
                if base < other.base + max(other.nbytes, 1) and other.base < end:
                    raise fail("argument", f"array '{name}' at byte {base} overlaps array '{other.name}'")
            i = bisect.bisect(self._bases, base)
            self.allocs.insert(i, alloc)
            self._bases.insert(i, base)
        self._placed += 1
        if end > self._end:
            self._end = end
        top = align_up(end)
        if top > self.top:
            self.top = top
        return alloc

    def find(self, byte_address: int) -> Allocation | None:
        i = bisect.bisect_right(self._bases, byte_address) - 1
        if i < 0:
            return None
        a = self.allocs[i]
        limit = a.capacity if a.growable and a.capacity is not None else a.nbytes
        if byte_address < a.base + limit:
            return a
        return None


# ---------------------------------------------------------------------- views


class MemoryView:
    """A memref value: a strided interpretation of bytes of one memory."""

    __slots__ = (
        "space", "ct_id", "alloc", "addr", "sizes", "strides", "origin",
        "cset", "csyms", "dtype", "itemsize", "box_lo", "box_hi", "is_box", "resolver",
        "boff", "bstrides", "space_id",
    )

    def __init__(
        self,
        space: str,
        alloc: Allocation | None,
        addr: int,
        sizes: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype[Any],
        cset: CompiledSet | None = None,
        csyms: tuple[int, ...] = (),
        ct_id: int | None = None,
        origin: tuple[int, ...] | None = None,
        geometry: tuple[Any, ...] | None = None,
    ) -> None:
        self.space = space
        self.ct_id = ct_id
        self.alloc = alloc
        self.addr = addr  # byte address of the origin element in its memory
        self.dtype = dtype
        self.itemsize = dtype.itemsize
        self.sizes = sizes
        self.strides = strides
        self.cset = cset
        self.csyms = csyms
        self.resolver: Any = None
        # the valid coordinates: the box [box_lo, box_hi] (inclusive), plus the set's mask
        if geometry is not None:  # what geometry() returned for a view of the same set, sizes and strides
            self.origin, self.box_lo, self.box_hi, self.is_box, self.bstrides, origin_off = geometry
            self.boff = addr - (alloc.base if alloc is not None else 0) - origin_off
            self.space_id = SPACE_ID[space]
            return
        if cset is not None:
            pts = cset.points(csyms)
            self.origin = origin if origin is not None else (pts.lo if pts.count else tuple([0] * len(sizes)))
            lo = [max(a, b) for a, b in zip(pts.lo, self.origin, strict=True)]
            hi = [min(a + e - 1, b + s - 1) for a, e, b, s in zip(pts.lo, pts.ext, self.origin, sizes, strict=True)]
            self.is_box = pts.mask is None
            if pts.count == 0:
                hi = [x - 1 for x in lo]
        else:
            self.origin = origin if origin is not None else tuple([0] * len(sizes))
            lo = list(self.origin)
            hi = [o + s - 1 for o, s in zip(self.origin, sizes, strict=True)]
            self.is_box = True
        self.box_lo = tuple(lo)
        self.box_hi = tuple(hi)
        # byte strides, and the byte offset (within the allocation) of coordinate 0
        self.bstrides = tuple(st * self.itemsize for st in strides)
        self.boff = addr - (alloc.base if alloc is not None else 0) - sum(
            o * st for o, st in zip(self.origin, self.bstrides, strict=True))
        self.space_id = SPACE_ID[space]

    def geometry(self) -> tuple[Any, ...]:
        """What depends only on the coordinate set, its symbols, the sizes, strides and dtype
        (the last entry: the origin's byte offset from coordinate 0)."""
        return self.origin, self.box_lo, self.box_hi, self.is_box, self.bstrides, sum(
            o * st for o, st in zip(self.origin, self.bstrides, strict=True))

    @property
    def elem0(self) -> int:
        """Element index (in this view's dtype) of the origin element within its allocation."""
        assert self.alloc is not None
        return (self.addr - self.alloc.base) // self.itemsize

    @property
    def rank(self) -> int:
        return len(self.sizes)

    def describe(self) -> str:
        where = self.space if self.ct_id is None else f"{self.space}, ct_id = {self.ct_id}"
        name = f" (array '{self.alloc.name}')" if self.alloc is not None and self.space == "global" else ""
        return f"view at element address {self.addr // self.itemsize} in {where}{name}"

    def contains_box(self, lo: tuple[int, ...], ext: tuple[int, ...]) -> bool:
        for a, e, b, h in zip(lo, ext, self.box_lo, self.box_hi, strict=True):
            if a < b or a + e - 1 > h:
                return False
        if self.is_box:
            return True
        assert self.cset is not None
        return self.cset.contains_box(lo, ext, self.csyms)

    def contains(self, coords: Sequence[Any]) -> np.ndarray:
        """Membership of points (one int64 array per dimension)."""
        ok = np.ones(np.broadcast_shapes(*(c.shape for c in coords)), dtype=bool)
        for c, b, h in zip(coords, self.box_lo, self.box_hi, strict=True):
            ok &= (c >= b) & (c <= h)
        if not self.is_box:
            assert self.cset is not None
            ok &= self.cset.contains(coords, self.csyms)
        return ok


class DistributedView:
    """construct_distributed_memory_view: global coordinates routed to partition views."""

    __slots__ = ("parts", "shape", "dtype", "itemsize", "last_box")

    def __init__(self, parts: list[MemoryView], shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.parts = parts
        self.shape = shape
        self.dtype = dtype
        self.itemsize = dtype.itemsize
        # (lower corner, extents, pieces) of the last box routed (access.box_parts): an access
        # tile is routed when it is made and again by its load or store
        self.last_box: tuple[Any, Any, Any] | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)


# ---------------------------------------------------------------------- access descriptors


class BoxDesc:
    """Bytes b0 + sum(i[d] * bstrides[d]) + j for i in the box `ext`, j < itemsize.

    `lo`/`hi` is the byte span (inclusive); the strides are positive (views require it).
    """

    __slots__ = ("b0", "ext", "bstrides", "itemsize", "lo", "hi")

    def __init__(self, b0: int, ext: tuple[int, ...], bstrides: tuple[int, ...], itemsize: int, hi: int | None = None) -> None:
        self.b0 = b0
        self.ext = ext
        self.bstrides = bstrides
        self.itemsize = itemsize
        self.lo = b0
        if hi is None:
            hi = b0 + itemsize - 1
            for e, st in zip(ext, bstrides, strict=True):
                if e == 0:
                    hi = b0 - 1
                    break
                hi += (e - 1) * st
        self.hi = hi

    def span(self) -> tuple[int, int]:
        return self.lo, self.hi

    def dense(self) -> bool:
        """Whether the box covers every byte from its first to its last: its dimensions of
        extent above 1, by increasing stride, each step over exactly the ones before it (a
        contiguous row, a block of whole rows, a one-row slice of a matrix)."""
        size = self.itemsize
        for st, e in sorted(zip(self.bstrides, self.ext, strict=True)):
            if e == 0:
                return False
            if e > 1:
                if st != size:
                    return False
                size *= e
        return True

    def count(self) -> int:
        n = 1
        for e in self.ext:
            n *= e
        return n

    def cells(self, arr: np.ndarray, shift: int = 0) -> np.ndarray:
        """A view of `arr` (one entry per byte) over the touched bytes, in traversal order
        (flat position p is byte p % itemsize of element p // itemsize)."""
        b0 = self.b0 - shift
        ext, bs, isz = self.ext, self.bstrides, self.itemsize
        if len(ext) == 1 and bs[0] == isz:
            return arr[b0 : b0 + ext[0] * isz]
        if len(ext) == 2 and bs[1] == isz and bs[0] >= ext[1] * isz and b0 + ext[0] * bs[0] <= len(arr):
            return arr[b0 : b0 + ext[0] * bs[0]].reshape(ext[0], bs[0])[:, : ext[1] * isz]
        a_isz = arr.itemsize
        return np.ndarray(
            shape=(*ext, isz),
            dtype=arr.dtype,
            buffer=arr,
            offset=b0 * a_isz,
            strides=(*(st * a_isz for st in bs), a_isz),
        )

    def element_of(self, flat: int) -> tuple[int, ...]:
        """Box index of the element at flat position `flat` of the cells array."""
        return tuple(int(x) for x in np.unravel_index(flat // self.itemsize, self.ext))


class IdxDesc:
    """Bytes offs[k] + j for each element byte offset offs[k], j < itemsize."""

    __slots__ = ("_offs", "_make", "itemsize", "lo", "hi")

    def __init__(self, offs: np.ndarray | None, itemsize: int, lo: int | None = None, hi: int | None = None,
                 make: Callable[[], np.ndarray] | None = None) -> None:
        # 1-D int64 element byte offsets; or None and `make`, which computes them when first
        # needed (a read that no race check looks at never needs them), with lo and hi given
        self._offs = offs
        self._make = make
        self.itemsize = itemsize
        if lo is not None and hi is not None:  # the caller knows the span (exact: min and max + itemsize - 1)
            self.lo, self.hi = lo, hi
        elif offs is not None and offs.size:
            self.lo, self.hi = int(offs.min()), int(offs.max()) + itemsize - 1
        else:
            self.lo, self.hi = 0, -1

    @property
    def offs(self) -> np.ndarray:
        if self._offs is None:
            assert self._make is not None
            self._offs = self._make()
            self._make = None
        return self._offs

    def span(self) -> tuple[int, int]:
        return self.lo, self.hi

    def count(self) -> int:
        return int(self.offs.size)

    def index(self, shift: int = 0) -> np.ndarray:
        if self.itemsize == 1:
            return self.offs - shift if shift else self.offs
        return ((self.offs - shift)[:, None] + np.arange(self.itemsize)).reshape(-1)

    def cells(self, arr: np.ndarray, shift: int = 0) -> np.ndarray:
        return arr[self.index(shift)]

    def element_of(self, flat: int) -> tuple[int, ...]:
        return (flat // self.itemsize,)


Desc = BoxDesc | IdxDesc


def assign_cells(arr: np.ndarray, desc: Desc, value: Any, shift: int = 0) -> None:
    if isinstance(desc, BoxDesc):
        desc.cells(arr, shift)[...] = value
    else:
        arr[desc.index(shift)] = value
