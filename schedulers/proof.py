"""Prove that a scheduled module divides its input's memory effects over the grid legally.

Every rewrite (built in or a plugin's) is checked here before it is returned, with exact
integer-set analysis (isl): the index arithmetic of both modules is modelled as affine
functions of the tile coordinates, loop indices and constants (with `min`, `max`,
`select` and division by constants as exact piecewise definitions), every `ktdp.load` and
`ktdp.store` of a global view becomes a relation from tile coordinates to the element
offsets of its function argument it touches, and three things are proven:

1. no element is written by two tiles (a store replicated on several tiles is a race, even
   when the values agree: the reference interpreter stops at it);
2. no tile reads an element another tile writes (tiles are not ordered with each other);
3. the scheduled module writes exactly the elements its input writes, argument by argument
   (nothing lost, nothing extra).

Elements are addresses (`address(x) = offset + sum((x_i - lo_i) * s_i)`, `lo` the least point
of the view's coordinate set, spec/memory.md), so views of one argument that alias each other
are compared by what they reach; two arguments never alias (spec/execution.md: overlapping
arrays are a launch error). A memref function argument is a view of its array, and
`memref.load` a read of one element. Before the three questions, the scheduled module must be
free of the dynamic errors that would make its addresses meaningless (`well_formed`): every
access stays in its view's coordinate set, and no store writes one element twice through its
view's strides; and no tile may read an element its input neither reads nor writes
(`_reads_inside`: the host's array may end there).

An inter-tile reduction passes values, not memory: its consumer stores the combined block,
and that store is proven like any other. What the model cannot express (a store through an
index read from memory, a loop bound or condition that is not affine in the tile
coordinates, a scratchpad of another tile written and read between barriers, memory reached
by an op the proof does not model, such as linalg in buffer form or a memref.subview of global
memory, a store inside the region of an op it does not model, such as scf.while) makes the
proof fail with the op and the construct named: a schedule that cannot be proven is not
returned.

The questions are asked of element offsets, or, where that is provably the same question
(`coordinate_layout`: one layout, one-to-one on every coordinate accessed), of the views'
coordinates, where isl needs no integer programming to eliminate them. A proof gets a budget
of isl operations (`MAX_OPERATIONS`); one that does not finish within it is not a proof.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import islpy as isl

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Affine, Arith, Func, Ktdp, Memref, Scf
from ktir.dialects.registry import OPS
from ktir.dialects.traits import TERMINATOR
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.isl_text import NotAffine, isl_constraints, isl_expr
from ktir.ir.operation import Module, Operation

from .kernels import func_name, grid_of

_DYNAMIC = -9223372036854775808
# arith.cmpi predicates by their attribute value (MLIR's order); unsigned ones are read as
# signed: index values of the model are the non-negative offsets and counts of the kernels
_CMP = ("=", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">=")
_NEG = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class Val:
    """An index value: an isl expression and the variables it mentions."""

    expr: str
    vars: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Cond:
    """An i1 value: a condition and its negation, as isl constraints."""

    true: str
    false: str
    vars: frozenset[str] = frozenset()


@dataclass(frozen=True)
class View:
    arg: str  # the function argument holding the array ("" when the offset is not argument + constant)
    offset: int
    strides: tuple[int, ...]
    lo: tuple[int, ...]
    itemsize: int
    space: str  # "global", "local" (the executing tile's own scratchpad) or "remote"
    line: str
    sizes: tuple[int, ...] = ()  # when known
    # the valid coordinates `[c0, ...]` as isl constraints: the coordinate set (or the box of the sizes)
    # within [lo, lo + sizes); "" when not known
    valid: str = ""
    why: str = ""  # when set, the view cannot be modelled, and this says why


@dataclass(frozen=True)
class Tile:
    view: View | None
    points: tuple[str, ...]  # the set's dimensions
    constraints: tuple[str, ...]
    coords: tuple[str, ...]  # per view dimension: base subscript + point
    vars: frozenset[str]
    indirect: bool = False


# (element offset, strides, dimensions of one element): element = offset + sum(k_j * strides[j]), the
# coordinates of the dimensions of one element (after the others) being 0
Layout = tuple[int, tuple[int, ...], int]


@dataclass
class Access:
    op: Operation
    arg: str
    itemsize: int
    relation: str  # isl map text: tile coordinates -> element offsets
    # the same accesses as tile coordinates -> the view's coordinates (less its lowest corner), in order of
    # decreasing stride, and that order's (element offset, strides): `offset + sum(k_j * strides[j])` is the
    # element; None when the view has two equal strides or a stride that is not positive
    coords: str | None = None
    layout: Layout | None = None
    # the accesses as tile coordinates -> the view's coordinates, and the view's valid coordinates
    # (checked by `in_view` for the scheduled module's accesses); "" when not modelled
    coordinates: str = ""
    valid: str = ""
    view: View | None = None
    # one execution of the access (tile coordinates and loop indices) -> the view coordinates it touches
    instances: str = ""


@dataclass
class Footprint:
    grid: tuple[int, ...]
    writes: list[Access] = field(default_factory=list)
    reads: list[Access] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why some write cannot be modelled exactly


def where(op: Operation) -> str:
    return f"{op.name} (line {op.loc.line})" if op.loc is not None else op.name


class _Model:
    """Walks one function, collecting the access relations of its global loads and stores."""

    def __init__(self, module: Module, fn: Operation, sizes: Mapping[str, int]) -> None:
        self.module = module
        self.grid = grid_of(fn)
        self.tids = [f"t{i}" for i in range(len(self.grid))]
        self.n = 0
        self.values: dict[str, Val] = {}
        self.pointers: dict[str, tuple[str, int]] = {}  # SSA value -> (argument, constant element offset)
        self.conds: dict[str, Cond] = {}
        self.views: dict[str, View] = {}
        self.tiles: dict[str, Tile] = {}
        self.defs: dict[str, tuple[frozenset[str], str]] = {}  # variable -> (variables it depends on, definition)
        self.unknown: dict[str, str] = {}  # variable -> what it stands for (not affine)
        self.scope: list[tuple[frozenset[str], str, bool]] = []  # (variables, constraint, certain)
        self.instances = ""  # the last `relation`'s executions -> coordinates
        self.out = Footprint(self.grid)
        body = fn.regions[0].blocks[0]
        bound = {("%" + k.lstrip("%")): int(v) for k, v in sizes.items()}
        self.args = {a.name for a in body.arguments}
        for a in body.arguments:
            if a.name in bound:
                self.values[a.name] = Val(str(bound[a.name]))
            elif isinstance(a.type, ty.MemRefType):  # the array itself, as the interpreter binds it
                self.views[a.name] = self.argument_view(a.name, a.type)
            else:
                self.pointers[a.name] = (a.name[1:], 0)
        self.block(body.operations)

    # ------------------------------------------------------------ variables

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def define(self, deps: frozenset[str], constraint: str, prefix: str = "v") -> str:
        v = self.fresh(prefix)
        self.defs[v] = (deps, constraint)
        return v

    def opaque(self, what: str) -> Val:
        v = self.fresh("u")
        self.unknown[v] = what
        return Val(v, frozenset({v}))

    def value(self, name: str, op: Operation) -> Val:
        found = self.values.get(name)
        if found is not None:
            return found
        what = f"{name}, a function argument" if name in self.args else name
        found = self.values[name] = self.opaque(what)
        return found

    # ------------------------------------------------------------ ops

    def block(self, ops: list[Operation]) -> None:
        for op in ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        name = op.name
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, op)
            return
        opdef = OPS.get(name)
        if opdef is not None and TERMINATOR in opdef.traits:  # passes values on, touches no memory
            return
        if name.startswith((Memref.store, Func.call)) or name in ("memref.copy", "memref.tensor_store"):
            self.out.problems.append(f"{where(op)} writes memory outside ktdp.store")
        elif name not in _NO_MEMORY_EFFECT:  # an op the proof does not model must not touch shared memory
            for x, t in zip(op.operands, op.operand_types, strict=False):
                view = self.base_view(x, t)
                if view is not None and view.space != "local":
                    self.out.problems.append(f"{where(op)} accesses memory through {x} (the view at {view.line}) "
                                             "outside ktdp.load and ktdp.store: the proof does not model it")
                    break
        # any other op: its index results are opaque; ops in its regions run where it runs, as often as it
        # decides (an scf.while, a produce op's region on its producers only): stores there are not modelled
        for r, t in zip(op.results, op.result_types, strict=False):
            if isinstance(t, ty.IndexType | ty.IntegerType):
                self.values[r] = self.opaque(f"{r} ({name})")
        for region in op.regions:
            for b in region.blocks:
                for a in b.arguments:
                    self.values.setdefault(a.name, self.opaque(f"{a.name} (an argument of a region of {name})"))
                self.scope.append((frozenset(), "0 = 0", False))
                self.block(b.operations)
                self.scope.pop()

    def constant(self, op: Operation) -> None:
        v = op.attributes.get("value")
        if isinstance(v, at.IntegerAttr) and op.results:
            if isinstance(op.result_types[0], ty.IntegerType) and op.result_types[0].width == 1:
                self.conds[op.results[0]] = Cond("0 = 0", "1 = 0") if v.value else Cond("1 = 0", "0 = 0")
            else:
                self.values[op.results[0]] = Val(str(v.value))

    def tile_id(self, op: Operation) -> None:
        for i, r in enumerate(op.results):
            self.values[r] = Val(self.tids[i], frozenset()) if i < len(self.tids) else Val("0")

    def binary(self, op: Operation) -> None:
        if len(op.operands) != 2 or not op.results:
            return
        a, b = (self.value(x, op) for x in op.operands)
        deps = a.vars | b.vars
        n = op.name
        r = op.results[0]
        if n == Arith.addi:  # an array's address plus a constant number of elements
            for p, k in ((op.operands[0], _int(b.expr)), (op.operands[1], _int(a.expr))):
                if p in self.pointers and k is not None:
                    self.pointers[r] = (self.pointers[p][0], self.pointers[p][1] + k)
        if n in (Arith.addi, Arith.subi):
            self.values[r] = Val(f"({a.expr} {'+' if n == Arith.addi else '-'} {b.expr})", deps)
            return
        ka, kb = _int(a.expr), _int(b.expr)
        if n == Arith.muli:
            if ka is not None or kb is not None:
                self.values[r] = Val(f"({a.expr} * {b.expr})" if ka is None or kb is None else str(ka * kb), deps)
            else:
                self.values[r] = self.opaque(f"{r}, a product of two values that are not constants")
            return
        if n in (Arith.minsi, Arith.minui, Arith.maxsi, Arith.maxui):
            cmp = "<=" if "min" in n else ">="
            v = self.define(deps, "")
            self.defs[v] = (deps, f"{v} {cmp} {a.expr} and {v} {cmp} {b.expr} and ({v} = {a.expr} or {v} = {b.expr})")
            self.values[r] = Val(v, frozenset({v}))
            return
        if kb is None or kb <= 0:
            self.values[r] = self.opaque(f"{r}, {n} by a value that is not a positive constant")
            return
        if n in (Arith.divui, Arith.floordivsi):
            self.values[r] = Val(f"floor(({a.expr}) / {kb})", deps)
        elif n == Arith.divsi:  # rounds toward zero
            v = self.define(deps, "")
            self.defs[v] = (deps, f"(({a.expr} >= 0 and {v} = floor(({a.expr}) / {kb})) or "
                                  f"({a.expr} < 0 and {v} = -floor((-({a.expr})) / {kb})))")
            self.values[r] = Val(v, frozenset({v}))
        elif n in (Arith.ceildivsi, "arith.ceildivui"):
            self.values[r] = Val(f"ceil(({a.expr}) / {kb})", deps)
        elif n in (Arith.remui, Arith.remsi):
            if n == Arith.remsi:
                v = self.define(deps, "")
                self.defs[v] = (deps, f"(({a.expr} >= 0 and {v} = ({a.expr}) mod {kb}) or "
                                      f"({a.expr} < 0 and {v} = -((-({a.expr})) mod {kb})))")
                self.values[r] = Val(v, frozenset({v}))
            else:
                self.values[r] = Val(f"(({a.expr}) mod {kb})", deps)

    def cast(self, op: Operation) -> None:
        if op.results and op.operands:
            self.values[op.results[0]] = self.value(op.operands[0], op)

    def cmpi(self, op: Operation) -> None:
        pred = op.attributes.get("predicate")
        if not isinstance(pred, at.IntegerAttr) or not 0 <= pred.value < len(_CMP) or not op.results:
            return
        a, b = (self.value(x, op) for x in op.operands[:2])
        rel = _CMP[pred.value]
        neg = _NEG[rel]

        def text(r: str) -> str:
            return f"not ({a.expr} = {b.expr})" if r == "!=" else f"{a.expr} {r} {b.expr}"

        self.conds[op.results[0]] = Cond(text(rel), text(neg), a.vars | b.vars)

    def logic(self, op: Operation) -> None:
        cs = [self.conds.get(x) for x in op.operands]
        if not op.results or any(c is None for c in cs) or len(cs) != 2:
            return
        a, b = cs
        assert a is not None and b is not None
        if op.name == Arith.andi:
            self.conds[op.results[0]] = Cond(f"({a.true}) and ({b.true})", f"({a.false}) or ({b.false})", a.vars | b.vars)
        elif op.name == Arith.ori:
            self.conds[op.results[0]] = Cond(f"({a.true}) or ({b.true})", f"({a.false}) and ({b.false})", a.vars | b.vars)
        elif op.name == Arith.xori:
            self.conds[op.results[0]] = Cond(f"(({a.true}) and ({b.false})) or (({a.false}) and ({b.true}))",
                                             f"(({a.true}) and ({b.true})) or (({a.false}) and ({b.false}))",
                                             a.vars | b.vars)

    def select(self, op: Operation) -> None:
        if not op.results or len(op.operands) != 3:
            return
        r = op.results[0]
        if not isinstance(op.result_types[0], ty.IndexType | ty.IntegerType):
            return
        c = self.conds.get(op.operands[0])
        a, b = (self.value(x, op) for x in op.operands[1:])
        if c is None:
            self.values[r] = self.opaque(f"{r}, selected by a condition that is not affine")
            return
        deps = c.vars | a.vars | b.vars
        v = self.define(deps, "")
        self.defs[v] = (deps, f"((({c.true}) and {v} = {a.expr}) or (({c.false}) and {v} = {b.expr}))")
        self.values[r] = Val(v, frozenset({v}))

    def apply(self, op: Operation) -> None:
        amap = _resolve(self.module, op.attributes.get("map"))
        if not isinstance(amap, at.AffineMapAttr) or len(amap.value.results) != 1 or not op.results:
            for r in op.results:
                self.values[r] = self.opaque(f"{r} (affine.apply)")
            return
        args = [self.value(x, op) for x in op.operands]
        nd = amap.value.num_dims
        try:
            text = isl_expr(amap.value.results[0], [a.expr for a in args[:nd]], [a.expr for a in args[nd:]])
        except NotAffine:
            self.values[op.results[0]] = self.opaque(f"{op.results[0]} (affine.apply)")
            return
        self.values[op.results[0]] = Val(text, frozenset().union(*(a.vars for a in args)))

    # ------------------------------------------------------------ control flow

    def for_(self, op: Operation) -> None:
        lb, ub, step = (self.value(x, op) for x in op.operands[:3])
        body = op.regions[0].blocks[0]
        iv = body.arguments[0].name
        k = _int(step.expr)
        v = self.fresh("i")
        deps = lb.vars | ub.vars
        cons = f"{lb.expr} <= {v} < {ub.expr}"
        if k is not None and k > 1:
            cons += f" and ({v} - ({lb.expr})) mod {k} = 0"
        certain = k is not None and k > 0
        if k is None or k <= 0:
            self.unknown[v] = f"{iv}, the index of a loop whose step is not a positive constant"
        self.defs[v] = (deps, cons)
        self.values[iv] = Val(v, frozenset({v}))
        for a in body.arguments[1:]:  # loop-carried values: opaque when they are indices
            if isinstance(a.type, ty.IndexType | ty.IntegerType):
                self.values[a.name] = self.opaque(f"{a.name}, a value carried by the loop")
        self.scope.append((frozenset({v}), cons, certain))
        self.block(body.operations)
        self.scope.pop()
        for r, t in zip(op.results, op.result_types, strict=False):
            if isinstance(t, ty.IndexType | ty.IntegerType):
                self.values[r] = self.opaque(f"{r}, a value carried out of a loop")

    def if_(self, op: Operation) -> None:
        c = self.conds.get(op.operands[0]) if op.operands else None
        for i, region in enumerate(op.regions):
            if not region.blocks:
                continue
            if c is None:
                self.scope.append((frozenset(), "0 = 0", False))
            else:
                self.scope.append((c.vars, c.true if i == 0 else c.false, True))
            self.block(region.blocks[0].operations)
            self.scope.pop()
        for r, t in zip(op.results, op.result_types, strict=False):
            if isinstance(t, ty.IndexType | ty.IntegerType):
                self.values[r] = self.opaque(f"{r}, a value chosen by scf.if")

    # ------------------------------------------------------------ memory

    def memory_view(self, op: Operation) -> None:
        v = named(op)
        t = v.result_type("result")
        # the attribute, else the result type's space, as the interpreter reads it (global when neither says)
        kind = _space(_resolve(self.module, op.attributes.get("memory_space")) or
                      (_resolve(self.module, t.memory_space) if isinstance(t, ty.MemRefType) else None))
        itemsize = _itemsize(t.element_type) if isinstance(t, ty.MemRefType) else 0
        arg, const = self.pointers.get(v.operand("offset"), ("", 0))
        strides = self._mixed(op, "static_strides", v.operands("strides"))
        sizes = self._mixed(op, "static_sizes", v.operands("sizes"))
        rank = len(_static(op, "static_sizes"))
        names = [f"c{i}" for i in range(rank)]
        cset = _resolve(self.module, op.attributes.get("coordinate_set"))
        why = ""
        lo: tuple[int, ...] | None = tuple(0 for _ in range(rank))
        cons: list[str] = []
        if isinstance(cset, at.IntegerSetAttr):
            if cset.value.num_dims != rank:
                why = f"its coordinate_set has {cset.value.num_dims} dimensions and the view {rank}"
            else:
                dyn = [x for x, d in zip(v.operands("sizes"), _static(op, "static_sizes"), strict=False) if d == _DYNAMIC]
                syms = [self.value(x, op).expr for x in dyn]
                try:
                    cons = isl_constraints(cset.value, names, [f"s{i}" for i in range(cset.value.num_symbols)])
                except (NotAffine, IndexError):
                    why = "its coordinate_set is not an affine set the proof can read"
                else:
                    known = [_int(x) for x in syms[: cset.value.num_symbols]]
                    lo = _lows_of(cons, rank, cset.value.num_symbols, known)
                    if lo is None:
                        why = ("the least point of its coordinate_set (where its coordinate 0 is) is not a constant the "
                               "proof can find")
                    elif None not in known and len(known) == cset.value.num_symbols:
                        cons = [_bind(c, known) for c in cons]
                    else:  # sizes that are not constants: the coordinates accessed are not checked against the set
                        sizes = None
        elif cset is not None:
            why = "its coordinate_set is not an affine set"
        if strides is None:
            arg = ""
        if sizes is not None and lo is not None and not why:
            cons += [f"{lo[i]} <= c{i} < {lo[i] + sizes[i]}" for i in range(min(rank, len(sizes)))]
        valid = f"{{ [{', '.join(names)}] : {' and '.join(cons) or '0 = 0'} }}" if sizes is not None and not why else ""
        self.views[v.result("result")] = View(arg, const, tuple(strides or ()), lo or (), itemsize, kind, where(op),
                                               tuple(sizes or ()), valid, why)

    def _mixed(self, op: Operation, attr: str, dynamic: list[str]) -> tuple[int, ...] | None:
        it = iter(dynamic)
        out = []
        for d in _static(op, attr):
            if d == _DYNAMIC:
                k = _int(self.value(next(it, ""), op).expr)
                if k is None:
                    return None
                out.append(k)
            else:
                out.append(int(d))
        return tuple(out)

    def argument_view(self, name: str, t: ty.MemRefType) -> View:
        """A memref function argument: the array the host passes, laid out as the interpreter binds it
        (row-major, a permutation layout map, or `strided<[...], offset: o>`)."""
        kind = _space(_resolve(self.module, t.memory_space))
        layout = _resolve(self.module, t.layout)
        if layout is None and isinstance(_resolve(self.module, t.memory_space), at.AffineMapAttr | at.StridedLayoutAttr):
            layout, kind = _resolve(self.module, t.memory_space), "global"  # the parser files an aliased layout there
        shape = tuple(t.shape)
        rank = len(shape)
        line = f"the argument {name}"
        names = [f"c{i}" for i in range(rank)]
        if any(d is None for d in shape):
            return View("", 0, (), (), 0, kind, line, why=f"{name} has a dynamic shape, so its layout is not known")
        sizes = tuple(int(d) for d in shape)  # type: ignore[arg-type]
        valid = f"{{ [{', '.join(names)}] : {' and '.join(f'0 <= c{i} < {n}' for i, n in enumerate(sizes)) or '0 = 0'} }}"
        offset = 0
        if isinstance(layout, at.StridedLayoutAttr):
            if any(x is None for x in layout.strides) or layout.offset is None:
                return View("", 0, (), (), 0, kind, line, why=f"{name} has a strided layout with dynamic strides")
            strides = tuple(int(x) for x in layout.strides)  # type: ignore[arg-type]
            offset = int(layout.offset)
        else:
            perm = list(range(rank))
            if isinstance(layout, at.AffineMapAttr):
                if not layout.value.is_permutation() or layout.value.num_dims != rank:
                    return View("", 0, (), (), 0, kind, line, why=f"{name} has a layout map that is not a permutation")
                perm = [e.position for e in layout.value.results]  # type: ignore[attr-defined]
            elif layout is not None:
                return View("", 0, (), (), 0, kind, line, why=f"{name} has a layout the proof does not read")
            physical = [sizes[q] for q in perm]
            row = [1] * rank
            for i in range(rank - 2, -1, -1):
                row[i] = row[i + 1] * max(physical[i + 1], 1)
            st = [0] * rank
            for r, q in enumerate(perm):
                st[q] = row[r]
            strides = tuple(st)
        return View(name[1:], offset, strides, tuple(0 for _ in sizes), _itemsize(t.element_type), kind, line,
                    sizes, valid)

    def base_view(self, name: str, t: ty.Type | None) -> View | None:
        """The view `name` stands for; None for a tensor (a value, not memory)."""
        found = self.views.get(name)
        if found is not None:
            return found
        if isinstance(t, ty.TensorType) or (t is not None and not isinstance(t, ty.MemRefType)):
            return None
        return View("", 0, (), (), 0, "global", name, why=f"{name} is a memref the proof does not follow (only views "
                    "made by ktdp.construct_memory_view and memref function arguments are modelled)")

    def derived_view(self, op: Operation) -> None:
        """memref.cast: the same view; subview and reinterpret_cast: a view of the same memory (modelled
        for the executing tile's own memory, which no other tile sees; not otherwise); alloc and
        alloca: memory private to the executing instance."""
        if not op.results:
            return
        if op.name in (Memref.alloc, Memref.alloca):
            self.views[op.results[0]] = View("", 0, (), (), 0, "local", where(op))
            return
        src = op.operands[0] if op.operands else ""
        view = self.base_view(src, op.operand_types[0] if op.operand_types else None)
        if view is None:
            return
        if op.name == Memref.cast or view.space == "local":
            self.views[op.results[0]] = view if op.name == Memref.cast else View("", 0, (), (), 0, "local", where(op))
            return
        self.views[op.results[0]] = View("", 0, (), (), 0, view.space, where(op),
                                         why=f"a view made by {op.name} is not modelled")

    def memref_load(self, op: Operation) -> None:
        """One element read at positions `indices` (coordinate lo + position)."""
        operands = named(op)
        src = operands.operand("memref")
        view = self.base_view(src, op.operand_types[0] if op.operand_types else None)
        if view is None:
            return
        idx = [self.value(x, op) for x in operands.operands("indices")]
        coords = tuple(f"({lo} + {i.expr})" for lo, i in zip(view.lo, idx, strict=False))
        if len(idx) != len(view.lo):
            coords = tuple(i.expr for i in idx)
        tile = Tile(view, (), (), coords, frozenset().union(*(i.vars for i in idx)))
        self.check_access(op, tile, write=False)

    def distributed(self, op: Operation) -> None:
        self.views[op.results[0]] = View("", 0, (), (), 0, "remote", where(op))

    def access_tile(self, op: Operation) -> None:
        v = named(op)
        view = self.base_view(v.operand("base"), op.operand_types[0] if op.operand_types else None)
        idx = [self.value(x, op) for x in v.operands("indices")]
        syms = [self.value(x, op) for x in v.operands("symbol_operands")]
        tset = _resolve(self.module, op.attributes.get("access_tile_set"))
        bmap = _resolve(self.module, op.attributes.get("base_map"))
        if not isinstance(tset, at.IntegerSetAttr):
            self.tiles[v.result("result")] = Tile(view, (), ("1 = 0",), (), frozenset(), indirect=True)
            return
        n = tset.value.num_dims
        amap = bmap.value if isinstance(bmap, at.AffineMapAttr) else af.AffineMap.identity(len(idx))
        points = tuple(self.fresh("p") for _ in range(n))
        try:
            nd = amap.num_dims
            base = [isl_expr(e, [a.expr for a in idx[:nd]], [a.expr for a in idx[nd:]]) for e in amap.results]
            cons = isl_constraints(tset.value, list(points), [s.expr for s in syms])
        except NotAffine:
            self.tiles[v.result("result")] = Tile(view, (), (), (), frozenset(), indirect=True)
            return
        coords = tuple(f"({b} + {p})" for b, p in zip(base, points, strict=False))
        deps = frozenset().union(*(a.vars for a in idx), *(s.vars for s in syms))
        self.tiles[v.result("result")] = Tile(view, points, tuple(cons), coords, deps)

    def indirect_tile(self, op: Operation) -> None:
        v = named(op)
        types = dict(zip(op.operands, op.operand_types, strict=False))
        base = v.operand("base")
        self.tiles[op.results[0]] = Tile(self.base_view(base, types.get(base)), (), (), (), frozenset(), indirect=True)
        for x in v.operands("indirect_memrefs"):  # the index views are read where the tile is made
            index_view = self.base_view(x, types.get(x))
            if index_view is not None:
                self.check_access(op, Tile(index_view, (), (), (), frozenset(), indirect=True), write=False)
        for region in op.regions:  # the variables region computes indices, no memory effects
            for b in region.blocks:
                for a in b.arguments:
                    self.values.setdefault(a.name, self.opaque(a.name))

    def load(self, op: Operation) -> None:
        self.access(op, named(op).operand("access_tile"), write=False)

    def store(self, op: Operation) -> None:
        self.access(op, named(op).operand("access_tile"), write=True)

    def access(self, op: Operation, tile_name: str, write: bool) -> None:
        tile = self.tiles.get(tile_name)
        if tile is None or tile.view is None:
            if write and tile is not None:
                return  # a tile of a tensor: a value, not memory
            if tile is None:
                self.out.problems.append(f"{where(op)} goes through {tile_name}, which is not an access tile the "
                                         "proof can follow")
            return
        self.check_access(op, tile, write)

    def check_access(self, op: Operation, tile: Tile, write: bool) -> None:
        view = tile.view
        assert view is not None
        if view.space == "local":
            return  # the executing tile's own scratchpad: no other tile sees it
        if view.why:
            self.out.problems.append(f"{where(op)} goes through the view at {view.line}, which the proof cannot "
                                     f"model: {view.why}")
            return
        if view.space == "remote":
            self.out.problems.append(f"{where(op)} reaches another tile's scratchpad (the view at {view.line}): "
                                     "scratchpad traffic between tiles, ordered by barriers, is outside the proof")
            return
        if not view.arg:
            self.out.problems.append(f"{where(op)} goes through the view at {view.line}, whose address or strides "
                                     "are not a function argument plus constants")
            return
        if tile.indirect:
            if write:
                self.out.problems.append(f"{where(op)} stores through an indirect access tile (a scatter): the "
                                         "elements it writes are read from memory")
                return
            self.out.reads.append(Access(op, view.arg, view.itemsize, self.whole_view(view)))
            return
        if len(tile.coords) != len(view.strides) or len(view.lo) != len(view.strides):
            self.out.problems.append(f"{where(op)} gives {len(tile.coords)} coordinates to the view at {view.line}, "
                                     f"of rank {len(view.strides)}")
            return
        found = self.relation(op, tile, view, write)
        if found is None:
            return
        rel, coords, layout, coordinates = found
        (self.out.writes if write else self.out.reads).append(
            Access(op, view.arg, view.itemsize, rel, coords, layout, coordinates, view.valid, view,
                   self.instances if coordinates else ""))

    def whole_view(self, view: View) -> str:
        """Every element of the argument (a gather may read any of them)."""
        return f"{{ [{', '.join(self.tids)}] -> [a] : {self.tile_bounds()} }}"

    def tile_bounds(self) -> str:
        return " and ".join(f"0 <= {t} < {g}" for t, g in zip(self.tids, self.grid, strict=True)) or "0 = 0"

    def relation(self, op: Operation, tile: Tile, view: View,
                 write: bool) -> tuple[str, str | None, Layout | None, str] | None:
        """The access as isl map texts: tile coordinates -> element offsets, and tile coordinates ->
        view coordinates with the layout that maps them to the offsets (`Access.coords`)."""
        addr = " + ".join([str(view.offset)] + [f"({c} - {lo}) * {s}" for c, lo, s in
                                                 zip(tile.coords, view.lo, view.strides, strict=False)])
        cons = [self.tile_bounds(), *tile.constraints]
        wanted = set(tile.vars) | set(tile.points)
        for vars_, c, certain in self.scope:
            cons.append(c)
            wanted |= vars_
            if not certain and write:
                self.out.problems.append(f"{where(op)} runs under a loop or condition that is not affine in the "
                                         "tile coordinates: which tiles store what cannot be proven")
                return None
        names = self.closure(wanted, cons)
        bad = [self.unknown[n] for n in names if n in self.unknown]
        if bad and write:
            self.out.problems.append(f"{where(op)} stores at coordinates that depend on {bad[0]}: not an affine "
                                     "function of the tile coordinates and loop indices")
            return None
        ex = sorted(names)
        tiles = ", ".join(self.tids)

        def text(out: list[str], equations: list[str]) -> str:
            body = " and ".join(f"({c})" for c in [*cons, *equations])
            inner = f"exists ({', '.join(ex)} : {body})" if ex else body
            return f"{{ [{tiles}] -> [{', '.join(out)}] : {inner} }}"

        address = text(["a"], [f"a = {addr}"])
        n = len(view.strides)
        cs = [f"c{i}" for i in range(n)]
        # reads at coordinates that depend on values the proof does not know are over-approximated: whether
        # they stay in the view is not known (the interpreter checks it where the tile is built)
        coordinates = "" if bad else text(cs, [f"c{i} = {tile.coords[i]}" for i in range(n)])
        # one execution of the op (a tile and the values of its loop indices) -> the coordinates it touches
        inst = [x for x in ex if x not in tile.points]
        body = " and ".join(f"({c})" for c in [*cons, *(f"c{i} = {tile.coords[i]}" for i in range(n))])
        inner = f"exists ({', '.join(tile.points)} : {body})" if tile.points else body
        self.instances = f"{{ [{', '.join([*self.tids, *inst])}] -> [{', '.join(cs)}] : {inner} }}"
        # dimensions of one element go last (their coordinate must be proven to stay at the lowest corner,
        # `coordinate_layout`), the others in order of decreasing stride
        unit = [i for i in range(n) if len(view.sizes) == n and view.sizes[i] == 1]
        rest = [i for i in range(n) if i not in unit]
        strides = tuple(view.strides[i] for i in rest)
        if len(set(strides)) != len(strides) or min(strides, default=1) <= 0:
            return address, None, None, coordinates
        order = sorted(rest, key=lambda i: -view.strides[i]) + unit
        ks = [f"k{j}" for j in range(n)]
        coords = text(ks, [f"k{j} = {tile.coords[i]} - {view.lo[i]}" for j, i in enumerate(order)])
        return address, coords, (view.offset, tuple(sorted(strides, reverse=True)), len(unit)), coordinates

    def closure(self, wanted: set[str], cons: list[str]) -> set[str]:
        """Every variable the constraints need, with the definitions of the defined ones appended to `cons`."""
        todo = list(wanted)
        seen: set[str] = set()
        while todo:
            v = todo.pop()
            if v in seen or v in self.tids:
                continue
            seen.add(v)
            found = self.defs.get(v)
            if found is not None:
                deps, c = found
                cons.append(c)
                todo += deps
        return seen


_HANDLERS = {
    Arith.constant: _Model.constant,
    Ktdp.get_compute_tile_id: _Model.tile_id,
    **{n: _Model.binary for n in (Arith.addi, Arith.subi, Arith.muli, Arith.minsi, Arith.minui, Arith.maxsi,
                                  Arith.maxui, Arith.divui, Arith.divsi, Arith.floordivsi, Arith.ceildivsi,
                                  "arith.ceildivui", Arith.remui, Arith.remsi)},
    Arith.index_cast: _Model.cast, Arith.index_castui: _Model.cast,
    Arith.cmpi: _Model.cmpi, Arith.andi: _Model.logic, Arith.ori: _Model.logic, Arith.xori: _Model.logic,
    Arith.select: _Model.select, Affine.apply: _Model.apply,
    Scf.for_: _Model.for_, Scf.if_: _Model.if_,
    Ktdp.construct_memory_view: _Model.memory_view,
    Ktdp.construct_distributed_memory_view: _Model.distributed,
    Ktdp.construct_access_tile: _Model.access_tile,
    Ktdp.construct_indirect_access_tile: _Model.indirect_tile,
    Ktdp.load: _Model.load, Ktdp.store: _Model.store,
    Memref.load: _Model.memref_load,
    **{n: _Model.derived_view for n in (Memref.cast, Memref.subview, Memref.reinterpret_cast, Memref.alloc,
                                       Memref.alloca)},
}

# ops that take memrefs without reading or writing their elements
_NO_MEMORY_EFFECT = frozenset({Memref.dim, "memref.extract_strided_metadata"})  # (terminators are skipped before)


def _int(text: str) -> int | None:
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        return None


def _itemsize(t: ty.Type) -> int:
    width = getattr(t, "width", None)
    return max(1, int(width) // 8) if width else 8


def _resolve(module: Module, attr: object) -> object:
    if isinstance(attr, at.AttrAliasRef):
        return module.attr_aliases.get(attr.name) or module.attr_aliases.get("#" + attr.name)
    return attr


def _static(op: Operation, attr: str) -> tuple[int, ...]:
    return tuple(int(v) for v in getattr(op.attributes.get(attr), "values", ()))


def _space(attr: object) -> str:
    """"global", "local" (the executing tile's own scratchpad) or "remote" for a memory space attribute."""
    if isinstance(attr, at.MemorySpaceAttr):
        return "global" if attr.kind == "global" else ("remote" if attr.ct_id is not None else "local")
    return "global"


def _bind(constraint: str, values: list[int | None]) -> str:
    """`constraint` with the symbols s0, s1, ... replaced by their values."""
    import re

    return re.sub(r"\bs(\d+)\b", lambda m: f"({values[int(m.group(1))]})", constraint)


def _lows_of(cons: list[str], rank: int, nsyms: int, known: list[int | None]) -> tuple[int, ...] | None:
    """The least point of the set `cons` over c0, c1, ... (symbols s0, ...: the known ones bound): None
    unless each coordinate's minimum is one integer whatever the unknown symbols are."""
    params = [f"s{i}" for i in range(nsyms)]
    bound = [f"s{i} = {k}" for i, k in enumerate(known) if k is not None]
    text = (f"[{', '.join(params)}] -> " if params else "") + \
        f"{{ [{', '.join(f'c{i}' for i in range(rank))}] : {' and '.join([*cons, *bound]) or '0 = 0'} }}"
    return _lows_cached(text, rank)


@functools.lru_cache(maxsize=1024)
def _lows_cached(text: str, n: int) -> tuple[int, ...] | None:
    s = isl.Set(text)
    if s.is_empty() or not s.is_bounded():
        return None
    out = []
    for i in range(n):
        values = set()
        for _, aff in s.dim_min(i).get_pieces():
            if not aff.is_cst():
                return None
            low = aff.get_constant_val()
            if not low.is_int():
                return None
            values.add(int(low.to_python()))
        if len(values) != 1:
            return None
        out.append(values.pop())
    return tuple(out)


def footprint(module: Module, fn: Operation, sizes: Mapping[str, int] | None = None) -> Footprint:
    """The access relations of `fn`'s global loads and stores, per tile."""
    try:
        return _Model(module, fn, sizes or {}).out
    except (AccessError, StopIteration, NotAffine) as e:
        out = Footprint(grid_of(fn))
        out.problems.append(f"the kernel's accesses could not be modelled: {e}")
        return out


# ---------------------------------------------------------------- the proof


def _union(accesses: list[Access], rel: Callable[[Access], str]) -> isl.Map | None:
    found: isl.Map | None = None
    for a in accesses:
        m = _map(rel(a))
        found = m if found is None else found.union(m)
    return found


@functools.lru_cache(maxsize=4096)
def _map(text: str) -> isl.Map:
    return isl.Map(text)


def _point(s: isl.Set | isl.Map) -> list[int]:
    p = (s.wrap() if isinstance(s, isl.Map) else s).sample_point()
    space = p.get_space()
    return [int(p.get_coordinate_val(isl.dim_type.set, i).to_python()) for i in range(space.dim(isl.dim_type.set))]


def _tiles(grid: tuple[int, ...], coords: list[int]) -> str:
    return "(" + ", ".join(map(str, coords)) + ")" if len(grid) > 1 else str(coords[0])


def _others(pairs: isl.Map) -> isl.Map:
    """The pairs of a tile-to-tile relation between two different tiles."""
    return pairs.subtract(isl.Map.identity(pairs.get_space()))


def _culprits(accesses: list[Access], other: list[Access], rel: Callable[[Access], str]) -> tuple[Access, Access] | None:
    for a in accesses:
        for b in other:
            pairs = _others(_map(rel(a)).apply_range(_map(rel(b)).reverse()))
            if not pairs.is_empty():
                return a, b
    return None


# isl operations the proof of one schedule may take (isl counts them in its inner loops); past
# them the schedule is declined, never accepted. The proofs of the random and real-size
# benchmarks stay far below; a subtraction of two sets of element offsets with quantified
# coordinates that ran 7 s on its own was stopped after 0.3 s at 5e4 and 2.3 s at 1e5.
MAX_OPERATIONS = 100_000


def prove(before: Module, after: Module, sizes: Mapping[str, int] | None = None, func: str | None = None,
          coordinates: bool = True, max_operations: int = MAX_OPERATIONS) -> str | None:
    """None when `after` provably divides `before`'s memory effects over its grid; else why not.
    `coordinates=False` compares element offsets even where coordinates would do (`compare`);
    a proof that needs more than `max_operations` isl operations (0: no limit) is not a proof."""
    from .kernels import function_of

    fn_in = function_of(before, func)
    name = func_name(fn_in)
    fn_out = next((f for f in after.functions() if func_name(f) == name), None)
    if fn_out is None:
        return f"the scheduled module has no function @{name}"
    fin = footprint(before, fn_in, sizes)
    fout = footprint(after, fn_out, sizes)
    if fout.problems:
        return fout.problems[0]
    if fin.problems:
        return f"the input's stores cannot be modelled, so the scheduled one cannot be compared with them: {fin.problems[0]}"
    for a in fin.writes + fin.reads + fout.writes + fout.reads:  # parsed before the budget starts
        _map(a.relation)
        if a.coords is not None:
            _map(a.coords)
    for a in fout.writes + fout.reads:
        if a.coordinates:
            _map(a.coordinates)
        if a.valid:
            _set(a.valid)
    for a in fout.writes:
        if a.instances:
            _map(a.instances)
            _map(_addressing(a))
    for a in fin.writes + fin.reads + fout.writes + fout.reads:
        if a.layout is not None:
            _set(_box(a.layout))
    ctx = isl.DEFAULT_CONTEXT
    ctx.reset_operations()
    ctx.set_max_operations(max_operations)
    try:
        return well_formed(fout) or compare(fin, fout, coordinates)
    except isl.Error as e:  # whatever stopped isl, nothing is proven
        if "maximal number of operations exceeded" in str(e):
            return (f"the legality proof did not finish within {max_operations:,} isl operations (isl's integer "
                    "programming on these access relations takes long), so the schedule is not proven")
        return (f"isl stopped during the legality proof ({str(e).splitlines()[0]}; past its budget of "
                f"{max_operations:,} operations a parse fails this way too), so the schedule is not proven")
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()


def compare(fin: Footprint, fout: Footprint, coordinates: bool = True) -> str | None:
    """None when `fout` divides `fin`'s writes over its grid legally; else why not (see the module's doc).

    Argument by argument, on view coordinates where `coordinate_layout` proves that is the same
    question, else on element offsets; `coordinates=False` always compares element offsets
    (the tests check that both give the same verdicts)."""
    args = sorted({a.arg for a in fin.writes} | {a.arg for a in fout.writes})
    for arg in args:
        w_out = [a for a in fout.writes if a.arg == arg]
        w_in = [a for a in fin.writes if a.arg == arg]
        r_out = [a for a in fout.reads if a.arg == arg]
        sizes = {a.itemsize for a in w_out + w_in + r_out}
        if len(sizes) > 1:
            return f"%{arg} is accessed through views of different element sizes {sorted(sizes)}"
        if not w_out:
            return f"the scheduled kernel never stores to %{arg}, which the input writes"
        layout = coordinate_layout(w_out + w_in + r_out) if coordinates else None
        if layout is not None:  # one layout, one-to-one on what is accessed: compare coordinates
            why = _compare_arg(arg, fout.grid, w_out, w_in, r_out, lambda a: a.coords or "",
                               functools.partial(_element, layout))
        else:  # element offsets
            why = _compare_arg(arg, fout.grid, w_out, w_in, r_out, lambda a: a.relation, lambda k: k[0])
        if why is not None:
            return why
    return _reads_inside(fin, fout, coordinates)


def _reads_inside(fin: Footprint, fout: Footprint, coordinates: bool = True) -> str | None:
    """None when every element the scheduled module reads is one its input reads or writes.

    The host passes arrays whose extent the kernel does not state (a view may reach past its
    array: only accessing such an element is an error, `runtime.out-of-bounds`), so the elements
    the input accesses are the ones known to exist. A gather of the input reads any element."""
    for arg in sorted({a.arg for a in fout.reads}):
        r_out = [a for a in fout.reads if a.arg == arg]
        known = [a for a in fin.reads + fin.writes if a.arg == arg]
        if not known:
            return f"the scheduled kernel reads %{arg}, which the input never accesses"
        sizes = {a.itemsize for a in r_out + known}
        if len(sizes) > 1:
            return f"%{arg} is accessed through views of different element sizes {sorted(sizes)}"
        layout = coordinate_layout(r_out + known) if coordinates else None
        rel: Callable[[Access], str] = (lambda a: a.coords or "") if layout is not None else (lambda a: a.relation)
        got, want = _union(r_out, rel), _union(known, rel)
        assert got is not None and want is not None
        extra = got.range().subtract(want.range())
        if not extra.is_empty():
            k = _point(extra)
            elem = _element(layout, k) if layout is not None else k[0]
            return (f"a tile reads element {elem} of %{arg}, which the input neither reads nor writes (it may lie "
                    f"outside the array passed for %{arg}: runtime.out-of-bounds)")
    return None


def well_formed(fp: Footprint) -> str | None:
    """None when every access of `fp` is proven to stay in its view's coordinate set, and no store
    writes one element twice through strides that map two of its coordinates to it; else why not.

    Both would be dynamic errors (`runtime.out-of-view`, `runtime.store-conflict`) of the scheduled
    module, and the element offsets the proof compares are only the ones accessed when neither
    happens. A store's coordinates are one-to-one with its elements when `coordinate_layout` proves
    it on the coordinates of that store alone, or else when isl finds no execution of the store (a
    tile and the values of its loop indices) that stores two coordinates the view maps to one element
    (two tiles or two iterations storing one element are the comparison's business, not a conflict)."""
    for a in fp.writes + fp.reads:
        if not a.coordinates or not a.valid:
            continue  # not modelled exactly (a read through unknown values), or a view of unknown sizes
        reached = _map(a.coordinates).range()
        outside = reached.subtract(_set(a.valid))
        if not outside.is_empty():
            line = a.view.line if a.view is not None else "its view"
            return (f"{where(a.op)} reaches coordinate {_point(outside)} of the view at {line}, outside its "
                    "coordinate set (a runtime.out-of-view error of the scheduled module)")
    for a in fp.writes:
        if a.coords is not None and coordinate_layout([a]) is not None:
            continue  # one-to-one on every coordinate it stores, on any tile
        line = a.view.line if a.view is not None else "its view"
        if not a.instances:
            return f"{where(a.op)} stores through the view at {line}, which may map two of its coordinates to one element"
        # exactly: two different coordinates of one execution (a tile, its loop indices) at one element
        addressing = _map(_addressing(a))
        same = _others(addressing.apply_range(addressing.reverse()))
        execution = _map(a.instances)
        twice = execution.range_product(execution).intersect_range(same.wrap())
        if not twice.is_empty():
            p = _point(twice.range().unwrap())
            n = len(p) // 2
            return (f"{where(a.op)} writes one element twice: the view at {line} maps coordinates {p[:n]} and "
                    f"{p[n:]}, which one execution of it stores, to one element (a runtime.store-conflict)")
    return None


def _addressing(a: Access) -> str:
    """The element offset of each coordinate of `a`'s view, as an isl map text."""
    view = a.view
    assert view is not None
    n = len(view.strides)
    addr = " + ".join([str(view.offset)] + [f"(c{i} - {view.lo[i]}) * {view.strides[i]}" for i in range(n)])
    return f"{{ [{', '.join(f'c{i}' for i in range(n))}] -> [a] : a = {addr} }}"


@functools.lru_cache(maxsize=1024)
def _set(text: str) -> isl.Set:
    return isl.Set(text)


def coordinate_layout(accesses: list[Access]) -> Layout | None:
    """The layout of `accesses` when they can be compared by view coordinates instead of element offsets.

    The element offsets of a store are the isl image of its view coordinates under the affine
    layout map `offset + sum(k_j * strides[j])`, which mixes the coordinates into one integer:
    isl eliminates the existentially quantified coordinates of such a set with integer
    programming, and a subtraction of two of them can take seconds (a transpose of [33, 49, 16]
    took 16 s). When every access goes through one layout, and that map is one-to-one on
    every coordinate accessed, two accesses touch the same element exactly when they touch the
    same coordinates, so each of the proof's questions has the same answer on coordinates,
    where the sets are boxes and strides. One-to-one is proven, not assumed: with the strides
    in decreasing order, the map is one-to-one on the box `0 <= k_0`, `0 <= k_j < strides[j-1]
    // strides[j]` (the sum of what the later coordinates add stays below the stride before
    them), with the coordinates of the view's dimensions of one element at 0 (they come last
    and may repeat a stride), and the coordinates accessed must be inside it (isl: every
    access's range is a subset of the box). Otherwise: None, and the proof compares element
    offsets."""
    layouts = {a.layout for a in accesses}
    if len(layouts) != 1 or None in layouts or any(a.coords is None for a in accesses):
        return None
    (layout,) = layouts
    assert layout is not None
    box = _set(_box(layout))
    for a in accesses:
        if not _map(a.coords or "").range().is_subset(box):
            return None
    return layout


def _box(layout: Layout) -> str:
    """The coordinates on which `layout` is proven one-to-one (`coordinate_layout`), as an isl set text."""
    strides, unit = layout[1], layout[2]
    ks = [f"k{j}" for j in range(len(strides) + unit)]
    cons = [f"0 <= k{j}" + (f" < {strides[j - 1] // strides[j]}" if j else "") for j in range(len(strides))]
    cons += [f"k{j} = 0" for j in range(len(strides), len(ks))]
    return f"{{ [{', '.join(ks)}] : {' and '.join(cons) or '0 = 0'} }}"


def _element(layout: Layout, k: list[int]) -> int:
    return layout[0] + sum(x * s for x, s in zip(k, layout[1], strict=False))  # the unit dimensions add 0


def _compare_arg(arg: str, grid: tuple[int, ...], w_out: list[Access], w_in: list[Access], r_out: list[Access],
                 rel: Callable[[Access], str], element: Callable[[list[int]], int]) -> str | None:
    """The proof's three questions for one argument, on the relations `rel` gives (element offsets
    or coordinates); `element` is the element offset of a point of their range."""
    k = len(grid)
    wo = _union(w_out, rel)
    assert wo is not None
    pairs = _others(wo.apply_range(wo.reverse()))
    if not pairs.is_empty():
        found = _culprits(w_out, w_out, rel)
        t = _point(pairs)
        shared = wo.intersect_domain(_singleton(t[:k])).range().intersect(
            wo.intersect_domain(_singleton(t[k:])).range())
        elem = element(_point(shared))
        what = f" ({where(found[0].op)} and {where(found[1].op)})" if found else ""
        return (f"tiles {_tiles(grid, t[:k])} and {_tiles(grid, t[k:])} both write element {elem} of "
                f"%{arg}{what}: an output element must be written by exactly one tile")
    if r_out:
        ro = _union(r_out, rel)
        assert ro is not None
        pairs = _others(ro.apply_range(wo.reverse()))
        if not pairs.is_empty():
            t = _point(pairs)
            found = _culprits(r_out, w_out, rel)
            what = f" ({where(found[0].op)} reads what {where(found[1].op)} writes)" if found else ""
            return (f"tile {_tiles(grid, t[:k])} reads elements of %{arg} that tile "
                    f"{_tiles(grid, t[k:])} writes{what}: tiles are not ordered with each other")
    if not w_in:
        return f"the scheduled kernel stores to %{arg}, which the input never writes"
    wi = _union(w_in, rel)
    assert wi is not None
    got, want = wo.range(), wi.range()
    missing = want.subtract(got)
    if not missing.is_empty():
        return f"element {element(_point(missing))} of %{arg}, written by the input, is written by no tile"
    extra = got.subtract(want)
    if not extra.is_empty():
        return f"a tile writes element {element(_point(extra))} of %{arg}, which the input does not write"
    return None


def _singleton(coords: list[int]) -> isl.Set:
    names = [f"t{i}" for i in range(len(coords))]
    return isl.Set(f"{{ [{', '.join(names)}] : {' and '.join(f'{n} = {c}' for n, c in zip(names, coords, strict=True))} }}")


__all__ = ["Footprint", "compare", "footprint", "prove", "well_formed"]
