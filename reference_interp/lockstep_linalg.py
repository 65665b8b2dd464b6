"""Lane implementations of linalg and tensor ops (lockstep.py).

A laned tensor has the lane dimensions in front, so an op on it is the per-tile op with its
dimension numbers moved past the lanes: a reduction over dimension d reduces dimension
R + d, a `linalg.generic` gets R more parallel loops in front of its own (operands that do
not differ between lanes keep their maps and broadcast). The arithmetic is the per-tile
code's (`_reduce`, `_combine`, the generic body compiled in vector mode), over arrays with
more leading dimensions, elementwise per lane. Contractions (matmuls and generic bodies of
the form `out + a * b`) run lane by lane: BLAS's summation order is only that of the
per-tile run for the same 2-D call.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ktir.dialects.access import named
from ktir.dialects.names import Linalg, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from .compiler import FuncCompiler, Uninit
from .dtypes import np_dtype
from .errors import CompileError
from .half import F32, NARROW_FLOATS
from .lockstep import Diverged, LaneCompiler, LaneFn, NotVectorisable, lane_impl, per_lane
from .ops import linalg as L
from .ops.common import element, int_array

I64 = np.int64


def _by_lane(c: LaneCompiler, op: Operation, why: str) -> LaneFn:
    """The op lane by lane (tiles only: inside a vectorised loop it is not vectorised)."""
    if c.rank > 1 and c.vector_stack:
        raise NotVectorisable(c.vector_stack[-1], why)
    return per_lane(c, op)


def _lanes_of(v: Any, rank: int, R: int) -> Any:
    """A value of tensor rank `rank`: laned (R lane dims) as it is, uniform with R dims of 1."""
    if type(v) is Uninit:
        if v.data.ndim == rank + R:
            return v
        return Uninit(v.data.reshape((1,) * R + v.data.shape), v.defined.reshape((1,) * R + v.defined.shape))
    a = np.asarray(v)
    return a if a.ndim == rank + R else a.reshape((1,) * R + a.shape)


def _full_lanes(v: Any, lanes: tuple[int, ...], rank: int, R: int) -> Any:
    """`v` broadcast to the full lane shape (a view)."""
    v = _lanes_of(v, rank, R)
    if type(v) is Uninit:
        shape = lanes + v.data.shape[R:]
        return Uninit(np.broadcast_to(v.data, shape), np.broadcast_to(v.defined, shape))
    return np.broadcast_to(v, lanes + v.shape[R:])


def _read_only(v: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """np.broadcast_to(v, shape) (a read-only view), without its cost when v has the shape."""
    if v.shape != shape:
        return np.broadcast_to(v, shape)
    w = v.view()
    w.flags.writeable = False
    return w


def _trank(c: FuncCompiler, t: ty.Type) -> int:
    t = c.type(t)
    return len(t.shape) if isinstance(t, ty.TensorType) else 0


def _tail_shape(v: Any, R: int) -> tuple[int, ...]:
    return tuple(v.shape[R:]) if type(v) in (np.ndarray, Uninit) else tuple(np.shape(v)[R:])


# ---------------------------------------------------------------------- simple ops


@lane_impl(Linalg.fill)
def fill(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    (a,) = ins
    (o,) = outs
    res = c.result_slots(op)
    dt = np_dtype(element(L._out_types(c, op, outs)[0]))
    R = c.rank
    out_rank = _trank(c, L._out_types(c, op, outs)[0])
    value_laned = c.is_laned(op.operands[0])
    c_laned_out = c.is_laned(op.operands[-1])

    def run(lf: list[Any]) -> None:
        out = lf[o]
        shape = _tail_shape(out, R) if c_laned_out else tuple(out.shape)
        v = np.asarray(lf[a]).astype(dt)
        if value_laned:
            v = v.reshape(v.shape + (1,) * out_rank)
            lanes: tuple[int, ...] = v.shape[:R]
        else:
            v = v.reshape((1,) * (R + out_rank))
            lanes = tuple(out.shape[:R]) if c_laned_out else (1,) * R
        filled = np.empty(np.broadcast_shapes(lanes, v.shape[:R]) + shape, dtype=dt)
        filled[...] = v
        filled.flags.writeable = False
        for r in res:
            lf[r] = filled

    return run


@lane_impl(Linalg.broadcast)
def broadcast(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    (a,) = ins
    (o,) = outs
    res = c.result_slots(op)
    R = c.rank
    dims = tuple(R + d for d in int_array(c.need_attr(op, "dimensions")))
    in_rank = _trank(c, op.operand_types[0])
    out_laned = c.is_laned(op.operands[1])

    def run(lf: list[Any]) -> None:
        x = _lanes_of(lf[a], in_rank, R)
        out = lf[o]
        shape = _tail_shape(out, R) if out_laned else tuple(out.shape)
        expanded = np.expand_dims(x, dims) if dims else x
        lanes = np.broadcast_shapes(x.shape[:R], tuple(out.shape[:R]) if out_laned else (1,) * R)
        try:
            v = np.broadcast_to(expanded, lanes + shape)
        except ValueError:
            raise Diverged("broadcast shapes") from None
        for r in res:
            lf[r] = v.astype(out.dtype, copy=False)

    return run


@lane_impl(Linalg.transpose)
def transpose(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    (a,) = ins
    (o,) = outs
    res = c.result_slots(op)
    R = c.rank
    perm = tuple(range(R)) + tuple(R + p for p in int_array(c.need_attr(op, "permutation")))
    rank = _trank(c, op.operand_types[0])
    out_laned = c.is_laned(op.operands[1])

    def run(lf: list[Any]) -> None:
        x = _lanes_of(lf[a], rank, R)
        out = lf[o]
        v = np.transpose(x, perm)
        if v.shape[R:] != (_tail_shape(out, R) if out_laned else tuple(out.shape)):
            raise Diverged("transpose shape")
        for r in res:
            lf[r] = v.astype(out.dtype, copy=False)

    return run


@lane_impl(Linalg.copy)
def copy(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    (a,) = ins
    (o,) = outs
    res = c.result_slots(op)
    R = c.rank
    dt = np_dtype(element(L._out_types(c, op, outs)[0]))
    rank = _trank(c, op.operand_types[0])
    out_laned = c.is_laned(op.operands[1])

    def run(lf: list[Any]) -> None:
        x = _lanes_of(lf[a], rank, R)
        out = lf[o]
        if x.shape[R:] != (_tail_shape(out, R) if out_laned else tuple(out.shape)):
            raise Diverged("copy shape")
        for r in res:
            lf[r] = np.array(x, dtype=dt)

    return run


@lane_impl(*(f"linalg.{n}" for n in ("add", "sub", "mul", "div", "max", "min", "powf")))
def named_binary(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    if len(ins) != 2 or len(outs) != 1:
        raise CompileError(f"{op.name} takes two inputs and one output", op)
    a, b = ins
    (o,) = outs
    res = c.result_slots(op)
    dt = np_dtype(element(L._out_types(c, op, outs)[0]))
    fn = L._binary_fn(op.name.split(".")[1], dt)
    R = c.rank
    laned = [c.is_laned(n) for n in op.operands[:3]]

    def run(lf: list[Any]) -> None:
        x, y, out = lf[a], lf[b], lf[o]
        want = _tail_shape(out, R) if laned[2] else tuple(out.shape)
        xs = x.shape[R:] if laned[0] else x.shape
        ys = y.shape[R:] if laned[1] else y.shape
        if xs != want or ys != want:
            raise Diverged("operand shapes differ")
        v = np.asarray(fn(x if x.dtype == dt else x.astype(dt), y if y.dtype == dt else y.astype(dt)))
        v = v if v.dtype == dt else v.astype(dt)
        for r in res:
            lf[r] = v

    return run


@lane_impl(*(f"linalg.{n}" for n in (*L._UNARY, "erf")))
def named_unary(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    (a,) = ins
    (o,) = outs
    res = c.result_slots(op)
    name = op.name.split(".")[1]
    dt = np_dtype(element(L._out_types(c, op, outs)[0]))
    if name == "erf":
        from .ops.math import _float_fn

        fn = _float_fn("erf", dt)
    else:
        fn = L._UNARY[name]
    if name in ("exp", "log", "tanh", "rsqrt") and dt != np.float64 and dt.kind not in "iub":
        inner = fn
        fn = lambda x: inner(x.astype(np.float64))  # noqa: E731 - as the per-tile op
    elif dt not in (np.float16, np.float32, np.float64) and dt.kind not in "iub":
        inner = fn
        fn = lambda x: inner(x.astype(np.float32))  # noqa: E731
    R = c.rank
    laned = [c.is_laned(n) for n in op.operands[:2]]

    def run(lf: list[Any]) -> None:
        x, out = lf[a], lf[o]
        if (x.shape[R:] if laned[0] else x.shape) != (_tail_shape(out, R) if laned[1] else tuple(out.shape)):
            raise Diverged("operand shapes differ")
        v = np.asarray(fn(x.astype(dt, copy=False)))
        v = v.astype(dt, copy=False)
        if not laned[0]:
            v = v.reshape((1,) * R + v.shape)
        for r in res:
            lf[r] = v

    return run


# ---------------------------------------------------------------------- reductions


@lane_impl(Linalg.reduce)
def reduce(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    block = op.regions[0].blocks[0]
    pattern = L._single_combiner(block) if len(ins) == 1 else None
    if pattern is None or c.facts.free[id(op)]:
        return _by_lane(c, op, "a linalg.reduce with a general body")
    kind = L._REDUCERS[pattern[0].name]
    (a,) = ins
    (o,) = outs
    res = c.result_slots(op)
    R = c.rank
    dims = tuple(R + d for d in int_array(c.need_attr(op, "dimensions")))
    dt = np_dtype(element(L._out_types(c, op, outs)[0]))
    in_rank = _trank(c, op.operand_types[0])
    init_laned = c.is_laned(op.operands[1])

    def run(lf: list[Any]) -> None:
        x = _lanes_of(lf[a], in_rank, R)
        init = lf[o]
        if type(init) is Uninit:
            raise Diverged("reduce into tensor.empty")
        red = np.asarray(L._reduce(kind, x, dims, dt))
        want = init.shape[R:] if init_laned else init.shape
        if red.shape[R:] != tuple(want):
            raise Diverged("reduce shapes")
        v = L._combine(kind, init, red, dt)
        for r in res:
            lf[r] = v

    return run


# ---------------------------------------------------------------------- generic


def _shift(e: af.AffineExpr, by: int) -> af.AffineExpr:
    if isinstance(e, af.Dim):
        return af.Dim(position=e.position + by)
    if isinstance(e, af.Binary):
        return af.Binary(kind=e.kind, lhs=_shift(e.lhs, by), rhs=_shift(e.rhs, by))
    return e


class _Body:
    """A generic's body (compiled per tile, vector mode) run once for all lanes: the
    linalg.index values without the lane loops, and its ops counted once per lane of a tile."""

    __slots__ = ("cb", "arg_slots", "index_in", "index_out", "R")

    def __init__(self, cb: Any, index_in: int, index_out: int, R: int) -> None:
        self.cb = cb
        self.arg_slots = cb.arg_slots
        self.index_in = index_in
        self.index_out = index_out
        self.R = R

    def run(self, fr: list[Any]) -> None:
        idx = fr[self.index_in]
        if idx is not None:
            fr[self.index_out] = tuple(idx[self.R:])
        rep = fr[0]
        before = rep.steps
        self.cb.run(fr)
        rep.steps = before + (rep.steps - before) * fr[1].per_tile

    def results(self, fr: list[Any]) -> list[Any]:
        return self.cb.results(fr)  # type: ignore[no-any-return]


@lane_impl(Linalg.generic)
def generic(c: LaneCompiler, op: Operation) -> LaneFn:
    ins, outs = L._split(c, op)
    res = c.result_slots(op)
    maps = [c.program.attr(e) for e in c.need_attr(op, "indexing_maps").elements]
    if not all(isinstance(m, at.AffineMapAttr) for m in maps):
        raise CompileError("indexing_maps must be affine maps", op)
    amaps = [m.value for m in maps]  # type: ignore[union-attr]
    if any(m.num_symbols for m in amaps):
        return _by_lane(c, op, "symbols in indexing maps")
    iters = L._iterators(c, op)
    R = c.rank
    operands = ins + outs
    n_in = len(ins)
    names = op.operands
    laned = [c.is_laned(n) for n in names[: len(operands)]]
    ranks = [_trank(c, t) for t in op.operand_types[: len(operands)]]
    if any(r == 0 and lan for r, lan in zip(ranks, laned, strict=True)):
        return _by_lane(c, op, "a laned scalar operand of linalg.generic")
    n = len(iters)
    lane_dims = tuple(af.Dim(position=i) for i in range(R))
    # laned inputs and every output get the lane loops; uniform inputs broadcast over them
    wide = [af.AffineMap(num_dims=n + R, num_symbols=0,
                         results=(lane_dims if (laned[i] or i >= n_in) else ()) + tuple(_shift(e, R) for e in m.results))
            for i, m in enumerate(amaps)]
    loops = L._Loops(wide, n + R)
    reduction = [R + i for i, k in enumerate(iters) if k == "reduction"]
    parallel = list(range(R)) + [R + i for i, k in enumerate(iters) if k != "reduction"]
    block = op.regions[0].blocks[0]
    out_dts = [np_dtype(element(t)) for t in L._out_types(c, op, outs)]
    free = [n_ for n_ in sorted(c.facts.free[id(op)]) if c.is_laned(n_)]
    free_slots = [c.value_slot(n_) for n_ in free]
    free_ranks = [_trank(c, _type_of(op, n_)) for n_ in free]
    if any(free_ranks):
        return _by_lane(c, op, "a laned tensor captured by a linalg.generic body")
    index_in = c.slot(f"%__lane_index_{id(op)}")
    index_out = c.slot(f"%__linalg_index_{id(op)}")
    saved_index = c.linalg_index_slot
    c.linalg_index_slot = index_out
    c.pertile += 1
    try:
        if reduction:
            plan = L._reduction_plan(block, n_in)
            if plan is not None and L._contraction_form(block, n_in, plan, L._Loops(amaps, n)) is not None:
                raise _Contraction
            if plan is not None:
                cb = L._compile_with_passthrough(c, block, plan)
                inner = L._generic_reduce(op, _Body(cb, index_in, index_out, R), loops, operands, n_in, res, out_dts,  # type: ignore[arg-type]
                                          reduction, parallel, plan, index_in, block)
            else:
                cb = FuncCompiler.compile_block(c, block, vector=True)
                inner = L._generic_sequential(_Body(cb, index_in, index_out, R), loops, operands, n_in, res,  # type: ignore[arg-type]
                                              out_dts, reduction, parallel, index_in)
        else:
            cb = FuncCompiler.compile_block(c, block, vector=True)
            inner = L._generic_parallel(c, op, _Body(cb, index_in, index_out, R), loops, operands, n_in, res,  # type: ignore[arg-type]
                                        out_dts, index_in)
    except _Contraction:
        c.pertile -= 1
        c.linalg_index_slot = saved_index
        return _by_lane(c, op, "a contraction")
    else:
        c.pertile -= 1
        c.linalg_index_slot = saved_index
    uses_index = any(o.name == Linalg.index for o in op.walk())

    def run(lf: list[Any]) -> None:
        shape = lf[1].shape
        saved = [lf[s] for s in operands]
        saved_free = [lf[s] for s in free_slots]
        try:
            for i, s in enumerate(operands):
                v = saved[i]
                if i >= n_in:
                    lf[s] = _full_lanes(v, shape, ranks[i], R) if laned[i] else _full_lanes(v, shape, ranks[i], 0)
                elif laned[i]:
                    lf[s] = _read_only(v, shape + v.shape[R:])
            for s, v, fr_rank in zip(free_slots, saved_free, free_ranks, strict=True):
                a = np.asarray(v)
                lf[s] = a.reshape(a.shape[:R] + (1,) * n + a.shape[R:]) if fr_rank == 0 else a
            if not uses_index:
                lf[index_in] = None
            inner(lf)
        finally:
            for s, v in zip(operands, saved, strict=True):
                lf[s] = v
            for s, v in zip(free_slots, saved_free, strict=True):
                lf[s] = v

    return run


class _Contraction(Exception):
    pass


def _type_of(op: Operation, name: str) -> ty.Type:
    for inner in op.walk():
        for n, t in zip(inner.operands, inner.operand_types, strict=False):
            if n == name:
                return t
    raise CompileError(f"no type for {name}")


@lane_impl(*L._NAMED_SPECS)
def matmul(c: LaneCompiler, op: Operation) -> LaneFn:
    """Lane by lane, each lane the per-tile contraction (L.contractor: the same calls, so the same
    bits), with each narrow-float operand widened to f32 once for all lanes (the conversion is
    exact and elementwise: the same values as a lane's own widening, in fewer numpy calls)."""
    general = _by_lane(c, op, "a contraction")
    a, b, o, res, spec, dt = L.matmul_plan(c, op)
    v = named(op)
    in_groups, out_group = L._dps_groups(op)
    laned = [c.is_laned(n) for g in in_groups for n in v.operands(g)]
    outs = v.operands(out_group)
    if len(res) != 1 or not c.is_laned(op.results[0]) or len(laned) != 2 or len(outs) != 1:
        return general
    acc_laned = c.is_laned(outs[0])
    R = c.rank
    (r,) = res
    contract = L.contractor(spec, dt)

    def lane(v: np.ndarray, idx: tuple[int, ...], is_laned: bool) -> np.ndarray:
        return v[tuple(i if n > 1 else 0 for i, n in zip(idx, v.shape[:R], strict=True))] if is_laned else v

    def run(lf: list[Any]) -> None:
        x, y, acc = lf[a], lf[b], lf[o]
        if type(x) is not np.ndarray or type(y) is not np.ndarray or type(acc) is not np.ndarray:
            general(lf)
            return
        wide = L.contraction_dtype(x.dtype, y.dtype, dt)
        cache = lf[0].machine.wide
        if wide == F32:
            x = L._widened(x, wide, cache) if x.dtype in NARROW_FLOATS else x
            y = L._widened(y, wide, cache) if y.dtype in NARROW_FLOATS else y
        out = []
        for idx in np.ndindex(*lf[1].shape):
            xi, yi = lane(x, idx, laned[0]), lane(y, idx, laned[1])
            ci = lane(acc, idx, acc_laned)
            try:
                v = contract(xi, yi, ci, cache)
            except ValueError:
                raise Diverged("contraction operand shapes") from None
            if v.shape != ci.shape:
                raise Diverged("contraction result shape")
            out.append(v)
        lf[r] = np.stack(out).reshape(lf[1].shape + out[0].shape)

    return run


# ---------------------------------------------------------------------- tensor ops


@lane_impl(Tensor.splat)
def splat(c: LaneCompiler, op: Operation) -> LaneFn:
    v = c.operand_slot(op, "input")
    if c.operand_group(op, "dynamic_sizes"):
        return _by_lane(c, op, "tensor.splat with dynamic sizes")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    assert isinstance(t, ty.TensorType)
    shape = tuple(int(d or 0) for d in t.shape)
    dt = np_dtype(element(t))
    R = c.rank

    def run(lf: list[Any]) -> None:
        x = np.asarray(lf[v]).astype(dt)
        out = np.empty(x.shape[:R] + shape, dtype=dt)
        out[...] = x.reshape(x.shape + (1,) * len(shape))
        lf[r] = out

    return run


@lane_impl(Tensor.extract)
def extract(c: LaneCompiler, op: Operation) -> LaneFn:
    src = c.operand_slot(op, "tensor")
    idx = c.operand_group(op, "indices")
    (r,) = c.result_slots(op)
    R = c.rank
    src_laned = c.is_laned(op.operands[0])
    rank = _trank(c, op.operand_types[0])
    if len(idx) != rank:
        raise CompileError("tensor.extract: indices and rank differ", op)

    def run(lf: list[Any]) -> None:
        arr = _lanes_of(lf[src], rank, R) if src_laned else np.asarray(lf[src]).reshape((1,) * R + np.shape(lf[src]))
        ii = [lf[s] for s in idx]
        tail = arr.shape[R:]
        for x, n_ in zip(ii, tail, strict=True):
            xa = np.asarray(x)
            if xa.size and (int(xa.min()) < 0 or int(xa.max()) >= n_):
                raise Diverged("tensor.extract index out of bounds")
        if all(type(x) is not np.ndarray for x in ii):
            at: tuple[Any, ...] = (Ellipsis, *[int(x) for x in ii])
            lf[r] = arr[at] if rank else arr
            return
        lanes = np.broadcast_shapes(arr.shape[:R], *[np.shape(x) for x in ii if type(x) is np.ndarray])
        grids: tuple[np.ndarray, ...] = tuple(np.indices(lanes, sparse=True))
        lane_ix = tuple(g if arr.shape[k] > 1 else np.zeros_like(g) for k, g in enumerate(grids))
        lf[r] = arr[lane_ix + tuple(np.asarray(x, dtype=I64) if type(x) is np.ndarray else int(x) for x in ii)]

    return run


@lane_impl(Tensor.extract_slice)
def extract_slice(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.tensor import _reduced_shape, _region
    from .ops.tensor import _Slice as Sl

    src = c.operand_slot(op, "source")
    (r,) = c.result_slots(op)
    sl = Sl(c, op)
    t = c.rtype(op)
    R = c.rank
    rank = _trank(c, op.operand_types[0])
    if any(c.is_laned(n) for n in op.operands[1:]):
        from .lockstep_tensor import extract_slice_at_lanes

        return extract_slice_at_lanes(c, op, src, r, sl, rank)

    def run(lf: list[Any]) -> None:
        arr = _lanes_of(lf[src], rank, R)
        o, s, st = sl.values(lf)
        try:
            region = _region(o, s, st, arr.shape[R:])
            shape = _reduced_shape(s, t)
        except Exception:  # noqa: BLE001 - the per-tile run reports it
            raise Diverged("slice out of bounds") from None
        part = arr[(slice(None),) * R + region]
        lf[r] = part.reshape(part.shape[:R] + shape)

    return run


@lane_impl(Tensor.insert_slice)
def insert_slice(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.tensor import _region
    from .ops.tensor import _Slice as Sl

    src, dest = c.operand_slot(op, "source"), c.operand_slot(op, "dest")
    res = c.result_slots(op)
    if not res:
        raise CompileError("parallel_insert_slice", op)
    sl = Sl(c, op)
    R = c.rank
    src_rank = _trank(c, op.operand_types[0])
    dest_rank = _trank(c, op.operand_types[1])
    if any(c.is_laned(n) for n in op.operands[2:]):
        from .lockstep_tensor import insert_slice_at_lanes

        return insert_slice_at_lanes(c, op, (src, dest, res[0]), sl, (src_rank, dest_rank))

    def run(lf: list[Any]) -> None:
        value = lf[src]
        if type(value) is Uninit:
            raise Diverged("inserts tensor.empty contents")
        x = _lanes_of(value, src_rank, R)
        d = _lanes_of(lf[dest], dest_rank, R)
        o, s, st = sl.values(lf)
        try:
            region = _region(o, s, st, d.shape[R:])
        except Exception:  # noqa: BLE001
            raise Diverged("slice out of bounds") from None
        lanes = np.broadcast_shapes(x.shape[:R], d.shape[:R])
        key = (slice(None),) * R + region
        if type(d) is Uninit:
            data = np.array(np.broadcast_to(d.data, lanes + d.data.shape[R:]))
            defined = np.array(np.broadcast_to(d.defined, lanes + d.defined.shape[R:]))
            data[key] = x.reshape(x.shape[:R] + tuple(s))
            defined[key] = True
            if not defined.all():
                raise Diverged("a partly defined laned tensor")
            lf[res[0]] = data
            return
        out = np.array(np.broadcast_to(d, lanes + d.shape[R:]))
        out[key] = x.reshape(x.shape[:R] + tuple(s))
        lf[res[0]] = out

    return run


@lane_impl(Tensor.collapse_shape)
def collapse_shape(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.tensor import _reassociation

    src = c.operand_slot(op, "src")
    (r,) = c.result_slots(op)
    groups = _reassociation(c, op)
    R = c.rank
    rank = _trank(c, op.operand_types[0])

    def run(lf: list[Any]) -> None:
        arr = _lanes_of(lf[src], rank, R)
        tail = arr.shape[R:]
        shape = tuple(int(math.prod([tail[i] for i in g])) for g in groups)
        if not groups and int(math.prod(tail)) != 1:
            raise Diverged("collapse to rank 0")
        lf[r] = arr.reshape(arr.shape[:R] + shape)

    return run


@lane_impl(Tensor.expand_shape)
def expand_shape(c: LaneCompiler, op: Operation) -> LaneFn:
    from .ops.common import mixed, resolve_mixed

    src, dyn = c.operand_slot(op, "src"), c.operand_group(op, "output_shape")
    if any(c.is_laned(n) for n in op.operands[1:]):
        return _by_lane(c, op, "output shapes that differ between lanes")
    (r,) = c.result_slots(op)
    static, _ = mixed(c, int_array(c.need_attr(op, "static_output_shape")), list(dyn))
    R = c.rank
    rank = _trank(c, op.operand_types[0])

    def run(lf: list[Any]) -> None:
        arr = _lanes_of(lf[src], rank, R)
        shape = tuple(resolve_mixed(static, list(dyn), lf))
        if int(math.prod(shape)) != int(math.prod(arr.shape[R:])):
            raise Diverged("expand_shape sizes")
        lf[r] = arr.reshape(arr.shape[:R] + shape)

    return run
