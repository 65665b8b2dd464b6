"""Build KTIR modules in Python (used by the lowering and the schedulers).

    b = Builder()
    with b.func("add", [("a", INDEX)], grid=[4]) as (a,):
        (tid,) = b.tile_id()
        c0 = b.constant(0, INDEX)
        b.func_return()
    text = print_module(b.module)

Every op can be created with `create(name, operands, result_types, attributes, regions)`;
`b.<dialect>.<op>(*operands, **attributes)` does the same and infers result types where
the op's format determines them. Helpers cover the ops whose operands carry structure
(memory views, access tiles, loops with iter_args, `scf.if`, linalg ops with ins/outs and
bodies, reshapes and slices, inter-tile produce/reduce). Values are `Value(name, type)`
handles; names are generated unless given (`name="acc"` or `name="%acc"` on any op, so a
scheduler's output keeps readable, stable SSA names). `alias` defines `#name = ...` and
returns its reference; `note` attaches `//` comment lines to the next alias or op.

    with b.for_(lb, ub, step, [init], names=("k", "sum"), results=("total",)) as (k, s):
        prod = b.dps("linalg.matmul", [x, y], [s], name="prod")
        b.yield_(prod)
    with b.generic([x], [out], [idmap, idmap], ["parallel"], args=("a", "o")) as (a, o):
        b.yield_(b.math.exp(a), op="linalg.yield")
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Arith, Builtin, Func, Ktdp, Linalg, Scf, Tensor
from ktir.dialects.registry import OPS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.attributes import constant_type
from ktir.ir.base import Attribute, Type
from ktir.ir.named_affine import AffineName, ssa_map
from ktir.ir.operation import Block, BlockArgument, Location, Module, Operation, Region
from ktir.ir.types import KDYNAMIC, i1_like
from ktir.syntax.parser import SHORT_BODY_RESULT, short_body_init, short_body_input


@dataclass(frozen=True)
class Value:
    name: str
    type: Type

    def __str__(self) -> str:
        return self.name


class BuildError(ValueError):
    pass


def _attr(value: Any) -> Attribute:
    """Lift Python values to attributes: int, float, bool, str, lists, types, maps, sets."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool):
        return at.BoolAttr(value=value)
    if isinstance(value, int):
        return at.IntegerAttr(value=value)
    if isinstance(value, float):
        return at.FloatAttr(value=value)
    if isinstance(value, str):
        return at.StringAttr(value=value)
    if isinstance(value, list | tuple):
        return at.ArrayAttr(elements=tuple(_attr(v) for v in value))
    if isinstance(value, Type):
        return at.TypeAttr(value=value)
    if isinstance(value, af.AffineMap):
        return at.AffineMapAttr(value=value)
    if isinstance(value, af.IntegerSet):
        return at.IntegerSetAttr(value=value)
    raise BuildError(f"cannot make an attribute from {value!r}")


class _Dialect:
    def __init__(self, builder: Builder, dialect: str) -> None:
        self._builder = builder
        self._dialect = dialect

    def __getattr__(self, mnemonic: str) -> Any:
        op_name = f"{self._dialect}.{mnemonic}"
        if op_name not in OPS:
            raise AttributeError(f"KTIR defines no op {op_name}")

        def build(*operands: Value, result_types: Sequence[Type] | None = None, name: str | Sequence[str] | None = None,
                  **attributes: Any) -> Any:
            names = [name] if isinstance(name, str) else name
            results = self._builder.create(op_name, list(operands), result_types, attributes, result_names=names)
            return results[0] if len(results) == 1 else (tuple(results) if results else None)

        build.__name__ = mnemonic
        build.__doc__ = OPS[op_name].summary
        return build


class Builder:
    """Appends ops to an insertion block; `module` holds everything built so far."""

    def __init__(self, module: Module | None = None) -> None:
        self.module = module or Module()
        self._blocks: list[Block] = []
        self._counter = 0
        self._top = Block()
        self._notes: list[str] = []
        self.last_results: list[Value] = []

    # ------------------------------------------------------------ names and blocks

    def fresh(self, hint: str = "") -> str:
        name = f"%{hint}{self._counter}"
        self._counter += 1
        return name

    @property
    def block(self) -> Block:
        return self._blocks[-1] if self._blocks else self._top

    @contextlib.contextmanager
    def insert_into(self, block: Block) -> Iterator[Block]:
        self.enter(block)
        try:
            yield block
        finally:
            self.leave()

    def enter(self, block: Block) -> None:
        """Make `block` the insertion point until `leave()` (for builders whose nesting is not
        a Python `with`, e.g. a loop opened by one call and closed by another)."""
        self._blocks.append(block)

    def leave(self) -> None:
        self._blocks.pop()

    def __getattr__(self, dialect: str) -> _Dialect:
        if dialect.startswith("_"):
            raise AttributeError(dialect)
        return _Dialect(self, dialect)

    def dialect(self, name: str) -> _Dialect:
        """`b.dialect("func").call(...)`: the op builders of a dialect whose name is also a
        Builder method (`func`); `b.arith.addf(...)` is the short form for the others."""
        return _Dialect(self, name)

    # ------------------------------------------------------------ generic creation

    def note(self, *lines: str) -> None:
        """`//` comment lines printed before the next alias or op built."""
        self._notes += [line if line.startswith("//") else f"// {line}" for line in lines]

    def alias(self, name: str, value: Any) -> at.AttrAliasRef:
        """Define `#name = value` in the module; returns the reference ops use."""
        key = name.lstrip("#")
        if key in self.module.attr_aliases:
            raise BuildError(f"alias #{key} is defined twice")
        self.module.attr_aliases[key] = _attr(value)
        self.module.alias_order.append(f"#{key}")
        if self._notes:
            self.module.alias_comments[f"#{key}"], self._notes = self._notes, []
        return at.AttrAliasRef(name=key)

    def append(self, op: Operation) -> list[Value]:
        if self._notes:
            op.comments, self._notes = [*op.comments, *self._notes], []
        if self._blocks:
            self.block.operations.append(op)
        else:
            self.module.operations.append(op)
        return [Value(n, t) for n, t in zip(op.results, op.result_types, strict=True)]

    def create(
        self,
        name: str,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] | None = None,
        attributes: dict[str, Any] | None = None,
        regions: Sequence[Region] = (),
        result_names: Sequence[str] | None = None,
    ) -> list[Value]:
        """Create any op. Result types are inferred when omitted and the format allows."""
        attrs = {k: _attr(v) for k, v in (attributes or {}).items()}
        if result_types is None:
            result_types = _infer(name, operands, attrs)
        names = [_ssa_name(n) for n in result_names] if result_names is not None else [self.fresh() for _ in result_types]
        if len(names) != len(result_types):
            raise BuildError(f"{name}: {len(names)} result names for {len(result_types)} results")
        op = Operation(
            name=name,
            operands=[v.name for v in operands],
            operand_types=[v.type for v in operands],
            results=names,
            result_types=list(result_types),
            attributes=attrs,
            regions=list(regions),
        )
        return self.append(op)

    # ------------------------------------------------------------ func and module

    @contextlib.contextmanager
    def func(
        self,
        name: str,
        arguments: Sequence[tuple[str, Type]],
        results: Sequence[Type] = (),
        grid: Sequence[int] | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> Iterator[tuple[Value, ...]]:
        """Define `func.func @name`; yields the argument values; the body is the insertion point."""
        args = [BlockArgument(name=_ssa_name(n), type=t) for n, t in arguments]
        entry = Block(arguments=args)
        attrs: dict[str, Attribute] = {
            "sym_name": at.StringAttr(value=name),
            "function_type": at.TypeAttr(value=ty.FunctionType(inputs=tuple(t for _, t in arguments), results=tuple(results))),
        }
        if grid is not None:
            attrs["grid"] = at.ArrayAttr(elements=tuple(at.IntegerAttr(value=g) for g in grid))
        attrs.update({k: _attr(v) for k, v in (attributes or {}).items()})
        self.append(Operation(name=Func.func, attributes=attrs, regions=[Region(blocks=[entry])]))
        with self.insert_into(entry):
            yield tuple(Value(a.name, a.type) for a in args)

    def func_return(self, *values: Value) -> None:
        self.create(Func.return_, list(values), [])

    # ------------------------------------------------------------ arith

    def constant(self, value: Any, type: Type | None = None, name: str | None = None) -> Value:
        if isinstance(value, Attribute):
            attr = value
        elif isinstance(value, bool):
            attr = at.BoolAttr(value=value)
        elif isinstance(value, int):
            attr = at.IntegerAttr(value=value, type=type or ty.I64)
        elif isinstance(value, float):
            attr = at.FloatAttr(value=value, type=type or ty.F64)
        else:
            raise BuildError(f"cannot make a constant from {value!r}")
        return self.create(Arith.constant, [], [constant_type(attr)], {"value": attr}, result_names=_names(name))[0]

    def index(self, value: int, name: str | None = None) -> Value:
        """An `index` constant."""
        return self.constant(value, ty.INDEX, name)

    def cmp(self, op: str, predicate: str, lhs: Value, rhs: Value, name: str | None = None) -> Value:
        """`arith.cmpi` / `arith.cmpf` with the predicate spelled as in the text (`ult`, `oeq`)."""
        predicates = OPS[op].option("predicates")
        assert isinstance(predicates, tuple)
        if predicate not in predicates:
            raise BuildError(f"unknown predicate '{predicate}' for {op}")
        pred = at.IntegerAttr(value=predicates.index(predicate), type=ty.I64)
        return self.create(op, [lhs, rhs], [i1_like(lhs.type)], {"predicate": pred}, result_names=_names(name))[0]

    # ------------------------------------------------------------ ktdp

    def tile_id(self, rank: int = 1, names: Sequence[str] | None = None) -> list[Value]:
        return self.create(Ktdp.get_compute_tile_id, [], [ty.INDEX] * rank, result_names=names)

    def memory_view(
        self,
        offset: Value,
        sizes: Sequence[int | Value],
        strides: Sequence[int | Value],
        element_type: Type,
        memory_space: at.MemorySpaceAttr | None = None,
        coordinate_set: Attribute | af.IntegerSet | None = None,
        name: str | None = None,
    ) -> Value:
        """A view of `sizes` elements; a view of scratchpad (`ct_local`) memory carries its
        memory space in its type too."""
        static_sizes, dyn_sizes = _mixed(sizes)
        static_strides, dyn_strides = _mixed(strides)
        attrs: dict[str, Any] = {
            "static_sizes": at.i64_array(static_sizes),
            "static_strides": at.i64_array(static_strides),
            "operandSegmentSizes": _named_segments(Ktdp.construct_memory_view, offset=1, sizes=len(dyn_sizes),
                                                   strides=len(dyn_strides)),
            "memory_space": memory_space or at.MemorySpaceAttr(kind="global"),
        }
        if coordinate_set is not None:
            attrs["coordinate_set"] = coordinate_set
        shape = tuple(None if v == KDYNAMIC else v for v in static_sizes)
        space = memory_space if memory_space is not None and memory_space.kind != "global" else None
        result = ty.MemRefType(shape=shape, element_type=element_type, memory_space=space)
        return self.create(Ktdp.construct_memory_view, [offset, *dyn_sizes, *dyn_strides], [result], attrs,
                           result_names=_names(name))[0]

    def distributed_view(self, parts: Sequence[Value], shape: Sequence[int], name: str | None = None) -> Value:
        """`ktdp.construct_distributed_memory_view`: the parts as one view of `shape`."""
        first = parts[0].type
        assert isinstance(first, ty.MemRefType)
        result = ty.MemRefType(shape=tuple(shape), element_type=first.element_type)
        return self.create(Ktdp.construct_distributed_memory_view, parts, [result], result_names=_names(name))[0]

    def access_tile(
        self,
        base: Value,
        subscripts: Sequence[af.AffineExpr | Value | int],
        tile_set: Attribute | af.IntegerSet,
        shape: Sequence[int],
        order: Attribute | af.AffineMap | None = None,
        symbols: Sequence[Value] = (),
        name: str | None = None,
    ) -> Value:
        """`subscripts` are affine expressions over Values (use `ssa(v)`), Values or ints."""
        exprs = [_subscript(s) for s in subscripts]
        sm = ssa_map(exprs)
        indices = [Value(n, ty.INDEX) for n in sm.operands]  # subscripts are index values
        attrs: dict[str, Any] = {
            "base_map": at.AffineMapAttr(value=sm.map),
            "access_tile_set": tile_set,
            "access_tile_order": order if order is not None else af.AffineMap.identity(len(shape)),
            "operandSegmentSizes": _named_segments(Ktdp.construct_access_tile, base=1, indices=len(indices),
                                                   symbol_operands=len(symbols)),
        }
        result = ty.AccessTileType(shape=tuple(shape))
        return self.create(Ktdp.construct_access_tile, [base, *indices, *symbols], [result], attrs,
                           result_names=_names(name))[0]

    def indirect_access_tile(
        self,
        base: Value,
        shape: Sequence[int],
        subscripts: Callable[..., Sequence[Indirect | af.AffineExpr | Value | int]],
        tile_set: Attribute | af.IntegerSet | None = None,
        order: Attribute | af.AffineMap | None = None,
        symbols: Sequence[Value] = (),
        variables: Sequence[str] = (),
        name: str | None = None,
    ) -> Value:
        """`ktdp.construct_indirect_access_tile` (a gather or scatter tile): `subscripts` gets one
        index Value per dimension of `shape` (the intermediate variables, named `variables`
        when given, else fresh names) and returns one subscript per dimension of `base`: `ind(view,
        ...)` for an element read from an index view, else an affine expression. Expressions may
        use the variables and any index Value defined outside (captured, in order of first use);
        `tile_set` (default the box `shape`) may have symbols, bound to `symbols`."""
        if variables and len(variables) != len(shape):
            raise BuildError(f"{Ktdp.construct_indirect_access_tile}: {len(variables)} variable names for {len(shape)} dimensions")
        names = ([_ssa_name(v) for v in variables] if variables
                 else [self.fresh("m" if i == 0 else "k" if i == 1 else "v") for i in range(len(shape))])
        made = list(subscripts(*[Value(n, ty.INDEX) for n in names]))
        exprs: list[af.AffineExpr] = []
        counts: list[int] = []
        views: list[Value] = []
        for s in made:
            found = [_subscript(x) for x in s.indices] if isinstance(s, Indirect) else [_subscript(s)]
            if isinstance(s, Indirect):
                views.append(s.view)
            exprs += found
            counts.append(len(found))
        sm = ssa_map(exprs, fixed_dims=names)
        if sm.map.num_symbols:
            raise BuildError(f"{Ktdp.construct_indirect_access_tile}: subscripts take no symbols (pass them as captured values)")
        maps, at_ = [], 0
        for n in counts:
            maps.append(af.AffineMap(num_dims=sm.map.num_dims, num_symbols=0, results=sm.map.results[at_:at_ + n]))
            at_ += n
        attrs: dict[str, Any] = {
            "variables_space_order": order if order is not None else af.AffineMap.identity(len(shape)),
            "variables_space_set": tile_set if tile_set is not None else box(*shape),
            "per_dim_subscript_kinds": at.DenseArrayAttr(element_type=ty.I1,
                                                         values=tuple(int(isinstance(s, Indirect)) for s in made)),
            "per_dim_subscript_maps": at.ArrayAttr(elements=tuple(at.AffineMapAttr(value=m) for m in maps)),
            "operandSegmentSizes": _named_segments(Ktdp.construct_indirect_access_tile, base=1,
                                                   indirect_memrefs=len(views), captured_variables=len(sm.operands) - len(names),
                                                   symbol_operands=len(symbols)),
        }
        captured = [Value(n, ty.INDEX) for n in sm.operands[len(names):]]
        body = Block(arguments=[BlockArgument(name=n, type=ty.INDEX) for n in names],
                     operations=[Operation(name=Ktdp.region_terminator)])
        return self.create(Ktdp.construct_indirect_access_tile, [base, *views, *captured, *symbols],
                           [ty.AccessTileType(shape=tuple(shape))], attrs, [Region(blocks=[body])],
                           result_names=_names(name))[0]

    def load(self, tile: Value, element_type: Type | None = None, name: str | None = None) -> Value:
        """Load through an access tile; the element type defaults to the tile's view's."""
        assert isinstance(tile.type, ty.AccessTileType)
        if element_type is None:
            raise BuildError("ktdp.load: pass the element type")
        result = ty.TensorType(shape=tile.type.shape, element_type=element_type)
        return self.create(Ktdp.load, [tile], [result], result_names=_names(name))[0]

    def store(self, data: Value, tile: Value) -> None:
        self.create(Ktdp.store, [data, tile], [])

    # ------------------------------------------------------------ scf

    @contextlib.contextmanager
    def for_(
        self,
        lb: Value,
        ub: Value,
        step: Value,
        inits: Sequence[Value] = (),
        names: Sequence[str] | None = None,
        results: Sequence[str] | None = None,
    ) -> Iterator[tuple[Value, ...]]:
        """`scf.for`; yields (iv, *iter_args). Without inits the scf.yield is added for you.
        `names` name the induction variable and the iter_args, `results` the loop's results
        (also in `last_results` after the loop)."""
        arg_names = [_ssa_name(n) for n in names] if names is not None else [
            self.fresh("iv"), *(self.fresh("acc") for _ in inits)]
        if len(arg_names) != 1 + len(inits):
            raise BuildError(f"scf.for: {len(arg_names)} names for the iv and {len(inits)} iter_args")
        iv = BlockArgument(name=arg_names[0], type=lb.type)
        carried = [BlockArgument(name=n, type=v.type) for n, v in zip(arg_names[1:], inits, strict=True)]
        body = Block(arguments=[iv, *carried])
        result_names = [_ssa_name(n) for n in results] if results is not None else [self.fresh() for _ in inits]
        op = Operation(
            name=Scf.for_,
            operands=[lb.name, ub.name, step.name, *(v.name for v in inits)],
            operand_types=[lb.type, ub.type, step.type, *(v.type for v in inits)],
            results=result_names,
            result_types=[v.type for v in inits],
            regions=[Region(blocks=[body])],
        )
        results_ = self.append(op)
        with self.insert_into(body):
            yield tuple(Value(a.name, a.type) for a in body.arguments)
            if not inits and not (body.operations and body.operations[-1].name == Scf.yield_):
                self.create(Scf.yield_, [], [])
        self.last_results = results_

    @contextlib.contextmanager
    def parallel(self, lbs: Sequence[Value], ubs: Sequence[Value], steps: Sequence[Value],
                 names: Sequence[str] | None = None) -> Iterator[tuple[Value, ...]]:
        """`scf.parallel` without init values; yields the induction variables. The body's
        `scf.reduce` terminator is added for you."""
        if not len(lbs) == len(ubs) == len(steps):
            raise BuildError(f"scf.parallel: {len(lbs)} lower bounds, {len(ubs)} upper bounds, {len(steps)} steps")
        body = self._region_block([v.type for v in lbs], names, "iv")
        seg = _named_segments(Scf.parallel, lower_bounds=len(lbs), upper_bounds=len(ubs), steps=len(steps), init_vals=0)
        self.create(Scf.parallel, [*lbs, *ubs, *steps], [], attributes={"operandSegmentSizes": seg},
                    regions=[Region(blocks=[body])])
        with self.insert_into(body):
            yield tuple(Value(a.name, a.type) for a in body.arguments)
            if not (body.operations and body.operations[-1].name == Scf.reduce):
                self.create(Scf.reduce, [], [])

    @contextlib.contextmanager
    def if_(self, condition: Value) -> Iterator[None]:
        """`scf.if` without results or else branch; the then-branch is the insertion point."""
        then = Block()
        self.append(Operation(name=Scf.if_, operands=[condition.name], operand_types=[condition.type],
                              regions=[Region(blocks=[then]), Region(blocks=[])]))
        with self.insert_into(then):
            yield
            if not (then.operations and then.operations[-1].name == Scf.yield_):
                self.create(Scf.yield_, [], [])

    def if_else(self, condition: Value, then: Callable[[], object], otherwise: Callable[[], object]) -> None:
        """`scf.if %condition { ... } else { ... }` without results: `then` and `otherwise` build
        their branches (each gets its `scf.yield` unless it ends with one)."""
        blocks = Block(), Block()
        self.append(Operation(name=Scf.if_, operands=[condition.name], operand_types=[condition.type],
                              regions=[Region(blocks=[blocks[0]]), Region(blocks=[blocks[1]])]))
        for block, make in zip(blocks, (then, otherwise), strict=True):
            with self.insert_into(block):
                make()
                if not (block.operations and block.operations[-1].name == Scf.yield_):
                    self.create(Scf.yield_, [], [])

    def if_values(self, condition: Value, make: Callable[[], Sequence[Value]], otherwise: Sequence[Value],
                  names: Sequence[str] | None = None) -> list[Value]:
        """`scf.if %condition -> (...)` with results: the values `make` builds in the then-branch
        when the condition holds, else `otherwise` (values already at hand, yielded by the
        else-branch); the result types are those of `otherwise`."""
        then, other = Block(), Block()
        results = self.create(Scf.if_, [condition], [v.type for v in otherwise],
                              regions=[Region(blocks=[then]), Region(blocks=[other])],
                              result_names=names)
        with self.insert_into(then):
            self.yield_(*make())
        with self.insert_into(other):
            self.yield_(*otherwise)
        return results

    def yield_(self, *values: Value, op: str = Scf.yield_) -> None:
        self.create(op, list(values), [])

    # ------------------------------------------------------------ tensor and linalg

    def empty(self, type: ty.TensorType, name: str | None = None) -> Value:
        """`tensor.empty() : type`."""
        return self.create(Tensor.empty, [], [type], result_names=_names(name))[0]

    def dps(
        self,
        op: str,
        ins: Sequence[Value],
        outs: Sequence[Value],
        attributes: dict[str, Any] | None = None,
        name: str | Sequence[str] | None = None,
        regions: Sequence[Region] = (),
    ) -> Value:
        """A destination-passing linalg op (`linalg.fill`, `linalg.matmul`, `linalg.add`, ...):
        `ins(...) outs(...)`, one tensor result per tensor init."""
        return self._dps(op, ins, outs, attributes, name, regions)[0]

    def _dps(self, op: str, ins: Sequence[Value], outs: Sequence[Value], attributes: dict[str, Any] | None,
             name: str | Sequence[str] | None, regions: Sequence[Region]) -> list[Value]:
        attrs = {"operandSegmentSizes": _segments(len(ins), len(outs)), **(attributes or {})}
        results = [v.type for v in outs if isinstance(v.type, ty.TensorType)]
        names = [name] if isinstance(name, str) else name
        return self.create(op, [*ins, *outs], results, attrs, regions, result_names=names)

    def fill(self, value: Value, out: Value, name: str | None = None) -> Value:
        return self.dps(Linalg.fill, [value], [out], name=name)

    @contextlib.contextmanager
    def generic(
        self,
        ins: Sequence[Value],
        outs: Sequence[Value],
        indexing_maps: Sequence[Attribute | af.AffineMap],
        iterator_types: Sequence[str],
        args: Sequence[str] | None = None,
        name: str | Sequence[str] | None = None,
    ) -> Iterator[tuple[Value, ...]]:
        """`linalg.generic`; yields the body's scalar arguments (one per input and init),
        named by `args`; the body ends with `yield_(..., op="linalg.yield")`. After the block,
        `last_results` holds the op's results (as after every block-building helper)."""
        body = self._region_block([ty.element_type(v.type) for v in (*ins, *outs)], args, "x")
        attrs = {"indexing_maps": list(indexing_maps), "iterator_types": list(iterator_types)}
        results = self._dps(Linalg.generic, ins, outs, attrs, name, [Region(blocks=[body])])
        with self.insert_into(body):
            yield tuple(Value(a.name, a.type) for a in body.arguments)
        self.last_results = results

    def reduce(self, combiner: str, ins: Sequence[Value], outs: Sequence[Value], dimensions: Sequence[int],
               name: str | None = None) -> Value:
        """`linalg.reduce { combiner } ins(...) outs(...) dimensions = [...]`: the short form,
        with the body MLIR builds for it (the combiner applied to (init, input))."""
        elem_in = [ty.element_type(v.type) for v in ins]
        elem_out = [ty.element_type(v.type) for v in outs]
        args = [BlockArgument(name=short_body_input(i), type=t) for i, t in enumerate(elem_in)]
        args += [BlockArgument(name=short_body_init(i), type=t) for i, t in enumerate(elem_out)]
        body = Block(arguments=args)
        with self.insert_into(body):
            (result,) = self.create(combiner, [Value(a.name, a.type) for a in (args[-1], *args[:-1])], [elem_out[0]],
                                    result_names=[SHORT_BODY_RESULT])
            self.yield_(result, op=Linalg.yield_)
        dims = at.DenseArrayAttr(element_type=ty.I64, values=tuple(dimensions))
        return self.dps(Linalg.reduce, ins, outs, {"dimensions": dims}, name, [Region(blocks=[body])])

    @contextlib.contextmanager
    def reduce_body(self, ins: Sequence[Value], outs: Sequence[Value], dimensions: Sequence[int],
                    args: Sequence[str] | None = None, name: str | None = None) -> Iterator[tuple[Value, ...]]:
        """`linalg.reduce ... dimensions = [...] (%in: f32, %acc: f32) { ... }`: the written-out
        body; yields its arguments (inputs, then inits); end it with `yield_(..., op="linalg.yield")`."""
        body = self._region_block([ty.element_type(v.type) for v in (*ins, *outs)], args, "r")
        dims = at.DenseArrayAttr(element_type=ty.I64, values=tuple(dimensions))
        results = self._dps(Linalg.reduce, ins, outs, {"dimensions": dims}, name, [Region(blocks=[body])])
        with self.insert_into(body):
            yield tuple(Value(a.name, a.type) for a in body.arguments)
        self.last_results = results

    def collapse_shape(self, source: Value, reassociation: Sequence[Sequence[int]], result: ty.TensorType,
                       name: str | None = None) -> Value:
        return self.create(Tensor.collapse_shape, [source], [result], {"reassociation": _reassociation(reassociation)},
                           result_names=_names(name))[0]

    def expand_shape(self, source: Value, reassociation: Sequence[Sequence[int]], result: ty.TensorType,
                     name: str | None = None) -> Value:
        """`tensor.expand_shape` to a static `result` shape."""
        attrs = {"reassociation": _reassociation(reassociation),
                 "static_output_shape": at.DenseArrayAttr(element_type=ty.I64, values=tuple(result.shape))}
        return self.create(Tensor.expand_shape, [source], [result], attrs, result_names=_names(name))[0]

    def extract_slice(self, source: Value, offsets: Sequence[int | Value], sizes: Sequence[int],
                      strides: Sequence[int] | None = None, name: str | None = None) -> Value:
        """`tensor.extract_slice` of static `sizes` (offsets static or SSA values)."""
        static_offsets, dyn_offsets = _mixed(offsets)
        attrs = {
            "static_offsets": at.i64_array(static_offsets),
            "static_sizes": at.i64_array(list(sizes)),
            "static_strides": at.i64_array(list(strides) if strides is not None else [1] * len(sizes)),
            "operandSegmentSizes": _named_segments(Tensor.extract_slice, source=1, offsets=len(dyn_offsets),
                                                   sizes=0, strides=0),
        }
        result = ty.TensorType(shape=tuple(sizes), element_type=ty.element_type(source.type))
        return self.create(Tensor.extract_slice, [source, *dyn_offsets], [result], attrs, result_names=_names(name))[0]

    def insert_slice(self, source: Value, dest: Value, offsets: Sequence[int | Value], sizes: Sequence[int],
                     strides: Sequence[int] | None = None, name: str | None = None) -> Value:
        """`tensor.insert_slice` of static `sizes` (offsets static or SSA values); the result has
        `dest`'s type."""
        static_offsets, dyn_offsets = _mixed(offsets)
        attrs = {
            "static_offsets": at.i64_array(static_offsets),
            "static_sizes": at.i64_array(list(sizes)),
            "static_strides": at.i64_array(list(strides) if strides is not None else [1] * len(sizes)),
            "operandSegmentSizes": _named_segments(Tensor.insert_slice, source=1, dest=1, offsets=len(dyn_offsets),
                                                   sizes=0, strides=0),
        }
        return self.create(Tensor.insert_slice, [source, dest, *dyn_offsets], [dest.type], attrs, result_names=_names(name))[0]

    # ------------------------------------------------------------ inter-tile

    @contextlib.contextmanager
    def produce(self, producers: Attribute | af.IntegerSet, future: ty.TileFutureType, arg: str | None = None,
                name: str | None = None) -> Iterator[Value]:
        """`ktdp.inter_tile_produce producer_tiles_per_group = producers -> future`; yields the
        body's group id; the body ends with `yield_(..., op="ktdp.yield_partial")`."""
        body = self._region_block([ty.INDEX], [arg] if arg is not None else None, "gid")
        results = self.create(Ktdp.inter_tile_produce, [], [future], {"producer_tiles_per_group": producers},
                              [Region(blocks=[body])], result_names=_names(name))
        with self.insert_into(body):
            yield Value(body.arguments[0].name, ty.INDEX)
        self.last_results = results

    @contextlib.contextmanager
    def reduce_tiles(self, future: Value, consumers: Attribute | af.IntegerSet, identity: Sequence[Value],
                     args: Sequence[str] | None = None, names: Sequence[str] | None = None) -> Iterator[tuple[Value, ...]]:
        """`ktdp.inter_tile_reduce(future) consumer_tiles_per_group = consumers, identity(...)`;
        yields the combiner's arguments (two partials, each as many values as the identity);
        the body ends with `yield_(..., op="ktdp.yield_reduced")`. Results in `last_results`."""
        types = [v.type for v in identity]
        body = self._region_block(types + types, args, "p")
        results = self.create(Ktdp.inter_tile_reduce, [future, *identity], types,
                              {"consumer_tiles_per_group": consumers}, [Region(blocks=[body])], result_names=names)
        with self.insert_into(body):
            yield tuple(Value(a.name, a.type) for a in body.arguments)
        self.last_results = results

    def _region_block(self, types: Sequence[Type], names: Sequence[str] | None, hint: str) -> Block:
        if names is not None and len(names) != len(types):
            raise BuildError(f"{len(names)} names for {len(types)} block arguments")
        arg_names = [_ssa_name(n) for n in names] if names is not None else [self.fresh(hint) for _ in types]
        return Block(arguments=[BlockArgument(name=n, type=t) for n, t in zip(arg_names, types, strict=True)])


def located(module: Module, filename: str) -> Module:
    """Give a built module the source positions of its printed text (`filename`), as if it had
    been read from that file: diagnostics (an interpreter error under `--check`, a verifier
    message) point into the file a tool writes. (The cost model keys ops by identity, not position.)

    The printer writes ops in the order of `Module.walk`, each starting a line of its own;
    the lines in between are aliases, comments, block labels and closing braces. Ops the text
    leaves implicit (a terminator the printer elides, the body of a short `{ arith.addf }`
    form) get no position, as the parser gives them none. Prints once; does not parse."""
    from ktir.syntax.printer import print_module

    lines = print_module(module).splitlines()
    at_line = 0
    for op in module.walk():
        while at_line < len(lines) and _between_ops(lines[at_line]):
            at_line += 1
        text = lines[at_line] if at_line < len(lines) else ""
        head = text.lstrip()
        if head.startswith(_heads(op)):
            op.loc = Location(line=at_line + 1, column=len(text) - len(head) + 1)
            at_line += 1
        else:
            op.loc = None
    module.filename = filename
    return module


def _heads(op: Operation) -> tuple[str, ...]:
    """How the printed line of `op` starts: its results (`%a, %b = `, `%r:2 = `) or its name."""
    if not op.results:
        return ("module", op.name, f'"{op.name}"') if op.name == Builtin.module else (op.name, f'"{op.name}"')
    heads = [f"{', '.join(op.results)} = "]
    base = op.results[0].partition("#")[0]
    if all(r == f"{base}#{i}" for i, r in enumerate(op.results)):
        heads.append(f"{base}:{len(op.results)} = ")
    return tuple(heads)


def _between_ops(line: str) -> bool:
    head = line.lstrip()
    return not head or head.startswith(("//", "#", "!", "^", "}"))


@dataclass(frozen=True)
class Indirect:
    """An indirect subscript of `Builder.indirect_access_tile`: the element of the index view
    `view` at `indices` (one per dimension of the view; affine expressions, Values or ints)."""

    view: Value
    indices: tuple[af.AffineExpr | Value | int, ...]


def ind(view: Value, *indices: af.AffineExpr | Value | int) -> Indirect:
    """`ind(%ids[...])`: the subscript read from `view` at `indices`."""
    return Indirect(view, indices)


def ssa(value: Value) -> af.AffineExpr:
    """An affine leaf standing for an SSA value, for access tile subscripts."""
    return AffineName(name=value.name)


def _subscript(s: af.AffineExpr | Value | int) -> af.AffineExpr:
    if isinstance(s, Value):
        return ssa(s)
    if isinstance(s, int):
        return af.const(s)
    return s


def _ssa_name(name: str) -> str:
    return name if name.startswith("%") else f"%{name}"


def _names(name: str | None) -> list[str] | None:
    return None if name is None else [name]


def _reassociation(groups: Sequence[Sequence[int]]) -> at.ArrayAttr:
    return at.ArrayAttr(elements=tuple(
        at.ArrayAttr(elements=tuple(at.IntegerAttr(value=i, type=ty.I64) for i in g)) for g in groups))


def box(*extents: int | af.AffineExpr, fixed: Sequence[int] = ()) -> af.IntegerSet:
    """The box 0 <= d_i < extents[i] as an integer set (`d_i == 0` for the dims in `fixed`),
    with the constraints written the way MLIR prints them (`d0 >= 0, -d0 + 31 >= 0`). An
    extent may be an affine expression of symbols (`af.sym(0)`: a dynamic size, bound by the
    view's size operands): `-d0 + s0 - 1 >= 0`, the set taking as many symbols as it names."""
    cons: list[af.Constraint] = []
    symbols = 0
    for i, e in enumerate(extents):
        d = af.dim(i)
        if isinstance(e, af.AffineExpr):
            form = af.linear(e)
            if form is None or form[0]:
                raise BuildError(f"box extent {i} is not a linear expression of symbols")
            symbols = max([symbols, *(s + 1 for s in form[1])])
        if i in fixed:
            cons.append(af.Constraint(expr=d, is_equality=True))
        else:
            upper = -d + e - 1 if isinstance(e, af.AffineExpr) else -d + (e - 1)
            cons += [af.Constraint(expr=d, is_equality=False), af.Constraint(expr=upper, is_equality=False)]
    return af.IntegerSet(num_dims=len(extents), num_symbols=symbols, constraints=tuple(cons))


def _mixed(entries: Sequence[int | Value]) -> tuple[list[int], list[Value]]:
    static: list[int] = []
    dynamic: list[Value] = []
    for e in entries:
        if isinstance(e, Value):
            static.append(KDYNAMIC)
            dynamic.append(e)
        else:
            static.append(e)
    return static, dynamic


def _segments(*sizes: int) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=ty.I32, values=tuple(sizes))


def _named_segments(op: str, **sizes: int) -> at.DenseArrayAttr:
    """`operandSegmentSizes` of `op` from each declared operand group's count, by name: the
    order is the definition's, and every group must be given."""
    declared = [o.name for o in OPS[op].operands]
    if sorted(declared) != sorted(sizes):
        raise BuildError(f"{op} declares operands {', '.join(declared)}, not {', '.join(sizes)}")
    return _segments(*(sizes[n] for n in declared))


_DESTINATIONS = ("outputs", "inits", "init")


def _infer(name: str, operands: Sequence[Value], attrs: dict[str, Attribute]) -> list[Type]:
    opdef = OPS.get(name)
    if opdef is None:
        raise BuildError(f"'{name}' is not a KTIR op: pass result_types")
    fmt = opdef.format
    if fmt in ("BINARY", "UNARY", "TERNARY") and operands:
        return [operands[0].type]
    if fmt == "CMP" and operands:
        return [i1_like(operands[0].type)]
    if fmt == "SELECT" and len(operands) == 3:
        return [operands[1].type]
    if fmt == "CONSTANT" and "value" in attrs:
        return [constant_type(attrs["value"])]
    if fmt in ("TERMINATOR", "STORE", "MEMREF_STORE", "CONDITION", "SCF_REDUCE", "IN_PARALLEL"):
        return []
    if fmt in ("DIM", "AFFINE_APPLY", "LINALG_INDEX"):
        return [ty.INDEX]
    if fmt == "EXTRACT" and operands:
        return [ty.element_type(operands[0].type)]
    if fmt == "INSERT" and len(operands) > 1:
        return [operands[1].type]
    if fmt in ("LINALG_NAMED", "LINALG_MAP", "LINALG_REDUCE", "LINALG_DIMS", "LINALG_GENERIC"):
        outs = next((o.name for o in opdef.operands if o.name in _DESTINATIONS), None)
        if outs is not None and isinstance(attrs.get("operandSegmentSizes"), at.DenseArrayAttr):
            op = Operation(name=name, operands=[v.name for v in operands], operand_types=[v.type for v in operands],
                           attributes=dict(attrs))
            try:
                return [t for t in named(op, opdef).operand_types(outs) if isinstance(t, ty.TensorType)]
            except AccessError as e:
                raise BuildError(f"cannot infer the result types of {name}: {e}") from None
    raise BuildError(f"cannot infer the result types of {name}: pass result_types")
