"""Lockstep execution: the tiles of the grid, and the iterations of independent loops, as
lanes of numpy arrays.

The per-tile interpreter (compiler.py, executor.py) runs each tile's program one op at a
time, so a kernel costs one Python step per op *per tile and per loop iteration*. Most
kernels are SPMD: every tile runs the same straight-line code and loops on different data.
This module runs such a function once for all tiles: a value that differs between tiles
(anything depending on `ktdp.get_compute_tile_id`, a load through such an address, an
inter-tile result) is *laned*, a numpy array whose leading dimensions are the lanes; every
other value is the per-tile interpreter's own value, computed once. A loop without
iter_args whose iterations touch disjoint memory runs *vectorised*: its iterations become
one more lane dimension, so its body runs once for the whole loop.

A sequential loop (at tile rank) whose trip count differs between tiles runs *masked*
(lockstep_ops._masked_loop): iteration k runs for the tiles with k < their trip count only.
The iterations every tile runs run as usual; the rest run in phases, each on a *sub-frame* of
the tiles still active: every laned value the body reads restricted to those tiles (`subset`:
arrays indexed along the tile axis, `PerTile` items, laned access tiles), a `Lanes` of its
own (those tiles' contexts; its step count, added afterwards to exactly those tiles' `extra`;
the race tracker told the tiles' own ids, `SubTracker`). After a phase the carried values are
merged back into every tile's (`scatter`): the others keep theirs. A loop inside the body
whose trip counts differ among the active tiles runs masked in turn, on a sub-frame of the
sub-frame. A vectorised loop (at tile rank) whose trip count turns out to differ runs so too
(its body is compiled a second time, sequentially). An `scf.if` whose condition differs
between tiles runs each branch on a sub-frame of its tiles, the results merged; a branch
that yields tensor.empty's value (a pipelined loop's prologue that tiles without rows skip)
leaves it per lane (`Partial`: any use gives up; restricted to lanes that hold arrays, it is
a laned array again).

It is an optimisation with one rule: a lockstep run either produces exactly what the
per-tile run would (outputs, returns, statistics) or gives up (`Diverged`), and the run is
then redone tile by tile from scratch (arguments are only read, so nothing is lost), which
also reports any error with its usual diagnostic. Lockstep gives up when:

- lanes would take different paths that it does not mask: a loop whose trip count, or an
  `scf.if` whose condition, differs between lanes inside a vectorised loop (later runs do
  not vectorise that loop), or whose body has inter-tile ops, or that yields a value the
  analysis finds the same for every lane (it would differ);
- a runtime check fails in any lane (out-of-view, bounds, a race, an unwritten read, a limit,
  an undefined value): every check of the per-tile path runs here too, vectorised;
- two iterations of a vectorised loop (of one tile) touch the same byte and one of them
  writes (their order would matter): the byte spans of the iterations must be disjoint;
- anything it does not handle (an op without a lane implementation inside a vectorised
  loop, a masked access tile there, ...).

Data races between tiles are found by the same tracker as the per-tile path (races.py):
each laned memory op reports every tile's accesses to it. The tracker's verdict depends only
on happens-before, not on the interleaving, and lockstep executes every inter-tile op for all
tiles at once, which respects it (a masked loop has none in its body, so running some tiles'
iterations after the others' changes no happens-before).

When lockstep gives up because of a loop (its iterations overlap, or its trip count differs
between lanes), that loop (or the vectorised loop around it) is not
vectorised in later runs of the program; for any other reason the function runs per tile in
later runs (`_MEMO`). `run(..., lockstep=False)` always runs per tile; `trace=True` and
`shapes_only=True` do too (the trace is per tile and per op).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ktir.dialects.access import named
from ktir.dialects.names import Func, Ktdp, Scf
from ktir.ir import types as ty
from ktir.ir.operation import Block, Operation
from ktir.ir.operation import Region as IRRegion

from .compiler import TERMINATORS, CompileError, FuncCompiler, Program, Uninit, _strict, grid_of
from .dtypes import np_dtype, scalar_from_element
from .errors import KtirRuntimeError
from .runtime import Machine, Options, TileContext

LaneFn = Callable[[list[Any]], None]

# at most this many lanes (tiles x vectorised iterations) at once
MAX_LANES = 1 << 16
# Working sets: numpy is fastest on arrays that stay in the caches, and the per-tile run
# already spends little on Python when its blocks are large. So a function runs in lockstep
# only when its largest tensor times the tiles fits LOCKSTEP_BYTES (8 bytes an element: a
# float64 intermediate), and a vectorised loop runs in chunks of iterations whose largest
# tensor times the lanes fits CHUNK_BYTES.
LOCKSTEP_BYTES = 64 << 20
CHUNK_BYTES = 8 << 20


class Diverged(Exception):
    """Lockstep cannot continue; the run is redone tile by tile. `loop`: the id of the
    vectorised loop whose iterations conflict (later runs do not vectorise it), else None."""

    def __init__(self, why: str, loop: int | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.loop = loop


class NotVectorisable(Exception):
    """Compile time: an op inside the vectorised loop `loop` has no vectorised form."""

    def __init__(self, loop: int, why: str) -> None:
        super().__init__(why)
        self.loop = loop


# ---------------------------------------------------------------------- run-time state


class Region:
    """A chunk of iterations of a vectorised loop in progress: per allocation, the byte span
    each iteration (lane) touched, to prove that the iterations that write touch disjoint
    bytes. A loop with inter-tile ops in its body (`sync`) also keeps its posts and joins and
    its accesses, for the race tracker after the chunk (lockstep_intertile.py)."""

    __slots__ = ("loop", "rank", "spans", "lazy", "sync", "events", "deferred")

    def __init__(self, loop: int, rank: int, sync: bool = False) -> None:
        self.loop = loop
        self.rank = rank  # lane dimensions of the loop's iterations (tile first)
        self.spans: dict[int, list[Any]] = {}  # id(alloc) -> [lo, hi, written, alloc]
        # id(alloc) -> reads whose spans are not computed yet (read_later): made part of `spans`
        # at the chunk's first write of the allocation
        self.lazy: dict[int, list[Callable[[], tuple[np.ndarray, np.ndarray]]]] = {}
        self.sync = sync
        self.events: list[tuple[Any, ...]] = []  # ("post", key, n0, producers) | ("join", key, n0, deps)
        self.deferred: list[tuple[Any, Any, int, str, bool]] = []  # (alloc, desc, tile, op, write)

    def read_later(self, alloc: Any, spans: Callable[[], tuple[np.ndarray, np.ndarray]]) -> None:
        """A read of `alloc` whose lanes' spans `spans()` gives (as `access` takes them): computed
        only if a write of the allocation in this chunk must be compared with them (reads
        alone never conflict)."""
        key = id(alloc)
        rec = self.spans.get(key)
        if rec is None or not rec[2]:
            self.lazy.setdefault(key, []).append(spans)
            return
        self.access(alloc, *spans(), False)

    def access(self, alloc: Any, lo: np.ndarray, hi: np.ndarray, write: bool, ordered: bool = False) -> None:
        """Lanes (this region's) accessed bytes [lo, hi] of `alloc` (arrays over the lanes,
        possibly with more trailing lane dimensions from inner loops: reduced here). `ordered`:
        the caller knows that lo and hi have two dimensions and that along the second every span
        is non-empty and ends before the next begins (what _disjoint_per_tile tests first)."""
        if write and self.lazy:
            pending = self.lazy.pop(id(alloc), None)
            if pending:
                for spans in pending:
                    self.access(alloc, *spans(), False)
        extra = tuple(range(self.rank, lo.ndim))
        if extra:
            lo = lo.min(axis=extra)
            hi = hi.max(axis=extra)
        key = id(alloc)
        rec = self.spans.get(key)
        if rec is None:
            rec = self.spans[key] = [lo, hi, write, alloc]
            if ordered and not self.sync and not extra and lo.ndim == 2:
                return  # these spans alone: disjoint per tile
        else:
            rec[0] = np.minimum(rec[0], lo)
            rec[1] = np.maximum(rec[1], hi)
            rec[2] = rec[2] or write
        if rec[2]:
            if self.sync:  # the chunk's accesses are recorded after it: no two lanes may conflict
                _disjoint_per_tile(rec[0].reshape(1, -1), rec[1].reshape(1, -1), self.loop)
            else:  # the race tracker sees the tiles' accesses: only a tile's own lanes
                _disjoint_per_tile(rec[0], rec[1], self.loop)

    def replay(self, lanes: Lanes) -> None:
        """After a chunk of a loop with inter-tile ops: its posts and joins in program order
        (iteration by iteration), then its accesses recorded at the tiles' latest segments."""
        from .races import RaceFound, UninitFound

        tracker = lanes.tracker
        if lanes.race_on:
            m = int(lanes.shape[-1])
            snaps: dict[tuple[int, int], dict[int, Any]] = {}
            for i in range(m):
                for ev in self.events:
                    kind, key, n0, who = ev
                    if kind == "post":
                        d = snaps[(key, n0 + i)] = {}
                        for t in who:
                            d[t] = tracker.snapshot_and_advance(t)
                    else:
                        d = snaps.get((key, n0 + i), {})
                        for c, ps in enumerate(who):
                            got = [d[p] for p in ps if p in d]
                            if got:
                                tracker.join(c, got)
        for alloc, desc, t, opname, write in self.deferred:
            try:
                if write:
                    tracker.write(alloc, desc, t, opname)
                else:
                    tracker.read(alloc, desc, t, opname)
            except (RaceFound, UninitFound):
                raise Diverged("the race tracker, after a vectorised loop with inter-tile ops") from None


def _disjoint_per_tile(lo: np.ndarray, hi: np.ndarray, loop: int) -> None:
    """The spans [lo, hi] of the lanes of each tile (axis 0) are pairwise disjoint."""
    if lo.ndim < 2 or lo.size <= lo.shape[0]:
        return
    n = lo.shape[0]
    lo2 = lo.reshape(n, -1)
    hi2 = hi.reshape(n, -1)
    # the common case first: no span empty and each ends before the next begins (lanes in
    # ascending address order, as loops walk memory), so the spans ascend and are disjoint
    if (hi2[:, :-1] < lo2[:, 1:]).all() and (hi2 >= lo2).all():
        return
    empty = hi2 < lo2
    order = np.argsort(np.where(empty, np.iinfo(np.int64).max, lo2), axis=1, kind="stable")
    slo = np.take_along_axis(lo2, order, axis=1)
    shi = np.take_along_axis(hi2, order, axis=1)
    sempty = np.take_along_axis(empty, order, axis=1)
    clash = (shi[:, :-1] >= slo[:, 1:]) & ~sempty[:, :-1] & ~sempty[:, 1:]
    if clash.any():
        raise Diverged("two iterations of a vectorised loop touch the same bytes and one writes", loop)


class Lanes:
    """The lanes of a lockstep run (frame slot 1): the lane shape in the current scope
    (tiles first, then one dimension per enclosing vectorised loop)."""

    __slots__ = ("shape", "per_tile", "n_tiles", "contexts", "rep", "machine", "regions", "tracker", "race_on", "extra",
                 "sync")

    def __init__(self, machine: Machine, contexts: list[TileContext], rep: TileContext) -> None:
        self.machine = machine
        self.contexts = contexts
        self.rep = rep  # counts the ops every tile executes (they execute the same ones)
        self.n_tiles = machine.n_tiles
        self.shape: tuple[int, ...] = (machine.n_tiles,)
        self.per_tile = 1  # lanes per tile: executions of the current block per tile
        self.regions: list[Region] = []
        self.tracker: Any = machine.tracker  # a SubTracker in a sub-frame
        self.race_on = machine.tracker.enabled
        self.extra = [0] * machine.n_tiles  # ops only some tiles execute (inter_tile_produce bodies, masked loops)
        self.sync: Region | None = None  # the vectorised loop with inter-tile ops in progress

    def subset(self, active: list[int]) -> Lanes:
        """The lanes of the tiles at positions `active` (ascending) of these lanes, at tile rank:
        a masked loop's or branch's sub-frame (see `masked`). Its own `rep` counts the ops
        the active tiles execute (steps from the most any of them has executed, so that the
        step limit is checked for that one) and its own `extra`; `merge_steps` adds both to
        these lanes' `extra` afterwards. The race tracker hears the tiles' own ids."""
        sub = Lanes.__new__(Lanes)
        sub.machine = self.machine
        sub.contexts = [self.contexts[i] for i in active]
        rep = TileContext(self.machine, 0)
        rep.steps = self.rep.steps + max(self.extra[i] for i in active)
        rep.step_limit = self.rep.step_limit
        sub.rep = rep
        sub.n_tiles = len(active)
        sub.shape = (len(active),)
        sub.per_tile = 1
        sub.regions = []
        tracker = self.tracker
        if type(tracker) is SubTracker:
            sub.tracker = SubTracker(tracker.base, [tracker.ids[i] for i in active])
        else:
            sub.tracker = SubTracker(tracker, [self.contexts[i].tile for i in active])
        sub.race_on = self.race_on
        sub.extra = [0] * len(active)
        sub.sync = None
        return sub

    def merge_steps(self, sub: Lanes, active: list[int], start: int) -> None:
        """After a sub-frame of `subset(active)` whose rep began at `start` steps: the ops it
        counted, for exactly its tiles."""
        ran = sub.rep.steps - start
        for j, i in enumerate(active):
            self.extra[i] += ran + sub.extra[j]


class SubTracker:
    """The race tracker as the lanes of a sub-frame call it: tile positions (0.. of the
    sub-frame's tiles) mapped to the tiles' ids."""

    __slots__ = ("base", "ids", "enabled")

    def __init__(self, base: Any, ids: list[int]) -> None:
        self.base = base
        self.ids = ids
        self.enabled = base.enabled

    def read(self, alloc: Any, desc: Any, t: int, opname: str) -> None:
        self.base.read(alloc, desc, self.ids[t], opname)

    def write(self, alloc: Any, desc: Any, t: int, opname: str) -> None:
        self.base.write(alloc, desc, self.ids[t], opname)

    def read_all(self, alloc: Any, items: list[tuple[int, Any]], opname: str) -> None:
        self.base.read_all(alloc, [(self.ids[t], d) for t, d in items], opname)

    def write_all(self, alloc: Any, items: list[tuple[int, Any]], opname: str) -> None:
        self.base.write_all(alloc, [(self.ids[t], d) for t, d in items], opname)

    def check_read(self, alloc: Any, desc: Any, t: int) -> bool:
        return bool(self.base.check_read(alloc, desc, self.ids[t]))

    def check_write(self, alloc: Any, desc: Any, t: int) -> None:
        self.base.check_write(alloc, desc, self.ids[t])


# ---------------------------------------------------------------------- laned values


class PerTile:
    """A value that is an object per tile (the tile's scratchpad view): laned by tile only."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


def kind_of(t: ty.Type) -> str:
    if isinstance(t, ty.IndexType | ty.IntegerType | ty.FloatType):
        return "scalar"
    if isinstance(t, ty.TensorType):
        return "tensor"
    if isinstance(t, ty.AccessTileType):
        return "tile"
    if isinstance(t, ty.MemRefType):
        return "view"
    return "other"


def to_laned(v: Any, kind: str, rank: int) -> Any:
    """A uniform value in laned form (broadcast lane dimensions of size 1)."""
    if kind == "scalar":
        return np.asarray(v).reshape((1,) * rank)
    if kind == "tensor":
        if type(v) is Uninit:
            raise Diverged("a tensor.empty value becomes laned")
        a = np.asarray(v)
        return a.reshape((1,) * rank + a.shape)
    raise Diverged(f"a uniform {kind} value becomes laned")


def expand(v: Any, rank: int) -> Any:
    """A laned value of `rank` lane dimensions seen from a vectorised loop inside (one more)."""
    if type(v) is np.ndarray:
        return v.reshape(v.shape[:rank] + (1,) + v.shape[rank:])
    fn = getattr(v, "expand", None)
    if fn is not None:
        return fn(rank)
    if type(v) is PerTile:
        return v
    raise Diverged(f"cannot carry a {type(v).__name__} into a vectorised loop")


class Partial:
    """A laned value (tile rank) whose lanes are kept one by one because some hold a value
    that is not an array: a strict-mode `Uninit` (tensor.empty's contents) yielded by the
    branch of a masked scf.if that some tiles took (a pipelined loop's prologue: the tiles
    without rows yield an empty tensor, and never read it). Restricted (`subset`) to lanes
    that all hold arrays it is a laned array again; any other use gives up: every attribute
    and conversion raises Diverged (the per-tile run decides what reading it means)."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items  # per lane: an array (without lane dimensions) or an Uninit

    def __getattr__(self, name: str) -> Any:
        raise Diverged(f"a value some tiles left undefined is used ({name})")

    def __array__(self, *args: Any, **kw: Any) -> Any:
        raise Diverged("a value some tiles left undefined is used")

    def restricted(self, lanes: list[int]) -> Any:
        """The lanes' values: a laned array when all are arrays of one shape and type."""
        items = [self.items[i] for i in lanes]
        first = items[0]
        if all(type(x) is np.ndarray and x.shape == first.shape and x.dtype == first.dtype for x in items):
            return np.stack(items)
        return Partial(items)


def partial(parts: list[tuple[np.ndarray, Any]], n: int) -> Any:
    """One laned value of `n` lanes from (positions, value) pairs that cover them: each value
    laned over its positions (an array or Partial) or an Uninit every lane of it holds."""
    items: list[Any] = [None] * n
    for idx, v in parts:
        pos = idx.tolist()
        for j, i in enumerate(pos):
            if type(v) is Partial:
                items[i] = v.items[j]
            elif type(v) is np.ndarray and v.ndim and v.shape[0] in (1, len(pos)):
                items[i] = v[j if v.shape[0] > 1 else 0]
            elif type(v) is Uninit:
                items[i] = v
            else:
                raise Diverged(f"cannot merge a {type(v).__name__} of lanes")
    return Partial(items).restricted(list(range(n)))


def subset(v: Any, idx: np.ndarray, n: int) -> Any:
    """A laned value (tile rank: one lane dimension, of `n` lanes) restricted to the lanes at
    positions `idx` (a sub-frame's, see `masked`); a value the same for every lane as it is."""
    if type(v) is np.ndarray:
        if v.ndim == 0 or v.shape[0] == 1:
            return v
        if v.shape[0] != n:
            raise Diverged("a laned value of another lane shape")
        return v[idx]
    if type(v) is PerTile:
        return PerTile([v.items[i] for i in idx])
    if type(v) is Partial:
        return v.restricted(idx.tolist())
    fn = getattr(v, "subset", None)
    if fn is not None:
        return fn(idx, n)
    if isinstance(v, int | float | np.generic):
        return v  # a laned scalar that came out the same for every lane
    raise Diverged(f"cannot restrict a {type(v).__name__} to some lanes")


def scatter(full: Any, part: Any, idx: np.ndarray, n: int) -> Any:
    """`full` (a laned value of `n` lanes, at tile rank) with the lanes at positions `idx`
    replaced by `part`'s (a value of the sub-frame of those lanes): a new value. `full` None:
    the other lanes' values are to be filled in by another scatter."""
    if type(full) is Partial or type(part) is Partial:
        others = np.setdiff1d(np.arange(n), idx)
        return partial([(others, subset(full, others, n)), (idx, part)] if others.size else [(idx, part)], n)
    if full is None:
        if type(part) is PerTile:
            full = PerTile([None] * n)
        else:
            a = _lane_array(part)
            full = np.zeros((1,) + a.shape[1:], dtype=a.dtype)
    if type(full) is PerTile or type(part) is PerTile:
        if type(full) is not PerTile or type(part) is not PerTile:
            raise Diverged("a per-tile value merged with another kind")
        items = list(full.items)
        for j, i in enumerate(idx.tolist()):
            items[i] = part.items[j]
        return PerTile(items)
    full, part = _lane_array(full), _lane_array(part)
    if full.ndim == 0 or part.ndim == 0 or full.dtype != part.dtype or full.shape[1:] != part.shape[1:] \
            or full.shape[0] not in (1, n) or part.shape[0] not in (1, len(idx)):
        raise Diverged("lanes' values of different shapes or kinds")
    out = np.empty((n,) + full.shape[1:], dtype=full.dtype)
    out[...] = full
    out[idx] = part
    return out


def _lane_array(v: Any) -> np.ndarray:
    """A laned value as scatter merges it: an array, or a number (a laned scalar that came out
    the same for every lane) as an array of one lane."""
    if type(v) is np.ndarray:
        return v
    if isinstance(v, int | float | np.generic) and not isinstance(v, bool):
        return np.asarray(v).reshape(1)
    raise Diverged(f"cannot merge a {type(v).__name__} of lanes")


def lane_item(v: Any, idx: tuple[int, ...], kind: str, t: ty.Type) -> Any:
    """Lane `idx` (a full lane index) of a laned value, as the per-tile interpreter holds it."""
    if type(v) is PerTile:
        return v.items[idx[0]]
    fn = getattr(v, "item", None)
    if fn is not None and type(v) is not np.ndarray:
        return fn(idx)
    a = v[tuple(i if n > 1 else 0 for i, n in zip(idx, v.shape, strict=False))]
    if kind == "scalar":
        return scalar_from_element(a, ty.element_type(t))
    return a


def stack(values: list[Any], shape: tuple[int, ...], kind: str, t: ty.Type) -> Any:
    """Per-lane values (in C order over `shape`) as one laned value."""
    if kind == "scalar":
        try:
            return np.asarray(values, dtype=np_dtype(ty.element_type(t))).reshape(shape)
        except (OverflowError, TypeError, ValueError) as e:
            raise Diverged(f"per-lane results do not stack: {e}") from None
    if kind == "tensor":
        first = values[0]
        if any(type(v) is not np.ndarray or v.shape != first.shape or v.dtype != first.dtype for v in values):
            raise Diverged("per-lane tensors of different shapes or kinds")
        return np.stack(values).reshape(shape + first.shape)
    raise Diverged(f"per-lane {kind} results")


# ---------------------------------------------------------------------- analysis

# ops with effects on per-tile state (memory, statistics, communication, the tile's identity):
# never computed once for all tiles by the per-tile implementation
EFFECTS = frozenset({
    Ktdp.load, Ktdp.store, Ktdp.get_compute_tile_id, Ktdp.construct_indirect_access_tile,
    Ktdp.inter_tile_produce, Ktdp.inter_tile_consume, Ktdp.inter_tile_reduce, Ktdp.inter_tile_gather,
    Ktdp.inter_tile_scatter, Ktdp.inter_tile_all_to_all, Ktdp.inter_tile_reduce_scatter, Func.call,
})
DELIVERY = frozenset(n for n in EFFECTS if n.startswith("ktdp.inter_tile_") and n != Ktdp.inter_tile_produce)
INTERTILE = frozenset({Ktdp.inter_tile_produce, *DELIVERY})
# ops that may never be vectorised over loop iterations; inter-tile ops only directly in the
# loop's body (see Region)
SEQUENTIAL = frozenset({Func.call, Scf.while_})


def effectful(op: Operation, c: FuncCompiler) -> bool:
    if op.name in EFFECTS or op.name.startswith("memref."):
        return True
    if op.name.startswith("linalg.") and not op.result_types and any(
            isinstance(c.type(t), ty.MemRefType) for t in op.operand_types):
        return True  # buffer form: reads and writes memory
    if op.name == Ktdp.construct_memory_view:
        from .ops.ktdp import _space

        space, ct_id = _space(c, op)
        return space != "global" and ct_id is None  # the executing tile's own scratchpad
    return False


class Facts:
    """Per op of a function: free values of its regions, whether it (or anything inside)
    has per-tile effects; and the laned values."""

    def __init__(self, c: FuncCompiler, func: Operation, vectorised: set[int]) -> None:
        self.free: dict[int, frozenset[str]] = {}
        self.effects: dict[int, bool] = {}
        self.sequential: dict[int, bool] = {}  # contains an op that may not be vectorised
        self.sync: dict[int, bool] = {}  # contains inter-tile ops (in its regions)
        self._walk(c, func)
        self.laned = self._laned(func, vectorised)

    def _walk(self, c: FuncCompiler, op: Operation) -> tuple[set[str], set[str], bool, bool]:
        """(values used by op and the ops inside it, values defined inside it or by it, effects, sequential)."""
        inner_used: set[str] = set()
        inner_defined: set[str] = set()
        eff = effectful(op, c)
        seq = op.name in SEQUENTIAL
        sync = False
        for region in op.regions:
            for block in region.blocks:
                inner_defined.update(a.name for a in block.arguments)
                for inner in block.operations:
                    u, d, e, s = self._walk(c, inner)
                    inner_used |= u
                    inner_defined |= d
                    eff = eff or e
                    seq = seq or s
                    sync = sync or inner.name in INTERTILE or self.sync[id(inner)]
        self.sync[id(op)] = sync
        self.free[id(op)] = frozenset(inner_used - inner_defined)
        self.effects[id(op)] = eff
        self.sequential[id(op)] = seq
        return inner_used | set(op.operands), inner_defined | set(op.results), eff, seq

    def _laned(self, func: Operation, vectorised: set[int]) -> set[str]:
        laned: set[str] = set()

        def visit(block: Block) -> None:
            for op in block.operations:
                visit_op(op)

        def visit_op(op: Operation) -> None:
            uses = any(n in laned for n in op.operands) or any(n in laned for n in self.free[id(op)])
            if op.name == Scf.for_:
                body = op.regions[0].blocks[0]
                args = [a.name for a in body.arguments]
                if id(op) in vectorised or any(n in laned for n in op.operands[:3]):
                    laned.add(args[0])
                inits = op.operands[3:]
                visit(body)
                term = body.operations[-1] if body.operations else None
                yields = term.operands if term is not None and term.name == Scf.yield_ else []
                for k, (init, arg) in enumerate(zip(inits, args[1:], strict=False)):
                    if init in laned or (k < len(yields) and yields[k] in laned):
                        laned.add(arg)
                        if k < len(op.results):
                            laned.add(op.results[k])
                return
            if op.name == Scf.if_:
                for region in op.regions:
                    for block in region.blocks:
                        visit(block)
                        term = block.operations[-1] if block.operations else None
                        if term is not None and term.name in TERMINATORS:
                            for k, y in enumerate(term.operands):
                                if y in laned and k < len(op.results):
                                    laned.add(op.results[k])
                return
            if op.name == Ktdp.inter_tile_produce:
                # the future is the same handle on every tile; its body runs per producer
                for region in op.regions:
                    for block in region.blocks:
                        laned.update(a.name for a in block.arguments)
                        visit(block)
                return
            varying = uses or op.name in DELIVERY or op.name == Ktdp.get_compute_tile_id or (
                op.name == Ktdp.construct_memory_view and self.effects[id(op)])
            if varying:
                laned.update(op.results)
                for region in op.regions:
                    for block in region.blocks:
                        laned.update(a.name for a in block.arguments)
            for region in op.regions:
                for block in region.blocks:
                    visit(block)

        while True:
            before = len(laned)
            for region in func.regions:
                for block in region.blocks:
                    visit(block)
            if len(laned) == before:
                return laned


# ops between a load and the store of its value that read memory but write none
_READ_ONLY = frozenset({Ktdp.load, Ktdp.construct_indirect_access_tile, Ktdp.get_compute_tile_id})


def fused_loads(func: Operation, facts: Facts) -> set[int]:
    """The `ktdp.load`s (by id) whose value only a `ktdp.store` later in the same block stores,
    with no op between them that may write memory: the memory the load read is unchanged when
    the store runs, so the load may leave its values in memory until then
    (lockstep_memory.Gathered). A value name defined more than once (in sibling regions) is
    never fused."""
    uses: dict[str, int] = {}
    defs: dict[str, int] = {}
    blocks: list[Block] = []
    for op in func.walk():
        for n in op.operands:
            uses[n] = uses.get(n, 0) + 1
        for n in op.results:
            defs[n] = defs.get(n, 0) + 1
        for region in op.regions:
            for block in region.blocks:
                blocks.append(block)
                for a in block.arguments:
                    defs[a.name] = defs.get(a.name, 0) + 1
    found: set[int] = set()
    for block in blocks:
        ops = block.operations
        for i, op in enumerate(ops):
            if op.name != Ktdp.load or len(op.results) != 1:
                continue
            value = op.results[0]
            if uses.get(value) != 1 or defs.get(value) != 1:
                continue
            for later in ops[i + 1:]:
                if later.name == Ktdp.store and named(later).operand("data") == value:
                    found.add(id(op))
                    break
                if value in later.operands or (facts.effects.get(id(later), True) and later.name not in _READ_ONLY):
                    break
    return found


def largest_tensor(c: FuncCompiler, op: Operation) -> int:
    """Elements of the largest tensor value defined in `op` (dynamic dimensions count 1024)."""
    top = 1
    for inner in op.walk():
        types = list(inner.result_types)
        for region in inner.regions:
            for block in region.blocks:
                types.extend(a.type for a in block.arguments)
        for t in types:
            t = c.type(t)
            if isinstance(t, ty.TensorType):
                top = max(top, math.prod(1024 if d is None else d for d in t.shape))
    return top


def candidates(facts: Facts, func: Operation, no_vector: set[int]) -> set[int]:
    """The loops to try vectorising: scf.for without iter_args, nothing sequential inside."""
    out: set[int] = set()
    for op in func.walk():
        if op.name == Scf.for_ and not op.results and len(op.operands) == 3 and id(op) not in no_vector \
                and not facts.sequential[id(op)] and not deep_sync(facts, op):
            out.add(id(op))
    return out


def deep_sync(facts: Facts, loop: Operation) -> bool:
    """Inter-tile ops inside ops of the loop's body (not directly in it)."""
    return any(facts.sync[id(inner)] for block in loop.regions[0].blocks for inner in block.operations)


def direct_sync(loop: Operation) -> bool:
    return any(inner.name in INTERTILE for block in loop.regions[0].blocks for inner in block.operations)


# ---------------------------------------------------------------------- compiled blocks


class LBlock:
    """A block compiled for lanes."""

    __slots__ = ("fns", "n", "arg_slots", "term_slots", "term_kinds")

    def __init__(self) -> None:
        self.fns: tuple[LaneFn, ...] = ()
        self.n = 0
        self.arg_slots: tuple[int, ...] = ()
        self.term_slots: tuple[int, ...] = ()
        self.term_kinds: tuple[tuple[bool, str], ...] = ()  # per yielded value: (laned, kind)

    def run(self, lf: list[Any]) -> None:
        rep: TileContext = lf[0]
        rep.steps += self.n * lf[1].per_tile
        if rep.steps > rep.step_limit:
            raise Diverged("step limit")
        for f in self.fns:
            f(lf)

    def results(self, lf: list[Any], rank: int, want_laned: tuple[bool, ...] | None = None) -> list[Any]:
        """The terminator's values; uniform ones made laned where `want_laned` asks."""
        out = []
        for k, s in enumerate(self.term_slots):
            v = lf[s]
            if want_laned is not None and want_laned[k] and not self.term_kinds[k][0]:
                v = to_laned(v, self.term_kinds[k][1], rank)
            out.append(v)
        return out


# Lane implementations: op name -> factory(compiler, op) -> closure over a lane frame. A
# factory may raise NotVectorisable (inside a vectorised loop) or CompileError (no lockstep).
LANE: dict[str, Callable[[LaneCompiler, Operation], LaneFn]] = {}


def lane_impl(*names: str) -> Callable[[Callable[[LaneCompiler, Operation], LaneFn]], Callable[[LaneCompiler, Operation], LaneFn]]:
    def register(factory: Callable[[LaneCompiler, Operation], LaneFn]) -> Callable[[LaneCompiler, Operation], LaneFn]:
        for n in names:
            LANE[n] = factory
        return factory

    return register


class LaneCompiler(FuncCompiler):
    """Compiles a function for lockstep execution (see the module docstring).

    Slots are those of the per-tile compiler, plus slot 1 for the `Lanes` and one slot per
    laned value carried into each vectorised loop (`alias`). Uniform ops compile with the
    per-tile factories (`pertile` > 0 while they do, so their regions compile per tile too).
    """

    def __init__(self, program: Program, func: Operation, options: Options, no_vector: set[int]) -> None:
        super().__init__(program, func, options)
        self.lanes_slot = self.slot("%__lanes")
        assert self.lanes_slot == 1
        self.pertile = 0
        self.rank = 1  # lane dimensions in the scope being compiled
        self.alias: dict[str, int] = {}
        self.vector_stack: list[int] = []  # the vectorised loops around the op being compiled
        self.no_vector = set(no_vector)
        probe = Facts(self, func, set())
        self.vectorised = candidates(probe, func, self.no_vector)
        self.facts = Facts(self, func, self.vectorised)
        self.sizes = {id(op): largest_tensor(self, op) for op in func.walk() if id(op) in self.vectorised}
        self.fused_loads = fused_loads(func, self.facts)

    # --------------------------------------------------------------- slots

    def operand_slots(self, op: Operation) -> tuple[int, ...]:
        if not self.alias:
            return super().operand_slots(op)
        out = []
        for name in op.operands:
            s = self.alias.get(name)
            if s is None:
                s = self.slots.get(name)
                if s is None:
                    raise CompileError(f"use of undefined value {name}", op)
            out.append(s)
        return tuple(out)

    def value_slot(self, name: str) -> int:
        s = self.alias.get(name)
        return s if s is not None else self.slot(name)

    def is_laned(self, name: str) -> bool:
        return name in self.facts.laned

    def kind(self, t: ty.Type) -> str:
        return kind_of(self.type(t))

    def _reads_laned(self, op: Operation) -> bool:
        laned = self.facts.laned
        return any(n in laned for n in op.operands) or any(n in laned for n in self.facts.free[id(op)])

    def needs_lanes(self, op: Operation) -> bool:
        if self.facts.effects[id(op)]:
            return True
        laned = self.facts.laned
        return any(r in laned for r in op.results) or any(n in laned for n in op.operands) \
            or any(n in laned for n in self.facts.free[id(op)])

    # --------------------------------------------------------------- compile

    def compile_block(self, block: Block, vector: bool = False) -> Any:
        if self.pertile:
            return super().compile_block(block, vector)
        lb = LBlock()
        lb.arg_slots = tuple(self.slot(a.name) for a in block.arguments)
        ops = block.operations
        term = None
        if ops and ops[-1].name in TERMINATORS:
            term = ops[-1]
            ops = ops[:-1]
        lb.fns = tuple(self.compile_op(op) for op in ops)
        if term is not None and term.name not in (Scf.reduce, Scf.forall_in_parallel):
            lb.term_slots = self.operand_slots(term)
            lb.term_kinds = tuple((self.is_laned(n), self.kind(t)) for n, t in zip(term.operands, term.operand_types, strict=True))
        lb.n = len(block.operations)
        return lb

    def lane_region(self, region: IRRegion) -> LBlock:
        """`region` compiled for lanes (outside a per-tile op, where compile_block gives an LBlock)."""
        return cast(LBlock, self.compile_region(region))

    def pertile_op(self, op: Operation, vector: bool = False) -> Any:
        """The per-tile closure of `op` (its regions per tile too)."""
        self.pertile += 1
        saved = self.vector
        self.vector = vector
        try:
            return FuncCompiler.compile_op(self, op)
        finally:
            self.vector = saved
            self.pertile -= 1

    def _uniform(self, op: Operation) -> LaneFn:
        """`op` computed once for all tiles by its per-tile closure (in a vectorised loop, its
        blocks' ops counted once per lane)."""
        f = self.pertile_op(op)
        if not callable(f):
            raise CompileError(f"{op.name} blocks in a uniform position", op)
        if op.regions and self.rank > 1:
            return _scaled_steps(f)
        return f  # type: ignore[no-any-return]

    def compile_op(self, op: Operation) -> Any:
        if self.pertile:
            return super().compile_op(op)
        self.check_types(op, [*op.operand_types, *op.result_types])
        if not self.needs_lanes(op):
            return self._uniform(op)
        outs = [(s, self.kind(t)) for s, n, t in zip(self.result_slots(op), op.results, op.result_types, strict=True)
                if self.is_laned(n)]
        if not self.facts.effects[id(op)] and not self._reads_laned(op) and all(k in ("scalar", "tensor") for _s, k in outs):
            # its results are laned only by name (a value of the same name is defined laned in a
            # sibling region): computed once, as for every tile, and put in laned form (the lane
            # implementations would leave them as they are, without lane dimensions)
            return _laned_results(self._uniform(op), outs, self.rank)
        f: Any  # a lane closure, or what _strict makes of it
        factory = LANE.get(op.name)
        if factory is not None:
            f = factory(self, op)
        elif not self.facts.effects[id(op)]:
            if self.rank > 1 and self.vector_stack:
                raise NotVectorisable(self.vector_stack[-1], f"{op.name} has no vectorised form")
            f = per_lane(self, op)
        else:
            raise CompileError(f"{op.name} has no lockstep implementation", op)
        if self.maybe_empty:
            f = _strict(f, op, self)
        return f


def _laned_results(f: LaneFn, outs: list[tuple[int, str]], rank: int) -> LaneFn:
    """A uniform op whose results `outs` (slot, kind) must be laned values: made so after it."""

    def run(lf: list[Any]) -> None:
        f(lf)
        for s, kind in outs:
            lf[s] = to_laned(lf[s], kind, rank)

    return run


def _scaled_steps(f: LaneFn) -> LaneFn:
    """A uniform op with regions in a vectorised loop runs once for all iterations: its
    blocks' ops count once per lane of each tile."""

    def run(lf: list[Any]) -> None:
        rep = lf[0]
        before = rep.steps
        f(lf)
        rep.steps = before + (rep.steps - before) * lf[1].per_tile
        if rep.steps > rep.step_limit:
            raise Diverged("step limit")

    return run


def per_lane(c: LaneCompiler, op: Operation) -> LaneFn:
    """A pure op with laned operands, run by its per-tile implementation once per lane."""
    laned_in = [n for n in dict.fromkeys([*op.operands, *sorted(c.facts.free[id(op)])]) if c.is_laned(n)]
    types = _value_types(c, op)
    in_slots = [c.value_slot(n) for n in laned_in]
    in_info = [(c.kind(types[n]), c.type(types[n])) for n in laned_in]
    f = c.pertile_op(op)
    if not callable(f):
        raise CompileError(f"{op.name} blocks", op)
    res = c.result_slots(op)
    out_info = [(c.kind(t), c.type(t), c.is_laned(n)) for n, t in zip(op.results, op.result_types, strict=False)]

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        rep = lf[0]
        shape = lanes.shape
        saved = [lf[s] for s in in_slots]
        outs: list[list[Any]] = [[] for _ in res]
        before = rep.steps
        step = None
        try:
            for idx in np.ndindex(*shape):
                for s, v, (kind, t) in zip(in_slots, saved, in_info, strict=True):
                    lf[s] = lane_item(v, idx, kind, t)
                mark = rep.steps
                f(lf)
                if step is None:
                    step = rep.steps - mark
                elif rep.steps - mark != step:
                    raise Diverged(f"{op.name} executes different numbers of ops in different lanes")
                for k, r in enumerate(res):
                    outs[k].append(lf[r])
        finally:
            for s, v in zip(in_slots, saved, strict=True):
                lf[s] = v
        rep.steps = before + (step or 0) * lanes.per_tile
        for r, vals, (kind, t, laned) in zip(res, outs, out_info, strict=True):
            lf[r] = stack(vals, shape, kind, t) if laned else vals[0]

    return run


def _value_types(c: FuncCompiler, op: Operation) -> dict[str, ty.Type]:
    """The types of the values an op reads (operands and the free values of its regions)."""
    types: dict[str, ty.Type] = {}
    for inner in op.walk():
        for n, t in zip(inner.operands, inner.operand_types, strict=False):
            types.setdefault(n, t)
    return types


# ---------------------------------------------------------------------- programs


class LaneFunc:
    def __init__(self, body: LBlock, nslots: int, arg_kinds: list[tuple[bool, str]], ret_info: list[tuple[bool, str, ty.Type]]) -> None:
        self.body = body
        self.nslots = nslots
        self.arg_kinds = arg_kinds
        self.ret_info = ret_info


class Timing:
    """Which of lockstep and the per-tile run is faster for one program and argument shapes.

    Both give the same results, so the choice is only about speed: lockstep's gain depends on
    how much of the function it vectorises against what it runs lane by lane, which is easier
    measured than predicted. The first runs alternate (lockstep first) until each way has run
    three times; later runs take the one whose fastest run used less CPU time. (Two samples
    were too few: a process's first runs can stall in the kernel for hundreds of milliseconds
    while its heap grows, and the ring all-reduce's per-tile runs, 17 ms, lost to lockstep's 30
    when both of their samples came right after a lockstep run.)"""

    SAMPLES = 3
    __slots__ = ("lock", "tile", "choice")

    def __init__(self) -> None:
        self.lock: list[float] = []
        self.tile: list[float] = []
        self.choice: bool | None = None

    def pick(self) -> bool:
        """Whether the next run is in lockstep."""
        if self.choice is not None:
            return self.choice
        return len(self.lock) <= len(self.tile)

    def took(self, lockstep: bool, seconds: float) -> None:
        if self.choice is not None:
            return
        (self.lock if lockstep else self.tile).append(seconds)
        if self.choice is None and len(self.lock) >= self.SAMPLES and len(self.tile) >= self.SAMPLES:
            self.choice = min(self.lock) <= min(self.tile)


class _Memo:
    __slots__ = ("no_vector", "disabled", "compiled", "why", "timings")

    def __init__(self) -> None:
        self.no_vector: set[int] = set()
        self.disabled = False
        self.compiled: dict[tuple[Any, ...], LaneFunc] = {}
        self.why = ""
        self.timings: dict[tuple[Any, ...], Timing] = {}

    def timing(self, signature: tuple[Any, ...]) -> Timing:
        found = self.timings.get(signature)
        if found is None:
            if len(self.timings) > 64:
                self.timings.clear()
            found = self.timings[signature] = Timing()
        return found


_MEMO: weakref.WeakKeyDictionary[Program, dict[str, _Memo]] = weakref.WeakKeyDictionary()


def memo(program: Program, name: str) -> _Memo:
    per = _MEMO.get(program)
    if per is None:
        per = _MEMO[program] = {}
    m = per.get(name)
    if m is None:
        m = per[name] = _Memo()
    return m


def lane_function(program: Program, name: str, options: Options) -> LaneFunc | None:
    """The function compiled for lockstep, or None when it cannot run in lockstep."""
    m = memo(program, name)
    if m.disabled:
        return None
    key = (options.strict, options.check_races, frozenset(m.no_vector))
    found = m.compiled.get(key)
    if found is not None:
        return found
    func = program.funcs[name]

    probe = FuncCompiler(program, func, options)
    if math.prod(grid_of(program, func)) * largest_tensor(probe, func) * 8 > LOCKSTEP_BYTES:
        m.disabled = True
        m.why = "the tiles' working set is large: the per-tile run is as fast"
        return None
    while True:
        c = LaneCompiler(program, func, options, m.no_vector)
        try:
            found = _compile(c, func)
            break
        except NotVectorisable as e:
            m.no_vector.add(e.loop)
        except (CompileError, KtirRuntimeError, Diverged) as e:
            m.disabled = True
            m.why = f"not compiled for lockstep: {e}"
            return None
    key = (options.strict, options.check_races, frozenset(m.no_vector))
    m.compiled[key] = found
    return found


def _compile(c: LaneCompiler, func: Operation) -> LaneFunc:
    from ktir.ir import attributes as at

    ftype = c.attr(func, "function_type")
    arg_types = [c.type(t) for t in ftype.value.inputs] if isinstance(ftype, at.TypeAttr) and isinstance(ftype.value, ty.FunctionType) else []
    block = func.regions[0].blocks[0]
    body = c.compile_block(block)
    arg_kinds = [(c.is_laned(a.name), kind_of(t)) for a, t in zip(block.arguments, arg_types, strict=False)]
    term = block.operations[-1] if block.operations else None
    rets: list[tuple[bool, str, ty.Type]] = []
    if term is not None and term.name in TERMINATORS:
        rets = [(c.is_laned(n), c.kind(t), c.type(t)) for n, t in zip(term.operands, term.operand_types, strict=True)]
    return LaneFunc(body, c.nslots, arg_kinds, rets)


def execute(lane: LaneFunc, machine: Machine, contexts: list[TileContext], per_tile: list[list[Any]]) -> list[tuple[Any, ...]]:
    """Run the lane program; per-tile returns. Raises Diverged (or any error) to give up."""
    n = machine.n_tiles
    for k, (laned, _kind) in enumerate(lane.arg_kinds):
        first = per_tile[0][k]
        if not laned and any(per_tile[t][k] is not first for t in range(1, n)):
            raise Diverged("an argument differs between tiles")
    rep = TileContext(machine, 0)
    lf: list[Any] = [None] * lane.nslots
    lf[0] = rep
    lanes = Lanes(machine, contexts, rep)
    lf[1] = lanes
    for s, (laned, kind), k in zip(lane.body.arg_slots, lane.arg_kinds, range(len(lane.arg_kinds)), strict=False):
        if laned:
            items = [per_tile[t][k] for t in range(n)]
            lf[s] = PerTile(items) if kind == "view" else np.stack([np.asarray(x) for x in items])
        else:
            lf[s] = per_tile[0][k]
    lane.body.run(lf)
    for ctx, extra in zip(contexts, lanes.extra, strict=True):
        ctx.steps = rep.steps + extra
        if ctx.steps > ctx.step_limit:
            raise Diverged("step limit")
    values = [lf[s] for s in lane.body.term_slots]
    returns: list[tuple[Any, ...]] = []
    for t in range(n):
        row = []
        for v, (laned, kind, typ) in zip(values, lane.ret_info, strict=True):
            row.append(lane_item(v, (t,), kind, typ) if laned else v)
        returns.append(tuple(row))
    return returns


def full(a: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A laned scalar array broadcast to the full lane shape (a view)."""
    return np.broadcast_to(np.asarray(a), shape)


def lanes_count(shape: tuple[int, ...]) -> int:
    return int(math.prod(shape))
