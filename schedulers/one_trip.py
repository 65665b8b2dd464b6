"""A single-tile kernel whose one loop runs once is straight-line code: its natural form.

A row-loop kernel (`scf.for %r = %tid * B to R step S` on `grid = [1]`) with as many rows
as its block (decode: one token) gives the row-loop space nothing to divide: its rows fit
one tile. Its body, though, may have other parallel dimensions (RoPE's heads) or a
reduction that can be split over tiles (RMSNorm's columns). `inline_one_trip` returns the
function with that loop replaced by its body, the induction variable by the constant it
takes, which is the same computation (the loop runs exactly once, with no loop-carried
values), so the natural-form analysis and its dependence check can take it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ktir.dialects.names import Arith, Ktdp, Scf
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .kernels import _Values, func_name, grid_of

_PURE = frozenset({Arith.constant, Arith.muli, Arith.addi, Arith.subi, Ktdp.get_compute_tile_id})


def _value(name: str, vals: _Values, tids: set[str], depth: int = 0) -> int | None:
    """The integer an index value takes on the only tile of a grid [1] (tile id 0)."""
    if name in tids:
        return 0
    v = vals.const(name)
    if v is not None or depth > 8:
        return v
    op = vals.defs.get(name)
    if op is None or op.name not in (Arith.muli, Arith.addi, Arith.subi) or len(op.operands) != 2:
        return None
    a, b = (_value(o, vals, tids, depth + 1) for o in op.operands)
    if a is None or b is None:
        return None
    return a * b if op.name == Arith.muli else a + b if op.name == Arith.addi else a - b


def inline_one_trip(module: Module, fn: Operation, sizes: Mapping[str, int] | None = None) -> Module | None:
    """`module` with `fn`'s single top-level loop inlined when it runs exactly once on grid [1];
    None when `fn` is not of that form (several loops, loop-carried values, unknown bounds)."""
    if list(grid_of(fn)) not in ([1], []):
        return None
    body = fn.regions[0].blocks[0].operations
    loops = [op for op in body if op.regions]
    if len(loops) != 1 or loops[0].name != Scf.for_ or loops[0].results or len(loops[0].operands) != 3:
        return None
    loop = loops[0]
    vals = _Values(fn, sizes or {})
    tids = {r for op in body if op.name == Ktdp.get_compute_tile_id for r in op.results}
    lo, hi, step = (_value(o, vals, tids) for o in loop.operands)
    if lo is None or hi is None or step is None or step <= 0 or not lo < hi <= lo + step:
        return None
    inner = loop.regions[0].blocks[0]
    ops = list(inner.operations)
    if ops and ops[-1].name == Scf.yield_:
        if ops[-1].operands:
            return None
        ops = ops[:-1]
    out = module.model_copy(deep=True)
    new_fn = next(f for f in out.functions() if func_name(f) == func_name(fn))
    top = new_fn.regions[0].blocks[0].operations
    at_loop = next(i for i, op in enumerate(top) if op.regions)
    copied = top[at_loop].regions[0].blocks[0].operations[:len(ops)]
    iv = inner.arguments[0].name
    taken = {r for op in new_fn.walk() for r in op.results} | {a.name for a in inner.arguments}
    name = iv + "_once"
    while name in taken:
        name += "_"
    const = Operation(name=Arith.constant, results=[name], result_types=[ty.IndexType()],
                      attributes={"value": at.IntegerAttr(value=lo, type=ty.IndexType())})
    for op in copied:
        for x in op.walk():
            x.operands = [name if o == iv else o for o in x.operands]
    top[at_loop:at_loop + 1] = [const, *copied]
    # the loop bound's index arithmetic (and the tile id it read) is dead now
    while True:
        used = {o for op in new_fn.walk() for o in op.operands}
        dead = [op for op in top if op.name in _PURE and op.results and not set(op.results) & used]
        if not dead:
            break
        top[:] = [op for op in top if not any(op is d for d in dead)]
    return out


__all__ = ["inline_one_trip"]
