"""Lockstep access tiles, loads and stores (see lockstep.py).

A laned access tile (`LTile`) keeps its base view and shape once and, per lane, its lower
corner (direct tiles) or its coordinate arrays (indirect tiles), as arrays with the lane
dimensions in front. A load or store of a box tile computes every lane's byte offset at
once and moves all the lanes' boxes with one numpy operation: a strided "windows" view of
the allocation (one window per element address, shaped like the box) indexed by the lanes'
element addresses. Every check of the per-tile path runs over all lanes: coordinates in the
view, bytes in the allocation or scratchpad capacity, alignment; each tile's accesses go to
the race tracker (which also checks reads of unwritten scratchpad bytes) as one descriptor
per tile (a box with the iterations as extra dimensions when they are evenly spaced, else
the list of bytes). Any failure gives up lockstep (`Diverged`): the per-tile run reports it.

What an access computes from the lanes' coordinates and the view's geometry alone (byte
offsets, the bounds checks, the descriptors per tile: `box_plan`, and through the indirect
tile's memo in lockstep_ops `gather_plan` of the index gathers) is remembered by exactly those
values, as a loop's accesses repeat in every run of a kernel; a check that failed is never
remembered. What depends on memory (gathered indices, the data, the race tracker's records,
statistics) is done in every run.

What has no vectorised form here (masked tiles, tensor bases, scatters through indirect
tiles, aliasing strides) runs lane by lane through the per-tile functions themselves, with
each lane's own tile context; inside a vectorised loop it gives up instead, as the byte
spans of the iterations could not be checked.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import access
from .access import AccessTile, box_injective
from .lockstep import Diverged, Lanes, PerTile, subset
from .memo import MISSING, Memo
from .memory import BoxDesc, Desc, DistributedView, IdxDesc, MemoryView
from .races import RaceFound, UninitFound

I64 = np.int64


class LTile:
    """A laned access tile: `lo` (direct) or `coords` (indirect) carry the lane dimensions."""

    __slots__ = ("view", "lo", "ext", "mask", "perm", "shape", "coords", "parts", "rank", "cbounds")

    def __init__(self, view: Any, ext: tuple[int, ...], perm: tuple[int, ...] | None, shape: tuple[int, ...],
                 rank: int, lo: tuple[np.ndarray, ...] | None = None, mask: np.ndarray | None = None,
                 coords: list[np.ndarray] | None = None, parts: np.ndarray | None = None,
                 cbounds: list[tuple[int, int]] | None = None) -> None:
        self.view = view
        self.ext = ext
        self.perm = perm
        self.shape = shape
        self.rank = rank  # lane dimensions
        self.lo = lo
        self.mask = mask
        self.coords = coords
        self.parts = parts  # distributed base: the partition of each lane's box (-1: none checked)
        self.cbounds = cbounds  # indirect: each coordinate's (min, max) over the lanes, when known

    def expand(self, rank: int) -> LTile:
        def ex(a: np.ndarray) -> np.ndarray:
            return a.reshape(a.shape[:rank] + (1,) + a.shape[rank:])

        return LTile(self.view, self.ext, self.perm, self.shape, rank + 1,
                     lo=tuple(ex(a) for a in self.lo) if self.lo is not None else None, mask=self.mask,
                     coords=[ex(c) for c in self.coords] if self.coords is not None else None,
                     parts=ex(self.parts) if self.parts is not None else None, cbounds=self.cbounds)

    def subset(self, idx: np.ndarray, n: int) -> LTile:
        """The tile of the lanes at positions `idx` of its `n` (tile rank: lockstep.subset).
        The coordinates' bounds stay those over every lane: they enclose the selected lanes'."""
        if self.rank != 1:
            raise Diverged("a tile of vectorised iterations restricted to some tiles")
        view = subset(self.view, idx, n) if type(self.view) is PerTile else self.view  # else the same for every lane
        return LTile(view, self.ext, self.perm, self.shape, 1,
                     lo=tuple(subset(a, idx, n) for a in self.lo) if self.lo is not None else None, mask=self.mask,
                     coords=[subset(c, idx, n) for c in self.coords] if self.coords is not None else None,
                     parts=subset(self.parts, idx, n) if self.parts is not None else None, cbounds=self.cbounds)

    def item(self, idx: tuple[int, ...]) -> AccessTile:
        view = self.view.items[idx[0]] if type(self.view) is PerTile else self.view

        def at(a: np.ndarray) -> Any:
            return a[tuple(i if n > 1 else 0 for i, n in zip(idx, a.shape[: self.rank], strict=True))]

        if self.coords is not None:
            return AccessTile(view, self.ext, self.perm, mask=self.mask, coords=[np.asarray(at(c)) for c in self.coords])
        assert self.lo is not None
        return AccessTile.box(view, tuple(int(at(a)) for a in self.lo), self.ext, self.perm, self.mask, self.shape)


def as_ltile(tile: Any, rank: int) -> LTile:
    """A uniform access tile as a laned one (every lane the same)."""
    if type(tile) is LTile:
        return tile
    if not isinstance(tile, AccessTile):
        raise Diverged("the operand is not an access tile")
    one = (1,) * rank
    if tile.coords is not None:
        return LTile(tile.view, tile.ext, tile.perm, tile.shape, rank, mask=tile.mask,
                     coords=[np.asarray(c, dtype=I64).reshape(one + np.shape(c)) for c in tile.coords])
    assert tile.lo is not None
    return LTile(tile.view, tile.ext, tile.perm, tile.shape, rank, lo=tuple(np.full(one, a, dtype=I64) for a in tile.lo),
                 mask=tile.mask)


# ---------------------------------------------------------------------- descriptors per tile


def _squeeze_broadcast(a: np.ndarray) -> np.ndarray:
    """Drop the dimensions along which `a` repeats (broadcast, or of size 1)."""
    for k in reversed(range(a.ndim)):
        if a.shape[k] == 1 or a.strides[k] == 0:
            a = a.take(0, axis=k)
    return a


def tile_desc(offs: np.ndarray, ext: tuple[int, ...], bstrides: tuple[int, ...], isz: int) -> Desc:
    """The bytes one tile's lanes access: boxes of `ext` at byte offsets `offs` (one per lane)."""
    if not np.ndim(offs):
        return BoxDesc(int(offs), ext, bstrides, isz)
    offs = _squeeze_broadcast(np.asarray(offs))
    if offs.ndim == 0:
        return BoxDesc(int(offs), ext, bstrides, isz)
    if offs.size and 0 not in ext:
        # every dimension left has 2 or more lanes: a box when evenly spaced with positive steps
        lat = _lattice(offs, True)
        if lat is not None:
            first, steps = lat
            return BoxDesc(first, (*offs.shape, *ext), (*steps, *bstrides), isz)
    rel = _box_rel(ext, bstrides)
    return IdxDesc((offs.reshape(-1, 1) + rel.reshape(1, -1)).reshape(-1), isz)


def lattice_descs(lat: tuple[int, tuple[int, ...]], shape: tuple[int, ...], ext: tuple[int, ...],
                  bstrides: tuple[int, ...], isz: int) -> list[tuple[int, Desc]]:
    """Each tile's descriptor, as tile_desc makes it from the tile's offsets, for lanes (`shape`,
    tiles first) whose offsets are the strict lattice `lat`: tile t's offsets are the lattice
    from first + t * step0 over the other lane dimensions, those of one lane dropped."""
    first, steps = lat
    dims = [(n, st) for n, st in zip(shape[1:], steps[1:], strict=True) if n > 1]
    lane_ext = tuple(n for n, _ in dims)
    lane_steps = tuple(st for _, st in dims)
    return [(t, BoxDesc(first + t * steps[0], (*lane_ext, *ext), (*lane_steps, *bstrides), isz))
            for t in range(shape[0])]


def _box_rel(ext: tuple[int, ...], bstrides: tuple[int, ...]) -> np.ndarray:
    rel = np.zeros(ext, dtype=I64)
    for d, (e, s) in enumerate(zip(ext, bstrides, strict=True)):
        rel = rel + np.arange(e, dtype=I64).reshape([-1 if j == d else 1 for j in range(len(ext))]) * s
    return rel


def _track(lanes: Lanes, alloc: Any, per_tile: list[tuple[int, Any]], make: Any, write: bool,
           opname: str) -> None:
    """Report each tile's accesses to the race tracker (`per_tile`: (tile, x) where make(x) is
    the descriptor of the tile's accesses: x the byte offsets of its lanes, or the tile)."""
    if not lanes.race_on and alloc.init is None:
        return
    tracker = lanes.tracker
    sync = lanes.sync
    if sync is None:
        items = per_tile if make is _same else [(t, make(offs)) for t, offs in per_tile]
        try:
            (tracker.write_all if write else tracker.read_all)(alloc, items, opname)
        except (RaceFound, UninitFound) as e:
            raise Diverged(f"the race tracker: {type(e).__name__}") from None
        return
    for t, offs in per_tile:
        desc = make(offs)
        try:
            if sync is not None:  # checked now (clocks of the chunk's start), recorded after the chunk
                if write:
                    tracker.check_write(alloc, desc, t)
                else:
                    tracker.check_read(alloc, desc, t)
                sync.deferred.append((alloc, desc, t, opname, write))
            elif write:
                tracker.write(alloc, desc, t, opname)
            else:
                tracker.read(alloc, desc, t, opname)
        except (RaceFound, UninitFound) as e:
            raise Diverged(f"the race tracker: {type(e).__name__}") from None


def _same(x: Any) -> Any:
    return x


_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


def minmax(a: np.ndarray) -> tuple[int, int]:
    """The least and greatest entry of a non-empty integer array, as Python ints (a handful of
    entries: in Python, quicker than two numpy reductions)."""
    if a.size <= 32:
        vals = a.reshape(-1).tolist()
        return min(vals), max(vals)
    return int(_MIN(a, axis=None)), int(_MAX(a, axis=None))


def _bcast(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """np.broadcast_to, without its cost when `a` has the shape already (read-only use)."""
    return a if a.shape == shape else np.broadcast_to(a, shape)


def _split(off: np.ndarray, sel: Any, shape: tuple[int, ...]) -> tuple[list[tuple[int, np.ndarray]], np.ndarray, np.ndarray | None]:
    """For the lanes `sel` selects (None: all; int t: tile t's; bool array), whose byte
    offsets are `off` (shaped like the selection): the offsets per tile, and the offsets over
    the whole lane shape with the mask of selected lanes (None: all)."""
    n = shape[0]
    if sel is None:
        whole = off if off.shape == shape else np.broadcast_to(off, shape)
        return [(t, whole[t]) for t in range(n)], whole, None
    if isinstance(sel, int):
        whole = np.zeros(shape, dtype=I64)
        whole[sel] = off
        mask = np.zeros(shape, dtype=bool)
        mask[sel] = True
        return [(sel, np.broadcast_to(off, shape[1:]))], whole, mask
    sel = np.broadcast_to(sel, shape)
    whole = np.zeros(shape, dtype=I64)
    whole[sel] = off
    return [(t, whole[t][sel[t]]) for t in range(n) if sel[t].any()], whole, sel


def _regions(lanes: Lanes, alloc: Any, whole: np.ndarray, mask: np.ndarray | None, span: int, write: bool,
             plan: BoxPlan | None = None) -> None:
    """Report the byte spans of the lanes to the vectorised loops in progress (unselected
    lanes: an empty span that every merge ignores). `plan`: the box plan of every lane, whose
    spans' ends it holds."""
    if not lanes.regions:
        return
    if plan is not None:
        for region in lanes.regions:
            region.access(alloc, plan.whole, plan.ends, write, plan.ordered)
        return
    lo = _bcast(whole, lanes.shape)
    if mask is None:
        hi = lo + span
    else:
        hi = np.where(mask, lo + span, -1)
        lo = np.where(mask, lo, np.iinfo(I64).max)
    for region in lanes.regions:
        region.access(alloc, lo, _bcast(hi, lanes.shape), write)


def _no_overlap(lo: np.ndarray, hi: np.ndarray) -> None:
    """Distinct lanes of one store write disjoint bytes (checked when no tracker sees them)."""
    shape = np.broadcast_shapes(np.shape(lo), np.shape(hi))
    lo = np.broadcast_to(lo, shape).reshape(-1)
    hi = np.broadcast_to(hi, shape).reshape(-1)
    if lo.size < 2:
        return
    order = np.argsort(lo, kind="stable")
    if (hi[order][:-1] >= lo[order][1:]).any():
        raise Diverged("lanes of one store overlap")


# ---------------------------------------------------------------------- box groups


def _groups(lt: LTile, lanes: Lanes) -> list[tuple[MemoryView, Any]] | None:
    """The views a box tile's lanes reach: (view, lane selector) with selector None (all
    lanes), an int (the lanes of one tile) or a bool array over the lanes. None: no
    vectorised form."""
    view = lt.view
    if type(view) is MemoryView:
        return [(view, None)]
    if type(view) is PerTile:
        if not all(type(v) is MemoryView for v in view.items):
            return None
        return [(v, t) for t, v in enumerate(view.items)]
    if type(view) is DistributedView and lt.parts is not None:
        parts = np.broadcast_to(lt.parts, lanes.shape)
        return [(p, parts == k) for k, p in enumerate(view.parts) if (parts == k).any()]
    return None


def _select(a: np.ndarray, sel: Any, shape: tuple[int, ...]) -> np.ndarray:
    if sel is None:
        return a
    if isinstance(sel, int):
        return a[sel] if a.shape[0] > 1 else a[0]
    return np.broadcast_to(a, shape)[sel]


def _offsets(view: MemoryView, lo: tuple[np.ndarray, ...]) -> np.ndarray:
    off: Any = view.boff
    for a, s in zip(lo, view.bstrides, strict=True):
        off = off + a * s
    return np.asarray(off, dtype=I64)


def _span(ext: tuple[int, ...], bstrides: tuple[int, ...], isz: int) -> int:
    """Bytes from a box's first byte to its last (inclusive), -1 when empty."""
    if 0 in ext:
        return -1
    return sum((e - 1) * s for e, s in zip(ext, bstrides, strict=True)) + isz - 1


def _bounds(lanes: Lanes, view: MemoryView, off: np.ndarray, span: int,
            lat: tuple[int, tuple[int, ...]] | None = None) -> Any:
    """The allocation, after checking (and for scratchpads, growing to) every lane's bytes
    (`lat`: the offsets' lattice, when known: their bounds and alignment without a pass)."""
    alloc = view.alloc
    if alloc is None:
        raise Diverged("a view outside every array")
    if span < 0 or not off.size:
        return alloc
    isz = view.itemsize
    if lat is not None:
        # offsets first + sum(i * step), steps >= 0: all aligned iff the first and every step
        # of a dimension with several lanes are
        first, steps = lat
        lo = first
        hi = first + sum((n - 1) * st for n, st in zip(off.shape, steps, strict=True)) + span
        unaligned = bool(first % isz) or any(st % isz for n, st in zip(off.shape, steps, strict=True) if n > 1)
    elif off.size <= 64:  # a handful of lanes: Python is quicker than three numpy reductions
        vals = off.reshape(-1).tolist()
        lo, hi = min(vals), max(vals) + span
        unaligned = any(v % isz for v in vals)
    else:
        lo, hi = int(off.min()), int(off.max()) + span
        unaligned = bool((off % isz).any())
    if lo < 0:
        raise Diverged("out of bounds")
    if alloc.growable:
        cap = alloc.capacity
        if cap is not None and hi >= cap:
            raise Diverged("scratchpad capacity")
        alloc.ensure(hi + 1)
    elif hi >= alloc.nbytes:
        raise Diverged("out of bounds")
    if unaligned:
        raise Diverged("unaligned box")
    return alloc


def _windows(alloc: Any, view: MemoryView, ext: tuple[int, ...]) -> np.ndarray:
    """One box-shaped window per element address of the allocation (a strided view of its
    buffer, kept with the allocation: Allocation.windows; a memo of its own kept every run's
    buffers alive)."""
    return alloc.windows(view.dtype, ext, view.bstrides)  # type: ignore[no-any-return]


# (shape, strict, dtype, the offsets' bytes) -> _lattice's answer, for a few hundred lanes at
# most: the offsets of an access are the same in every run of a kernel (and the check took
# 5-17 us of Python per access, called once per tile and access)
_LATTICES: Memo[tuple[Any, ...], tuple[int, tuple[int, ...]] | None] = Memo(1024)


def _lattice(off: np.ndarray, strict: bool) -> tuple[int, tuple[int, ...]] | None:
    """(first offset, step per lane dimension) when the lanes' offsets are evenly spaced along
    each lane dimension with non-negative steps (positive where `strict` and the dimension has
    more than one lane); None otherwise."""
    a = np.asarray(off)
    if a.ndim == 0:
        return int(a), ()
    if not a.size:
        return None  # no lanes: nothing to lay out
    if a.size > 256:
        return _lattice_of(a, strict)
    key = (a.shape, strict, a.dtype.char, a.tobytes())
    found = _LATTICES.get(key)
    if found is MISSING:
        return _LATTICES.put(key, _lattice_of(a, strict))
    return found


def _lattice_of(a: np.ndarray, strict: bool) -> tuple[int, tuple[int, ...]] | None:
    first = int(a[(0,) * a.ndim])
    steps = []
    for k, n in enumerate(a.shape):
        if n == 1:
            steps.append(0)
            continue
        idx = [0] * a.ndim
        idx[k] = 1
        step = int(a[tuple(idx)]) - first
        if step < 0 or (strict and step == 0):
            return None
        steps.append(step)
    # evenly spaced iff, along every dimension, consecutive offsets differ by that dimension's
    # step everywhere (the offset of any lane is then first + sum(index * step))
    if a.size <= 64:  # a handful of lanes (the tiles): Python compares faster than numpy calls
        fit = [first]
        for n, st in zip(a.shape, steps, strict=True):
            fit = [x + i * st for x in fit for i in range(n)]
        return (first, tuple(steps)) if a.reshape(-1).tolist() == fit else None
    for k, (n, st) in enumerate(zip(a.shape, steps, strict=True)):
        if n > 1:
            hi = [slice(None)] * a.ndim
            lo = [slice(None)] * a.ndim
            hi[k] = slice(1, None)
            lo[k] = slice(None, -1)
            if not ((a[tuple(hi)] - a[tuple(lo)]) == st).all():
                return None
    return first, tuple(steps)


def _box_view(alloc: Any, view: MemoryView, off: np.ndarray, ext: tuple[int, ...], strict: bool,
              lat: tuple[int, tuple[int, ...]] | None = None) -> np.ndarray | None:
    """All lanes' boxes as one strided view of the allocation, when the lanes are evenly spaced
    (`lat`: their strict lattice, when known: also the answer of the non-strict test)."""
    if lat is None:
        lat = _lattice(off, strict)
    if lat is None:
        return None
    first, steps = lat
    return np.ndarray(shape=off.shape + ext, dtype=view.dtype, buffer=alloc.raw, offset=first,
                      strides=steps + view.bstrides)


def _count(lanes: Lanes, view: MemoryView, per_lane: int, sel: Any, write: bool) -> None:
    """Statistics: each tile moved `per_lane` bytes per lane of it (selected by `sel`)."""
    sid = view.space_id
    if sel is None and view.ct_id is None:  # every lane, no remote scratchpad: the same count for each tile
        nbytes = per_lane * lanes.per_tile
        if nbytes:
            for ctx in lanes.contexts:
                (ctx.wr if write else ctx.rd)[sid] += nbytes
        return
    counts = _lanes_per_tile(lanes, sel)
    for t, ctx in enumerate(lanes.contexts):
        k = counts[t]
        if not k:
            continue
        nbytes = per_lane * k
        if write:
            ctx.wr[sid] += nbytes
        else:
            ctx.rd[sid] += nbytes
        if view.ct_id is not None and view.ct_id != ctx.tile:  # the tile's id (t: its lane, in a sub-frame)
            key = -view.ct_id - 1 if write else view.ct_id
            ctx.remote[key] = ctx.remote.get(key, 0) + nbytes


def _lanes_per_tile(lanes: Lanes, sel: Any) -> list[int]:
    if sel is None:
        return [lanes.per_tile] * lanes.n_tiles
    if isinstance(sel, int):
        return [lanes.per_tile if t == sel else 0 for t in range(lanes.n_tiles)]
    s = np.broadcast_to(sel, lanes.shape).reshape(lanes.n_tiles, -1)
    return [int(x) for x in s.sum(axis=1)]


# ---------------------------------------------------------------------- loads


def load(lanes: Lanes, tile: Any, rank: int, opname: str, defer: bool = False) -> Any:
    """The laned tensor a `ktdp.load` of `tile` gives (lane dimensions first); with `defer`, a
    gather's may be a `Gathered` (for the store that uses it)."""
    lt = as_ltile(tile, rank)
    if lt.mask is None:
        if lt.coords is None:
            groups = _groups(lt, lanes)
            if groups is not None:
                return _perm(_load_boxes(lanes, lt, groups, opname), lt, rank)
        elif type(lt.view) is MemoryView:
            data = _gather(lanes, lt.view, lt.coords, lt.ext, rank, opname, lt.cbounds, defer and lt.perm is None)
            return data if type(data) is Gathered else _perm(data, lt, rank)
    return _per_lane_load(lanes, lt, rank, opname)


def _perm(data: np.ndarray, lt: LTile, rank: int) -> np.ndarray:
    if lt.perm is None:
        return data
    return data.transpose(tuple(range(rank)) + tuple(rank + p for p in lt.perm))


def _load_boxes(lanes: Lanes, lt: LTile, groups: list[tuple[MemoryView, Any]], opname: str) -> np.ndarray:
    assert lt.lo is not None
    ext = lt.ext
    shape = lanes.shape
    out: np.ndarray | None = None
    for view, sel in groups:
        if view.dtype != groups[0][0].dtype:
            raise Diverged("partitions of different element types")
        if sel is None:
            return _load_all(lanes, view, box_plan(lanes, view, lt.lo, ext, False), ext, opname)
        lo = tuple(_select(a, sel, shape) for a in lt.lo)
        off = _offsets(view, lo)
        span = _span(ext, view.bstrides, view.itemsize)
        # every lane's offset, evenly spaced (strictly): bounds, descriptors and the boxes' view
        # follow from the lattice (the same answers as from the offsets)
        lat = _lattice(off, True) if sel is None and off.shape == shape and span >= 0 else None
        alloc = _bounds(lanes, view, off, span, lat)
        if span >= 0:
            per_tile, whole, mask = _split(off, sel, shape)
            _regions(lanes, alloc, whole, mask, span, False)
            if lat is not None:
                _track(lanes, alloc, lattice_descs(lat, shape, ext, view.bstrides, view.itemsize), _same, False, opname)
            else:
                _track(lanes, alloc, per_tile, lambda o, v=view: tile_desc(o, ext, v.bstrides, v.itemsize), False, opname)
            box = _box_view(alloc, view, off, ext, False, lat) if sel is None else None
            if box is not None:
                data = box if alloc.shared else box.copy()  # access._load_box: unwritten arrays are read in place
            else:
                data = _windows(alloc, view, ext)[off // view.itemsize]
        else:
            data = np.zeros(off.shape + ext, view.dtype)
        _count(lanes, view, math.prod(ext) * view.itemsize, sel, False)
        if sel is None:
            return data
        if out is None:
            out = np.zeros(shape + ext, dtype=view.dtype)
        out[sel] = data
    if out is None:
        raise Diverged("a distributed tile reaches no partition")
    return out


def _load_all(lanes: Lanes, view: MemoryView, plan: BoxPlan, ext: tuple[int, ...], opname: str) -> np.ndarray:
    """_load_boxes for every lane of one memory view (`plan`: box_plan's)."""
    alloc = view.alloc
    assert alloc is not None
    if plan.span >= 0:
        _regions(lanes, alloc, plan.whole, None, plan.span, False, plan)
        _track(lanes, alloc, plan.descs, _same, False, opname)
        box = _box_view(alloc, view, plan.off, ext, False, plan.lat)
        if box is not None:
            data = box if alloc.shared else box.copy()  # access._load_box: unwritten arrays are read in place
        else:
            data = _windows(alloc, view, ext)[plan.off // view.itemsize]
    else:
        data = np.zeros(plan.off.shape + ext, view.dtype)
    _count(lanes, view, plan.nbytes, None, False)
    return data


class BoxPlan:
    """What a load or store of boxes of every lane of one memory view computes from the view's
    geometry and the lanes' corners alone (box_plan): the lanes' byte offsets, the box's span,
    the offsets' lattice, the descriptors per tile, whether the store writes every byte of the
    array; the bounds were checked."""

    __slots__ = ("off", "span", "lat", "whole", "ends", "ordered", "descs", "covers", "nbytes")

    def __init__(self, off: np.ndarray, span: int, lat: tuple[int, tuple[int, ...]] | None, whole: np.ndarray,
                 descs: list[tuple[int, Desc]], covers: bool, nbytes: int) -> None:
        self.off = off
        self.span = span
        self.lat = lat
        self.whole = whole  # every lane's first byte (the lane shape)
        self.ends = whole + span  # and last
        self.ends.flags.writeable = False
        # two lane dimensions (tiles, a loop's iterations) whose spans each tile's iterations
        # walk in ascending order without overlap: the lattice's step along the iterations
        # exceeds a span (Region.access need not compare them)
        self.ordered = lat is not None and span >= 0 and len(whole.shape) == 2 and lat[1][1] > span
        self.descs = descs
        self.covers = covers
        self.nbytes = nbytes  # bytes per lane


# (store, the view's byte offset of coordinate 0, byte strides, item size, the array's size,
# extents, lanes, the corners) -> box_plan's answer: a loop's boxes are the same in every run
_BOX_PLANS: Memo[tuple[Any, ...], BoxPlan] = Memo(256)
# the most lanes a plan, or an indirect tile's remembered subscripts (lockstep_ops), is kept for
# (the memos hold arrays over the lanes)
PLAN_LANES = 1 << 14


def box_plan(lanes: Lanes, view: MemoryView, lo: tuple[np.ndarray, ...], ext: tuple[int, ...], store: bool) -> BoxPlan:
    """The plan of a load (`store` False) or store of boxes `ext` at the lanes' corners `lo` in
    `view`, every lane's bytes checked in the array (Diverged otherwise; a scratchpad grows to
    them). Remembered by the values it depends on, but for a scratchpad (which grows)."""
    alloc = view.alloc
    key: tuple[Any, ...] | None = None
    if alloc is not None and not alloc.growable and lanes.per_tile * lanes.n_tiles <= PLAN_LANES:
        key = (store, view.boff, view.bstrides, view.itemsize, alloc.nbytes, ext, lanes.shape,
               *[(a.shape, a.dtype.char, a.tobytes()) for a in lo])
        found = _BOX_PLANS.get(key)
        if found is not MISSING:
            return found
    shape = lanes.shape
    off = _offsets(view, lo)
    if store:
        off = _bcast(off, shape)
    span = _span(ext, view.bstrides, view.itemsize)
    # every lane's offset, evenly spaced (strictly): bounds, descriptors and the boxes' view
    # follow from the lattice (the same answers as from the offsets)
    lat = _lattice(off, True) if off.shape == shape and off.size and span >= 0 else None
    covers = store and alloc is not None and _covers_all(alloc.nbytes, view, off, ext, lat)
    _bounds(lanes, view, off, span, lat)
    per_tile, whole, _mask = _split(off, None, shape)
    if span < 0:
        descs: list[tuple[int, Desc]] = []
    elif lat is not None:
        descs = lattice_descs(lat, shape, ext, view.bstrides, view.itemsize)
    else:
        descs = [(t, tile_desc(o, ext, view.bstrides, view.itemsize)) for t, o in per_tile]
    plan = BoxPlan(off, span, lat, whole, descs, covers, math.prod(ext) * view.itemsize)
    if key is not None:
        off.flags.writeable = False
        return _BOX_PLANS.put(key, plan)
    return plan


def _rows_inside(rows: np.ndarray, cbounds: list[tuple[int, int]] | None, strides: tuple[int, ...], const: int,
                 unit: int, shift: int, n: int, isz: int, nbytes: int) -> bool:
    """Whether every row (first element shift + unit * `rows`, `n` elements; equal to
    const + sum(c * s) over the coordinates c and `strides`) lies in the allocation's `nbytes`.
    With the coordinates' known bounds (`cbounds`, as the view check found them), the rows'
    bounds by interval arithmetic decide when they lie inside (they enclose the exact ones);
    else, or when they do not, the exact minimum and maximum decide."""
    if cbounds is not None:
        lo = hi = const
        for (cmin, cmax), s in zip(cbounds, strides, strict=False):
            lo += min(cmin * s, cmax * s)
            hi += max(cmin * s, cmax * s)
        if lo >= 0 and (hi + n) * isz <= nbytes:
            return True
    rmin, rmax = minmax(rows)
    return rmin * unit + shift >= 0 and (rmax * unit + shift + n) * isz <= nbytes


def _gather(lanes: Lanes, view: MemoryView, coords: list[np.ndarray], ext: tuple[int, ...], rank: int,
            opname: str, cbounds: list[tuple[int, int]] | None = None, defer: bool = False,
            plan: GatherPlan | None = None) -> Any:
    """A load through an indirect tile of a memory view: coordinates with lane dimensions
    (`cbounds`: each coordinate's minimum and maximum over all lanes, when known). With
    `defer`, the values are returned as a `Gathered`, not yet copied. `plan`: gather_plan's
    answer for these arguments, when the caller has it."""
    if plan is None:
        plan = gather_plan(lanes.shape, lanes.n_tiles, view, coords, ext, rank, cbounds)
    alloc = view.alloc
    assert alloc is not None
    per, unit, shift, n, isz = plan.per, plan.unit, plan.shift, plan.n, plan.isz
    track = lanes.race_on or alloc.init is not None
    if per.size and (track or lanes.regions):
        if track:
            _track(lanes, alloc, plan.descs(), _same, False, opname)
        if lanes.regions:
            lane_shape = lanes.shape

            def spans() -> tuple[np.ndarray, np.ndarray]:
                # first and last byte of each lane, for the loops' spans (only if a write of
                # this allocation in the loop needs them)
                lo = _bcast((per.min(axis=-1) * unit + shift) * isz, lane_shape)
                return lo, _bcast((per.max(axis=-1) * unit + shift + n) * isz - 1, lane_shape)

            for region in lanes.regions:
                region.read_later(alloc, spans)
    typed = alloc.typed(view.dtype)
    _count(lanes, view, plan.nbytes, None, False)
    src: np.ndarray
    if plan.run is None:
        src = typed
    elif unit > 1 or n == 1:
        # the array seen as rows of n elements from element `shift` (contiguous, as np.take needs)
        src = typed[shift : shift + (len(typed) - shift) // n * n].reshape(-1, n)
    else:
        src = np.lib.stride_tricks.as_strided(typed, shape=(len(typed) - n + 1, n), strides=(isz, isz), writeable=False)
    if defer:
        return Gathered(src, plan.rows, plan.full_shape, view.dtype)
    return src.take(plan.rows, axis=0)  # as src[rows], faster (the rows are checked inside src)


class GatherPlan:
    """What a gather computes from its coordinates and the view's geometry alone (not from
    memory): the rows it reads and their checks (gather_plan)."""

    __slots__ = ("rows", "per", "run", "unit", "shift", "n", "isz", "tmin", "tmax", "full_shape", "nbytes", "_descs")

    def __init__(self, rows: np.ndarray, per: np.ndarray, run: tuple[int, int] | None, unit: int, shift: int, n: int,
                 isz: int, tmin: list[int], tmax: list[int], full_shape: tuple[int, ...], nbytes: int) -> None:
        self.rows = rows
        self.per = per
        self.run = run
        self.unit = unit
        self.shift = shift
        self.n = n
        self.isz = isz
        self.tmin = tmin
        self.tmax = tmax
        self.full_shape = full_shape
        self.nbytes = nbytes  # bytes per lane
        self._descs: list[tuple[int, IdxDesc]] | None = None

    def descs(self) -> list[tuple[int, IdxDesc]]:
        """(tile, the bytes the tile reads) for every tile (made once per plan: a plan found in a
        memo gives the same descriptors, whose offsets are made only if a race check needs them)."""
        if self._descs is None:
            per, unit, shift, n, isz = self.per, self.unit, self.shift, self.n, self.isz
            tmin, tmax = self.tmin, self.tmax

            def make(t: int) -> IdxDesc:
                o = per[t].reshape(-1)

                def elements(o: np.ndarray = o) -> np.ndarray:
                    first = o * unit + shift if unit > 1 or shift else o
                    return first * isz if n == 1 else (first[:, None] + np.arange(n)).reshape(-1) * isz

                return IdxDesc(None, isz, (tmin[t] * unit + shift) * isz, (tmax[t] * unit + shift + n) * isz - 1,
                               make=elements)
            self._descs = [(t, make(t)) for t in range(len(tmin))]
        return self._descs


def gather_plan(shape: tuple[int, ...], n_tiles: int, view: MemoryView, coords: list[np.ndarray],
                ext: tuple[int, ...], rank: int, cbounds: list[tuple[int, int]] | None) -> GatherPlan:
    """The rows a gather of `coords` (lanes `shape`) reads from `view`, checked in its array
    (Diverged when some row leaves it, or when the view is one this path does not take). It
    depends only on the arguments and on the view's address, strides, origin, element type
    and the size of its array."""
    if len(coords) != view.rank:
        raise Diverged("subscripts and view rank differ")
    alloc = view.alloc
    if alloc is None or alloc.growable:
        raise Diverged("indirect access of a scratchpad")
    isz = view.itemsize
    if (view.addr - alloc.base) % isz:
        raise Diverged("unaligned view")
    base = (view.addr - alloc.base) // isz
    full_shape = shape + tuple(ext)
    run = _run_of(coords[-1], rank) if view.strides[-1] == 1 and len(coords) > 1 else None
    used = coords[:-1] if run is not None else coords
    strides = view.strides[: len(used)]
    n = run[1] if run is not None else 1
    # the first element of each row (of n elements) is const + sum(c * s), the constant terms
    # folded in Python; when every stride is a multiple of n (table rows), it is
    # shift + unit * k with k = q0 + sum(c * (s // n)) the row's number in the array seen as
    # rows of n elements (from element shift): k is computed instead (for a table, the ids)
    const = base + (run[0] - view.origin[-1] if run is not None else 0)
    for o, s in zip(view.origin, strides, strict=False):
        const -= o * s
    unit = n if run is not None and all(s % n == 0 for s in strides) else 1
    shift = const % unit
    q0 = (const - shift) // unit
    rows: Any = None
    for c, s in zip(used, strides, strict=False):
        term = c if s == unit else c * (s // unit)
        rows = term if rows is None else rows + term
    rows = np.asarray(q0 if rows is None else (rows + q0 if q0 else rows), dtype=I64)
    # the first element of each row (a run: the lanes and every axis but the last)
    rows = _bcast(rows, full_shape[:-1] + (1,))[..., 0] if run is not None else _bcast(rows, full_shape)
    known = cbounds[: len(used)] if cbounds is not None else None
    if rows.size and not _rows_inside(rows, known, strides, const, unit, shift, n, isz, alloc.nbytes):
        raise Diverged("out of bounds")
    per = rows.reshape(shape + (-1,))
    tmin: list[int] = []
    tmax: list[int] = []
    if per.size:
        # first and last element of each tile (the descriptors' spans): one reduction each
        flat = per.reshape(n_tiles, -1)
        tmin = _MIN(flat, axis=1).tolist()
        tmax = _MAX(flat, axis=1).tolist()
    return GatherPlan(rows, per, run, unit, shift, n, isz, tmin, tmax, full_shape, math.prod(ext) * isz)


class Gathered:
    """A gather's result not yet copied out of memory (`src[idx]`): a load whose value only a
    store right after it uses (no op in between writes memory; LaneCompiler.fused_loads) moves
    the rows into the store's destination in one copy (`into`), instead of a copy into a new
    array and one more into the destination. Everything else about the load (checks, race
    tracking, statistics) happened when it ran."""

    __slots__ = ("src", "idx", "shape", "dtype", "_value")

    def __init__(self, src: np.ndarray, idx: np.ndarray, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.src = src
        self.idx = idx
        self.shape = shape
        self.dtype = dtype
        self._value: np.ndarray | None = None

    def value(self) -> np.ndarray:
        if self._value is None:
            self._value = self.src.take(self.idx, axis=0)  # src[idx]
        return self._value

    def into(self, dest: np.ndarray) -> None:
        """dest[...] = the gathered values (dest shaped like them)."""
        src, idx = self.src, self.idx
        k = idx.ndim
        if src.flags.c_contiguous and self._value is None:
            # np.take writes straight into a C-contiguous `out` (the indices are in bounds: the
            # load checked them, so mode="clip" changes none of them and skips a second check);
            # the index axes are put in the order that makes the destination contiguous
            order = sorted(range(k), key=lambda a: -dest.strides[a])
            out = dest.transpose(*order, *range(k, dest.ndim))
            if out.flags.c_contiguous:
                np.take(src, idx.transpose(order), axis=0, out=out, mode="clip")
                return
        dest[...] = self.value()


def _run_of(c: np.ndarray, rank: int) -> tuple[int, int] | None:
    """(start, n) when the coordinate array is start, start + 1, ... along its last axis and
    constant along every other (lane dimensions included)."""
    if c.ndim < rank + 1 or any(n != 1 for n in c.shape[:-1]):
        return None
    row = c.reshape(-1)
    n = row.size
    if not n:
        return None
    if n > 1024:
        return _run_in(row)
    key = (row.dtype.char, row.tobytes())
    found = _RUNS.get(key)
    if found is MISSING:
        return _RUNS.put(key, _run_in(row))
    return found


# (dtype, a coordinate row's bytes) -> _run_in's answer: the row (the contiguous subscript of
# a gather, e.g. a table's columns) is the same in every run of a kernel
_RUNS: Memo[tuple[str, bytes], tuple[int, int] | None] = Memo(256)


def _run_in(row: np.ndarray) -> tuple[int, int] | None:
    n = row.size
    start = int(row[0])
    if not np.array_equal(row, np.arange(start, start + n, dtype=row.dtype)):
        return None
    return start, n


def _per_lane_load(lanes: Lanes, lt: LTile, rank: int, opname: str) -> np.ndarray:
    if rank > 1:
        raise Diverged("a load with no vectorised form in a vectorised loop", lanes.regions[-1].loop if lanes.regions else None)
    out = []
    for t in range(lanes.n_tiles):
        out.append(access.load(lanes.contexts[t], lt.item((t,)), opname))
    first = out[0]
    if any(o.shape != first.shape or o.dtype != first.dtype for o in out):
        raise Diverged("lanes load different shapes")
    return np.stack(out)


# ---------------------------------------------------------------------- stores


def store(lanes: Lanes, tile: Any, data: Any, data_laned: bool, rank: int, opname: str) -> None:
    lt = as_ltile(tile, rank)
    if type(data) is Gathered:
        if not (data_laned and lt.perm is None and lt.mask is None and lt.coords is None
                and data.shape == lanes.shape + tuple(lt.shape) and type(lt.view) is MemoryView):
            data = data.value()  # not the box store of every lane that takes it as it is
        elif data.dtype != access.view_dtype(lt.view):
            raise Diverged("stored element type differs")
        else:
            groups = _groups(lt, lanes)
            if groups is not None and all(box_injective(lt.ext, v.strides) for v, _ in groups):
                _store_boxes(lanes, lt, groups, data, opname)
                return
            data = data.value()
    data = np.asarray(data)
    tail = data.shape[rank:] if data_laned else data.shape
    if tail != tuple(lt.shape):
        raise Diverged("stored shape differs from the tile's")
    view = lt.view
    dt = view.items[0].dtype if type(view) is PerTile else access.view_dtype(view)
    if data.dtype != dt:
        raise Diverged("stored element type differs")
    if not data_laned:
        data = data.reshape((1,) * rank + data.shape)
    if lt.perm is not None:
        inv = tuple(int(x) for x in np.argsort(lt.perm))
        data = data.transpose(tuple(range(rank)) + tuple(rank + p for p in inv))
    if lt.mask is None and lt.coords is None:
        groups = _groups(lt, lanes)
        if groups is not None and all(box_injective(lt.ext, v.strides) for v, _ in groups):
            _store_boxes(lanes, lt, groups, data, opname)
            return
    _per_lane_store(lanes, lt, data, rank, opname)


def _store_boxes(lanes: Lanes, lt: LTile, groups: list[tuple[MemoryView, Any]], data: np.ndarray | Gathered,
                 opname: str) -> None:
    assert lt.lo is not None
    ext = lt.ext
    shape = lanes.shape
    # a Gathered comes only for a MemoryView (one group, every lane: sel None); else as an array
    full: Any = data if type(data) is Gathered else _bcast(np.asarray(data), shape + ext)
    for view, sel in groups:
        if sel is None:
            _store_all(lanes, view, box_plan(lanes, view, lt.lo, ext, True), full, ext, opname)
            continue
        # some tiles' lanes (a distributed view's piece): full is an array here
        lo = tuple(_select(a, sel, shape) for a in lt.lo)
        off = _offsets(view, lo)
        if isinstance(sel, int):
            off = np.broadcast_to(off, shape[1:])
            part = full[sel]
        else:
            part = full[np.broadcast_to(sel, shape)]
        span = _span(ext, view.bstrides, view.itemsize)
        if view.alloc is not None and view.alloc.shared:
            view.alloc.own()  # copied before the first write (an error below gives up lockstep)
        alloc = _bounds(lanes, view, off, span, None)
        if span < 0:
            continue
        per_tile, whole, mask = _split(off, sel, shape)
        _regions(lanes, alloc, whole, mask, span, True)
        _track(lanes, alloc, per_tile, lambda o, v=view: tile_desc(o, ext, v.bstrides, v.itemsize), True, opname)
        if not (lanes.race_on and not alloc.private) and not isinstance(sel, int):
            _no_overlap(off, off + span)  # no tracker sees two tiles' lanes of this store
        _windows(alloc, view, ext)[off // view.itemsize] = part
        _count(lanes, view, math.prod(ext) * view.itemsize, sel, True)


def _store_all(lanes: Lanes, view: MemoryView, plan: BoxPlan, data: Any, ext: tuple[int, ...], opname: str) -> None:
    """_store_boxes for every lane of one memory view (`plan`: box_plan's)."""
    alloc = view.alloc
    assert alloc is not None
    if alloc.shared:
        # a store of every byte of the caller's array need not copy it first
        alloc.own(copy=not plan.covers)
    span = plan.span
    if span < 0:
        return
    off = plan.off
    _regions(lanes, alloc, plan.whole, None, span, True, plan)
    _track(lanes, alloc, plan.descs, _same, True, opname)
    if not (lanes.race_on and not alloc.private):
        _no_overlap(off, off + span)  # no tracker sees two tiles' lanes of this store
    box = _box_view(alloc, view, off, ext, True, plan.lat)
    if box is not None:
        if type(data) is Gathered:
            data.into(box)
        else:
            box[...] = data
    else:
        _windows(alloc, view, ext)[off // view.itemsize] = data.value() if type(data) is Gathered else data
    _count(lanes, view, plan.nbytes, None, True)


def _covers_all(nbytes: int, view: MemoryView, off: np.ndarray, ext: tuple[int, ...],
                lat: tuple[int, tuple[int, ...]] | None = None) -> bool:
    """Whether boxes `ext` of `view` at byte offsets `off` (one per lane) write each of bytes
    [0, nbytes) exactly once: as many elements as the bytes hold, at distinct multiples of the
    element size (the lanes' offsets a lattice, the whole box injective) from 0 to the last.
    `lat`: the offsets' strict lattice, when known."""
    isz = view.itemsize
    if not nbytes or off.size * math.prod(ext) * isz != nbytes:
        return False
    if lat is None:
        lat = _lattice(off, True)
    if lat is None or lat[0] != 0:
        return False
    shape = off.shape + ext
    strides = lat[1] + view.bstrides
    if any(s % isz for s in strides) or sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) != nbytes - isz:
        return False
    return box_injective(shape, tuple(s // isz for s in strides))


def _per_lane_store(lanes: Lanes, lt: LTile, data: np.ndarray, rank: int, opname: str) -> None:
    if rank > 1:
        raise Diverged("a store with no vectorised form in a vectorised loop", lanes.regions[-1].loop if lanes.regions else None)
    full = np.broadcast_to(data, (lanes.n_tiles,) + data.shape[1:])
    for t in range(lanes.n_tiles):
        tile = lt.item((t,))
        d = full[t]
        if tile.perm is not None:
            d = d.transpose(tile.perm)  # store() transposes back
        access.store(lanes.contexts[t], tile, np.ascontiguousarray(d), opname)


# ---------------------------------------------------------------------- access tiles


def check_box_tile(lanes: Lanes, view: Any, lo: tuple[np.ndarray, ...], ext: tuple[int, ...], mask: Any,
                   rank: int, make_item: Any) -> np.ndarray | None:
    """Every lane's box lies in the view (exactly as construct_access_tile checks it), else
    Diverged. For a distributed view: the partition holding each lane's box (or None when a
    box spans several partitions: its loads and stores then run lane by lane)."""
    if type(view) is MemoryView and mask is None and view.is_box:
        if len(lo) != len(view.box_lo):
            raise Diverged("subscripts and view rank differ")
        for a, e, b, h in zip(lo, ext, view.box_lo, view.box_hi, strict=True):
            if a.size:
                amin, amax = minmax(a)
                if amin < b or amax + e - 1 > h:
                    raise Diverged("out of view")
        return None
    if type(view) is DistributedView and mask is None and all(p.is_box and len(p.box_lo) == len(lo) for p in view.parts):
        inside = []
        for p in view.parts:
            ok: Any = True
            for a, e, b, h in zip(lo, ext, p.box_lo, p.box_hi, strict=True):
                ok = ok & (a >= b) & (a + (e - 1) <= h)
            inside.append(np.asarray(ok))
        count = sum(np.asarray(x, dtype=np.int8) for x in inside)
        if np.all(count == 1):
            return np.asarray(np.argmax(np.stack(np.broadcast_arrays(*inside)), axis=0), dtype=I64)
    # exact per lane (the per-tile check, which raises on the first bad coordinate)
    if rank > 1:
        raise Diverged("an access tile without a vectorised check in a vectorised loop",
                       lanes.regions[-1].loop if lanes.regions else None)
    from .ops.ktdp import _check_in_view

    for t in range(lanes.n_tiles):
        tile = make_item((t,))
        _check_in_view(tile.view, tile)
    return None
