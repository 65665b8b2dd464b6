"""Compare a program with MLIR's re-print of it: the same AST up to what MLIR renames.

MLIR renumbers SSA values (`%0`, `%arg0`) and block labels, replaces the aliases a file
defines by its own (`#map`, `#set`) or prints inline, and wraps top-level ops that are
not one `builtin.module` into one. It also stores some attributes in a normal form that
prints differently but means the same: affine expressions simplified and reordered
(`s0 - d0 * 64` as `d0 * -64 + s0`, `(x + 8) mod 8` as `x mod 8`), the empty set's
`0 == 0`, a dense list of equal elements as a splat, an untyped integer attribute as
`i64`, and an unnamed result given a name. `canonical` undoes exactly those; everything
else (ops, operands, types, attributes, regions) must be equal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel

from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region


class _Canon:
    def __init__(self, module: Module) -> None:
        self.module = module
        self.scopes: list[dict[str, str]] = [{}]
        self.count = 0
        self.labels: dict[str, str] = {}

    # ------------------------------------------------------------ aliases

    def inline(self, obj: Any, depth: int = 0) -> Any:
        """`obj` with every attribute and type alias replaced by what it names."""
        if depth > 200:
            return obj
        if isinstance(obj, at.AttrAliasRef) and obj.name in self.module.attr_aliases:
            return self.inline(self.module.attr_aliases[obj.name], depth + 1)
        if isinstance(obj, ty.TypeAliasRef) and obj.name in self.module.type_aliases:
            return self.inline(self.module.type_aliases[obj.name], depth + 1)
        if isinstance(obj, at.AffineMapAttr):
            m = obj.value
            return ("affine_map", m.num_dims, m.num_symbols, tuple(_expr_key(e) for e in m.results))
        if isinstance(obj, at.IntegerSetAttr):
            # MLIR writes an empty set `() : ()` as `() : (0 == 0)`: drop constant, true constraints
            cs = obj.value
            keys = tuple((c.is_equality, _expr_key(c.expr)) for c in cs.constraints if not _trivially_true(c))
            return ("affine_set", cs.num_dims, cs.num_symbols, keys)
        if isinstance(obj, at.IntegerAttr) and obj.type is None:
            return obj.model_copy(update={"type": ty.I64})  # MLIR's type of an untyped integer attribute
        if isinstance(obj, at.FloatAttr) and obj.type is not None and math.isfinite(obj.value):
            # KTIR keeps a float as written (65500.0 : f16); MLIR rounds it to the type (65504)
            return at.FloatAttr(value=_rounded(obj.value, obj.type), type=obj.type)
        if isinstance(obj, at.DenseAttr) and (obj.hex is not None or isinstance(obj.values, tuple)):
            obj = _decoded(obj)
        if isinstance(obj, at.DenseAttr) and isinstance(obj.values, tuple):
            flat = list(_flatten(obj.values))
            if flat and all(v == flat[0] and type(v) is type(flat[0]) for v in flat):
                # MLIR stores a dense list of equal elements as a splat and prints it so
                return obj.model_copy(update={"values": flat[0]})
            return obj
        if isinstance(obj, tuple):
            return tuple(self.inline(x, depth + 1) for x in obj)
        if isinstance(obj, list):
            return [self.inline(x, depth + 1) for x in obj]
        if isinstance(obj, dict):
            return {k: self.inline(v, depth + 1) for k, v in obj.items()}
        if isinstance(obj, at.Attribute | ty.Type) and isinstance(obj, BaseModel):
            update = {}
            for name in type(obj).model_fields:
                value = getattr(obj, name)
                new = self.inline(value, depth + 1)
                if new is not value:
                    update[name] = new
            return obj.model_copy(update=update) if update else obj
        return obj

    # ------------------------------------------------------------ names

    def define(self, name: str) -> str:
        """A fresh positional name for a definition; uses see it through the scope stack
        (names may be reused in sibling regions, so a single table would conflate them)."""
        self.count += 1
        self.scopes[-1][name] = f"%v{self.count}"
        return self.scopes[-1][name]

    def use(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return name

    def label(self, name: str) -> str:
        return self.labels.setdefault(name, f"^b{len(self.labels)}")

    def op(self, op: Operation) -> Operation:
        operands = [self.use(v) for v in op.operands]
        regions = [self.region(r) for r in op.regions]
        # a result left unnamed in the text (`linalg.add ins(...) ...`) is still a value
        results = op.results or [f"%unnamed{i}" for i in range(len(op.result_types))]
        return Operation.model_construct(
            name=op.name,
            operands=operands,
            operand_types=self.inline(op.operand_types),
            results=[self.define(r) for r in results],
            result_types=self.inline(op.result_types),
            attributes=self.inline(op.attributes),
            properties=self.inline(op.properties),
            regions=regions,
            successors=[self.label(s) for s in op.successors],
        )

    def region(self, region: Region) -> Region:
        self.scopes.append({})
        outer_labels, self.labels = self.labels, {}
        # labels first: a branch may name a block defined after it
        labels = [self.label(b.label or f"^entry{i}") for i, b in enumerate(region.blocks)]
        blocks = []
        for label, block in zip(labels, region.blocks, strict=True):
            args = [BlockArgument(name=self.define(a.name), type=self.inline(a.type)) for a in block.arguments]
            blocks.append(Block(label=label if len(region.blocks) > 1 else None, arguments=args,
                                operations=[self.op(o) for o in block.operations]))
        self.scopes.pop()
        self.labels = outer_labels
        return Region(blocks=blocks)


def _expr_key(expr: af.AffineExpr) -> object:
    """Equal for affine expressions MLIR's simplifier would print the same (it reorders
    sums: `s0 - d0 * 64` prints `d0 * -64 + s0`)."""
    lin = af.linear(expr)
    if lin is not None:
        return ("linear", tuple(sorted(lin[0].items())), tuple(sorted(lin[1].items())), lin[2])
    if isinstance(expr, af.Binary):
        lhs, rhs = _expr_key(expr.lhs), _expr_key(expr.rhs)
        modulus = af.linear(expr.rhs)
        lin_lhs = af.linear(expr.lhs)
        if expr.kind == "mod" and modulus is not None and not modulus[0] and not modulus[1] and modulus[2] > 0 and lin_lhs:
            # MLIR drops multiples of the modulus: `(d0 - d1 + 8) mod 8` prints `(d0 - d1) mod 8`
            c = modulus[2]
            dims = tuple(sorted((k, v) for k, v in lin_lhs[0].items() if v % c))
            syms = tuple(sorted((k, v) for k, v in lin_lhs[1].items() if v % c))
            lhs = ("linear", dims, syms, lin_lhs[2] % c)
        if expr.kind in ("add", "mul"):
            lhs, rhs = sorted((lhs, rhs), key=repr)
        return (expr.kind, lhs, rhs)
    return expr


def _trivially_true(c: af.Constraint) -> bool:
    lin = af.linear(c.expr)
    return lin is not None and not lin[0] and not lin[1] and (lin[2] == 0 if c.is_equality else lin[2] >= 0)


def _rounded(value: float, t: ty.Type) -> float:
    from reference_interp.dtypes import UnsupportedType, np_dtype

    try:
        return float(np.asarray(value, np.float64).astype(np_dtype(t)).astype(np.float64))
    except UnsupportedType:
        return value


def _decoded(obj: at.DenseAttr) -> at.DenseAttr:
    """A dense attribute as MLIR stores it: a hex blob decoded (MLIR prints small ones as a
    list) and float elements rounded to the element type."""
    from reference_interp.ops.common import dense_value

    try:
        arr = dense_value(obj, obj.type)
    except Exception:  # noqa: BLE001 - a type the interpreter has no dtype for: compare as written
        return obj
    if arr.dtype.kind not in "biu":
        arr = arr.astype(np.float64)
    values = _tuples(arr.tolist())
    return obj.model_copy(update={"values": values, "hex": None})


def _tuples(values: Any) -> Any:
    return tuple(_tuples(v) for v in values) if isinstance(values, list) else values


def _flatten(values: Any) -> Any:
    if isinstance(values, tuple):
        for v in values:
            yield from _flatten(v)
    else:
        yield values


def canonical(module: Module) -> list[Operation]:
    """The module's top-level ops, alias-free, positionally named, outside any implicit module."""
    canon = _Canon(module)
    ops = [canon.op(o) for o in module.operations]
    if len(ops) == 1 and ops[0].name == "builtin.module" and not ops[0].attributes and ops[0].regions:
        inner = ops[0].regions[0].blocks
        if len(inner) == 1 and not inner[0].arguments:
            return inner[0].operations
    return ops


def same_program(original: Module, reprinted: Module) -> bool:
    """True when MLIR's re-print is the original program up to names, aliases and the implicit module."""
    return canonical(original) == canonical(reprinted)
