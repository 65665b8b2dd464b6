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
(memory views, access tiles, loops). Values are `Value(name, type)` handles; names are
generated unless given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ktir.dialects.registry import OPS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.attributes import constant_type
from ktir.ir.base import Attribute, Type
from ktir.ir.named_affine import AffineName, ssa_map
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.ir.types import KDYNAMIC, i1_like


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
        name = f"{self._dialect}.{mnemonic}"
        if name not in OPS:
            raise AttributeError(f"KTIR defines no op {name}")

        def build(*operands: Value, result_types: Sequence[Type] | None = None, **attributes: Any) -> Any:
            results = self._builder.create(name, list(operands), result_types, attributes)
            return results[0] if len(results) == 1 else (tuple(results) if results else None)

        build.__name__ = mnemonic
        build.__doc__ = OPS[name].summary
        return build


class Builder:
    """Appends ops to an insertion block; `module` holds everything built so far."""

    def __init__(self, module: Module | None = None) -> None:
        self.module = module or Module()
        self._blocks: list[Block] = []
        self._counter = 0
        self._top = Block()

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
        self._blocks.append(block)
        try:
            yield block
        finally:
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

    def append(self, op: Operation) -> list[Value]:
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
        names = list(result_names) if result_names is not None else [self.fresh() for _ in result_types]
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
        args = [BlockArgument(name=f"%{n}", type=t) for n, t in arguments]
        entry = Block(arguments=args)
        attrs: dict[str, Attribute] = {
            "sym_name": at.StringAttr(value=name),
            "function_type": at.TypeAttr(value=ty.FunctionType(inputs=tuple(t for _, t in arguments), results=tuple(results))),
        }
        if grid is not None:
            attrs["grid"] = at.ArrayAttr(elements=tuple(at.IntegerAttr(value=g) for g in grid))
        attrs.update({k: _attr(v) for k, v in (attributes or {}).items()})
        self.append(Operation(name="func.func", attributes=attrs, regions=[Region(blocks=[entry])]))
        with self.insert_into(entry):
            yield tuple(Value(a.name, a.type) for a in args)

    def func_return(self, *values: Value) -> None:
        self.create("func.return", list(values), [])

    # ------------------------------------------------------------ arith

    def constant(self, value: Any, type: Type | None = None) -> Value:
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
        return self.create("arith.constant", [], [constant_type(attr)], {"value": attr})[0]

    # ------------------------------------------------------------ ktdp

    def tile_id(self, rank: int = 1) -> list[Value]:
        return self.create("ktdp.get_compute_tile_id", [], [ty.INDEX] * rank)

    def memory_view(
        self,
        offset: Value,
        sizes: Sequence[int | Value],
        strides: Sequence[int | Value],
        element_type: Type,
        memory_space: at.MemorySpaceAttr | None = None,
        coordinate_set: Attribute | af.IntegerSet | None = None,
    ) -> Value:
        static_sizes, dyn_sizes = _mixed(sizes)
        static_strides, dyn_strides = _mixed(strides)
        attrs: dict[str, Any] = {
            "static_sizes": at.i64_array(static_sizes),
            "static_strides": at.i64_array(static_strides),
            "operandSegmentSizes": _segments(1, len(dyn_sizes), len(dyn_strides)),
            "memory_space": memory_space or at.MemorySpaceAttr(kind="global"),
        }
        if coordinate_set is not None:
            attrs["coordinate_set"] = coordinate_set
        shape = tuple(None if v == KDYNAMIC else v for v in static_sizes)
        result = ty.MemRefType(shape=shape, element_type=element_type)
        return self.create("ktdp.construct_memory_view", [offset, *dyn_sizes, *dyn_strides], [result], attrs)[0]

    def access_tile(
        self,
        base: Value,
        subscripts: Sequence[af.AffineExpr | Value | int],
        tile_set: Attribute | af.IntegerSet,
        shape: Sequence[int],
        order: Attribute | af.AffineMap | None = None,
        symbols: Sequence[Value] = (),
    ) -> Value:
        """`subscripts` are affine expressions over Values (use `ssa(v)`), Values or ints."""
        exprs = [_subscript(s) for s in subscripts]
        sm = ssa_map(exprs)
        indices = [Value(n, ty.INDEX) for n in sm.operands]  # subscripts are index values
        attrs: dict[str, Any] = {
            "base_map": at.AffineMapAttr(value=sm.map),
            "access_tile_set": tile_set,
            "access_tile_order": order if order is not None else af.AffineMap.identity(len(shape)),
            "operandSegmentSizes": _segments(1, len(indices), len(symbols)),
        }
        result = ty.AccessTileType(shape=tuple(shape))
        return self.create("ktdp.construct_access_tile", [base, *indices, *symbols], [result], attrs)[0]

    def load(self, tile: Value, element_type: Type) -> Value:
        assert isinstance(tile.type, ty.AccessTileType)
        return self.create("ktdp.load", [tile], [ty.TensorType(shape=tile.type.shape, element_type=element_type)])[0]

    def store(self, data: Value, tile: Value) -> None:
        self.create("ktdp.store", [data, tile], [])

    # ------------------------------------------------------------ scf

    @contextlib.contextmanager
    def for_(self, lb: Value, ub: Value, step: Value, inits: Sequence[Value] = ()) -> Iterator[tuple[Value, ...]]:
        """`scf.for`; yields (iv, *iter_args). Without inits the scf.yield is added for you."""
        iv = BlockArgument(name=self.fresh("iv"), type=lb.type)
        carried = [BlockArgument(name=self.fresh("acc"), type=v.type) for v in inits]
        body = Block(arguments=[iv, *carried])
        op = Operation(
            name="scf.for",
            operands=[lb.name, ub.name, step.name, *(v.name for v in inits)],
            operand_types=[lb.type, ub.type, step.type, *(v.type for v in inits)],
            results=[self.fresh() for _ in inits],
            result_types=[v.type for v in inits],
            regions=[Region(blocks=[body])],
        )
        self.append(op)
        self.last_results = [Value(n, t) for n, t in zip(op.results, op.result_types, strict=True)]
        with self.insert_into(body):
            yield tuple(Value(a.name, a.type) for a in body.arguments)
            if not inits and not (body.operations and body.operations[-1].name == "scf.yield"):
                self.create("scf.yield", [], [])

    def yield_(self, *values: Value, op: str = "scf.yield") -> None:
        self.create(op, list(values), [])


def ssa(value: Value) -> af.AffineExpr:
    """An affine leaf standing for an SSA value, for access tile subscripts."""
    return AffineName(name=value.name)


def _subscript(s: af.AffineExpr | Value | int) -> af.AffineExpr:
    if isinstance(s, Value):
        return ssa(s)
    if isinstance(s, int):
        return af.const(s)
    return s


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
        seg = attrs.get("operandSegmentSizes")
        if isinstance(seg, at.DenseArrayAttr):
            n_in = int(seg.values[0])
            return [v.type for v in operands[n_in:] if isinstance(v.type, ty.TensorType)]
    raise BuildError(f"cannot infer the result types of {name}: pass result_types")
