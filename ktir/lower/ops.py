"""A thin layer over `ktir.builder.Builder` for the lowering: readable SSA names, attribute
aliases shared across a module, and one helper per op the lowering emits."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ktir.builder import Builder, Value
from ktir.dialects.names import Affine, Arith, Ktdp, Linalg, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Block, BlockArgument, Module, Region

# arith.cmpi predicates by name (MLIR's enum order)
CMPI = {"eq": 0, "ne": 1, "slt": 2, "sle": 3, "sgt": 4, "sge": 5, "ult": 6, "ule": 7, "ugt": 8, "uge": 9}


def box_set(shape: Sequence[int]) -> af.IntegerSet:
    """`{ x | 0 <= x_i < shape_i }`."""
    constraints = []
    for i, n in enumerate(shape):
        constraints.append(af.constraint(af.dim(i), ">=", af.const(0)))
        constraints.append(af.constraint(af.dim(i), "<=", af.const(n - 1)))
    return af.IntegerSet(num_dims=len(shape), num_symbols=0, constraints=tuple(constraints))


def tile_set_range(num_tiles: int) -> af.IntegerSet:
    """`(i)[g] : 0 <= i < num_tiles`: every tile of a 1-D grid, as one group."""
    i = af.dim(0)
    return af.IntegerSet(
        num_dims=1,
        num_symbols=1,
        constraints=(af.constraint(i, ">=", af.const(0)), af.constraint(i, "<=", af.const(num_tiles - 1))),
    )


class ModuleContext:
    """The module being built and its attribute aliases (one name per distinct attribute)."""

    def __init__(self) -> None:
        self.module = Module()
        self.builder = Builder(self.module)
        self._aliases: dict[Attribute, str] = {}
        self._counts: dict[str, int] = {}

    def alias(self, attr: Attribute, hint: str) -> at.AttrAliasRef:
        name = self._aliases.get(attr)
        if name is None:
            n = self._counts.get(hint, 0)
            self._counts[hint] = n + 1
            name = hint if n == 0 else f"{hint}_{n}"
            self._aliases[attr] = name
            self.module.attr_aliases[name] = attr
            self.module.alias_order.append(f"#{name}")
        return at.AttrAliasRef(name=name)

    def box(self, shape: Sequence[int]) -> at.AttrAliasRef:
        return self.alias(at.IntegerSetAttr(value=box_set(shape)), "box_" + "x".join(map(str, shape)))

    def identity(self, rank: int) -> at.AttrAliasRef:
        return self.alias(at.AffineMapAttr(value=af.AffineMap.identity(rank)), f"id{rank}")

    def map(self, amap: af.AffineMap) -> Attribute:
        if amap == af.AffineMap.identity(amap.num_dims):
            return self.identity(amap.num_dims)
        return self.alias(at.AffineMapAttr(value=amap), "map")


class FuncEmitter:
    """Emits the ops of one function with unique, descriptive SSA names."""

    def __init__(self, ctx: ModuleContext) -> None:
        self.ctx = ctx
        self.b = ctx.builder
        self._used: set[str] = set()
        self._pending_comments: list[str] = []

    # ------------------------------------------------------------ names, comments

    def name(self, hint: str) -> str:
        base = "%" + "".join(c if c.isalnum() or c in "_$." else "_" for c in hint)
        name = base
        n = 1
        while name in self._used:
            name = f"{base}_{n}"
            n += 1
        self._used.add(name)
        return name

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def comment(self, *lines: str) -> None:
        """Attach comment lines to the next op emitted."""
        self._pending_comments.extend(lines)

    def op(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
           attributes: dict[str, Any] | None = None, regions: Sequence[Region] = (), hint: str = "v") -> list[Value]:
        names = [self.name(hint if len(result_types) == 1 else f"{hint}{i}") for i in range(len(result_types))]
        values = self.b.create(name, operands, list(result_types), attributes, regions, result_names=names)
        if self._pending_comments:
            self.b.block.operations[-1].comments.extend(f"// {line}" if line else "//" for line in self._pending_comments)
            self._pending_comments.clear()
        return values

    def one(self, name: str, operands: Sequence[Value], result_type: Type, attributes: dict[str, Any] | None = None,
            regions: Sequence[Region] = (), hint: str = "v") -> Value:
        return self.op(name, operands, [result_type], attributes, regions, hint)[0]

    @contextlib.contextmanager
    def block(self, block: Block) -> Iterator[Block]:
        with self.b.insert_into(block):
            yield block

    def block_arg(self, hint: str, type: Type) -> BlockArgument:
        return BlockArgument(name=self.name(hint), type=type)

    # ------------------------------------------------------------ scalars and index math

    def index(self, value: int, hint: str | None = None) -> Value:
        attr = at.IntegerAttr(value=value, type=ty.INDEX)
        return self.one(Arith.constant, [], ty.INDEX, {"value": attr}, hint=hint or f"c{value}".replace("-", "m"))

    def scalar(self, value: float, type: Type, hint: str = "cst") -> Value:
        if isinstance(type, ty.FloatType):
            attr: Attribute = _float_attr(value, type)
        else:
            attr = at.IntegerAttr(value=int(value), type=type)
        return self.one(Arith.constant, [], type, {"value": attr}, hint=hint)

    def dense_index(self, rows: Sequence[Sequence[int]], hint: str) -> Value:
        t = ty.TensorType(shape=(len(rows), len(rows[0])), element_type=ty.INDEX)
        attr = at.DenseAttr(type=t, values=tuple(tuple(r) for r in rows))
        return self.one(Arith.constant, [], t, {"value": attr}, hint=hint)

    def extract(self, tensor: Value, indices: Sequence[Value], hint: str) -> Value:
        assert isinstance(tensor.type, ty.TensorType)
        return self.one(Tensor.extract, [tensor, *indices], tensor.type.element_type, hint=hint)

    def apply(self, exprs: af.AffineExpr, hint: str) -> Value:
        """`affine.apply` of an expression over SSA values (`ssa(v)` leaves)."""
        from ktir.ir.named_affine import ssa_map

        sm = ssa_map([exprs])
        operands = [Value(n, ty.INDEX) for n in sm.operands]
        return self.one(Affine.apply, operands, ty.INDEX, {"map": at.AffineMapAttr(value=sm.map)}, hint=hint)

    def cmpi(self, predicate: str, lhs: Value, rhs: Value, hint: str) -> Value:
        attr = at.IntegerAttr(value=CMPI[predicate], type=ty.I64)
        return self.one(Arith.cmpi, [lhs, rhs], ty.I1, {"predicate": attr}, hint=hint)

    # ------------------------------------------------------------ ktdp

    def tile_id(self, hint: str = "core") -> Value:
        return self.one(Ktdp.get_compute_tile_id, [], ty.INDEX, hint=hint)

    def memory_view(self, offset: Value, shape: Sequence[int], strides: Sequence[int], element: Type,
                    space: at.MemorySpaceAttr, hint: str) -> Value:
        attrs: dict[str, Any] = {
            "static_sizes": at.i64_array(list(shape)),
            "static_strides": at.i64_array(list(strides)),
            "operandSegmentSizes": _segments(1, 0, 0),
            "memory_space": space,
            "coordinate_set": self.ctx.box(shape),
        }
        memref_space = space if space.kind != "global" else None
        result = ty.MemRefType(shape=tuple(shape), element_type=element, memory_space=memref_space)
        return self.one(Ktdp.construct_memory_view, [offset], result, attrs, hint=hint)

    def access_tile(self, view: Value, subscripts: Sequence[af.AffineExpr], shape: Sequence[int], hint: str) -> Value:
        from ktir.ir.named_affine import ssa_map

        sm = ssa_map(list(subscripts))
        indices = [Value(n, ty.INDEX) for n in sm.operands]
        attrs: dict[str, Any] = {
            "base_map": at.AffineMapAttr(value=sm.map),
            "access_tile_set": self.ctx.box(shape),
            "access_tile_order": self.ctx.identity(len(shape)),
            "operandSegmentSizes": _segments(1, len(indices), 0),
        }
        return self.one(Ktdp.construct_access_tile, [view, *indices], ty.AccessTileType(shape=tuple(shape)), attrs, hint=hint)

    def load(self, tile: Value, element: Type, hint: str) -> Value:
        assert isinstance(tile.type, ty.AccessTileType)
        return self.one(Ktdp.load, [tile], ty.TensorType(shape=tile.type.shape, element_type=element), hint=hint)

    def store(self, data: Value, tile: Value) -> None:
        self.op(Ktdp.store, [data, tile], [])

    # ------------------------------------------------------------ tensors and linalg

    def empty(self, shape: Sequence[int], element: Type, hint: str = "init") -> Value:
        return self.one(Tensor.empty, [], ty.TensorType(shape=tuple(shape), element_type=element), hint=hint)

    def fill(self, scalar: Value, init: Value, hint: str) -> Value:
        return self.one(Linalg.fill, [scalar, init], init.type, {"operandSegmentSizes": _segments(1, 1)}, hint=hint)

    def named(self, name: str, inputs: Sequence[Value], init: Value, hint: str) -> Value:
        """A named linalg op in destination style: `linalg.<name> ins(...) outs(init)`."""
        return self.one(name, [*inputs, init], init.type, {"operandSegmentSizes": _segments(len(inputs), 1)}, hint=hint)

    def transpose(self, value: Value, permutation: Sequence[int], hint: str) -> Value:
        assert isinstance(value.type, ty.TensorType)
        shape = [value.type.shape[p] for p in permutation]
        init = self.empty([int(d) for d in shape if d is not None], value.type.element_type, hint=f"{hint}_init")
        attrs = {"operandSegmentSizes": _segments(1, 1), "permutation": at.i64_array(list(permutation))}
        return self.one(Linalg.transpose, [value, init], init.type, attrs, hint=hint)

    def collapse(self, value: Value, groups: Sequence[Sequence[int]], hint: str) -> Value:
        assert isinstance(value.type, ty.TensorType)
        shape = tuple(math.prod(int(value.type.shape[i] or 0) for i in g) for g in groups)
        result = ty.TensorType(shape=shape, element_type=value.type.element_type)
        return self.one(Tensor.collapse_shape, [value], result, {"reassociation": _reassociation(groups)}, hint=hint)

    def expand(self, value: Value, groups: Sequence[Sequence[int]], shape: Sequence[int], hint: str) -> Value:
        assert isinstance(value.type, ty.TensorType)
        result = ty.TensorType(shape=tuple(shape), element_type=value.type.element_type)
        attrs = {"reassociation": _reassociation(groups), "static_output_shape": at.i64_array(list(shape))}
        return self.one(Tensor.expand_shape, [value], result, attrs, hint=hint)

    def generic(self, inputs: Sequence[Value], inits: Sequence[Value], maps: Sequence[af.AffineMap],
                iterators: Sequence[str], body: Callable[[FuncEmitter, list[Value]], list[Value]], hint: str) -> list[Value]:
        """`linalg.generic`; `body(emitter, [in elements..., out elements...])` returns the yielded values."""
        args = [self.block_arg(f"{hint}_{'in' if i < len(inputs) else 'acc'}", ty.element_type(v.type))
                for i, v in enumerate([*inputs, *inits])]
        block = Block(arguments=args)
        with self.block(block):
            yielded = body(self, [Value(a.name, a.type) for a in args])
            self.op(Linalg.yield_, yielded, [])
        attrs = {
            "indexing_maps": at.ArrayAttr(elements=tuple(self.ctx.map(m) for m in maps)),
            "iterator_types": at.ArrayAttr(elements=tuple(at.StringAttr(value=it) for it in iterators)),
            "operandSegmentSizes": _segments(len(inputs), len(inits)),
        }
        return self.op(Linalg.generic, [*inputs, *inits], [v.type for v in inits], attrs, [Region(blocks=[block])], hint=hint)

    def scalar_op(self, name: str, operands: Sequence[Value], hint: str) -> Value:
        return self.one(name, operands, operands[0].type, hint=hint)


def _segments(*sizes: int) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=ty.I32, values=tuple(sizes))


def _reassociation(groups: Sequence[Sequence[int]]) -> at.ArrayAttr:
    return at.ArrayAttr(elements=tuple(at.ArrayAttr(elements=tuple(at.IntegerAttr(value=i, type=ty.I64) for i in g)) for g in groups))


def _float_attr(value: float, type: ty.FloatType) -> at.FloatAttr:
    if math.isinf(value):
        # infinities are written as bit patterns, as MLIR prints them
        bits = {"f16": 0x7C00, "f32": 0x7F800000, "bf16": 0x7F80}.get(type.kind)
        if bits is not None:
            sign = {"f16": 0x8000, "f32": 0x80000000, "bf16": 0x8000}[type.kind] if value < 0 else 0
            return at.FloatAttr(value=value, type=type, bits=bits | sign)
    return at.FloatAttr(value=value, type=type)


__all__ = ["CMPI", "FuncEmitter", "ModuleContext", "box_set", "tile_set_range"]
