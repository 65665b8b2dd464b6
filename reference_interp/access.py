"""Access tiles and the loads and stores through them.

An access tile is a set of coordinates of a view (a memref view, a distributed view or a
tensor), with a traversal order:

- a *direct* tile (`construct_access_tile`) is the integer set translated by the base
  coordinates: a box `[lo, lo + ext)` plus, for non-rectangular sets, a mask;
- an *indirect* tile (`construct_indirect_access_tile`) carries its coordinates
  explicitly, one int64 array per view dimension, computed from the variable space.

The tile's shape is the bounding box of its set, permuted by its order map (tile
dimension r is set dimension `perm[r]`, the rightmost the innermost). `ktdp.load`
returns a tensor of that shape; positions of the box outside a non-rectangular set
(holes) read as zero, and `ktdp.store` leaves memory at holes untouched.

Loads and stores of boxes go through strided numpy views of the memory (no index
arrays); everything else gathers and scatters with one fancy-index operation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import KtirRuntimeError, fail
from .half import NARROW_FLOATS
from .memo import MISSING, Memo, ObjectMemo
from .memory import Allocation, BoxDesc, DistributedView, IdxDesc, MemoryView
from .races import RaceFound, UninitFound
from .runtime import TileContext


class AccessTile:
    """The run-time value of an `!ktdp.access_tile`."""

    __slots__ = ("view", "lo", "ext", "mask", "perm", "shape", "coords")

    def __init__(
        self,
        view: Any,
        ext: tuple[int, ...],
        perm: tuple[int, ...] | None,
        lo: tuple[int, ...] | None = None,
        mask: np.ndarray | None = None,
        coords: list[np.ndarray] | None = None,
    ) -> None:
        self.view = view
        self.lo = lo
        self.ext = ext
        self.mask = mask
        self.perm = perm  # None: identity order
        self.shape = ext if perm is None else tuple(ext[p] for p in perm)
        # explicit coordinates: broadcastable to ext (mask None) or 1-D over the set's points
        self.coords = coords

    @classmethod
    def box(cls, view: Any, lo: tuple[int, ...], ext: tuple[int, ...], perm: tuple[int, ...] | None,
            mask: np.ndarray | None, shape: tuple[int, ...]) -> AccessTile:
        """A direct tile (the hot path of construct_access_tile: no checks, no copies)."""
        tile = cls.__new__(cls)
        tile.view = view
        tile.lo = lo
        tile.ext = ext
        tile.mask = mask
        tile.perm = perm
        tile.shape = shape
        tile.coords = None
        return tile

    def points(self) -> list[np.ndarray]:
        """Coordinates of the tile's points: broadcastable to `ext`, or 1-D when masked."""
        if self.coords is not None:
            return self.coords
        assert self.lo is not None
        if self.mask is None:
            return [lo + g for lo, g in zip(self.lo, np.indices(self.ext, sparse=True), strict=True)]
        idx = np.nonzero(self.mask)
        return [lo + i for lo, i in zip(self.lo, idx, strict=True)]

    def nbytes(self, itemsize: int) -> int:
        n = int(self.mask.sum()) if self.mask is not None else int(math.prod(self.ext))
        return n * itemsize


def view_dtype(view: Any) -> np.dtype[Any]:
    if isinstance(view, MemoryView | DistributedView):
        return view.dtype
    return np.asarray(view).dtype


def where(view: MemoryView) -> str:
    alloc = view.alloc
    if view.space == "global" and alloc is not None:
        return f"global array '{alloc.name}'"
    if view.space == "ct_local" and alloc is not None:
        return f"the ct_local memory of tile {alloc.owner}"
    if view.space == "alloc" and alloc is not None:
        return f"{alloc.name}"
    return view.space


def _alloc(view: MemoryView) -> Allocation:
    if view.alloc is None:
        raise fail(
            "out-of-bounds",
            f"the {view.describe()} does not lie in any array of the run (global memory holds only the "
            "arrays passed as arguments and those placed with `ktir run --memory NAME=ADDRESS:PATH.npy`)",
        )
    return view.alloc


def _check_span(ctx: TileContext, view: MemoryView, alloc: Allocation, lo: int, hi: int, coord: Any) -> None:
    """Bytes [lo, hi] (relative to the allocation) must be addressable; grows scratchpads."""
    if hi < lo:
        return
    if lo < 0 or (not alloc.growable and hi >= alloc.nbytes):
        size = alloc.nbytes
        at_coord = f" at coordinate {coord}" if coord is not None else ""
        raise fail(
            "out-of-bounds",
            f"the access{at_coord} reaches byte {alloc.base + (lo if lo < 0 else hi)} of {where(view)}, which holds "
            f"bytes [{alloc.base}, {alloc.base + size}) (the {view.describe()})",
            coordinate=coord,
        )
    if alloc.growable:
        cap = alloc.capacity
        if cap is not None and hi >= cap:
            target = ctx.machine.options.target
            named = f" of target {target}" if target else ""
            at_coord = f" at coordinate {coord}" if coord is not None else ""
            raise fail(
                "capacity",
                f"ct_local access{at_coord} reaches byte {hi}, beyond the scratchpad capacity{named} ({cap} bytes)",
                coordinate=coord,
            )
        alloc.ensure(hi + 1)
    elif hi + 1 > alloc.peak:
        alloc.peak = hi + 1


def _raise_race(e: RaceFound, ctx: TileContext, view: MemoryView, coord: tuple[int, ...], writing: bool) -> KtirRuntimeError:
    mine = "writes" if writing else "reads"
    theirs = {"write-write": "wrote", "write-read": "wrote", "read-write": "read"}[e.kind]
    return fail(
        "race",
        f"data race on {where(view)} at coordinate {coord}: tile {ctx.tile} {mine} it here and tile "
        f"{e.other_tile} {theirs} it in {e.other_op}, and no inter-tile op orders the two",
        coordinate=coord,
    )


def _raise_uninit(view: MemoryView, coord: tuple[int, ...]) -> KtirRuntimeError:
    return fail("uninitialised", f"reads {where(view)} at coordinate {coord}, which was never written", coordinate=coord)


# ---------------------------------------------------------------------- box fast path


def _box(ctx: TileContext, view: MemoryView, lo: tuple[int, ...], ext: tuple[int, ...]) -> tuple[Allocation, BoxDesc]:
    alloc = view.alloc
    if alloc is None:
        _alloc(view)
    assert alloc is not None
    bs = view.bstrides
    if len(lo) == 1:
        off = view.boff + lo[0] * bs[0]
        hi = off + (ext[0] - 1) * bs[0] + view.itemsize - 1
    elif len(lo) == 2:
        off = view.boff + lo[0] * bs[0] + lo[1] * bs[1]
        hi = off + (ext[0] - 1) * bs[0] + (ext[1] - 1) * bs[1] + view.itemsize - 1
    else:
        off = view.boff
        hi = view.itemsize - 1
        for c, e, st in zip(lo, ext, bs, strict=True):
            off += c * st
            hi += (e - 1) * st
        hi += off
    if 0 in ext:
        hi = off - 1
    desc = BoxDesc(off, ext, bs, view.itemsize, hi)
    # a scratchpad needs the capacity check and growth only beyond its high-water mark
    if off < 0 or hi >= alloc.nbytes or (alloc.growable and hi >= alloc.peak):
        limit = (alloc.capacity if alloc.capacity is not None else 1 << 62) if alloc.growable else alloc.nbytes
        bad = _first_outside(lo, desc, limit) if off < 0 or hi >= limit else None
        _check_span(ctx, view, alloc, off, hi, bad)
    return alloc, desc


def _first_outside(lo: tuple[int, ...], desc: BoxDesc, limit: int) -> tuple[int, ...] | None:
    """The first coordinate (in traversal order) of a box access whose bytes leave [0, limit)."""
    if not desc.ext or 0 in desc.ext:
        return None
    grids = np.indices(desc.ext, sparse=True)
    start = desc.b0 + sum(g * s for g, s in zip(grids, desc.bstrides, strict=True))
    start = np.broadcast_to(start, desc.ext).reshape(-1)
    bad = (start < 0) | (start + desc.itemsize > limit)
    if not bad.any():
        return None
    return _box_coord(lo, desc, int(np.argmax(bad)) * desc.itemsize)


def _box_coord(lo: tuple[int, ...], desc: BoxDesc, flat: int) -> tuple[int, ...]:
    return tuple(a + i for a, i in zip(lo, desc.element_of(flat), strict=True))


def _strided(alloc: Allocation, dt: np.dtype[Any], desc: BoxDesc) -> np.ndarray:
    """A writable numpy view of the box (fast paths for contiguous rows)."""
    isz = desc.itemsize
    ext = desc.ext
    if desc.b0 % isz == 0:
        typed = alloc.typed(dt)
        start = desc.b0 // isz
        if len(ext) == 1 and desc.bstrides[0] == isz:
            return typed[start : start + ext[0]]
        if len(ext) == 2 and desc.bstrides[1] == isz and desc.bstrides[0] % isz == 0:
            row = desc.bstrides[0] // isz
            if row >= ext[1] and start + ext[0] * row <= len(typed):
                return typed[start : start + ext[0] * row].reshape(ext[0], row)[:, : ext[1]]
    return np.ndarray(shape=ext, dtype=dt, buffer=alloc.raw, offset=desc.b0, strides=desc.bstrides)


def _fast_1d(view: MemoryView, lo: tuple[int, ...], ext: tuple[int, ...]) -> tuple[Allocation, BoxDesc, np.ndarray] | None:
    """The common case in one step: a rank-1 contiguous box inside a fixed-size array."""
    alloc = view.alloc
    if alloc is None or len(lo) != 1 or view.strides[0] != 1:
        return None
    isz = view.itemsize
    off = view.boff + lo[0] * isz
    n = ext[0]
    hi = off + n * isz - 1
    if off < 0 or hi >= alloc.nbytes or n == 0 or off % isz or (alloc.growable and hi >= alloc.peak):
        return None
    start = off // isz
    # (not settled: the load or store settles its own span)
    return alloc, BoxDesc(off, ext, view.bstrides, isz, hi), alloc.typed(view.dtype, False)[start : start + n]


def _box_array(ctx: TileContext, view: MemoryView, lo: tuple[int, ...], ext: tuple[int, ...]) -> tuple[Any, BoxDesc, np.ndarray]:
    """The allocation, box descriptor and strided array of a view's box (1-D fast path first)."""
    alloc = view.alloc
    if alloc is not None and len(lo) > 1 and not alloc.growable:
        # a box inside a fixed-size array: _box's arithmetic, and no span check to make
        isz = view.itemsize
        off = view.boff
        hi = isz - 1
        for c, e, st in zip(lo, ext, view.bstrides):  # noqa: B905 - a view's rank, checked at construction
            off += c * st
            hi += (e - 1) * st
            if not e:
                break
        else:
            hi += off
            if off >= 0 and hi < alloc.nbytes and not off % isz:
                arr = alloc.windows(view.dtype, ext, view.bstrides, False)[off // isz]  # the box, as a view (not settled)
                return alloc, BoxDesc(off, ext, view.bstrides, isz, hi), arr
    fast = _fast_1d(view, lo, ext)
    if fast is not None:
        return fast
    alloc, desc = _box(ctx, view, lo, ext)
    return alloc, desc, _strided(alloc, view.dtype, desc)


def _remote(ctx: TileContext, key: int, nbytes: int) -> None:
    """Count bytes moved to (key = owner) or from (key = -owner - 1) another tile's scratchpad."""
    ctx.remote[key] = ctx.remote.get(key, 0) + nbytes


def _load_box(ctx: TileContext, view: MemoryView, lo: tuple[int, ...], ext: tuple[int, ...], opname: str) -> np.ndarray:
    alloc, desc, arr = _box_array(ctx, view, lo, ext)
    if ctx.race_on or alloc.init is not None:
        try:
            ctx.tracker.read(alloc, desc, ctx.tile, opname)
        except RaceFound as e:
            raise _raise_race(e, ctx, view, _box_coord(lo, desc, e.flat), False) from None
        except UninitFound as e:
            raise _raise_uninit(view, _box_coord(lo, desc, e.flat)) from None
    if alloc.pending is not None:
        alloc.settle(desc.lo, desc.hi, False)
    ctx.rd[view.space_id] += arr.size * desc.itemsize
    if view.ct_id is not None and view.ct_id != ctx.tile:
        _remote(ctx, view.ct_id, arr.size * desc.itemsize)
    # an array the run has not written yet is read in place (a read-only view): its first write
    # copies it (Allocation.own), so the view keeps the loaded contents, and values are never
    # written in place
    if alloc.shared:
        wide = ctx.machine.wide
        if wide is not None and arr.dtype in NARROW_FLOATS:
            wide.note(arr, (alloc, desc.b0, desc.ext, desc.bstrides, arr.dtype))
        return arr
    return arr.copy()


def _store_box(ctx: TileContext, view: MemoryView, lo: tuple[int, ...], ext: tuple[int, ...], data: np.ndarray, opname: str) -> None:
    if view.alloc is not None and view.alloc.shared:
        view.alloc.own_lazy()
    alloc, desc, arr = _box_array(ctx, view, lo, ext)
    if ctx.race_on or alloc.init is not None:
        try:
            ctx.tracker.write(alloc, desc, ctx.tile, opname)
        except RaceFound as e:
            raise _raise_race(e, ctx, view, _box_coord(lo, desc, e.flat), True) from None
    if alloc.pending is not None:  # after the checks: a store that fails leaves the chunks pending
        alloc.settle(desc.lo, desc.hi, desc.dense())
    arr[...] = data
    ctx.wr[view.space_id] += arr.size * desc.itemsize
    if view.ct_id is not None and view.ct_id != ctx.tile:
        _remote(ctx, -view.ct_id - 1, arr.size * desc.itemsize)


def load_box(ctx: TileContext, view: MemoryView, lo: tuple[int, ...], ext: tuple[int, ...], opname: str) -> np.ndarray:
    """The contents of the box [lo, lo + ext) of a view (a copy, or a read-only view of an
    array the run has not written), with every memory check (the caller checks the
    coordinates against the view)."""
    return _load_box(ctx, view, lo, ext, opname)


# ---------------------------------------------------------------------- gathers


def _elements(ctx: TileContext, view: MemoryView, coords: Sequence[Any]) -> tuple[Allocation, np.ndarray, IdxDesc]:
    alloc = view.alloc if view.alloc is not None else _alloc(view)
    isz = view.itemsize
    base = (view.addr - alloc.base) // isz
    terms = []
    for c, o, s in zip(coords, view.origin, view.strides, strict=True):
        if type(c) is not np.ndarray or c.dtype != np.int64:
            c = np.asarray(c, dtype=np.int64)
        base -= o * s
        terms.append(c if s == 1 else c * s)
    # base + sum of the terms, exact in int64 in any order: the base joins the smallest term, so
    # only the final sum spans the whole (broadcast) shape of the coordinates
    elem: Any = base
    if terms:
        terms.sort(key=np.size)
        elem = terms[0] + base
        for t in terms[1:]:
            elem = elem + t
    elem = np.asarray(elem, dtype=np.int64)
    flat = elem.reshape(-1)
    if not flat.size:
        return alloc, elem, IdxDesc(flat * isz, isz)
    first, last = int(flat.min()) * isz, int(flat.max()) * isz + isz - 1
    if first < 0 or last >= alloc.nbytes or alloc.growable:
        k = int(np.argmin(flat)) if first < 0 else int(np.argmax(flat))
        _check_span(ctx, view, alloc, first, last, _coord_at(coords, k, elem.shape))
    return alloc, elem, IdxDesc(flat * isz, isz, first, last)


def _coord_at(coords: Sequence[Any], k: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    full = np.broadcast_arrays(*[np.asarray(c) for c in coords]) if coords else []
    return tuple(int(np.asarray(c).reshape(-1)[k]) for c in full)


# Facts about coordinate arrays that cannot change: read-only arrays owning their data (the
# variable spaces of indirect tiles, shared by every execution). id -> (array, facts); the
# entry keeps the array alive, so the id is not reused while it is cached.
_FACTS: ObjectMemo[tuple[tuple[int, int], tuple[int, int] | None]] = ObjectMemo(256)


def coord_facts(c: np.ndarray) -> tuple[tuple[int, int], tuple[int, int] | None] | None:
    """(min, max) of a non-empty int64 coordinate array and, when it is a run start, start + 1,
    ... along its last axis only, (start, length); cached for immutable arrays, None for others."""
    if type(c) is not np.ndarray or c.flags.writeable or c.base is not None or not c.size or c.dtype != np.int64:
        return None
    hit = _FACTS.get(c)
    if hit is not MISSING:
        return hit
    flat = c.reshape(-1)
    bounds = (int(flat.min()), int(flat.max()))
    # a run spans exactly its length: the bounds rule most arrays out without the comparison
    run = _run_of(c) if bounds[1] - bounds[0] + 1 == flat.size else None
    return _FACTS.put(c, (bounds, run))


def _run_of(c: Any) -> tuple[int, int] | None:
    """(start, length) when `c`, a non-empty int64 array, is start, start + 1, ... along its
    last axis only; else None (coord_facts caches it for immutable arrays; _row_gather asks
    afresh of the others, computed at each execution, e.g. a column offset plus a variable)."""
    if type(c) is not np.ndarray or c.dtype != np.int64 or not c.size or any(d != 1 for d in c.shape[:-1]):
        return None
    flat = c.reshape(-1)
    start = int(flat[0])
    return (start, flat.size) if (flat == np.arange(start, start + flat.size)).all() else None


def _row_gather(ctx: TileContext, view: MemoryView, coords: Sequence[Any], opname: str) -> np.ndarray | None:
    """A gather whose last coordinate is one contiguous run shared by every point of the other
    coordinates (a table's rows, as in an embedding lookup): copies whole rows through a
    windowed view of the array. None when the access is not of that form or leaves the array
    (the general gather then reports it)."""
    alloc = view.alloc
    if alloc is None or alloc.growable or len(coords) < 2 or view.strides[-1] != 1:
        return None
    last = coords[-1]
    facts = coord_facts(last)
    run = facts[1] if facts is not None else _run_of(last)
    if run is None:
        return None
    start, n = run
    isz = view.itemsize
    base = (view.addr - alloc.base) // isz + start - view.origin[-1]
    rows: Any = None
    for c, o, s in zip(coords[:-1], view.origin, view.strides, strict=False):
        if type(c) is not np.ndarray or c.dtype != np.int64:
            return None
        base -= o * s
        t = c if s == 1 else c * s
        rows = t if rows is None else rows + t
    rows = rows + base
    if rows.ndim != last.ndim or rows.shape[-1] != 1 or not rows.size:
        return None
    flat = rows.reshape(-1)
    first, top = int(flat.min()), int(flat.max())
    if first < 0 or (top + n) * isz > alloc.nbytes:
        return None
    desc = IdxDesc(None, isz, first * isz, (top + n) * isz - 1,
                   make=lambda: (flat[:, None] + np.arange(n)).reshape(-1) * isz)  # elements in C order
    if ctx.race_on or alloc.init is not None:
        try:
            ctx.tracker.read(alloc, desc, ctx.tile, opname)
        except RaceFound as e:
            raise _raise_race(e, ctx, view, _coord_at(coords, e.flat // isz, ()), False) from None
        except UninitFound as e:
            raise _raise_uninit(view, _coord_at(coords, e.flat // isz, ())) from None
    ctx.rd[view.space_id] += flat.size * n * isz
    if view.ct_id is not None and view.ct_id != ctx.tile:
        _remote(ctx, view.ct_id, flat.size * n * isz)
    typed = alloc.typed(view.dtype)
    windows = np.ndarray(shape=(len(typed) - n + 1, n), dtype=typed.dtype, buffer=typed, strides=(isz, isz))
    return windows[flat].reshape(rows.shape[:-1] + (n,))


def gather(ctx: TileContext, view: Any, coords: Sequence[Any], opname: str) -> np.ndarray:
    """Values of `view` at the given coordinates (arrays broadcast together)."""
    if isinstance(view, MemoryView):
        rows = _row_gather(ctx, view, coords, opname)
        if rows is not None:
            return rows
        alloc, elem, desc = _elements(ctx, view, coords)
        if ctx.race_on or alloc.init is not None:
            try:
                ctx.tracker.read(alloc, desc, ctx.tile, opname)
            except RaceFound as e:
                raise _raise_race(e, ctx, view, _coord_at(coords, e.flat // desc.itemsize, elem.shape), False) from None
            except UninitFound as e:
                raise _raise_uninit(view, _coord_at(coords, e.flat // desc.itemsize, elem.shape)) from None
        ctx.rd[view.space_id] += elem.size * view.itemsize
        if view.ct_id is not None and view.ct_id != ctx.tile:
            _remote(ctx, view.ct_id, elem.size * view.itemsize)
        return alloc.typed(view.dtype)[elem]
    if isinstance(view, DistributedView):
        return _gather_distributed(ctx, view, coords, opname)
    arr = np.asarray(view)
    full = np.broadcast_arrays(*coords) if coords else []
    for d, (c, n) in enumerate(zip(full, arr.shape, strict=True)):
        if c.size and (c.min() < 0 or c.max() >= n):
            raise fail("out-of-view", f"coordinate outside the tensor's shape {arr.shape} in dimension {d}")
    return arr[tuple(full)] if full else arr[()]


def _first_duplicate(flat: np.ndarray) -> tuple[int, int] | None:
    """The first two positions of `flat` (int64) holding the same value, or None."""
    if flat.size < 2:
        return None
    low = int(flat.min())
    span = int(flat.max()) - low + 1
    if span <= 4 * flat.size + 64:  # counting beats sorting on dense index ranges
        counts = np.bincount(flat - low, minlength=span)
        if counts.max() <= 1:
            return None
        twice = int(np.argmax(counts > 1)) + low
    else:
        ordered = np.sort(flat)
        same = ordered[1:] == ordered[:-1]
        if not same.any():
            return None
        twice = int(ordered[int(np.argmax(same))])
    first, second = np.nonzero(flat == twice)[0][:2]
    return int(first), int(second)


def _check_conflict(view: MemoryView, coords: Sequence[Any], elem: np.ndarray) -> None:
    """runtime.store-conflict when two points of one store reach the same element."""
    dup = _first_duplicate(elem.reshape(-1))
    if dup is None:
        return
    a, b = (_coord_at(coords, k, elem.shape) for k in dup)
    why = f"the access tile holds coordinate {a} twice" if a == b else (
        f"the view's strides {list(view.strides)} map coordinates {a} and {b} to it")
    raise fail("store-conflict", f"one store writes element {int(elem.reshape(-1)[dup[0]])} of {where(view)} twice: {why}",
               coordinate=b)


def box_injective(ext: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether distinct points of the box `ext` reach distinct elements under `strides`."""
    if len(strides) == 1:
        return strides[0] != 0 or ext[0] <= 1
    if len(strides) == 2 and strides[1] == 1 and (strides[0] >= ext[1] or ext[0] <= 1):
        return True
    key = (ext, strides)
    found = _INJECTIVE.get(key)
    if found is MISSING:
        return _INJECTIVE.put(key, _injective(ext, strides))
    return found


_INJECTIVE: Memo[tuple[tuple[int, ...], tuple[int, ...]], bool] = Memo(1024)


def _injective(ext: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    if 0 in ext:
        return True
    # each stride beyond the reach of the smaller ones: a mixed-radix numbering, injective
    reach = 0
    for e, st in sorted(((e, abs(st)) for e, st in zip(ext, strides, strict=True) if e > 1), key=lambda x: x[1]):
        if st <= reach:
            break
        reach += (e - 1) * st
    else:
        return True
    grids = np.indices(ext, sparse=True)
    elem = sum((g * st for g, st in zip(grids, strides, strict=True)), np.zeros((), np.int64))
    flat = np.broadcast_to(elem, ext).reshape(-1)
    return _first_duplicate(np.asarray(flat, dtype=np.int64)) is None


def scatter(ctx: TileContext, view: Any, coords: Sequence[Any], values: np.ndarray, opname: str,
            check_conflicts: bool = False) -> None:
    """Write `values` at the coordinates; `check_conflicts` when points may share an element
    (indirect coordinates, self-aliasing strides)."""
    if isinstance(view, MemoryView):
        alloc, elem, desc = _elements(ctx, view, coords)
        alloc.own()
        if check_conflicts:
            _check_conflict(view, coords, elem)
        try:
            ctx.tracker.write(alloc, desc, ctx.tile, opname)
        except RaceFound as e:
            raise _raise_race(e, ctx, view, _coord_at(coords, e.flat // desc.itemsize, elem.shape), True) from None
        alloc.typed(view.dtype)[elem] = values
        ctx.wr[view.space_id] += elem.size * view.itemsize
        if view.ct_id is not None and view.ct_id != ctx.tile:
            _remote(ctx, -view.ct_id - 1, elem.size * view.itemsize)
        return
    if isinstance(view, DistributedView):
        _scatter_distributed(ctx, view, coords, values, opname, check_conflicts)
        return
    raise fail("type", "ktdp.store into an access tile of a tensor (tensors are values; store into a memref view)")


def box_parts(view: DistributedView, lo: tuple[int, ...], ext: tuple[int, ...]) -> list[tuple[MemoryView, tuple[int, ...], tuple[int, ...]]] | None:
    """The box [lo, lo + ext) of a distributed view cut along its partitions: (partition, lower
    corner, extents) of each non-empty piece, when every partition is a box (its set is its
    bounding box) and the pieces cover the box exactly once. None otherwise (route() then
    checks point by point and names the first bad coordinate). O(partitions^2) integer
    arithmetic, whatever the box's size."""
    last = view.last_box
    if last is not None and last[0] == lo and last[1] == ext:
        return last[2]  # type: ignore[no-any-return]
    found = _box_parts(view, lo, ext)
    view.last_box = (lo, ext, found)
    return found


def _box_parts(view: DistributedView, lo: tuple[int, ...], ext: tuple[int, ...]) -> list[tuple[MemoryView, tuple[int, ...], tuple[int, ...]]] | None:
    pieces = []
    total = 0
    for part in view.parts:
        if not part.is_box or len(part.box_lo) != len(lo):
            return None
        plo, pext = [], []
        n = 1
        for a, e, b, h in zip(lo, ext, part.box_lo, part.box_hi, strict=True):
            x = a if a > b else b
            y = a + e - 1 if a + e - 1 < h else h
            if y < x:
                n = 0
                break
            plo.append(x)
            pext.append(y - x + 1)
            n *= y - x + 1
        if n:
            pieces.append((part, tuple(plo), tuple(pext)))
            total += n
    if total != math.prod(ext):
        return None
    for i, (_, alo, aext) in enumerate(pieces):  # disjoint pieces whose sizes add up to the box: a partition of it
        for _, blo, bext in pieces[i + 1 :]:
            if all(x < y + f and y < x + e for x, e, y, f in zip(alo, aext, blo, bext, strict=True)):
                return None
    return pieces


def _piece_slices(lo: tuple[int, ...], plo: tuple[int, ...], pext: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(x - a, x - a + e) for a, x, e in zip(lo, plo, pext, strict=True))


def _load_distributed_box(ctx: TileContext, view: DistributedView, lo: tuple[int, ...], ext: tuple[int, ...],
                          opname: str) -> np.ndarray | None:
    pieces = box_parts(view, lo, ext)
    if pieces is None:
        return None
    if len(pieces) == 1:
        part, plo, pext = pieces[0]
        return _load_box(ctx, part, plo, pext, opname)
    out = np.empty(ext, dtype=view.dtype)
    for part, plo, pext in pieces:
        out[_piece_slices(lo, plo, pext)] = _load_box(ctx, part, plo, pext, opname)
    return out


def _store_distributed_box(ctx: TileContext, view: DistributedView, lo: tuple[int, ...], ext: tuple[int, ...],
                           data: np.ndarray, opname: str) -> bool:
    pieces = box_parts(view, lo, ext)
    if pieces is None or not all(box_injective(pext, part.strides) for part, _, pext in pieces):
        return False
    for part, plo, pext in pieces:
        _store_box(ctx, part, plo, pext, data[_piece_slices(lo, plo, pext)], opname)
    return True


def route(view: DistributedView, coords: Sequence[Any]) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """For each partition, the mask of points it holds; every point must be in exactly one."""
    full = np.broadcast_arrays(*[np.asarray(c) for c in coords])
    shape = full[0].shape if full else ()
    count = np.zeros(shape, dtype=np.int32)
    masks = []
    for part in view.parts:
        m = part.contains(list(full))
        masks.append(m)
        count += m
    if not (count == 1).all():
        k = int(np.argmax(count != 1))
        coord = tuple(int(c.reshape(-1)[k]) for c in full)
        n = int(count.reshape(-1)[k])
        what = "no partition holds it" if n == 0 else f"{n} partitions hold it"
        raise fail("out-of-view", f"coordinate {coord} of the distributed view: {what}", coordinate=coord)
    return masks, shape


def _gather_distributed(ctx: TileContext, view: DistributedView, coords: Sequence[Any], opname: str) -> np.ndarray:
    masks, shape = route(view, coords)
    full = np.broadcast_arrays(*[np.asarray(c) for c in coords])
    out = np.zeros(shape, dtype=view.dtype)
    for part, m in zip(view.parts, masks, strict=True):
        if m.any():
            out[m] = gather(ctx, part, [c[m] for c in full], opname)
    return out


def _scatter_distributed(ctx: TileContext, view: DistributedView, coords: Sequence[Any], values: np.ndarray, opname: str,
                         check_conflicts: bool) -> None:
    masks, shape = route(view, coords)
    full = np.broadcast_arrays(*[np.asarray(c) for c in coords])
    vals = np.broadcast_to(values, shape)
    for part, m in zip(view.parts, masks, strict=True):
        if m.any():
            scatter(ctx, part, [c[m] for c in full], vals[m], opname,
                    check_conflicts or not box_injective(part.sizes, part.strides))


# ---------------------------------------------------------------------- load / store


def load(ctx: TileContext, tile: AccessTile, opname: str) -> np.ndarray:
    view = tile.view
    if tile.coords is None and tile.mask is None and tile.perm is None and type(view) is MemoryView:
        return _load_box(ctx, view, tile.lo, tile.ext, opname)  # type: ignore[arg-type]
    if tile.coords is None and tile.mask is None:
        assert tile.lo is not None
        if type(view) is MemoryView:
            data = _load_box(ctx, view, tile.lo, tile.ext, opname)
        elif type(view) is DistributedView and (box := _load_distributed_box(ctx, view, tile.lo, tile.ext, opname)) is not None:
            data = box
        elif isinstance(view, np.ndarray):
            data = np.array(view[tuple(slice(a, a + e) for a, e in zip(tile.lo, tile.ext, strict=True))])
        else:
            data = gather(ctx, view, tile.points(), opname)
    else:
        values = gather(ctx, view, tile.points(), opname)
        if tile.mask is not None:
            data = np.zeros(tile.ext, dtype=values.dtype)
            data[tile.mask] = values
        elif type(view) is MemoryView and values.shape == tile.ext:
            data = values  # a fancy-indexed gather is already a fresh array
        else:
            data = np.array(np.broadcast_to(values, tile.ext))
    if tile.perm is not None:
        data = data.transpose(tile.perm)
    return data


def store(ctx: TileContext, tile: AccessTile, data: np.ndarray, opname: str) -> None:
    view = tile.view
    if data.shape != tile.shape:
        raise fail("type", f"data of shape {data.shape} stored into an access tile of shape {tile.shape}")
    dt = view.dtype if type(view) is MemoryView else view_dtype(view)
    if data.dtype != dt:
        raise fail("type", f"data of element type {data.dtype} stored into a view of element type {dt}")
    if tile.perm is not None:
        data = data.transpose(np.argsort(tile.perm))
    direct = tile.coords is None
    aliasing = type(view) is MemoryView and not box_injective(tile.ext, view.strides)
    if direct and tile.mask is None and type(view) is MemoryView and not aliasing:
        assert tile.lo is not None
        _store_box(ctx, view, tile.lo, tile.ext, data, opname)
        return
    if direct and tile.mask is None and type(view) is DistributedView:
        assert tile.lo is not None
        if _store_distributed_box(ctx, view, tile.lo, tile.ext, data, opname):
            return
    values = data[tile.mask] if tile.mask is not None else data
    scatter(ctx, view, tile.points(), values, opname, check_conflicts=not direct or aliasing)
