"""Lane implementations of the inter-tile ops (lockstep.py).

In lockstep every tile executes `inter_tile_produce` at the same time, so the n-th
execution is instance n on every tile, and a delivery op finds every partial of its
instance already posted: the producers' values are one laned value, and a consumer's
result is computed from the lanes of its producers, for all consumers at once (a reduce
folds in ascending producer id from the identity, as the per-tile run does, one combiner
execution per producer position). The race tracker sees the same posts (snapshots, in tile
order) and joins; the statistics count the same bytes sent and received.

Lockstep gives up when a tile is not a consumer of a delivery op (its results are
undefined there), when a consumer waits for a partial nobody posted (the per-tile run
reports the deadlock), or when a delivery op's consumers have different numbers of
producers and it has to fold (it then runs consumer by consumer only for gather, scatter
and all-to-all).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ktir.dialects.names import Ktdp
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from .dtypes import np_dtype
from .errors import CompileError
from .lockstep import DELIVERY, Diverged, LaneCompiler, LaneFn, Lanes, lane_impl, lane_item, stack
from .ops import intertile as it

I64 = np.int64


class LFuture:
    """A tile future in lockstep: the instance, the producers' values (laned or uniform) and
    the snapshots they posted."""

    __slots__ = ("key", "n", "info", "values", "laned", "snaps", "posted", "region")

    def __init__(self, key: int, n: int, info: Any, values: list[Any], laned: list[bool], snaps: dict[int, Any],
                 posted: set[int], region: Any) -> None:
        self.key = key
        self.n = n  # the instance of the first iteration's lanes (one instance per iteration)
        self.info = info
        self.values = values
        self.laned = laned
        self.snaps = snaps
        self.posted = posted
        self.region = region  # the vectorised loop chunk it was produced in (None: none)


def _nbytes(v: Any, laned: bool, t: ty.Type, rank: int) -> int:
    """Bytes of one tile's value, as the per-tile run counts them (Python ints count 0)."""
    t_ = t
    if isinstance(t_, ty.TensorType):
        a = np.asarray(v)
        shape = a.shape[rank:] if laned else a.shape
        return math.prod(shape) * a.dtype.itemsize
    if isinstance(t_, ty.FloatType):
        return int(np_dtype(t_).itemsize)
    return 0


def _take(v: Any, laned: bool, tiles: np.ndarray) -> Any:
    """The values of the given tiles (one per lane), laned."""
    if not laned or v.shape[0] == 1:
        return v
    first = int(tiles[0])
    if (tiles == first).all():
        return v[first : first + 1]  # one lane for all (an all-reduce's fold then runs once, broadcast)
    return v[tiles]


def _scope(lanes: Lanes, R: int) -> Any:
    """The vectorised loop chunk an inter-tile op runs in (None at the function's level): the
    op must be directly in its body."""
    if R == 1:
        return None
    sync = lanes.sync
    if sync is None or sync.rank != R:
        raise Diverged("an inter-tile op outside the body of its vectorised loop")
    return sync


@lane_impl(Ktdp.inter_tile_produce)
def produce(c: LaneCompiler, op: Operation) -> LaneFn:
    R = c.rank
    (r,) = c.result_slots(op)
    _, gset = it._future_type(c, op.result_types[0], op)
    pset = it._set1(c, op, op.attributes.get("producer_tiles_per_group"), "producer_tiles_per_group", (1,))
    block = op.regions[0].blocks[0]
    if any(c.facts.effects[id(inner)] for inner in block.operations):
        raise CompileError("an inter_tile_produce body with effects", op)
    body = c.lane_region(op.regions[0])
    if len(body.arg_slots) != 1:
        raise CompileError("the produce body takes one argument (the group id)", op)
    (gid,) = body.arg_slots
    term = block.operations[-1]
    types = [c.type(t) for t in term.operand_types]
    laned = [k[0] for k in body.term_kinds]
    key = id(op)
    infos: dict[int, Any] = {}

    def info_for(machine: Any) -> Any:
        found = infos.get(id(machine))
        if found is None or found[0] is not machine:
            groups = it._groups(machine, gset)
            producers: dict[int, list[int]] = {}
            group_of: dict[int, int] = {}
            for g in groups:
                tiles = it._members(pset, (g,), machine.n_tiles, "producer_tiles_per_group")
                producers[g] = tiles
                for t in tiles:
                    if t in group_of:
                        raise Diverged("producer groups overlap")
                    group_of[t] = g
            found = (machine, it.ProduceInfo(groups, producers, group_of, op))
            infos.clear()
            infos[id(machine)] = found
        return found[1]

    tail = (1,) * (R - 1)

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        machine = lanes.machine
        region = _scope(lanes, R)
        m = lanes.per_tile  # iterations at once (one instance each)
        info = info_for(machine)
        n = lanes.contexts[0].counters.get(key, 0)
        for ctx in lanes.contexts:
            ctx.counters[key] = n + m
        producers = [t for t in range(lanes.n_tiles) if t in info.group_of]
        lf[gid] = np.array([info.group_of.get(t, 0) for t in range(lanes.n_tiles)], dtype=I64).reshape((-1,) + tail)
        rep = lf[0]
        before = rep.steps
        body.run(lf)
        ran = rep.steps - before  # only the producers run the body
        rep.steps = before
        for t in producers:
            lanes.extra[t] += ran
        values = [lf[s] for s in body.term_slots]
        snaps: dict[int, Any] = {}
        if region is not None:
            region.events.append(("post", key, n, producers))  # the snapshots, after the chunk
        sent = m * sum(_nbytes(v, lan, ty_, R) for v, lan, ty_ in zip(values, laned, types, strict=True))  # per producer
        for t in producers:
            ctx = lanes.contexts[t]
            if lanes.race_on and region is None:
                snaps[t] = lanes.tracker.snapshot_and_advance(t)
            ctx.sent += sent
        machine.posts += len(producers) * m
        lf[r] = LFuture(key, n, info, values, laned, snaps, set(producers), region)

    return run


@lane_impl(*DELIVERY)
def deliver(c: LaneCompiler, op: Operation) -> LaneFn:
    R = c.rank
    fut = c.operand_slot(op, "future")
    kind = op.name
    reduces = kind in (Ktdp.inter_tile_reduce, Ktdp.inter_tile_reduce_scatter)
    identity = c.operand_group(op, "identity") if reduces else ()
    id_laned = [c.is_laned(n) for n in op.operands[1:]] if reduces else []
    res = c.result_slots(op)
    cset = it._set1(c, op, op.attributes.get("consumer_tiles_per_group"), "consumer_tiles_per_group", (1,))
    dep_attr = op.attributes.get("producer_dependency_per_consumer")
    dset = it._set1(c, op, dep_attr, "producer_dependency_per_consumer", (1, 2)) if dep_attr is not None else None
    out_types = [c.rtype(op, i) for i in range(len(res))]
    out_shapes = [tuple(getattr(t, "shape", ())) for t in out_types]
    combiner = None
    if reduces:
        if not op.regions:
            raise CompileError(f"{kind} needs a combiner region", op)
        if any(c.facts.effects[id(inner)] for inner in op.regions[0].blocks[0].operations):
            raise CompileError("a combiner with effects", op)
        combiner = c.lane_region(op.regions[0])
        if len(identity) != len(res) or len(combiner.arg_slots) != 2 * len(res):
            raise CompileError("the combiner takes 2N arguments for N identity values and results", op)
    gather_dims = it._dims(c, op, "gather_dimensions") if kind == Ktdp.inter_tile_gather else []
    scatter_dims = it._dims(c, op, "scatter_dimensions") if kind in (Ktdp.inter_tile_scatter, Ktdp.inter_tile_reduce_scatter) else []
    split_dims = it._dims(c, op, "split_dimensions") if kind == Ktdp.inter_tile_all_to_all else []
    concat_dims = it._dims(c, op, "concat_dimensions") if kind == Ktdp.inter_tile_all_to_all else []
    key = id(op)
    value_types = None

    def fold(lf: list[Any], f: LFuture, deps: np.ndarray) -> list[Any]:
        assert combiner is not None
        n = len(res)
        acc = [lf[s] for s in identity]
        acc_laned = list(id_laned)
        for j in range(deps.shape[1]):
            parts = [_take(v, lan, deps[:, j]) for v, lan in zip(f.values, f.laned, strict=True)]
            for s, v, lan in zip(combiner.arg_slots[:n], acc, acc_laned, strict=True):
                lf[s] = v if lan else _as_laned(v, R)
            for s, v, lan in zip(combiner.arg_slots[n:], parts, f.laned, strict=True):
                lf[s] = v if lan else _as_laned(v, R)
            combiner.run(lf)
            acc = combiner.results(lf, R, tuple(True for _ in range(n)))
            acc_laned = [True] * n
        return acc

    def run(lf: list[Any]) -> None:
        nonlocal value_types
        lanes: Lanes = lf[1]
        machine = lanes.machine
        f = lf[fut]
        if type(f) is not LFuture:
            raise Diverged("the operand is not a tile future of this run")
        region = _scope(lanes, R)
        if f.region is not region:
            raise Diverged("a future from outside this iteration")
        m = lanes.per_tile
        n_tiles = lanes.n_tiles
        for ctx in lanes.contexts:
            ctx.counters[key] = ctx.counters.get(key, 0) + m
        plan = it._plan(machine, (key, f.key), f.info, cset, dset, kind)
        if len(plan.group_of) != n_tiles:
            raise Diverged("a tile is not a consumer: its results are undefined")
        deps = [plan.deps[t] for t in range(n_tiles)]
        for d in deps:
            if any(p not in f.posted for p in d):
                raise Diverged("a consumer waits for a partial nobody posted")
        if region is not None:
            region.events.append(("join", f.key, f.n, deps))  # the joins, after the chunk
        elif lanes.race_on:
            for t, d in enumerate(deps):
                snaps = [f.snaps[p] for p in d if p in f.snaps]
                if snaps:
                    lanes.tracker.join(t, snaps)
        if value_types is None:
            value_types = _future_types(c, op)
        per_partial = m * sum(_nbytes(v, lan, tt, R) for v, lan, tt in zip(f.values, f.laned, value_types, strict=True))
        for t, d in enumerate(deps):
            lanes.contexts[t].received += per_partial * len(d)
        equal = len({len(d) for d in deps}) == 1
        if kind == Ktdp.inter_tile_consume:
            if not equal or len(deps[0]) != 1:
                raise Diverged("consume from several producers")
            first = np.array(deps, dtype=I64)[:, 0]
            out = [_take(v, lan, first) if lan else _as_laned(v, R) for v, lan in zip(f.values, f.laned, strict=True)]
        elif kind == Ktdp.inter_tile_reduce:
            if not equal:
                raise Diverged("consumers fold different numbers of partials")
            out = fold(lf, f, np.array(deps, dtype=I64))
        else:
            if R > 1:
                raise Diverged(f"{kind} in a vectorised loop", region.loop if region is not None else None)
            out = _per_consumer(lanes, f, plan, deps, kind, out_shapes, out_types, gather_dims, scatter_dims,
                                split_dims, concat_dims, fold if reduces else None, lf)
        for r, v in zip(res, out, strict=True):
            lf[r] = v

    return run


def _future_types(c: LaneCompiler, op: Operation) -> list[ty.Type]:
    t = c.type(op.operand_types[0])
    assert isinstance(t, ty.TileFutureType)
    return [c.type(x) for x in t.partial_types]


def _as_laned(v: Any, rank: int) -> Any:
    a = np.asarray(v)
    return a.reshape((1,) * rank + a.shape)


def _per_consumer(lanes: Lanes, f: LFuture, plan: Any, deps: list[list[int]], kind: str, out_shapes: list[Any],
                  out_types: list[ty.Type], gather_dims: list[int], scatter_dims: list[int], split_dims: list[int],
                  concat_dims: list[int], fold: Any, lf: list[Any]) -> list[Any]:
    """Gather, scatter, all-to-all and reduce-scatter, one consumer at a time (the per-tile code)."""
    if fold is not None:
        if len({len(d) for d in deps}) != 1:
            raise Diverged("consumers fold different numbers of partials")
        whole = fold(lf, f, np.array(deps, dtype=I64))
    rows: list[list[Any]] = []
    for t, d in enumerate(deps):
        g = plan.group_of[t]
        consumers = plan.consumers[g]
        local = consumers.index(t)
        parts = [[np.asarray(lane_item(v, (p,), "tensor", tt)) if lan else np.asarray(v)
                  for v, lan, tt in zip(f.values, f.laned, out_types, strict=False)] for p in d]
        if kind == Ktdp.inter_tile_reduce_scatter:
            row = [it._flat_split(np.asarray(w[t] if w.shape[0] > 1 else w[0]), scatter_dims, len(consumers), local, s)
                   for w, s in zip(whole, out_shapes, strict=True)]
        elif kind == Ktdp.inter_tile_gather:
            row = [it._flat_concat([p[i] for p in parts], gather_dims, out_shapes[i]) for i in range(len(out_shapes))]
        elif kind == Ktdp.inter_tile_scatter:
            row = [it._flat_split(v, scatter_dims, len(consumers), local, s) for v, s in zip(parts[0], out_shapes, strict=True)]
        else:
            row = []
            for i in range(len(out_shapes)):
                pieces = [it._flat_split(p[i], split_dims, len(consumers), local, np.shape(p[i])) for p in parts]
                row.append(it._flat_concat(pieces, concat_dims, out_shapes[i]))
        rows.append(row)
    return [stack([row[i] for row in rows], (lanes.n_tiles,), "tensor", out_types[i]) for i in range(len(out_shapes))]
