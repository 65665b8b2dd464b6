"""Fused elementwise chains (and the reductions inside them) in steps that fit the scratchpad.

A chain's kernel gives each tile a block of the output whose reduced dims are whole (see
expr.py). When that block's data does not fit a tile's scratchpad, the tile loops:

- over sub-blocks of rows (the dims no reduction reads whole), outermost dims first;
- within a row sub-block, it first computes the chain's reductions (`Reduce` nodes) and
  per-row values (`Row` nodes) for those rows, each reduction over chunks of its reduced dims
  with the partial result (f32 sum, max or min) carried from chunk to chunk;
- then it evaluates the chain in chunks of the reduced dims too, reading those values
  broadcast, and stores each chunk.

A plan is (row sub-block, elements per chunk of the reduced dims); `chunk=None` keeps the
reduced dims whole. Reductions nested inside a reduction's operand are computed first, for
that operand's rows, in the same way. A reduced dim is chunked only where every value the
chunk reads that was computed ahead is constant along it (else that dim stays whole).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ktir.dialects.names import Arith
from ktir.lower.torch.expr import Expr, Known, Reduce, Row, boundaries, evaluate
from ktir.lower.torch.refs import Ref
from ktir.lower.torch.work import Division, boxes
from ktir.lower.torch.writer import Kernel

COMBINERS = {"sum": ("addf", 0.0), "mean": ("addf", 0.0), "max": ("maximumf", -math.inf), "min": ("minimumf", math.inf)}


@dataclass(frozen=True)
class ChunkPlan:
    rows: tuple[int, ...]  # the row sub-block (reduced dims at their block extent)
    chunk: int | None  # elements per step along reduced dims (None: whole)

    def text(self) -> str:
        return f"rows {'x'.join(map(str, self.rows))}, " + ("reduced dims whole" if self.chunk is None else f"chunks of {self.chunk}")


def reduced_extents(expr: Expr) -> list[int]:
    """Element counts of every reduction's reduced dims in `expr` (nested ones included)."""
    out: list[int] = []

    def walk(e: Expr) -> None:
        if isinstance(e, Reduce):
            out.append(math.prod(e.in_shape[d] for d in e.dims))
            walk(e.arg)
        elif isinstance(e, Row):
            walk(e.arg)
        elif hasattr(e, "args"):
            for a in e.args:  # type: ignore[union-attr]
                walk(a)

    walk(expr)
    return out


def plans(expr: Expr, block: Sequence[int], whole: set[int], stick: int) -> list[ChunkPlan]:
    """Whole block first; then smaller row sub-blocks; then chunks of the reduced dims, each
    with row sub-blocks from the whole block down."""
    rank = len(block)
    row_dims = [d for d in range(rank) if d not in whole]
    rows = boxes(block, row_dims, {rank - 1: stick})
    out_reduced = math.prod(block[d] for d in whole) if whole else 1
    sizes = {n for n in [*reduced_extents(expr), out_reduced] if n > 1}
    chunks = sorted({c for n in sizes for c in _chunk_sizes(n) if c < n}, reverse=True)
    return [ChunkPlan(r, None) for r in rows] + [ChunkPlan(r, c) for c in chunks for r in rows]


def _chunk_sizes(n: int) -> list[int]:
    """Chunk sizes worth trying for n reduced elements: powers of two below n, and n."""
    out = [n]
    c = 1
    while c < n:
        out.append(c)
        c *= 2
    return out


def volume(plan: ChunkPlan, whole: set[int], block: Sequence[int], expr: Expr) -> int:
    """Elements one step of `plan` holds (proportional to its footprint)."""
    rows = math.prod(n for d, n in enumerate(plan.rows) if d not in whole)
    reduced = max([*reduced_extents(expr), math.prod(block[d] for d in whole) if whole else 1])
    return rows * (reduced if plan.chunk is None else min(plan.chunk, reduced))


def emit(k: Kernel, expr: Expr, out: Ref, div: Division, whole: set[int], plan: ChunkPlan) -> None:
    """The tile's loops of `plan`, storing `expr` into `out` (k.division is `div`)."""
    starts = div.starts(k)
    block = list(div.block)
    rank = len(block)
    loops = 0
    row_starts: list[int | str] = list(starts)
    for d in range(rank):
        if d not in whole and plan.rows[d] < block[d]:
            row_starts[d] = k.add(starts[d], k.mul(k.open_for(0, block[d] // plan.rows[d], "r"), plan.rows[d]))
            loops += 1
    sub = [plan.rows[d] if d not in whole else block[d] for d in range(rank)]
    known = ahead(k, expr, row_starts, sub, plan.chunk)
    top = boundaries(expr)
    dims = [d for d in sorted(whole) if sub[d] > 1 and all(n.shape[d] == 1 for n in top)]
    step = _step(sub, dims, plan.chunk)
    out_starts = list(row_starts)
    for d in dims:
        if step[d] < sub[d]:
            out_starts[d] = k.mul(k.open_for(0, sub[d] // step[d], "c"), step[d])
            loops += 1
    value = evaluate(k, expr, out_starts, step, out.ktype, known)
    k.store(value, out, out_starts, step)
    for _ in range(loops):
        k.close()


def _step(block: Sequence[int], dims: Sequence[int], chunk: int | None) -> list[int]:
    """The largest sub-block of `block` splitting only `dims` with at most `chunk` elements along them."""
    if chunk is None or not dims:
        return list(block)
    for box in boxes(block, dims):
        if math.prod(box[d] for d in dims) <= chunk:
            return list(box)
    return [1 if d in dims else n for d, n in enumerate(block)]


def ahead(k: Kernel, expr: Expr, starts: Sequence[int | str], block: Sequence[int], chunk: int | None) -> Known:
    """The Reduce/Row values `expr` reads (the outermost ones), computed for the box (starts, block)."""
    return {node: _value(k, node, starts, block, chunk) for node in boundaries(expr)}


def _value(k: Kernel, node: Reduce | Row, starts: Sequence[int | str], block: Sequence[int], chunk: int | None) -> tuple[str, list[int]]:
    rank = len(block)
    own_starts = [0 if n == 1 else s for s, n in zip(starts, node.shape, strict=True)]
    own_block = [1 if n == 1 else b for b, n in zip(block, node.shape, strict=True)]
    if isinstance(node, Row):
        return evaluate(k, node.arg, own_starts, own_block, known=ahead(k, node.arg, own_starts, own_block, chunk)), own_block
    kept = [d for d in range(rank) if d not in node.dims]
    out_shape = [own_block[d] for d in kept]
    in_starts: list[int | str] = [0 if d in node.dims else s for d, s in enumerate(own_starts)]
    in_block = [node.in_shape[d] if d in node.dims else b for d, b in enumerate(own_block)]
    known = ahead(k, node.arg, in_starts, in_block, chunk)
    inner = boundaries(node.arg)
    dims = [d for d in node.dims if all(n.shape[d] == 1 for n in inner)]
    step = _step(in_block, dims, chunk)
    combiner, init = COMBINERS[node.kind]
    acc = k.filled(out_shape, init)
    looped = [d for d in dims if step[d] < in_block[d]]
    for d in looped:
        iv, (acc,) = k.open_carry(0, in_block[d] // step[d], [acc], "ch")
        in_starts[d] = k.mul(iv, step[d])
    x = evaluate(k, node.arg, in_starts, step, known=known)

    def combine(kk: Kernel, names: list[str], a: str) -> str:
        return kk.op(f"arith.{combiner}", a, names[0], out=kk.fresh("s"))

    iters = ["reduction" if d in node.dims else "parallel" for d in range(rank)]
    acc = k.generic([(x, step, "f32", k.aliases.identity(rank))], out_shape, k.aliases.map(rank, [f"d{d}" for d in kept]), iters, acc,
                    "f32", combine)
    for _ in looped:
        (acc,) = k.close_carry([acc])
    if node.kind == "mean":
        count = math.prod(node.in_shape[d] for d in node.dims)
        ident = k.aliases.identity(len(out_shape))

        def scale(kk: Kernel, names: list[str], a: str) -> str:
            return kk.op(Arith.mulf, names[0], kk.fconst(1.0 / count), out=kk.fresh("s"))

        acc = k.generic([(acc, out_shape, "f32", ident)], out_shape, ident, ["parallel"] * len(out_shape), None, "f32", scale)
    return acc, out_shape
