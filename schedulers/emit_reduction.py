"""Split a reduction over tiles: partial results combined with `ktdp.inter_tile_reduce`.

When no dimension of a natural-form kernel can be cut (a sum to a scalar, say), a dimension
blocked only by one reduction `R` can still be divided: each tile reduces its blocks of
that dimension into a partial result (`R` accumulates into a loop-carried init, which must
start as the combiner's identity), the partials are combined on tile 0 by
`ktdp.inter_tile_reduce` with the same combiner, and tile 0 alone runs what follows `R`
(the ops that use its result, and the stores). Floating-point combining happens in another
order than the input's, as the interpreter's reductions allow ("an unspecified order").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ktir.builder import Builder, Value
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .dependence import where
from .emit_natural import INDEX, Placer
from .natural import NaturalKernel
from .space_natural import NaturalSpace

# combiner -> (identity, the named linalg op that combines two partials)
COMBINERS = {"arith.addf": (0.0, "linalg.add"), "arith.mulf": (1.0, "linalg.mul"),
             "arith.maximumf": (-math.inf, "linalg.max"), "arith.minimumf": (math.inf, "linalg.min")}


@dataclass(frozen=True)
class ReductionPlan:
    op: Operation  # the reduction R
    cls: int  # the class split over tiles
    combiner: str
    init: str  # R's init value (an identity fill)


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
        ops = [op for op in body if op.name in ("linalg.generic", "linalg.reduce")
               and all(r.startswith(f"{op.name}{where(op)} reduces over") for r in reasons)]
        if len(ops) != 1:
            continue
        r = ops[0]
        combiner = _combiner(r)
        if combiner is None:
            why = f"{r.name}{where(r)} does not combine with one of {', '.join(COMBINERS)}"
            continue
        init = r.operands[-1]
        fill = defs.get(init)
        value = _fill_value(fill, defs) if fill is not None else None
        if value is None or value != COMBINERS[combiner][0]:
            why = f"the init of {r.name}{where(r)} is not the identity of {combiner}"
            continue
        # what uses R's result must not read the split dimension otherwise
        later = _after_values(r, body)
        bad = next((op for op in body if any(v in later for v in op.operands)
                    and any(v not in later and c in k.deps.get(v, frozenset()) for v in op.operands)), None)
        if bad is not None:
            why = f"{bad.name}{where(bad)} reads the reduced dimension beside the result of {r.name}{where(r)}"
            continue
        return ReductionPlan(r, c, combiner, init)
    return why


def _combiner(op: Operation) -> str | None:
    block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    if block is None or not block.operations or block.operations[-1].name != "linalg.yield":
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
    if fill.name != "linalg.fill":
        return None
    const = defs.get(fill.operands[0])
    value = const.attributes.get("value") if const is not None and const.name == "arith.constant" else None
    return float(value.value) if isinstance(value, at.FloatAttr) else None


def reduction_kernel(k: NaturalKernel, plan: ReductionPlan) -> NaturalKernel:
    """The kernel as the schedule space sees it: the split dimension is the only one cut."""
    free = {c: (["kept whole"] if c != plan.cls else []) for c in k.classes}
    return replace(k, free=free)


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
        if any(v in later for v in [*op.operands, *op.results]):
            return "tail"
        deps = pl.op_deps(op)
        if op.name == "ktdp.store" and c not in deps:
            return "tail"  # stored once, by tile 0
        return "loop" if c in deps else "top"

    parts = [part(op) for op in pl.orig]
    with b.insert_into(pl.entry):
        (tid,) = b.tile_id(1)
        for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
            if where_ == "top":
                pl.place(op, copy)
        lo = b.arith.muli(tid, b.constant(bb, INDEX))
        with b.for_(lo, b.constant(E, INDEX), b.constant(gg * bb, INDEX), [Value(plan.init, acc_t)]) as (iv, acc):
            pl.ivs[c] = iv
            for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
                if where_ == "loop":
                    pl.place(op, copy, {plan.init: acc.name} if op is r else None)
            b.yield_(Value(pl.copies[pl.orig.index(r)].results[0], acc_t))
        (partial,) = b.last_results
        total = _combine(b, partial, Value(plan.init, acc_t), gg, COMBINERS[plan.combiner][1])
        first = b.cmp("arith.cmpi", "eq", tid, b.constant(0, INDEX))
        with b.if_(first):
            for op, copy, where_ in zip(pl.orig, pl.copies, parts, strict=True):
                if where_ == "tail":
                    pl.place(op, copy, {r.results[0]: total.name})
        b.func_return()
    return pl.finish([gg])


def _after_values(r: Operation, ops: list[Operation]) -> set[str]:
    """R's results and every value computed from them."""
    found = set(r.results)
    for op in ops[ops.index(r) + 1:]:
        if any(v in found for v in op.operands):
            found |= set(op.results)
    return found


def _combine(b: Builder, partial: Value, identity: Value, tiles: int, named: str) -> Value:
    t = partial.type
    s0, d0 = af.sym(0), af.dim(0)
    everyone = af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.constraint(d0 - s0 * tiles, ">=", af.const(0)), af.constraint(d0 - s0 * tiles, "<=", af.const(tiles - 1))))
    first = af.IntegerSet(num_dims=1, num_symbols=1, constraints=(af.constraint(d0 - s0 * tiles, "==", af.const(0)),))
    one = af.IntegerSet(num_dims=1, num_symbols=0, constraints=(af.constraint(d0, "==", af.const(0)),))
    fut_t = ty.TileFutureType(partial_types=(t,), groups=at.IntegerSetAttr(value=one))
    with b.produce(everyone, fut_t):
        b.yield_(partial, op="ktdp.yield_partial")
    (fut,) = b.last_results
    args = [b.fresh("l"), b.fresh("r")]
    both_name, total_name = b.fresh(), b.fresh()  # numbered in the order the ops are written
    with b.reduce_tiles(fut, first, [identity], args, [total_name]) as (lhs, rhs):
        b.yield_(b.dps(named, [lhs, rhs], [lhs], name=both_name), op="ktdp.yield_reduced")
    (total,) = b.last_results
    return total


__all__ = ["ReductionPlan", "emit_split_reduction", "find_split_reduction", "reduction_kernel"]
