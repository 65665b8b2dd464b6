"""Lane implementations of control flow, tile ids, elementwise ops and memory ops (lockstep.py).

Scalar `arith` and `math` ops on laned values reuse the per-tile implementations compiled
in vector mode (as inside linalg bodies): the same numpy functions, elementwise over the
lanes, so each lane computes exactly what the per-tile op computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ktir.dialects.access import named
from ktir.dialects.names import Arith, Ktdp, Scf
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from . import lockstep_memory as lsm
from .affine_eval import compile_map
from .compiler import Uninit
from .dtypes import np_dtype
from .errors import CompileError, KtirRuntimeError
from .lockstep import (
    CHUNK_BYTES,
    MAX_LANES,
    Diverged,
    LaneCompiler,
    LaneFn,
    Lanes,
    NotVectorisable,
    PerTile,
    Region,
    direct_sync,
    expand,
    lane_impl,
    lane_item,
    partial,
    scatter,
    subset,
    to_laned,
)
from .memo import MISSING, Memo
from .ops.common import element
from .ops.scf import trip_count

I64 = np.int64


# ---------------------------------------------------------------------- tiles


@lane_impl(Ktdp.get_compute_tile_id)
def tile_id(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.ktdp import func_grid

    res = c.result_slots(op)
    grid = func_grid(c)
    dim = c.attr(op, "dim")
    axes = [int(dim.value)] if isinstance(dim, at.IntegerAttr) else list(range(len(res)))
    if len(res) != len(axes) or any(not 0 <= a < len(grid) for a in axes):
        raise CompileError("get_compute_tile_id: results and grid rank differ", op)
    shape_tail = (1,) * (c.rank - 1)

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        coords = [ctx.coords for ctx in lanes.contexts]
        for r, a in zip(res, axes, strict=True):
            lf[r] = np.array([cc[a] for cc in coords], dtype=I64).reshape((lanes.n_tiles,) + shape_tail)

    return run


# ---------------------------------------------------------------------- elementwise


def _elementwise(c: LaneCompiler, op: Operation) -> LaneFn:
    return c.pertile_op(op, vector=True)  # type: ignore[no-any-return]


def _register_elementwise() -> None:
    from ktir.dialects.registry import OPS

    from .compiler import FACTORIES

    names = [n for n in FACTORIES if n.startswith(("arith.", "math.")) and n not in (Arith.constant, Arith.select)]
    for n in names:
        if n in OPS:
            lane_impl(n)(_elementwise)


_register_elementwise()


@lane_impl(Arith.select)
def select(c: LaneCompiler, op: Operation) -> LaneFn:
    k, a, b = (c.operand_slot(op, n) for n in ("condition", "true_value", "false_value"))
    (r,) = c.result_slots(op)
    cond_t = c.operand_type(op, "condition")
    rt = c.rtype(op)
    if isinstance(cond_t, ty.TensorType) or not isinstance(rt, ty.TensorType):
        return c.pertile_op(op, vector=True)  # type: ignore[no-any-return]
    # a scalar condition choosing between tensors: the condition's lane dims, then the tensor's
    rank = len(rt.shape)
    dt = np_dtype(element(rt))
    R = c.rank
    cond_laned = c.is_laned(named(op).operand("condition"))

    def run(lf: list[Any]) -> None:
        cond = lf[k]
        x, y = lf[a], lf[b]
        if not cond_laned:
            lf[r] = x if cond else y
            return
        cnd = np.asarray(cond).reshape(np.shape(cond) + (1,) * rank)
        xs = x if np.ndim(x) > rank else np.asarray(x).reshape((1,) * R + np.shape(x))
        ys = y if np.ndim(y) > rank else np.asarray(y).reshape((1,) * R + np.shape(y))
        lf[r] = np.where(cnd, xs, ys).astype(dt, copy=False)

    return run


# ---------------------------------------------------------------------- scf


def _trips(lo: Any, hi: Any, step: Any) -> int:
    """The common trip count of the lanes (Diverged when they differ)."""
    if type(lo) is not np.ndarray and type(hi) is not np.ndarray and type(step) is not np.ndarray:
        lo, hi, step = int(lo), int(hi), int(step)
        if step <= 0:
            raise Diverged("scf.for step is not positive")
        return trip_count(lo, hi, step)
    lo_a, hi_a, st_a = (np.asarray(x, dtype=I64) for x in (lo, hi, step))
    shaped = [a for a in (lo_a, hi_a, st_a) if a.size != 1]
    if all(a.size <= 64 and a.shape == shaped[0].shape for a in shaped):
        # a handful of lanes (the tiles) of one shape: Python integers are quicker than eight
        # numpy calls
        return _trips_few(lo_a, hi_a, st_a, shaped[0].size if shaped else 1)
    if (st_a <= 0).any():
        raise Diverged("scf.for step is not positive")
    if int(hi_a.max()) - int(lo_a.min()) >= 1 << 62:
        raise Diverged("loop bounds too far apart")
    count = np.where(hi_a > lo_a, (hi_a - lo_a + st_a - 1) // st_a, 0)
    first = int(count.reshape(-1)[0])
    if not (count == first).all():
        raise Diverged(_DIFFER)
    return first


_DIFFER = "lanes run a loop a different number of times"


def _lane_trips(lo: Any, hi: Any, step: Any, n: int) -> list[int]:
    """Each of the `n` lanes' trip count (tile rank: each bound a number or an array of n
    lanes or one); Diverged as _trips when a step is not positive or the bounds are too far
    apart."""
    vals = []
    for x in (lo, hi, step):
        if type(x) is np.ndarray:
            if x.size == 1:
                vals.append([int(x.reshape(-1)[0])] * n)
            elif x.shape != (n,):
                raise Diverged("loop bounds of another lane shape")
            else:
                vals.append([int(v) for v in x.tolist()])
        else:
            vals.append([int(x)] * n)
    los, his, sts = vals
    if any(s <= 0 for s in sts):
        raise Diverged("scf.for step is not positive")
    if los and max(his) - min(los) >= 1 << 62:
        raise Diverged("loop bounds too far apart")
    return [trip_count(a, b, s) for a, b, s in zip(los, his, sts, strict=True)]


def _trips_few(lo: np.ndarray, hi: np.ndarray, step: np.ndarray, n: int) -> int:
    """_trips over `n` lanes, in Python integers (the same answers and failures): each array
    has the n lanes' values (in one shape) or one value for all."""
    los, his, sts = (x.reshape(-1).tolist() if x.size != 1 else [int(x.reshape(-1)[0])] * n for x in (lo, hi, step))
    if any(s <= 0 for s in sts):
        raise Diverged("scf.for step is not positive")
    if los and max(his) - min(los) >= 1 << 62:
        raise Diverged("loop bounds too far apart")
    counts = {trip_count(a, b, s) for a, b, s in zip(los, his, sts, strict=True)}
    if len(counts) > 1:
        raise Diverged(_DIFFER)
    return counts.pop() if counts else 0


def _step_budget(lf: list[Any], trips: int, ops: int) -> None:
    rep = lf[0]
    if rep.steps + trips * ops * lf[1].per_tile > rep.step_limit:
        raise Diverged("step limit")


@lane_impl(Scf.for_)
def scf_for(c: LaneCompiler, op: Operation) -> LaneFn:
    if id(op) in c.vectorised:
        return _vector_for(c, op)
    return _seq_for(c, op)


def _seq_for(c: LaneCompiler, op: Operation) -> LaneFn:
    lb, ub, st = (c.operand_slot(op, n) for n in ("lower_bound", "upper_bound", "step"))
    inits = c.operand_group(op, "init_args")
    init_names = op.operands[3:]
    res = c.result_slots(op)
    block = op.regions[0].blocks[0]
    body = c.lane_region(op.regions[0])
    iv = body.arg_slots[0]
    carried = body.arg_slots[1:]
    want = tuple(c.is_laned(a.name) for a in block.arguments[1:])
    kinds = [c.kind(a.type) for a in block.arguments[1:]]
    conv = [(s, i, w and not c.is_laned(n), k) for s, i, w, n, k in zip(carried, inits, want, init_names, kinds, strict=True)]
    R = c.rank
    outside = _outside(c, op)  # for a masked run (lanes whose trip counts differ)
    why_not = _why_not_masked(c, op, want)
    # a laned induction variable is an array even when only the upper bound is laned (an
    # inner vectorised loop, a sub-frame carry laned values as arrays)
    iv_laned = c.is_laned(block.arguments[0].name)

    def run(lf: list[Any]) -> None:
        lo, hi, step = lf[lb], lf[ub], lf[st]
        if iv_laned and type(lo) is not np.ndarray and type(step) is not np.ndarray:
            lo = np.full((1,) * R, lo, dtype=I64)
        counts = None
        if R == 1 and (type(lo) is np.ndarray or type(hi) is np.ndarray or type(step) is np.ndarray):
            counts = _lane_trips(lo, hi, step, lf[1].n_tiles)
            n = counts[0]
            if all(x == n for x in counts):
                counts = None
        else:
            try:
                n = _trips(lo, hi, step)
            except Diverged as e:
                lanes: Lanes = lf[1]
                if e.why == _DIFFER and lanes.regions:
                    # lanes of an enclosing vectorised loop's iterations differ: a run that does
                    # not vectorise that loop may mask this one (at tile rank)
                    raise Diverged(e.why, lanes.regions[-1].loop) from None
                raise
        if counts is not None:
            if why_not:
                raise Diverged(f"lanes run a loop a different number of times and {why_not}")
            n = max(counts)
        _step_budget(lf, n, body.n)
        for s, i, to_lane, kind in conv:
            lf[s] = to_laned(lf[i], kind, R) if to_lane else lf[i]
        if counts is not None:
            _masked_loop(lf, counts, lo, step, iv, carried, outside, body, want)
        else:
            _iterate(lf, 0, n, lo, step, iv, carried, body, want, R)
        for r, s in zip(res, carried, strict=True):
            lf[r] = lf[s]

    return run


def _iterate(lf: list[Any], k0: int, k1: int, lo: Any, step: Any, iv: int, carried: tuple[int, ...], body: Any,
             want: tuple[bool, ...], R: int) -> None:
    """Iterations k0 .. k1 - 1 of a sequential loop on frame `lf`: the induction variable set,
    the body run, its yielded values carried to the next iteration."""
    for k in range(k0, k1):
        lf[iv] = lo + k * step
        body.run(lf)
        for s, v in zip(carried, body.results(lf, R, want), strict=True):
            lf[s] = v


def _outside(c: LaneCompiler, op: Operation) -> list[int]:
    """The slots of the laned values `op`'s regions read from outside them: what a sub-frame of
    some lanes restricts to those lanes (_sub_frame)."""
    return sorted({c.value_slot(n) for n in c.facts.free[id(op)] if c.is_laned(n)})


def _why_not_masked(c: LaneCompiler, op: Operation, want: tuple[bool, ...]) -> str:
    """Why a loop or branch (`op`) cannot run on some lanes only ('' when it can): `want`, per
    value it yields, whether the value is laned."""
    if c.rank != 1:
        return "the op is in a vectorised loop"
    if c.facts.sync[id(op)]:
        return "the body has inter-tile ops"  # every tile takes part in those
    if not all(want):
        return "a value it yields is the same for every lane"  # but would differ between them
    return ""


def _sub_frame(lf: list[Any], active: list[int], outside: list[int]) -> tuple[list[Any], Lanes, int, np.ndarray]:
    """A frame for the tiles at positions `active` of lf's lanes (tile rank): `outside`'s slots
    (laned values defined outside the masked region) restricted to them, its own Lanes.
    Returns (frame, its lanes, the step count its rep starts from, the positions as an array)."""
    lanes: Lanes = lf[1]
    idx = np.asarray(active, dtype=I64)
    n = lanes.n_tiles
    sub_lanes = lanes.subset(active)
    sub = list(lf)
    sub[0] = sub_lanes.rep
    sub[1] = sub_lanes
    for s in outside:
        sub[s] = subset(lf[s], idx, n)
    return sub, sub_lanes, sub_lanes.rep.steps, idx


def _masked_loop(lf: list[Any], counts: list[int], lo: Any, step: Any, iv: int, carried: tuple[int, ...],
                 outside: list[int], body: Any, want: tuple[bool, ...]) -> None:
    """A loop whose lanes (tiles) run it different numbers of times (`counts`): iteration k
    runs for the lanes with k < counts[lane] only. The iterations run in phases of one set of
    active lanes: all of them first, then, each time some lanes have run all their iterations,
    the rest on a sub-frame of their own (_sub_frame), whose carried values are merged back
    into every lane's after the phase. The ops a phase executes count for its tiles only."""
    lanes: Lanes = lf[1]
    n = lanes.n_tiles
    done = 0
    for level in sorted(set(counts)):
        if level == done:
            continue
        active = [i for i, x in enumerate(counts) if x >= level]
        if len(active) == n:
            _iterate(lf, done, level, lo, step, iv, carried, body, want, 1)
            done = level
            continue
        sub, sub_lanes, start, idx = _sub_frame(lf, active, list(carried) + outside)
        lo_s = subset(lo, idx, n) if type(lo) is np.ndarray else lo
        step_s = subset(step, idx, n) if type(step) is np.ndarray else step
        _iterate(sub, done, level, lo_s, step_s, iv, carried, body, want, 1)
        lanes.merge_steps(sub_lanes, active, start)
        for s in carried:
            lf[s] = scatter(lf[s], sub[s], idx, n)
        done = level


def _vector_for(c: LaneCompiler, op: Operation) -> LaneFn:
    loop = id(op)
    lb, ub, st = (c.operand_slot(op, n) for n in ("lower_bound", "upper_bound", "step"))
    R = c.rank
    captured = [n for n in sorted(c.facts.free[loop]) if c.is_laned(n)]
    pairs = [(c.slot(f"{n}@{loop}"), c.value_slot(n)) for n in captured]
    saved = dict(c.alias)
    for n, (dst, _src) in zip(captured, pairs, strict=True):
        c.alias[n] = dst
    c.rank = R + 1
    c.vector_stack.append(loop)
    try:
        body = c.lane_region(op.regions[0])
    finally:
        c.rank = R
        c.vector_stack.pop()
        c.alias = saved
    iv = body.arg_slots[0]
    ones = (1,) * R
    per_iteration = c.sizes[loop] * 8  # bytes of the body's largest tensor, per lane
    sync = direct_sync(op)
    # at tile rank, bounds that differ between tiles may give them different trip counts: the
    # loop then runs sequentially, masked (the body compiled a second time, for that)
    masked: LaneFn | None = None
    if R == 1 and any(c.is_laned(n) for n in op.operands[:3]):
        try:
            masked = _seq_for(c, op)
        except (CompileError, Diverged, KtirRuntimeError):
            masked = None

    # (bounds, step, lanes) -> (trip count, each chunk's induction variable, read-only): the same
    # bounds give the same iterations in every run (kept for loops of at most ITERATIONS_KEPT lanes)
    seen: dict[tuple[Any, ...], tuple[int, list[np.ndarray]]] = {}

    def iterations(lanes: Lanes, lo: Any, hi: Any, step: Any) -> tuple[int, list[np.ndarray]]:
        try:
            n = _trips(lo, hi, step)
        except Diverged as e:
            if e.why != _DIFFER:
                raise
            # later runs do not vectorise the enclosing vectorised loop (the counts may differ
            # along its iterations), else this one: run sequentially at tile rank, it is masked
            raise Diverged(e.why, lanes.regions[-1].loop if lanes.regions else loop) from None
        if n == 0:
            return 0, []
        count = 1
        for x in lanes.shape:
            count *= x
        # iterations per chunk: chunks run one after another, in order, so only the
        # iterations of one chunk must touch disjoint bytes
        chunk = max(1, min(n, CHUNK_BYTES // max(count * per_iteration, 1), MAX_LANES // count))
        lo_a = np.asarray(lo, dtype=I64)
        st_a = np.asarray(step, dtype=I64)
        if lo_a.ndim < R:
            lo_a = lo_a.reshape(ones)
        if st_a.ndim < R:
            st_a = st_a.reshape(ones)
        ivs = [lo_a[..., None] + st_a[..., None] * np.arange(k0, k0 + min(chunk, n - k0), dtype=I64)
               for k0 in range(0, n, chunk)]
        return n, ivs

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        lo, hi, step = lf[lb], lf[ub], lf[st]
        key = (_value_key(lo), _value_key(hi), _value_key(step), lanes.shape)
        found = seen.get(key)
        if found is None:
            try:
                found = iterations(lanes, lo, hi, step)
            except Diverged as e:
                if masked is not None and e.why == _DIFFER:
                    masked(lf)
                    return
                raise
            if sum(x.size for x in found[1]) <= ITERATIONS_KEPT:
                for x in found[1]:
                    x.flags.writeable = False
                if len(seen) >= 16:
                    seen.clear()
                seen[key] = found
        n, ivs = found
        if n == 0:
            return
        _step_budget(lf, n, body.n)
        for dst, src in pairs:
            lf[dst] = expand(lf[src], R)
        shape, per_tile = lanes.shape, lanes.per_tile
        try:
            for ivv in ivs:
                m = ivv.shape[-1]
                lf[iv] = ivv
                lanes.shape = shape + (m,)
                lanes.per_tile = per_tile * m
                region = Region(loop, R + 1, sync)
                lanes.regions.append(region)
                if sync:
                    lanes.sync = region
                try:
                    body.run(lf)
                    if sync:
                        region.replay(lanes)
                finally:
                    lanes.regions.pop()
                    if sync:
                        lanes.sync = None
        finally:
            lanes.shape, lanes.per_tile = shape, per_tile

    return run


ITERATIONS_KEPT = 1 << 16  # lanes of a vectorised loop whose induction variables _vector_for keeps


def _value_key(x: Any) -> Any:
    """A uniform (Python) or laned (array) value as a memo key part (equal keys: equal values)."""
    if type(x) is np.ndarray:
        return (x.shape, x.dtype.char, x.tobytes())
    return x


@lane_impl(Scf.if_)
def scf_if(c: LaneCompiler, op: Operation) -> LaneFn:
    k = c.operand_slot(op, "condition")
    res = c.result_slots(op)
    then = c.lane_region(op.regions[0])
    other = c.lane_region(op.regions[1]) if len(op.regions) > 1 and op.regions[1].blocks else None
    if res and other is None:
        raise CompileError("scf.if with results needs an else region", op)
    want = tuple(c.is_laned(r) for r in op.results)
    R = c.rank
    why_not = _why_not_masked(c, op, want)
    outside = _outside(c, op)

    def run(lf: list[Any]) -> None:
        cond = lf[k]
        if type(cond) is np.ndarray:
            if cond.all():
                take = True
            elif not cond.any():
                take = False
            else:
                if why_not:
                    lanes: Lanes = lf[1]
                    # in a vectorised loop: later runs do not vectorise it (the branch may be masked then)
                    raise Diverged(f"lanes take different branches of an scf.if and {why_not}",
                                   lanes.regions[-1].loop if R > 1 and lanes.regions else None)
                _masked_if(lf, cond, (then, other), res, outside, want)
                return
        else:
            take = bool(cond)
        block = then if take else other
        if block is None:
            return
        block.run(lf)
        for r, v in zip(res, block.results(lf, R, want), strict=True):
            lf[r] = v

    return run


def _masked_if(lf: list[Any], cond: np.ndarray, blocks: tuple[Any, Any], res: tuple[int, ...], outside: list[int],
               want: tuple[bool, ...]) -> None:
    """An scf.if whose condition differs between the lanes (tiles): each branch runs on a
    sub-frame of its lanes (_sub_frame), the ops it executes counted for those tiles; the
    results are merged (each lane the value of its branch)."""
    lanes: Lanes = lf[1]
    n = lanes.n_tiles
    flags = np.broadcast_to(cond, (n,)).tolist()
    parts: list[tuple[np.ndarray, list[Any]]] = []
    for block, on in zip(blocks, (True, False), strict=True):
        active = [i for i, x in enumerate(flags) if bool(x) is on]
        if block is None or not active:
            continue
        sub, sub_lanes, start, idx = _sub_frame(lf, active, outside)
        block.run(sub)
        # a tensor.empty's value (strict mode) stays as it is: the lanes that yield it hold it
        vals = [sub[s] if laned or type(sub[s]) is Uninit else to_laned(sub[s], kind, 1)
                for s, (laned, kind) in zip(block.term_slots, block.term_kinds, strict=True)]
        parts.append((idx, vals))
        lanes.merge_steps(sub_lanes, active, start)
    if not res:
        return
    (idx_a, vals_a), (idx_b, vals_b) = parts  # with results, both branches exist and have lanes
    for r, a, b in zip(res, vals_a, vals_b, strict=True):
        if type(a) is Uninit or type(b) is Uninit:
            lf[r] = partial([(idx_a, a), (idx_b, b)], n)
        else:
            lf[r] = scatter(scatter(None, a, idx_a, n), b, idx_b, n)


# ---------------------------------------------------------------------- views and access tiles


@lane_impl(Ktdp.construct_memory_view, Ktdp.construct_distributed_memory_view)
def memory_view(c: LaneCompiler, op: Operation) -> LaneFn:
    """Views per tile (a tile's own scratchpad, or operands that differ between tiles)."""
    laned = [(s, c.type(t)) for s, n, t in zip(c.operand_slots(op), op.operands, op.operand_types, strict=True)
             if c.is_laned(n)]
    if c.rank > 1 and laned:
        if c.vector_stack:
            raise NotVectorisable(c.vector_stack[-1], "a view that differs between iterations")
        raise CompileError("a laned view", op)
    f = c.pertile_op(op)
    (r,) = c.result_slots(op)

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        rep = lf[0]
        saved = [lf[s] for s, _t in laned]
        items = []
        try:
            for t in range(lanes.n_tiles):
                lf[0] = lanes.contexts[t]
                for (s, typ), v in zip(laned, saved, strict=True):
                    lf[s] = lane_item(v, (t,), c.kind(typ), typ)
                f(lf)
                items.append(lf[r])
        finally:
            lf[0] = rep
            for (s, _t), v in zip(laned, saved, strict=True):
                lf[s] = v
        lf[r] = PerTile(items)

    return run


@lane_impl(Ktdp.construct_access_tile)
def access_tile(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.ktdp import _order, _rank, _set

    base = c.operand_slot(op, "base")
    idx = c.operand_group(op, "indices")
    syms = c.operand_group(op, "symbol_operands")
    if any(c.is_laned(n) for n in named(op).operands("symbol_operands")):
        raise CompileError("access tile symbols that differ between lanes", op)
    (r,) = c.result_slots(op)
    bmap_attr = c.need_attr(op, "base_map")
    if not isinstance(bmap_attr, at.AffineMapAttr):
        raise CompileError("base_map must be an affine_map", op)
    bmap = bmap_attr.value
    if bmap.num_dims + bmap.num_symbols != len(idx):
        raise CompileError("base_map operands", op)
    fn = compile_map(bmap)
    cset = _set(c, op, "access_tile_set", "the access_tile_set")
    if cset is None:
        raise CompileError("missing access_tile_set", op)
    perm = _order(c, op, "access_tile_order", cset.nd)
    t = c.rtype(op)
    rank = len(bmap.results)
    R = c.rank
    ones = (1,) * R
    shapes: dict[tuple[int, ...], tuple[Any, tuple[int, ...]]] = {}  # symbols -> (points, shape): shape checked
    # (symbols, the box of a box view, the index values) -> (points, shape, corners) of a tile
    # whose every lane passed the view check (check_box_tile's, which depends on nothing else)
    memo: dict[tuple[Any, ...], tuple[Any, tuple[int, ...], tuple[np.ndarray, ...]]] = {}

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        view = lf[base]
        values = [lf[s] for s in idx]
        sym_values = tuple(int(lf[s]) for s in syms) if syms else ()
        key = None
        if type(view) is lsm.MemoryView and view.is_box:
            key = (sym_values, view.box_lo, view.box_hi,
                   *[(x.shape, x.dtype.char, x.tobytes()) if type(x) is np.ndarray else x for x in values])
            hit = memo.get(key)
            if hit is not None:
                pts, shape, corners = hit
                lf[r] = lsm.LTile(view, pts.ext, perm, shape, R, lo=corners, mask=pts.mask)
                return
        b = fn(*values)
        pts, shape = _tile_shape(shapes, cset, sym_values, perm, t)
        lo = []
        for x, a in zip(b, pts.lo, strict=True):
            v = np.asarray(x + a if a else x, dtype=I64)
            lo.append(v if v.ndim == R else v.reshape(ones))
        lt = lsm.LTile(view, pts.ext, perm, shape, R, lo=tuple(lo), mask=pts.mask)
        first = view.items[0] if type(view) is PerTile else view
        if _rank(first) != rank:
            raise Diverged("subscripts and view rank differ")
        if pts.count:
            if type(view) is PerTile:
                geometry = {(type(v), getattr(v, "is_box", None), getattr(v, "box_lo", None), getattr(v, "box_hi", None))
                            for v in view.items}
                if len(geometry) == 1 and type(first) is lsm.MemoryView:
                    lsm.check_box_tile(lanes, first, lt.lo, pts.ext, pts.mask, R, lt.item)  # type: ignore[arg-type]
                elif R > 1:
                    raise Diverged("a tile of per-tile views of different shapes in a vectorised loop",
                                   lanes.regions[-1].loop)
                else:
                    from .ops.ktdp import _check_in_view

                    for tt in range(lanes.n_tiles):
                        item = lt.item((tt,))
                        _check_in_view(item.view, item)
            else:
                lt.parts = lsm.check_box_tile(lanes, view, lt.lo, pts.ext, pts.mask, R, lt.item)  # type: ignore[arg-type]
        if key is not None and pts.mask is None and lanes.per_tile * lanes.n_tiles <= lsm.PLAN_LANES:
            # a box view, every lane checked by its box alone
            corners = tuple(np.array(v) for v in lo)  # copies (a corner may be an operand's array), read-only:
            for v in corners:  # shared by the runs that find them
                v.flags.writeable = False
            if len(memo) >= 64:
                memo.clear()
            memo[key] = (pts, shape, corners)
        lf[r] = lt

    return run


# ---------------------------------------------------------------------- load / store


@lane_impl(Ktdp.load)
def load(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.common import shape_of

    a = c.operand_slot(op, "access_tile")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    dt = np_dtype(element(t))
    expect = shape_of(t)
    laned = c.is_laned(op.results[0])
    R = c.rank
    name = op.name
    defer = laned and id(op) in c.fused_loads  # only a store right after uses the value

    def run(lf: list[Any]) -> None:
        data = lsm.load(lf[1], lf[a], R, name, defer)
        if data.dtype != dt:
            raise Diverged("loaded element type")
        tail = data.shape[R:]
        if len(tail) != len(expect) or any(e is not None and e != g for e, g in zip(expect, tail, strict=True)):
            raise Diverged("loaded shape")
        lf[r] = data if laned else data[(0,) * R]

    return run


@lane_impl(Ktdp.store)
def store(c: LaneCompiler, op: Operation) -> LaneFn:
    d, a = c.operand_slot(op, "data"), c.operand_slot(op, "access_tile")
    data_laned = c.is_laned(named(op).operand("data"))
    R = c.rank
    name = op.name

    def run(lf: list[Any]) -> None:
        lsm.store(lf[1], lf[a], lf[d], data_laned, R, name)

    return run


from . import lockstep_intertile, lockstep_linalg  # noqa: E402, F401 - register their lane implementations


@lane_impl(Ktdp.construct_indirect_access_tile)
def indirect_access_tile(c: LaneCompiler, op: Operation) -> LaneFn:
    """Coordinates with the lane dimensions in front; the index values are gathered for all
    lanes at once (lockstep_memory._gather: checks, tracker, statistics)."""
    from .affine_eval import compile_exprs
    from .ops.ktdp import _order, _rank, _set

    base = c.operand_slot(op, "base")
    views = c.operand_group(op, "indirect_memrefs")
    caps = c.operand_group(op, "captured_variables")
    syms = c.operand_group(op, "symbol_operands")
    v = named(op)
    if any(c.is_laned(n) for n in [*v.operands("symbol_operands"), *v.operands("indirect_memrefs"), v.operand("base")]):
        raise CompileError("indirect tile symbols or views that differ between lanes", op)
    (r,) = c.result_slots(op)
    kinds = [bool(k) for k in c.need_attr(op, "per_dim_subscript_kinds").values]
    maps = [c.program.attr(m) for m in c.need_attr(op, "per_dim_subscript_maps").elements]
    n_vars = len(op.regions[0].blocks[0].arguments) if op.regions and op.regions[0].blocks else 0
    fns = []
    for m in maps:
        if not isinstance(m, at.AffineMapAttr) or m.value.num_symbols or m.value.num_dims != n_vars + len(caps):
            raise CompileError("indirect subscript maps", op)
        fns.append(compile_exprs(m.value.results, m.value.num_dims, 0))
    if sum(kinds) != len(views):
        raise CompileError("indirect subscripts and index views", op)
    vset = _set(c, op, "variables_space_set", "the variables_space_set")
    if vset is None or vset.nd != n_vars or vset.ns != len(syms):
        raise CompileError("variables_space_set", op)
    perm = _order(c, op, "variables_space_order", n_vars)
    t = c.rtype(op)
    R = c.rank
    name = op.name

    shapes: dict[tuple[int, ...], tuple[Any, tuple[int, ...]]] = {}  # symbols -> (points, shape): shape checked
    # (symbols, lanes, captured values, index views' geometry) -> what _subscripts computes from them
    memo: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}

    def run(lf: list[Any]) -> None:
        lanes: Lanes = lf[1]
        view = lf[base]
        pts, shape = _tile_shape(shapes, vset, tuple(int(lf[s]) for s in syms) if syms else (), perm, t)
        if pts.mask is not None or not pts.count:
            raise Diverged("a masked or empty variable space")
        captured = [np.asarray(lf[s], dtype=I64) for s in caps]
        index_views = [lf[s] for s in views]
        if any(type(v) is not lsm.MemoryView for v in index_views):
            raise Diverged("an index view that is not a memory view")
        # the subscripts, their checks and the index gathers' rows depend only on these: the same
        # values give the same answers (a loop's lanes are the same in every run of a kernel)
        key = (pts.lo, pts.ext, lanes.shape, *[(x.shape, x.tobytes()) for x in captured], *[_geometry(v) for v in index_views])
        steps = memo.get(key)
        if steps is None:
            steps = _subscripts(lanes, pts, captured, index_views, kinds, fns, R)
            if _kept(steps) <= lsm.PLAN_LANES * 64:  # elements kept (else recomputed every run)
                if len(memo) >= 16:
                    memo.clear()
                memo[key] = steps
        coords: list[np.ndarray] = []
        known: list[tuple[int, int] | None] = []
        for step in steps:
            if step[0] is None:  # a direct subscript: (None, coordinates, their (min, max) or None when empty)
                coords.append(step[1])
                known.append(step[2])
                continue
            vi, sub, sub_bounds, ext, plan = step
            values = lsm._gather(lanes, index_views[vi], sub, ext, R, name, sub_bounds, plan=plan)
            coords.append(np.asarray(values).astype(I64))
            known.append(None)
        first = view.items[0] if type(view) is PerTile else view
        if _rank(first) != len(coords) or type(view) is not lsm.MemoryView:
            raise Diverged("an indirect tile of a view this path does not take")
        bounds = _in_box(view, coords, known)
        lf[r] = lsm.LTile(view, pts.ext, perm, shape, R, coords=coords, cbounds=bounds)

    return run


def _kept(steps: list[tuple[Any, ...]]) -> int:
    """The elements of the arrays _subscripts' answer holds."""
    total = 0
    for step in steps:
        if step[0] is None:
            total += step[1].size
        else:
            total += sum(x.size for x in step[1]) + step[4].rows.size
    return total


def _geometry(view: lsm.MemoryView) -> tuple[Any, ...]:
    """What gather_plan and _in_box read of an index view (its array's size, not the array)."""
    alloc = view.alloc
    return (view.addr - alloc.base if alloc is not None else None, alloc is None or alloc.growable,
            alloc.nbytes if alloc is not None else 0, view.strides, view.origin, view.dtype, view.is_box, view.box_lo,
            view.box_hi)


def _subscripts(lanes: Lanes, pts: Any, captured: list[np.ndarray], index_views: list[Any], kinds: list[bool],
                fns: list[Any], R: int) -> list[tuple[Any, ...]]:
    """Per subscript of an indirect tile: (None, coordinates, their (min, max) or None when
    empty) for a direct one; (the index view's position in `index_views`, subscripts, their
    bounds, extents, gather plan) for an indirect one, every check done (Diverged when one
    fails). Nothing in it refers to this run's views or arrays."""
    nv = len(pts.ext)
    variables = _variables(pts.lo, pts.ext, R)
    shaped = [x.reshape(x.shape + (1,) * nv) if x.ndim == R else x.reshape((1,) * (R + nv)) for x in captured]
    steps: list[tuple[Any, ...]] = []
    vi = 0
    for is_ind, fn in zip(kinds, fns, strict=True):
        sub = [np.asarray(x, dtype=I64) for x in fn(*variables, *shaped)]
        sub = [x if x.ndim == R + nv else x.reshape((1,) * (R + nv)) for x in sub]
        for x in sub:
            x.flags.writeable = False  # shared by the runs that find them in the memo
        if not is_ind:
            steps.append((None, sub[0], lsm.minmax(sub[0]) if sub[0].size else None))
            continue
        index_view = index_views[vi]
        vi += 1
        sub_bounds = _in_box(index_view, sub)
        ext = _broadcast_shape([x.shape[R:] for x in sub])
        plan = lsm.gather_plan(lanes.shape, lanes.n_tiles, index_view, sub, ext, R, sub_bounds)
        plan.rows.flags.writeable = False
        steps.append((vi - 1, sub, sub_bounds, ext, plan))
    return steps


def _tile_shape(shapes: dict[tuple[int, ...], tuple[Any, tuple[int, ...]]], cset: Any, syms: tuple[int, ...],
                perm: tuple[int, ...] | None, t: Any) -> tuple[Any, tuple[int, ...]]:
    """The set's points for `syms` and the tile's shape (its extents in `perm` order), checked
    against the tile type `t` (Diverged when they differ: the per-tile run reports it). The
    answer depends only on the symbols: remembered in `shapes` (the op's own)."""
    found = shapes.get(syms)
    if found is not None:
        return found
    from .ops.ktdp import _check_tile_type_shape

    pts = cset.points(syms)
    shape = pts.ext if perm is None else tuple(pts.ext[p] for p in perm)
    try:
        _check_tile_type_shape(shape, t)
    except Exception:  # noqa: BLE001 - the per-tile run reports it
        raise Diverged("access tile type") from None
    if len(shapes) > 64:
        shapes.clear()
    shapes[syms] = (pts, shape)
    return pts, shape


# (lower corner, extents, lane dimensions) -> an indirect tile's variables (read-only arrays):
# the same variable space every time a kernel's tile is built
_VARIABLES: Memo[tuple[tuple[int, ...], tuple[int, ...], int], list[np.ndarray]] = Memo(256)


def _variables(lo: tuple[int, ...], ext: tuple[int, ...], R: int) -> list[np.ndarray]:
    """The variables of a variable space with corner `lo` and extents `ext`: variable k varies
    along axis R + k (after R lane axes of 1)."""
    key = (tuple(lo), tuple(ext), R)
    found = _VARIABLES.get(key)
    if found is not MISSING:
        return found
    out = []
    for a, g in zip(lo, np.indices(ext, sparse=True), strict=True):
        v = np.asarray(a + g).reshape((1,) * R + g.shape)
        v.flags.writeable = False
        out.append(v)
    return _VARIABLES.put(key, out)


def _broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """np.broadcast_shapes in Python (it costs microseconds of numpy per call); Diverged when
    the shapes do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, n in enumerate(s, rank - len(s)):
            if n != 1:
                if out[k] not in (1, n):
                    raise Diverged("subscripts of shapes that do not broadcast")
                out[k] = n
    return tuple(out)


def _in_box(view: Any, coords: list[np.ndarray], known: list[tuple[int, int] | None] | None = None) -> list[tuple[int, int]] | None:
    """Every coordinate lies in the view (a box view: min and max per dimension decide).
    Returns each coordinate's (min, max) (None when some coordinate array is empty). `known`:
    per coordinate its (min, max) when the caller has it (None: computed here)."""
    if not view.is_box or len(coords) != len(view.box_lo):
        raise Diverged("coordinates of a view that is not a box")
    bounds: list[tuple[int, int]] | None = []
    for k, (x, lo, hi) in enumerate(zip(coords, view.box_lo, view.box_hi, strict=True)):
        if not x.size:
            bounds = None
            continue
        mm = known[k] if known is not None else None
        xmin, xmax = mm if mm is not None else lsm.minmax(x)
        if xmin < lo or xmax > hi:
            raise Diverged("out of view")
        if bounds is not None:
            bounds.append((xmin, xmax))
    return bounds
