"""Kernels in their natural single-tile form, built with `ktir.builder`, at any shape.

Each function returns a module with one function on `grid = [1]` that loads whole tensors
from global memory, computes on them with linalg ops (named or generic) and elementwise
ops, and stores whole results: the form people and lowerings write first, and the input
`schedulers.natural` divides over the grid. The benchmark builds its natural-form table at
Llama-3.1-8B shapes from them; the tests build them small.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence

from ktir.builder import Builder, Value
from ktir.dialects.names import Arith, Ktdp, Linalg, Math, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Block, BlockArgument, Module, Region

INDEX = ty.IndexType()
F32 = ty.FloatType(kind="f32")


def ftype(name: str) -> ty.FloatType:
    return ty.FloatType(kind=name)  # type: ignore[arg-type]


def _box(shape: Sequence[int]) -> af.IntegerSet:
    cons = []
    for i, e in enumerate(shape):
        cons += [af.constraint(af.dim(i), ">=", af.const(0)), af.constraint(af.dim(i), "<=", af.const(e - 1))]
    return af.IntegerSet(num_dims=len(shape), num_symbols=0, constraints=tuple(cons))


def _seg(*sizes: int) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=ty.I32, values=tuple(sizes))


def amap(n: int, *results: int) -> af.AffineMap:
    return af.AffineMap(num_dims=n, num_symbols=0, results=tuple(af.dim(r) for r in results))


Body = Callable[["Kernel", list[Value]], list[Value]]


class Kernel:
    """One single-tile function under construction."""

    def __init__(self, name: str, args: Sequence[str]) -> None:
        self.b = Builder()
        self._stack = contextlib.ExitStack()
        self.args = dict(zip(args, self._stack.enter_context(self.b.func(name, [(a, INDEX) for a in args], grid=[1])),
                             strict=True))
        self.c0 = self.b.constant(0, INDEX)

    def done(self) -> Module:
        self.b.func_return()
        self._stack.close()
        return self.b.module

    # ------------------------------------------------------------ memory

    def view(self, arg: str, shape: Sequence[int], dtype: str, strides: Sequence[int] | None = None) -> Value:
        st = list(strides) if strides is not None else [math.prod(shape[i + 1:]) for i in range(len(shape))]
        return self.b.memory_view(self.args[arg], list(shape), st, ftype(dtype), coordinate_set=_box(shape))

    def load(self, view: Value) -> Value:
        assert isinstance(view.type, ty.MemRefType)
        shape = tuple(int(d or 0) for d in view.type.shape)
        tile = self.b.access_tile(view, [self.c0] * len(shape), _box(shape), shape)
        return self.b.load(tile, view.type.element_type)

    def store(self, value: Value, view: Value) -> None:
        assert isinstance(view.type, ty.MemRefType)
        shape = tuple(int(d or 0) for d in view.type.shape)
        tile = self.b.access_tile(view, [self.c0] * len(shape), _box(shape), shape)
        self.b.store(value, tile)

    # ------------------------------------------------------------ tensors

    def scalar(self, value: float, dtype: str = "f32") -> Value:
        return self.b.constant(float(value), ftype(dtype))

    def empty(self, shape: Sequence[int], dtype: str) -> Value:
        return self.b.create(Tensor.empty, [], [ty.TensorType(shape=tuple(shape), element_type=ftype(dtype))])[0]

    def fill(self, value: float, shape: Sequence[int], dtype: str = "f32") -> Value:
        init = self.empty(shape, dtype)
        return self.b.fill(self.scalar(value, dtype), init)

    def cast(self, x: Value, dtype: str) -> Value:
        """`arith.extf` / `arith.truncf` of a whole tensor."""
        assert isinstance(x.type, ty.TensorType)
        src = ty.element_type(x.type)
        assert isinstance(src, ty.FloatType)
        if src.kind == dtype:
            return x
        name = Arith.extf if ftype(dtype).width > src.width else Arith.truncf
        return self.b.create(name, [x], [x.type.model_copy(update={"element_type": ftype(dtype)})])[0]

    def generic(self, ins: Sequence[Value], shape: Sequence[int], maps: Sequence[af.AffineMap], iterators: Sequence[str],
                body: Body, dtype: str = "f32", outs: int = 1, init: Value | None = None) -> list[Value]:
        inits = [init] if init is not None else [self.empty(shape, dtype) for _ in range(outs)]
        args = [BlockArgument(name=self.b.fresh("a"), type=ty.element_type(v.type)) for v in [*ins, *inits]]
        block = Block(arguments=args)
        with self.b.insert_into(block):
            self.b.yield_(*body(self, [Value(a.name, a.type) for a in args]), op=Linalg.yield_)
        attrs = {"indexing_maps": at.ArrayAttr(elements=tuple(at.AffineMapAttr(value=m) for m in maps)),
                 "iterator_types": at.ArrayAttr(elements=tuple(at.StringAttr(value=i) for i in iterators)),
                 "operandSegmentSizes": _seg(len(ins), len(inits))}
        return self.b.create(Linalg.generic, [*ins, *inits], [v.type for v in inits], attrs, [Region(blocks=[block])])

    def reduce(self, x: Value, dims: Sequence[int], combiner: str, identity: float) -> Value:
        assert isinstance(x.type, ty.TensorType)
        shape = [int(d or 0) for i, d in enumerate(x.type.shape) if i not in dims]
        init = self.fill(identity, shape)
        a, c = (BlockArgument(name=self.b.fresh("r"), type=F32) for _ in range(2))
        block = Block(arguments=[a, c])
        with self.b.insert_into(block):
            self.b.yield_(self.b.create(combiner, [Value(a.name, F32), Value(c.name, F32)])[0], op=Linalg.yield_)
        return self.b.dps(Linalg.reduce, [x], [init], {"dimensions": at.i64_array(list(dims))},
                          regions=[Region(blocks=[block])])

    def named(self, name: str, ins: Sequence[Value], init: Value, **attrs: at.Attribute) -> Value:
        return self.b.dps(name, ins, [init], dict(attrs))

    def op(self, name: str, *operands: Value) -> Value:
        return self.b.create(name, list(operands))[0]


def _silu(k: Kernel, x: Value) -> Value:
    one = k.scalar(1.0)
    neg = k.op(Arith.negf, x)
    e = k.op(Math.exp, neg)
    return k.op(Arith.divf, x, k.op(Arith.addf, one, e))


# ---------------------------------------------------------------------- the kernels


def matmul(M: int, N: int, K: int, dtype: str = "f16", acc: str = "f32", name: str = "matmul") -> Module:
    """C = A B (A M x K, B K x N, C M x N in `dtype`), accumulated in `acc` (f32, or `dtype` itself)."""
    k = Kernel(name, ["a", "b", "c"])
    a, b = k.load(k.view("a", [M, K], dtype)), k.load(k.view("b", [K, N], dtype))
    c = k.named(Linalg.matmul, [a, b], k.fill(0.0, [M, N], acc))
    k.store(k.cast(c, dtype), k.view("c", [M, N], dtype))
    return k.done()


def matmul_bias_act(M: int, N: int, K: int, dtype: str = "f16", act: str = "relu", name: str = "matmul_bias_act") -> Module:
    """C = act(A B + bias) with an f32 accumulator: the epilogue (bias, activation, rounding) fused."""
    k = Kernel(name, ["a", "b", "bias", "c"])
    a, b = k.load(k.view("a", [M, K], dtype)), k.load(k.view("b", [K, N], dtype))
    bias = k.load(k.view("bias", [N], dtype))
    acc = k.named(Linalg.matmul, [a, b], k.fill(0.0, [M, N]))

    def body(k: Kernel, v: list[Value]) -> list[Value]:
        s = k.op(Arith.addf, v[0], k.b.create(Arith.extf, [v[1]], [F32])[0])
        r = k.op(Arith.maximumf, s, k.scalar(0.0)) if act == "relu" else _silu(k, s)
        return [k.b.create(Arith.truncf, [r], [ftype(dtype)])[0]]

    (out,) = k.generic([acc, bias], [M, N], [amap(2, 0, 1), amap(2, 1), amap(2, 0, 1)], ["parallel"] * 2, body, dtype)
    k.store(out, k.view("c", [M, N], dtype))
    return k.done()


def batch_matmul_tb(B: int, M: int, N: int, K: int, dtype: str = "f16", name: str = "batch_matmul_tb") -> Module:
    """C[b] = A[b] B[b]^T (scores = Q K^T per head): `linalg.batch_matmul_transpose_b`, f32 accumulator."""
    k = Kernel(name, ["a", "b", "c"])
    a, b = k.load(k.view("a", [B, M, K], dtype)), k.load(k.view("b", [B, N, K], dtype))
    c = k.named(Linalg.batch_matmul_transpose_b, [a, b], k.fill(0.0, [B, M, N]))
    k.store(k.cast(c, dtype), k.view("c", [B, M, N], dtype))
    return k.done()


def rmsnorm(R: int, C: int, dtype: str = "f16", name: str = "rmsnorm") -> Module:
    k = Kernel(name, ["x", "w", "y"])
    x = k.cast(k.load(k.view("x", [R, C], dtype)), "f32")
    w = k.load(k.view("w", [C], dtype))
    (ss,) = k.generic([x], [R], [amap(2, 0, 1), amap(2, 0)], ["parallel", "reduction"],
                      lambda k, v: [k.op(Arith.addf, v[1], k.op(Arith.mulf, v[0], v[0]))], init=k.fill(0.0, [R]))
    width, eps = k.scalar(float(C)), k.scalar(1e-6)

    def norm(k: Kernel, v: list[Value]) -> list[Value]:
        inv = k.op(Math.rsqrt, k.op(Arith.addf, k.op(Arith.divf, v[1], width), eps))
        g = k.b.create(Arith.extf, [v[2]], [F32])[0]
        return [k.b.create(Arith.truncf, [k.op(Arith.mulf, k.op(Arith.mulf, v[0], inv), g)], [ftype(dtype)])[0]]

    (y,) = k.generic([x, ss, w], [R, C], [amap(2, 0, 1), amap(2, 0), amap(2, 1), amap(2, 0, 1)], ["parallel"] * 2,
                     norm, dtype)
    k.store(y, k.view("y", [R, C], dtype))
    return k.done()


def layernorm(R: int, C: int, dtype: str = "f16", name: str = "layernorm") -> Module:
    k = Kernel(name, ["x", "w", "bias", "y"])
    x = k.cast(k.load(k.view("x", [R, C], dtype)), "f32")
    w, bias = k.load(k.view("w", [C], dtype)), k.load(k.view("bias", [C], dtype))
    width, eps = k.scalar(float(C)), k.scalar(1e-5)
    total = k.reduce(x, [1], Arith.addf, 0.0)
    (cen,) = k.generic([x, total], [R, C], [amap(2, 0, 1), amap(2, 0), amap(2, 0, 1)], ["parallel"] * 2,
                       lambda k, v: [k.op(Arith.subf, v[0], k.op(Arith.divf, v[1], width))])
    (var,) = k.generic([cen], [R], [amap(2, 0, 1), amap(2, 0)], ["parallel", "reduction"],
                       lambda k, v: [k.op(Arith.addf, v[1], k.op(Arith.mulf, v[0], v[0]))], init=k.fill(0.0, [R]))

    def norm(k: Kernel, v: list[Value]) -> list[Value]:
        inv = k.op(Math.rsqrt, k.op(Arith.addf, k.op(Arith.divf, v[1], width), eps))
        g, h = (k.b.create(Arith.extf, [u], [F32])[0] for u in (v[2], v[3]))
        return [k.b.create(Arith.truncf, [k.op(Arith.addf, k.op(Arith.mulf, k.op(Arith.mulf, v[0], inv), g), h)],
                           [ftype(dtype)])[0]]

    (y,) = k.generic([cen, var, w, bias], [R, C], [amap(2, 0, 1), amap(2, 0), amap(2, 1), amap(2, 1), amap(2, 0, 1)],
                     ["parallel"] * 2, norm, dtype)
    k.store(y, k.view("y", [R, C], dtype))
    return k.done()


def softmax(R: int, C: int, axis: int = 1, dtype: str = "f16", name: str = "softmax") -> Module:
    """Softmax of an R x C matrix along `axis` (1: over each row's columns, 0: over each column's rows), in f32."""
    k = Kernel(name, ["x", "y"])
    x = k.cast(k.load(k.view("x", [R, C], dtype)), "f32")
    keep = amap(2, 1 - axis)
    mx = k.reduce(x, [axis], Arith.maximumf, float("-inf"))
    (e,) = k.generic([x, mx], [R, C], [amap(2, 0, 1), keep, amap(2, 0, 1)], ["parallel"] * 2,
                     lambda k, v: [k.op(Math.exp, k.op(Arith.subf, v[0], v[1]))])
    total = k.reduce(e, [axis], Arith.addf, 0.0)
    (p,) = k.generic([e, total], [R, C], [amap(2, 0, 1), keep, amap(2, 0, 1)], ["parallel"] * 2,
                     lambda k, v: [k.b.create(Arith.truncf, [k.op(Arith.divf, v[0], v[1])], [ftype(dtype)])[0]], dtype)
    k.store(p, k.view("y", [R, C], dtype))
    return k.done()


def reduce_sum(R: int, C: int, dtype: str = "f16", name: str = "reduce_sum") -> Module:
    """The sum of every element of an R x C matrix, in f32, stored as a 1-element tensor."""
    k = Kernel(name, ["x", "y"])
    x = k.cast(k.load(k.view("x", [R, C], dtype)), "f32")
    (s,) = k.generic([x], [1], [amap(2, 0, 1), af.AffineMap(num_dims=2, num_symbols=0, results=(af.const(0),))],
                     ["reduction", "reduction"], lambda k, v: [k.op(Arith.addf, v[1], v[0])], init=k.fill(0.0, [1]))
    k.store(s, k.view("y", [1], "f32"))
    return k.done()


def elementwise3d(A: int, B: int, C: int, dtype: str = "f16", name: str = "add_silu_3d") -> Module:
    """z = silu(x + y) over A x B x C tensors (a residual add and activation)."""
    k = Kernel(name, ["x", "y", "z"])
    x, y = k.load(k.view("x", [A, B, C], dtype)), k.load(k.view("y", [A, B, C], dtype))

    def body(k: Kernel, v: list[Value]) -> list[Value]:
        s = k.op(Arith.addf, *(k.b.create(Arith.extf, [u], [F32])[0] for u in v[:2]))
        return [k.b.create(Arith.truncf, [_silu(k, s)], [ftype(dtype)])[0]]

    (z,) = k.generic([x, y], [A, B, C], [amap(3, 0, 1, 2)] * 3, ["parallel"] * 3, body, dtype)
    k.store(z, k.view("z", [A, B, C], dtype))
    return k.done()


def transpose(R: int, C: int, dtype: str = "f16", name: str = "transpose") -> Module:
    k = Kernel(name, ["x", "y"])
    x = k.load(k.view("x", [R, C], dtype))
    t = k.named(Linalg.transpose, [x], k.empty([C, R], dtype), permutation=at.i64_array([1, 0]))
    k.store(t, k.view("y", [C, R], dtype))
    return k.done()


def rope(T: int, H: int, D: int, dtype: str = "f16", name: str = "rope") -> Module:
    """Rotary embedding (rotate-half) of x[T, H, D] with cos/sin tables [T, D/2], in f32."""
    h = D // 2
    k = Kernel(name, ["x", "cos", "sin", "y"])
    xv, yv = k.view("x", [T, H, D], dtype), k.view("y", [T, H, D], dtype)
    cos, sin = k.load(k.view("cos", [T, h], dtype)), k.load(k.view("sin", [T, h], dtype))
    half = (T, H, h)
    tiles = [k.b.access_tile(xv, [k.c0, k.c0, start], _box(half), half) for start in (0, h)]
    x1, x2 = (k.b.load(t, ftype(dtype)) for t in tiles)

    def body(k: Kernel, v: list[Value]) -> list[Value]:
        a, b, c, s = (k.b.create(Arith.extf, [u], [F32])[0] for u in v[:4])
        r1 = k.op(Arith.subf, k.op(Arith.mulf, a, c), k.op(Arith.mulf, b, s))
        r2 = k.op(Arith.addf, k.op(Arith.mulf, b, c), k.op(Arith.mulf, a, s))
        return [k.b.create(Arith.truncf, [r], [ftype(dtype)])[0] for r in (r1, r2)]

    m3, tok = amap(3, 0, 1, 2), amap(3, 0, 2)
    y1, y2 = k.generic([x1, x2, cos, sin], list(half), [m3, m3, tok, tok, m3, m3], ["parallel"] * 3, body, dtype, outs=2)
    for value, start in ((y1, 0), (y2, h)):
        k.b.store(value, k.b.access_tile(yv, [k.c0, k.c0, start], _box(half), half))
    return k.done()


def swiglu(T: int, F: int, dtype: str = "f16", name: str = "swiglu") -> Module:
    """y = silu(gate) * up over T x F (the MLP's gate after its two projections)."""
    k = Kernel(name, ["gate", "up", "y"])
    g, u = k.load(k.view("gate", [T, F], dtype)), k.load(k.view("up", [T, F], dtype))

    def body(k: Kernel, v: list[Value]) -> list[Value]:
        a, b = (k.b.create(Arith.extf, [x], [F32])[0] for x in v[:2])
        return [k.b.create(Arith.truncf, [k.op(Arith.mulf, _silu(k, a), b)], [ftype(dtype)])[0]]

    (y,) = k.generic([g, u], [T, F], [amap(2, 0, 1)] * 3, ["parallel"] * 2, body, dtype)
    k.store(y, k.view("y", [T, F], dtype))
    return k.done()


def scan(R: int, C: int, dtype: str = "f32", decay: float | None = None, name: str = "scan") -> Module:
    """y[r] = s_r where s_r = (decay *) s_{r-1} + x[r] over rows, s_{-1} = 0, state carried in a
    loop's iter_args (one row per step); the final state is stored to `last`. The columns are
    independent, the rows run in order."""
    k = Kernel(name, ["x", "y", "last"])
    x = k.view("x", [R, C], dtype)
    y = k.view("y", [R, C], "f32")
    row_t = ty.TensorType(shape=(1, C), element_type=F32)
    zero = k.b.create(Tensor.splat, [k.scalar(0.0)], [row_t])[0]
    c1, cr = k.b.constant(1, INDEX), k.b.constant(R, INDEX)
    with k.b.for_(k.c0, cr, c1, [zero]) as (r, state):
        tile = k.b.access_tile(x, [r, k.c0], _box((1, C)), (1, C))
        row = k.cast(k.b.load(tile, ftype(dtype)), "f32")
        kept = state if decay is None else k.op(Arith.mulf, state, k.b.create(Tensor.splat, [k.scalar(decay)],
                                                                                   [row_t])[0])
        new = k.op(Arith.addf, kept, row)
        k.b.store(new, k.b.access_tile(y, [r, k.c0], _box((1, C)), (1, C)))
        k.b.yield_(new)
    (final,) = k.b.last_results
    k.store(final, k.view("last", [1, C], "f32"))
    return k.done()


def gather(V: int, L: int, C: int, dtype: str = "f16", name: str = "gather") -> Module:
    """An embedding lookup y[l, c] = table[ids[l], c] * scale[l] (f32 out): the table's rows read
    through an indirect access tile whose first subscript is ids[l]."""
    from ktir.ir.operation import Operation

    k = Kernel(name, ["table", "ids", "scale", "y"])
    table = k.view("table", [V, C], dtype)
    ids = k.b.memory_view(k.args["ids"], [L], [1], ty.i(32), coordinate_set=_box([L]))
    l_, c_, start = af.dim(0), af.dim(1), af.dim(2)  # the variables, then the captured start
    maps = (af.AffineMap(num_dims=3, num_symbols=0, results=(start + l_,)),  # ind(%ids[start + l])
            af.AffineMap(num_dims=3, num_symbols=0, results=(c_,)))
    attrs = {"variables_space_order": at.AffineMapAttr(value=af.AffineMap.identity(2)),
             "variables_space_set": at.IntegerSetAttr(value=_box([L, C])),
             "per_dim_subscript_kinds": at.DenseArrayAttr(element_type=ty.I1, values=(1, 0)),
             "per_dim_subscript_maps": at.ArrayAttr(elements=tuple(at.AffineMapAttr(value=m) for m in maps)),
             "operandSegmentSizes": _seg(1, 1, 1, 0)}
    body = Block(arguments=[BlockArgument(name=k.b.fresh("l"), type=INDEX), BlockArgument(name=k.b.fresh("c"), type=INDEX)],
                 operations=[Operation(name=Ktdp.region_terminator)])
    tile = k.b.create(Ktdp.construct_indirect_access_tile, [table, ids, k.c0], [ty.AccessTileType(shape=(L, C))],
                      attrs, [Region(blocks=[body])])[0]
    rows = k.cast(k.b.load(tile, ftype(dtype)), "f32")
    scale = k.load(k.view("scale", [L], "f32"))
    (out,) = k.generic([rows, scale], [L, C], [amap(2, 0, 1), amap(2, 0), amap(2, 0, 1)], ["parallel"] * 2,
                       lambda kk, a: [kk.op(Arith.mulf, a[0], a[1])])
    k.store(out, k.view("y", [L, C], "f32"))
    return k.done()


def gather_inputs(V: int, L: int, C: int, seed: int = 0, dtype: str = "f16") -> dict[str, object]:
    """Inputs of `gather(V, L, C)` whose indices lie in the table (random inputs cannot know that)."""
    import ml_dtypes
    import numpy as np

    rng = np.random.default_rng(seed)
    np_dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}[dtype]
    return {"table": rng.standard_normal((V, C)).astype(np_dtype), "ids": rng.integers(0, V, L).astype(np.int32),
            "scale": rng.standard_normal(L).astype(np.float32), "y": np.zeros((L, C), np.float32)}


def layernorm_stats(R: int, C: int, dtype: str = "f16", name: str = "layernorm_stats") -> Module:
    """LayerNorm (no affine) that also stores each row's mean and rstd, as training frameworks do:
    y = (x - mean) * rstd, mean and rstd stored as [R] vectors of f32."""
    k = Kernel(name, ["x", "y", "mean", "rstd"])
    x = k.cast(k.load(k.view("x", [R, C], dtype)), "f32")
    inv, eps = k.scalar(1.0 / C), k.scalar(1e-5)
    total = k.reduce(x, [1], Arith.addf, 0.0)
    (mu,) = k.generic([total], [R], [amap(1, 0), amap(1, 0)], ["parallel"], lambda k, v: [k.op(Arith.mulf, v[0], inv)])
    (d,) = k.generic([x, mu], [R, C], [amap(2, 0, 1), amap(2, 0), amap(2, 0, 1)], ["parallel"] * 2,
                     lambda k, v: [k.op(Arith.subf, v[0], v[1])])
    (var,) = k.generic([d], [R], [amap(2, 0, 1), amap(2, 0)], ["parallel", "reduction"],
                       lambda k, v: [k.op(Arith.addf, v[1], k.op(Arith.mulf, v[0], v[0]))], init=k.fill(0.0, [R]))
    (rstd,) = k.generic([var], [R], [amap(1, 0), amap(1, 0)], ["parallel"],
                        lambda k, v: [k.op(Math.rsqrt, k.op(Arith.addf, k.op(Arith.mulf, v[0], inv), eps))])
    (y,) = k.generic([d, rstd], [R, C], [amap(2, 0, 1), amap(2, 0), amap(2, 0, 1)], ["parallel"] * 2,
                     lambda k, v: [k.b.create(Arith.truncf, [k.op(Arith.mulf, v[0], v[1])], [ftype(dtype)])[0]], dtype)
    k.store(y, k.view("y", [R, C], dtype))
    k.store(mu, k.view("mean", [R], "f32"))
    k.store(rstd, k.view("rstd", [R], "f32"))
    return k.done()


def row_sum(R: int, C: int, dtype: str = "f32", name: str = "row_sum") -> Module:
    """Each row's sum, stored as an [R, 1] column."""
    k = Kernel(name, ["x", "y"])
    x = k.cast(k.load(k.view("x", [R, C], dtype)), "f32")
    (s,) = k.generic([x], [R, 1], [amap(2, 0, 1), af.AffineMap(num_dims=2, num_symbols=0, results=(af.dim(0), af.const(0)))],
                     ["parallel", "reduction"], lambda k, v: [k.op(Arith.addf, v[1], v[0])], init=k.fill(0.0, [R, 1]))
    k.store(s, k.view("y", [R, 1], "f32"))
    return k.done()


def matmul_transposed(M: int, N: int, K: int, ta: bool, tb: bool, dtype: str = "bf16", init: float = 0.0,
                      spelling: str = "named", name: str = "matmul_t") -> Module:
    """C = init + op(A) op(B) with A stored [K, M] when `ta` and B stored [N, K] when `tb`, in f32,
    stored in `dtype`. `spelling`: "named" (linalg.matmul_transpose_a/b; both transposed: a
    linalg.transpose of A, then matmul_transpose_b), "generic" (the same, A transposed by a
    linalg.generic), "maps" (linalg.matmul with indexing_maps, spelled out even when they are
    the default ones)."""
    k = Kernel(name, ["a", "b", "c"])
    a = k.load(k.view("a", [K, M] if ta else [M, K], dtype))
    b = k.load(k.view("b", [N, K] if tb else [K, N], dtype))
    acc = k.fill(init, [M, N])
    if spelling == "maps":
        m, n, kk = af.dim(0), af.dim(1), af.dim(2)
        maps = [(kk, m) if ta else (m, kk), (n, kk) if tb else (kk, n), (m, n)]
        attrs = {"indexing_maps": at.ArrayAttr(elements=tuple(
            at.AffineMapAttr(value=af.AffineMap(num_dims=3, num_symbols=0, results=r)) for r in maps))}
        c = k.named(Linalg.matmul, [a, b], acc, **attrs)
    elif ta and tb:  # A transposed first: by linalg.transpose ("named"), or by a generic that permutes ("generic")
        if spelling == "generic":
            (at_,) = k.generic([a], [M, K], [amap(2, 1, 0), amap(2, 0, 1)], ["parallel"] * 2, lambda kk, v: [v[0]],
                               dtype)
        else:
            at_ = k.named(Linalg.transpose, [a], k.empty([M, K], dtype), permutation=at.i64_array([1, 0]))
        c = k.named(Linalg.matmul_transpose_b, [at_, b], acc)
    else:
        op = Linalg.matmul_transpose_a if ta else Linalg.matmul_transpose_b if tb else Linalg.matmul
        c = k.named(op, [a, b], acc)
    k.store(k.cast(c, dtype), k.view("c", [M, N], dtype))
    return k.done()
