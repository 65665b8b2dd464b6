"""The row-loop form a single-tile kernel may be written in without naming its tile.

The row-loop class (`schedulers.kernels`) recognises `scf.for %r = %tid * B to R step S`
on a 1-D grid. On grid [1] the tile id is 0, so a loop `scf.for %r = %c0 to R step B`
is the same loop; `with_tile_start` writes it in the recognised form (a
`ktdp.get_compute_tile_id` and `arith.muli %tid, %step` before the loop, as its lower bound),
which computes exactly what the input does.
"""

from __future__ import annotations

import math

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .kernels import func_name, grid_of


def _const(op: Operation | None) -> int | None:
    if op is None or op.name != "arith.constant":
        return None
    v = op.attributes.get("value")
    return int(v.value) if isinstance(v, at.IntegerAttr) else None


def with_tile_start(module: Module, fn: Operation) -> Module:
    """`module` with `fn`'s single row loop starting at tile id x step, when it starts at 0 on
    grid [1] and reads no tile id; `module` itself otherwise."""
    if math.prod(grid_of(fn)) != 1:
        return module
    body = fn.regions[0].blocks[0].operations
    loops = [op for op in body if op.regions]
    if len(loops) != 1 or loops[0].name != "scf.for" or len(loops[0].operands) != 3:
        return module
    if any(op.name == "ktdp.get_compute_tile_id" for op in fn.walk()):
        return module
    defs = {r: op for op in body for r in op.results}
    loop = loops[0]
    if _const(defs.get(loop.operands[0])) != 0 or (_const(defs.get(loop.operands[2])) or 0) <= 0:
        return module
    out = module.model_copy(deep=True)
    new_fn = next(f for f in out.functions() if func_name(f) == func_name(fn))
    ops = new_fn.regions[0].blocks[0].operations
    at_loop = next(i for i, op in enumerate(ops) if op.regions)
    taken = {r for op in new_fn.walk() for r in op.results}
    tid, first = "%sched_tid", "%sched_first"
    while tid in taken or first in taken:
        tid, first = tid + "_", first + "_"
    index = ty.IndexType()
    ops[at_loop:at_loop] = [
        Operation(name="ktdp.get_compute_tile_id", results=[tid], result_types=[index]),
        Operation(name="arith.muli", operands=[tid, ops[at_loop].operands[2]], operand_types=[index, index],
                  results=[first], result_types=[index]),
    ]
    ops[at_loop + 2].operands[0] = first
    return out


__all__ = ["with_tile_start"]
