"""Interpreter mutants: one realistic implementation bug each, injected into the reference
interpreter (benchmarks/mutants_patch.py says how).

They are written from the specification, not from the suite: for each semantics class of
spec/ (memory views and access tiles, indirect access, integer ops and their edge values,
floating point with NaN and signed zeros, transcendental accuracy, structured ops, loops
and control flow, memory ordering, inter-tile collectives), the bugs an implementer could
plausibly make: the signed variant of an unsigned op, a rounding direction, a neglected
operand, an order reversed, an off-by-one. Whether a case exists that shows the bug is what
the harness measures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
from mutants_patch import (
    Mutant,
    Patch,
    attribute,
    per_tile,
    post,
    post_typed,
    pre,
    pre_typed,
    predicates,
    result_dtype,
    retarget,
    same_kind,
    together,
)

KT = "reference_interp.ops.ktdp"
IT = "reference_interp.ops.intertile"
LN = "reference_interp.ops.linalg"
TN = "reference_interp.ops.tensor"

# ---------------------------------------------------------------------- memory views and tiles


def _remake_view(v: Any, **changes: Any) -> Any:
    from reference_interp.memory import MemoryView

    args = {"space": v.space, "alloc": v.alloc, "addr": v.addr, "sizes": v.sizes, "strides": v.strides,
            "dtype": v.dtype, "cset": v.cset, "csyms": v.csyms, "ct_id": v.ct_id}
    args.update(changes)
    return MemoryView(**args)


def _row_major(sizes: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(sizes):
        out.append(max(acc, 1))
        acc *= max(n, 1)
    return tuple(out[::-1])


def _views(change: Callable[[Any], Any]) -> Patch:
    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        fr[outs[0]] = change(fr[outs[0]])
    return post(("ktdp.construct_memory_view",), fix)


def _tiles(change: Callable[[Any], None]) -> Patch:
    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        change(fr[outs[0]])
    return post(("ktdp.construct_access_tile",), fix)


def _copy_tile(t: Any, **changes: Any) -> Any:
    from reference_interp.access import AccessTile

    new = AccessTile.__new__(AccessTile)
    for slot in AccessTile.__slots__:
        setattr(new, slot, changes.get(slot, getattr(t, slot)))
    if "perm" in changes or "ext" in changes:
        new.shape = new.ext if new.perm is None else tuple(new.ext[p] for p in new.perm)
    return new


def _global_base(v: Any) -> Any:
    return _remake_view(v, addr=v.alloc.base) if v.space == "global" and v.alloc is not None else v


def _zero_base(t: Any) -> None:
    if t.lo is not None:
        t.lo = tuple(0 for _ in t.lo)


def _reversed_base(t: Any) -> None:
    if t.lo is not None and len(t.lo) > 1:
        t.lo = tuple(reversed(t.lo))


def _holes_one(load: Any) -> Any:
    def mutated(ctx: Any, tile: Any, opname: str) -> Any:
        data = load(ctx, tile, opname)
        if tile.mask is None:
            return data
        mask = tile.mask if tile.perm is None else tile.mask.transpose(tile.perm)
        data = np.array(data)
        data[~mask] = 1
        return data
    return mutated


def _extents_from_bounds() -> Patch:
    """Sets enumerated over the box of their single-dimension bounds: a tile's shape and its
    position 0 come from that box instead of the set's own least and greatest points."""
    def patch() -> Any:
        from unittest import mock

        from ktir.ir import affine as af
        from reference_interp.affine_eval import CompiledSet, SetPoints

        original = CompiledSet._enumerate

        def mutated(self: Any, syms: tuple[int, ...]) -> Any:
            found = original(self, syms)
            if not self.other or found.count == 0:
                return found
            bounds = af.IntegerSet(num_dims=self.nd, num_symbols=self.ns, constraints=tuple(
                c for i, c in enumerate(self.iset.constraints) if i not in self.other))
            outer = original(CompiledSet(bounds, self.what), syms)
            grids = [a + lo for a, lo in zip(np.indices(outer.ext, dtype=np.int64), outer.lo, strict=True)]
            mask = self.contains(grids, syms, only_other=True)
            return SetPoints(outer.lo, outer.ext, mask, found.count)

        return mock.patch.object(CompiledSet, "_enumerate", mutated)

    return patch


def _holes_written(store: Any) -> Any:
    def mutated(ctx: Any, tile: Any, data: Any, opname: str) -> None:
        if tile.mask is not None and tile.coords is None:
            tile = _copy_tile(tile, mask=None)
        store(ctx, tile, data, opname)
    return mutated


def _inverse_order(load: Any) -> Any:
    def mutated(ctx: Any, tile: Any, opname: str) -> Any:
        if tile.perm is None:
            return load(ctx, tile, opname)
        return load(ctx, _copy_tile(tile, perm=tuple(int(i) for i in np.argsort(tile.perm))), opname)
    return mutated


def _linear_load(load: Any) -> Any:
    def mutated(ctx: Any, tile: Any, opname: str) -> Any:
        if tile.perm is None:
            return load(ctx, tile, opname)
        return load(ctx, _copy_tile(tile, perm=None), opname).reshape(tile.shape)
    return mutated


def _linear_store(store: Any) -> Any:
    def mutated(ctx: Any, tile: Any, data: Any, opname: str) -> None:
        if tile.perm is None:
            return store(ctx, tile, data, opname)
        return store(ctx, _copy_tile(tile, perm=None), np.asarray(data).reshape(tile.ext), opname)
    return mutated


def _swap_tile_ids(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    if len(outs) == 2:
        fr[outs[0]], fr[outs[1]] = fr[outs[1]], fr[outs[0]]


def _shared_scratchpad(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    v = fr[outs[0]]
    if v.space == "ct_local" and v.ct_id is None:
        fr[outs[0]] = _remake_view(v, alloc=fr[0].machine.local(0), ct_id=0)


# ---------------------------------------------------------------------- indirect access


def _sorted_indices(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    t = fr[outs[0]]
    if t.coords is not None:
        t.coords = [np.sort(c, axis=0) if getattr(c, "ndim", 0) and c.shape[0] > 1 else c for c in t.coords]


def _direct_offsets_dropped(c: Any, op: Any) -> Any:
    kinds = [bool(v) for v in op.attributes["per_dim_subscript_kinds"].values]

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        t = fr[outs[0]]
        if t.coords is None:
            return
        t.coords = [x if indirect or not np.size(x) else x - np.min(x) for x, indirect in zip(t.coords, kinds, strict=True)]
    return fix


def _indirect_order_ignored(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    t = fr[outs[0]]
    if t.perm is not None:
        fr[outs[0]] = _copy_tile(t, perm=None)


# ---------------------------------------------------------------------- memory ordering


def _start_of_kernel_loads() -> Patch:
    """Loads of global memory see it as it was before the kernel's first store to it."""
    snapshots: dict[int, tuple[Any, np.ndarray]] = {}

    def global_alloc(tile: Any) -> Any:
        from reference_interp.memory import MemoryView

        view = tile.view
        return view.alloc if type(view) is MemoryView and view.space == "global" else None

    def on_store(store: Any) -> Any:
        def mutated(ctx: Any, tile: Any, data: Any, opname: str) -> None:
            alloc = global_alloc(tile)
            if alloc is not None and snapshots.get(id(alloc), (None,))[0] is not alloc:
                if len(snapshots) > 256:  # allocations of finished runs
                    snapshots.clear()
                snapshots[id(alloc)] = (alloc, alloc.raw.copy())
            store(ctx, tile, data, opname)
        return mutated

    def on_load(load: Any) -> Any:
        def mutated(ctx: Any, tile: Any, opname: str) -> Any:
            alloc = global_alloc(tile)
            kept = snapshots.get(id(alloc)) if alloc is not None else None
            if kept is None or kept[0] is not alloc:
                return load(ctx, tile, opname)
            current = alloc.raw
            alloc.raw = kept[1]
            alloc._typed.clear()
            try:
                return np.array(load(ctx, tile, opname))
            finally:
                alloc.raw = current
                alloc._typed.clear()
        return mutated

    return together(attribute(KT, "store", on_store), attribute(KT, "load", on_load))


# ---------------------------------------------------------------------- integers


def _ints(x: Any) -> np.ndarray:
    """Values as an object array of Python ints (exact, any width)."""
    return np.vectorize(int, otypes=[object])(np.asarray(x)) if np.ndim(x) else np.array(int(x), dtype=object)


def _wrap(v: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    """Python ints wrapped to the signed integer type `dt` (two's complement)."""
    w = 8 * dt.itemsize
    half = 1 << (w - 1)
    wrapped = np.vectorize(lambda n: ((n + half) % (1 << w)) - half, otypes=[object])(v)
    return wrapped.astype(dt)


def _int_result(fn: Callable[..., Any], n_in: int = 2) -> Callable[[Any, Any], Any]:
    """A fix replacing an integer op's result by `fn` of its operands' Python-int values,
    wrapped to the result type (i1 results are left alone)."""
    def make(c: Any, op: Any) -> Any:
        dt = result_dtype(c, op)
        if dt == np.bool_:
            return None

        def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
            args = [_ints(fr[s]) for s in ins[:n_in]]
            value = np.vectorize(fn, otypes=[object])(*args)
            fr[outs[0]] = same_kind(fr[outs[0]], _wrap(value, dt))
        return fix
    return make


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _floordiv_by_dividend_sign(a: int, b: int) -> int:
    q = _trunc_div(a, b)
    return q - 1 if a < 0 and q * b != a else q


def _saturating(op: Callable[[int, int], int]) -> Callable[[Any, Any], Any]:
    def make(c: Any, op_: Any) -> Any:
        dt = result_dtype(c, op_)
        if dt == np.bool_:
            return None
        w = 8 * dt.itemsize
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1

        def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
            a, b = _ints(fr[ins[0]]), _ints(fr[ins[1]])
            exact = np.vectorize(lambda x, y: min(max(op(x, y), lo), hi), otypes=[object])(a, b)
            fr[outs[0]] = same_kind(fr[outs[0]], exact.astype(dt))
        return fix
    return make


def _index_32_bit(c: Any, op: Any) -> Any:
    from ktir.ir import types as ty

    if not isinstance(ty.element_type(c.type(op.result_types[0])), ty.IndexType):
        return None

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        fr[outs[0]] = same_kind(fr[outs[0]], _wrap(_ints(fr[outs[0]]), np.dtype(np.int32)).astype(np.int64))
    return fix


def _trunci_saturates(c: Any, op: Any) -> Any:
    dt = result_dtype(c, op)
    if dt == np.bool_:
        return None
    w = 8 * dt.itemsize
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        clamped = np.vectorize(lambda n: min(max(n, lo), hi), otypes=[object])(_ints(fr[ins[0]]))
        fr[outs[0]] = same_kind(fr[outs[0]], clamped.astype(dt))
    return fix


def _ctpop_sign_extended(c: Any, op: Any) -> Any:
    dt = result_dtype(c, op)
    w = 8 * dt.itemsize
    if dt == np.bool_ or w >= 64:
        return None

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        x = np.asarray(fr[ins[0]])
        fr[outs[0]] = same_kind(fr[outs[0]], np.asarray(fr[outs[0]]) + np.where(x < 0, 64 - w, 0).astype(dt))
    return fix


def _absi_saturates(c: Any, op: Any) -> Any:
    dt = result_dtype(c, op)
    if dt == np.bool_:
        return None
    info = np.iinfo(dt)

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        x = np.asarray(fr[ins[0]])
        fr[outs[0]] = same_kind(fr[outs[0]], np.where(x == info.min, info.max, np.asarray(fr[outs[0]])).astype(dt))
    return fix


def _bitcast_converts(c: Any, op: Any) -> Any:
    dt = result_dtype(c, op)

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        x = np.asarray(fr[ins[0]])
        with np.errstate(all="ignore"):
            wide = x.astype(np.float64)
            if np.issubdtype(dt, np.integer):
                wide = np.nan_to_num(np.trunc(wide), nan=0.0, posinf=0.0, neginf=0.0)
                info = np.iinfo(dt)
                wide = np.clip(wide, info.min, info.max)
            fr[outs[0]] = same_kind(fr[outs[0]], wide.astype(dt))
    return fix


def _fptosi_nearest(c: Any, op: Any) -> Any:
    dt = result_dtype(c, op)
    if dt == np.bool_:
        return None
    info = np.iinfo(dt)

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        x = np.asarray(fr[ins[0]]).astype(np.float64)
        fr[outs[0]] = same_kind(fr[outs[0]], np.clip(np.rint(x), info.min, info.max).astype(dt))
    return fix


# ---------------------------------------------------------------------- floating point


def _two_byte(dt: np.dtype[Any]) -> bool:
    return dt.itemsize == 2 and not np.issubdtype(dt, np.integer)


def _step(y: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """One ulp from `y` toward `toward` (per element; any float type, 16-bit ones by their bits)."""
    y = np.array(y)
    if not _two_byte(y.dtype):
        return np.asarray(np.nextafter(y, np.asarray(toward).astype(y.dtype))).astype(y.dtype)
    bits = y.view(np.uint16).astype(np.int32)
    wide = y.astype(np.float64)
    with np.errstate(invalid="ignore"):
        up, down = toward > wide, toward < wide
    positive = (bits & 0x8000) == 0
    new = np.where(up & positive, bits + 1, bits)
    new = np.where(up & ~positive, np.where(bits == 0x8000, 0x0001, bits - 1), new)
    new = np.where(down & positive, np.where(bits == 0, 0x8001, bits - 1), new)
    new = np.where(down & ~positive, bits + 1, new)
    new = np.where(np.isnan(wide), bits, new)
    return new.astype(np.uint16).view(y.dtype)


def _zero_sign_first(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    a, b = np.asarray(fr[ins[0]]), np.asarray(fr[ins[1]])
    with np.errstate(invalid="ignore"):
        same = (a == b)
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(same, a, np.asarray(fr[outs[0]])))


def _sqrt_zero_positive(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x, y = np.asarray(fr[ins[0]]), np.asarray(fr[outs[0]])
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(x == 0, np.zeros_like(y), y))


def _rsqrt_zero_positive(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x, y = np.asarray(fr[ins[0]]), np.asarray(fr[outs[0]])
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(x == 0, np.full_like(y, np.inf), y))


def _copysign_by_comparison(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    a, b, y = np.asarray(fr[ins[0]]), np.asarray(fr[ins[1]]), np.asarray(fr[outs[0]])
    with np.errstate(invalid="ignore"):
        mag = np.abs(a.astype(np.float64))
        fr[outs[0]] = same_kind(fr[outs[0]], np.where(b.astype(np.float64) < 0, -mag, mag).astype(y.dtype))


def _divide_by_zero_nan(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    b, y = np.asarray(fr[ins[1]]), np.asarray(fr[outs[0]])
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(b == 0, np.full_like(y, np.nan), y))


def _tiny(dt: np.dtype[Any]) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dt).smallest_normal)


def _flush(x: Any) -> Any:
    a = np.asarray(x)
    if a.dtype.kind not in "fV" or a.dtype.kind == "V" and a.dtype.itemsize > 2:
        return x
    wide = a.astype(np.float64)
    flushed = np.where(np.abs(wide) < _tiny(a.dtype), np.copysign(0.0, wide), wide).astype(a.dtype)
    return same_kind(x, flushed)


def _ftz(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    fr[outs[0]] = _flush(fr[outs[0]])


def _daz(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    return {s: _flush(fr[s]) for s in ins}


def _zero_minus(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x = np.asarray(fr[ins[0]])
    fr[outs[0]] = same_kind(fr[ins[0]], (np.zeros_like(x) - x).astype(x.dtype))


def _abs_keeps_negative_zero(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x = np.asarray(fr[ins[0]])
    fr[outs[0]] = same_kind(fr[ins[0]], np.where(x < 0, -x, x).astype(x.dtype))


def _fmod_as_remainder(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    a, b = np.asarray(fr[ins[0]]), np.asarray(fr[ins[1]])
    wide = np.remainder(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    fr[outs[0]] = same_kind(fr[ins[0]], wide)


def _swapped_select(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    k, a, b = (fr[s] for s in ins)
    out = fr[outs[0]]
    fr[outs[0]] = np.where(k, b, a).astype(np.asarray(out).dtype) if isinstance(out, np.ndarray) else (b if k else a)


def _narrowing(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...], saturate_only: bool) -> None:
    x = np.asarray(fr[ins[0]]).astype(np.float64)
    y = np.array(fr[outs[0]], copy=True)
    if y.dtype.itemsize != 2:
        return
    bits = y.view(np.uint16)
    yw = y.astype(np.float64)
    finite = np.isfinite(x)
    # saturate: infinities from finite inputs; toward zero: one ulp back where rounding went up in magnitude
    over = finite & np.isinf(yw) if saturate_only else finite & (np.abs(yw) > np.abs(x)) & (x != 0)
    bits[over] -= 1
    fr[outs[0]] = same_kind(fr[outs[0]], y)


def _ties_away(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x = np.asarray(fr[ins[0]]).astype(np.float64)
    y = np.array(fr[outs[0]], copy=True)
    if not _two_byte(y.dtype):
        return
    away = _step(y, np.where(x < 0, -np.inf, np.inf))
    yw, aw = y.astype(np.float64), away.astype(np.float64)
    with np.errstate(invalid="ignore"):
        tie = np.isfinite(x) & np.isfinite(aw) & (np.abs(yw) < np.abs(x)) & (x - yw == (aw - yw) / 2)
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(tie, away, y))


def _sitofp_toward_zero(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x = _ints(fr[ins[0]])
    y = np.array(fr[outs[0]], copy=True)
    exact = np.vectorize(lambda n: abs(n), otypes=[object])(x)
    got = np.vectorize(lambda v: abs(int(v)) if np.isfinite(v) else 0, otypes=[object])(y.astype(np.float64))
    over = np.vectorize(lambda g, e: g > e, otypes=[bool])(got, exact)
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(over, _step(y, np.zeros(y.shape)), y))


def _two_ulp_up(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    y = np.asarray(fr[outs[0]])
    with np.errstate(invalid="ignore"):
        moved = _step(_step(y, np.full(y.shape, np.inf)), np.full(y.shape, np.inf))
        keep = ~np.isfinite(y.astype(np.float64)) | (y.astype(np.float64) == 0)
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(keep, y, moved))


def _tanh_saturates(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x, y = np.asarray(fr[ins[0]]), np.asarray(fr[outs[0]])
    wide = x.astype(np.float64)
    fr[outs[0]] = same_kind(fr[outs[0]], np.where(np.abs(wide) >= 4, np.sign(wide), y.astype(np.float64)).astype(y.dtype))


def _in_type(fn: Callable[..., Any]) -> Callable[[list[Any], tuple[int, ...], tuple[int, ...]], None]:
    """A fix recomputing an op's result as `fn(*operands as f64, dtype)`."""
    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        y = np.asarray(fr[outs[0]])
        with np.errstate(all="ignore"):
            value = fn(*(np.asarray(fr[s]).astype(np.float64) for s in ins), y.dtype)
        fr[outs[0]] = same_kind(fr[outs[0]], np.asarray(value).astype(y.dtype))
    return fix


def _round(v: Any, dt: np.dtype[Any]) -> np.ndarray:
    return np.asarray(v).astype(dt).astype(np.float64)


def _swap_operands(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    return {ins[0]: fr[ins[1]], ins[1]: fr[ins[0]]}


# ---------------------------------------------------------------------- structured ops


def _nan_dropping_reduce(reduce: Any) -> Any:
    def mutated(kind: str, x: Any, axes: Any, out_dt: Any) -> Any:
        if kind in ("maximum", "minimum") and not np.issubdtype(out_dt, np.integer) and out_dt != np.bool_:
            kind = "fmax" if kind == "maximum" else "fmin"
        return reduce(kind, x, axes, out_dt)
    return mutated


def _transpose_inverse(c: Any, op: Any) -> Any:
    from reference_interp.ops.common import int_array

    perm = tuple(int_array(op.attributes["permutation"]))
    inverse = tuple(int(i) for i in np.argsort(perm))

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        y = np.asarray(fr[outs[0]])
        fr[outs[0]] = np.transpose(np.asarray(fr[ins[0]]), inverse).reshape(y.shape).astype(y.dtype)
    return fix


def _batch_first_b(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    a, b, acc = (np.asarray(fr[s]) for s in ins[:3])
    y = np.asarray(fr[outs[0]])
    first = np.broadcast_to(b[:1], b.shape).astype(np.float64)
    fr[outs[0]] = (acc.astype(np.float64) + np.matmul(a.astype(np.float64), first)).astype(y.dtype)


def _flat_repeat(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    y = np.asarray(fr[outs[0]])
    fr[outs[0]] = np.resize(np.asarray(fr[ins[0]]), y.shape).astype(y.dtype)


def _unit_strides(region: Any) -> Any:
    def mutated(offsets: list[int], sizes: list[int], strides: list[int], shape: tuple[int, ...]) -> Any:
        return region(offsets, sizes, [1] * len(strides), shape)
    return mutated


def _concat_reversed(c: Any, op: Any) -> Any:
    dim = int(op.attributes["dim"].value)

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        fr[outs[0]] = np.concatenate([np.asarray(fr[s]) for s in reversed(ins)], axis=dim)
    return fix


def _pad_with_zero(c: Any, op: Any) -> Any:
    from reference_interp.ops.common import int_array

    low = int_array(op.attributes["static_low"])
    if any(v < 0 for v in low):  # a dynamic amount: this bug shows on static padding only
        return None

    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        src, y = np.asarray(fr[ins[0]]), np.array(fr[outs[0]])
        out = np.zeros_like(y)
        inner = tuple(slice(a, a + n) for a, n in zip(low, src.shape, strict=True))
        out[inner] = y[inner]
        fr[outs[0]] = out
    return fix


def _column_major(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    y = np.asarray(fr[outs[0]])
    fr[outs[0]] = np.reshape(np.asarray(fr[ins[0]]), y.shape, order="F")


def _insert_in_place(insert_into: Any) -> Any:
    def mutated(dest: Any, region: Any, value: Any) -> Any:
        if type(dest) is np.ndarray and not dest.flags.writeable:
            # a loaded tensor is a read-only view of memory: the bug writes through it
            with contextlib.suppress(ValueError):
                dest.flags.writeable = True
        if type(dest) is np.ndarray and dest.flags.writeable:
            dest[region] = value
            return dest
        return insert_into(dest, region, value)
    return mutated


def _zero_outs(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    last = ins[-1]
    return {last: np.zeros_like(fr[last])}


# ---------------------------------------------------------------------- loops and control flow


def _last_iteration_dropped(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    lb, ub, st = (int(fr[s]) for s in ins[:3])
    return {ins[1]: type(fr[ins[1]])(ub - st)} if ub - st > lb else {}


def _zero_trip_once(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    lb, ub, st = (int(fr[s]) for s in ins[:3])
    return {ins[1]: type(fr[ins[1]])(lb + max(st, 1))} if lb >= ub else {}


def _unit_step(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    return {ins[2]: type(fr[ins[2]])(1)}


def _results_are_inits(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    for r, i in zip(outs, ins[3:], strict=True):
        fr[r] = fr[i]


def _condition_inverted(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    k = fr[ins[0]]
    return {ins[0]: np.logical_not(k) if isinstance(k, np.ndarray) else not k}


def _parallel_inits_zero(c: Any, op: Any) -> Any:
    from ktir.dialects.access import named

    positions = named(op).operand_positions("init_vals")
    if not positions:
        return None

    def feed(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
        return {ins[p]: same_kind(fr[ins[p]], np.zeros_like(np.asarray(fr[ins[p]]))) for p in positions}
    return feed


# ---------------------------------------------------------------------- inter-tile collectives


def _concat_descending(concat: Any) -> Any:
    def mutated(pieces: list[Any], dims: list[int], out_shape: Any) -> Any:
        return concat(list(reversed(pieces)), dims, out_shape)
    return mutated


def _concat_first_axis(concat: Any) -> Any:
    def mutated(pieces: list[Any], dims: list[int], out_shape: Any) -> Any:
        if dims == [0]:
            return concat(pieces, dims, out_shape)
        joined = np.concatenate([np.asarray(p).reshape(-1) for p in pieces])
        return joined.reshape(tuple(int(d) for d in out_shape)) if None not in out_shape else joined
    return mutated


class _RankIsTileId(list):  # type: ignore[type-arg]
    """A consumer list whose `index(tile)` is the tile id itself."""

    def index(self, tile: Any, *args: Any) -> int:  # type: ignore[override]
        return int(tile)


def _plans(change: Callable[[Any], Any]) -> Patch:
    def make(plan_fn: Any) -> Any:
        def mutated(*args: Any) -> Any:
            return change(plan_fn(*args))
        return mutated
    return attribute(IT, "_plan", make)


def _with(plan: Any, **changes: Any) -> Any:
    from reference_interp.ops.intertile import DeliveryPlan

    fields = {"group_of": plan.group_of, "consumers": plan.consumers, "deps": plan.deps, "refcount": plan.refcount}
    fields.update(changes)
    return DeliveryPlan(**fields)


def _first_group_sources(plan: Any) -> Any:
    groups = sorted(plan.consumers)
    if len(groups) < 2:
        return plan
    first = plan.consumers[groups[0]][0] if plan.consumers[groups[0]] else None
    if first is None:
        return plan
    deps = {t: list(plan.deps[first]) for t in plan.deps}
    refcount: dict[int, int] = {}
    for sources in deps.values():
        for p in sources:
            refcount[p] = refcount.get(p, 0) + 1
    return _with(plan, deps=deps, refcount=refcount)


def _transposed_tiles() -> Patch:
    """Tile sets of a 2-D grid evaluated with the transposed linearisation of the tile ids."""
    grid: list[tuple[int, ...]] = [()]

    def remember(fn: Any) -> Any:
        def mutated(machine: Any, *args: Any) -> Any:
            grid[0] = tuple(machine.grid)
            return fn(machine, *args)
        return mutated

    def members(fn: Any) -> Any:
        def mutated(*args: Any) -> Any:
            tiles = fn(*args)
            if len(grid[0]) != 2:
                return tiles
            rows, cols = grid[0]
            return [(t % rows) * cols + t // rows for t in tiles]
        return mutated

    return together(attribute(IT, "_groups", remember), attribute(IT, "_plan", remember), attribute(IT, "_members", members))


def _identity_zero(c: Any, op: Any) -> Any:
    from ktir.dialects.access import named

    positions = named(op).operand_positions("identity")

    def feed(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
        return {ins[p]: same_kind(fr[ins[p]], np.zeros_like(np.asarray(fr[ins[p]]))) for p in positions}
    return feed


MATMULS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matmul_transpose_a", "linalg.matmul_transpose_b",
           "linalg.batch_matmul_transpose_b", "linalg.matvec", "linalg.dot")
FLOAT_BINARY = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf")
COLLECTIVES = ("ktdp.inter_tile_consume", "ktdp.inter_tile_reduce", "ktdp.inter_tile_gather", "ktdp.inter_tile_scatter",
               "ktdp.inter_tile_all_to_all", "ktdp.inter_tile_reduce_scatter")
LOADS_STORES = ("ktdp.load", "ktdp.store")


def _m(group: str, name: str, bug: str, patch: Patch, ops: tuple[str, ...] = ()) -> Mutant:
    return Mutant(name, bug, together(per_tile, patch), ops or tuple(getattr(patch, "ops", ())), group)


def catalogue() -> list[Mutant]:
    kt = KT
    return [
        # memory views and access tiles (spec/memory.md)
        _m("memory", "view-strides-ignored", "memory views are read with the row-major strides of their sizes",
           _views(lambda v: _remake_view(v, strides=_row_major(v.sizes)))),
        _m("memory", "view-offset-ignored", "a view starts at its array's first element whatever its offset operand",
           _views(_global_base)),
        _m("memory", "view-origin-ignored", "coordinate (0, ...) of a view is its first element even when its set starts elsewhere",
           _views(lambda v: _remake_view(v, origin=tuple(0 for _ in v.sizes)))),
        _m("memory", "tile-base-ignored", "access tiles start at coordinate 0 whatever their base subscripts",
           _tiles(_zero_base)),
        _m("memory", "tile-base-reversed", "access tile subscripts applied in reverse dimension order", _tiles(_reversed_base)),
        _m("memory", "holes-read-as-one", "loads through a non-rectangular access tile read 1 at holes instead of 0",
           attribute(kt, "load", _holes_one), LOADS_STORES),
        _m("memory", "tile-extents-from-bounds", "an access tile's shape and first position come from the box of its set's "
           "single-dimension bounds, not from the set's least and greatest points", _extents_from_bounds(),
           ("ktdp.construct_access_tile",)),
        _m("memory", "holes-written", "stores through a non-rectangular access tile also write the holes",
           attribute(kt, "store", _holes_written), LOADS_STORES),
        _m("memory", "order-inverted", "access_tile_order applied as its inverse permutation on loads",
           attribute(kt, "load", _inverse_order), LOADS_STORES),
        _m("memory", "order-ignored-load", "loads ignore access_tile_order and reshape the row-major data",
           attribute(kt, "load", _linear_load), LOADS_STORES),
        _m("memory", "order-ignored-store", "stores ignore access_tile_order and reshape the data row-major",
           attribute(kt, "store", _linear_store), LOADS_STORES),
        _m("memory", "tile-id-swapped", "2-D get_compute_tile_id returns (j, i)", post(("ktdp.get_compute_tile_id",), _swap_tile_ids)),
        _m("memory", "scratchpad-shared", "every tile's ct_local view addresses tile 0's scratchpad",
           post(("ktdp.construct_memory_view",), _shared_scratchpad)),
        # indirect access (spec/ops/ktdp.md, construct_indirect_access_tile)
        _m("indirect", "indirect-indices-sorted", "indirect access tiles visit their indices in sorted order",
           post(("ktdp.construct_indirect_access_tile",), _sorted_indices)),
        _m("indirect", "indirect-direct-offset-dropped", "the direct subscripts of an indirect access tile lose their constant "
           "and captured offsets (they start at 0)", post_typed(("ktdp.construct_indirect_access_tile",), _direct_offsets_dropped)),
        _m("indirect", "indirect-order-ignored", "variables_space_order is ignored: indirect tiles keep the variables' own order",
           post(("ktdp.construct_indirect_access_tile",), _indirect_order_ignored)),
        # memory ordering (spec/memory.md: a tile sees its own earlier stores)
        _m("ordering", "loads-miss-own-stores", "loads of global memory return its contents from before the kernel's first "
           "store to it (a read cache that stores do not update)", _start_of_kernel_loads(), LOADS_STORES),
        # integers: unsigned ops done as signed
        _m("integer", "divui-signed", "arith.divui done as signed division", retarget({"arith.divui": "arith.divsi"})),
        _m("integer", "remui-signed", "arith.remui done as signed remainder", retarget({"arith.remui": "arith.remsi"})),
        _m("integer", "shrui-arithmetic", "arith.shrui shifts in the sign bit", retarget({"arith.shrui": "arith.shrsi"})),
        _m("integer", "shrsi-logical", "arith.shrsi shifts in zeros", retarget({"arith.shrsi": "arith.shrui"})),
        _m("integer", "maxui-signed", "arith.maxui compares as signed", retarget({"arith.maxui": "arith.maxsi"})),
        _m("integer", "minui-signed", "arith.minui compares as signed", retarget({"arith.minui": "arith.minsi"})),
        _m("integer", "minsi-unsigned", "arith.minsi compares as unsigned", retarget({"arith.minsi": "arith.minui"})),
        _m("integer", "cmpi-unsigned-as-signed", "arith.cmpi ult/ule/ugt/uge compare as signed",
           predicates("arith.cmpi", {"ult": "slt", "ule": "sle", "ugt": "sgt", "uge": "sge"})),
        _m("integer", "cmpi-inclusive-as-strict", "arith.cmpi sle/sge/ule/uge are strict (off by one)",
           predicates("arith.cmpi", {"sle": "slt", "sge": "sgt", "ule": "ult", "uge": "ugt"})),
        _m("integer", "extui-sign-extends", "arith.extui sign-extends", retarget({"arith.extui": "arith.extsi"})),
        _m("integer", "extsi-zero-extends", "arith.extsi zero-extends", retarget({"arith.extsi": "arith.extui"})),
        _m("integer", "uitofp-signed", "arith.uitofp converts as signed", retarget({"arith.uitofp": "arith.sitofp"})),
        _m("integer", "sitofp-unsigned", "arith.sitofp converts as unsigned", retarget({"arith.sitofp": "arith.uitofp"})),
        _m("integer", "index-castui-signed", "arith.index_castui sign-extends", retarget({"arith.index_castui": "arith.index_cast"})),
        _m("integer", "index-cast-zero-extends", "arith.index_cast zero-extends", retarget({"arith.index_cast": "arith.index_castui"})),
        _m("integer", "fptoui-signed", "arith.fptoui converts through a signed integer", retarget({"arith.fptoui": "arith.fptosi"})),
        _m("integer", "fptosi-rounds-to-nearest", "arith.fptosi rounds to nearest instead of toward zero",
           post_typed(("arith.fptosi",), _fptosi_nearest)),
        _m("integer", "xori-as-ori", "arith.xori computes a bitwise or", retarget({"arith.xori": "arith.ori"})),
        _m("integer", "bitcast-converts-values", "arith.bitcast converts the value instead of reinterpreting the bits",
           post_typed(("arith.bitcast",), _bitcast_converts)),
        # integers: rounding of division and remainder
        _m("integer", "divsi-floors", "arith.divsi rounds toward negative infinity", retarget({"arith.divsi": "arith.floordivsi"})),
        _m("integer", "ceildivsi-truncates", "arith.ceildivsi rounds toward zero", retarget({"arith.ceildivsi": "arith.divsi"})),
        _m("integer", "ceildivsi-positive-divisor-formula", "arith.ceildivsi computed as floor((a + b - 1) / b), right "
           "only for positive divisors", post_typed(("arith.ceildivsi",), _int_result(lambda a, b: (a + b - 1) // b))),
        _m("integer", "floordivsi-truncates", "arith.floordivsi rounds toward zero", retarget({"arith.floordivsi": "arith.divsi"})),
        _m("integer", "floordivsi-dividend-sign", "arith.floordivsi corrects the truncated quotient by the dividend's sign "
           "only (wrong for negative divisors)", post_typed(("arith.floordivsi",), _int_result(_floordiv_by_dividend_sign))),
        _m("integer", "remsi-floored", "arith.remsi takes the sign of the divisor", post_typed(("arith.remsi",),
           _int_result(lambda a, b: a % b))),
        # integers: overflow and width
        _m("integer", "addi-saturates", "arith.addi saturates on signed overflow instead of wrapping",
           post_typed(("arith.addi",), _saturating(lambda a, b: a + b))),
        _m("integer", "muli-through-f64", "arith.muli multiplies in float64 (products beyond 2^53 lose their low bits)",
           post_typed(("arith.muli",), _int_result(lambda a, b: int(float(a) * float(b))))),
        _m("integer", "trunci-saturates", "arith.trunci clamps out-of-range values instead of keeping the low bits",
           post_typed(("arith.trunci",), _trunci_saturates)),
        _m("integer", "index-32-bit", "index arithmetic (addi/subi/muli on index) wraps at 32 bits",
           post_typed(("arith.addi", "arith.subi", "arith.muli"), _index_32_bit)),
        _m("integer", "ctpop-sign-extended", "math.ctpop counts the bits of the value sign-extended to 64 bits",
           post_typed(("math.ctpop",), _ctpop_sign_extended)),
        _m("integer", "absi-min-saturates", "math.absi of the most negative value gives the largest positive one "
           "(it wraps to itself)", post_typed(("math.absi",), _absi_saturates)),
        # floating point: NaN and signed zeros
        _m("nan-zero", "maximumf-drops-nan", "arith.maximumf returns the other operand for NaN (maxnum semantics)",
           retarget({"arith.maximumf": "arith.maxnumf"})),
        _m("nan-zero", "minimumf-drops-nan", "arith.minimumf returns the other operand for NaN",
           retarget({"arith.minimumf": "arith.minnumf"})),
        _m("nan-zero", "maxnumf-propagates-nan", "arith.maxnumf returns NaN when one operand is NaN",
           retarget({"arith.maxnumf": "arith.maximumf"})),
        _m("nan-zero", "minmax-zero-sign-ignored", "arith.maximumf/minimumf return the first operand when the operands "
           "compare equal (max(-0, +0) gives -0)", post(("arith.maximumf", "arith.minimumf"), _zero_sign_first)),
        _m("nan-zero", "minmaxnum-zero-sign-ignored", "arith.maxnumf/minnumf return the first operand when the operands "
           "compare equal (maxnum(-0, +0) gives -0)", post(("arith.maxnumf", "arith.minnumf"), _zero_sign_first)),
        _m("nan-zero", "negf-as-subtraction", "arith.negf computed as 0 - x (negf(+0) gives +0)", post(("arith.negf",), _zero_minus)),
        _m("nan-zero", "absf-keeps-negative-zero", "math.absf computed as x < 0 ? -x : x (absf(-0) gives -0)",
           post(("math.absf",), _abs_keeps_negative_zero)),
        _m("nan-zero", "sqrt-negative-zero-positive", "math.sqrt(-0) gives +0 (IEEE: -0)", post(("math.sqrt",), _sqrt_zero_positive)),
        _m("nan-zero", "rsqrt-negative-zero-positive", "math.rsqrt(-0) gives +inf (IEEE: -inf)",
           post(("math.rsqrt",), _rsqrt_zero_positive)),
        _m("nan-zero", "copysign-by-comparison", "math.copysign takes the sign from b < 0 (copysign(x, -0) is +|x|)",
           post(("math.copysign",), _copysign_by_comparison)),
        _m("nan-zero", "divf-by-zero-nan", "arith.divf by a zero gives NaN instead of a signed infinity",
           post(("arith.divf",), _divide_by_zero_nan)),
        _m("nan-zero", "cmpf-unordered-as-ordered", "arith.cmpf ueq/une/ult/ule/ugt/uge are false on NaN",
           predicates("arith.cmpf", {"ueq": "oeq", "une": "one", "ult": "olt", "ule": "ole", "ugt": "ogt", "uge": "oge"})),
        _m("nan-zero", "cmpf-ordered-as-unordered", "arith.cmpf oeq/one/olt/ole/ogt/oge are true on NaN",
           predicates("arith.cmpf", {"oeq": "ueq", "one": "une", "olt": "ult", "ole": "ule", "ogt": "ugt", "oge": "uge"})),
        _m("nan-zero", "subnormal-results-flushed", "addf/subf/mulf/divf flush subnormal results to zero (FTZ)",
           post(FLOAT_BINARY, _ftz)),
        _m("nan-zero", "subnormal-inputs-flushed", "addf/subf/mulf/divf read subnormal inputs as zero (DAZ)", pre(FLOAT_BINARY, _daz)),
        _m("nan-zero", "extf-flushes-subnormals", "arith.extf reads subnormal inputs as zero", pre(("arith.extf",), _daz)),
        # floating point: rounding
        _m("rounding", "truncf-toward-zero", "arith.truncf to f16/bf16 rounds toward zero",
           post(("arith.truncf",), lambda fr, i, o: _narrowing(fr, i, o, saturate_only=False))),
        _m("rounding", "truncf-saturates", "arith.truncf to f16/bf16 saturates to the largest finite value instead of infinity",
           post(("arith.truncf",), lambda fr, i, o: _narrowing(fr, i, o, saturate_only=True))),
        _m("rounding", "truncf-ties-away", "arith.truncf to f16/bf16 rounds ties away from zero instead of to even",
           post(("arith.truncf",), _ties_away)),
        _m("rounding", "sitofp-toward-zero", "arith.sitofp rounds integers that are not representable toward zero",
           post(("arith.sitofp",), _sitofp_toward_zero)),
        _m("rounding", "fma-rounds-product", "math.fma rounds the product to the result type before adding",
           post(("math.fma",), _in_type(lambda a, b, c, dt: _round(_round(a * b, dt) + c, dt)))),
        _m("rounding", "remf-floored", "arith.remf takes the sign of the divisor (Python %)", post(("arith.remf",), _fmod_as_remainder)),
        _m("rounding", "roundeven-half-away", "math.roundeven rounds ties away from zero", retarget({"math.roundeven": "math.round"})),
        _m("rounding", "round-half-even", "math.round rounds ties to even", retarget({"math.round": "math.roundeven"})),
        _m("rounding", "floor-as-trunc", "math.floor rounds toward zero", retarget({"math.floor": "math.trunc"})),
        _m("rounding", "ceil-as-trunc", "math.ceil rounds toward zero", retarget({"math.ceil": "math.trunc"})),
        _m("rounding", "select-swapped", "arith.select returns the false operand when the condition holds",
           post(("arith.select",), _swapped_select)),
        # transcendental functions (accuracy classes)
        _m("transcendental", "exp-two-ulp", "math.exp is 2 ulp above the correctly rounded result (its class allows 1)",
           post(("math.exp",), _two_ulp_up)),
        _m("transcendental", "tanh-saturates-early", "math.tanh returns ±1 for |x| >= 4",
           post(("math.tanh",), _tanh_saturates)),
        _m("transcendental", "powf-via-exp-log", "math.powf computed as exp(y * log(x)) (NaN for negative bases)",
           post(("math.powf",), _in_type(lambda x, y, dt: np.exp(y * np.log(x))))),
        _m("transcendental", "atan2-swapped", "math.atan2 takes its operands in the other order", pre(("math.atan2",), _swap_operands)),
        _m("transcendental", "log1p-naive", "math.log1p computed as log(1 + x) with 1 + x rounded to the type",
           post(("math.log1p",), _in_type(lambda x, dt: np.log(_round(1 + x, dt))))),
        _m("transcendental", "expm1-naive", "math.expm1 computed as exp(x) - 1 in the type",
           post(("math.expm1",), _in_type(lambda x, dt: _round(np.exp(x), dt) - 1))),
        # structured ops (linalg, tensor)
        _m("structured", "reduce-init-ignored", "linalg.reduce starts from zero instead of its outs operand",
           pre(("linalg.reduce",), _zero_outs)),
        _m("structured", "matmul-accumulator-ignored", "linalg.matmul (and its family) overwrite C instead of adding to it",
           pre(MATMULS, _zero_outs)),
        _m("structured", "reduce-max-drops-nan", "linalg.reduce with a maximumf/minimumf combiner ignores NaN",
           attribute(LN, "_reduce", _nan_dropping_reduce), ("linalg.reduce",)),
        _m("structured", "linalg-max-drops-nan", "linalg.max/min (and reduce's combine with the init) ignore NaN",
           together(attribute(LN, "_maximum", lambda _: np.fmax), attribute(LN, "_minimum", lambda _: np.fmin)),
           ("linalg.max", "linalg.min", "linalg.reduce")),
        _m("structured", "transpose-inverse-permutation", "linalg.transpose moves data by the inverse permutation",
           post_typed(("linalg.transpose",), _transpose_inverse)),
        _m("structured", "batch-matmul-first-b", "linalg.batch_matmul multiplies every batch by B's first matrix",
           post(("linalg.batch_matmul",), _batch_first_b)),
        _m("structured", "matmul-transpose-b-ignored", "linalg.matmul_transpose_b does not transpose B",
           retarget({"linalg.matmul_transpose_b": "linalg.matmul"})),
        _m("structured", "broadcast-as-flat-repeat", "linalg.broadcast repeats the flat input instead of adding the "
           "named dimensions", post(("linalg.broadcast",), _flat_repeat)),
        _m("structured", "slice-strides-ignored", "tensor.extract_slice/insert_slice ignore their strides",
           attribute(TN, "_region", _unit_strides), ("tensor.extract_slice", "tensor.insert_slice", "tensor.parallel_insert_slice")),
        _m("structured", "concat-reversed", "tensor.concat joins its operands in reverse order",
           post_typed(("tensor.concat",), _concat_reversed)),
        _m("structured", "pad-with-zero", "tensor.pad pads with zero instead of the value its region yields",
           post_typed(("tensor.pad",), _pad_with_zero)),
        _m("structured", "reshape-column-major", "tensor.collapse_shape/expand_shape/reshape reorder elements column-major",
           post(("tensor.collapse_shape", "tensor.expand_shape", "tensor.reshape"), _column_major)),
        _m("structured", "insert-in-place", "tensor.insert/insert_slice write into their destination tensor (which "
           "other ops may still read) instead of a copy", attribute(TN, "_insert_into", _insert_in_place),
           ("tensor.insert", "tensor.insert_slice", "tensor.parallel_insert_slice")),
        # loops and control flow
        _m("control", "for-last-iteration-dropped", "scf.for stops one step early", pre(("scf.for",), _last_iteration_dropped)),
        _m("control", "for-zero-trip-runs-once", "scf.for runs its body once when lower bound >= upper bound",
           pre(("scf.for",), _zero_trip_once)),
        _m("control", "for-step-ignored", "scf.for steps by 1 whatever its step", pre(("scf.for",), _unit_step)),
        _m("control", "for-results-are-inits", "scf.for's results are its init values, not the last yield",
           post(("scf.for",), _results_are_inits)),
        _m("control", "if-branches-swapped", "scf.if runs the else branch when the condition holds",
           pre(("scf.if",), _condition_inverted)),
        _m("control", "parallel-init-ignored", "scf.parallel's reductions start from zero instead of init_vals",
           pre_typed(("scf.parallel",), _parallel_inits_zero)),
        # inter-tile collectives
        _m("collective", "gather-descending", "inter_tile_gather/all_to_all concatenate partials in descending producer order",
           attribute(IT, "_flat_concat", _concat_descending), COLLECTIVES),
        _m("collective", "gather-first-axis", "inter_tile_gather/all_to_all concatenate along the flattened first axis "
           "whatever the dimensions named", attribute(IT, "_flat_concat", _concat_first_axis), COLLECTIVES),
        _m("collective", "consumer-rank-reversed", "scatter/reduce_scatter/all_to_all give consumer k the chunk of "
           "consumer n-1-k", _plans(lambda p: _with(p, consumers={g: list(reversed(v)) for g, v in p.consumers.items()})),
           COLLECTIVES),
        _m("collective", "rank-is-tile-id", "scatter/reduce_scatter/all_to_all use the tile id as the consumer's rank "
           "(right only for a group starting at tile 0)",
           _plans(lambda p: _with(p, consumers={g: _RankIsTileId(v) for g, v in p.consumers.items()})), COLLECTIVES),
        _m("collective", "first-group-sources", "every group's consumers receive the partials of the first group",
           _plans(_first_group_sources), COLLECTIVES),
        _m("collective", "tile-sets-transposed-ids", "on a 2-D grid, producer and consumer tile sets are read with the "
           "other linearisation of the tile coordinates (row- for column-major ids, or the reverse)", _transposed_tiles(),
           ("ktdp.inter_tile_produce", *COLLECTIVES)),
        _m("collective", "reduce-identity-zero", "inter_tile_reduce/reduce_scatter start from zero instead of the identity",
           pre_typed(("ktdp.inter_tile_reduce", "ktdp.inter_tile_reduce_scatter"), _identity_zero)),
    ]
