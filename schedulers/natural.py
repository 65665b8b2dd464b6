"""Kernels in their natural single-tile form: whole tensors loaded, computed on, stored.

The form is what people and the lowering write first: `grid = [1]`, straight-line code,
each tensor loaded from (and stored to) a global view of a function argument through one
box access tile at constant coordinates, linalg ops (named or generic) and elementwise
arith/math ops in between. `recognise_natural` finds its iteration space with the
dependence check (`schedulers.dependence`): each class of tied dimensions is one dimension
of the space, and the classes with nothing blocking them can be cut into blocks, over the
grid and in loops, without changing any output element.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Scf, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation
from ktir.targets.from_interp import TRANSCENDENTAL

from .dependence import CONTRACTIONS, DimGraph, analyse, resolve, shape, where
from .kernels import (
    Operand,
    _is_box,
    _is_identity,
    _operand,
    _Values,
    aliased,
    dtype_name,
    func_name,
    grid_of,
    itemsize,
)

_QUIET = frozenset({Arith.constant, Ktdp.construct_memory_view, Ktdp.get_compute_tile_id, Func.return_,
                    Arith.addi, Arith.muli, Arith.subi, Tensor.empty})


@dataclass
class Access:
    """One load or store of a whole box at constant coordinates of a global view."""

    op: Operation  # the ktdp.load / ktdp.store
    tile: Operation  # its construct_access_tile
    view: str  # the memory view value
    operand: Operand
    value: str  # the tensor loaded or stored
    starts: tuple[int, ...]  # view coordinates of the box's first element (in a loop: at its first iteration)
    stored: bool
    loop: SeqLoop | None = None  # the sequential loop it is in, when its coordinates follow the loop's index
    seq: tuple[bool, ...] = ()  # per dimension: moved by the loop's step at each iteration
    gather: Gather | None = None  # a load through an indirect access tile


@dataclass(frozen=True)
class Gather:
    """A load through `ktdp.construct_indirect_access_tile` whose intermediate variables are the
    loaded tensor's dimensions: a block of them is the same tile over the block's variables
    (each variable shifted by the block's start, a captured value)."""

    indices: tuple[Operand, ...]  # the index views it reads
    index_views: tuple[str, ...]  # their SSA values
    index_bytes: tuple[tuple[tuple[int, ...], int], ...]  # per index view: the variables it is read along, itemsize
    strides: tuple[int, ...]  # per variable: the base view's stride it moves along (GATHERED when read through an index)


GATHERED = 1 << 40  # the stride of a dimension read through an index: every element its own run


@dataclass(frozen=True)
class Chunk:
    """A dimension blocked only by reductions over it, looped over in blocks on each tile (a
    second tiling level, for when it is too long for the scratchpad): the ops along it run in
    phases, one loop over its blocks per phase, each reduction's partial result carried through
    its loop. Phase p's loop computes the reductions that need only what phases before it
    produced, and the stores of such values; what it needs along the dimension is computed again
    in it (loads included)."""

    cls: int
    reductions: frozenset[int]  # ids of the reductions over it
    needed: tuple[frozenset[int], ...]  # per phase loop, in order: ids of the ops it runs
    phase: dict[int, int]  # id of every op -> the phase of the values it needs (0: the inputs)
    loop_phases: tuple[int, ...]  # the phase of each loop

    def result_deps(self, op: Operation, d: frozenset[int]) -> frozenset[int]:
        """A reduction's result is whole along the dimension once its loop is done."""
        return d - {self.cls} if id(op) in self.reductions else d


@dataclass(frozen=True)
class SeqLoop:
    """A top-level `scf.for` of constant bounds kept whole (its iterations run in order on each
    tile): a scan carrying state in iter_args, or a loop over rows whose blocks must not change."""

    op: Operation
    iv: str
    lb: int
    step: int
    trips: int

    def span(self, start: int, n: int) -> tuple[int, int]:
        """[first, end) of coordinates a dimension moved by the loop covers over all iterations."""
        return start, start + (self.trips - 1) * self.step + n


@dataclass
class Step:
    """What one op costs, per execution, as a function of the classes' block sizes."""

    op: Operation
    dims: tuple[int, ...]  # the classes of its iteration space (elements = product of their blocks)
    kind: str  # "load", "store", "matrix", "vector", "free"
    dtype: str = "f32"
    plain: float = 0.0  # simple vector ops per element
    transcendental: float = 0.0  # transcendental ops per element
    itemsize: int = 4
    strides: tuple[int, ...] = ()  # loads/stores: the view's strides per tensor dimension
    value_dims: tuple[int, ...] = ()  # loads/stores: the class of each tensor dimension, in order
    repeat: int = 1  # executions per execution of its placement (the trips of a sequential loop it is in)
    phases: int = 1  # along a chunked dimension: the phase loops it runs in (when the dimension is looped)


@dataclass
class NaturalKernel:
    name: str
    fn: Operation
    graph: DimGraph
    classes: list[int]  # every class of the iteration space, by first appearance
    extent: dict[int, int]
    free: dict[int, list[str]]  # class -> reasons it cannot be cut ([] when it can)
    steps: list[Step]
    accesses: list[Access]
    deps: dict[str, frozenset[int]]  # value -> the classes it depends on (its dimensions and its inputs')
    op_deps: list[frozenset[int]]  # per step: the classes its execution depends on
    contiguous: dict[int, int]  # class -> the smallest itemsize of a view whose stride-1 dimension it is
    values: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)  # tensors: (name, classes, itemsize)
    # a contraction whose reduced class may be looped over in blocks, its partial products
    # accumulated in a loop-carried f32 accumulator: (class, the contraction, the ops feeding it)
    kloop: tuple[int, Operation, frozenset[int]] | None = None
    kind: str = "natural"
    one_block: int | None = None  # a class cut into exactly one block per tile (an all-reduced split)
    loops: dict[int, SeqLoop] = field(default_factory=dict)  # id of a top-level scf.for -> how it runs
    whole_blocks: bool = False  # blocks must divide their extents (no partial last block)
    chunk: Chunk | None = None  # a reduced dimension that may be looped over in blocks, in phases
    inplace: frozenset[str] = frozenset()  # arrays both read and written (their accesses stay in order)

    def result_deps(self, op: Operation, d: frozenset[int]) -> frozenset[int]:
        """The classes a result of `op` depends on when `op` depends on `d`: a looped contraction's
        or a chunked reduction's result no longer depends on the dimension it reduces."""
        if self.kloop is not None and op is self.kloop[1]:
            return d - {self.kloop[0]}
        return self.chunk.result_deps(op, d) if self.chunk is not None else d

    def ops(self) -> list[Operation]:
        """Every op of the body in program order, the bodies of sequential loops after their loop
        (without their terminators)."""
        return flat(self.fn.regions[0].blocks[0].operations)

    def splittable(self) -> list[int]:
        return [c for c in self.classes if not self.free[c] and self.extent[c] > 1]

    def label(self, c: int) -> str:
        return f"d{self.classes.index(c)}"


def flat(body: list[Operation]) -> list[Operation]:
    """`body` with each top-level loop followed by the ops of its body (terminator left out)."""
    out: list[Operation] = []
    for op in body:
        out.append(op)
        if op.name == Scf.for_:
            out += [x for x in op.regions[0].blocks[0].operations if x.name != Scf.yield_]
    return out


def _seq_loop(op: Operation, vals: _Values) -> SeqLoop | str:
    """A top-level loop the natural form keeps whole, or why it cannot be one."""
    lv = named(op)
    lb, ub, step = (vals.const(lv.operand(n)) for n in ("lower_bound", "upper_bound", "step"))
    if lb is None or ub is None or step is None or step <= 0:
        return f"{op.name}{where(op)} has bounds or a step that are not constants"
    body = op.regions[0].blocks[0]
    for x in body.operations:
        if x.regions and not x.name.startswith("linalg."):
            return f"{x.name}{where(x)} nests regions in {op.name}{where(op)}"
    for a in body.arguments[1:]:
        if not isinstance(a.type, ty.TensorType):
            return f"{op.name}{where(op)} carries {a.name} of type {a.type}: only tensors are carried"
    trips = max(0, -(-(ub - lb) // step))
    if trips == 0:
        return f"{op.name}{where(op)} runs no iteration"
    return SeqLoop(op, body.arguments[0].name, lb, step, trips)


def _removable(op: Operation) -> bool:
    """An op whose only effect is its results: pure by definition, or a linalg op on tensors,
    or a load (reading has no effect a later op can see)."""
    from ktir.dialects.registry import lookup
    from ktir.dialects.traits import PURE

    if op.name in (Ktdp.load, Tensor.empty):
        return True
    if op.name.startswith("linalg.") and op.results and all(isinstance(t, ty.TensorType) for t in op.result_types):
        return True
    d = lookup(op.name)
    return d is not None and d.has_trait(PURE) and not op.regions


def prune(module: Module, fn: Operation) -> tuple[Module, Operation]:
    """`fn` without the top-level ops whose results nothing uses (a dead constant would otherwise
    be a dimension of the iteration space of its own); the same objects when nothing is dead."""
    body = fn.regions[0].blocks[0].operations
    used = {o for op in body for inner in op.walk() for o in inner.operands}
    dead: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, op in enumerate(body):
            if i in dead or not op.results or set(op.results) & used or not _removable(op):
                continue
            dead.add(i)
            changed = True
            used = {o for j, x in enumerate(body) if j not in dead for inner in x.walk() for o in inner.operands}
    if not dead:
        return module, fn
    out = module.model_copy(deep=True)
    name = func_name(fn)
    new_fn = next(f for f in out.functions() if func_name(f) == name)
    ops = new_fn.regions[0].blocks[0].operations
    ops[:] = [op for i, op in enumerate(ops) if i not in dead]
    return out, new_fn


def natural_reason_or_kernel(module: Module, fn: Operation, sizes: Mapping[str, int]) -> NaturalKernel | str:
    """The natural-form kernel of `fn`, or why `fn` is not in that form."""
    name = func_name(fn)
    grid = grid_of(fn)
    if math.prod(grid) != 1:
        return f"the kernel already runs on a grid {list(grid)}"
    top = fn.regions[0].blocks[0].operations
    allowed_ktdp = {Ktdp.construct_memory_view, Ktdp.construct_access_tile, Ktdp.load, Ktdp.store,
                    Ktdp.get_compute_tile_id, Ktdp.construct_indirect_access_tile}
    vals = _Values(fn, sizes)
    loops: dict[int, SeqLoop] = {}
    for op in top:
        if op.name == Scf.for_:
            found_loop = _seq_loop(op, vals)
            if isinstance(found_loop, str):
                return found_loop
            loops[id(op)] = found_loop
    body = flat(top)
    for op in body:
        if op.name == Scf.for_ and id(op) in loops:
            continue
        if op.name.startswith(("scf.", "ktdp.inter_tile", "cf.")):
            return f"{op.name}{where(op)} is not straight-line code over whole tensors"
        if op.regions and not op.name.startswith("linalg.") and op.name != Ktdp.construct_indirect_access_tile:
            return f"{op.name}{where(op)} has regions: the natural form is straight-line code"
        if op.name.startswith(("memref.", Func.call)) or (op.name.startswith("ktdp.") and op.name not in allowed_ktdp):
            # memory effects other than whole-tensor loads and stores would run on every tile
            return f"{op.name}{where(op)} reads or writes memory outside ktdp.load/ktdp.store"
        if op.name not in (Ktdp.construct_access_tile, Ktdp.construct_indirect_access_tile) and \
                any(isinstance(t, ty.MemRefType) for t in op.operand_types):
            return f"{op.name}{where(op)} works on a memref (buffer) operand"
        if op.name == Ktdp.construct_distributed_memory_view:
            return f"{op.name}{where(op)}: distributed views are outside the natural form"
    tid_results = {r for op in body if op.name == Ktdp.get_compute_tile_id for r in op.results}
    used = {o for op in body for inner in op.walk() for o in inner.operands}
    if tid_results & used:
        return "the kernel reads its tile id: it is already divided by hand"
    accesses: list[Access] = []
    inside = {id(x): lp for lp in loops.values() for x in lp.op.regions[0].blocks[0].operations}
    for op in body:
        if op.name not in (Ktdp.load, Ktdp.store):
            continue
        found = _access(module, op, vals, inside.get(id(op)))
        if isinstance(found, str):
            return found
        accesses.append(found)
    if not any(a.stored for a in accesses):
        return "the kernel stores nothing to global memory"
    reason = _memory_reason(accesses)
    if reason:
        return reason
    empties = {r for op in body if op.name == Tensor.empty for r in op.results}
    for op in body:
        ins = _ins(op)
        for v in ins:
            if v in empties:
                return f"{op.name}{where(op)} reads {v}, made by tensor.empty (undefined contents)"
    g = analyse(module, top)
    for a in accesses:  # a tensor loaded or stored whole at constant coordinates: its dimensions are plain
        if not a.stored and a.value in empties:
            return "a load into an empty tensor"
        if a.loop is not None:  # a dimension the loop walks: its iterations run in order, kept whole
            for d, moved in enumerate(a.seq):
                if moved:
                    g.block(g.node(a.value, d), f"{a.op.name}{where(a.op)} is indexed along this dimension by "
                            f"{a.loop.iv}, the index of {a.loop.op.name}{where(a.loop.op)}, whose iterations run in order")
    inplace, shifted = _tie_in_place(g, accesses)
    classes: list[int] = []
    for op in body:
        for v in [*op.operands, *op.results]:
            if v in empties or not shape(g.types.get(v)):
                continue
            for c in g.classes(v):
                if c not in classes:
                    classes.append(c)
    extent = {c: g.size(c) for c in classes}
    for i, c in enumerate(classes):
        if extent[c] == 0:  # nothing to divide, and a block of 0 elements has no legal shape
            return f"dimension d{i} has size 0: the kernel touches no elements"
    free = {c: g.reasons(c) for c in classes}
    cuttable = {c for c in classes if not free[c] and extent[c] > 1}
    for arg, d, group in shifted:
        cut = [a for a in group if g.cls(a.value, d) in cuttable]
        if cut:
            return (f"%{arg} is read and written at different coordinates along its dimension {d} "
                    f"({', '.join(f'{a.op.name}{where(a.op)}' for a in group)}): cut into blocks, a block would read "
                    "elements another block writes")
    if inplace and not cuttable:
        return (f"{', '.join(f'%{a}' for a in sorted(inplace))} is read and written and no dimension can be cut into "
                "blocks: a reduction split over tiles would reorder its reads and writes")
    # the in-place arrays' accesses must stay in program order: no K loop or phases that re-run loads
    kloop = None if inplace else _kloop(g, top, empties)
    chunk = None if kloop is not None or loops or inplace else _chunk(g, top, empties, accesses, free, extent)
    if chunk is not None and not _chunk_placeable(g, body, accesses, empties, chunk, cuttable):
        chunk = None
    steps, deps, op_deps = _steps(g, body, accesses, empties, kloop, loops, inside, chunk)
    if inplace:
        # every access of an in-place array placed at one loop level, whatever is cut: the emitter
        # places each level's ops in program order, an op of an outer level before the inner loop
        level = {id(s.op): frozenset(d) & cuttable for s, d in zip(steps, op_deps, strict=True)}
        for arg in sorted(inplace):
            group = [a for a in accesses if a.operand.arg == arg]
            if len({level[id(a.op)] for a in group}) > 1:
                return (f"%{arg} is read and written by ops that depend on different dimensions "
                        f"({', '.join(f'{a.op.name}{where(a.op)}' for a in group)}): cut into blocks, they would "
                        "run in different loops and out of program order")
    contiguous: dict[int, int] = {}
    for a in accesses:
        st = a.gather.strides if a.gather is not None else a.operand.layout
        if st and 1 in st:
            c = g.cls(a.value, st.index(1))
            contiguous[c] = min(contiguous.get(c, 1 << 30), a.operand.itemsize)
    values = []
    for op in body:
        for r, t in zip(op.results, op.result_types, strict=False):
            if shape(t) and r not in empties and isinstance(t, ty.TensorType):
                values.append((r, g.classes(r), itemsize(t.element_type)))
    return NaturalKernel(name, fn, g, classes, extent, free, steps, accesses, deps, op_deps, contiguous, values, kloop,
                         loops=loops, chunk=chunk, inplace=frozenset(inplace))


def _tie_in_place(g: DimGraph, accesses: list[Access]) -> tuple[set[str], list[tuple[str, int, list[Access]]]]:
    """The arrays both read and written (`_memory_reason` let through only plain boxes of one
    layout), with each dimension along which every access starts at one coordinate, spans one
    extent and does not move with a loop tied into one class: cut, every access of the array
    then touches the same block. The other dimensions (array, dimension, accesses) are returned:
    no class of them may be cut."""
    by_arg: dict[str, list[Access]] = {}
    for a in accesses:
        by_arg.setdefault(a.operand.arg, []).append(a)
    inplace: set[str] = set()
    moved: list[tuple[str, int, list[Access]]] = []
    for arg, group in by_arg.items():
        if all(a.stored for a in group) or not any(a.stored for a in group):
            continue
        inplace.add(arg)
        rank = len(group[0].starts)
        for d in range(rank):
            extents = {(shape(g.types.get(a.value)) or ())[d] for a in group}
            if len({a.starts[d] for a in group}) == 1 and len(extents) == 1 and \
                    not any(a.seq and a.seq[d] for a in group):
                first = g.node(group[0].value, d)
                for a in group[1:]:
                    g.tie(first, g.node(a.value, d), a.op)
            else:
                moved.append((arg, d, group))
    return inplace, moved


def _ins(op: Operation) -> list[str]:
    """Operands whose contents an op reads (not the shape-only outs of linalg ops)."""
    if not op.name.startswith("linalg."):
        return list(op.operands)
    v = named(op)
    declared = {o.name for o in v.opdef.operands}
    group = "inputs" if "inputs" in declared else "input" if "input" in declared else None
    try:
        ins = v.operands(group) if group is not None and "operandSegmentSizes" in op.attributes else None
    except AccessError:
        ins = None
    if ins is None:
        return list(op.operands)  # no declared input group, or no segment sizes to split it by
    if op.name == Linalg.generic:
        # outs are read when the payload uses their block argument (block arguments follow the operands)
        block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
        used = {o for inner in (block.operations if block else []) for x in inner.walk() for o in x.operands}
        args = block.arguments if block else []
        outs = v.operands("outputs")
        return [*ins, *(o for j, o in enumerate(outs) if len(ins) + j < len(args) and args[len(ins) + j].name in used)]
    if op.name in CONTRACTIONS or op.name == Linalg.reduce:
        return list(op.operands)  # the accumulator is added in
    return ins


def _access(module: Module, op: Operation, vals: _Values, loop: SeqLoop | None = None) -> Access | str:
    try:
        return _access_of(module, op, vals, loop)
    except AccessError as e:
        return f"{op.name}{where(op)}: {e}"


def _gather_of(module: Module, op: Operation, tile: Operation, vals: _Values) -> Access | str:
    """A load through an indirect access tile: its variables space is a box in identity order,
    each direct subscript one variable (coefficient 1) plus constants, each indirect one reads an
    index view of a function argument at one variable plus constants."""
    v = named(tile)
    view = vals.defs.get(v.operand("base"))
    operand = _operand(view, vals) if view is not None else None
    if view is None or operand is None:
        return f"{op.name}{where(op)} does not reach a global view of a function argument"
    t = v.result_type("result")
    if not isinstance(t, ty.AccessTileType) or any(d is None for d in t.shape):
        return f"the indirect access tile of {op.name}{where(op)} has no static shape"
    dims = tuple(int(d or 0) for d in t.shape)
    n = len(dims)
    if v.operands("symbol_operands") or any(vals.const(c) is None for c in v.operands("captured_variables")):
        return f"the indirect access tile of {op.name}{where(op)} captures values that are not constants"
    if not _is_identity(module, tile.attributes.get("variables_space_order"), n) or \
            not _is_box(module, tile.attributes.get("variables_space_set"), dims):
        return f"the variables space of the indirect access tile of {op.name}{where(op)} is not the box of its shape"
    kinds = [bool(k) for k in getattr(tile.attributes.get("per_dim_subscript_kinds"), "values", ())]
    maps = [resolve(module, m) for m in getattr(tile.attributes.get("per_dim_subscript_maps"), "elements", ())]
    if len(kinds) != len(maps) or not all(isinstance(m, at.AffineMapAttr) for m in maps):
        return f"the indirect access tile of {op.name}{where(op)} has subscripts the natural form cannot read"
    idx_views = v.operands("indirect_memrefs")
    strides = [GATHERED] * n
    reads: list[tuple[tuple[int, ...], int]] = []
    index_ops: list[Operand] = []
    k = 0
    for i, (kind, m) in enumerate(zip(kinds, maps, strict=True)):
        assert isinstance(m, at.AffineMapAttr)
        used = []
        for e in m.value.results:
            lin = af.linear(e)
            if lin is None or any(d < n and c != 1 for d, c in lin[0].items()) or \
                    len([d for d in lin[0] if d < n]) > 1:
                return (f"a subscript of the indirect access tile of {op.name}{where(op)} is not one variable "
                        "plus constants")
            used += [d for d in lin[0] if d < n]
        if not kind:
            if used:
                strides[used[0]] = operand.layout[i]
            continue
        iview = vals.defs.get(idx_views[k]) if k < len(idx_views) else None
        ioperand = _operand(iview, vals) if iview is not None else None
        if ioperand is None:
            return f"an index view of the indirect access tile of {op.name}{where(op)} is not a global view of an argument"
        index_ops.append(ioperand)
        reads.append((tuple(used), ioperand.itemsize))
        k += 1
    return Access(op, tile, named(view).result("result"), operand, named(op).result("result"), (0,) * n, False,
                  gather=Gather(tuple(index_ops), tuple(idx_views[:k]), tuple(reads), tuple(strides)))


def _access_of(module: Module, op: Operation, vals: _Values, loop: SeqLoop | None = None) -> Access | str:
    stored = op.name == Ktdp.store
    tile = vals.defs.get(named(op).operand("access_tile"))
    if tile is not None and tile.name == Ktdp.construct_indirect_access_tile:
        if stored:
            return f"{op.name}{where(op)} stores through an indirect access tile (a scatter): its elements are data"
        if loop is not None:
            return f"{op.name}{where(op)} gathers inside {loop.op.name}{where(loop.op)}"
        return _gather_of(module, op, tile, vals)
    if tile is None or tile.name != Ktdp.construct_access_tile:
        return f"{op.name}{where(op)} does not go through an access tile"
    tv = named(tile)
    view = vals.defs.get(tv.operand("base"))
    operand = _operand(view, vals) if view is not None else None
    if view is None or operand is None:
        return f"{op.name}{where(op)} does not reach a global view of a function argument"
    t = tv.result_type("result")
    if not isinstance(t, ty.AccessTileType) or any(d is None for d in t.shape):
        return f"the access tile of {op.name}{where(op)} has no static shape"
    dims = tuple(int(d or 0) for d in t.shape)
    if tv.operands("symbol_operands"):
        return f"the access tile of {op.name}{where(op)} has symbol operands"
    if not _is_identity(module, tile.attributes.get("access_tile_order"), len(dims)):
        return f"the access tile of {op.name}{where(op)} has a non-identity access_tile_order"
    if not _is_box(module, tile.attributes.get("access_tile_set"), dims):
        return f"the access tile set of {op.name}{where(op)} is not the box of its shape"
    names = tv.operands("indices")
    indices = [vals.const(o) for o in names]
    offsets: dict[int, int] = {}  # position -> c, for an index that is the loop's index + c
    for pos, (i, o) in enumerate(zip(indices, names, strict=True)):
        off = _iv_offset(o, loop, vals) if i is None and loop is not None else None
        if i is None and off is None:
            return f"the access tile of {op.name}{where(op)} starts at a non-constant coordinate"
        if off is not None:
            offsets[pos] = off
    base = resolve(module, tile.attributes.get("base_map"))

    def at_index(iv: int) -> tuple[int, ...]:
        ints = [iv + offsets[p] if i is None else int(i) for p, i in enumerate(indices)]
        if isinstance(base, at.AffineMapAttr):
            nd = base.value.num_dims
            return tuple(af.evaluate(e, ints[:nd], ints[nd:]) for e in base.value.results)
        return tuple(ints)

    starts = at_index(loop.lb if loop is not None else 0)
    value = named(op).operand("data") if stored else named(op).result("result")
    if loop is None or not offsets:
        return Access(op, tile, named(view).result("result"), operand, value, starts, stored)
    moved = tuple(b - a for a, b in zip(starts, at_index(loop.lb + 1), strict=True))
    if any(m not in (0, 1) for m in moved):
        return f"the access tile of {op.name}{where(op)} moves by {list(moved)} per unit of {loop.iv}: only the index itself is followed"
    return Access(op, tile, named(view).result("result"), operand, value, starts, stored, loop,
                  tuple(m == 1 for m in moved))


def _iv_offset(name: str, loop: SeqLoop, vals: _Values) -> int | None:
    """c when `name` is the loop's index plus or minus a constant c (`arith.addi` / `arith.subi`)."""
    if name == loop.iv:
        return 0
    op = vals.defs.get(name)
    if op is None or op.name not in (Arith.addi, Arith.subi) or len(op.operands) != 2:
        return None
    lhs, rhs = op.operands
    if op.name == Arith.addi and lhs != loop.iv:
        lhs, rhs = rhs, lhs
    c = vals.const(rhs)
    if lhs != loop.iv or c is None:
        return None
    return c if op.name == Arith.addi else -c


def span(a: Access, d: int, n: int) -> tuple[int, int]:
    """[first, end) of the coordinates of dimension d an access covers (over its loop's iterations)."""
    if a.loop is not None and a.seq and a.seq[d]:
        return a.loop.span(a.starts[d], n)
    return a.starts[d], a.starts[d] + n


def _memory_reason(accesses: list[Access]) -> str | None:
    """Blocks of different tiles must not touch an element another tile writes."""
    by_arg: dict[str, list[Access]] = {}
    for a in accesses:
        by_arg.setdefault(a.operand.arg, []).append(a)
    written = {a.operand.arg for a in accesses if a.stored}
    for a in accesses:
        for ix in a.gather.indices if a.gather is not None else ():
            if ix.arg in written:
                return f"%{ix.arg} is read as indices by {a.op.name}{where(a.op)} and written: blocks on different tiles would race"
    for arg, group in by_arg.items():
        writes = [a for a in group if a.stored]
        if not writes:
            continue
        if len(writes) < len(group) and any(a.gather is not None for a in group):
            return f"%{arg} is read through an indirect access tile and written: the elements it reads are data"
        if len({(a.operand.offset, a.operand.layout) for a in group}) > 1 and len(writes) < len(group):
            return f"%{arg} is read and written through views of different layouts"
        for a in writes:
            box = shape(named(a.op).operand_type("data")) or ()
            if aliased(box, a.operand.layout):
                return (f"the store{where(a.op)} writes some elements of %{arg} twice (strides "
                        f"{list(a.operand.layout)} over a {'x'.join(map(str, box))} box): its order would matter")
        layouts = {(a.operand.offset, a.operand.layout) for a in writes}
        if len(layouts) > 1:
            return f"%{arg} is written through views of different layouts"
        for i, a in enumerate(writes):
            for b in writes[i + 1:]:
                sa = shape(named(a.op).operand_type("data")) or ()
                sb = shape(named(b.op).operand_type("data")) or ()
                ra = [span(a, d, n) for d, n in enumerate(sa)]
                rb = [span(b, d, n) for d, n in enumerate(sb)]
                if all(x0 < y1 and y0 < x1 for (x0, x1), (y0, y1) in zip(ra, rb, strict=False)):
                    return f"two stores to %{arg}{where(a.op)}{where(b.op)} overlap: their order would matter"
    return None


def _count(op: Operation) -> tuple[float, float]:
    """Simple and transcendental scalar ops per element of an op's iteration space."""
    scalar = [x.name for x in op.walk() if x is not op and x.name != Linalg.yield_]
    if not op.regions:
        scalar = [op.name]
    trans = sum(1 for s in scalar if s in TRANSCENDENTAL)
    return float(max(1, len(scalar) - trans) if len(scalar) > trans else 0), float(trans)


def _kloop(g: DimGraph, body: list[Operation], empties: set[str]) -> tuple[int, Operation, frozenset[int]] | None:
    """The contraction whose reduced class can be looped over, if there is one.

    Its class must be blocked by that contraction alone, its accumulator f32 or f64 (a
    narrower one would round at every step, where the input rounds once), and every other
    op reading that class must only feed the contraction (loads, casts, scaling)."""
    found = [op for op in body if op.name in CONTRACTIONS]
    if len(found) != 1:
        return None
    mm = found[0]
    mv = named(mm)
    acc_types = mv.result_types("results")
    acc = ty.element_type(acc_types[0]) if acc_types else None
    if not (isinstance(acc, ty.FloatType) and acc.kind in ("f32", "f64")):
        return None
    ins = [v for v in mv.operands("inputs") if shape(g.types.get(v))]
    reduced = {c for v in ins for c in g.classes(v)} - set(g.classes(mv.results("results")[0]))
    if len(reduced) != 1:
        return None
    (k,) = reduced
    if any(not r.startswith(f"{mm.name}{where(mm)} contracts") for r in g.reasons(k)):
        return None
    feeders: set[int] = set()
    needed = set(ins)
    for op in reversed(body[:body.index(mm)]):
        if set(op.results) & needed:
            feeders.add(id(op))
            needed |= set(op.operands)
    users = {v for op in body if id(op) not in feeders and op is not mm for v in op.operands}
    for op in body:
        if id(op) not in feeders:
            continue
        touches = any(k in g.classes(v) for v in [*op.operands, *op.results] if v not in empties and shape(g.types.get(v)))
        if touches and (set(op.results) & users or op.name == Ktdp.store):
            return None  # a value with the reduced dimension is used beside the contraction
    kset = frozenset(id(op) for op in body if id(op) in feeders and any(
        k in g.classes(v) for v in [*op.operands, *op.results] if v not in empties and shape(g.types.get(v))))
    init = mv.operands("outputs")[-1]
    if init in empties or k in g.classes(init):
        return None
    return k, mm, kset


def loop_classes(g: DimGraph, loop: Operation, empties: set[str]) -> frozenset[int]:
    """Every class a value of the loop (its operands, results and every value inside) has: the
    loop is placed, whole, where all of them are."""
    found: set[int] = set()
    for x in loop.walk():
        for v in [*x.operands, *x.results]:
            if v not in empties and shape(g.types.get(v)):
                found |= set(g.classes(v))
    for a in loop.regions[0].blocks[0].arguments[1:]:
        found |= set(g.classes(a.name))
    return frozenset(found)


def _own(g: DimGraph, op: Operation, empties: set[str]) -> set[int]:
    """The classes of the tensors an op reads and makes (its iteration space)."""
    found: set[int] = set()
    for v in [*op.operands, *op.results]:
        if v not in empties and shape(g.types.get(v)):
            found |= set(g.classes(v))
    return found


def _chunk(g: DimGraph, body: list[Operation], empties: set[str], accesses: list[Access],
           free: dict[int, list[str]], extent: dict[int, int]) -> Chunk | None:
    """The longest dimension blocked by reductions over it alone, whose ops can run in phases."""
    gathers = {id(a.op) for a in accesses if a.gather is not None}
    for c in sorted((c for c in free if free[c] and extent[c] > 1), key=lambda c: -extent[c]):
        if not all("reduces over this dimension" in r or "contracts" in r for r in free[c]):
            continue
        found = _phases(g, body, empties, c, gathers)
        if found is not None:
            return found
    return None


def _chunk_placeable(g: DimGraph, body: list[Operation], accesses: list[Access], empties: set[str], chunk: Chunk,
                     cuttable: set[int]) -> bool:
    """Whether every op reading a chunked reduction's result (or a value computed from one) runs
    in the innermost block loop whatever is cut: the emitter puts the phase loops there, so an op
    depending on fewer cut dimensions would be placed in an outer loop, before the value it reads
    is made (random kernel seed 770743980: two products in a chain, the first chunked along its K,
    its result rounded and stored outside the loop over the second's columns)."""
    steps, _, op_deps = _steps(g, body, accesses, empties)
    after: set[str] = set()
    for op in body:
        if id(op) in chunk.reductions or any(v in after for x in op.walk() for v in x.operands):
            after |= set(op.results)
    return all(cuttable <= d for s, d in zip(steps, op_deps, strict=True)
               if id(s.op) not in chunk.reductions and any(v in after for x in s.op.walk() for v in x.operands))


def _phases(g: DimGraph, body: list[Operation], empties: set[str], c: int, gathers: set[int]) -> Chunk | None:
    defs = {r: op for op in body for r in op.results}
    along = {id(op) for op in body if c in _own(g, op, empties)}
    reductions: set[int] = set()
    for op in body:
        if id(op) not in along:
            continue
        if id(op) in gathers:
            return None
        results = [r for r in op.results if r not in empties and shape(g.types.get(r)) is not None]
        if op.name == Ktdp.store or any(c in g.classes(r) for r in results):
            continue  # elementwise along the dimension
        acc = [ty.element_type(t) for t in op.result_types]
        if not acc or not all(isinstance(a, ty.FloatType) and a.kind in ("f32", "f64") or isinstance(a, ty.IntegerType)
                              for a in acc):
            return None  # a narrow accumulator would round at every block where the input rounds once
        if op.name not in CONTRACTIONS and op.name not in (Linalg.reduce, Linalg.generic) or len(op.results) != 1:
            return None
        reductions.add(id(op))
    if not reductions:
        return None
    value_phase: dict[str, int] = {}
    phase: dict[int, int] = {}
    for op in body:
        p = max((value_phase.get(v, 0) for v in op.operands), default=0)
        phase[id(op)] = p
        for r in op.results:
            value_phase[r] = p + 1 if id(op) in reductions else p
    sinks: dict[int, list[Operation]] = {}
    for op in body:
        if id(op) in reductions or (op.name == Ktdp.store and id(op) in along):
            sinks.setdefault(phase[id(op)], []).append(op)
    needed = []
    for p in sorted(sinks):
        mine: set[int] = set()
        todo = list(sinks[p])
        while todo:
            op = todo.pop()
            if id(op) in mine:
                continue
            mine.add(id(op))
            for v in op.operands:
                q = defs.get(v)
                if q is not None and id(q) in along and id(q) not in reductions:
                    todo.append(q)
        needed.append(frozenset(mine))
    return Chunk(c, frozenset(reductions), tuple(needed), phase, tuple(sorted(sinks)))


def _steps(g: DimGraph, body: list[Operation], accesses: list[Access], empties: set[str],
           kloop: tuple[int, Operation, frozenset[int]] | None = None, loops: dict[int, SeqLoop] | None = None,
           inside: dict[int, SeqLoop] | None = None, chunk: Chunk | None = None
           ) -> tuple[list[Step], dict[str, frozenset[int]], list[frozenset[int]]]:
    by_op = {id(a.op): a for a in accesses}
    deps: dict[str, frozenset[int]] = {}
    steps: list[Step] = []
    op_deps: list[frozenset[int]] = []
    loops, inside = loops or {}, inside or {}
    placed: dict[int, frozenset[int]] = {}  # a sequential loop -> the classes it is placed by
    for op in body:
        if id(op) in loops:
            lp = loops[id(op)]
            d = loop_classes(g, op, empties).union(*(deps.get(o, frozenset()) for o in op.operands))
            for o in lp.op.regions[0].blocks[0].operations:
                for v in o.operands:
                    d |= deps.get(v, frozenset())
            placed[id(op)] = d
            for arg in op.regions[0].blocks[0].arguments[1:]:
                deps[arg.name] = d
            for r in op.results:
                deps[r] = d
            continue
        tensors = [v for v in [*op.operands, *op.results] if v not in empties and shape(g.types.get(v))]
        own: set[int] = set()
        for v in tensors:
            own |= set(g.classes(v))
        d = frozenset(own).union(*(deps.get(o, frozenset()) for o in op.operands))
        lp_in = inside.get(id(op))
        if lp_in is not None:  # an op of a sequential loop runs where the whole loop runs, every iteration
            d = placed[id(lp_in.op)]
        for r in op.results:
            # a looped contraction's result is whole after its loop: it no longer depends on K
            deps[r] = d - {kloop[0]} if kloop is not None and op is kloop[1] else d
            if chunk is not None:
                deps[r] = chunk.result_deps(op, deps[r])
        repeat = lp_in.trips if lp_in is not None else 1
        phases = sum(id(op) in n for n in chunk.needed) if chunk is not None and chunk.cls in own else 1
        a = by_op.get(id(op))
        t = op.result_types[0] if op.result_types else (op.operand_types[0] if op.operand_types else None)
        el = ty.element_type(t) if isinstance(t, ty.TensorType) else None
        dt = dtype_name(el) if el is not None else "f32"
        if a is not None:
            st = a.gather.strides if a.gather is not None else a.operand.layout
            steps.append(Step(op, g.classes(a.value), "store" if a.stored else "load", dt, itemsize=a.operand.itemsize,
                              strides=tuple(st), value_dims=g.classes(a.value), repeat=repeat, phases=phases))
        elif op.name in _QUIET or op.name.startswith("ktdp.") or not tensors:
            continue
        elif op.name in CONTRACTIONS or (op.name == Linalg.generic and _is_contraction(op)):
            ins_t = named(op).operand_types("inputs")[0]
            mdt = dtype_name(ty.element_type(ins_t)) if isinstance(ins_t, ty.TensorType) else dt
            steps.append(Step(op, tuple(sorted(own)), "matrix", mdt, repeat=repeat, phases=phases))
        else:
            plain, trans = _count(op)
            steps.append(Step(op, tuple(sorted(own)), "vector", dt, plain, trans, repeat=repeat, phases=phases))
        op_deps.append(d)
    return steps, deps, op_deps


def _is_contraction(op: Operation) -> bool:
    """`out + a * b` over two distinct inputs with a reduction: the matrix unit's work."""
    iters = [str(getattr(e, "value", e)) for e in getattr(op.attributes.get("iterator_types"), "elements", ())]
    block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    if block is None or "reduction" not in iters or len(block.arguments) != 3 or len(op.operands) != 3:
        return False
    names = [x.name for x in block.operations]
    a, b, acc = (x.name for x in block.arguments)
    return (names == [Arith.mulf, Arith.addf, Linalg.yield_] and a != b
            and set(block.operations[0].operands) == {a, b} and acc in block.operations[1].operands)


__all__ = ["Access", "NaturalKernel", "Step", "natural_reason_or_kernel"]
