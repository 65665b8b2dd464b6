"""Split a reduction over tiles: partial results combined with `ktdp.inter_tile_reduce`.

When no dimension of a natural-form kernel can be cut (a sum to a scalar, say), a dimension
blocked only by one reduction `R` can still be divided: each tile reduces its blocks of
that dimension into a partial result (`R` accumulates into a loop-carried init, which must
start as the combiner's identity), the partials are combined on tile 0 by
`ktdp.inter_tile_reduce` with the same combiner, and tile 0 alone runs what follows `R`
(the ops that use its result, and the stores). Floating-point combining happens in another
order than the input's, as the interpreter's reductions allow ("an unspecified order").

When what follows `R` also reads the split dimension (RMSNorm's scaling of its row by the
row's norm), but only elementwise along it, the partials are all-reduced instead (every
tile is a consumer of `ktdp.inter_tile_reduce`) and every tile runs what follows on its
own block: each tile then holds exactly one block of the split dimension (`g * b` is the
extent), so the values it computed before `R` are still there, and each store writes the
tile's block. A store of a value that does not depend on the split dimension (a layer norm's
mean, computed from the all-reduced total) would be written by every tile: tile 0 alone
stores it (`owner_stores`), and the proof (`schedulers.proof`) shows each element is then
written once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ktir.builder import Builder, Value
from ktir.dialects.names import Arith, Ktdp, Linalg, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .dependence import where
from .emit_natural import INDEX, Placer
from .natural import NaturalKernel
from .space_natural import NaturalSpace

# combiner -> (identity, the named linalg op that combines two partials)
COMBINERS = {Arith.addf: (0.0, Linalg.add), Arith.mulf: (1.0, Linalg.mul),
             Arith.maximumf: (-math.inf, Linalg.max), Arith.minimumf: (math.inf, Linalg.min)}


@dataclass(frozen=True)
class ReductionPlan:
    op: Operation  # the reduction R
    cls: int  # the class split over tiles
    combiner: str
    init: str  # R's init value (any value not depending on the split dimension)
    everyone: bool = False  # all-reduce: every tile runs what follows R on its own (single) block
    identity: bool = True  # the init is the combiner's identity (else partials start from it, and it is applied once)


def find_split_reduction(k: NaturalKernel) -> ReductionPlan | str:
    """The reduction and the dimension to split over tiles, or why there is none."""
    body = k.fn.regions[0].blocks[0].operations
    defs = {r: op for op in body for r in op.results}
    why = "no dimension is blocked by a single reduction alone"
    # an outer (not contiguous) dimension first: its blocks are whole rows, one transfer each
    for c in sorted(k.classes, key=lambda c: (c in k.contiguous, -k.extent[c])):
        reasons = k.free[c]
        if not reasons or k.extent[c] < 2:
            continue
        ops = [op for op in body if op.name in (Linalg.generic, Linalg.reduce)
               and all(r.startswith(f"{op.name}{where(op)} reduces over") for r in reasons)]
        if len(ops) != 1:
            continue
        r = ops[0]
        combiner = _combiner(r)
        if combiner is None:
            why = f"{r.name}{where(r)} does not combine with one of {', '.join(COMBINERS)}"
            continue
        init = r.operands[-1]
        if c in k.deps.get(init, frozenset()):
            why = f"the init of {r.name}{where(r)} is computed along the dimension it reduces"
            continue
        fill = defs.get(init)
        value = _fill_value(fill, defs) if fill is not None else None
        identity = value is not None and value == COMBINERS[combiner][0]
        # what uses R's result must not read the split dimension otherwise
        later = _after_values(r, body)
        bad = next((op for op in body if any(v in later for v in op.operands)
                    and any(v not in later and c in k.deps.get(v, frozenset()) for v in op.operands)), None)
        if bad is None:
            return ReductionPlan(r, c, combiner, init, identity=identity)
        # every op but R is parallel along c (R alone blocks it): what follows R can run on each
        # tile's own block once the total is everywhere; a store of a value without c is tile 0's
        return ReductionPlan(r, c, combiner, init, everyone=True, identity=identity)
    return why


def owner_stores(k: NaturalKernel, c: int) -> set[int]:
    """The stores (by id) of values that do not vary along class c: under an all-reduced split
    of c every tile would hold the same value, so tile 0 alone stores it."""
    return {id(a.op) for a in k.accesses if a.stored and c not in k.graph.classes(a.value)}


def _combiner(op: Operation) -> str | None:
    block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    if block is None or not block.operations or block.operations[-1].name != Linalg.yield_:
        return None
    acc = block.arguments[-1].name
    made = {r: x for x in block.operations for r in x.results}
    last = made.get(block.operations[-1].operands[0])
    if last is None or last.name not in COMBINERS or acc not in last.operands:
        return None
    # the accumulator feeds nothing but the combiner
    if sum(acc in x.operands for x in block.operations) != 1:
        return None
    return last.name


def _fill_value(fill: Operation, defs: dict[str, Operation]) -> float | None:
    """The value every element of a tensor holds when it is a fill, a splat or a splat constant."""
    if fill.name == Arith.constant:
        value = fill.attributes.get("value")
        if isinstance(value, at.DenseAttr) and value.is_splat and isinstance(value.values, int | float):
            return float(value.values)
        return None
    if fill.name not in (Linalg.fill, Tensor.splat):
        return None
    const = defs.get(fill.operands[0])
    value = const.attributes.get("value") if const is not None and const.name == Arith.constant else None
    return float(value.value) if isinstance(value, at.FloatAttr) else None


def _identity_init(b: Builder, plan: ReductionPlan, acc_t: ty.TensorType) -> Value:
    """What each tile's partial starts from: the init itself when it is the identity, else a
    fill of the identity (the init is then applied once, to the combined total)."""
    if plan.identity:
        return Value(plan.init, acc_t)
    value = b.constant(COMBINERS[plan.combiner][0], acc_t.element_type)
    return b.fill(value, b.empty(acc_t))


def _apply_init(b: Builder, plan: ReductionPlan, total: Value) -> Value:
    """The combined total with a non-identity init folded in, once."""
    if plan.identity:
        return total
    assert isinstance(total.type, ty.TensorType)
    return b.dps(COMBINERS[plan.combiner][1], [total, Value(plan.init, total.type)], [b.empty(total.type)])


def reduction_kernel(k: NaturalKernel, plan: ReductionPlan) -> NaturalKernel:
    """The kernel as the schedule space sees it: the split dimension is the only one cut
    (all-reduced: in one block per tile)."""
    free = {c: (["kept whole"] if c != plan.cls else []) for c in k.classes}
    return replace(k, free=free, one_block=plan.cls if plan.everyone else None, whole_blocks=True, chunk=None)


def emit_split_reduction(space: NaturalSpace, p: dict[str, int], plan: ReductionPlan) -> Module:
    k = space.k
    c = plan.cls
    i = space.cut.index(c)
    E, bb, gg = k.extent[c], p[f"b{i}"], p[f"g{i}"]
    pl = Placer(space, {c: bb})
    b = pl.b
    r = plan.op
    later = _after_values(r, pl.orig)
    acc_t = r.result_types[0]
    assert isinstance(acc_t, ty.TensorType)

    def part(op: Operation) -> str:
        if op is r:
            return "loop"
        if any(v in later for v in [*read(op), *op.results]):
            return "tail"
        deps = pl.op_deps(op)
        if op.name == Ktdp.store and c not in deps:
            return "tail"  # stored once, by tile 0
        return "loop" if c in deps else "top"

    parts = [part(op) for op in pl.orig]
    if plan.everyone:
        return _emit_all_reduce(pl, plan, parts, gg, bb)
    with b.insert_into(pl.entry):
        (tid,) = b.tile_id(1)
        for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
            if where_ == "top":
                pl.place(op, copy)
        lo = b.arith.muli(tid, b.constant(bb, INDEX))
        start = _identity_init(b, plan, acc_t)
        with b.for_(lo, b.constant(E, INDEX), b.constant(gg * bb, INDEX), [start]) as (iv, acc):
            pl.ivs[c] = iv
            for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
                if where_ == "loop":
                    pl.place(op, copy, {plan.init: acc.name} if op is r else None)
            b.yield_(Value(pl.copies[pl.orig.index(r)].results[0], acc_t))
        (partial,) = b.last_results
        total = _combine(b, partial, start, gg, COMBINERS[plan.combiner][1])
        first = b.cmp(Arith.cmpi, "eq", tid, b.constant(0, INDEX))
        with b.if_(first):
            total = _apply_init(b, plan, total)
            for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
                if where_ == "tail":
                    pl.place(op, copy, {r.results[0]: total.name})
        b.func_return()
    return pl.finish([gg])


def _emit_all_reduce(pl: Placer, plan: ReductionPlan, parts: list[str], tiles: int, block: int) -> Module:
    """Tile t: its block [t * block, (t + 1) * block) of the split dimension, R's partial over
    it, the partials all-reduced, then what follows R on the same block."""
    b, r = pl.b, plan.op
    acc_t = r.result_types[0]
    assert isinstance(acc_t, ty.TensorType) and tiles * block == pl.k.extent[plan.cls]
    with b.insert_into(pl.entry):
        (tid,) = b.tile_id(1)
        pl.ivs[plan.cls] = b.arith.muli(tid, b.constant(block, INDEX))
        first = feeders(r, pl.orig)
        start = _identity_init(b, plan, acc_t) if not plan.identity else None
        for early in (True, False):
            for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
                if where_ != "tail" and (id(op) in first) == early:
                    pl.place(op, copy, {plan.init: start.name} if start is not None and op is r else None)
        total = _combine(b, Value(r.results[0], acc_t), start or Value(plan.init, acc_t), tiles,
                         COMBINERS[plan.combiner][1], all_reduce=True)
        total = _apply_init(b, plan, total)
        owned = owner_stores(pl.k, plan.cls)
        for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
            if where_ != "tail":
                continue
            if id(op) not in owned:
                pl.place(op, copy, {r.results[0]: total.name})
                continue
            assert op.name == Ktdp.store  # only stores are owned
            with b.if_(b.cmp(Arith.cmpi, "eq", tid, b.constant(0, INDEX))):
                pl.place(op, copy, {r.results[0]: total.name})
        b.func_return()
    return pl.finish([tiles])


def feeders(r: Operation, ops: list[Operation]) -> set[int]:
    """The ops (by id) R's operands are computed from, R included: emitted first, so that the
    loads the reduction waits for are issued before the ones only what follows it needs (the
    natural form splits no reduction of a kernel reading an array it writes, so loads may be reordered)."""
    defs = {v: op for op in ops for v in op.results}
    found = {id(r)}
    todo = read(r)
    while todo:
        op = defs.get(todo.pop())
        if op is not None and id(op) not in found:
            found.add(id(op))
            todo += read(op)
    # the access tiles of loads are made by ops that feed them
    return found


def read(op: Operation) -> list[str]:
    """Every value `op` reads: its operands and the values its regions capture (a scalar defined
    outside a linalg body and used in it is read by the op as much as an operand is)."""
    return [v for inner in op.walk() for v in inner.operands]


def _after_values(r: Operation, ops: list[Operation]) -> set[str]:
    """R's results and every value computed from them."""
    found = set(r.results)
    for op in ops[ops.index(r) + 1:]:
        if any(v in found for v in read(op)):
            found |= set(op.results)
    return found


def _combine(b: Builder, partial: Value, identity: Value, tiles: int, named: str, all_reduce: bool = False) -> Value:
    t = partial.type
    s0, d0 = af.sym(0), af.dim(0)
    everyone = af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.constraint(d0 - s0 * tiles, ">=", af.const(0)), af.constraint(d0 - s0 * tiles, "<=", af.const(tiles - 1))))
    first = af.IntegerSet(num_dims=1, num_symbols=1, constraints=(af.constraint(d0 - s0 * tiles, "==", af.const(0)),))
    one = af.IntegerSet(num_dims=1, num_symbols=0, constraints=(af.constraint(d0, "==", af.const(0)),))
    fut_t = ty.TileFutureType(partial_types=(t,), groups=at.IntegerSetAttr(value=one))
    with b.produce(everyone, fut_t):
        b.yield_(partial, op=Ktdp.yield_partial)
    (fut,) = b.last_results
    args = [b.fresh("l"), b.fresh("r")]
    both_name, total_name = b.fresh(), b.fresh()  # numbered in the order the ops are written
    with b.reduce_tiles(fut, everyone if all_reduce else first, [identity], args, [total_name]) as (lhs, rhs):
        b.yield_(b.dps(named, [lhs, rhs], [lhs], name=both_name), op=Ktdp.yield_reduced)
    (total,) = b.last_results
    return total


__all__ = ["ReductionPlan", "emit_split_reduction", "find_split_reduction", "owner_stores", "reduction_kernel"]
