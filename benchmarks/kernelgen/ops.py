"""The ops of generated kernels, each in every form a natural kernel may write it, with its oracle.

An op picks one of its forms at random (a tensor-level `arith`/`math` op, a linalg named op,
a `linalg.generic` with a scalar body; `linalg.broadcast` or a projected indexing map;
`linalg.reduce` short or written out, or a `linalg.generic` with reduction iterators;
a named matmul or a generic contraction) and records the form in `Gen.features`. The oracle
is computed with numpy in float64 from the same inputs, never by the interpreter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ktir.builder import Value
from ktir.ir import attributes as at

from .ir import LIBM_ULPS, UNIT, Dim, Gen, T, amap, gamma, ktype, unify


@dataclass(frozen=True)
class Unary:
    arith: str  # the op on whole tensors and in generic bodies
    named: str  # the linalg named op


UNARY = {
    "negf": Unary("arith.negf", "linalg.negf"),
    "absf": Unary("math.absf", "linalg.abs"),
    "exp": Unary("math.exp", "linalg.exp"),
    "tanh": Unary("math.tanh", "linalg.tanh"),
}

BINARY = {  # op -> linalg named op
    "addf": "linalg.add",
    "subf": "linalg.sub",
    "mulf": "linalg.mul",
    "maximumf": "linalg.max",
    "minimumf": "linalg.min",
    "divf": "linalg.div",
}

COMBINERS = {"addf": 0.0, "maximumf": -math.inf, "minimumf": math.inf}  # combiner -> identity


def _scalar_op(g: Gen, name: str, *operands: Value) -> Value:
    op = name if "." in name else f"arith.{name}"
    return g.b.create(op, list(operands))[0]


# ---------------------------------------------------------------------- elementwise


def unary(g: Gen, op: str, t: T) -> T:
    """`op` of every element; exp is only applied to values of magnitude <= 4 (callers check)."""
    spec = UNARY[op]
    form = g.choice(["arith", "named", "generic"])
    g.features.add(f"unary:{form}")
    if form == "arith":
        v = g.b.create(spec.arith, [t.v])[0]
    elif form == "named":
        v = g.b.dps(spec.named, [t.v], [g.empty(t.shape, t.dtype)])
    else:
        n = len(t.shape)
        (v,) = g.generic([t.v], [g.empty(t.shape, t.dtype)], [amap(n, range(n))] * 2, ["parallel"] * n,
                         lambda a: [g.b.create(spec.arith, [a[0]])[0]])
    if not g.exact:
        return T(v, t.data, t.dims, t.dtype)
    u = t.u
    if op == "negf":
        data, err = -t.data, t.err
    elif op == "absf":
        data, err = np.abs(t.data), t.err
    elif op == "exp":
        assert t.mag <= 8, t.mag
        data = np.exp(t.data)
        err = math.exp(t.mag + t.err) * t.err * (1 + t.err) + LIBM_ULPS * u * float(np.max(data))
    else:
        data, err = np.tanh(t.data), t.err + LIBM_ULPS * u
    return T(v, data, t.dims, t.dtype, err)


def _placed(b: T, positions: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """`b`'s data broadcast to `shape`, its axis i along axis positions[i]."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    moved = np.transpose(b.data, order) if order else b.data
    full = [1] * len(shape)
    for i in order:
        full[positions[i]] = b.shape[i]
    return np.broadcast_to(moved.reshape(full), tuple(shape))


def broadcast(g: Gen, t: T, dims: Sequence[Dim], positions: Sequence[int]) -> T:
    """`t` broadcast to the shape of `dims` (axis i of t along positions[i], increasing): `linalg.broadcast`
    or a `linalg.generic` with a projected map."""
    shape = [d.size for d in dims]
    for i, p in enumerate(positions):
        unify(t.dims[i], dims[p])
    added = [i for i in range(len(shape)) if i not in positions]
    if g.chance(0.5) and list(positions) == sorted(positions):
        g.features.add("broadcast:linalg.broadcast")
        v = g.b.dps("linalg.broadcast", [t.v], [g.empty(shape, t.dtype)], {"dimensions": at.i64_array(added)})
    else:
        g.features.add("broadcast:generic")
        n = len(shape)
        (v,) = g.generic([t.v], [g.empty(shape, t.dtype)], [amap(n, positions), amap(n, range(n))], ["parallel"] * n,
                         lambda a: [a[0]])
    data = np.array(_placed(t, positions, shape)) if g.exact else g.ghost(shape)
    return T(v, data, tuple(dims), t.dtype, t.err)


def binary(g: Gen, op: str, a: T, b: T, positions: Sequence[int] | None = None) -> T:
    """`a op b` elementwise; with `positions`, `b` has fewer dimensions and is broadcast along a's
    (b's axis i is a's axis positions[i]). `divf` needs every |b| >= 1 (callers make b = 1 + |x|)."""
    assert a.dtype == b.dtype
    n = len(a.shape)
    pos = list(range(n)) if positions is None else list(positions)
    if positions is not None and g.chance(0.4) and pos == sorted(pos):
        b = broadcast(g, b, a.dims, pos)  # materialised, then an elementwise op of equal shapes
        pos = list(range(n))
    else:
        for i, p in enumerate(pos):
            unify(b.dims[i], a.dims[p])
    same = len(pos) == n and pos == list(range(n))
    form = g.choice(["arith", "named", "generic"]) if same else "generic"
    g.features.add(f"binary:{form}" + ("" if same else ":projected"))
    if form == "arith":
        v = _scalar_op(g, op, a.v, b.v)
    elif form == "named":
        v = g.b.dps(BINARY[op], [a.v, b.v], [g.empty(a.shape, a.dtype)])
    else:
        (v,) = g.generic([a.v, b.v], [g.empty(a.shape, a.dtype)], [amap(n, range(n)), amap(n, pos), amap(n, range(n))],
                         ["parallel"] * n, lambda x: [_scalar_op(g, op, x[0], x[1])])
    if not g.exact:
        return T(v, a.data, a.dims, a.dtype)
    bd = _placed(b, pos, a.shape)
    u = a.u
    if op in ("addf", "subf"):
        data = a.data + bd if op == "addf" else a.data - bd
        err = a.err + b.err + u * (float(np.max(np.abs(data))) + a.err + b.err)
    elif op == "mulf":
        data = a.data * bd
        err = a.err * b.mag + b.err * a.mag + a.err * b.err + u * (float(np.max(np.abs(data))) + a.err + b.err)
    elif op == "divf":
        least = float(np.min(np.abs(bd)))
        assert least - b.err >= 0.5, least
        data = a.data / bd
        err = (a.err + float(np.max(np.abs(data))) * b.err) / (least - b.err) + u * float(np.max(np.abs(data))) * 2
    else:
        data = np.maximum(a.data, bd) if op == "maximumf" else np.minimum(a.data, bd)
        err = max(a.err, b.err)
    return T(v, data, a.dims, a.dtype, err)


def with_scalar(g: Gen, op: str, t: T, c: float) -> T:
    """`t op c` for a constant c: a tensor of c made by `arith.constant dense`, `tensor.splat` or
    `linalg.fill`, or c used as a scalar inside a `linalg.generic` body."""
    how = g.choice(["constant", "splat", "fill", "generic"])
    g.features.add(f"scalar:{how}")
    n = len(t.shape)
    if how == "generic":
        s = g.scalar(c, t.dtype)
        (v,) = g.generic([t.v], [g.empty(t.shape, t.dtype)], [amap(n, range(n))] * 2, ["parallel"] * n,
                         lambda a: [_scalar_op(g, op, a[0], s)])
        return _combine_data(g, t, T(v, np.full(t.shape, c) if g.exact else t.data, t.dims, t.dtype), op, v)
    cv = g.splat_value(c, t.shape, t.dtype, how)
    v = _scalar_op(g, op, t.v, cv)
    return _combine_data(g, t, T(cv, np.full(t.shape, float(c)) if g.exact else t.data, t.dims, t.dtype), op, v)


def _combine_data(g: Gen, a: T, b: T, op: str, v: Value) -> T:
    """The oracle and error of `a op b` (equal shapes) for an op already emitted as `v`."""
    if not g.exact:
        return T(v, a.data, a.dims, a.dtype)
    u = a.u
    if op == "addf":
        data = a.data + b.data
    elif op == "subf":
        data = a.data - b.data
    elif op == "mulf":
        data = a.data * b.data
    elif op == "maximumf":
        return T(v, np.maximum(a.data, b.data), a.dims, a.dtype, max(a.err, b.err))
    else:
        assert op == "minimumf", op
        return T(v, np.minimum(a.data, b.data), a.dims, a.dtype, max(a.err, b.err))
    err = a.err * max(1.0, b.mag) + u * (float(np.max(np.abs(data))) + a.err)
    return T(v, data, a.dims, a.dtype, err)


def positive_denominator(g: Gen, t: T) -> T:
    """1 + |t|: a divisor the oracle's error bound can carry (|.| >= 1)."""
    return with_scalar(g, "addf", unary(g, "absf", t), 1.0)


# ---------------------------------------------------------------------- reductions


INIT_SOURCES = ("constant", "splat", "fill", "loaded", "op")


def init_tensor(g: Gen, source: str, shape: Sequence[int], dims: Sequence[Dim], combiner: str,
                identity: bool | None = None) -> T:
    """The init of a reduction with result `shape`: the combiner's identity or another value (at
    random unless `identity` says), from a constant, `tensor.splat`, `linalg.fill`, a loaded tensor
    or another op's result."""
    if source in ("constant", "splat", "fill"):
        identity = g.chance(0.5) if identity is None else identity
        value = COMBINERS[combiner] if identity else g.choice([1.0, 0.5, -2.0, 3.0])
        g.features.add(f"init:{source}:{'identity' if identity else 'other'}")
        v = g.splat_value(value, shape, "f32", source)
        return T(v, np.full(tuple(shape), value) if g.exact else g.ghost(shape), tuple(dims), "f32")
    g.features.add(f"init:{source}")
    if source == "loaded":
        return g.input(shape, "f32", dims=dims, hint="init")
    # another op's result: tanh of a loaded tensor, or a sum of a loaded tensor over a new dimension
    if g.chance(0.5) or not shape:
        return unary(g, "tanh", g.input(shape, "f32", dims=dims, hint="w"))
    extra = g.choice([3, 8, 17])
    w = g.input([*shape, extra], "f32", dims=[*dims, g.dim(extra)], hint="w")
    w.dims[-1].mark("reduced")
    return reduce(g, w, [len(shape)], "addf", init_tensor(g, "fill", shape, dims, "addf"))


def reduce(g: Gen, t: T, axes: Sequence[int], combiner: str, init: T) -> T:
    """Reduce `t` (f32) over `axes` with `combiner`, starting from `init` (the kept shape, or [1]
    when every axis is reduced)."""
    assert t.dtype == "f32" and init.dtype == "f32"
    n = len(t.shape)
    kept = [i for i in range(n) if i not in axes]
    for i in axes:
        t.dims[i].mark("reduced")
    for i, k in enumerate(kept):
        unify(init.dims[i], t.dims[k])
    forms = ["generic"] + (["reduce", "reduce_body"] if kept else [])
    form = g.choice(forms)
    g.features.add(f"reduce:{form}:{combiner}")
    if form == "reduce":
        v = g.b.reduce(f"arith.{combiner}", [t.v], [init.v], sorted(axes))
    elif form == "reduce_body":
        with g.b.reduce_body([t.v], [init.v], sorted(axes)) as (x, acc):
            g.b.yield_(_scalar_op(g, combiner, x, acc), op="linalg.yield")
        v = g.b.last_results[0]
    else:
        iters = ["reduction" if i in axes else "parallel" for i in range(n)]
        out_map = amap(n, kept) if kept else amap(n, [None])
        (v,) = g.generic([t.v], [init.v], [amap(n, range(n)), out_map], iters,
                         lambda a: [_scalar_op(g, combiner, a[1], a[0])])
    if not g.exact:
        return T(v, init.data, init.dims, "f32")
    ax = tuple(axes)
    init_data = init.data.reshape([t.shape[k] for k in kept]) if kept else init.data.reshape(())
    if combiner == "addf":
        count = math.prod(t.shape[i] for i in axes)
        total = np.sum(t.data, axis=ax)
        data = init_data + total
        spread = float(np.max(np.abs(init_data) + np.sum(np.abs(t.data), axis=ax)))
        err = init.err + count * t.err + gamma(count + 1, UNIT["f32"]) * (spread + count * t.err)
    else:
        f = np.maximum if combiner == "maximumf" else np.minimum
        data = f(init_data, (np.max if combiner == "maximumf" else np.min)(t.data, axis=ax))
        err = max(init.err, t.err)
    data = np.asarray(data).reshape(init.shape)
    return T(v, data, init.dims, "f32", err)


# ---------------------------------------------------------------------- permutations


def transpose(g: Gen, t: T, perm: Sequence[int]) -> T:
    """Axis i of the result is axis perm[i] of `t`: `linalg.transpose` or a generic with a permuted map."""
    n = len(perm)
    shape = [t.shape[p] for p in perm]
    if g.chance(0.6):
        g.features.add("transpose:linalg.transpose")
        v = g.b.dps("linalg.transpose", [t.v], [g.empty(shape, t.dtype)], {"permutation": at.i64_array(list(perm))})
    else:
        g.features.add("transpose:generic")
        inverse = [perm.index(j) for j in range(n)]
        (v,) = g.generic([t.v], [g.empty(shape, t.dtype)], [amap(n, inverse), amap(n, range(n))], ["parallel"] * n,
                         lambda a: [a[0]])
    return T(v, np.transpose(t.data, perm), tuple(t.dims[p] for p in perm), t.dtype, t.err)  # a view: free


# ---------------------------------------------------------------------- contractions

# named op -> (A's labels, B's labels); the output is (batch..., m, n)
NAMED_CONTRACTIONS = {
    "linalg.matmul": ("mk", "kn"),
    "linalg.matmul_transpose_a": ("km", "kn"),
    "linalg.matmul_transpose_b": ("mk", "nk"),
    "linalg.batch_matmul": ("bmk", "bkn"),
    "linalg.batch_matmul_transpose_b": ("bmk", "bnk"),
}


def contract(g: Gen, a: T, b: T, a_labels: str, b_labels: str, init: T, named: bool) -> T:
    """out[batch, m, n] = init + sum_k a * b, with a's axes labelled by `a_labels` (letters of b, m, k;
    b for the batch) and b's by `b_labels` (b, k, n); a named linalg op when one matches and
    `named`, else a `linalg.generic` contraction."""
    out_labels = ("b" if "b" in a_labels else "") + "mn"
    size = {**dict(zip(a_labels, a.shape, strict=True)), **dict(zip(b_labels, b.shape, strict=True))}
    dims = {**dict(zip(a_labels, a.dims, strict=True))}
    for lab, d in zip(b_labels, b.dims, strict=True):
        if lab in dims:
            unify(dims[lab], d)
        else:
            dims[lab] = d
    for lab, d in zip(out_labels, init.dims, strict=True):
        unify(dims[lab], d)
    dims["k"].mark("reduced")
    op = next((o for o, (la, lb) in NAMED_CONTRACTIONS.items() if (la, lb) == (a_labels, b_labels)), None)
    if named and op is not None:
        g.features.add(f"contract:{op}")
        v = g.b.dps(op, [a.v, b.v], [init.v])
    else:
        g.features.add("contract:generic")
        space = out_labels + "k"
        n = len(space)

        def m(labels: str) -> list[int]:
            return [space.index(c) for c in labels]

        iters = ["reduction" if c == "k" else "parallel" for c in space]
        acc = ktype(init.dtype)

        def body(x: tuple[Value, ...]) -> list[Value]:
            lhs, rhs = (g.b.create("arith.extf", [y], [acc])[0] if y.type != acc else y for y in x[:2])
            return [_scalar_op(g, "addf", x[2], _scalar_op(g, "mulf", lhs, rhs))]

        (v,) = g.generic([a.v, b.v], [init.v], [amap(n, m(a_labels)), amap(n, m(b_labels)), amap(n, m(out_labels))],
                         iters, body)
    if not g.exact:
        return T(v, init.data, init.dims, init.dtype)
    spec = f"{a_labels},{b_labels}->{out_labels}"
    data = init.data + np.einsum(spec, a.data, b.data)
    spread = float(np.max(np.abs(init.data) + np.einsum(spec, np.abs(a.data), np.abs(b.data))))
    K = size["k"]
    err = (init.err + K * (a.err * b.mag + b.err * a.mag + a.err * b.err)
           + gamma(K + 2, UNIT[init.dtype]) * (spread + K * (a.err * b.mag + b.err * a.mag)))
    return T(v, data, init.dims, init.dtype, err)
