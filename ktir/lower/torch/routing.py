"""Kernels for mixture-of-experts routing: top-k selection along the last dim.

`topk` runs k rounds over each row held whole on a tile: the row's max (or min), the
first index holding it, then that element masked out. Indices are computed as f32
(exact below 2^24, far above any expert count) and converted to the index type once.
Ties go to the lowest index.
"""

from __future__ import annotations

import math

from ktir.lower.torch.expr import Expr, evaluate
from ktir.lower.torch.kernels import _rows_last
from ktir.lower.torch.refs import Ref
from ktir.lower.torch.writer import Aliases, Kernel, element


def _column(kk: Kernel, rank: int) -> str:
    """Inside a linalg body over `rank` dims: the index along the last dim, as f32."""
    j = kk.linalg_index(rank - 1, out=kk.fresh("j"))
    ji = kk.op("arith.index_cast", j, type=element("i64"), out=kk.fresh("j"))
    return kk.op("arith.sitofp", ji, type=element("f32"), out=kk.fresh("j"))


def _first_index_of(k: Kernel, x: str, best: str, block: list[int]) -> str:
    """Per row of `x`, the lowest column j with x[..., j] == best[...], as f32."""
    rank = len(block)
    n = block[-1]
    row = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        jf = _column(kk, rank)
        hit = kk.fresh("hit")
        kk.cmp("arith.cmpf", "oeq", names[0], names[1], out=hit)
        cand = kk.fresh("s")
        kk.op("arith.select", hit, jf, kk.fconst(float(n)), out=cand)
        r = kk.fresh("s")
        kk.op("arith.minimumf", acc, cand, out=r)
        return r

    init = k.filled(block[:-1], float(n))
    return k.generic(
        [(x, block, "f32", k.aliases.identity(rank)), (best, block[:-1], "f32", row)],
        block[:-1], row, ["parallel"] * (rank - 1) + ["reduction"], init, "f32", body,
    )


def _mask_column(k: Kernel, x: str, col: str, block: list[int], fill: float) -> str:
    """x with the element of column col[...] of each row replaced by `fill`."""
    rank = len(block)
    ident = k.aliases.identity(rank)
    row = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        jf = _column(kk, rank)
        hit = kk.fresh("hit")
        kk.cmp("arith.cmpf", "oeq", jf, names[1], out=hit)
        r = kk.fresh("s")
        kk.op("arith.select", hit, kk.fconst(fill), names[0], out=r)
        return r

    return k.generic([(x, block, "f32", ident), (col, block[:-1], "f32", row)], block, ident, ["parallel"] * rank, None, "f32", body)


def to_integer(k: Kernel, value: str, shape: list[int], ktype: str) -> str:
    """An f32 tensor holding whole numbers, as `ktype` (i32/i64)."""
    ident = k.aliases.identity(len(shape))

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op("arith.fptosi", names[0], type=element(ktype), out=r)
        return r

    return k.generic([(value, shape, "f32", ident)], shape, ident, ["parallel"] * len(shape), None, ktype, body)


def topk(name: str, aliases: Aliases, expr: Expr, shape: list[int], dim: int, count: int, largest: bool, values: Ref, indices: Ref, cores: int) -> Kernel:
    """values, indices = topk(expr, count, dim): sorted, largest first (or smallest with
    `largest=False`); rows split over the cores, each row whole on its tile."""
    expr, values, div = _rows_last(expr, shape, dim, values, cores)
    rank = len(shape)
    indices = indices.permute([d for d in range(rank) if d != dim] + [dim])
    k = Kernel(name, aliases, div.grid)
    k.division = div
    starts = div.starts(k)
    block = list(div.block)
    x = evaluate(k, expr, starts, block)
    combiner, fill = ("maximumf", -math.inf) if largest else ("minimumf", math.inf)
    for i in range(count):
        best, _ = k.reduce(x, block, combiner, fill)
        col = _first_index_of(k, x, best, block)
        k.store(k.convert(best, block[:-1], "f32", values.ktype), values.select(rank - 1, i), starts[:-1], block[:-1])
        k.store(to_integer(k, col, block[:-1], indices.ktype), indices.select(rank - 1, i), starts[:-1], block[:-1])
        if i + 1 < count:
            x = _mask_column(k, x, col, block, fill)
    return k
