"""Kernels along a sequence dim (Mamba2's short convolution and chunked scan): depthwise
causal conv1d, cumulative sum, constant padding.

Each keeps the sequence dim whole on a tile and splits the others (channels, heads, rows)
over the cores, so a tile never needs a neighbour's elements. When a tile's block does not
fit its scratchpad, the tile loops over sub-blocks of those other dims (work.fitted); the
sequence dim stays whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ktir.dialects.names import Arith
from ktir.lower.torch.expr import Expr, evaluate, is_int
from ktir.lower.torch.kernels import _rows_last
from ktir.lower.torch.refs import Ref
from ktir.lower.torch.work import Division, boxes, divide, fitted, sub_blocks
from ktir.lower.torch.writer import Aliases, Kernel

SCAN_POINTS = 1 << 18


def conv1d_depthwise(
    name: str, aliases: Aliases, expr: Expr, in_shape: Sequence[int], weight: Ref, bias: Ref | None, padding: int, out: Ref, cores: int
) -> Kernel:
    """out[b, c, t] = bias[c] + sum_j weight[c, 0, j] * x[b, c, t + j - padding] (zero outside
    x): one group per channel, stride 1; (batch, channel) rows split over the cores."""
    div = divide(out.shape, [1, 0], cores, inner=None)
    options = boxes(div.block, [0, 1])
    return fitted(name, aliases, options, lambda box: _conv1d(name, aliases, expr, in_shape, weight, bias, padding, out, div, box),
                  what=_rows_text, volume=math.prod)


def _rows_text(box: tuple[int, ...]) -> str:
    return "x".join(map(str, box)) + " blocks"


def _conv1d(name: str, aliases: Aliases, expr: Expr, in_shape: Sequence[int], weight: Ref, bias: Ref | None, padding: int, out: Ref,
            div: Division, box: tuple[int, ...]) -> Kernel:
    length = in_shape[2]
    taps = weight.shape[-1]
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts, loops = sub_blocks(k, div, box)
    bb, cb, lout = box
    x = evaluate(k, expr, [starts[0], starts[1], 0], [bb, cb, length])
    xp, pshape = k.pad(x, [bb, cb, length], [0, 0, padding], [0, 0, padding])
    wv, wshape = k.load(weight, [starts[1], 0, 0], [cb, 1, taps])
    out_map = aliases.map(4, ["d0", "d1", "d2"])
    block = [bb, cb, lout]
    if bias is not None:
        bv, bshape = k.load(bias, [starts[1]], [cb])

        def broadcast(kk: Kernel, names: list[str], acc: str) -> str:
            return kk.scalar_convert(names[0], bias.ktype, "f32")

        ident = aliases.identity(3)
        init = k.generic([(bv, bshape, bias.ktype, aliases.map(3, ["d1"]))], block, ident, ["parallel"] * 3, None, "f32", broadcast)
    else:
        init = k.filled(block, 0.0)

    def tap(kk: Kernel, names: list[str], acc: str) -> str:
        w = kk.scalar_convert(names[1], weight.ktype, "f32")
        m = kk.fresh("s")
        kk.op(Arith.mulf, names[0], w, out=m)
        r = kk.fresh("s")
        kk.op(Arith.addf, acc, m, out=r)
        return r

    inputs = [(xp, pshape, "f32", aliases.map(4, ["d0", "d1", "d2 + d3"])), (wv, wshape, weight.ktype, aliases.map(4, ["d1", "0", "d3"]))]
    y = k.generic(inputs, block, out_map, ["parallel"] * 3 + ["reduction"], init, "f32", tap)
    k.store(k.convert(y, block, "f32", out.ktype), out, starts, block)
    for _ in range(loops):
        k.close()
    return k


def cumsum(name: str, aliases: Aliases, expr: Expr, shape: Sequence[int], dim: int, out: Ref, cores: int) -> Kernel:
    """out = cumsum(expr, dim): out[..., i] = sum_{j <= i} x[..., j], as one generic whose
    reduction dim j is masked above i; rows split over the cores. Integer results sum in i64
    (exactly), floating-point ones in f32."""
    expr, out, div = _rows_last(expr, shape, dim, out, cores)
    options = boxes(div.block, range(len(div.block) - 1))
    # the masked reduction's iteration space is rows x n x n: blocks of at most SCAN_POINTS (2^18) of it
    # (the interpreter holds a generic's iteration space at once: Granite 4's 2 x 256 rows of a
    # 256-long segment sum per tile took 4.4 GB as one generic)
    n = div.block[-1]
    options = [b for b in options if math.prod(b) * n <= SCAN_POINTS] or options[-1:]
    return fitted(name, aliases, options, lambda box: _cumsum(name, aliases, expr, out, div, box), what=_rows_text, volume=math.prod)


def _cumsum(name: str, aliases: Aliases, expr: Expr, out: Ref, div: Division, box: tuple[int, ...]) -> Kernel:
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts, loops = sub_blocks(k, div, box)
    block = list(box)
    rank = len(block)
    acc_type = "i64" if is_int(out.ktype) else "f32"
    x = evaluate(k, expr, starts, block, acc_type)
    xmap = aliases.map(rank + 1, [f"d{i}" for i in range(rank - 1)] + [f"d{rank}"])
    omap = aliases.map(rank + 1, [f"d{i}" for i in range(rank)])

    def prefix(kk: Kernel, names: list[str], acc: str) -> str:
        i, j = kk.fresh("i"), kk.fresh("j")
        kk.linalg_index(rank - 1, out=i)
        kk.linalg_index(rank, out=j)
        before = kk.fresh("le")
        kk.cmp(Arith.cmpi, "ule", j, i, out=before)
        v = kk.fresh("s")
        zero = kk.iconst(0) if acc_type == "i64" else kk.fconst(0.0)
        kk.op(Arith.select, before, names[0], zero, out=v)
        r = kk.fresh("s")
        kk.op(Arith.addi if acc_type == "i64" else Arith.addf, acc, v, out=r)
        return r

    y = k.generic([(x, block, acc_type, xmap)], block, omap, ["parallel"] * rank + ["reduction"], k.filled(block, 0, acc_type),
                  acc_type, prefix)
    k.store(k.convert(y, block, acc_type, out.ktype), out, starts, block)
    for _ in range(loops):
        k.close()
    return k


def pad(
    name: str, aliases: Aliases, expr: Expr, in_shape: Sequence[int], low: Sequence[int], high: Sequence[int], fill: float, out: Ref, cores: int
) -> Kernel:
    """out = expr padded with `fill` (`low[d]`/`high[d]` >= 0 elements around dim d); the
    padded dims stay whole on a tile, the others are split over the cores."""
    rank = len(in_shape)
    padded = {d for d in range(rank) if low[d] or high[d]}
    div = divide(out.shape, [d for d in range(rank) if d not in padded], cores)
    options = boxes(div.block, [d for d in range(rank) if d not in padded])
    return fitted(name, aliases, options, lambda box: _pad(name, aliases, expr, in_shape, low, high, fill, out, div, box, padded),
                  what=_rows_text, volume=math.prod)


def _pad(name: str, aliases: Aliases, expr: Expr, in_shape: Sequence[int], low: Sequence[int], high: Sequence[int], fill: float, out: Ref,
         div: Division, box: tuple[int, ...], padded: set[int]) -> Kernel:
    rank = len(in_shape)
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts, loops = sub_blocks(k, div, box)
    block = list(box)
    in_starts = [0 if d in padded else starts[d] for d in range(rank)]
    in_block = [in_shape[d] if d in padded else block[d] for d in range(rank)]
    x = evaluate(k, expr, in_starts, in_block)
    y, _ = k.pad(x, in_block, low, high, fill)
    k.store(k.convert(y, block, "f32", out.ktype), out, starts, block)
    for _ in range(loops):
        k.close()
    return k
