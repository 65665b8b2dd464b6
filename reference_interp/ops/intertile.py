"""Inter-tile communication: `inter_tile_produce` and the six delivery ops.

Semantics (upstream design `docs/inter-tile-communication.md`, summarised in README.md):

- Tile ids in the `(i)[g]` sets are *linear* tile ids (dimension 0 of the grid varies fastest).
- Every tile executes `inter_tile_produce`; the k-th execution on each tile is instance k
  of the future. Tiles in `producer_tiles_per_group(g)` for a group g of the future's
  `groups` run the body with `%gid = g` and post their partial values; the post closes
  the producer's current happens-before segment.
- A delivery op runs on the tiles of `consumer_tiles_per_group(g)`. Consumer c of group
  g waits for the producers `producer_dependency_per_consumer(p)[c, g]` (all producers
  of g when absent: a full barrier), then joins their clocks. Other tiles skip the op;
  using its results there is an error (`Undefined`).
- `reduce` folds, in ascending producer id, starting from the identity; `gather`
  concatenates in ascending producer id along the flattened `gather_dimensions`;
  `scatter`/`reduce_scatter` give the consumer with local index l the l-th of C chunks of
  the flattened `scatter_dimensions`; `all_to_all` does both.

Tiles run as generators stepped round-robin in tile order by the scheduler, so runs are
deterministic; when every unfinished tile waits and nothing changes, it is a deadlock.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ktir.dialects.names import Ktdp
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from ..affine_eval import CompiledSet
from ..compiler import Blocking, CBlock, FuncCompiler, OpFn, impl
from ..errors import CompileError, fail
from ..runtime import Machine, TileContext, Undefined
from .common import int_array


@dataclass
class Wait:
    """Yielded by a tile blocked on a delivery op."""

    op: Operation
    missing: list[int]
    future: tuple[int, int]


@dataclass
class ProduceInfo:
    groups: list[int]
    producers: dict[int, list[int]]  # group -> producer tiles, ascending
    group_of: dict[int, int]  # producer tile -> group
    op: Operation


@dataclass
class DeliveryPlan:
    group_of: dict[int, int]  # consumer tile -> group
    consumers: dict[int, list[int]]  # group -> consumer tiles, ascending
    deps: dict[int, list[int]]  # consumer tile -> producers it waits for, ascending
    refcount: dict[int, int]  # producer tile -> number of consumers that take its partial


class Entry:
    """One producer's post of one future instance: its values and clock (None without the race check)."""

    __slots__ = ("values", "snap", "remaining")

    def __init__(self, values: list[Any], snap: list[int] | None) -> None:
        self.values = values
        self.snap = snap
        self.remaining: int | None = None


def _nbytes(values: list[Any]) -> int:
    n = 0
    for v in values:
        if type(v) is np.ndarray:
            n += v.nbytes
        else:
            n += int(getattr(v, "nbytes", 0))
    return n


@dataclass
class FutureStore:
    posted: dict[tuple[int, int], dict[int, Entry]] = field(default_factory=dict)
    plans: dict[tuple[int, int], DeliveryPlan] = field(default_factory=dict)
    takes: int = 0
    ops: dict[int, Operation] = field(default_factory=dict)  # id -> every inter-tile op executed


class FutureHandle:
    """The value of a `!ktdp.tile_future` on one tile: which produce op and instance."""

    __slots__ = ("key", "n", "info")

    def __init__(self, key: int, n: int, info: ProduceInfo) -> None:
        self.key = key
        self.n = n
        self.info = info


def store_of(machine: Machine) -> FutureStore:
    if machine.futures is None:
        machine.futures = FutureStore()
    return machine.futures  # type: ignore[no-any-return]


def _members(s: CompiledSet, syms: tuple[int, ...], n_tiles: int, what: str) -> list[int]:
    pts = s.points(syms)
    if pts.count == 0:
        return []
    if pts.mask is None:
        lo, end = pts.lo[0], pts.lo[0] + pts.ext[0]
        if lo < 0 or end > n_tiles:  # checked before listing: a box may reach 2^63 tiles
            first = lo if not 0 <= lo < n_tiles else n_tiles
            raise fail("out-of-bounds", f"{what} names tile {first}, outside the grid of {n_tiles} tiles")
        tiles = list(range(lo, end))
    else:
        tiles = [int(i) + pts.lo[0] for i in np.nonzero(pts.mask)[0]]
    outside = [t for t in tiles if not 0 <= t < n_tiles]
    if outside:
        raise fail("out-of-bounds", f"{what} names tile {outside[0]}, outside the grid of {n_tiles} tiles")
    return tiles


def _groups(machine: Machine, gset: CompiledSet) -> list[int]:
    pts = gset.points(())
    if pts.count > machine.n_tiles * 64 + 64:
        raise fail("memory-limit", f"the future's groups set has {pts.count} groups")
    if pts.mask is None:
        return list(range(pts.lo[0], pts.lo[0] + pts.ext[0])) if pts.count else []
    return [int(i) + pts.lo[0] for i in np.nonzero(pts.mask)[0]]


def _set1(c: FuncCompiler, op: Operation, attr: Any, what: str, nsyms: tuple[int, ...]) -> CompiledSet:
    attr = c.program.attr(attr)
    if not isinstance(attr, at.IntegerSetAttr):
        raise CompileError(f"{what} must be an affine_set", op)
    s = CompiledSet(attr.value, what, c.options.max_set_points)
    if s.nd != 1 or s.ns not in nsyms:
        raise CompileError(f"{what} must have one dimension and {' or '.join(map(str, nsyms))} symbol(s)", op)
    return s


def _future_type(c: FuncCompiler, t: ty.Type, op: Operation) -> tuple[ty.TileFutureType, CompiledSet]:
    t = c.type(t)
    if not isinstance(t, ty.TileFutureType):
        raise CompileError("expected a !ktdp.tile_future", op)
    return t, _set1(c, op, t.groups, "the future's groups", (0,))


@impl(Ktdp.inter_tile_produce)
def produce(c: FuncCompiler, op: Operation) -> OpFn:
    (r,) = c.result_slots(op)
    _, gset = _future_type(c, op.result_types[0], op)
    pset = _set1(c, op, op.attributes.get("producer_tiles_per_group"), "producer_tiles_per_group", (1,))
    body = c.compile_region(op.regions[0])
    if body.blocking:
        raise CompileError("inter-tile delivery ops inside an inter_tile_produce body are not supported", op)
    if len(body.arg_slots) != 1:
        raise CompileError("the produce body takes one argument (the group id)", op)
    (gid,) = body.arg_slots
    key = id(op)
    known: dict[int, ProduceInfo] = {}  # grid size -> the info, the same for every run (read only)

    def info_for(machine: Machine) -> ProduceInfo:
        groups = _groups(machine, gset)
        producers: dict[int, list[int]] = {}
        group_of: dict[int, int] = {}
        for g in groups:
            tiles = _members(pset, (g,), machine.n_tiles, "producer_tiles_per_group")
            producers[g] = tiles
            for t in tiles:
                if t in group_of:
                    raise fail("undefined", f"tile {t} produces for groups {group_of[t]} and {g}: producer groups must be disjoint (R1)")
                group_of[t] = g
        info = known[machine.n_tiles] = ProduceInfo(groups, producers, group_of, op)
        return info

    def run(fr: list[Any]) -> None:
        ctx: TileContext = fr[0]
        machine = ctx.machine
        futures = store_of(machine)
        info = known.get(machine.n_tiles)
        if info is None:
            info = info_for(machine)
        counters = ctx.counters
        n = counters.get(key, 0)
        counters[key] = n + 1
        if not n:
            futures.ops[key] = op
        tile = ctx.tile
        g = info.group_of.get(tile)
        if g is not None:
            fr[gid] = g
            body.run(fr)
            values = body.results(fr)
            snap = ctx.tracker.snapshot_and_advance(tile) if ctx.race_on else None
            fkey = (key, n)
            posts = futures.posted.get(fkey)
            if posts is None:
                posts = futures.posted[fkey] = {}
            posts[tile] = Entry(values, snap)
            machine.posts += 1
            ctx.sent += _nbytes(values)
            ctx.sync = (fkey, (tile,))
        fr[r] = FutureHandle(key, n, info)

    return run


def _plan(machine: Machine, key: tuple[int, int], info: ProduceInfo, cset: CompiledSet, dset: CompiledSet | None,
          kind: str) -> DeliveryPlan:
    futures = store_of(machine)
    plan = futures.plans.get(key)
    if plan is not None:
        return plan
    group_of: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    deps: dict[int, list[int]] = {}
    refcount: dict[int, int] = {}
    for g in info.groups:
        tiles = _members(cset, (g,), machine.n_tiles, "consumer_tiles_per_group")
        consumers[g] = tiles
        producers = info.producers.get(g, [])
        for t in tiles:
            if t in group_of:
                raise fail("undefined", f"tile {t} consumes in groups {group_of[t]} and {g}")
            group_of[t] = g
            if dset is None or kind == Ktdp.inter_tile_scatter:
                mine = list(producers)
            else:
                syms = (t,) if dset.ns == 1 else (t, g)
                mine = [p for p in range(machine.n_tiles) if dset.contains_point((p,), syms)]
                stray = [p for p in mine if p not in producers]
                if stray:
                    raise fail("undefined", f"consumer tile {t} depends on tile {stray[0]}, which is not a producer of group {g} (R3)")
            if kind in (Ktdp.inter_tile_consume, Ktdp.inter_tile_scatter) and len(mine) != 1:
                raise fail(
                    "undefined",
                    f"consumer tile {t} of group {g} has {len(mine)} sources; {kind} delivers from exactly one "
                    "producer per consumer (R8)",
                )
            deps[t] = mine
            for p in mine:
                refcount[p] = refcount.get(p, 0) + 1
    plan = DeliveryPlan(group_of, consumers, deps, refcount)
    futures.plans[key] = plan
    return plan


def _flat_split(x: np.ndarray, dims: list[int], parts: int, index: int, out_shape: tuple[Any, ...]) -> np.ndarray:
    front = list(range(len(dims)))
    moved = np.moveaxis(x, dims, front)
    extent = int(math.prod([x.shape[d] for d in dims]))
    if parts == 0 or extent % parts:
        raise fail("type", f"cannot split extent {extent} of dimensions {dims} into {parts} chunks (R9)")
    chunk = extent // parts
    rest = moved.shape[len(dims):]
    flat = moved.reshape((extent, *rest))[index * chunk:(index + 1) * chunk]
    return np.moveaxis(flat.reshape((*_axis_extents(x.shape, dims, out_shape, chunk), *rest)), front, dims)


def _flat_concat(pieces: list[np.ndarray], dims: list[int], out_shape: tuple[Any, ...]) -> np.ndarray:
    front = list(range(len(dims)))
    flats = []
    for p in pieces:
        moved = np.moveaxis(p, dims, front)
        extent = int(math.prod([p.shape[d] for d in dims]))
        flats.append(moved.reshape((extent, *moved.shape[len(dims):])))
    joined = np.concatenate(flats, axis=0)
    total = joined.shape[0]
    rest = joined.shape[1:]
    return np.moveaxis(joined.reshape((*_axis_extents(pieces[0].shape, dims, out_shape, total), *rest)), front, dims)


def _axis_extents(shape: tuple[int, ...], dims: list[int], out_shape: tuple[Any, ...], total: int) -> list[int]:
    """Per-axis extents of the flattened axes in the result: from the type when static,
    otherwise the first listed axis absorbs the change."""
    wanted = [out_shape[d] if d < len(out_shape) else None for d in dims]
    static = [int(w) for w in wanted if w is not None]
    if len(static) == len(wanted) and int(math.prod(static)) == total:
        return static
    others = int(math.prod([shape[d] for d in dims[1:]]))
    if others == 0 or total % others:
        raise fail("type", f"cannot lay out {total} elements over dimensions {dims}")
    return [total // others] + [shape[d] for d in dims[1:]]


def _dims(c: FuncCompiler, op: Operation, name: str) -> list[int]:
    dims = int_array(c.need_attr(op, name))
    if dims != sorted(set(dims)) or not dims:
        raise CompileError(f"{name} must be non-empty and ascending (R9)", op)
    return dims


DELIVERY = (Ktdp.inter_tile_consume, Ktdp.inter_tile_reduce, Ktdp.inter_tile_gather, Ktdp.inter_tile_scatter,
            Ktdp.inter_tile_all_to_all, Ktdp.inter_tile_reduce_scatter)


@impl(*DELIVERY)
def deliver(c: FuncCompiler, op: Operation) -> Blocking:
    fut = c.operand_slot(op, "future")
    reduces = op.name in (Ktdp.inter_tile_reduce, Ktdp.inter_tile_reduce_scatter)
    identity = c.operand_group(op, "identity") if reduces else ()
    res = c.result_slots(op)
    kind = op.name
    cset = _set1(c, op, op.attributes.get("consumer_tiles_per_group"), "consumer_tiles_per_group", (1,))
    dep_attr = op.attributes.get("producer_dependency_per_consumer")
    dset = _set1(c, op, dep_attr, "producer_dependency_per_consumer", (1, 2)) if dep_attr is not None else None
    out_shapes = [tuple(getattr(c.rtype(op, i), "shape", ())) for i in range(len(res))]
    combiner: CBlock | None = None
    if kind in (Ktdp.inter_tile_reduce, Ktdp.inter_tile_reduce_scatter):
        if not op.regions:
            raise CompileError(f"{kind} needs a combiner region", op)
        combiner = c.compile_region(op.regions[0])
        if combiner.blocking:
            raise CompileError("the combiner may not communicate", op)
        if len(identity) != len(res) or len(combiner.arg_slots) != 2 * len(res):
            raise CompileError("the combiner takes 2N arguments for N identity values and results", op)
    gather_dims = _dims(c, op, "gather_dimensions") if kind == Ktdp.inter_tile_gather else []
    scatter_dims = _dims(c, op, "scatter_dimensions") if kind in (Ktdp.inter_tile_scatter, Ktdp.inter_tile_reduce_scatter) else []
    split_dims = _dims(c, op, "split_dimensions") if kind == Ktdp.inter_tile_all_to_all else []
    concat_dims = _dims(c, op, "concat_dimensions") if kind == Ktdp.inter_tile_all_to_all else []
    key = id(op)
    plans: dict[int, tuple[ProduceInfo, DeliveryPlan]] = {}  # id(info) -> (info, plan)

    def fold(fr: list[Any], parts: list[list[Any]]) -> list[Any]:
        assert combiner is not None
        acc = [fr[s] for s in identity]
        n = len(acc)
        for values in parts:
            for s, v in zip(combiner.arg_slots[:n], acc, strict=True):
                fr[s] = v
            for s, v in zip(combiner.arg_slots[n:], values, strict=True):
                fr[s] = v
            combiner.run(fr)
            acc = combiner.results(fr)
        return acc

    def gen(fr: list[Any]) -> Generator[Any, None, None]:
        ctx: TileContext = fr[0]
        machine = ctx.machine
        executed = ctx.counters.get(key, 0)
        ctx.counters[key] = executed + 1
        if not executed:
            store_of(machine).ops[key] = op
        handle = fr[fut]
        if not isinstance(handle, FutureHandle):
            raise fail("type", "the operand is not a tile future")
        # the plan depends only on the sets and the producers' info, the same object in every
        # run of the grid size (produce's info_for): kept across runs, read only
        got = plans.get(id(handle.info))
        if got is not None and got[0] is handle.info:
            plan = got[1]
        else:
            plan = _plan(machine, (key, handle.key), handle.info, cset, dset, kind)
            if len(plans) > 64:
                plans.clear()
            plans[id(handle.info)] = (handle.info, plan)
        g = plan.group_of.get(ctx.tile)
        if g is None:
            why = f"tile {ctx.tile} is not in consumer_tiles_per_group of {kind}"
            for r in res:
                fr[r] = Undefined(why)
            return
        deps = plan.deps[ctx.tile]
        futures = store_of(machine)
        fkey = (handle.key, handle.n)
        while True:
            posted = futures.posted.get(fkey)
            if posted is not None and (deps[0] in posted if len(deps) == 1 else all(p in posted for p in deps)):
                break
            yield Wait(op, [p for p in deps if posted is None or p not in posted], fkey)
        parts = []
        snaps = []
        for p in deps:
            entry = posted[p]
            parts.append(entry.values)
            if entry.snap is not None:
                snaps.append(entry.snap)
            if entry.remaining is None:
                entry.remaining = plan.refcount.get(p, 1)
            entry.remaining -= 1
            if entry.remaining <= 0:
                del posted[p]
        if not posted:
            futures.posted.pop(fkey, None)
        futures.takes += 1
        if ctx.race_on and snaps:
            ctx.tracker.join(ctx.tile, snaps)
        consumers = plan.consumers[g]
        local = consumers.index(ctx.tile)
        if kind == Ktdp.inter_tile_consume:
            out = list(parts[0])
        elif kind == Ktdp.inter_tile_reduce:
            out = fold(fr, parts)
        elif kind == Ktdp.inter_tile_reduce_scatter:
            out = [_flat_split(np.asarray(v), scatter_dims, len(consumers), local, s)
                   for v, s in zip(fold(fr, parts), out_shapes, strict=True)]
        elif kind == Ktdp.inter_tile_gather:
            out = [_flat_concat([np.asarray(p[i]) for p in parts], gather_dims, out_shapes[i]) for i in range(len(res))]
        elif kind == Ktdp.inter_tile_scatter:
            out = [_flat_split(np.asarray(v), scatter_dims, len(consumers), local, s)
                   for v, s in zip(parts[0], out_shapes, strict=True)]
        else:  # all_to_all
            out = []
            for i in range(len(res)):
                pieces = [_flat_split(np.asarray(p[i]), split_dims, len(consumers), local, np.shape(p[i])) for p in parts]
                out.append(_flat_concat(pieces, concat_dims, out_shapes[i]))
        for r, v in zip(res, out, strict=True):
            fr[r] = v
        for values in parts:
            ctx.received += _nbytes(values)
        ctx.sync = (fkey, tuple(deps))

    return Blocking(gen)


def check_counts(machine: Machine, contexts: list[TileContext]) -> None:
    """At kernel end: every tile executed each inter-tile op equally often (matching is by
    execution count, so a tile that runs one more produce or delivery than another leaves a
    communication without its partner: `runtime.deadlock`)."""
    if machine.futures is None:
        return
    for key, op in store_of(machine).ops.items():
        counts = [ctx.counters.get(key, 0) for ctx in contexts]
        if len(set(counts)) <= 1:
            continue
        most = max(counts)
        short = [t for t, n in enumerate(counts) if n != most]
        ahead = counts.index(most)
        times = "time" if most == 1 else "times"
        raise fail(
            "deadlock",
            f"tile {ahead} executed this op {most} {times} but tile {short[0]} executed it {counts[short[0]]} "
            f"time{'' if counts[short[0]] == 1 else 's'}: every tile must execute each inter-tile op equally often, "
            "the n-th executions on all tiles forming one communication",
        ).attach(op, grid=machine.grid)
