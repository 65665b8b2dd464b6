"""Emit a scheduled natural-form kernel with `ktir.builder`.

The function keeps its name, arguments and views. Each cut dimension class gets a loop
`scf.for %i = tid * b to E step g * b` (the tile id only when g > 1), outermost first in
the schedule's order; every op of the input is placed, in program order, in the innermost
loop whose class it depends on, with its tensor types resized to the blocks. Loads and
stores get access tiles of the block at the input's start coordinates plus the loop
variables; a `tensor.empty` is made afresh for each op whose shape-only init it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ktir.builder import Builder, Value, ssa
from ktir.dialects.access import named
from ktir.dialects.names import Arith, Func, Ktdp, Scf, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.syntax.parser import parse
from ktir.syntax.printer import print_module

from .dependence import outs_positions, resolve, shape
from .kernels import func_name
from .natural import loop_classes
from .space_natural import NaturalSpace

INDEX = ty.IndexType()


class _Names(Builder):
    """A builder whose generated names cannot clash with the input's."""

    def __init__(self, module: Module, taken: set[str]) -> None:
        super().__init__(module)
        prefix = "ns"
        while any(n.startswith("%" + prefix) for n in taken):
            prefix += "_"
        self._prefix = prefix

    def fresh(self, hint: str = "") -> str:
        return super().fresh(self._prefix + hint)


def box(extents: tuple[int, ...]) -> af.IntegerSet:
    cons = []
    for i, e in enumerate(extents):
        cons += [af.constraint(af.dim(i), ">=", af.const(0)), af.constraint(af.dim(i), "<=", af.const(e - 1))]
    return af.IntegerSet(num_dims=len(extents), num_symbols=0, constraints=tuple(cons))


class Placer:
    """Copies of the input function's ops, placed by a builder with tensor types resized to blocks."""

    def __init__(self, space: NaturalSpace, blk: dict[int, int]) -> None:
        k = self.k = space.k
        self.g = k.graph
        self.blk = blk
        self.module = self.g.module.model_copy(deep=True)  # aliases and other functions stay
        self.fn = next(f for f in self.module.functions() if func_name(f) == k.name)
        self.orig = k.fn.regions[0].blocks[0].operations
        self.copies = self.fn.regions[0].blocks[0].operations  # the same positions as `orig`
        self.empties = {r for top in self.orig for op in top.walk() if op.name == Tensor.empty for r in op.results}
        self.loop_ivs: dict[str, Value] = {}  # a sequential loop's index (input name) -> the emitted loop's
        self.access_of = {id(a.op): a for a in k.accesses}
        self.tiles = {id(a.tile) for a in k.accesses}
        taken = {n for op in k.fn.walk() for n in op.results} | {a.name for a in k.fn.regions[0].blocks[0].arguments}
        self.b = _Names(self.module, taken)
        self.ivs: dict[int, Value] = {}
        self.entry = Block(arguments=[BlockArgument(name=a.name, type=a.type)
                                      for a in self.fn.regions[0].blocks[0].arguments])
        # value -> classes it depends on (a looped contraction's result is whole after its loop)
        self.deps: dict[str, set[int]] = {v: set(d) for v, d in k.deps.items()}
        self.fresh = False  # place fresh copies (a partial block repeats the loop's code)
        self.renamed: dict[str, str] = {}  # values read under another name (a double-buffered load's carried block)

    def op_deps(self, op: Operation) -> set[int]:
        d: set[int] = set()
        for v in [*op.operands, *op.results]:
            d |= self.deps.get(v, set())
            if v not in self.empties and shape(self.g.types.get(v)):
                d |= set(self.g.classes(v))
        if id(op) in self.k.loops:  # a sequential loop is placed, whole, by everything in it
            d |= set(loop_classes(self.g, op, self.empties))
            for x in op.walk():
                for v in x.operands:
                    d |= self.deps.get(v, set())
        return d

    def place_loop(self, op: Operation, copy: Operation, place: Callable[[Operation, Operation], None],
                   rename: dict[str, str] | None = None) -> None:
        """A sequential loop, kept whole: the same bounds, its carried tensors resized to the
        blocks, its body's ops placed by `place` in order."""
        b = self.b
        lp = self.k.loops[id(op)]
        copy = self.copy_of(op, copy)
        body, cbody = op.regions[0].blocks[0], copy.regions[0].blocks[0]
        inits = [Value((rename or {}).get(v, v), self.retype(v, t)) for v, t in zip(op.operands[3:], op.operand_types[3:],
                                                                                      strict=True)]
        lb, ub, step = (Value(v, INDEX) for v in op.operands[:3])
        with b.for_(lb, ub, step, inits, names=[a.name for a in body.arguments], results=list(op.results)) as made:
            self.loop_ivs[lp.iv] = made[0]
            for inner, icopy in zip(body.operations, cbody.operations, strict=True):
                if inner.name == Scf.yield_:
                    b.yield_(*[Value(v, self.retype(v, self.g.types[v])) for v in inner.operands])
                else:
                    place(inner, icopy)

    def retype(self, v: str, t: Type) -> Type:
        if not isinstance(t, ty.TensorType) or not shape(t) or v in self.empties:
            return t
        return t.model_copy(update={"shape": tuple(self.blk.get(c, self.g.extent[c]) for c in self.g.classes(v))})

    @contextlib.contextmanager
    def partial(self, c: int, n: int) -> Iterator[None]:
        """Ops placed meanwhile work on blocks of `n` elements of class `c` (a partial last block),
        each from a fresh copy of its op (the block's own code is a second copy of the loop's)."""
        kept, fresh = self.blk.get(c), self.fresh
        self.blk[c], self.fresh = n, True
        try:
            yield
        finally:
            if kept is None:
                del self.blk[c]
            else:
                self.blk[c] = kept
            self.fresh = fresh

    def copy_of(self, op: Operation, copy: Operation) -> Operation:
        """The copy to place: the prepared one, or a fresh one inside a partial block."""
        return op.model_copy(deep=True) if self.fresh else copy

    def place(self, op: Operation, copy: Operation, rename: dict[str, str] | None = None) -> None:
        """Append the copy of `op`, resized; operands named in `rename` (or in `renamed`) are replaced."""
        b, g = self.b, self.g
        rename = {**self.renamed, **rename} if rename else (self.renamed or None)
        if op.name == Tensor.empty or id(op) in self.tiles or op.name in (Ktdp.get_compute_tile_id, Func.return_):
            return
        a = self.access_of.get(id(op))
        if a is not None:
            _access(b, a, self.retype(a.value, g.types[a.value]), self.ivs, g, rename or {}, self.loop_ivs)
            return
        if id(op) in self.k.loops:
            self.place_loop(op, copy, self.place, rename)
            return
        outs = outs_positions(copy)
        types = [self.retype(v, t) for v, t in zip(op.operands, copy.operand_types, strict=True)]
        # any op: an empty operand is made afresh, typed like the result it is the destination of
        for i, v in enumerate(op.operands):
            if v in self.empties:
                j = i - outs.start if i in outs else -1
                t = self.retype(op.results[j], op.result_types[j]) if 0 <= j < len(op.results) else g.types[v]
                made = b.create(Tensor.empty, [], [t])[0]
                copy.operands[i], types[i] = made.name, t
        copy.operands = [(rename or {}).get(v, v) for v in copy.operands]
        copy.operand_types = types
        copy.result_types = [self.retype(r, t) for r, t in zip(op.results, copy.result_types, strict=True)]
        if copy.name == Arith.constant:
            value = copy.attributes.get("value")
            if isinstance(value, at.DenseAttr) and copy.result_types:
                copy.attributes["value"] = value.model_copy(update={"type": named(copy).result_type("result")})
        b.append(copy)

    def finish(self, grid: list[int]) -> Module:
        self.fn.regions = [Region(blocks=[self.entry])]
        self.fn.attributes["grid"] = at.ArrayAttr(elements=tuple(at.IntegerAttr(value=x, type=None) for x in grid))
        return parse(print_module(self.module), f"{self.k.name}.scheduled.ktir")


def emit_natural(space: NaturalSpace, p: dict[str, int]) -> Module:
    loops = space.loops(p)
    looped = [space.cut[i] for i in loops]
    grid_of = {cls: p[f"g{i}"] for i, cls in enumerate(space.cut)}
    pl = Placer(space, {cls: p[f"b{i}"] for i, cls in enumerate(space.cut)})
    b, g = pl.b, pl.g
    levels = [max((looped.index(c) for c in pl.op_deps(op) if c in looped), default=-1) for op in pl.orig]
    grid = [grid_of[c] for c in looped if grid_of[c] > 1] or [1]

    kc = space.kclass if space.kclass in looped else None

    axes = [c for c in looped if grid_of[c] > 1]

    def place(op: Operation, copy: Operation) -> None:
        if id(op) not in space.k.loops:
            copy = pl.copy_of(op, copy)  # place_loop copies the whole loop itself
        if id(op) in space.k.loops:
            pl.place_loop(op, copy, place, pl.renamed or None)
            return
        owners = owner_axes(space, p, op, pl.op_deps(op))
        if not owners:
            pl.place(op, copy)
            return
        # a result that does not vary along some grid axes is stored by the tiles at 0 on them only
        zero = b.constant(0, INDEX)
        cond = None
        for a in owners:
            eq = b.cmp(Arith.cmpi, "eq", tids[axes.index(a)], zero)
            cond = eq if cond is None else b.create(Arith.andi, [cond, eq], [eq.type])[0]
        assert cond is not None
        with b.if_(cond):
            pl.place(op, copy)

    def load_ahead(op: Operation) -> Value:
        a = pl.access_of[id(op)]
        made = _access(b, a, pl.retype(a.value, g.types[a.value]), pl.ivs, g, {}, pl.loop_ivs, b.fresh("ahead"))
        assert made is not None
        return made

    early = prefetched(space, p, list(zip(pl.orig, levels, strict=True)))

    def level(n: int, skip: set[int] | frozenset[int] = frozenset()) -> None:
        if kc is not None and n + 1 == looped.index(kc) and space.k.chunk is not None:
            _phase_loops(space, p, pl, levels, n, place)
            return
        if kc is not None and n + 1 == looped.index(kc):
            # the deepest loop of the grid: the contraction's K loop goes where the contraction was
            for op, copy, lv in zip(pl.orig, pl.copies, levels, strict=True):
                if lv == n:
                    place(op, copy)
                elif space.k.kloop is not None and op is space.k.kloop[1]:
                    _kloop(space, p, pl, levels, n + 1)
            return
        for op, copy, lv in zip(pl.orig, pl.copies, levels, strict=True):
            if lv == n and id(op) not in skip:
                place(op, copy)
        if n + 1 >= len(looped):
            return
        c = looped[n + 1]
        i = space.cut.index(c)
        E, bb, gg = g.extent[c], p[f"b{i}"], p[f"g{i}"]
        axis = [cc for cc in looped if grid_of[cc] > 1].index(c) if gg > 1 else None
        if axis is not None:
            lo = b.create(Arith.muli, [tids[axis], b.constant(bb, INDEX)], [INDEX])[0]
        else:
            lo = b.constant(0, INDEX)
        full = E // bb * bb
        ahead = [(op, copy) for op, copy, lv in zip(pl.orig, pl.copies, levels, strict=True)
                 if id(op) in early] if n + 2 == len(looped) else []
        if full and ahead:
            # double buffered: the loads of the first block before the loop, each iteration's loads of
            # the next block (when there is one) at its start, carried to the next iteration
            step_c, full_c = b.constant(gg * bb, INDEX), b.constant(full, INDEX)
            # the blocks loaded ahead start at most at the last full block (`arith.minsi`): an index
            # past it is never loaded (the `scf.if`), and the clamp keeps every access tile in its view
            last_c = b.constant(full - bb, INDEX)
            pl.ivs[c] = b.create(Arith.minsi, [lo, last_c], [INDEX])[0]
            if (gg - 1) * bb >= full:  # some tiles have no full block: they load none ahead
                types = [pl.retype(pl.access_of[id(op)].value, g.types[pl.access_of[id(op)].value]) for op, _ in ahead]
                firsts = b.if_values(b.cmp(Arith.cmpi, "slt", lo, full_c), lambda: [load_ahead(op) for op, _ in ahead],
                                     [b.create(Tensor.empty, [], [t])[0] for t in types])
            else:
                firsts = [load_ahead(op) for op, _ in ahead]
            names = [b.fresh("iv"), *(b.fresh("cur") for _ in ahead)]
            with b.for_(lo, full_c, step_c, firsts, names=names) as (iv, *cur):
                nxt = b.create(Arith.addi, [iv, step_c], [INDEX])[0]
                more = b.cmp(Arith.cmpi, "slt", nxt, full_c)

                def next_blocks(at: Value = nxt) -> list[Value]:
                    pl.ivs[c] = b.create(Arith.minsi, [at, last_c], [INDEX])[0]
                    return [load_ahead(op) for op, _ in ahead]

                nexts = b.if_values(more, next_blocks, list(cur))
                pl.ivs[c] = iv
                pl.renamed = {named(op).result("result"): v.name for (op, _), v in zip(ahead, cur, strict=True)}
                level(n + 1, skip=early)
                pl.renamed = {}
                b.yield_(*nexts)
        elif full:
            with b.for_(lo, b.constant(full, INDEX), b.constant(gg * bb, INDEX)) as (iv,):
                pl.ivs[c] = iv
                level(n + 1)
        if full < E:
            # the last block is partial: the tile it is dealt to (block E // b goes to tile
            # (E // b) mod g) runs the same code once more on E - full elements
            def last() -> None:
                pl.ivs[c] = b.constant(full, INDEX)
                with pl.partial(c, E - full):
                    level(n + 1)

            if axis is None:
                last()
            else:
                mine = b.cmp(Arith.cmpi, "eq", tids[axis], b.constant((E // bb) % gg, INDEX))
                with b.if_(mine):
                    last()

    with b.insert_into(pl.entry):
        tids = b.tile_id(len(grid)) if grid != [1] else []
        level(-1)
        b.func_return()
    return pl.finish(grid)


def prefetched(space: NaturalSpace, p: dict[str, int], placed: list[tuple[Operation, int]]) -> set[int]:
    """The loads (their ops' ids) the innermost block loop issues one iteration ahead, double
    buffered: `placed` gives each op's loop level; the loads placed in the innermost loop, when that
    loop is a block loop (not a contraction's K loop or a chunked dimension's phases), that read a
    plain box (no gather, no sequential loop) of an array the kernel never writes (so no store of
    the tile can be moved after a read of the same elements)."""
    looped = [space.cut[i] for i in space.loops(p)]
    if not looped or looped[-1] == space.kclass:
        return set()
    inner = len(looped) - 1
    accesses = {id(a.op): a for a in space.k.accesses}
    written = {a.operand.arg for a in space.k.accesses if a.stored}
    out = set()
    for op, lv in placed:
        a = accesses.get(id(op))
        if (lv == inner and a is not None and not a.stored and a.gather is None and a.loop is None
                and a.operand.arg not in written):
            out.add(id(op))
    return out


def owner_axes(space: NaturalSpace, p: dict[str, int], op: Operation, deps: set[int] | frozenset[int]) -> list[int]:
    """The grid axes (their classes) along which a store's value does not vary: every tile on
    such an axis would store the same elements, so only the tiles at coordinate 0 store."""
    if op.name != Ktdp.store:
        return []
    loops = space.loops(p)
    return [space.cut[i] for i in loops if p[f"g{i}"] > 1 and space.cut[i] not in deps]


def _kloop(space: NaturalSpace, p: dict[str, int], pl: Placer, levels: list[int], level: int) -> None:
    """`scf.for %k = 0 to K step bk iter_args(%acc = init)`: the ops feeding the contraction on
    blocks of K, the contraction accumulating into %acc; the loop's result takes its name."""
    assert space.k.kloop is not None and space.kclass is not None
    c, mm, _ = space.k.kloop
    b = pl.b
    i = space.cut.index(c)
    mv = named(mm)
    init = mv.operands("outputs")[-1]
    (result,), (result_t,) = mv.results("results"), mv.result_types("results")
    acc_t = pl.retype(result, result_t)
    with b.for_(b.constant(0, INDEX), b.constant(space.k.extent[c], INDEX), b.constant(p[f"b{i}"], INDEX),
                [Value(init, acc_t)]) as (iv, acc):
        pl.ivs[c] = iv
        for op, copy, lv in zip(pl.orig, pl.copies, levels, strict=True):
            if lv == level and op is not mm:
                pl.place(op, pl.copy_of(op, copy))
        copy = pl.copy_of(mm, pl.copies[pl.orig.index(mm)])
        partial = b.fresh("part")
        copy.results = [partial]
        pl.place(mm, copy, {init: acc.name})
        b.yield_(Value(partial, acc_t))
    b.block.operations[-1].results = [result]  # the scf.for just built


def _phase_loops(space: NaturalSpace, p: dict[str, int], pl: Placer, levels: list[int], level: int,
                 place: Callable[[Operation, Operation], None]) -> None:
    """A chunked dimension (`natural.Chunk`): the ops of this level not along it, each before the
    first phase loop that needs it; then per phase a loop over the dimension's blocks running the
    ops that phase needs (a fresh copy each time), each reduction of the phase accumulating into a
    carried value that starts from its init and takes its result's name after the loop."""
    k = space.k
    chunk = k.chunk
    assert chunk is not None
    b = pl.b
    c = chunk.cls
    bk = p[f"b{space.cut.index(c)}"]
    outer = [(op, copy) for op, copy, lv in zip(pl.orig, pl.copies, levels, strict=True) if lv == level]
    along = [op for op, lv in zip(pl.orig, levels, strict=True) if lv == level + 1]
    done: set[int] = set()

    def before(upto: int | None) -> None:
        for op, copy in outer:
            if id(op) not in done and (upto is None or chunk.phase[id(op)] <= upto):
                done.add(id(op))
                place(op, copy)

    for ph, needed in zip(chunk.loop_phases, chunk.needed, strict=True):
        before(ph)
        reds = [op for op in along if id(op) in needed and id(op) in chunk.reductions]
        inits = []
        for r in reds:
            init = r.operands[-1]
            inits.append(Value(init, pl.retype(init, pl.g.types[init])))
        with b.for_(b.constant(0, INDEX), b.constant(k.extent[c], INDEX), b.constant(bk, INDEX), inits) as made:
            pl.ivs[c] = made[0]
            accs = dict(zip((id(r) for r in reds), made[1:], strict=True))
            parts = []
            for op in along:
                if id(op) not in needed:
                    continue
                copy = op.model_copy(deep=True)
                if id(op) in accs:
                    part = b.fresh("part")
                    copy.results = [part]
                    pl.place(op, copy, {op.operands[-1]: accs[id(op)].name})
                    parts.append(Value(part, accs[id(op)].type))
                else:
                    place(op, copy)
            if parts:
                b.yield_(*parts)
        b.block.operations[-1].results = [r.results[0] for r in reds]  # the scf.for just built
    before(None)


def _access(b: Builder, a: object, t: Type, ivs: dict[int, Value], g: object, rename: dict[str, str],
            loop_ivs: dict[str, Value] | None = None, name: str | None = None) -> Value | None:
    from .dependence import DimGraph
    from .natural import Access

    assert isinstance(a, Access) and isinstance(g, DimGraph)
    dims = shape(t) or ()
    classes = g.classes(a.value)
    if a.gather is not None:
        tile = _gather_tile(b, a, dims, [ivs.get(c) for c in classes])
        return b.create(Ktdp.load, [tile], [t], result_names=[name or named(a.op).result("result")])[0]
    subs: list[af.AffineExpr] = []
    for d, (start, c) in enumerate(zip(a.starts, classes, strict=True)):
        e: af.AffineExpr = af.const(start)
        if a.loop is not None and a.seq[d] and loop_ivs is not None:  # the loop's index, as in the input
            off = start - a.loop.lb
            e = ssa(loop_ivs[a.loop.iv]) + off if off else ssa(loop_ivs[a.loop.iv])
        elif c in ivs:
            e = ssa(ivs[c]) + start if start else ssa(ivs[c])
        subs.append(e)
    view_t = named(a.tile).operand_type("base")
    tile = b.access_tile(Value(a.view, view_t), subs, box(dims), dims)
    if a.stored:
        data = named(a.op).operand("data")
        b.create(Ktdp.store, [Value(rename.get(data, data), t), tile], [])
        return None
    return b.create(Ktdp.load, [tile], [t], result_names=[name or named(a.op).result("result")])[0]


def _shifted(e: af.AffineExpr, shift: dict[int, int]) -> af.AffineExpr:
    """`e` with each dimension d in `shift` replaced by d + dimension shift[d]."""
    if isinstance(e, af.Dim) and e.position in shift:
        return af.add(e, af.dim(shift[e.position]))
    if isinstance(e, af.Binary):
        return af.binary(e.kind, _shifted(e.lhs, shift), _shifted(e.rhs, shift))
    return e


def _gather_tile(b: Builder, a: object, dims: tuple[int, ...], starts: list[Value | None]) -> Value:
    """The input's indirect access tile over a block of its variables: each cut variable is
    shifted by its block's start, a new captured value of every subscript map."""
    from .natural import Access

    assert isinstance(a, Access)
    tile = a.tile
    v = named(tile)
    n = len(dims)
    captured = v.operands("captured_variables")
    extra = [(d, s) for d, s in enumerate(starts) if s is not None]
    shift = {d: n + len(captured) + j for j, (d, _) in enumerate(extra)}
    maps = []
    for m in getattr(tile.attributes.get("per_dim_subscript_maps"), "elements", ()):
        found = resolve(b.module, m)
        assert isinstance(found, at.AffineMapAttr)
        mm = found.value
        maps.append(at.AffineMapAttr(value=af.AffineMap(num_dims=mm.num_dims + len(extra), num_symbols=mm.num_symbols,
                                                        results=tuple(_shifted(e, shift) for e in mm.results))))
    attrs = dict(tile.attributes)
    attrs["per_dim_subscript_maps"] = at.ArrayAttr(elements=tuple(maps))
    attrs["variables_space_set"] = at.IntegerSetAttr(value=box(dims))
    attrs["variables_space_order"] = at.AffineMapAttr(value=af.AffineMap.identity(n))
    index_views = v.operands("indirect_memrefs")
    seg = (1, len(index_views), len(captured) + len(extra), 0)
    attrs["operandSegmentSizes"] = at.DenseArrayAttr(element_type=ty.I32, values=seg)
    body = Block(arguments=[BlockArgument(name=b.fresh("var"), type=INDEX) for _ in range(n)],
                 operations=[Operation(name=Ktdp.region_terminator)])
    types = list(tile.operand_types)
    operands = [Value(v.operand("base"), types[0]),
                *(Value(x, t) for x, t in zip(index_views, types[1:1 + len(index_views)], strict=True)),
                *(Value(x, INDEX) for x in captured), *(s for _, s in extra if s is not None)]
    return b.create(Ktdp.construct_indirect_access_tile, operands, [ty.AccessTileType(shape=dims)], attrs,
                    [Region(blocks=[body])])[0]
