"""What MLIR 22 stores on an op that KTIR's AST leaves implicit, both ways.

KTIR's AST is the custom form's: a named linalg op has no body, `fastmath<none>` is
absent, `iterator_types` are strings. MLIR's generic form spells everything out: the
body MLIR builds for `linalg.add`, default-valued properties, enum attributes, and
`operandSegmentSizes` exactly where the op declares `AttrSizedOperandSegments`.

`to_mlir` gives an op's generic fields (properties, discardable attributes, regions) as
MLIR 22 prints them; `from_mlir` folds what MLIR printed back into KTIR's AST, so the
generic print of a program reads back equal to the program. Ops KTIR does not define
pass through both unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ktir.dialects.names import Arith, Builtin, Func, Ktdp, Linalg, Math, Memref, Scf
from ktir.dialects.registry import OPS, contractions
from ktir.dialects.structure import einsum_loops
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.syntax.limits import INT64_MAX

_NONE_FASTMATH = at.EnumAttr(dialect="arith", name="fastmath", value="none")
_NONE_OVERFLOW = at.EnumAttr(dialect="arith", name="overflow", value="none")

# Ops whose default-valued `fastmath` / `overflowFlags` property MLIR 22 always prints.
_FASTMATH_OPS = frozenset(
    [f"arith.{n}" for n in ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf", "maxnumf", "minnumf", "negf", "cmpf")]
    + [
        f"math.{n}"
        for n in ["absf", "atan", "atan2", "ceil", "copysign", "cos", "erf", "exp", "exp2", "expm1", "floor", "fma", "log", "log10", "log1p", "log2", "powf", "round", "roundeven", "rsqrt", "sin", "sqrt", "tan", "tanh", "trunc"]
    ]
)
_OVERFLOW_OPS = frozenset(f"arith.{n}" for n in ("addi", "subi", "muli", "shli", "trunci"))

# Inherent attributes beyond those an op definition lists (MLIR keeps them in `<{...}>`).
_ALWAYS_INHERENT = frozenset({"operandSegmentSizes", "fastmath", "overflowFlags", "roundingmode"})
_EXTRA_INHERENT: dict[str, frozenset[str]] = {
    Scf.forall: frozenset({"staticLowerBound", "staticUpperBound", "staticStep", "mapping"}),
    Builtin.module: frozenset({"sym_visibility"}),
    Func.func: frozenset({"no_inline"}),
    Scf.for_: frozenset({"unsignedCmp"}),
}
# Attributes an op definition lists that MLIR treats as discardable.
_DISCARDABLE = frozenset({"grid"})

# KTIR keeps `operandSegmentSizes` on these (ins/outs), MLIR 22 does not declare it.
_NO_SEGMENTS = frozenset({Linalg.map, Linalg.reduce, Linalg.broadcast, Linalg.transpose})
# MLIR 22 declares segments (dynamic sizes, symbol operands) that KTIR's form leaves out.
_ALLOC_SEGMENTS = frozenset({Memref.alloc, Memref.alloca})

_RUNTIME_KINDS = ("value", "granularity", "upperbound")

# KTIR's transposed matmuls, which MLIR 22 spells as linalg.matmul / batch_matmul with
# these operand maps; the discardable NAMED_OP attribute keeps the KTIR name through MLIR.
NAMED_OP = "ktir.named_op"
# (the op MLIR 22 has, its number of loops, the operand maps: from the einsum letters)
_TRANSPOSED: dict[str, tuple[str, int, tuple[tuple[int, ...], ...]]] = {
    name: (base, len(einsum_loops(contractions()[name])[0]) + 1, einsum_loops(contractions()[name]))
    for name, base in (
        (Linalg.matmul_transpose_a, Linalg.matmul),
        (Linalg.matmul_transpose_b, Linalg.matmul),
        (Linalg.batch_matmul_transpose_b, Linalg.batch_matmul),
    )
}

# Stock MLIR takes only builtin attributes (integer, string, dictionary) or a registered
# dialect's as a memref memory space; `#ktdp.memory_space<...>` travels as this string.
_SPACE_STRING = re.compile(r"#ktdp\.memory_space<(global|ct_local)(?:, ct_id = (\d+))?>\Z")


def memory_space_string(space: at.MemorySpaceAttr) -> at.StringAttr:
    extra = f", ct_id = {space.ct_id}" if space.ct_id is not None else ""
    return at.StringAttr(value=f"#ktdp.memory_space<{space.kind}{extra}>")


def memory_space_from_string(space: Attribute | None) -> Attribute | None:
    """`"#ktdp.memory_space<global>"` (a string memory space, as written for stock MLIR)
    as the attribute it spells; any other memory space unchanged."""
    if not isinstance(space, at.StringAttr) or space.type is not None:
        return space
    m = _SPACE_STRING.match(space.value)
    if m is None:
        return space
    digits = m.group(2)
    if digits is not None and (len(digits.lstrip("0")) > 19 or int(digits) > INT64_MAX):
        return space  # kept as written, for the verifier to refuse (type.memory_space), and printed back so
    kind = "global" if m.group(1) == "global" else "ct_local"
    return at.MemorySpaceAttr(kind=kind, ct_id=int(digits) if digits is not None else None)


def inherent(op: Operation) -> frozenset[str]:
    """Names of `op`'s attributes that MLIR 22 prints as properties (`<{...}>`)."""
    opdef = OPS.get(op.name)
    if opdef is None:
        return frozenset()
    names = {a.name for a in opdef.attributes} - _DISCARDABLE
    names |= _ALWAYS_INHERENT | _EXTRA_INHERENT.get(op.name, frozenset())
    if opdef.format == "LINALG_NAMED":
        names.add("indexing_maps")
    return frozenset(names)


@dataclass
class GenericFields:
    name: str
    properties: dict[str, Attribute]
    attributes: dict[str, Attribute]
    regions: list[Region]


# ---------------------------------------------------------------- AST -> MLIR


def to_mlir(op: Operation, fresh: Callable[[str], str]) -> GenericFields:
    """`op`'s generic fields as MLIR 22 prints them. `fresh(hint)` names new SSA values
    (the bodies of named linalg ops), unique in the printed text."""
    attrs = dict(op.attributes)
    regions = list(op.regions)
    if op.name in _FASTMATH_OPS:
        attrs.setdefault("fastmath", _NONE_FASTMATH)
    if op.name in _OVERFLOW_OPS:
        attrs.setdefault("overflowFlags", _NONE_OVERFLOW)
    if op.name in _NO_SEGMENTS and attrs.get("operandSegmentSizes") == _ktir_segments(op):
        del attrs["operandSegmentSizes"]  # what reading the generic form recomputes
    if op.name in _ALLOC_SEGMENTS and "operandSegmentSizes" not in attrs:
        attrs["operandSegmentSizes"] = _segments(len(op.operands), 0)
    if op.name == Linalg.generic:
        iterators = attrs.get("iterator_types")
        if isinstance(iterators, at.ArrayAttr):
            attrs["iterator_types"] = at.ArrayAttr(elements=tuple(_iterator_enum(e) for e in iterators.elements))
    if op.name == Ktdp.runtime_arg_extract:
        kind = attrs.get("kind")
        if isinstance(kind, at.EnumAttr) and kind.value in _RUNTIME_KINDS:
            attrs["kind"] = at.IntegerAttr(value=_RUNTIME_KINDS.index(kind.value), type=ty.I32)  # upstream's I32 enum
    if op.name == Ktdp.construct_indirect_access_tile:
        kinds = attrs.get("per_dim_subscript_kinds")
        if isinstance(kinds, at.DenseArrayAttr) and kinds.element_type == ty.I1:
            attrs["per_dim_subscript_kinds"] = at.ArrayAttr(elements=tuple(at.BoolAttr(value=bool(v)) for v in kinds.values))
    opdef = OPS.get(op.name)
    name = op.name
    if op.name in _TRANSPOSED and "indexing_maps" not in attrs:
        name, n_dims, operand_maps = _TRANSPOSED[op.name]
        attrs["indexing_maps"] = at.ArrayAttr(elements=tuple(_map(n_dims, m) for m in operand_maps))
        attrs[NAMED_OP] = at.StringAttr(value=op.name)
    if opdef is not None and opdef.format in ("LINALG_NAMED", "LINALG_DIMS") and not regions:
        maps = default_indexing_maps(op.name)
        if maps is not None:
            attrs.setdefault("indexing_maps", maps)
        body = named_body(op, fresh)
        if body is not None:
            regions = [body]
    names = inherent(op)
    props = {k: v for k, v in attrs.items() if k in names}
    rest = {k: v for k, v in attrs.items() if k not in names}
    if op.properties:
        props.update(op.properties)
    return GenericFields(name, props, rest, regions)


def _segments(*sizes: int) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=ty.I32, values=tuple(sizes))


def _iterator_enum(a: Attribute) -> Attribute:
    # only a word reads back as an enum (`#linalg.iterator_type<p%x>` is a dialect attribute's
    # text): any other string stays a string, for the verifier to reject
    if isinstance(a, at.StringAttr) and a.type is None and a.value.replace("_", "").isalnum() and a.value[:1].isalpha():
        return at.EnumAttr(dialect="linalg", name="iterator_type", value=a.value)
    return a


# ---------------------------------------------------------------- MLIR -> AST


def from_mlir(op: Operation) -> Operation:
    """Fold MLIR's generic spelling of a defined op back into KTIR's AST (in place)."""
    attrs = op.attributes
    for key, default in (("fastmath", _NONE_FASTMATH), ("overflowFlags", _NONE_OVERFLOW)):
        flag = attrs.get(key)
        if isinstance(flag, at.DialectAttr) and flag.dialect == "arith" and flag.body and flag.body.strip():
            # `#arith.overflow<nsw, nuw>`: the custom form's `overflow<nsw,nuw>`
            flag = at.EnumAttr(dialect="arith", name=flag.name, value=flag.body.replace(" ", ""))
            attrs[key] = flag
        if flag == default and op.name in (_FASTMATH_OPS | _OVERFLOW_OPS):
            del attrs[key]
    if op.name in _NO_SEGMENTS and "operandSegmentSizes" not in attrs:
        attrs["operandSegmentSizes"] = _ktir_segments(op)
    if op.name in _ALLOC_SEGMENTS:
        seg = attrs.get("operandSegmentSizes")
        if seg == _segments(len(op.operands), 0):
            del attrs["operandSegmentSizes"]
    if op.name == Linalg.generic:
        iterators = attrs.get("iterator_types")
        if isinstance(iterators, at.ArrayAttr):
            attrs["iterator_types"] = at.ArrayAttr(elements=tuple(_iterator_string(e) for e in iterators.elements))
    if op.name == Ktdp.runtime_arg_extract:
        kind = attrs.get("kind")
        if isinstance(kind, at.IntegerAttr) and kind.type == ty.I32 and 0 <= kind.value < len(_RUNTIME_KINDS):
            attrs["kind"] = at.EnumAttr(dialect="ktdp", name="runtime_arg_kind", value=_RUNTIME_KINDS[kind.value])
    if op.name == Ktdp.construct_indirect_access_tile:
        kinds = attrs.get("per_dim_subscript_kinds")
        if isinstance(kinds, at.ArrayAttr) and all(isinstance(e, at.BoolAttr) for e in kinds.elements):
            values = tuple(int(e.value) for e in kinds.elements if isinstance(e, at.BoolAttr))
            attrs["per_dim_subscript_kinds"] = at.DenseArrayAttr(element_type=ty.I1, values=values)
    named = attrs.get(NAMED_OP)
    if isinstance(named, at.StringAttr) and named.value in _TRANSPOSED and op.name == _TRANSPOSED[named.value][0]:
        _, n_dims, operand_maps = _TRANSPOSED[named.value]
        if attrs.get("indexing_maps") == at.ArrayAttr(elements=tuple(_map(n_dims, m) for m in operand_maps)):
            op.name = named.value
            del attrs[NAMED_OP], attrs["indexing_maps"]
    opdef = OPS.get(op.name)
    if opdef is not None and opdef.format == "LINALG_NAMED":
        # MLIR's cache of the maps a named op derives from its name, added when verified
        attrs.pop("linalg.memoized_indexing_maps", None)
    if opdef is not None and opdef.format in ("LINALG_NAMED", "LINALG_DIMS"):
        if len(op.regions) == 1:
            # the body MLIR builds for a named op is implied by its name and types: drop it,
            # but only when it is exactly that body (anything else stays, for the verifier)
            counter = iter(range(1 << 30))
            implied = named_body(op, lambda hint: f"%{hint}{next(counter)}")
            if implied is not None and alpha_key(implied) == alpha_key(op.regions[0]):
                op.regions = []
        # default maps are no maps, as in the custom form (MLIR materialises them; with
        # element types no body is built for, there is no body either)
        maps = attrs.get("indexing_maps")
        if not op.regions and maps is not None and maps == default_indexing_maps(op.name):
            del attrs["indexing_maps"]
    return op


def _ktir_segments(op: Operation) -> at.DenseArrayAttr:
    n = len(op.operands)
    if op.name == Linalg.map:
        return _segments(n - 1, 1)
    if op.name == Linalg.reduce:
        return _segments(n // 2, n - n // 2)
    return _segments(1, n - 1)


def _iterator_string(a: Attribute) -> Attribute:
    if isinstance(a, at.EnumAttr) and a.dialect == "linalg" and a.name == "iterator_type":
        return at.StringAttr(value=a.value)
    return a


# ---------------------------------------------------------------- type rewriting


def map_types(module: Module, fn: Callable[[Type], Type]) -> Module:
    """A copy of `module` with `fn` applied to every type, wherever it is written:
    operand, result and block argument types, type attributes, types inside types and
    attributes, and type alias definitions. Untouched parts are shared, not copied."""

    def visit(obj: Any) -> Any:
        if isinstance(obj, tuple):
            items = tuple(visit(x) for x in obj)
            return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
        if isinstance(obj, list):
            items_l = [visit(x) for x in obj]
            return obj if all(a is b for a, b in zip(items_l, obj, strict=True)) else items_l
        if isinstance(obj, dict):
            items_d = {k: visit(v) for k, v in obj.items()}
            return obj if all(items_d[k] is v for k, v in obj.items()) else items_d
        if not isinstance(obj, BaseModel):
            return obj
        update = {}
        for name in type(obj).model_fields:
            value = getattr(obj, name)
            new = visit(value)
            if new is not value:
                update[name] = new
        out = obj.model_copy(update=update) if update else obj
        return fn(out) if isinstance(out, Type) else out

    result = visit(module)
    assert isinstance(result, Module)
    return result


# ---------------------------------------------------------------- structural equality


def alpha_key(region: Region) -> tuple[object, ...]:
    """A region's structure with SSA values and block labels numbered in order of
    definition: two regions that differ only in names get equal keys."""
    names: dict[str, str] = {}

    def name(value: str) -> str:
        return names.setdefault(value, f"%{len(names)}")

    def ops(block: Block) -> Iterator[object]:
        for arg in block.arguments:
            yield ("arg", name(arg.name), arg.type)
        for op in block.operations:
            operands = tuple(names.get(v, v) for v in op.operands)
            regions = tuple(alpha_key(r) for r in op.regions)
            yield (op.name, operands, tuple(op.operand_types), tuple(sorted(op.attributes.items())), op.properties, regions,
                   tuple(op.result_types), tuple(name(r) for r in op.results))

    return tuple(tuple(ops(b)) for b in region.blocks)


# ---------------------------------------------------------------- named linalg bodies

_UNARY = {
    Linalg.exp: Math.exp, Linalg.log: Math.log, Linalg.abs: Math.absf, Linalg.floor: Math.floor,
    Linalg.negf: Arith.negf, Linalg.sqrt: Math.sqrt, Linalg.rsqrt: Math.rsqrt, Linalg.tanh: Math.tanh,
    Linalg.erf: Math.erf,
}  # fmt: skip
_BINARY = {  # (float op, integer op)
    Linalg.add: (Arith.addf, Arith.addi), Linalg.sub: (Arith.subf, Arith.subi),
    Linalg.mul: (Arith.mulf, Arith.muli), Linalg.div: (Arith.divf, Arith.divsi),
    Linalg.max: (Arith.maximumf, Arith.maxsi), Linalg.min: (Arith.minimumf, Arith.minsi),
    Linalg.powf: (Math.powf, None),
}  # fmt: skip
_CONTRACTIONS = frozenset(contractions())
_PASS_THROUGH = frozenset({Linalg.fill, Linalg.copy, Linalg.broadcast, Linalg.transpose})


class _Body:
    """Builds one block in the order MLIR's region builder emits its ops."""

    def __init__(self, fresh: Callable[[str], str], arg_types: list[Type]) -> None:
        self.fresh = fresh
        self.args = [BlockArgument(name=fresh("out" if i == len(arg_types) - 1 else "in"), type=t) for i, t in enumerate(arg_types)]
        self.ops: list[Operation] = []

    def op(self, name: str, operands: list[tuple[str, Type]], result: Type, attrs: dict[str, Attribute] | None = None) -> str:
        value = self.fresh("v")
        self.ops.append(Operation(name=name, operands=[v for v, _ in operands], operand_types=[t for _, t in operands],
                                  results=[value], result_types=[result], attributes=attrs or {}))
        return value

    def cast(self, value: str, src: Type, dst: Type) -> str | None:
        """MLIR's `cast_signed(dst, value)`; None when no single arith cast does it."""
        if src == dst:
            return value
        name = _cast_op(src, dst)
        return None if name is None else self.op(name, [(value, src)], dst)

    def region(self, result: str, result_type: Type) -> Region:
        yield_op = Operation(name=Linalg.yield_, operands=[result], operand_types=[result_type])
        return Region(blocks=[Block(arguments=self.args, operations=[*self.ops, yield_op])])


def _cast_op(src: Type, dst: Type) -> str | None:
    if isinstance(src, ty.FloatType) and isinstance(dst, ty.FloatType):
        return Arith.extf if dst.width > src.width else Arith.truncf if dst.width < src.width else None
    if isinstance(src, ty.IntegerType) and isinstance(dst, ty.IntegerType):
        return Arith.extsi if dst.width > src.width else Arith.trunci
    if isinstance(src, ty.IntegerType | ty.FloatType) and isinstance(dst, ty.IntegerType | ty.FloatType):
        return Arith.sitofp if isinstance(dst, ty.FloatType) else Arith.fptosi  # int -> float, float -> int
    integer = isinstance(src, ty.IntegerType) or isinstance(dst, ty.IntegerType)
    if isinstance(src, ty.IndexType) != isinstance(dst, ty.IndexType) and integer:
        return Arith.index_cast
    return None


def named_body(op: Operation, fresh: Callable[[str], str]) -> Region | None:
    """The body MLIR 22 builds for a named linalg op from its name and element types, or
    None for an op or type combination it has no builder for."""
    elems = [ty.element_type(t) for t in op.operand_types]
    if not elems:
        return None
    out = elems[-1]
    is_float, is_int = isinstance(out, ty.FloatType), isinstance(out, ty.IntegerType | ty.IndexType)
    body = _Body(fresh, elems)
    args = [(a.name, a.type) for a in body.args]
    if op.name in _PASS_THROUGH and len(args) == 2:
        value = body.cast(args[0][0], args[0][1], out)
        return None if value is None else body.region(value, out)
    if op.name in _UNARY and len(args) == 2 and is_float and args[0][1] == out:
        return body.region(body.op(_UNARY[op.name], [args[0]], out), out)
    if op.name == Linalg.reciprocal and len(args) == 2 and is_float and args[0][1] == out:
        one = body.op(Arith.constant, [], out, {"value": at.FloatAttr(value=1.0, type=out)})
        return body.region(body.op(Arith.divf, [(one, out), args[0]], out), out)
    if op.name == Linalg.square and len(args) == 2 and is_float and args[0][1] == out:
        return body.region(body.op(Arith.mulf, [args[0], args[0]], out), out)
    if op.name in _BINARY and len(args) == 3 and args[0][1] == args[1][1] == out:
        name = _BINARY[op.name][0] if is_float else _BINARY[op.name][1] if is_int else None
        return None if name is None else body.region(body.op(name, [args[0], args[1]], out), out)
    if op.name in _CONTRACTIONS and len(args) == 3 and (is_float or is_int):
        lhs = body.cast(args[0][0], args[0][1], out)
        rhs = body.cast(args[1][0], args[1][1], out)
        if lhs is None or rhs is None:
            return None
        mul = body.op(Arith.mulf if is_float else Arith.muli, [(lhs, out), (rhs, out)], out)
        return body.region(body.op(Arith.addf if is_float else Arith.addi, [args[2], (mul, out)], out), out)
    return None


def _map(num_dims: int, results: tuple[int, ...]) -> at.AffineMapAttr:
    from ktir.ir import affine as af

    return at.AffineMapAttr(value=af.AffineMap(num_dims=num_dims, num_symbols=0, results=tuple(af.Dim(position=i) for i in results)))


def default_indexing_maps(name: str) -> at.ArrayAttr | None:
    """The `indexing_maps` MLIR 22 materialises for matmul and batch_matmul (the op named)."""
    if name not in (Linalg.matmul, Linalg.batch_matmul):
        return None
    loops = einsum_loops(contractions()[name])
    n_loops = max(max(positions) for positions in loops) + 1
    return at.ArrayAttr(elements=tuple(_map(n_loops, positions) for positions in loops))
