"""Single-tile, whole-tensor kernels: the typical scheduler input, at any shape.

Each function returns KTIR text for one compute tile (`grid = [1]`) working on whole
tensors in global memory, in the forms `schedulers.kernels` recognises. The benchmarks
build their Llama-3.1-8B and Granite kernels with them; the tests run them small.
The kernels are built with `ktir.builder` and printed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ktir.builder import Builder, Value
from ktir.dialects.names import Arith, Linalg
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.syntax.printer import print_module

from .sets import box, projection, scalar

GLOBAL = at.MemorySpaceAttr(kind="global")
F32 = ty.F32


def _f32(value: float, bits: int | None = None) -> at.FloatAttr:
    return at.FloatAttr(value=value, type=F32, bits=bits)


def _view(b: Builder, ptr: Value, shape: Sequence[int], dt: ty.Type, cset: at.Attribute, name: str) -> Value:
    """A row-major global view of `shape` at `ptr`."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    return b.memory_view(ptr, list(shape), strides, dt, GLOBAL, cset, name=name)


def matmul(M: int, N: int, K: int, dtype: str = "f16", name: str = "matmul") -> str:
    """C = A B with A M x K, B K x N, C M x N, accumulated in f32."""
    dt = scalar(dtype)
    b = Builder()
    b.note(f"C = A B on one tile: A {M}x{K}, B {K}x{N}, C {M}x{N} ({dtype}), accumulated in f32.")
    sa, sb, sc = b.alias("a", box(M, K)), b.alias("b", box(K, N)), b.alias("c", box(M, N))
    id2 = b.alias("id2", projection(2))
    with b.func(name, [("a_ptr", ty.INDEX), ("b_ptr", ty.INDEX), ("c_ptr", ty.INDEX)], grid=[1]) as (pa, pb, pc):
        c0 = b.index(0, "c0")
        zero = b.constant(_f32(0.0), name="zero")
        a, bv, c = _view(b, pa, (M, K), dt, sa, "a"), _view(b, pb, (K, N), dt, sb, "b"), _view(b, pc, (M, N), dt, sc, "c")
        ta = b.access_tile(a, [c0, c0], sa, [M, K], id2, name="ta")
        tb = b.access_tile(bv, [c0, c0], sb, [K, N], id2, name="tb")
        x, y = b.load(ta, dt, name="x"), b.load(tb, dt, name="y")
        init = b.fill(zero, b.empty(ty.tensor((M, N), F32), "e"), "init")
        acc = b.dps(Linalg.matmul, [x, y], [init], name="acc")
        res = b.arith.truncf(acc, result_types=[ty.tensor((M, N), dt)], name="res")
        b.store(res, b.access_tile(c, [c0, c0], sc, [M, N], id2, name="tc"))
        b.func_return()
    return print_module(b.module)


@contextmanager
def _rows(b: Builder, name: str, args: Sequence[str], R: int) -> Iterator[tuple[Value, ...]]:
    """The one-tile function: yields (c0, cR, tid, *arguments)."""
    with b.func(name, [(a, ty.INDEX) for a in args], grid=[1]) as params:
        c0, cR = b.index(0, "c0"), b.index(R, "cR")
        (tid,) = b.tile_id(1, ["tid"])
        yield (c0, cR, tid, *params)
        b.func_return()


def rmsnorm(R: int, C: int, dtype: str = "f16", name: str = "rmsnorm") -> str:
    """y = x * rsqrt(mean(x^2) + eps) * w over rows of an R x C matrix, computed in f32."""
    dt = scalar(dtype)
    b = Builder()
    b.note(f"RMSNorm of {R} rows of {C} ({dtype}) on one tile, in f32.")
    rows, vec = b.alias("rows", box(R, C)), b.alias("vec", box(C))
    id1, id2 = b.alias("id1", projection(1)), b.alias("id2", projection(2))
    row, col = b.alias("row", projection(2, 0)), b.alias("col", projection(2, 1))
    with _rows(b, name, ["x_ptr", "w_ptr", "y_ptr"], R) as (c0, cR, tid, px, pw, py):
        zero = b.constant(_f32(0.0), name="zero")
        width = b.constant(_f32(float(C)), name="width")
        eps = b.constant(_f32(9.99999997e-07), name="eps")
        x, w, y = _view(b, px, (R, C), dt, rows, "x"), _view(b, pw, (C,), dt, vec, "w"), _view(b, py, (R, C), dt, rows, "y")
        wh = b.load(b.access_tile(w, [c0], vec, [C], id1, name="tw"), dt, name="wh")
        wf = b.arith.extf(wh, result_types=[ty.tensor((C,), F32)], name="wf")
        first = b.arith.muli(tid, cR, name="first")
        with b.for_(first, cR, cR, names=["r"]) as (r,):
            xh = b.load(b.access_tile(x, [r, c0], rows, [R, C], id2, name="tx"), dt, name="xh")
            xf = b.arith.extf(xh, result_types=[ty.tensor((R, C), F32)], name="xf")
            vec_e = b.empty(ty.tensor((R,), F32), "vec_e")
            ss_init = b.fill(zero, vec_e, "ss_init")
            with b.generic([xf], [ss_init], [id2, row], ["parallel", "reduction"], ["v", "acc"], "ss") as (v, acc):
                b.yield_(b.arith.addf(acc, b.arith.mulf(v, v, name="sq"), name="a"), op=Linalg.yield_)
            (ss,) = b.last_results
            with b.generic([ss], [vec_e], [id1, id1], ["parallel"], ["s", "o"], "inv") as (s, _):
                mean = b.arith.divf(s, width, name="mean")
                shifted = b.arith.addf(mean, eps, name="shifted")
                b.yield_(b.math.rsqrt(shifted, name="r_"), op=Linalg.yield_)
            (inv,) = b.last_results
            mat = b.empty(ty.tensor((R, C), F32), "mat")
            with b.generic([xf, inv, wf], [mat], [id2, row, col, id2], ["parallel"] * 2, ["v", "s", "g", "o"],
                           "yf") as (v, s, g, _):
                n = b.arith.mulf(v, s, name="n")
                b.yield_(b.arith.mulf(n, g, name="out"), op=Linalg.yield_)
            (yf,) = b.last_results
            yh = b.arith.truncf(yf, result_types=[ty.tensor((R, C), dt)], name="yh")
            b.store(yh, b.access_tile(y, [r, c0], rows, [R, C], id2, name="ty"))
    return print_module(b.module)


def softmax(R: int, C: int, dtype: str = "f16", name: str = "softmax") -> str:
    """Row softmax of an R x C matrix, computed in f32."""
    dt = scalar(dtype)
    b = Builder()
    b.note(f"Row softmax of {R} rows of {C} ({dtype}) on one tile, in f32.")
    rows, id2, row = b.alias("rows", box(R, C)), b.alias("id2", projection(2)), b.alias("row", projection(2, 0))
    with _rows(b, name, ["x_ptr", "y_ptr"], R) as (c0, cR, tid, px, py):
        neg_inf = b.constant(_f32(-math.inf, 0xFF800000), name="neg_inf")
        zero = b.constant(_f32(0.0), name="zero")
        x, y = _view(b, px, (R, C), dt, rows, "x"), _view(b, py, (R, C), dt, rows, "y")
        first = b.arith.muli(tid, cR, name="first")
        with b.for_(first, cR, cR, names=["r"]) as (r,):
            xh = b.load(b.access_tile(x, [r, c0], rows, [R, C], id2, name="tx"), dt, name="xh")
            xf = b.arith.extf(xh, result_types=[ty.tensor((R, C), F32)], name="xf")
            vec = b.empty(ty.tensor((R,), F32), "vec")
            mx = b.reduce(Arith.maximumf, [xf], [b.fill(neg_inf, vec, "max_init")], [1], name="max")
            mat = b.empty(ty.tensor((R, C), F32), "mat")
            with b.generic([xf, mx], [mat], [id2, row, id2], ["parallel"] * 2, ["v", "m", "o"], "e") as (v, m, _):
                b.yield_(b.math.exp(b.arith.subf(v, m, name="d"), name="ex"), op=Linalg.yield_)
            (e,) = b.last_results
            sum_init = b.fill(zero, vec, "sum_init")
            with b.reduce_body([e], [sum_init], [1], ["in", "acc"], "sum") as (x_in, acc):
                b.yield_(b.arith.addf(x_in, acc, name="s"), op=Linalg.yield_)
            (total,) = b.last_results
            with b.generic([e, total], [mat], [id2, row, id2], ["parallel"] * 2, ["v", "s", "o"], "p") as (v, s, _):
                b.yield_(b.arith.divf(v, s, name="q"), op=Linalg.yield_)
            (p,) = b.last_results
            ph = b.arith.truncf(p, result_types=[ty.tensor((R, C), dt)], name="ph")
            b.store(ph, b.access_tile(y, [r, c0], rows, [R, C], id2, name="ty"))
    return print_module(b.module)


def rope(T: int, H: int, D: int, name: str = "rope") -> str:
    """Rotary embedding (rotate-half) of Q[T x H x D] with T x D/2 cos and sin tables, f32."""
    h = D // 2
    b = Builder()
    b.note(f"RoPE of {T} tokens x {H} heads x {D} on one tile (f32).")
    sq, tab, half = b.alias("q", box(T, H, D)), b.alias("tab", box(T, h)), b.alias("half", box(T, H, h))
    id2, id3, tok = b.alias("id2", projection(2)), b.alias("id3", projection(3)), b.alias("tok", projection(3, 0, 2))
    blk, tblk = [T, H, h], [T, h]
    with _rows(b, name, ["q_ptr", "cos_ptr", "sin_ptr", "y_ptr"], T) as (c0, cR, tid, pq, pcos, psin, py):
        ch = b.index(h, "ch")
        qv, yv = _view(b, pq, (T, H, D), F32, sq, "qv"), _view(b, py, (T, H, D), F32, sq, "yv")
        cv, sv = _view(b, pcos, (T, h), F32, tab, "cv"), _view(b, psin, (T, h), F32, tab, "sv")
        first = b.arith.muli(tid, cR, name="first")
        with b.for_(first, cR, cR, names=["t"]) as (t,):
            t1 = b.access_tile(qv, [t, c0, c0], half, blk, id3, name="t1")
            t2 = b.access_tile(qv, [t, c0, ch], half, blk, id3, name="t2")
            tc = b.access_tile(cv, [t, c0], tab, tblk, id2, name="tc")
            ts = b.access_tile(sv, [t, c0], tab, tblk, id2, name="ts")
            x1, x2 = b.load(t1, F32, name="x1"), b.load(t2, F32, name="x2")
            cs, sn = b.load(tc, F32, name="cs"), b.load(ts, F32, name="sn")
            e = b.empty(ty.tensor(tuple(blk), F32), "e")
            with b.generic([x1, x2, cs, sn], [e, e], [id3, id3, tok, tok, id3, id3], ["parallel"] * 3,
                           ["a", "b", "c", "s", "o1", "o2"], ["y1", "y2"]) as (va, vb, vc, vs, _, _):
                r1 = b.arith.subf(b.arith.mulf(va, vc, name="ac"), b.arith.mulf(vb, vs, name="bs"), name="r1")
                r2 = b.arith.addf(b.arith.mulf(vb, vc, name="bc"), b.arith.mulf(va, vs, name="as"), name="r2")
                b.yield_(r1, r2, op=Linalg.yield_)
            y1, y2 = b.last_results
            o1 = b.access_tile(yv, [t, c0, c0], half, blk, id3, name="o1")
            o2 = b.access_tile(yv, [t, c0, ch], half, blk, id3, name="o2")
            b.store(y1, o1)
            b.store(y2, o2)
    return print_module(b.module)
