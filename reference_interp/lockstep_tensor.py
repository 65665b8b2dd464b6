"""Lane implementations of index arithmetic and tensor slices whose operands differ between
lanes (reference_interp/lockstep.py).

Without them such an op runs once per lane through its per-tile closure (`per_lane`): in a
ring all-reduce written step by step, each tile's chunk offset is an `affine.apply` of the
tile id and the step, and the chunk an `extract_slice`/`insert_slice` at that offset, so
every step paid eight per-tile runs of three ops. Here each runs once for all lanes.

Each computes exactly what the per-tile closure computes lane by lane:

- `affine.apply`/`min`/`max` evaluate the map's compiled function (affine_eval.compile_map,
  the per-tile one) on numpy *object* arrays of the lanes' values: numpy applies Python's
  own int operators element by element, so every lane gets the per-tile result (Python ints
  do not wrap; a result outside the index range gives up, as `stack` does).
- slices at offsets that differ between lanes (lockstep_linalg's lane forms of
  extract_slice/insert_slice call these; they handle uniform offsets themselves) index with
  the lanes' offsets (advanced indexing: lane `l` reads or writes `offset[l] + i * stride`),
  after the per-tile bounds checks in every lane.

Anything else (laned sizes or strides, an empty slice, a tensor.empty operand, an operand
that is not an array) goes to `per_lane`, and a failed check gives up (`Diverged`), so the
per-tile run reports the error with its usual diagnostic.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ktir.dialects.names import Affine
from ktir.ir.operation import Operation

from .lockstep import Diverged, LaneCompiler, LaneFn, lane_impl, per_lane
from .ops.affine_func import compiled_map
from .ops.tensor import _reduced_shape, _Slice

I64 = np.dtype(np.int64)


def _per_lane(c: LaneCompiler, op: Operation) -> LaneFn:
    """The op lane by lane, for the cases handled here only that way: not inside a
    vectorised loop (as LaneCompiler.compile_op, which leaves such loops to run per
    iteration: at runtime here, the loop is not vectorised again)."""
    if not (c.rank > 1 and c.vector_stack):
        return per_lane(c, op)
    loop = c.vector_stack[-1]

    def refuse(lf: list[Any]) -> None:
        raise Diverged(f"{op.name} with these operands has no vectorised form", loop)

    return refuse


@lane_impl(Affine.apply, Affine.min, Affine.max)
def affine_apply(c: LaneCompiler, op: Operation) -> LaneFn:
    slots, r, fn = compiled_map(c, op)
    pick = None if op.name == Affine.apply else (np.minimum if op.name == Affine.min else np.maximum)
    R = c.rank

    def run(lf: list[Any]) -> None:
        args = []
        for s in slots:
            v = lf[s]
            if type(v) is np.ndarray:
                if v.dtype != I64:
                    raise Diverged(f"{op.name}: a laned operand of dtype {v.dtype}")
                v = v.astype(object)  # Python ints, as each lane's per-tile run holds them
            args.append(v)
        results = fn(*args)
        value = results[0] if pick is None else functools.reduce(pick, results)
        try:
            out = np.asarray(value, dtype=I64)
        except OverflowError:
            raise Diverged(f"{op.name}: a lane's result is outside the index range") from None
        lf[r] = out if out.ndim == R else out.reshape((1,) * R)

    return run


def _offsets(sl: _Slice, lf: list[Any]) -> tuple[list[Any], list[int], list[int]] | None:
    """The slice's offsets (an int, or an int64 array over the lane dimensions, per dimension),
    sizes and strides; None when a size or stride differs between lanes."""
    out: list[list[Any]] = []
    for k, (entries, slots) in enumerate(sl.parts):
        it = iter(slots)
        vals: list[Any] = []
        for e in entries:
            if e is not None:
                vals.append(e)
                continue
            v = lf[next(it)]
            if type(v) is np.ndarray:
                if k or v.dtype != I64:
                    return None
                vals.append(v)
            else:
                vals.append(int(v))
        out.append(vals)
    o, s, t = out
    return o, s, t


def _index(offsets: list[Any], sizes: list[int], strides: list[int], shape: tuple[int, ...], lanes: tuple[int, ...],
           src_lanes: tuple[int, ...] | None) -> tuple[Any, ...] | None:
    """Advanced indices of the slice in every lane, broadcasting to lanes + sizes: lane `l`'s
    elements `offset[l] + i * stride` of each dimension (the lane dimensions first when the
    indexed array is laned, `src_lanes` its lane extents). Raises Diverged when a lane's
    slice leaves the array, as the per-tile check (_region) would fail there; None for an
    empty slice or a non-positive stride (left to the per-tile closure)."""
    R, k = len(lanes), len(shape)
    if not len(offsets) == len(sizes) == len(strides) == k:
        raise Diverged("slice rank")
    idx: list[Any] = []
    if src_lanes is not None:
        for i, n in enumerate(src_lanes):
            idx.append(np.arange(n).reshape((1,) * i + (n,) + (1,) * (R - 1 - i + k)) if n > 1 else 0)
    for d, (o, n, st, dim) in enumerate(zip(offsets, sizes, strides, shape, strict=True)):
        if n <= 0 or st <= 0:
            return None
        lo = np.asarray(o)
        if lo.min() < 0 or lo.max() + (n - 1) * st >= dim:
            raise Diverged("a lane's slice leaves the tensor")
        step = (np.arange(n, dtype=I64) * st).reshape((1,) * (R + d) + (n,) + (1,) * (k - 1 - d))
        if type(o) is np.ndarray:
            idx.append(o.reshape(o.shape + (1,) * k) + step)
        else:
            idx.append(o + step)
    return tuple(idx)


def extract_slice_at_lanes(c: LaneCompiler, op: Operation, src: int, r: int, sl: _Slice, rank: int) -> LaneFn:
    """`tensor.extract_slice` whose offsets differ between lanes, every lane's slice gathered at
    once (lockstep_linalg's lane form handles the others and passes its source slot, result
    slot, slice and the source's tensor rank)."""
    fallback = _per_lane(c, op)
    t = c.rtype(op)
    R = c.rank

    def run(lf: list[Any]) -> None:
        arr = lf[src]
        parts = _offsets(sl, lf) if type(arr) is np.ndarray else None
        if parts is None or not any(type(x) is np.ndarray for x in parts[0]):
            fallback(lf)  # a tensor.empty source, laned sizes or strides: lane by lane
            return
        o, s, st = parts
        laned = arr.ndim == rank + R
        src_lanes = arr.shape[:R] if laned else (1,) * R
        lanes = np.broadcast_shapes(src_lanes, *(x.shape for x in o if type(x) is np.ndarray))
        idx = _index(o, s, st, arr.shape[R:] if laned else arr.shape, lanes, src_lanes if laned else None)
        if idx is None:
            fallback(lf)
            return
        part = arr[idx]
        lf[r] = part.reshape(part.shape[:R] + _reduced_shape(s, t))

    return run


def insert_slice_at_lanes(c: LaneCompiler, op: Operation, slots: tuple[int, int, int], sl: _Slice,
                          ranks: tuple[int, int]) -> LaneFn:
    """`tensor.insert_slice` whose offsets differ between lanes: every lane's slice written into
    a copy of the destination with its lanes (lockstep_linalg handles the others and passes the
    source, destination and result slots, the slice and the tensor ranks of source and dest)."""
    fallback = _per_lane(c, op)
    src, dest, r = slots
    src_rank, dest_rank = ranks
    R = c.rank

    def run(lf: list[Any]) -> None:
        d, value = lf[dest], lf[src]
        parts = _offsets(sl, lf) if type(d) is np.ndarray and type(value) is np.ndarray else None
        if parts is None or not any(type(x) is np.ndarray for x in parts[0]):
            fallback(lf)  # a tensor.empty among them (its definedness), laned sizes: lane by lane
            return
        o, s, st = parts
        d_laned = d.ndim == dest_rank + R
        shape = d.shape[R:] if d_laned else d.shape
        v_lanes = value.shape[:R] if value.ndim == src_rank + R else (1,) * R
        if value.size != math.prod(v_lanes) * math.prod(s):
            fallback(lf)  # the per-tile reshape fails there, with its message
            return
        value = value.reshape(v_lanes + tuple(s))
        lanes = np.broadcast_shapes(d.shape[:R] if d_laned else (1,) * R, v_lanes,
                                    *(x.shape for x in o if type(x) is np.ndarray))
        idx = _index(o, s, st, shape, lanes, lanes)
        if idx is None:
            fallback(lf)
            return
        out = np.empty(lanes + shape, dtype=d.dtype)
        out[...] = d if d_laned else d.reshape((1,) * R + shape)
        out[idx] = value
        lf[r] = out

    return run

