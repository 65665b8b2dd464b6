"""The grouped matrix product of mixture-of-experts layers (transformers' `grouped_mm`):

    out[r] = x[r] @ w[e]   for the rows r in [offs[e-1], offs[e]) of expert e (offs[-1] = 0),

with x's rows already gathered by token and sorted by expert (the graph does that), and rows
from offs[E-1] on left zero. The kernel reads each expert's weight once and only the rows
routed to it: experts (and blocks of output columns) are divided over the cores; each tile
reads its experts' row ranges from `offs`, then loops over them in blocks of ROWS rows and
row by row for the rest (the ranges are data: the loops have dynamic bounds). Weight blocks
too large for a tile's scratchpad are taken in blocks of columns, and K in steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from ktir.dialects.names import Arith, Linalg, Tensor
from ktir.lower.torch.refs import STICK_BYTES, Ref, element_bytes
from ktir.lower.torch.work import Division, divide, divisors, fitted
from ktir.lower.torch.writer import INDEX, Aliases, Kernel, element

ROWS = 8


@dataclass(frozen=True)
class ExpertsPlan:
    """Per expert, blocks of `cols` output columns; each summed over K in steps of `depth`."""

    cols: int
    depth: int

    def text(self) -> str:
        return f"{self.cols} columns, K in steps of {self.depth}"


def grouped_matmul(name: str, aliases: Aliases, x: Ref, w: Ref, offs: Ref, out: Ref, cores: int) -> Kernel:
    """out [S, N] from x [S, K] (sorted by expert), w [E, K, N] and offs [E] (cumulative row counts).
    When an expert's weight columns do not fit a tile's scratchpad, the tile takes them in
    blocks of columns, and when even those do not, it sums over K in steps (f32 carried)."""
    depth = x.shape[1]
    experts, _, cols = w.shape
    div = divide([experts, cols], [0, 1], cores, STICK_BYTES // element_bytes(out.ktype))
    nb = div.block[1]
    ex, ew = element_bytes(x.ktype), element_bytes(w.ktype)
    whole = [ExpertsPlan(c, depth) for c in divisors(nb, STICK_BYTES // ew)]
    steps = [ExpertsPlan(c, d) for c in divisors(nb, STICK_BYTES // ew) for d in divisors(depth, STICK_BYTES // ex)[1:]]

    def need(p: ExpertsPlan) -> int:  # the weight block (twice: the next one streams in), x rows, two f32 sums
        return 2 * (p.depth * p.cols * ew + ROWS * p.depth * ex) + 2 * ROWS * p.cols * 4

    return fitted(name, aliases, whole + steps, lambda p: _kernel(name, aliases, x, w, offs, out, div, p), need, ExpertsPlan.text)


def _kernel(name: str, aliases: Aliases, x: Ref, w: Ref, offs: Ref, out: Ref, div: Division, plan: ExpertsPlan) -> Kernel:
    rows, depth = x.shape
    experts = w.shape[0]
    k = Kernel(name, aliases, div.grid)
    k.division = div
    e0, n0 = div.starts(k)
    eb, nb = div.block
    nc, kc = plan.cols, plan.depth
    ends, _ = k.load(offs, [0], [experts])  # every expert's end row (small), read once per tile
    w_plane = Ref(w.buffer, w.ktype, w.offset, (depth, w.shape[2]), w.strides[1:])
    x_rows = Ref(x.buffer, x.ktype, x.offset, (rows, depth), x.strides)

    def end_of(e: str | int) -> str:
        value = k.op(Tensor.extract, ends, k.index(e), type=element(offs.ktype), out=k.fresh("end"))
        return k.op(Arith.index_cast, value, type=INDEX, out=k.fresh("i"))

    def product(r0: str | int, count: int, c0: str | int, w_off: str | int, weight: str | None) -> None:
        acc = k.filled([count, nc], 0.0)
        if weight is not None:  # the whole K at once, the weight block loaded by the caller
            xt, _ = k.load(x_rows, [r0, 0], [count, depth])
            res = k.linalg(Linalg.matmul, [xt, weight], [acc], k.fresh("mm"))
        else:
            step, (carried,) = k.open_carry(0, depth // kc, [acc], "kk")
            k0 = k.mul(step, kc)
            xt, _ = k.load(x_rows, [r0, k0], [count, kc])
            wt, _ = k.load(w_plane, [k0, c0], [kc, nc], w_off)
            (res,) = k.close_carry([k.linalg(Linalg.matmul, [xt, wt], [carried], k.fresh("mm"))])
        k.store(k.convert(res, [count, nc], "f32", out.ktype), out, [r0, c0], [count, nc])

    def zeros(r0: str | int) -> None:
        k.store(k.convert(k.filled([1, nb], 0.0), [1, nb], "f32", out.ktype), out, [r0, n0], [1, nb])

    looped = eb > 1
    e = k.add(e0, k.open_for(0, eb, "e")) if looped else e0
    first = k.cmp(Arith.cmpi, "eq", k.index(e), k.index(0), out=k.fresh("first"))
    previous = k.op(Arith.maxsi, k.op(Arith.subi, k.index(e), k.index(1), out=k.fresh("i")), k.index(0), out=k.fresh("i"))
    start = k.op(Arith.select, first, k.index(0), end_of(previous), out=k.fresh("start"))
    end = end_of(e)
    w_off = k.mul(k.index(e), w.strides[0])
    c0 = k.add(n0, k.mul(k.open_for(0, nb // nc, "n"), nc)) if nc < nb else n0
    weight = k.load(w_plane, [0, c0], [depth, nc], w_off)[0] if kc == depth else None
    span = k.op(Arith.subi, end, start, out=k.fresh("i"))
    blocks = k.div(span, ROWS)
    b = k.open_for(0, blocks, "blk")
    product(k.add(start, k.mul(b, ROWS)), ROWS, c0, w_off, weight)
    k.close()
    r = k.open_for(k.add(start, k.mul(blocks, ROWS)), end, "row")
    product(r, 1, c0, w_off, weight)
    k.close()
    if nc < nb:
        k.close()
    # rows no expert owns (from offs[E-1] on) are zero, written by the last expert's tiles
    last = k.cmp(Arith.cmpi, "eq", k.index(e), k.index(experts - 1), out=k.fresh("last"))
    tail = k.op(Arith.select, last, k.index(rows), end, out=k.fresh("tail"))
    zeros(k.open_for(end, tail, "row"))
    k.close()
    if looped:
        k.close()
    return k
