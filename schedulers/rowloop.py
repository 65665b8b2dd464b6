"""Re-partition a row-loop kernel: new grid, new row block, optional double buffering.

The input's row loop `scf.for %r = %tid * B to R step S` is kept with its body; the
rewrite changes the block B to `rb` rows (every tensor and access tile of B leading rows
in the body, and each access tile set's row bound), the grid to `[g]` and the step to
`g * rb`. With double buffering the streaming loads of the body move one iteration ahead:
the first block is loaded before the loop, the loop carries the loaded tensors as
iter_args, and iteration r loads the block of r + step under `scf.if r + step < R` (the
last iteration loads nothing: a redundant prefetch would hold a DMA engine and the tile's
port while the last block's stores wait). The index is also clamped to the last block,
so that the access tile provably stays inside the view.
"""

from __future__ import annotations

from ktir.builder import located
from ktir.dialects.names import Arith, Ktdp, Scf
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region

from .api import ScheduleError
from .kernels import RowKernel, func_name

INDEX = ty.IndexType()


def _const(name: str, value: int) -> Operation:
    return Operation(name=Arith.constant, results=[name], result_types=[INDEX],
                     attributes={"value": at.IntegerAttr(value=value, type=INDEX)})


def _retype(t: Type, old: int, new: int) -> Type:
    if isinstance(t, ty.TensorType | ty.AccessTileType) and t.shape and t.shape[0] == old:
        return t.model_copy(update={"shape": (new, *t.shape[1:])})
    return t


def _set_rows(module: Module, attr: at.Attribute | None, old: int, new: int) -> at.Attribute | None:
    """The access tile set with its row bound `d0 <= old - 1` replaced by `d0 <= new - 1`."""
    value = attr
    if isinstance(value, at.AttrAliasRef):
        value = module.attr_aliases.get(value.name) or module.attr_aliases.get("#" + value.name)
    if not isinstance(value, at.IntegerSetAttr):
        return attr
    s = value.value
    out = []
    changed = False
    for c in s.constraints:
        probe = [0] * s.num_dims
        other = [5] * s.num_dims
        probe[0] = other[0] = old - 1
        at_bound = af.evaluate(c.expr, probe, [0] * s.num_symbols)
        past = af.evaluate(c.expr, [old] + probe[1:], [0] * s.num_symbols)
        free = af.evaluate(c.expr, other, [0] * s.num_symbols)
        if not c.is_equality and at_bound == 0 and past == -1 and free == 0:
            out.append(af.constraint(af.dim(0), "<=", af.const(new - 1)))
            changed = True
        else:
            out.append(c)
    if not changed:
        raise ScheduleError(f"an access tile set of the row loop has no row bound d0 <= {old - 1}")
    return at.IntegerSetAttr(value=s.model_copy(update={"constraints": tuple(out)}))


def rewrite_rows(module: Module, k: RowKernel, p: dict[str, int]) -> Module:
    g, rb, db = p["g"], p["rb"], bool(p["db"])
    out = module.model_copy(deep=True)
    fn = next(f for f in out.functions() if func_name(f) == k.name)
    fn.attributes["grid"] = at.ArrayAttr(elements=(at.IntegerAttr(value=g, type=None),))
    top = fn.regions[0].blocks[0].operations
    loop = next(op for op in top if op.name == Scf.for_)
    defs = {r: op for op in fn.walk() for r in op.results}
    first = defs[loop.operands[0]]
    tid = next(op for op in top if op.name == Ktdp.get_compute_tile_id).results[0]
    at_first = top.index(first)
    top[at_first:at_first] = [_const("%sched_rb", rb), _const("%sched_step", g * rb), _const("%sched_last", k.R - rb)]
    first.operands = [tid, "%sched_rb"]
    loop.operands[2] = "%sched_step"
    body = loop.regions[0].blocks[0]
    B = k.block
    # tensors made before the loop for its body (scratch, broadcast weights) have B rows too
    before = [op for op in top[:top.index(loop)] if op.name != Ktdp.load]
    for op in before + [o for inner in body.operations for o in inner.walk()]:
        retyped = [_retype(t, B, rb) for t in op.result_types]
        changed = retyped != op.result_types
        op.result_types = retyped
        op.operand_types = [_retype(t, B, rb) for t in op.operand_types]
        if op.name == Ktdp.construct_access_tile and changed:
            op.attributes["access_tile_set"] = _set_rows(out, op.attributes.get("access_tile_set"), B, rb)  # type: ignore[assignment]
    if db:
        _double_buffer(fn, loop, top)
    # positions of the printed text, for diagnostics on the scheduled file
    return located(out, f"{k.name}.scheduled.ktir")


def _double_buffer(fn: Operation, loop: Operation, top: list[Operation]) -> None:
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0].name
    ops = body.operations
    defs = {r: op for op in ops for r in op.results}
    loads = [op for op in ops if op.name == Ktdp.load]
    prologue: list[Operation] = []
    step_ops = [
        Operation(name=Arith.addi, operands=[iv, "%sched_step"], operand_types=[INDEX, INDEX],
                  results=["%sched_next"], result_types=[INDEX]),
        Operation(name=Arith.cmpi, operands=["%sched_next", loop.operands[1]], operand_types=[INDEX, INDEX],
                  results=["%sched_more"], result_types=[ty.IntegerType(width=1)],
                  attributes={"predicate": at.IntegerAttr(value=2, type=ty.I64)}),  # slt
        # clamped as well, so the access tile provably stays inside the view (the verifier does not see the guard)
        Operation(name=Arith.minsi, operands=["%sched_next", "%sched_last"], operand_types=[INDEX, INDEX],
                  results=["%sched_at"], result_types=[INDEX]),
    ]
    renames: dict[str, str] = {}
    then_ops: list[Operation] = []
    loaded: list[tuple[str, Type]] = []
    at_first = ops.index(loads[0])
    for i, load in enumerate(loads):
        tile = defs[load.operands[0]]
        pre_tile = tile.model_copy(deep=True, update={"results": [f"%sched_pt{i}"]})
        pre_tile.operands = [loop.operands[0] if o == iv else o for o in tile.operands]
        pre_load = load.model_copy(deep=True, update={"results": [f"%sched_pre{i}"], "operands": [f"%sched_pt{i}"]})
        prologue += [pre_tile, pre_load]
        next_tile = tile.model_copy(deep=True, update={"results": [f"%sched_nt{i}"]})
        next_tile.operands = ["%sched_at" if o == iv else o for o in tile.operands]
        renames[load.results[0]] = f"%sched_cur{i}"
        t = load.result_types[0]
        then_ops += [next_tile, load.model_copy(deep=True, update={"results": [f"%sched_ld{i}"],
                                                                   "operands": [f"%sched_nt{i}"]})]
        loaded.append((f"%sched_ld{i}", t))
        loop.operands.append(f"%sched_pre{i}")
        loop.operand_types.append(t)
        loop.results.append(f"%sched_fin{i}")
        loop.result_types.append(t)
        body.arguments.append(BlockArgument(name=f"%sched_cur{i}", type=t))
    # the next block is loaded while this one is computed; the last iteration loads nothing
    # (a clamped, redundant prefetch would hold a DMA engine and the tile's port for nothing)
    types = [t for _, t in loaded]
    then_ops.append(Operation(name=Scf.yield_, operands=[n for n, _ in loaded], operand_types=types))
    keep = Operation(name=Scf.yield_, operands=[f"%sched_cur{i}" for i in range(len(loads))], operand_types=types)
    prefetch = Operation(name=Scf.if_, operands=["%sched_more"], operand_types=[ty.IntegerType(width=1)],
                         results=[f"%sched_nx{i}" for i in range(len(loads))], result_types=types,
                         regions=[Region(blocks=[Block(operations=then_ops)]), Region(blocks=[Block(operations=[keep])])])
    load_ids = {id(op) for op in loads}
    ops.insert(at_first, prefetch)
    ops[:] = [op for op in ops if id(op) not in load_ids]
    for op in ops:
        if op is prefetch:
            continue
        for inner in op.walk():
            inner.operands = [renames.get(o, o) for o in inner.operands]
    unused = {op.results[0] for op in ops if op.name == Ktdp.construct_access_tile} - {
        o for op in ops for inner in op.walk() for o in inner.operands}
    body.operations = step_ops + [op for op in ops if not (op.results and op.results[0] in unused)]
    term = body.operations[-1]
    if term.name != Scf.yield_:
        term = Operation(name=Scf.yield_)
        body.operations.append(term)
    term.operands = [f"%sched_nx{i}" for i in range(len(loads))]
    term.operand_types = types
    top[top.index(loop):top.index(loop)] = prologue
