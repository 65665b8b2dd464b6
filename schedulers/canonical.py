"""Forms of a single-tile kernel the recognisers read, computing exactly what it computes.

- A row loop written without naming its tile (`with_tile_start`).
- Transposed reads of whole loaded tensors as reads through transposed views
  (`transposes_as_views`): a matmul of any operand transposition is then a plain
  `linalg.matmul`, and the same matmul with its default `indexing_maps` spelled out is the
  same kernel.

The row-loop form a single-tile kernel may be written in without naming its tile.

The row-loop class (`schedulers.kernels`) recognises `scf.for %r = %tid * B to R step S`
on a 1-D grid. On grid [1] the tile id is 0, so a loop `scf.for %r = %c0 to R step B`
is the same loop; `with_tile_start` writes it in the recognised form (a
`ktdp.get_compute_tile_id` and `arith.muli %tid, %step` before the loop, as its lower bound),
which computes exactly what the input does.
"""

from __future__ import annotations

import math

from ktir.dialects.names import Arith, Ktdp, Linalg, Scf
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .kernels import func_name, grid_of


def _const(op: Operation | None) -> int | None:
    if op is None or op.name != Arith.constant:
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
    if len(loops) != 1 or loops[0].name != Scf.for_ or len(loops[0].operands) != 3:
        return module
    if any(op.name == Ktdp.get_compute_tile_id for op in fn.walk()):
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
        Operation(name=Ktdp.get_compute_tile_id, results=[tid], result_types=[index]),
        Operation(name=Arith.muli, operands=[tid, ops[at_loop].operands[2]], operand_types=[index, index],
                  results=[first], result_types=[index]),
    ]
    ops[at_loop + 2].operands[0] = first
    return out




_FOLD = {Arith.addi: lambda a, b: a + b, Arith.subi: lambda a, b: a - b, Arith.muli: lambda a, b: a * b}


def tile_id_as_zero(module: Module, fn: Operation) -> Module:
    """On grid [1] the tile id is 0: `module` with `fn`'s top-level `ktdp.get_compute_tile_id`
    replaced by the constant 0 and the top-level `arith.addi` / `subi` / `muli` of constants
    folded, so a loop written from `tid * B` has constant bounds (the natural form keeps it
    whole); `module` itself when `fn` runs on more tiles or reads no tile id."""
    if math.prod(grid_of(fn)) != 1:
        return module
    if not any(op.name == Ktdp.get_compute_tile_id for op in fn.regions[0].blocks[0].operations):
        return module
    out = module.model_copy(deep=True)
    new_fn = next(f for f in out.functions() if func_name(f) == func_name(fn))
    ops = new_fn.regions[0].blocks[0].operations
    index = ty.IndexType()
    known: dict[str, int] = {}
    folded: list[Operation] = []

    def constant(name: str, value: int) -> Operation:
        known[name] = value
        return Operation(name=Arith.constant, results=[name], result_types=[index],
                         attributes={"value": at.IntegerAttr(value=value, type=index)})

    for op in ops:
        if op.name == Ktdp.get_compute_tile_id and all(isinstance(t, ty.IndexType) for t in op.result_types):
            folded += [constant(r, 0) for r in op.results]
            continue
        value = _const(op) if op.result_types and isinstance(op.result_types[0], ty.IndexType) else None
        if value is not None:
            known[op.results[0]] = value
        elif op.name in _FOLD and len(op.operands) == 2 and all(o in known for o in op.operands) and \
                isinstance(op.result_types[0], ty.IndexType):
            folded.append(constant(op.results[0], _FOLD[op.name](*(known[o] for o in op.operands))))
            continue
        folded.append(op)
    ops[:] = folded
    return out


def without_empty_loops(module: Module, fn: Operation) -> Module:
    """`module` without `fn`'s top-level `scf.for` loops of constant bounds that run no iteration
    and carry nothing (they do nothing: `for r = 1 to 1`, a scan over a single row); `module`
    itself when there is none."""
    body = fn.regions[0].blocks[0].operations
    consts = {op.results[0]: _const(op) for op in body if op.name == Arith.constant and op.results}

    def empty(op: Operation) -> bool:
        if op.name != Scf.for_ or op.results or len(op.operands) != 3:
            return False
        lb, ub, step = (consts.get(o) for o in op.operands)
        return lb is not None and ub is not None and step is not None and step > 0 and ub <= lb

    if not any(empty(op) for op in body):
        return module
    out = module.model_copy(deep=True)
    new_fn = next(f for f in out.functions() if func_name(f) == func_name(fn))
    ops = new_fn.regions[0].blocks[0].operations
    ops[:] = [op for op in ops if not empty(op)]
    return out


# ---------------------------------------------------------------------- transposes as views


def _whole_load(defs: dict[str, Operation], value: str, module: Module) -> tuple[Operation, Operation, Operation] | None:
    """(load, access tile, view) when `value` is a load of a whole global view from its first
    coordinate, the view a plain box of static sizes and strides."""
    from ktir.dialects.access import named

    from .kernels import _is_box, _is_identity

    load = defs.get(value)
    if load is None or load.name != Ktdp.load:
        return None
    tile = defs.get(named(load).operand("access_tile"))
    if tile is None or tile.name != Ktdp.construct_access_tile:
        return None
    view = defs.get(named(tile).operand("base"))
    if view is None or view.name != Ktdp.construct_memory_view or len(view.operands) != 1:
        return None
    space = view.attributes.get("memory_space")
    if not isinstance(space, at.MemorySpaceAttr) or space.kind != "global":
        return None
    sizes = [int(v) for v in getattr(view.attributes.get("static_sizes"), "values", ())]
    t = named(tile).result_type("result")
    if not isinstance(t, ty.AccessTileType) or list(t.shape) != sizes or named(tile).operands("symbol_operands"):
        return None
    indices = [_const(defs.get(i)) for i in named(tile).operands("indices")]
    if any(i is None for i in indices):
        return None
    ints = [int(i or 0) for i in indices]
    base = tile.attributes.get("base_map")
    if isinstance(base, at.AffineMapAttr):  # the subscripts are base_map of the operands
        nd = base.value.num_dims
        ints = [af.evaluate(e, ints[:nd], ints[nd:]) for e in base.value.results]
    if ints != [0] * len(sizes):
        return None
    if not _is_identity(module, tile.attributes.get("access_tile_order"), len(sizes)):
        return None
    if not _is_box(module, view.attributes.get("coordinate_set"), tuple(sizes)) or \
            not _is_box(module, tile.attributes.get("access_tile_set"), tuple(sizes)):
        return None
    return load, tile, view


def _permuted(view: Operation, tile: Operation, load: Operation, perm: list[int], result: str,
              taken: set[str]) -> list[Operation]:
    """A view, access tile and load reading the same memory as (view, tile, load) with dimension
    i of the new view being dimension perm[i] of the old one: the loaded tensor is the old one
    transposed by `perm`, named `result`."""
    from ktir.builder import box

    sizes = [int(v) for v in getattr(view.attributes.get("static_sizes"), "values", ())]
    strides = [int(v) for v in getattr(view.attributes.get("static_strides"), "values", ())]
    new_sizes = [sizes[p] for p in perm]
    new_strides = [strides[p] for p in perm]

    def fresh(hint: str) -> str:
        name = f"%sched_{hint}"
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    vt = view.result_types[0]
    assert isinstance(vt, ty.MemRefType)
    new_view_t = vt.model_copy(update={"shape": tuple(new_sizes)})
    v2 = view.model_copy(deep=True, update={"results": [fresh("tview")], "result_types": [new_view_t]})
    v2.attributes["static_sizes"] = at.DenseArrayAttr(element_type=ty.I64, values=tuple(new_sizes))
    v2.attributes["static_strides"] = at.DenseArrayAttr(element_type=ty.I64, values=tuple(new_strides))
    v2.attributes["coordinate_set"] = at.IntegerSetAttr(value=box(*new_sizes))
    t2 = tile.model_copy(deep=True, update={"results": [fresh("ttile")], "result_types": [
        ty.AccessTileType(shape=tuple(new_sizes))]})
    t2.operands = [v2.results[0], *t2.operands[1:]]
    t2.operand_types = [new_view_t, *t2.operand_types[1:]]
    t2.attributes["access_tile_set"] = at.IntegerSetAttr(value=box(*new_sizes))
    t2.attributes["access_tile_order"] = at.AffineMapAttr(value=af.AffineMap.identity(len(perm)))
    lt = load.result_types[0]
    assert isinstance(lt, ty.TensorType)
    l2 = load.model_copy(deep=True, update={"results": [result],
                                            "result_types": [lt.model_copy(update={"shape": tuple(new_sizes)})]})
    l2.operands = [t2.results[0]]
    l2.operand_types = [t2.result_types[0]]
    return [v2, t2, l2]


def _contraction_transposes(module: Module, op: Operation) -> tuple[bool, bool] | None:
    """Whether A and B of a 2-D contraction are read transposed ((k, m) and (n, k)); None when it
    is not a plain 2-D product C[m, n] += A B in some transposition."""
    from .dependence import generic_view

    view = generic_view(module, op)
    if isinstance(view, str) or view.loops != 3 or len(view.maps) != 3:
        return None
    a, b, c = ([e.position if isinstance(e, af.Dim) else -1 for e in m.results] for m in view.maps)
    if len(c) != 2 or -1 in a + b + c or view.iterators.count("reduction") != 1:
        return None
    m, n = c
    (k,) = view.reduced()
    if a not in ([m, k], [k, m]) or b not in ([k, n], [n, k]):
        return None
    return a == [k, m], b == [n, k]


def _permutation(module: Module, op: Operation) -> tuple[str, list[int]] | None:
    """(input, perm) when `op` only permutes its input's dimensions (result dimension i is input
    dimension perm[i]): a `linalg.transpose`, or a `linalg.generic` whose body yields its input
    element, every loop parallel, its output indexed by the loops in order."""
    from ktir.dialects.access import named

    from .dependence import generic_view

    if op.name == Linalg.transpose:
        return named(op).operand("input"), [int(v) for v in getattr(op.attributes.get("permutation"), "values", ())]
    if op.name != Linalg.generic or len(op.results) != 1 or len(op.operands) != 2:
        return None
    view = generic_view(module, op)
    if isinstance(view, str) or view.reduced() or view.inputs != 1:
        return None
    block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    if block is None or len(block.operations) != 1 or block.operations[0].operands != [block.arguments[0].name]:
        return None
    src, out = view.maps
    if out != af.AffineMap.identity(view.loops) or not all(isinstance(e, af.Dim) for e in src.results):
        return None
    sigma = [e.position for e in src.results if isinstance(e, af.Dim)]
    if sorted(sigma) != list(range(view.loops)):
        return None
    perm = [0] * view.loops
    for j, d in enumerate(sigma):  # input dimension j is loop (= output dimension) sigma[j]
        perm[d] = j
    t_in, t_out = op.operand_types[0], op.result_types[0]
    if not isinstance(t_in, ty.TensorType) or not isinstance(t_out, ty.TensorType) or \
            t_in.element_type != t_out.element_type:
        return None
    return op.operands[0], perm


def transposes_as_views(module: Module, fn: Operation) -> Module:
    """`module` with transposed reads of whole loaded tensors read through transposed views
    instead: a `linalg.transpose` of a loaded tensor, and a transposed operand of a 2-D
    contraction (`linalg.matmul_transpose_a/b`, `linalg.matmul` with transposing maps), which
    becomes a plain `linalg.matmul`. The same memory is read; a transposed view's strides make
    each transfer what it is (short runs), which the cost models charge. `module` itself when
    nothing changes."""
    from ktir.dialects.access import named

    from .dependence import CONTRACTIONS

    if math.prod(grid_of(fn)) != 1:
        return module
    body = fn.regions[0].blocks[0].operations
    defs = {r: op for op in body for r in op.results}
    uses: dict[str, int] = {}
    for op in body:
        for x in op.walk():
            for v in x.operands:
                uses[v] = uses.get(v, 0) + 1
    plans: dict[int, tuple[list[tuple[int, list[int]]], str]] = {}  # op -> ((operand, perm), ...), new name
    for op in body:
        moved = _permutation(module, op)
        if moved is not None:
            src, perm = moved
            if uses.get(src) == 1 and _whole_load(defs, src, module) is not None:
                plans[id(op)] = ([(0, perm)], "")
        elif op.name in CONTRACTIONS and op.name != Linalg.dot:
            found = _contraction_transposes(module, op)
            if found is None or not any(found) and "indexing_maps" not in op.attributes:
                continue
            ins = named(op).operands("inputs")
            which = [(i, [1, 0]) for i, t in enumerate(found) if t]
            if all(uses.get(ins[i]) == 1 and _whole_load(defs, ins[i], module) is not None for i, _ in which):
                plans[id(op)] = (which, Linalg.matmul)
    if not plans:
        return module
    out = module.model_copy(deep=True)
    new_fn = next(f for f in out.functions() if func_name(f) == func_name(fn))
    ops = new_fn.regions[0].blocks[0].operations
    new_defs = {r: op for op in ops for r in op.results}
    taken = {r for op in new_fn.walk() for r in op.results}
    result: list[Operation] = []
    orig = {id(a): b for a, b in zip(body, ops, strict=True)}
    plan_of = {id(orig[k]): v for k, v in plans.items()}
    for op in ops:
        plan = plan_of.get(id(op))
        if plan is None:
            result.append(op)
            continue
        which, rename = plan
        if _permutation(out, op) is not None:  # the transposed tensor is loaded as it is
            src = op.operands[0]
            load, tile, view = _whole_load(new_defs, src, out)  # type: ignore[misc]
            result += _permuted(view, tile, load, which[0][1], op.results[0], taken)
            continue
        ins = named(op).operands("inputs")
        for i, perm in which:
            load, tile, view = _whole_load(new_defs, ins[i], out)  # type: ignore[misc]
            name = f"%sched_t{i}"
            while name in taken:
                name += "_"
            taken.add(name)
            made = _permuted(view, tile, load, perm, name, taken)
            result += made
            op.operands[i] = name
            op.operand_types[i] = made[-1].result_types[0]
        op.name = rename
        op.attributes.pop("indexing_maps", None)
        result.append(op)
    ops[:] = result
    from .natural import prune

    pruned, _ = prune(out, new_fn)
    return pruned


__all__ = ["transposes_as_views", "with_tile_start"]
