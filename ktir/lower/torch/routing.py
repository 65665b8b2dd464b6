"""Kernels for mixture-of-experts routing: top-k selection along the last dim.

`topk` runs k rounds over each row held whole on a tile: the max (or min) of the columns not
yet taken, the first such column holding it, then that column marked taken. NaN counts as
larger than every number, as in torch: first among the largest, last among the smallest.
Indices are computed as f32 (exact below 2^24, far above any expert count) and converted to
the index type once. Ties go to the lowest index.
"""

from __future__ import annotations

import math

from ktir.dialects.names import Arith
from ktir.lower.torch.expr import Expr, evaluate
from ktir.lower.torch.kernels import _rows_last
from ktir.lower.torch.refs import Ref
from ktir.lower.torch.writer import Aliases, Kernel, element


def _column(kk: Kernel, rank: int) -> str:
    """Inside a linalg body over `rank` dims: the index along the last dim, as f32."""
    j = kk.linalg_index(rank - 1, out=kk.fresh("j"))
    ji = kk.op(Arith.index_cast, j, type=element("i64"), out=kk.fresh("j"))
    return kk.op(Arith.sitofp, ji, type=element("f32"), out=kk.fresh("j"))


def _first_index(k: Kernel, x: str, taken: str, best: str, block: list[int], nan: bool) -> str:
    """Per row, the lowest column j not taken whose x[..., j] equals best[...] (NaN matching NaN),
    or, with `nan`, the lowest column not taken holding a NaN; n (one past the row) if none, as f32."""
    rank = len(block)
    n = block[-1]
    row = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])
    ident = k.aliases.identity(rank)

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        value, mark, target = names
        jf = _column(kk, rank)
        free = kk.cmp(Arith.cmpf, "oeq", mark, kk.fconst(0.0), out=kk.fresh("free"))
        x_nan = kk.cmp(Arith.cmpf, "uno", value, value, out=kk.fresh("nan"))
        if nan:
            match = x_nan
        else:
            equal = kk.cmp(Arith.cmpf, "oeq", value, target, out=kk.fresh("eq"))
            t_nan = kk.cmp(Arith.cmpf, "uno", target, target, out=kk.fresh("nan"))
            both = kk.op(Arith.andi, x_nan, t_nan, out=kk.fresh("s"))
            match = kk.op(Arith.ori, equal, both, out=kk.fresh("s"))
        hit = kk.op(Arith.andi, free, match, out=kk.fresh("hit"))
        cand = kk.op(Arith.select, hit, jf, kk.fconst(float(n)), out=kk.fresh("s"))
        return kk.op(Arith.minimumf, acc, cand, out=kk.fresh("s"))

    init = k.filled(block[:-1], float(n))
    return k.generic([(x, block, "f32", ident), (taken, block, "f32", ident), (best, block[:-1], "f32", row)],
                     block[:-1], row, ["parallel"] * (rank - 1) + ["reduction"], init, "f32", body)


def _candidates(k: Kernel, x: str, taken: str, block: list[int], largest: bool) -> str:
    """The values a round chooses from: taken columns out of the running (-inf for the
    largest, +inf for the smallest), and, for the smallest, NaNs too (they come last)."""
    rank = len(block)
    ident = k.aliases.identity(rank)
    fill = -math.inf if largest else math.inf

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        out = kk.cmp(Arith.cmpf, "une", names[1], kk.fconst(0.0), out=kk.fresh("out"))
        if not largest:
            x_nan = kk.cmp(Arith.cmpf, "uno", names[0], names[0], out=kk.fresh("nan"))
            out = kk.op(Arith.ori, out, x_nan, out=kk.fresh("s"))
        return kk.op(Arith.select, out, kk.fconst(fill), names[0], out=kk.fresh("s"))

    return k.generic([(x, block, "f32", ident), (taken, block, "f32", ident)], block, ident, ["parallel"] * rank, None, "f32", body)


def _take(k: Kernel, taken: str, col: str, block: list[int]) -> str:
    """taken with column col[...] of each row marked."""
    rank = len(block)
    ident = k.aliases.identity(rank)
    row = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        hit = kk.cmp(Arith.cmpf, "oeq", _column(kk, rank), names[1], out=kk.fresh("hit"))
        return kk.op(Arith.select, hit, kk.fconst(1.0), names[0], out=kk.fresh("s"))

    return k.generic([(taken, block, "f32", ident), (col, block[:-1], "f32", row)], block, ident, ["parallel"] * rank, None, "f32", body)


def _pick_nan_last(k: Kernel, best: str, col: str, nan_col: str, shape: list[int], n: int) -> tuple[str, str]:
    """Where no number is left (col == n), the first NaN: its column, and NaN as the value."""
    ident = k.aliases.identity(len(shape))

    def column(kk: Kernel, names: list[str], acc: str) -> str:
        none = kk.cmp(Arith.cmpf, "oeq", names[0], kk.fconst(float(n)), out=kk.fresh("none"))
        return kk.op(Arith.select, none, names[1], names[0], out=kk.fresh("s"))

    def value(kk: Kernel, names: list[str], acc: str) -> str:
        none = kk.cmp(Arith.cmpf, "oeq", names[1], kk.fconst(float(n)), out=kk.fresh("none"))
        return kk.op(Arith.select, none, kk.fconst(math.nan), names[0], out=kk.fresh("s"))

    inputs = [(col, shape, "f32", ident), (nan_col, shape, "f32", ident)]
    chosen = k.generic(inputs, shape, ident, ["parallel"] * len(shape), None, "f32", column)
    val = k.generic([(best, shape, "f32", ident), (col, shape, "f32", ident)], shape, ident, ["parallel"] * len(shape), None, "f32", value)
    return val, chosen


def to_integer(k: Kernel, value: str, shape: list[int], ktype: str) -> str:
    """An f32 tensor holding whole numbers, as `ktype` (i32/i64)."""
    ident = k.aliases.identity(len(shape))

    def body(kk: Kernel, names: list[str], acc: str) -> str:
        r = kk.fresh("s")
        kk.op(Arith.fptosi, names[0], type=element(ktype), out=r)
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
    taken = k.filled(block, 0.0)
    combiner = "maximumf" if largest else "minimumf"
    n = block[-1]
    for i in range(count):
        best, _ = k.reduce(_candidates(k, x, taken, block, largest), block, combiner, -math.inf if largest else math.inf)
        col = _first_index(k, x, taken, best, block, nan=False)
        if not largest:  # when only NaNs are left, they come in column order
            best, col = _pick_nan_last(k, best, col, _first_index(k, x, taken, best, block, nan=True), block[:-1], n)
        k.store(k.convert(best, block[:-1], "f32", values.ktype), values.select(rank - 1, i), starts[:-1], block[:-1])
        k.store(to_integer(k, col, block[:-1], indices.ktype), indices.select(rank - 1, i), starts[:-1], block[:-1])
        if i + 1 < count:
            taken = _take(k, taken, col, block)
    return k
