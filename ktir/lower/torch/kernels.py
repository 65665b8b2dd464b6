"""One KTIR kernel per graph op (or fused elementwise chain), split over the target's cores.

Every kernel reads strided views of global buffers, works in f32 and stores its output
box; the division of work is `work.divide` over the output's parallel dims.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ktir.dialects.names import Arith, Linalg, Math
from ktir.ir import attributes as ir_attr
from ktir.lower.torch import chunked, rowwise
from ktir.lower.torch.expr import Expr, Op, Reduce, Row, evaluate, reduced_dims
from ktir.lower.torch.refs import STICK_BYTES, Ref, element_bytes
from ktir.lower.torch.work import Division, boxes, divide, divisors, fitted, sub_blocks
from ktir.lower.torch.writer import Aliases, Body, Kernel


def _stick(ktype: str) -> int:
    """Elements per 128-byte stick."""
    return STICK_BYTES // element_bytes(ktype)


def _permute_expr(expr: Expr, perm: list[int]) -> Expr:
    if isinstance(expr, Ref):
        return expr.permute(perm)
    if isinstance(expr, Op):
        return replace(expr, args=tuple(_permute_expr(a, perm) for a in expr.args))
    if isinstance(expr, Reduce):
        dims = tuple(sorted(perm.index(d) for d in expr.dims))
        return Reduce(expr.kind, _permute_expr(expr.arg, perm), dims, tuple(expr.in_shape[d] for d in perm))
    if isinstance(expr, Row):
        return Row(_permute_expr(expr.arg, perm), tuple(expr.shape[d] for d in perm))
    return expr


def _rank1(ref: Ref) -> Ref:
    return ref if ref.rank else Ref(ref.buffer, ref.ktype, ref.offset, (1,), (1,))


def _expr_rank1(expr: Expr) -> Expr:
    if isinstance(expr, Ref):
        return _rank1(expr)
    if isinstance(expr, Op):
        return replace(expr, args=tuple(_expr_rank1(a) for a in expr.args))
    return expr


def elementwise(name: str, aliases: Aliases, expr: Expr, out: Ref, cores: int) -> Kernel:
    """out = expr, one generic per tile (after the reductions the chain reads, whose reduced
    dims stay whole on each tile); in steps when the tile's block does not fit (chunked.py)."""
    if out.rank == 0:
        expr, out = _expr_rank1(expr), _rank1(out)
    whole = reduced_dims(expr)
    div = divide(out.shape, [d for d in range(out.rank) if d not in whole], cores, _stick(out.ktype))
    options = chunked.plans(expr, div.block, whole, _stick(out.ktype))

    def build(plan: chunked.ChunkPlan) -> Kernel:
        k = Kernel(name, aliases, div.grid)
        k.division = div
        if plan == options[0]:  # the whole block at once
            starts = div.starts(k)
            k.store(evaluate(k, expr, starts, div.block, out.ktype), out, starts, div.block)
        else:
            chunked.emit(k, expr, out, div, whole, plan)
        return k

    return fitted(name, aliases, options, build, what=chunked.ChunkPlan.text,
                  volume=lambda p: chunked.volume(p, whole, div.block, expr))


def _scale(k: Kernel, value: str, shape: list[int], factor: float) -> str:
    rank = len(shape)
    ident = k.aliases.identity(rank)

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op(Arith.mulf, names[0], kk.fconst(factor), out=r)
        return r

    return k.generic([(value, shape, "f32", ident)], shape, ident, ["parallel"] * rank, None, "f32", body)


def _rowwise(k: Kernel, op: str, x: str, row: str, shape: list[int], extra: str | None = None) -> str:
    """x[..., j] <op> row[...] (row broadcast along the last dim), f32."""
    rank = len(shape)
    ident = k.aliases.identity(rank)
    rmap = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        if op == "expsub":
            d = kk.fresh("s")
            kk.op(Arith.subf, names[0], names[1], out=d)
            kk.op(Math.exp, d, out=r)
        else:
            kk.op(f"arith.{op}", names[0], names[1], out=r)
        return r

    return k.generic([(x, shape, "f32", ident), (row, shape[:-1], "f32", rmap)], shape, ident, ["parallel"] * rank, None, "f32", body)


def _row_map(k: Kernel, value: str, shape: list[int], fn: Body) -> str:
    rank = len(shape)
    ident = k.aliases.identity(rank)
    return k.generic([(value, shape, "f32", ident)], shape, ident, ["parallel"] * rank, None, "f32", fn)


def _rows_last(expr: Expr, shape: Sequence[int], dim: int, out: Ref, cores: int) -> tuple[Expr, Ref, Division]:
    """Move `dim` last in the operand and the output, and split the other dims over the cores."""
    rank = len(shape)
    perm = [d for d in range(rank) if d != dim] + [dim]
    pshape = [shape[d] for d in perm]
    return _permute_expr(expr, perm), out.permute(perm), divide(pshape, range(rank - 1), cores)


def _rows_fitted(name: str, aliases: Aliases, expr: Expr, out: Ref, div: Division, whole: Callable[[Kernel], None],
                 chunks: Callable[[Kernel, rowwise.RowPlan], None]) -> Kernel:
    """A row kernel: `whole(k)` emits the tile's block in one step; `chunks(k, plan)` in the
    plan's row sub-blocks and chunks (rowwise.py), when the block does not fit."""
    options = rowwise.plans(expr, div.block, _stick(out.ktype))

    def build(plan: rowwise.RowPlan) -> Kernel:
        k = Kernel(name, aliases, div.grid)
        k.division = div
        if plan == options[0]:
            whole(k)
        else:
            chunks(k, plan)
        return k

    return fitted(name, aliases, options, build, what=rowwise.RowPlan.text, volume=rowwise.volume)


def softmax(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], dim: int, out: Ref, cores: int, log: bool = False) -> Kernel:
    """out = softmax(expr, dim) (or log_softmax): max, exp(x - max), sum, divide; rows split over cores."""
    expr, out, div = _rows_last(expr, shape, dim, out, cores)
    return _rows_fitted(name, aliases, expr, out, div, lambda k: _softmax_whole(k, expr, out, div, log),
                        lambda k, plan: rowwise.softmax(k, expr, out, div, plan, log))


def _softmax_whole(k: Kernel, expr: Expr, out: Ref, div: Division, log: bool) -> None:
    starts = div.starts(k)
    block = list(div.block)
    x = evaluate(k, expr, starts, block)
    mx, _ = k.reduce(x, block, "maximumf", -math.inf)
    e = _rowwise(k, "expsub", x, mx, block)
    total, _ = k.reduce(e, block, "addf", 0.0)
    if log:  # (x - max) - log(sum)

        def logsum(kk: Kernel, names: list[str], acc: str) -> str:
            r = kk.fresh("s")
            kk.op(Math.log, names[0], out=r)
            return r

        lse = _row_map(k, total, block[:-1], logsum)
        shifted = _rowwise(k, "subf", x, mx, block)
        y = _rowwise(k, "subf", shifted, lse, block)
    else:
        y = _rowwise(k, "divf", e, total, block)
    k.store(k.convert(y, block, "f32", out.ktype), out, starts, block)


def _centred(k: Kernel, x: str, block: list[int], n: int) -> tuple[str, str]:
    """x minus its row mean over the last dim (of length n), and the rows' sums of its squares."""
    total, _ = k.reduce(x, block, "addf", 0.0)
    mean = _scale(k, total, block[:-1], 1.0 / n)
    xc = _rowwise(k, "subf", x, mean, block)

    def square(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op(Arith.mulf, names[0], names[0], out=r)
        return r

    ss, _ = k.reduce(_row_map(k, xc, block, square), block, "addf", 0.0)
    return xc, ss


def variance(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], dim: int, correction: float, out: Ref, cores: int) -> Kernel:
    """out = sum((x - mean)^2) / (n - correction) over `dim`; `out` has that dim as size 1."""
    expr, out, div = _rows_last(expr, shape, dim, out, cores)
    return _rows_fitted(name, aliases, expr, out, div, lambda k: _variance_whole(k, expr, out, div, correction),
                        lambda k, plan: rowwise.variance(k, expr, out, div, plan, correction))


def _variance_whole(k: Kernel, expr: Expr, out: Ref, div: Division, correction: float) -> None:
    starts = div.starts(k)
    block = list(div.block)
    n = block[-1]
    x = evaluate(k, expr, starts, block)
    _, ss = _centred(k, x, block, n)
    var = _scale(k, ss, block[:-1], 1.0 / (n - correction) if n > correction else math.nan)
    k.store(k.convert(var, block[:-1], "f32", out.ktype), out.squeeze([out.rank - 1]), starts[:-1], block[:-1])


def layer_norm(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], weight: Ref | None, bias: Ref | None, eps: float, out: Ref, cores: int) -> Kernel:
    """out = (x - mean) * rsqrt(var + eps) * weight + bias over the last dim."""
    div = divide(shape, range(len(shape) - 1), cores)
    return _rows_fitted(name, aliases, expr, out, div, lambda k: _layer_norm_whole(k, expr, shape, weight, bias, eps, out, div),
                        lambda k, plan: rowwise.layer_norm(k, expr, out, div, plan, weight, bias, eps))


def _layer_norm_whole(k: Kernel, expr: Expr, shape: Sequence[int], weight: Ref | None, bias: Ref | None, eps: float, out: Ref,
                      div: Division) -> None:
    rank = len(shape)
    width = shape[-1]
    aliases = k.aliases
    starts = div.starts(k)
    block = list(div.block)
    x = evaluate(k, expr, starts, block)
    xc, var_sum = _centred(k, x, block, width)

    def rstd(kk: Kernel, names: list[str], acc: str) -> str:
        m = kk.fresh("s")
        kk.op(Arith.mulf, names[0], kk.fconst(1.0 / width), out=m)
        e = kk.fresh("s")
        kk.op(Arith.addf, m, kk.fconst(eps), out=e)
        r = kk.fresh("s")
        kk.op(Math.rsqrt, e, out=r)
        return r

    inv = _row_map(k, var_sum, block[:-1], rstd) if rank > 1 else _row_map(k, var_sum, [1], rstd)
    y = _rowwise(k, "mulf", xc, inv, block)
    ident = aliases.identity(rank)
    col = aliases.map(rank, [f"d{rank - 1}"])
    for param, op in ((weight, "mulf"), (bias, "addf")):
        if param is None:
            continue
        pv, pshape = k.load(param, [0], [width])

        def affine(kk: Kernel, names: list[str], acc: str, op: str = op, pt: str = param.ktype) -> str:
            p = kk.scalar_convert(names[1], pt, "f32")
            r = kk.fresh("s")
            kk.op(f"arith.{op}", names[0], p, out=r)
            return r

        y = k.generic([(y, block, "f32", ident), (pv, pshape, param.ktype, col)], block, ident, ["parallel"] * rank, None, "f32", affine)
    k.store(k.convert(y, block, "f32", out.ktype), out, starts, block)


def _batch_offsets(k: Kernel, ref: Ref, batch_idx: Sequence[int | str]) -> int | str:
    off: int | str = 0
    for idx, stride in zip(batch_idx, ref.strides, strict=False):
        off = k.add(off, k.mul(idx, stride) if stride else 0)
    return off


def _plane(ref: Ref, nb: int) -> Ref:
    """The trailing 2-D plane of a batched ref (its offset is added per batch index)."""
    return Ref(ref.buffer, ref.ktype, ref.offset, ref.shape[nb:], ref.strides[nb:])


def _batch_loops(k: Kernel, div: Division, nb: int) -> list[int | str]:
    """Per batch dim, the index: a loop over the tile's block, or its start when the block is 1."""
    starts = div.starts(k)
    idx: list[int | str] = []
    for d in range(nb):
        if div.block[d] == 1:
            idx.append(starts[d])
        else:
            idx.append(k.open_for(starts[d], k.add(starts[d], div.block[d])))
    return idx


def _matmul_division(shape: Sequence[int], kdim: int, cores: int, stick: int) -> Division:
    """Batch dims first, then rows or columns, whichever moves fewer operand elements in
    total (every tile loads its rows of A and its columns of B)."""
    nb = len(shape) - 2
    batch = list(range(nb))
    candidates = [divide(shape, [*batch, nb, nb + 1], cores, stick), divide(shape, [*batch, nb + 1, nb], cores, stick)]

    def traffic(d: Division) -> int:
        return d.cores * kdim * (d.block[-2] + d.block[-1])

    return min(candidates, key=traffic)


@dataclass(frozen=True)
class MatmulPlan:
    """A tile's loops: blocks of `rows` x `cols` of its output, each summed over K in steps of `depth`."""

    rows: int
    cols: int
    depth: int

    def text(self) -> str:
        return f"{self.rows}x{self.depth} @ {self.depth}x{self.cols} blocks"


def _matmul_plans(mb: int, nb: int, kdim: int, a: Ref, b: Ref) -> list[MatmulPlan]:
    """The whole block first, then by global traffic (A's rows are re-read once per block of
    columns, B's columns once per block of rows), larger K steps first."""
    ea, eb = element_bytes(a.ktype), element_bytes(b.ktype)
    pairs = [(r, c) for r in divisors(mb) for c in divisors(nb, _stick(b.ktype))]
    pairs.sort(key=lambda p: (kdim * mb * nb * (ea / p[1] + eb / p[0]), -p[0] * p[1]))
    steps = divisors(kdim, _stick(a.ktype))
    plans = [MatmulPlan(r, c, kc) for r, c in pairs for kc in steps]
    plans.remove(MatmulPlan(mb, nb, kdim))
    return [MatmulPlan(mb, nb, kdim), *plans]


def _matmul_need(p: MatmulPlan, mb: int, nb: int, kdim: int, a: Ref, b: Ref) -> int:
    """A lower bound of a plan's peak plus its double-buffering headroom: at the product, the
    A and B blocks, the accumulator and the result (f32); one more iteration's blocks when looping."""
    blocks = p.rows * p.depth * element_bytes(a.ktype) + p.depth * p.cols * element_bytes(b.ktype)
    looped = (p.rows, p.cols, p.depth) != (mb, nb, kdim)
    return blocks * (2 if looped else 1) + 2 * p.rows * p.cols * 4


def matmul(name: str, aliases: Aliases, a: Ref, b: Ref, bias: Ref | None, out: Ref, cores: int) -> Kernel:
    """out[..., M, N] = a[..., M, K] @ b[..., K, N] (+ bias[N]); batch dims may broadcast (stride 0).
    Each tile computes its block of the output in sub-blocks that fit the scratchpad, each
    accumulated over K in f32 (an scf.for carrying the sum) when A's rows and B's columns
    for the whole K do not fit."""
    kdim = a.shape[-1]
    div = _matmul_division(out.shape, kdim, cores, _stick(out.ktype))
    mb, nbk = div.block[-2], div.block[-1]
    return fitted(name, aliases, _matmul_plans(mb, nbk, kdim, a, b),
                  lambda p: _matmul_kernel(name, aliases, a, b, bias, out, div, p),
                  lambda p: _matmul_need(p, mb, nbk, kdim, a, b), MatmulPlan.text)


def _matmul_kernel(name: str, aliases: Aliases, a: Ref, b: Ref, bias: Ref | None, out: Ref, div: Division, plan: MatmulPlan) -> Kernel:
    nb = out.rank - 2
    kdim = a.shape[-1]
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts = div.starts(k)
    idx = _batch_loops(k, div, nb)
    mb, nbk = div.block[-2], div.block[-1]
    mr, nc, kc = plan.rows, plan.cols, plan.depth
    loops = 0
    n0, m0 = starts[-1], starts[-2]
    a_off, b_off = _batch_offsets(k, a, idx), _batch_offsets(k, b, idx)
    if nc < nbk:
        n0 = k.add(n0, k.mul(k.open_for(0, nbk // nc, "n"), nc))
        loops += 1
    if mr < mb:
        m0 = k.add(m0, k.mul(k.open_for(0, mb // mr, "m"), mr))
        loops += 1
    acc = k.filled([mr, nc], 0.0)
    if kc == kdim:
        at, _ = k.load(_plane(a, nb), [m0, 0], [mr, kdim], a_off)
        bt, _ = k.load(_plane(b, nb), [0, n0], [kdim, nc], b_off)
        res = k.linalg(Linalg.matmul, [at, bt], [acc], k.fresh("mm"))
    else:  # K in steps, the f32 sum carried from step to step
        step, (carried,) = k.open_carry(0, kdim // kc, [acc], "kk")
        k0 = k.mul(step, kc)
        at, _ = k.load(_plane(a, nb), [m0, k0], [mr, kc], a_off)
        bt, _ = k.load(_plane(b, nb), [k0, n0], [kc, nc], b_off)
        (res,) = k.close_carry([k.linalg(Linalg.matmul, [at, bt], [carried], k.fresh("mm"))])
    if bias is not None:
        bv, bshape = k.load(bias, [n0], [nc])
        ident = aliases.identity(2)

        def add_bias(kk: Kernel, names: list[str], accv: str) -> str:
            p = kk.scalar_convert(names[1], bias.ktype, "f32")
            r = kk.fresh("s")
            kk.op(Arith.addf, names[0], p, out=r)
            return r

        res = k.generic([(res, [mr, nc], "f32", ident), (bv, bshape, bias.ktype, aliases.map(2, ["d1"]))], [mr, nc], ident, ["parallel"] * 2, None, "f32", add_bias)
    k.store(k.convert(res, [mr, nc], "f32", out.ktype), _plane(out, nb), [m0, n0], [mr, nc], _batch_offsets(k, out, idx))
    for _ in range(loops + sum(1 for d in range(nb) if div.block[d] != 1)):
        k.close()
    return k


@dataclass(frozen=True)
class AttentionPlan:
    """A tile's loops: blocks of `rows` query rows, each over the keys in blocks of `keys`
    (all of them: a plain softmax; fewer: an online softmax carrying the running max and sum)."""

    rows: int
    keys: int

    def text(self) -> str:
        return f"{self.rows} query rows x {self.keys} keys"


def attention(
    name: str, aliases: Aliases, q: Ref, key: Ref, v: Ref, out: Ref, causal: bool, scale: float, cores: int, attn_mask: Ref | None = None
) -> Kernel:
    """out = softmax(q k^T * scale [+ causal mask] [+ attn_mask]) v per (batch, head); k/v heads
    shared by groups of q heads. `attn_mask` (broadcast to q's batch dims x [Sq, Skv]) is
    boolean (False: masked out) or added to the scores. A query row whose keys are all masked
    gives 0, as torch does. When a tile's query rows and all
    keys do not fit its scratchpad, it loops over blocks of query rows and, within each, over
    blocks of keys with an online softmax (running max and sum carried in f32)."""
    d, dv = q.shape[-1], v.shape[-1]
    skv = v.shape[-2]
    div = divide(out.shape, range(out.rank - 1), cores)
    qb = div.block[-2]
    eq, ek, ev = element_bytes(q.ktype), element_bytes(key.ktype), element_bytes(v.ktype)
    plans = [AttentionPlan(r, c) for r in divisors(qb) for c in divisors(skv)]
    plans.sort(key=lambda p: (qb // p.rows, -p.keys))

    def need(p: AttentionPlan) -> int:  # K and V blocks (twice when looping), two f32 score blocks
        looped = (p.rows, p.keys) != (qb, skv)
        return p.keys * (d * ek + dv * ev) * (2 if looped else 1) + 2 * p.rows * p.keys * 4 + p.rows * d * eq

    return fitted(name, aliases, plans, lambda p: _attention_kernel(name, aliases, q, key, v, out, causal, scale, div, attn_mask, p),
                  need, AttentionPlan.text)


def _attention_kernel(
    name: str, aliases: Aliases, q: Ref, key: Ref, v: Ref, out: Ref, causal: bool, scale: float, div: Division, attn_mask: Ref | None,
    plan: AttentionPlan,
) -> Kernel:
    nb = q.rank - 2
    d = q.shape[-1]
    skv, dv = v.shape[-2:]
    group = q.shape[-3] // key.shape[-3] if nb >= 1 else 1
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts = div.starts(k)
    idx = _batch_loops(k, div, nb)
    kv_idx = list(idx)
    if group > 1:
        kv_idx[-1] = k.div(idx[-1], group)
    qb, qr, kb = div.block[-2], plan.rows, plan.keys
    q0 = starts[-2]
    q_off, k_off, v_off = _batch_offsets(k, q, idx), _batch_offsets(k, key, kv_idx), _batch_offsets(k, v, kv_idx)
    m_off = _batch_offsets(k, attn_mask, idx) if attn_mask is not None else 0
    if qr < qb:
        q0 = k.add(q0, k.mul(k.open_for(0, qb // qr, "q"), qr))
    qt, _ = k.load(_plane(q, nb), [q0, 0], [qr, d], q_off)

    def scores(j0: int | str) -> str:
        """The scaled, masked scores of the query rows against keys [j0, j0 + kb)."""
        kt, _ = k.load(_plane(key, nb), [j0, 0], [kb, d], k_off)
        s = k.fresh("scores")
        qmap, kmap, smap = aliases.map(3, ["d0", "d2"]), aliases.map(3, ["d1", "d2"]), aliases.map(3, ["d0", "d1"])
        k.linalg(Linalg.matmul, [qt, kt], [k.filled([qr, kb], 0.0)], s, {"indexing_maps": ir_attr.ArrayAttr(elements=(qmap, kmap, smap))})
        inputs = [(s, [qr, kb], "f32", aliases.identity(2))]
        if attn_mask is not None:
            plane = _plane(attn_mask, nb)
            mv, mshape = k.load(plane, [q0, j0], [qr, kb], m_off)
            inputs.append((mv, mshape, attn_mask.ktype, aliases.map(2, ["0" if st == 0 else f"d{i}" for i, st in enumerate(plane.strides)])))

        def mask(kk: Kernel, names: list[str], acc: str) -> str:
            xs = kk.fresh("s")
            kk.op(Arith.mulf, names[0], kk.fconst(scale), out=xs)
            if attn_mask is not None and attn_mask.ktype == "i1":
                kept = kk.fresh("s")
                kk.op(Arith.select, names[1], xs, kk.fconst(-math.inf), out=kept)
                xs = kept
            elif attn_mask is not None:
                added = kk.fresh("s")
                kk.op(Arith.addf, xs, kk.scalar_convert(names[1], attn_mask.ktype, "f32"), out=added)
                xs = added
            if not causal:
                return xs
            i, j = kk.fresh("i"), kk.fresh("j")
            kk.linalg_index(0, out=i)
            kk.linalg_index(1, out=j)
            qi = kk.add(i, q0)
            kj = kk.add(j, j0)
            fut = kk.fresh("fut")
            kk.cmp(Arith.cmpi, "ugt", kk.index(kj), kk.index(qi), out=fut)
            r = kk.fresh("s")
            kk.op(Arith.select, fut, kk.fconst(-math.inf), xs, out=r)
            return r

        return k.generic(inputs, [qr, kb], aliases.identity(2), ["parallel"] * 2, None, "f32", mask)

    def times_v(p: str, j0: int | str) -> str:
        vt, _ = k.load(_plane(v, nb), [j0, 0], [kb, dv], v_off)
        return k.linalg(Linalg.matmul, [k.convert(p, [qr, kb], "f32", v.ktype), vt], [k.filled([qr, dv], 0.0)], k.fresh("o"))

    if kb == skv:  # all keys at once: a plain softmax
        sm = scores(0)
        mx, _ = k.reduce(sm, [qr, kb], "maximumf", -math.inf)
        # a row with every key masked has max -inf: shift by 0 instead, its weights are 0 (torch's output: 0)
        e = _rowwise(k, "expsub", sm, _combine(k, [mx], [qr], _finite_or_zero), [qr, kb])
        total, _ = k.reduce(e, [qr, kb], "addf", 0.0)
        o = times_v(_combine(k, [e, total], [qr, kb], _divide_or_zero, rows=[False, True]), 0)
    else:  # online softmax over key blocks: running max m, sum l and output acc, rescaled as m grows
        inits = [k.filled([qr], -math.inf), k.filled([qr], 0.0), k.filled([qr, dv], 0.0)]
        jv, (m, total, acc) = k.open_carry(0, skv // kb, inits, "kv")
        j0 = k.mul(jv, kb)
        sm = scores(j0)
        block_max, _ = k.reduce(sm, [qr, kb], "maximumf", -math.inf)
        m_new = _combine(k, [m, block_max], [qr], lambda kk, a: kk.op(Arith.maximumf, a[0], a[1], out=kk.fresh("s")))
        # the shift subtracted before exp: 0 while a row has seen only masked keys (-inf - -inf is NaN)
        shift = _combine(k, [m_new], [qr], _finite_or_zero)
        p = _rowwise(k, "expsub", sm, shift, [qr, kb])
        rescale = _combine(k, [m, shift], [qr], lambda kk, a: _exp_of(kk, kk.op(Arith.subf, a[0], a[1], out=kk.fresh("s"))))
        row_sum, _ = k.reduce(p, [qr, kb], "addf", 0.0)
        l_new = _combine(k, [total, rescale, row_sum], [qr], _fma)
        pv = times_v(p, j0)
        acc_new = _combine(k, [acc, rescale, pv], [qr, dv], _fma, rows=[False, True, False])
        _, l_end, acc_end = k.close_carry([m_new, l_new, acc_new])
        o = _combine(k, [acc_end, l_end], [qr, dv], _divide_or_zero, rows=[False, True])
    k.store(k.convert(o, [qr, dv], "f32", out.ktype), _plane(out, nb), [q0, 0], [qr, dv], _batch_offsets(k, out, idx))
    for _ in range((1 if qr < qb else 0) + sum(1 for dd in range(nb) if div.block[dd] != 1)):
        k.close()
    return k


def _combine(k: Kernel, values: Sequence[str], shape: list[int], fn: Callable[[Kernel, list[str]], str],
             rows: Sequence[bool] | None = None) -> str:
    """An f32 generic over `shape` of `values` (each of `shape`, or of shape[:-1] broadcast along
    the last dim where `rows` says so), computing fn(kernel, scalars)."""
    rank = len(shape)
    ident = k.aliases.identity(rank)
    row_map = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])
    flags = list(rows) if rows is not None else [False] * len(values)
    inputs = [(v, shape[:-1] if r else list(shape), "f32", row_map if r else ident) for v, r in zip(values, flags, strict=True)]
    return k.generic(inputs, shape, ident, ["parallel"] * rank, None, "f32", lambda kk, names, acc: fn(kk, names))


def _finite_or_zero(k: Kernel, a: list[str]) -> str:
    inf = k.cmp(Arith.cmpf, "oeq", a[0], k.fconst(-math.inf), out=k.fresh("s"))
    return k.op(Arith.select, inf, k.fconst(0.0), a[0], out=k.fresh("s"))


def _divide_or_zero(k: Kernel, a: list[str]) -> str:
    """a0 / a1, 0 where a1 is 0 (a row whose keys are all masked: no weight anywhere)."""
    zero = k.cmp(Arith.cmpf, "oeq", a[1], k.fconst(0.0), out=k.fresh("s"))
    return k.op(Arith.select, zero, k.fconst(0.0), k.op(Arith.divf, a[0], a[1], out=k.fresh("s")), out=k.fresh("s"))


def _exp_of(k: Kernel, x: str) -> str:
    return k.op(Math.exp, x, out=k.fresh("s"))


def _fma(k: Kernel, a: list[str]) -> str:
    """a0 * a1 + a2."""
    return k.op(Arith.addf, k.op(Arith.mulf, a[0], a[1], out=k.fresh("s")), a[2], out=k.fresh("s"))


def embedding(name: str, aliases: Aliases, weight: Ref, ids: Ref, out: Ref, cores: int) -> Kernel:
    """out[r, :] = weight[ids[r], :] through an indirect access tile (ids flattened, contiguous);
    in blocks of rows and of columns when a tile's rows do not fit its scratchpad."""
    rows, width = out.shape
    div = divide([rows, width], [0], cores)
    options = [(r, c) for r, c in boxes(div.block, [0, 1], {1: _stick(weight.ktype)})]
    return fitted(name, aliases, options, lambda p: _embedding(name, aliases, weight, ids, out, div, p),
                  what=lambda p: f"{p[0]} rows x {p[1]} columns", volume=lambda p: p[0] * p[1])


def _embedding(name: str, aliases: Aliases, weight: Ref, ids: Ref, out: Ref, div: Division, box: tuple[int, int]) -> Kernel:
    width = out.shape[1]
    k = Kernel(name, aliases, div.grid)
    k.division = div
    (r0, c0), loops = sub_blocks(k, div, box)
    rb, cw = box
    # the table's columns [c0, c0 + cw): a view starting at column c0
    table = k.view(weight if cw == width else Ref(weight.buffer, weight.ktype, weight.offset, (weight.shape[0], cw), weight.strides), c0)
    idv = k.view(ids)
    src = k.fresh("gather")
    m, c = k.fresh("m"), k.fresh("k")
    val = k.gather_rows(src, table, idv, k.index(r0), (m, c), [rb, cw], weight.ktype)
    stored = k.convert(val, [rb, cw], weight.ktype, out.ktype) if weight.ktype != out.ktype else val
    k.store(stored, out, [r0, c0], [rb, cw])
    for _ in range(loops):
        k.close()
    return k
