"""Ops whose result elements pick among many inputs by value: sort, histc, gather and scatter
along any dim, index_put, index_copy. Each is a one-hot reduction over a new innermost dim j,

    out[p] = max_j  where(key(p, j), value(p, j), -inf)      (or a sum, for counts and ranks)

computed by the fused-chain machinery (expr.Reduce). It is exact (one term is selected; the
maximum keeps -0.0 and NaN as they are, and counts are small integers), and it costs
O(|out| x |j|) work: right for the routing tensors of mixture-of-experts layers (expert ids,
permutations, group masks), not for bulk data. Values go through f32 inside the reduction,
so integer values are exact below 2^24 (ids, positions and counts).

Functions take the `Lowering` (graph.py) as `lw` and return what its op_* methods return.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ktir.lower.torch.errors import TorchLoweringError
from ktir.lower.torch.expr import Const, Expr, Op, Reduce
from ktir.lower.torch.refs import Buffer, Ref, contiguous_strides

NEG_INF = Const(-math.inf)


def view(ref: Ref, full: tuple[int, ...], placement: list[int | None]) -> Ref:
    """`ref` seen with shape `full`: full dim i walks ref's dim placement[i] (None: broadcast)."""
    strides = tuple(0 if p is None else ref.strides[p] for p in placement)
    return Ref(ref.buffer, ref.ktype, ref.offset, full, strides)


def iota(lw: Any, n: int, full: tuple[int, ...], dim: int) -> Ref:
    """0, 1, .., n-1 along `dim` of `full` (a shared i64 constant buffer, broadcast elsewhere)."""
    name = f"c_iota{n}"
    if name not in lw.buffers:
        lw.buffers[name] = Buffer(name, "i64", (n,), "constant", data=np.arange(n, dtype=np.int64), source=f"arange({n})")
    base = Ref(name, "i64", 0, (n,), (1,))
    return view(base, full, [0 if d == dim else None for d in range(len(full))])


def moved_last(ref: Ref, dim: int, full: tuple[int, ...]) -> Ref:
    """`ref` (rank r) in `full` (rank r + 1): its dim `dim` walked by the new last dim, broadcast at `dim`."""
    placement: list[int | None] = [None if m == dim else m for m in range(ref.rank)]
    return view(ref, full, [*placement, dim])


def same_place(ref: Ref, full: tuple[int, ...]) -> Ref:
    """`ref` (rank r) in `full` (rank r + 1): element p at (p, j) for every j."""
    return view(ref, full, [*range(ref.rank), None])


def reduce_into(lw: Any, node: Any, expr: Expr, shape: tuple[int, ...], ktype: str, suffix: str) -> Ref:
    """Materialise `expr` (shape (*shape, 1)) into a new buffer; returns its view of `shape`."""
    keep = (*shape, 1)
    out_full = lw._new_buffer(node.name + suffix, keep, ktype)
    lw._materialise(lw_pending(expr, keep, ktype, node), node.name + suffix, dest=out_full)
    return Ref(out_full.buffer, ktype, 0, shape, contiguous_strides(shape))


def lw_pending(expr: Expr, shape: tuple[int, ...], ktype: str, node: Any) -> Any:
    from ktir.lower.torch.graph import Pending

    return Pending(expr, shape, ktype, 1, [node.name])


def relabel(lw: Any, start: int, kind: str, comment: str) -> None:
    """Name the kernels an op added (from index `start`) after the op, not after their parts."""
    for info in lw.kernels[start:]:
        info.kind = kind
        info.comment = f"{comment}: {info.comment}"


def pick(hit: Expr, value: Expr, full: tuple[int, ...]) -> Reduce:
    """max over the last dim of where(hit, value, -inf): the one selected value."""
    return Reduce("max", Op("where", (hit, value, NEG_INF)), (len(full) - 1,), full)


def count(hit: Expr, full: tuple[int, ...]) -> Reduce:
    return Reduce("sum", Op("where", (hit, Const(1.0), Const(0.0))), (len(full) - 1,), full)


def _less(a: Expr, b: Expr, floats: bool) -> Expr:
    """a < b, with NaN above every number (torch's sort order)."""
    lt: Expr = Op("lt", (a, b))
    if not floats:
        return lt
    nan_b_only = Op("mul", (Op("isnan", (b,)), Op("logical_not", (Op("isnan", (a,)),))))
    return Op("maximum", (lt, nan_b_only))


def sort(lw: Any, node: Any) -> list[Ref]:
    """Stable sort along a dim: each element's rank is the number of elements before it
    (smaller, or equal at a lower index); the sorted values and the original indices are then
    picked by rank."""
    src = node.args[0]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", -1)
    descending = node.args[2] if len(node.args) > 2 else node.kwargs.get("descending", False)
    x = lw.ref(src, node)
    start = len(lw.kernels)  # the kernels from here on are the sort's (its operand may have made some)
    shape = x.shape
    if not shape:
        raise TorchLoweringError("sort of a 0-d tensor is not supported")
    d = dim % len(shape)
    n = shape[d]
    full = (*shape, n)
    floats = x.ktype in ("f16", "bf16", "f32")
    mine, other = same_place(x, full), moved_last(x, d, full)
    before = _less(mine, other, floats) if descending else _less(other, mine, floats)
    tie = Op("mul", (Op("eq", (other, mine)), Op("lt", (iota(lw, n, full, len(shape)), iota(lw, n, full, d)))))
    if floats:  # NaNs are equal to one another in the order
        tie = Op("maximum", (tie, Op("mul", (Op("mul", (Op("isnan", (other,)), Op("isnan", (mine,)))),
                                              Op("lt", (iota(lw, n, full, len(shape)), iota(lw, n, full, d)))))))
    rank = reduce_into(lw, node, count(Op("maximum", (before, tie)), full), shape, "i64", "_rank")
    hit = Op("eq", (moved_last(rank, d, full), iota(lw, n, full, d)))
    values = reduce_into(lw, node, pick(hit, moved_last(x, d, full), full), shape, x.ktype, "_values")
    indices = reduce_into(lw, node, pick(hit, iota(lw, n, full, len(shape)), full), shape, "i64", "_indices")
    relabel(lw, start, "sort", f"{node.name}: stable sort of {list(shape)} along dim {d} ({'descending' if descending else 'ascending'})")
    return [values, indices]


def histc(lw: Any, node: Any) -> Ref:
    """Counts of values in `bins` equal bins over [min, max] (torch.histc): the bin is
    floor((x - min) * bins / (max - min)), the top edge belongs to the last bin, values outside
    are not counted."""
    src = node.args[0]
    bins = node.args[1] if len(node.args) > 1 else node.kwargs.get("bins", 100)
    low = float(node.args[2] if len(node.args) > 2 else node.kwargs.get("min", 0))
    high = float(node.args[3] if len(node.args) > 3 else node.kwargs.get("max", 0))
    if low == high:
        raise TorchLoweringError("histc over the data's own range (min == max) is not supported: give min < max")
    shape, ktype = lw._out(node)
    x = lw.ref(src, node)
    start = len(lw.kernels)
    flat = x.reshape((x.numel,))
    if flat is None:
        flat = lw._materialise(lw_pending(x, x.shape, x.ktype, node), node.name + "_flat").reshape((x.numel,))
    full = (bins, x.numel)
    v = view(flat, full, [None, 0])
    scaled = Op("div", (Op("mul", (Op("sub", (v, Const(low))), Const(float(bins)))), Const(high - low)))
    which = Op("minimum", (Op("floordiv", (scaled, Const(1.0))), Const(float(bins - 1))))
    inside = Op("mul", (Op("ge", (v, Const(low))), Op("le", (v, Const(high)))))
    hit = Op("mul", (inside, Op("eq", (which, iota(lw, bins, full, 0)))))
    out = reduce_into(lw, node, count(hit, full), shape, ktype, "")
    relabel(lw, start, "histc", f"{node.name}: histogram of {x.numel} values in {bins} bins over [{low:g}, {high:g}]")
    return out


def gather(lw: Any, node: Any) -> Ref:
    """torch.gather(x, dim, index): out[p] = x[p with p_dim = index[p]]."""
    src, dim, index = node.args[:3]
    x, idx = lw.ref(src, node), lw.ref(index, node)
    start = len(lw.kernels)
    d = dim % x.rank
    shape, ktype = lw._out(node)
    if any(shape[m] > x.shape[m] for m in range(x.rank) if m != d):
        raise TorchLoweringError("gather with an index larger than the input outside the gathered dim is not supported")
    n = x.shape[d]
    full = (*shape, n)
    part = Ref(x.buffer, x.ktype, x.offset, tuple(shape[m] if m != d else n for m in range(x.rank)), x.strides)
    hit = Op("eq", (same_place(idx, full), iota(lw, n, full, len(shape))))
    out = reduce_into(lw, node, pick(hit, moved_last(part, d, full), full), shape, ktype, "")
    relabel(lw, start, "gather", f"{node.name}: gather along dim {d} of {list(x.shape)} by an index of {list(shape)}")
    return out


def scatter(lw: Any, node: Any, accumulate: bool = False) -> Ref:
    """torch.scatter(x, dim, index, src | value): out[p] = src[q] for the q with q_dim replaced
    by index[q] == p_dim, else x[p] (index as large as x outside dim)."""
    if node.kwargs.get("reduce") is not None or len(node.args) > 4:
        raise TorchLoweringError("scatter with a reduce mode is not supported")
    src, dim, index, source = node.args[:4]
    x, idx = lw.ref(src, node), lw.ref(index, node)
    d = dim % x.rank
    if any(idx.shape[m] != x.shape[m] for m in range(x.rank) if m != d):
        raise TorchLoweringError("scatter is supported with an index as large as the input outside the scattered dim")
    values = lw.ref(source, node) if hasattr(source, "meta") else None
    return _put(lw, node, x, d, idx, values, source, accumulate)


def index_put(lw: Any, node: Any) -> Ref:
    """x.index_put([.., ids, ..], values[, accumulate]): one index tensor, on dim d."""
    src, indices, source = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    given = [i for i, t in enumerate(indices) if t is not None]
    if len(given) != 1:
        raise TorchLoweringError(f"index_put with {len(given)} index tensors is not supported (one is)")
    d = given[0]
    x, idx = lw.ref(src, node), lw.ref(indices[d], node)
    flat = idx.reshape((idx.numel,))
    if flat is None:
        raise TorchLoweringError("the ids of index_put must be a contiguous tensor")
    # index [k] along dim d, broadcast over the other dims: an index shaped like x with dim d of k
    k = idx.numel
    shaped = tuple(k if m == d else x.shape[m] for m in range(x.rank))
    spread = view(flat, shaped, [0 if m == d else None for m in range(x.rank)])
    values = lw.ref(source, node).broadcast_to(shaped) if hasattr(source, "meta") else None
    return _put(lw, node, x, d, spread, values, source, bool(accumulate))


def index_copy(lw: Any, node: Any) -> Ref:
    """x.index_copy(dim, ids, src): x with x[.., ids[k], ..] = src[.., k, ..] (a KV cache written at its positions)."""
    src, dim, index, source = node.args[:4]
    x, idx = lw.ref(src, node), lw.ref(index, node)
    d = dim % x.rank
    flat = idx.reshape((idx.numel,))
    if flat is None:
        raise TorchLoweringError("the ids of index_copy must be a contiguous tensor")
    shaped = tuple(idx.numel if m == d else x.shape[m] for m in range(x.rank))
    spread = view(flat, shaped, [0 if m == d else None for m in range(x.rank)])
    return _put(lw, node, x, d, spread, lw.ref(source, node).broadcast_to(shaped), None, False)


def _put(lw: Any, node: Any, x: Ref, d: int, idx: Ref, values: Ref | None, scalar: Any, accumulate: bool) -> Ref:
    start = len(lw.kernels)
    shape, ktype = lw._out(node)
    k = idx.shape[d]
    full = (*shape, k)
    hit = Op("eq", (moved_last(idx, d, full), iota(lw, shape[d], full, d)))
    value: Expr = moved_last(values, d, full) if values is not None else Const(float(scalar))
    base = view(x, (*shape, 1), [*range(x.rank), None])
    if accumulate:
        added = Reduce("sum", Op("where", (hit, value, Const(0.0))), (len(shape),), full)
        expr: Expr = Op("add", (base, added))
    else:
        expr = Op("where", (count(hit, full), pick(hit, value, full), base))
    out = reduce_into(lw, node, expr, shape, ktype, "")
    what = str(getattr(node.target, "__name__", "scatter")).split(".")[0]
    relabel(lw, start, what, f"{node.name}: {what} into {list(shape)} along dim {d} at {k} positions"
                     + (" (accumulating)" if accumulate else ""))
    return out
