"""Row kernels (softmax, log-softmax, variance, layer norm) in steps that fit the scratchpad.

These kernels keep the reduced dim last and whole on each tile (kernels.py). When a tile's
rows do not fit, it loops over sub-blocks of rows and, when even one row does not fit, over
chunks of the row, reading the row again for every pass:

- softmax: one pass carries the running max and the sum of exp(x - max), rescaled when the
  max grows (the online softmax); a second pass writes exp(x - max) / sum (log-softmax:
  x - max - log(sum));
- variance: one pass for the mean, one for the sum of squared deviations (the same centred
  two-pass form as the whole-row kernel, so chunking changes only the summation order);
- layer norm: those two passes, then one that writes the normalised chunk.

All sums are f32. A plan is (row sub-block, chunk length); the whole block is kernels.py's
own single-step code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ktir.dialects.names import Arith, Math
from ktir.lower.torch import chunked
from ktir.lower.torch.expr import Expr, boundaries, evaluate
from ktir.lower.torch.refs import Ref
from ktir.lower.torch.work import Division, boxes, divisors
from ktir.lower.torch.writer import Kernel


@dataclass(frozen=True)
class RowPlan:
    rows: tuple[int, ...]  # the row sub-block (the last dim: the chunk length)

    def text(self) -> str:
        return f"{'x'.join(map(str, self.rows[:-1])) or '1'} rows in chunks of {self.rows[-1]}"


def plans(expr: Expr, block: Sequence[int], stick: int) -> list[RowPlan]:
    """The whole block, smaller row sub-blocks, then chunks of the row (when the operand's
    own reductions, if any, are constant along it)."""
    rank = len(block)
    if rank < 2:  # a single row: no loop
        return [RowPlan(tuple(block))]
    rows = boxes(block, range(rank - 1))
    out = [RowPlan(r) for r in rows]
    if all(n.shape[-1] == 1 for n in boundaries(expr)):
        for c in divisors(block[-1], stick)[1:]:
            out += [RowPlan((*r[:-1], c)) for r in rows]
    return out


def volume(plan: RowPlan) -> int:
    return math.prod(plan.rows)


class _Rows:
    """The loops over row sub-blocks, the row values of the operand's reductions, and chunk passes."""

    def __init__(self, k: Kernel, expr: Expr, div: Division, plan: RowPlan) -> None:
        self.k, self.expr = k, expr
        starts = div.starts(k)
        block = list(div.block)
        self.n = block[-1]
        self.c = plan.rows[-1]
        self.loops = 0
        self.starts: list[int | str] = list(starts)
        for d in range(len(block) - 1):
            if plan.rows[d] < block[d]:
                self.starts[d] = k.add(starts[d], k.mul(k.open_for(0, block[d] // plan.rows[d], "r"), plan.rows[d]))
                self.loops += 1
        self.sub = [*plan.rows[:-1], self.n]
        self.known = chunked.ahead(k, expr, self.starts, self.sub, self.c)
        self.chunk = [*plan.rows[:-1], self.c]
        self.row = self.chunk[:-1]

    def x(self, c0: int | str) -> str:
        """The operand's chunk at column c0 (f32)."""
        return evaluate(self.k, self.expr, [*self.starts[:-1], c0], self.chunk, known=self.known)

    def passes(self, inits: Sequence[str], body: Callable[[int | str, list[str]], list[str]]) -> list[str]:
        """A loop over the chunks carrying `inits`; body(column, carried) -> next values."""
        k = self.k
        if self.c == self.n:
            return body(0, list(inits))
        iv, carried = k.open_carry(0, self.n // self.c, list(inits), "ch")
        return k.close_carry(body(k.mul(iv, self.c), carried))

    def each(self, body: Callable[[int | str], None]) -> None:
        """A loop over the chunks (no carried values)."""
        if self.c == self.n:
            body(0)
            return
        iv = self.k.open_for(0, self.n // self.c, "ch")
        body(self.k.mul(iv, self.c))
        self.k.close()

    def close(self) -> None:
        for _ in range(self.loops):
            self.k.close()


def _map(k: Kernel, values: Sequence[str], shape: list[int], rows: Sequence[bool], fn: Callable[[Kernel, list[str]], str]) -> str:
    """An f32 generic over `shape`: each value has `shape`, or shape[:-1] broadcast along the last dim."""
    rank = len(shape)
    ident = k.aliases.identity(rank)
    row_map = k.aliases.map(rank, [f"d{i}" for i in range(rank - 1)])
    inputs = [(v, list(shape[:-1]) if r else list(shape), "f32", row_map if r else ident) for v, r in zip(values, rows, strict=True)]
    return k.generic(inputs, shape, ident, ["parallel"] * rank, None, "f32", lambda kk, names, acc: fn(kk, names))


def _op(name: str) -> Callable[[Kernel, list[str]], str]:
    return lambda kk, a: kk.op(name, *a, out=kk.fresh("s"))


def _finite_or_zero(k: Kernel, a: list[str]) -> str:
    inf = k.cmp(Arith.cmpf, "oeq", a[0], k.fconst(-math.inf), out=k.fresh("s"))
    return k.op(Arith.select, inf, k.fconst(0.0), a[0], out=k.fresh("s"))


def _exp_diff(k: Kernel, a: list[str]) -> str:
    return k.op(Math.exp, k.op(Arith.subf, a[0], a[1], out=k.fresh("s")), out=k.fresh("s"))


def _fma(k: Kernel, a: list[str]) -> str:
    return k.op(Arith.addf, k.op(Arith.mulf, a[0], a[1], out=k.fresh("s")), a[2], out=k.fresh("s"))


def softmax(k: Kernel, expr: Expr, out: Ref, div: Division, plan: RowPlan, log: bool) -> None:
    r = _Rows(k, expr, div, plan)
    row, chunk = r.row, r.chunk

    def stats(c0: int | str, carried: list[str]) -> list[str]:
        m, total = carried
        x = r.x(c0)
        m_new = _map(k, [m, k.reduce(x, chunk, "maximumf", -math.inf)[0]], row, [False, False], _op(Arith.maximumf))
        shift = _map(k, [m_new], row, [False], _finite_or_zero)  # 0 while the row has seen only -inf
        rescale = _map(k, [m, shift], row, [False, False], _exp_diff)
        e = _map(k, [x, shift], chunk, [False, True], _exp_diff)
        return [m_new, _map(k, [total, rescale, k.reduce(e, chunk, "addf", 0.0)[0]], row, [False] * 3, _fma)]

    m, total = r.passes([k.filled(row, -math.inf), k.filled(row, 0.0)], stats)
    shift = _map(k, [m], row, [False], _finite_or_zero)
    if log:
        offset = _map(k, [shift, total], row, [False, False], lambda kk, a: kk.op(
            Arith.addf, a[0], kk.op(Math.log, a[1], out=kk.fresh("s")), out=kk.fresh("s")))

    def write(c0: int | str) -> None:
        x = r.x(c0)
        if log:
            y = _map(k, [x, offset], chunk, [False, True], _op(Arith.subf))
        else:
            y = _map(k, [x, shift, total], chunk, [False, True, True], lambda kk, a: kk.op(
                Arith.divf, _exp_diff(kk, a[:2]), a[2], out=kk.fresh("s")))
        k.store(k.convert(y, chunk, "f32", out.ktype), out, [*r.starts[:-1], c0], chunk)

    r.each(write)
    r.close()


def _moments(k: Kernel, r: _Rows) -> tuple[str, str]:
    """Per row: the mean, and the sum of squared deviations from it (two passes)."""
    row, chunk = r.row, r.chunk
    total = r.passes([k.filled(row, 0.0)], lambda c0, acc: [
        _map(k, [acc[0], k.reduce(r.x(c0), chunk, "addf", 0.0)[0]], row, [False, False], _op(Arith.addf))])[0]
    mean = _map(k, [total], row, [False], lambda kk, a: kk.op(Arith.mulf, a[0], kk.fconst(1.0 / r.n), out=kk.fresh("s")))

    def squares(c0: int | str, acc: list[str]) -> list[str]:
        dev = _map(k, [r.x(c0), mean], chunk, [False, True], lambda kk, a: _square(kk, kk.op(Arith.subf, a[0], a[1], out=kk.fresh("s"))))
        return [_map(k, [acc[0], k.reduce(dev, chunk, "addf", 0.0)[0]], row, [False, False], _op(Arith.addf))]

    return mean, r.passes([k.filled(row, 0.0)], squares)[0]


def _square(k: Kernel, x: str) -> str:
    return k.op(Arith.mulf, x, x, out=k.fresh("s"))


def variance(k: Kernel, expr: Expr, out: Ref, div: Division, plan: RowPlan, correction: float) -> None:
    r = _Rows(k, expr, div, plan)
    _, ss = _moments(k, r)
    factor = 1.0 / (r.n - correction) if r.n > correction else math.nan
    var = _map(k, [ss], r.row, [False], lambda kk, a: kk.op(Arith.mulf, a[0], kk.fconst(factor), out=kk.fresh("s")))
    k.store(k.convert(var, r.row, "f32", out.ktype), out.squeeze([out.rank - 1]), r.starts[:-1], r.row)
    r.close()


def layer_norm(k: Kernel, expr: Expr, out: Ref, div: Division, plan: RowPlan, weight: Ref | None, bias: Ref | None, eps: float) -> None:
    r = _Rows(k, expr, div, plan)
    row, chunk = r.row, r.chunk
    mean, ss = _moments(k, r)
    n = r.n
    rstd = _map(k, [ss], row, [False], lambda kk, a: kk.op(Math.rsqrt, kk.op(
        Arith.addf, kk.op(Arith.mulf, a[0], kk.fconst(1.0 / n), out=kk.fresh("s")), kk.fconst(eps), out=kk.fresh("s")), out=kk.fresh("s")))
    rank = len(chunk)

    def write(c0: int | str) -> None:
        y = _map(k, [r.x(c0), mean, rstd], chunk, [False, True, True], lambda kk, a: kk.op(
            Arith.mulf, kk.op(Arith.subf, a[0], a[1], out=kk.fresh("s")), a[2], out=kk.fresh("s")))
        for param, op in ((weight, "mulf"), (bias, "addf")):
            if param is None:
                continue
            pv, pshape = k.load(param, [c0], [r.c])

            def affine(kk: Kernel, names: list[str], acc: str, op: str = op, pt: str = param.ktype) -> str:
                return kk.op(f"arith.{op}", names[0], kk.scalar_convert(names[1], pt, "f32"), out=kk.fresh("s"))

            ident = k.aliases.identity(rank)
            y = k.generic([(y, chunk, "f32", ident), (pv, pshape, param.ktype, k.aliases.map(rank, [f"d{rank - 1}"]))], chunk, ident,
                          ["parallel"] * rank, None, "f32", affine)
        k.store(k.convert(y, chunk, "f32", out.ktype), out, [*r.starts[:-1], c0], chunk)

    r.each(write)
    r.close()
