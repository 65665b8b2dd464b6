"""The grouped matrix product of mixture-of-experts layers (transformers' `grouped_mm`):

    out[r] = x[r] @ w[e]   for the rows r in [offs[e-1], offs[e]) of expert e (offs[-1] = 0),

with x's rows already gathered by token and sorted by expert (the graph does that), and rows
from offs[E-1] on left zero. The kernel reads each expert's weight once and only the rows
routed to it: experts (and blocks of output columns) are divided over the cores; each tile
reads its experts' row ranges from `offs`, then loops over them in blocks of ROWS rows and
row by row for the rest (the ranges are data: the loops have dynamic bounds).
"""

from __future__ import annotations

from ktir.lower.torch.refs import STICK_BYTES, Ref, element_bytes
from ktir.lower.torch.work import divide
from ktir.lower.torch.writer import INDEX, Aliases, Kernel, element

ROWS = 8


def grouped_matmul(name: str, aliases: Aliases, x: Ref, w: Ref, offs: Ref, out: Ref, cores: int) -> Kernel:
    """out [S, N] from x [S, K] (sorted by expert), w [E, K, N] and offs [E] (cumulative row counts)."""
    rows, depth = x.shape
    experts, _, cols = w.shape
    div = divide([experts, cols], [0, 1], cores, STICK_BYTES // element_bytes(out.ktype))
    k = Kernel(name, aliases, div.grid)
    k.division = div
    e0, n0 = div.starts(k)
    eb, nb = div.block
    ends, _ = k.load(offs, [0], [experts])  # every expert's end row (small), read once per tile
    w_plane = Ref(w.buffer, w.ktype, w.offset, (depth, cols), w.strides[1:])
    x_rows = Ref(x.buffer, x.ktype, x.offset, (rows, depth), x.strides)

    def end_of(e: str | int) -> str:
        value = k.op("tensor.extract", ends, k.index(e), type=element(offs.ktype), out=k.fresh("end"))
        return k.op("arith.index_cast", value, type=INDEX, out=k.fresh("i"))

    def product(r0: str | int, count: int, weight: str) -> None:
        xt, _ = k.load(x_rows, [r0, 0], [count, depth])
        res = k.linalg("linalg.matmul", [xt, weight], [k.filled([count, nb], 0.0)], k.fresh("mm"))
        k.store(k.convert(res, [count, nb], "f32", out.ktype), out, [r0, n0], [count, nb])

    def zeros(r0: str | int) -> None:
        k.store(k.convert(k.filled([1, nb], 0.0), [1, nb], "f32", out.ktype), out, [r0, n0], [1, nb])

    looped = eb > 1
    e = k.add(e0, k.open_for(0, eb, "e")) if looped else e0
    first = k.cmp("arith.cmpi", "eq", k.index(e), k.index(0), out=k.fresh("first"))
    previous = k.op("arith.maxsi", k.op("arith.subi", k.index(e), k.index(1), out=k.fresh("i")), k.index(0), out=k.fresh("i"))
    start = k.op("arith.select", first, k.index(0), end_of(previous), out=k.fresh("start"))
    end = end_of(e)
    weight, _ = k.load(w_plane, [0, n0], [depth, nb], k.mul(k.index(e), w.strides[0]))
    span = k.op("arith.subi", end, start, out=k.fresh("i"))
    blocks = k.div(span, ROWS)
    b = k.open_for(0, blocks, "blk")
    product(k.add(start, k.mul(b, ROWS)), ROWS, weight)
    k.close()
    r = k.open_for(k.add(start, k.mul(blocks, ROWS)), end, "row")
    product(r, 1, weight)
    k.close()
    # rows no expert owns (from offs[E-1] on) are zero, written by the last expert's tiles
    last = k.cmp("arith.cmpi", "eq", k.index(e), k.index(experts - 1), out=k.fresh("last"))
    tail = k.op("arith.select", last, k.index(rows), end, out=k.fresh("tail"))
    zeros(k.open_for(end, tail, "row"))
    k.close()
    if looped:
        k.close()
    return k
