"""Fused elementwise chains: an expression tree over strided views, emitted as one linalg.generic.

Leaves are `Ref`s already broadcast to the chain's shape (stride 0 = broadcast dim); every
floating-point op computes in f32, so a chain of f16 ops rounds once, at the end; ops whose
torch result is an integer compute in i64 (`Op.ctype`), exactly. Comparisons give f32 masks
(1.0 / 0.0) whatever they compare. Two nodes mark values
computed inside the kernel before the chain's generic, at their own shape, and read
broadcast: `Reduce` (a keepdim reduction of a sub-expression; its reduced dims are never
split over cores, so each tile holds whole rows) and `Row` (an expression over such
values at the reduced shape, e.g. rsqrt(mean + eps), computed once per row rather than
once per element).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ktir.dialects.names import Arith, Math
from ktir.lower.torch.refs import Ref
from ktir.lower.torch.writer import Input, Kernel


@dataclass(frozen=True)
class Const:
    value: float


@dataclass(frozen=True)
class Op:
    name: str
    args: tuple[Expr, ...]
    param: float = 0.0
    ctype: str = "f32"  # what the op computes in: f32, or i64 for integer results (and their operands)


@dataclass(frozen=True)
class Reduce:
    kind: str  # sum | mean | max | min
    arg: Expr  # over in_shape
    dims: tuple[int, ...]  # reduced dims
    in_shape: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(1 if d in self.dims else n for d, n in enumerate(self.in_shape))


@dataclass(frozen=True)
class Row:
    arg: Expr
    shape: tuple[int, ...]


Expr = Ref | Const | Op | Reduce | Row
# Reduce/Row values computed ahead for the rows a kernel works on: node -> (tensor, its shape)
Known = dict[Reduce | Row, tuple[str, list[int]]]


def _outermost(expr: Expr, kind: type | tuple[type, ...]) -> list[Any]:
    """The distinct nodes of `kind` in `expr` that no other such node encloses, first seen first."""
    out: list[Any] = []

    def walk(e: Expr) -> None:
        if isinstance(e, kind):
            if e not in out:
                out.append(e)
        elif isinstance(e, Op):
            for a in e.args:
                walk(a)

    walk(expr)
    return out


def leaves(expr: Expr) -> list[Ref]:
    return _outermost(expr, Ref)


def boundaries(expr: Expr) -> list[Reduce | Row]:
    """The Reduce/Row nodes of `expr` outside any other one (computed before its generic)."""
    return _outermost(expr, (Reduce, Row))


def reduced_dims(expr: Expr) -> set[int]:
    """Every dim some Reduce inside `expr` reduces (those must stay whole on each tile)."""
    if isinstance(expr, Reduce):
        return set(expr.dims) | reduced_dims(expr.arg)
    if isinstance(expr, Row):
        return reduced_dims(expr.arg)
    if isinstance(expr, Op):
        return set().union(*(reduced_dims(a) for a in expr.args))
    return set()


def count_ops(expr: Expr) -> int:
    if isinstance(expr, Op):
        return 1 + sum(count_ops(a) for a in expr.args)
    if isinstance(expr, Reduce | Row):
        return 1 + count_ops(expr.arg) if isinstance(expr, Reduce) else count_ops(expr.arg)
    return 0


def op_names(expr: Expr) -> list[str]:
    if isinstance(expr, Op):
        return [expr.name, *(n for a in expr.args for n in op_names(a))]
    if isinstance(expr, Reduce):
        return [expr.kind, *op_names(expr.arg)]
    if isinstance(expr, Row):
        return op_names(expr.arg)
    return []


# ---------------------------------------------------------------- scalar ops (f32)


def _bin(op: str) -> Callable[[Kernel, list[str], float], str]:
    def f(k: Kernel, a: list[str], p: float) -> str:
        out = k.fresh("s")
        k.op(op, a[0], a[1], out=out)
        return out

    return f


def _un(op: str) -> Callable[[Kernel, list[str], float], str]:
    def f(k: Kernel, a: list[str], p: float) -> str:
        out = k.fresh("s")
        k.op(op, a[0], out=out)
        return out

    return f


def _chain(*steps: Callable[[Kernel, list[str], float], str]) -> Callable[[Kernel, list[str], float], str]:
    """Unary composition: each step takes the previous result."""

    def f(k: Kernel, a: list[str], p: float) -> str:
        v = a[0]
        for s in steps:
            v = s(k, [v], p)
        return v

    return f


def _sigmoid(k: Kernel, a: list[str], p: float) -> str:
    neg = _un(Arith.negf)(k, a, p)
    ex = _un(Math.exp)(k, [neg], p)
    den = _bin(Arith.addf)(k, [k.fconst(1.0), ex], p)
    return _bin(Arith.divf)(k, [k.fconst(1.0), den], p)


def _silu(k: Kernel, a: list[str], p: float) -> str:
    return _bin(Arith.mulf)(k, [a[0], _sigmoid(k, a, p)], p)


def _gelu(k: Kernel, a: list[str], p: float) -> str:
    # x * 0.5 * (1 + erf(x / sqrt(2)))
    x = a[0]
    t = _bin(Arith.mulf)(k, [x, k.fconst(0.7071067811865476)], p)
    e = _un(Math.erf)(k, [t], p)
    s = _bin(Arith.addf)(k, [k.fconst(1.0), e], p)
    h = _bin(Arith.mulf)(k, [x, k.fconst(0.5)], p)
    return _bin(Arith.mulf)(k, [h, s], p)


def _gelu_tanh(k: Kernel, a: list[str], p: float) -> str:
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    x = a[0]
    x2 = _bin(Arith.mulf)(k, [x, x], p)
    x3 = _bin(Arith.mulf)(k, [x2, x], p)
    c = _bin(Arith.mulf)(k, [x3, k.fconst(0.044715)], p)
    inner = _bin(Arith.addf)(k, [x, c], p)
    scaled = _bin(Arith.mulf)(k, [inner, k.fconst(0.7978845608028654)], p)
    th = _un(Math.tanh)(k, [scaled], p)
    s = _bin(Arith.addf)(k, [k.fconst(1.0), th], p)
    h = _bin(Arith.mulf)(k, [x, k.fconst(0.5)], p)
    return _bin(Arith.mulf)(k, [h, s], p)


def _pow(k: Kernel, a: list[str], p: float) -> str:
    if p == 2.0:
        return _bin(Arith.mulf)(k, [a[0], a[0]], p)
    if p == 1.0:
        return a[0]
    if p == 0.5:
        return _un(Math.sqrt)(k, a, p)
    if p == -0.5:
        return _un(Math.rsqrt)(k, a, p)
    if p == -1.0:
        return _bin(Arith.divf)(k, [k.fconst(1.0), a[0]], p)
    return _bin(Math.powf)(k, [a[0], k.fconst(p)], p)


def _compare(predicate: str) -> Callable[[Kernel, list[str], float], str]:
    """1.0 where `a <predicate> b` holds, else 0.0 (masks stay f32 inside a chain)."""

    def f(k: Kernel, a: list[str], p: float) -> str:
        c = k.fresh("s")
        k.cmp(Arith.cmpf, predicate, a[0], a[1], out=c)
        out = k.fresh("s")
        k.op(Arith.select, c, k.fconst(1.0), k.fconst(0.0), out=out)
        return out

    return f


def _where(k: Kernel, a: list[str], p: float) -> str:
    c = k.fresh("s")
    k.cmp(Arith.cmpf, "une", a[0], k.fconst(0.0), out=c)
    out = k.fresh("s")
    k.op(Arith.select, c, a[1], a[2], out=out)
    return out


def _logical_not(k: Kernel, a: list[str], p: float) -> str:
    return _compare("oeq")(k, [a[0], k.fconst(0.0)], p)


def _relu(k: Kernel, a: list[str], p: float) -> str:
    return _bin(Arith.maximumf)(k, [a[0], k.fconst(0.0)], p)


def _recip(k: Kernel, a: list[str], p: float) -> str:
    return _bin(Arith.divf)(k, [k.fconst(1.0), a[0]], p)


def _identity(k: Kernel, a: list[str], p: float) -> str:
    return a[0]


SCALAR: dict[str, Callable[[Kernel, list[str], float], str]] = {
    "add": _bin(Arith.addf),
    "sub": _bin(Arith.subf),
    "mul": _bin(Arith.mulf),
    "div": _bin(Arith.divf),
    "maximum": _bin(Arith.maximumf),
    "minimum": _bin(Arith.minimumf),
    "neg": _un(Arith.negf),
    "exp": _un(Math.exp),
    "log": _un(Math.log),
    "log1p": _un(Math.log1p),
    "expm1": _un(Math.expm1),
    "sqrt": _un(Math.sqrt),
    "rsqrt": _un(Math.rsqrt),
    "tanh": _un(Math.tanh),
    "abs": _un(Math.absf),
    "sin": _un(Math.sin),
    "cos": _un(Math.cos),
    "erf": _un(Math.erf),
    "sigmoid": _sigmoid,
    "silu": _silu,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "relu": _relu,
    "reciprocal": _recip,
    "pow": _pow,
    "identity": _identity,
    "gt": _compare("ogt"),
    "ge": _compare("oge"),
    "lt": _compare("olt"),
    "le": _compare("ole"),
    "eq": _compare("oeq"),
    "ne": _compare("une"),
    "where": _where,
    "logical_not": _logical_not,
}


def _ibin(op: str) -> Callable[[Kernel, list[str], float], str]:
    return _bin(op)


def _icompare(predicate: str) -> Callable[[Kernel, list[str], float], str]:
    """1.0 where `a <predicate> b` holds for i64 a, b, else 0.0."""

    def f(k: Kernel, a: list[str], p: float) -> str:
        c = k.fresh("s")
        k.cmp(Arith.cmpi, predicate, a[0], a[1], out=c)
        out = k.fresh("s")
        k.op(Arith.select, c, k.fconst(1.0), k.fconst(0.0), out=out)
        return out

    return f


def _ineg(k: Kernel, a: list[str], p: float) -> str:
    return _bin(Arith.subi)(k, [k.iconst(0), a[0]], p)


def _iwhere(k: Kernel, a: list[str], p: float) -> str:
    return _where(k, a, p)


def _floor_mod(k: Kernel, a: list[str], p: float) -> str:
    # torch.remainder on integers: the sign of the divisor (Python's %)
    r = _bin(Arith.remsi)(k, a, p)
    nonzero = k.fresh("s")
    k.cmp(Arith.cmpi, "ne", r, k.iconst(0), out=nonzero)
    differ = k.fresh("s")
    k.cmp(Arith.cmpi, "slt", _bin(Arith.xori)(k, [r, a[1]], p), k.iconst(0), out=differ)
    fix = _bin(Arith.andi)(k, [nonzero, differ], p)
    shifted = _bin(Arith.addi)(k, [r, a[1]], p)
    out = k.fresh("s")
    k.op(Arith.select, fix, shifted, r, out=out)
    return out


def _fmod_floor(k: Kernel, a: list[str], p: float) -> str:
    # torch.remainder on floats: a - floor(a / b) * b
    q = _un(Math.floor)(k, [_bin(Arith.divf)(k, a, p)], p)
    return _bin(Arith.subf)(k, [a[0], _bin(Arith.mulf)(k, [q, a[1]], p)], p)


def _isnan(k: Kernel, a: list[str], p: float) -> str:
    return _compare("uno")(k, [a[0], a[0]], p)


def _isinf(k: Kernel, a: list[str], p: float) -> str:
    return _compare("oeq")(k, [_un(Math.absf)(k, a, p), k.fconst(math.inf)], p)


def _isfinite(k: Kernel, a: list[str], p: float) -> str:
    return _compare("olt")(k, [_un(Math.absf)(k, a, p), k.fconst(math.inf)], p)


def _rounded_div(rounding: str) -> Callable[[Kernel, list[str], float], str]:
    def f(k: Kernel, a: list[str], p: float) -> str:
        return _un(rounding)(k, [_bin(Arith.divf)(k, a, p)], p)

    return f


SCALAR.update({
    "floordiv": _rounded_div(Math.floor),
    "truncdiv": _rounded_div(Math.trunc),
    "remainder": _fmod_floor,
    "isnan": _isnan,
    "isinf": _isinf,
    "isfinite": _isfinite,
})

# ops on i64 operands with an i64 result (Op.ctype == "i64")
INT_SCALAR: dict[str, Callable[[Kernel, list[str], float], str]] = {
    "add": _ibin(Arith.addi),
    "sub": _ibin(Arith.subi),
    "mul": _ibin(Arith.muli),
    "maximum": _ibin(Arith.maxsi),
    "minimum": _ibin(Arith.minsi),
    "floordiv": _ibin(Arith.floordivsi),
    "truncdiv": _ibin(Arith.divsi),
    "remainder": _floor_mod,
    "bitwise_and": _ibin(Arith.andi),
    "bitwise_or": _ibin(Arith.ori),
    "bitwise_xor": _ibin(Arith.xori),
    "neg": _ineg,
    "abs": _un(Math.absi),
    "where": _iwhere,
    "identity": _identity,
}
# comparisons of i64 operands (an f32 mask)
INT_COMPARE = {"gt": "sgt", "ge": "sge", "lt": "slt", "le": "sle", "eq": "eq", "ne": "ne"}
COMPARISONS = {"gt", "ge", "lt", "le", "eq", "ne"}


def vtype(expr: Expr) -> str:
    """The type `scalar` gives `expr` in: i64 or f32 (Const: None, whatever its user needs)."""
    if isinstance(expr, Ref):
        return "i64" if is_int(expr.ktype) else "f32"
    if isinstance(expr, Reduce | Row):
        return "f32"
    if isinstance(expr, Op):
        if expr.name in COMPARISONS or expr.name in ("isnan", "isinf", "isfinite", "logical_not", "to_f32"):
            return "f32"
        return "i64" if expr.name == "to_i64" else expr.ctype
    return "any"


def is_int(ktype: str) -> bool:
    return ktype.startswith("i") and ktype not in ("i1", "index")


def _operand_type(expr: Op) -> str:
    if expr.name in COMPARISONS:  # compared in i64 only when both sides are integers
        return "i64" if all(vtype(a) in ("i64", "any") for a in expr.args) and any(vtype(a) == "i64" for a in expr.args) else "f32"
    if expr.name in ("to_i64", "to_f32"):
        return vtype(expr.args[0]) if vtype(expr.args[0]) != "any" else "f32"
    if expr.name == "where":  # the mask is f32; the two values are in the op's type
        return expr.ctype
    return expr.ctype


def scalar(k: Kernel, expr: Expr, leaf_values: dict[Any, str], want: str | None = None) -> str:
    """Emit the scalar ops of `expr` inside a region; leaves (and Reduce/Row values) are scalars of
    their vtype. The result is in vtype(expr) (a Const: in `want`, default f32)."""
    if isinstance(expr, Ref | Reduce | Row):
        return leaf_values[expr]
    if isinstance(expr, Const):
        return k.iconst(int(expr.value)) if want == "i64" else k.fconst(expr.value)
    operand = _operand_type(expr)
    args = []
    for i, a in enumerate(expr.args):
        need = "f32" if expr.name == "where" and i == 0 else operand
        v = scalar(k, a, leaf_values, need)
        have = vtype(a) if vtype(a) != "any" else need
        args.append(k.scalar_convert(v, have, need))
    if expr.name == "to_i64":
        return k.scalar_convert(args[0], operand, "i64")
    if expr.name == "to_f32":
        return k.scalar_convert(args[0], operand, "f32")
    if operand == "i64":
        if expr.name in INT_COMPARE:
            return _icompare(INT_COMPARE[expr.name])(k, args, expr.param)
        if expr.name == "bitwise_not":
            return _bin(Arith.xori)(k, [args[0], k.iconst(-1)], expr.param)
        if expr.name not in INT_SCALAR:
            raise ValueError(f"{expr.name} on integers is not lowered")
        return INT_SCALAR[expr.name](k, args, expr.param)
    return SCALAR[expr.name](k, args, expr.param)


# ---------------------------------------------------------------- tiles


def load_leaves(k: Kernel, refs: Sequence[Ref], starts: Sequence[int | str], block: Sequence[int]) -> list[Input]:
    """Load each leaf's box; returns linalg.generic inputs (value, shape, type, indexing map)."""
    rank = len(block)
    out = []
    for ref in refs:
        value, shape = k.load(ref, starts, block)
        results = ["0" if s == 0 else f"d{i}" for i, s in enumerate(ref.strides)]
        out.append((value, shape, ref.ktype, k.aliases.map(rank, results)))
    return out


def evaluate(k: Kernel, expr: Expr, starts: Sequence[int | str], block: Sequence[int], out_type: str = "f32",
             known: Known | None = None) -> str:
    """The tile of `expr` at `starts` (an all-parallel linalg.generic over its leaves), as `out_type`.
    `known`: Reduce/Row values already computed for these rows (value, shape; see _boundary),
    used instead of computing them here (the kernels that loop over chunks compute them first)."""
    refs = leaves(expr)
    floats = ("f16", "bf16", "f32")
    if isinstance(expr, Ref) and all(s != 0 for s in expr.strides) and expr.ktype in floats and out_type in floats:
        value, shape = k.load(expr, starts, block)
        return k.convert(value, shape, expr.ktype, out_type)
    subs = boundaries(expr)
    inputs = load_leaves(k, refs, starts, block) + [_boundary(k, node, starts, block, known) for node in subs]
    types = [r.ktype for r in refs] + ["f32"] * len(subs)
    keys: list[Any] = [*refs, *subs]
    rank = len(block)
    result = vtype(expr) if vtype(expr) != "any" else "f32"

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        values = {key: kk.scalar_convert(n, t, vtype(key)) for key, n, t in zip(keys, names, types, strict=True)}
        return kk.scalar_convert(scalar(kk, expr, values, result), result, out_type)

    return k.generic(inputs, block, k.aliases.identity(rank), ["parallel"] * rank, None, out_type, body)


def _boundary(k: Kernel, node: Reduce | Row, starts: Sequence[int | str], block: Sequence[int], known: Known | None = None) -> Input:
    """A Reduce/Row value for the consumer's box: (tensor, its shape, f32, the consumer's map to it)."""
    rank = len(block)
    own_starts = [0 if n == 1 else s for s, n in zip(starts, node.shape, strict=True)]
    own_block = [1 if n == 1 else b for b, n in zip(block, node.shape, strict=True)]
    if isinstance(node, Row):
        value = known[node][0] if known is not None and node in known else evaluate(k, node.arg, own_starts, own_block, known=known)
        return value, own_block, "f32", k.aliases.map(rank, ["0" if n == 1 else f"d{i}" for i, n in enumerate(node.shape)])
    kept = [d for d in range(rank) if d not in node.dims]
    results = ["0" if node.shape[d] == 1 else f"d{d}" for d in kept]
    if known is not None and node in known:  # computed ahead at these rows: its shape is the kept dims of own_block
        return known[node][0], [own_block[d] for d in kept], "f32", k.aliases.map(rank, results)
    in_starts = [0 if d in node.dims else s for d, s in enumerate(own_starts)]
    in_block = [node.in_shape[d] if d in node.dims else b for d, b in enumerate(own_block)]
    x = evaluate(k, node.arg, in_starts, in_block, known=known)
    out_shape = [in_block[d] for d in kept]
    combiner, init = {"sum": ("addf", 0.0), "mean": ("addf", 0.0), "max": ("maximumf", -math.inf), "min": ("minimumf", math.inf)}[node.kind]

    def combine(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op(f"arith.{combiner}", acc, names[0], out=r)
        return r

    iters = ["reduction" if d in node.dims else "parallel" for d in range(rank)]
    value = k.generic([(x, in_block, "f32", k.aliases.identity(rank))], out_shape, k.aliases.map(rank, [f"d{d}" for d in kept]), iters,
                      k.filled(out_shape, init), "f32", combine)
    if node.kind == "mean":
        count = math.prod(node.in_shape[d] for d in node.dims)
        ident = k.aliases.identity(len(out_shape))

        def scale(kk: Kernel, names: list[str], acc: str) -> str:
            r = kk.fresh("s")
            kk.op(Arith.mulf, names[0], kk.fconst(1.0 / count), out=r)
            return r

        value = k.generic([(value, out_shape, "f32", ident)], out_shape, ident, ["parallel"] * len(out_shape), None, "f32", scale)
    return value, out_shape, "f32", k.aliases.map(rank, results)


@dataclass
class Pending:
    """A graph value not yet written: an elementwise expression fused into its single consumer,
    or materialised by one kernel when it has several users."""

    expr: Expr
    shape: tuple[int, ...]
    ktype: str
    users: int
    nodes: list[str]
