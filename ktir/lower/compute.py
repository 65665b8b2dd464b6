"""The compute of one SDSC on one core's tiles, in linalg with arith/math bodies.

A recipe per SDSC op function (`computeOp_[0].opFuncName`). Tiles arrive as loaded, in
device layout (sticks and lanes as separate dims). When every tensor has the same device
layout the op runs on the device tiles directly; otherwise each tile is first rearranged
into its *logical* form (its dims in `N_` order, the stick dim whole) with
`linalg.transpose` + `tensor.collapse_shape`, and results go back with
`tensor.expand_shape` + `linalg.transpose`. A tensor of extent 1 where the iteration
space is wider is broadcast (inputs) or reduced into (outputs) through a constant-0
indexing map.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ktir.builder import Value
from ktir.dialects.names import Arith, Linalg, Math
from ktir.ir import affine as af
from ktir.ir import types as ty
from ktir.lower.errors import SdscError
from ktir.lower.layout import KernelSpec, TensorSpec
from ktir.lower.ops import FuncEmitter

Body = Callable[[FuncEmitter, list[Value]], list[Value]]


# ---------------------------------------------------------------------------- scalar bodies


def _unary(op: str) -> Body:
    return lambda e, a: [e.scalar_op(op, [a[0]], hint="r")]


def _binary(op: str) -> Body:
    return lambda e, a: [e.scalar_op(op, [a[0], a[1]], hint="r")]


def _reciprocal(e: FuncEmitter, a: list[Value]) -> list[Value]:
    one = e.scalar(1.0, a[0].type, hint="one")
    return [e.scalar_op(Arith.divf, [one, a[0]], hint="r")]


def _relu(e: FuncEmitter, a: list[Value]) -> list[Value]:
    zero = e.scalar(0.0, a[0].type, hint="zero")
    return [e.scalar_op(Arith.maximumf, [a[0], zero], hint="r")]


def _sigmoid_of(e: FuncEmitter, x: Value) -> Value:
    one = e.scalar(1.0, x.type, hint="one")
    neg = e.scalar_op(Arith.negf, [x], hint="neg")
    ex = e.scalar_op(Math.exp, [neg], hint="exp")
    den = e.scalar_op(Arith.addf, [one, ex], hint="den")
    return e.scalar_op(Arith.divf, [one, den], hint="sig")


def _sigmoid(e: FuncEmitter, a: list[Value]) -> list[Value]:
    return [_sigmoid_of(e, a[0])]


def _silu(e: FuncEmitter, a: list[Value]) -> list[Value]:
    return [e.scalar_op(Arith.mulf, [a[0], _sigmoid_of(e, a[0])], hint="r")]


def _gelu(e: FuncEmitter, a: list[Value]) -> list[Value]:
    """GELU in its erf form, 0.5 x (1 + erf(x / sqrt 2)): what `F.gelu` computes by default
    (`approximate='none'`). The SDSC's `gelufwd` names no approximation, and torch-spyre writes
    it for `F.gelu`; the tanh form would be a different op (README: gelufwd)."""
    x = a[0]
    half = e.scalar(0.5, x.type, hint="half")
    one = e.scalar(1.0, x.type, hint="one")
    inv_sqrt2 = e.scalar(1.0 / math.sqrt(2.0), x.type, hint="inv_sqrt2")
    erf = e.scalar_op(Math.erf, [e.scalar_op(Arith.mulf, [x, inv_sqrt2], hint="xs")], hint="erf")
    half_x = e.scalar_op(Arith.mulf, [x, half], hint="hx")
    return [e.scalar_op(Arith.mulf, [half_x, e.scalar_op(Arith.addf, [one, erf], hint="t")], hint="r")]


# opfunc -> (named linalg op for the plain elementwise case, scalar body)
UNARY: dict[str, tuple[str | None, Body]] = {
    "exp": (Linalg.exp, _unary(Math.exp)),
    "log": (Linalg.log, _unary(Math.log)),
    "sqrt": (Linalg.sqrt, _unary(Math.sqrt)),
    "rsqrt": (Linalg.rsqrt, _unary(Math.rsqrt)),
    "tanh": (Linalg.tanh, _unary(Math.tanh)),
    "abs": (Linalg.abs, _unary(Math.absf)),
    "neg": (Linalg.negf, _unary(Arith.negf)),
    "floor": (Linalg.floor, _unary(Math.floor)),
    "reciprocal": (Linalg.reciprocal, _reciprocal),
    "relufwd": (None, _relu),
    "sigmoid": (None, _sigmoid),
    "silu": (None, _silu),
    "gelufwd": (None, _gelu),
}

BINARY: dict[str, tuple[str | None, Body]] = {
    "add": (Linalg.add, _binary(Arith.addf)),
    "sub": (Linalg.sub, _binary(Arith.subf)),
    "mul": (Linalg.mul, _binary(Arith.mulf)),
    "realdiv": (Linalg.div, _binary(Arith.divf)),
    "maximum": (Linalg.max, _binary(Arith.maximumf)),
    "minimum": (Linalg.min, _binary(Arith.minimumf)),
}

# opfunc -> (combiner, identity); `mean` scales the sum by the constant `scaling_factor`
REDUCTIONS: dict[str, tuple[str, float]] = {
    "sum": (Arith.addf, 0.0),
    "max": (Arith.maximumf, -math.inf),
    "min": (Arith.minimumf, math.inf),
    "mean": (Arith.addf, 0.0),
}

COPIES = ("ReStickifyOpHBM", "identity")
CONTRACTIONS = ("batchmatmul",)


def supported_opfuncs() -> list[str]:
    nonstick = [f"{k}nonstick" for k in REDUCTIONS]
    return sorted([*UNARY, *BINARY, *REDUCTIONS, *nonstick, *COPIES, *CONTRACTIONS])


# ---------------------------------------------------------------------------- spaces


@dataclass(frozen=True)
class Placed:
    """A tile in the compute space: its value and, per axis, the iteration axis it sits on."""

    value: Value
    axes: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        assert isinstance(self.value.type, ty.TensorType)
        return tuple(int(d or 0) for d in self.value.type.shape)


def _device_axes(t: TensorSpec) -> tuple[tuple[str, str], ...]:
    return tuple((d.dim, d.kind) for d in t.device)


def _logical_order(kernel: KernelSpec, t: TensorSpec) -> list[str]:
    return [d.name for d in kernel.dims if d.name in t.scale]


def to_logical(e: FuncEmitter, t: TensorSpec, value: Value, order: Sequence[str]) -> Value:
    """Device tile -> dims in `order` with the stick dim whole (transpose, collapse)."""
    position = {(d.dim, d.kind): i for i, d in enumerate(t.device)}
    groups: list[list[int]] = []
    perm: list[int] = []
    for name in order:
        if name == t.stick_dim:
            members = [position[(name, "sticks")], position[(name, "lanes")]]
        else:
            members = [position[(name, "whole")]]
        groups.append(list(range(len(perm), len(perm) + len(members))))
        perm.extend(members)
    if perm != list(range(len(perm))):
        value = e.transpose(value, perm, hint=f"{t.name}_t")
    if any(len(g) > 1 for g in groups):
        value = e.collapse(value, groups, hint=f"{t.name}_logical")
    return value


def from_logical(e: FuncEmitter, t: TensorSpec, value: Value, order: Sequence[str]) -> Value:
    """Inverse of `to_logical`: dims in `order` -> the device tile (expand, transpose)."""
    position = {(d.dim, d.kind): i for i, d in enumerate(t.device)}
    tile = t.tile_shape
    groups: list[list[int]] = []
    perm: list[int] = []
    for name in order:
        if name == t.stick_dim:
            members = [position[(name, "sticks")], position[(name, "lanes")]]
        else:
            members = [position[(name, "whole")]]
        groups.append(list(range(len(perm), len(perm) + len(members))))
        perm.extend(members)
    if any(len(g) > 1 for g in groups):
        value = e.expand(value, groups, [tile[p] for p in perm], hint=f"{t.name}_sticks")
    if perm != list(range(len(perm))):
        inverse = [perm.index(i) for i in range(len(perm))]
        value = e.transpose(value, inverse, hint=f"{t.name}_dev")
    return value


class Space:
    """Where the op computes: device tiles as loaded, or logical tiles (dims in N_ order)."""

    def __init__(self, e: FuncEmitter, kernel: KernelSpec, tiles: Mapping[int, Value]) -> None:
        self.e = e
        self.kernel = kernel
        tensors = [kernel.tensors[i] for i in (*kernel.inputs, *kernel.outputs)]
        first = _device_axes(tensors[0])
        self.device = all(_device_axes(t) == first for t in tensors)
        if self.device:
            self.axes = list(first)
        else:
            self.axes = [(d.name, "logical") for d in kernel.dims if any(d.name in t.scale for t in tensors)]
        self.tiles = tiles

    def order(self, t: TensorSpec) -> list[str]:
        return _logical_order(self.kernel, t)

    def place(self, index: int) -> Placed:
        t = self.kernel.tensors[index]
        value = self.tiles[index]
        if self.device:
            return Placed(value, tuple(range(len(self.axes))))
        order = self.order(t)
        value = to_logical(self.e, t, value, order)
        names = [name for name, _ in self.axes]
        return Placed(value, tuple(names.index(n) for n in order))

    def output_shape(self, index: int) -> tuple[int, ...]:
        t = self.kernel.tensors[index]
        if self.device:
            return t.tile_shape
        return tuple(self.kernel.dim(n).per_core if t.spans(n) else 1 for n in self.order(t))

    def output_axes(self, index: int) -> tuple[int, ...]:
        if self.device:
            return tuple(range(len(self.axes)))
        names = [name for name, _ in self.axes]
        return tuple(names.index(n) for n in self.order(self.kernel.tensors[index]))

    def unplace(self, index: int, value: Value) -> Value:
        if self.device:
            return value
        t = self.kernel.tensors[index]
        return from_logical(self.e, t, value, self.order(t))


def _extents(space: Space, operands: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[int]:
    """The iteration extents: per axis, the largest extent of any operand on it."""
    ext = [1] * len(space.axes)
    for axes, shape in operands:
        for a, n in zip(axes, shape, strict=True):
            ext[a] = max(ext[a], n)
    return ext


def _operand_map(axes: Sequence[int], shape: Sequence[int], extents: Sequence[int]) -> af.AffineMap:
    results = [af.dim(a) if extents[a] == n or extents[a] == 1 else af.const(0) for a, n in zip(axes, shape, strict=True)]
    return af.AffineMap(num_dims=len(extents), num_symbols=0, results=tuple(results))


def _check_broadcastable(kernel: KernelSpec, what: str, axes: Sequence[int], shape: Sequence[int], extents: Sequence[int]) -> None:
    for a, n in zip(axes, shape, strict=True):
        if n not in (1, extents[a]):
            raise SdscError(f"{kernel.key}: {what} has extent {n} where the iteration space has {extents[a]}", kernel.source)


# ---------------------------------------------------------------------------- recipes


def emit_compute(e: FuncEmitter, kernel: KernelSpec, tiles: Mapping[int, Value]) -> dict[int, Value]:
    """Emit the op's compute over loaded device tiles; return each output's device tile."""
    op = kernel.opfunc
    _check_element_types(kernel)
    if op in COPIES:
        return _copy(e, kernel, tiles)
    if op in CONTRACTIONS:
        return _contraction(e, kernel, tiles)
    base = op.removesuffix("nonstick")
    if base in REDUCTIONS:
        return _reduction(e, kernel, tiles, base)
    if op in UNARY:
        return _elementwise(e, kernel, tiles, *UNARY[op], arity=1)
    if op in BINARY:
        return _elementwise(e, kernel, tiles, *BINARY[op], arity=2)
    raise SdscError(
        f"{kernel.where}.computeOp_[0].opFuncName: op function '{op}' is not supported "
        f"(supported: {', '.join(supported_opfuncs())})",
        kernel.source,
    )


def _check_element_types(kernel: KernelSpec) -> None:
    types = {kernel.tensors[i].element_type for i in (*kernel.inputs, *kernel.outputs)}
    if len(types) != 1:
        names = ", ".join(f"{t.name}: {t.data_format}" for t in kernel.tensors)
        raise SdscError(f"{kernel.key}: {kernel.opfunc} mixes data formats ({names}); format conversions are not supported", kernel.source)
    (t,) = types
    if kernel.opfunc not in COPIES and not isinstance(t, ty.FloatType):
        raise SdscError(f"{kernel.key}: {kernel.opfunc} on {kernel.tensors[kernel.outputs[0]].data_format} data is not supported (float formats only)", kernel.source)


def _arity(kernel: KernelSpec, n_in: int, n_out: int = 1) -> None:
    if len(kernel.inputs) != n_in or len(kernel.outputs) != n_out:
        raise SdscError(
            f"{kernel.key}: {kernel.opfunc} takes {n_in} input(s) and {n_out} output(s); computeOp_ names "
            f"{len(kernel.inputs)} and {len(kernel.outputs)}",
            kernel.source,
        )


def _elementwise(e: FuncEmitter, kernel: KernelSpec, tiles: Mapping[int, Value], named: str | None, body: Body, arity: int) -> dict[int, Value]:
    _arity(kernel, arity)
    space = Space(e, kernel, tiles)
    out = kernel.outputs[0]
    ins = [space.place(i) for i in kernel.inputs]
    out_shape, out_axes = space.output_shape(out), space.output_axes(out)
    extents = _extents(space, [(p.axes, p.shape) for p in ins] + [(out_axes, out_shape)])
    for i, p in zip(kernel.inputs, ins, strict=True):
        _check_broadcastable(kernel, kernel.tensors[i].name, p.axes, p.shape, extents)
    if any(extents[a] != n for a, n in zip(out_axes, out_shape, strict=True)) or len(out_axes) != len(extents):
        raise SdscError(f"{kernel.key}: the output of the pointwise op {kernel.opfunc} does not span its whole iteration space", kernel.source)
    element = kernel.tensors[out].element_type
    init = e.empty(out_shape, element, hint=f"{kernel.tensors[out].name}_init")
    maps = [_operand_map(p.axes, p.shape, extents) for p in ins]
    out_map = _operand_map(out_axes, out_shape, extents)
    plain = all(m == out_map for m in maps) and out_map == af.AffineMap.identity(len(extents))
    hint = kernel.opfunc
    _reject_unused_constants(kernel, set())
    if named is not None and plain:
        result = e.named(named, [p.value for p in ins], init, hint=hint)
    else:
        (result,) = e.generic([p.value for p in ins], [init], [*maps, out_map], ["parallel"] * len(extents), body, hint=hint)
    return {out: space.unplace(out, result)}


def _reduction(e: FuncEmitter, kernel: KernelSpec, tiles: Mapping[int, Value], base: str) -> dict[int, Value]:
    _arity(kernel, 1)
    combiner, identity = REDUCTIONS[base]
    space = Space(e, kernel, tiles)
    out = kernel.outputs[0]
    (x,) = [space.place(i) for i in kernel.inputs]
    out_shape, out_axes = space.output_shape(out), space.output_axes(out)
    extents = _extents(space, [(x.axes, x.shape), (out_axes, out_shape)])
    reduced = [a for a in range(len(extents)) if extents[a] > 1 and all(out_shape[k] == 1 for k, b in enumerate(out_axes) if b == a)]
    if not reduced:
        raise SdscError(f"{kernel.key}: the reduction {kernel.opfunc} reduces no dim (its output spans every input dim)", kernel.source)
    _reject_split_reduction(kernel, [space.axes[a][0] for a in reduced])
    element = kernel.tensors[out].element_type
    start = e.scalar(identity, element, hint=f"{base}_identity")
    init = e.fill(start, e.empty(out_shape, element, hint=f"{kernel.tensors[out].name}_init"), hint=f"{kernel.tensors[out].name}_acc")
    iterators = ["reduction" if a in reduced else "parallel" for a in range(len(extents))]
    maps = [_operand_map(x.axes, x.shape, extents), _operand_map(out_axes, out_shape, extents)]
    (result,) = e.generic([x.value], [init], maps, iterators, _binary(combiner), hint=kernel.opfunc)
    if base == "mean":
        scale = kernel.constants.get("scaling_factor")
        if scale is None:
            raise SdscError(f"{kernel.key}: {kernel.opfunc} needs the constant 'scaling_factor' in constantInfo_", kernel.source)
        factor = e.scalar(scale, element, hint="scaling_factor")
        rank = len(out_shape)
        ident = af.AffineMap.identity(rank)
        scaled_init = e.empty(out_shape, element, hint=f"{kernel.tensors[out].name}_mean_init")

        def times(em: FuncEmitter, a: list[Value]) -> list[Value]:
            return [em.scalar_op(Arith.mulf, [a[0], factor], hint="r")]

        (result,) = e.generic([result], [scaled_init], [ident, ident], ["parallel"] * rank, times, hint="mean")
    _reject_unused_constants(kernel, {"scaling_factor"} if base == "mean" else set())
    return {out: space.unplace(out, result)}


def _reject_split_reduction(kernel: KernelSpec, dims: Sequence[str]) -> None:
    for name in dict.fromkeys(dims):
        d = kernel.dim(name)
        if d.splits > 1:
            raise SdscError(
                f"{kernel.key}: the reduced dim '{name}' is split across {d.splits} cores; combining partial results "
                "across cores (inter-tile reduction) is not lowered yet",
                kernel.source,
            )


def _reject_unused_constants(kernel: KernelSpec, used: set[str]) -> None:
    extra = sorted(set(kernel.constants) - used)
    if extra:
        raise SdscError(f"{kernel.key}: constantInfo_ '{extra[0]}' is not used by the {kernel.opfunc} recipe", kernel.source)


def _copy(e: FuncEmitter, kernel: KernelSpec, tiles: Mapping[int, Value]) -> dict[int, Value]:
    _arity(kernel, 1)
    (src,), out = kernel.inputs, kernel.outputs[0]
    a, b = kernel.tensors[src], kernel.tensors[out]
    for d in kernel.dims:
        if a.spans(d.name) != b.spans(d.name):
            raise SdscError(f"{kernel.key}: {kernel.opfunc} input {a.name} and output {b.name} differ in dim '{d.name}'", kernel.source)
    if a.sparse or b.sparse:
        raise SdscError(f"{kernel.key}: {kernel.opfunc} of sparse (one element per stick) tensors is not supported", kernel.source)
    _reject_unused_constants(kernel, set())
    if _device_axes(a) == _device_axes(b):
        return {out: tiles[src]}
    order = _logical_order(kernel, a)
    return {out: from_logical(e, b, to_logical(e, a, tiles[src], order), order)}


def _contraction(e: FuncEmitter, kernel: KernelSpec, tiles: Mapping[int, Value]) -> dict[int, Value]:
    """C = A · B over the dims A and B share and C lacks (batch dims in all three)."""
    _arity(kernel, 2)
    ia, ib = kernel.inputs
    ic = kernel.outputs[0]
    a, b, c = (kernel.tensors[i] for i in (ia, ib, ic))
    for t in (a, b, c):
        if any(s != 1 for s in t.scale.values()):
            raise SdscError(f"{kernel.key}: {kernel.opfunc} with broadcast operand {t.name} (scale_ {list(t.scale.values())}) is not supported", kernel.source)
    da, db, dc = set(a.scale), set(b.scale), set(c.scale)
    n_order = [d.name for d in kernel.dims]

    def ordered(names: set[str]) -> list[str]:
        return [n for n in n_order if n in names]

    batch, pre, gen, red = ordered(da & db & dc), ordered((da & dc) - db), ordered((db & dc) - da), ordered((da & db) - dc)
    if not red or (da | db) != dc | set(red):
        raise SdscError(f"{kernel.key}: {kernel.opfunc} operand dims A {sorted(da)}, B {sorted(db)}, C {sorted(dc)} are not a contraction", kernel.source)
    _reject_split_reduction(kernel, red)
    _reject_unused_constants(kernel, set())
    order_a, order_b, order_c = batch + pre + red, batch + red + gen, batch + pre + gen
    va = to_logical(e, a, tiles[ia], order_a)
    vb = to_logical(e, b, tiles[ib], order_b)
    element = c.element_type
    shape_c = [kernel.dim(n).per_core for n in order_c]
    zero = e.scalar(0.0, element, hint="zero")
    init = e.fill(zero, e.empty(shape_c, element, hint=f"{c.name}_init"), hint=f"{c.name}_acc")
    if len(pre) == len(gen) == len(red) == 1 and len(batch) <= 1:
        name = Linalg.matmul if not batch else Linalg.batch_matmul
        result = e.named(name, [va, vb], init, hint="matmul")
    else:
        axes = batch + pre + gen + red
        rank = len(axes)

        def amap(order: list[str]) -> af.AffineMap:
            return af.AffineMap(num_dims=rank, num_symbols=0, results=tuple(af.dim(axes.index(n)) for n in order))

        def mac(em: FuncEmitter, args: list[Value]) -> list[Value]:
            prod = em.scalar_op(Arith.mulf, [args[0], args[1]], hint="prod")
            return [em.scalar_op(Arith.addf, [args[2], prod], hint="sum")]

        iterators = ["reduction" if n in red else "parallel" for n in axes]
        (result,) = e.generic([va, vb], [init], [amap(order_a), amap(order_b), amap(order_c)], iterators, mac, hint="matmul")
    return {ic: from_logical(e, c, result, order_c)}
