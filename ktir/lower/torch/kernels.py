"""One KTIR kernel per graph op (or fused elementwise chain), split over the target's cores.

Every kernel reads strided views of global buffers, works in f32 and stores its output
box; the division of work is `work.divide` over the output's parallel dims.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ktir.ir import attributes as ir_attr
from ktir.lower.torch.expr import Expr, Op, Reduce, Row, evaluate, reduced_dims
from ktir.lower.torch.refs import STICK_BYTES, Ref, element_bytes
from ktir.lower.torch.work import Division, divide
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
    dims stay whole on each tile)."""
    if out.rank == 0:
        expr, out = _expr_rank1(expr), _rank1(out)
    whole = reduced_dims(expr)
    div = divide(out.shape, [d for d in range(out.rank) if d not in whole], cores, _stick(out.ktype))
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts = div.starts(k)
    value = evaluate(k, expr, starts, div.block, out.ktype)
    k.store(value, out, starts, div.block)
    return k


def _scale(k: Kernel, value: str, shape: list[int], factor: float) -> str:
    rank = len(shape)
    ident = k.aliases.identity(rank)

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op("arith.mulf", names[0], kk.fconst(factor), out=r)
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
            kk.op("arith.subf", names[0], names[1], out=d)
            kk.op("math.exp", d, out=r)
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


def softmax(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], dim: int, out: Ref, cores: int, log: bool = False) -> Kernel:
    """out = softmax(expr, dim) (or log_softmax): max, exp(x - max), sum, divide; rows split over cores."""
    expr, out, div = _rows_last(expr, shape, dim, out, cores)
    k = Kernel(name, aliases, div.grid)
    starts = div.starts(k)
    block = list(div.block)
    x = evaluate(k, expr, starts, block)
    mx, _ = k.reduce(x, block, "maximumf", -math.inf)
    e = _rowwise(k, "expsub", x, mx, block)
    total, _ = k.reduce(e, block, "addf", 0.0)
    if log:  # (x - max) - log(sum)

        def logsum(kk: Kernel, names: list[str], acc: str) -> str:
            r = kk.fresh("s")
            kk.op("math.log", names[0], out=r)
            return r

        lse = _row_map(k, total, block[:-1], logsum)
        shifted = _rowwise(k, "subf", x, mx, block)
        y = _rowwise(k, "subf", shifted, lse, block)
    else:
        y = _rowwise(k, "divf", e, total, block)
    k.store(k.convert(y, block, "f32", out.ktype), out, starts, block)
    return k


def _centred(k: Kernel, x: str, block: list[int], n: int) -> tuple[str, str]:
    """x minus its row mean over the last dim (of length n), and the rows' sums of its squares."""
    total, _ = k.reduce(x, block, "addf", 0.0)
    mean = _scale(k, total, block[:-1], 1.0 / n)
    xc = _rowwise(k, "subf", x, mean, block)

    def square(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op("arith.mulf", names[0], names[0], out=r)
        return r

    ss, _ = k.reduce(_row_map(k, xc, block, square), block, "addf", 0.0)
    return xc, ss


def variance(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], dim: int, correction: float, out: Ref, cores: int) -> Kernel:
    """out = sum((x - mean)^2) / (n - correction) over `dim`; `out` has that dim as size 1."""
    expr, out, div = _rows_last(expr, shape, dim, out, cores)
    k = Kernel(name, aliases, div.grid)
    starts = div.starts(k)
    block = list(div.block)
    n = block[-1]
    x = evaluate(k, expr, starts, block)
    _, ss = _centred(k, x, block, n)
    var = _scale(k, ss, block[:-1], 1.0 / (n - correction) if n > correction else math.nan)
    k.store(k.convert(var, block[:-1], "f32", out.ktype), out.squeeze([out.rank - 1]), starts[:-1], block[:-1])
    return k


def layer_norm(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], weight: Ref | None, bias: Ref | None, eps: float, out: Ref, cores: int) -> Kernel:
    """out = (x - mean) * rsqrt(var + eps) * weight + bias over the last dim."""
    rank = len(shape)
    width = shape[-1]
    div = divide(shape, range(rank - 1), cores)
    k = Kernel(name, aliases, div.grid)
    starts = div.starts(k)
    block = list(div.block)
    x = evaluate(k, expr, starts, block)
    xc, var_sum = _centred(k, x, block, width)

    def rstd(kk: Kernel, names: list[str], acc: str) -> str:
        m = kk.fresh("s")
        kk.op("arith.mulf", names[0], kk.fconst(1.0 / width), out=m)
        e = kk.fresh("s")
        kk.op("arith.addf", m, kk.fconst(eps), out=e)
        r = kk.fresh("s")
        kk.op("math.rsqrt", e, out=r)
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
    return k


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


def matmul(name: str, aliases: Aliases, a: Ref, b: Ref, bias: Ref | None, out: Ref, cores: int) -> Kernel:
    """out[..., M, N] = a[..., M, K] @ b[..., K, N] (+ bias[N]); batch dims may broadcast (stride 0)."""
    nb = out.rank - 2
    kdim = a.shape[-1]
    div = _matmul_division(out.shape, kdim, cores, _stick(out.ktype))
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts = div.starts(k)
    idx = _batch_loops(k, div, nb)
    mb, nbk = div.block[-2], div.block[-1]
    m0, n0 = starts[-2], starts[-1]
    at, _ = k.load(_plane(a, nb), [m0, 0], [mb, kdim], _batch_offsets(k, a, idx))
    bt, _ = k.load(_plane(b, nb), [0, n0], [kdim, nbk], _batch_offsets(k, b, idx))
    acc = k.filled([mb, nbk], 0.0)
    res = k.linalg("linalg.matmul", [at, bt], [acc], k.fresh("mm"))
    if bias is not None:
        bv, bshape = k.load(bias, [n0], [nbk])
        ident = aliases.identity(2)

        def add_bias(kk: Kernel, names: list[str], accv: str) -> str:
            p = kk.scalar_convert(names[1], bias.ktype, "f32")
            r = kk.fresh("s")
            kk.op("arith.addf", names[0], p, out=r)
            return r

        res = k.generic([(res, [mb, nbk], "f32", ident), (bv, bshape, bias.ktype, aliases.map(2, ["d1"]))], [mb, nbk], ident, ["parallel"] * 2, None, "f32", add_bias)
    k.store(k.convert(res, [mb, nbk], "f32", out.ktype), _plane(out, nb), [m0, n0], [mb, nbk], _batch_offsets(k, out, idx))
    for _ in range(sum(1 for d in range(nb) if div.block[d] != 1)):
        k.close()
    return k


def attention(
    name: str, aliases: Aliases, q: Ref, key: Ref, v: Ref, out: Ref, causal: bool, scale: float, cores: int, attn_mask: Ref | None = None
) -> Kernel:
    """out = softmax(q k^T * scale [+ causal mask] [+ attn_mask]) v per (batch, head); k/v heads
    shared by groups of q heads. `attn_mask` (broadcast to q's batch dims x [Sq, Skv]) is
    boolean (False: masked out) or added to the scores."""
    nb = q.rank - 2
    sq, d = q.shape[-2:]
    skv, dv = v.shape[-2:]
    group = q.shape[-3] // key.shape[-3] if nb >= 1 else 1
    div = divide(out.shape, range(out.rank - 1), cores)
    k = Kernel(name, aliases, div.grid)
    starts = div.starts(k)
    idx = _batch_loops(k, div, nb)
    kv_idx = list(idx)
    if group > 1:
        kv_idx[-1] = k.div(idx[-1], group)
    qb = div.block[-2]
    q0 = starts[-2]
    qt, _ = k.load(_plane(q, nb), [q0, 0], [qb, d], _batch_offsets(k, q, idx))
    kt, _ = k.load(_plane(key, nb), [0, 0], [skv, d], _batch_offsets(k, key, kv_idx))
    vt, _ = k.load(_plane(v, nb), [0, 0], [skv, dv], _batch_offsets(k, v, kv_idx))
    zeros = k.filled([qb, skv], 0.0)
    s = k.fresh("scores")
    qmap, kmap, smap = aliases.map(3, ["d0", "d2"]), aliases.map(3, ["d1", "d2"]), aliases.map(3, ["d0", "d1"])
    k.linalg("linalg.matmul", [qt, kt], [zeros], s, {"indexing_maps": ir_attr.ArrayAttr(elements=(qmap, kmap, smap))})

    inputs = [(s, [qb, skv], "f32", aliases.identity(2))]
    if attn_mask is not None:
        plane = _plane(attn_mask, nb)
        mv, mshape = k.load(plane, [q0, 0], [qb, skv], _batch_offsets(k, attn_mask, idx))
        inputs.append((mv, mshape, attn_mask.ktype, aliases.map(2, ["0" if st == 0 else f"d{i}" for i, st in enumerate(plane.strides)])))

    def mask(kk: Kernel, names: list[str], acc: str) -> str:
        xs = kk.fresh("s")
        kk.op("arith.mulf", names[0], kk.fconst(scale), out=xs)
        if attn_mask is not None and attn_mask.ktype == "i1":
            kept = kk.fresh("s")
            kk.op("arith.select", names[1], xs, kk.fconst(-math.inf), out=kept)
            xs = kept
        elif attn_mask is not None:
            added = kk.fresh("s")
            kk.op("arith.addf", xs, kk.scalar_convert(names[1], attn_mask.ktype, "f32"), out=added)
            xs = added
        if not causal:
            return xs
        i, j = kk.fresh("i"), kk.fresh("j")
        kk.linalg_index(0, out=i)
        kk.linalg_index(1, out=j)
        qi = kk.add(i, q0)
        fut = kk.fresh("fut")
        kk.cmp("arith.cmpi", "ugt", j, kk.index(qi), out=fut)
        r = kk.fresh("s")
        kk.op("arith.select", fut, kk.fconst(-math.inf), xs, out=r)
        return r

    sm = k.generic(inputs, [qb, skv], aliases.identity(2), ["parallel"] * 2, None, "f32", mask)
    mx, _ = k.reduce(sm, [qb, skv], "maximumf", -math.inf)
    e = _rowwise(k, "expsub", sm, mx, [qb, skv])
    total, _ = k.reduce(e, [qb, skv], "addf", 0.0)
    p = _rowwise(k, "divf", e, total, [qb, skv])
    pt = k.convert(p, [qb, skv], "f32", v.ktype)
    acc = k.filled([qb, dv], 0.0)
    o = k.linalg("linalg.matmul", [pt, vt], [acc], k.fresh("o"))
    k.store(k.convert(o, [qb, dv], "f32", out.ktype), _plane(out, nb), [q0, 0], [qb, dv], _batch_offsets(k, out, idx))
    for _ in range(sum(1 for dd in range(nb) if div.block[dd] != 1)):
        k.close()
    return k


def embedding(name: str, aliases: Aliases, weight: Ref, ids: Ref, out: Ref, cores: int) -> Kernel:
    """out[r, :] = weight[ids[r], :] through an indirect access tile (ids flattened, contiguous)."""
    rows, width = out.shape
    div = divide([rows, width], [0], cores)
    k = Kernel(name, aliases, div.grid)
    starts = div.starts(k)
    rb = div.block[0]
    r0 = k.index(starts[0])
    table, idv = k.view(weight), k.view(ids)
    src = k.fresh("gather")
    m, c = k.fresh("m"), k.fresh("k")
    val = k.gather_rows(src, table, idv, r0, (m, c), [rb, width], weight.ktype)
    stored = k.convert(val, [rb, width], weight.ktype, out.ktype) if weight.ktype != out.ktype else val
    k.store(stored, out, [starts[0], 0], [rb, width])
    return k
