"""`ktdp`: compute tiles, memory views, access tiles, load and store.

See `reference_interp.memory` for the memory model and `reference_interp.access` for
access tiles. Checks made here:

- `construct_access_tile` / `construct_indirect_access_tile`: every coordinate of the
  tile lies in the base view's sizes and coordinate_set (`runtime.out-of-view`), and for
  a distributed view in exactly one partition;
- `load` / `store`: every byte lies in the array (or scratchpad) holding the view
  (`runtime.out-of-bounds`, `runtime.capacity`), no data race (`runtime.race`), no read
  of scratchpad never written (`runtime.uninitialised`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ktir.dialects.names import Ktdp
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from ..access import AccessTile, box_parts, coord_facts, gather, load, load_box, route, store
from ..affine_eval import CompiledSet, SetPoints, compile_exprs, compile_map, linear
from ..compiler import FuncCompiler, OpFn, impl
from ..dtypes import np_dtype, scalar_from_element
from ..errors import CompileError, KtirRuntimeError, fail
from ..memory import DistributedView, MemoryView
from ..runtime import TileContext
from .common import check_shape, dims_text, element, int_array, mixed, resolve_mixed


@impl(Ktdp.get_compute_tile_id)
def tile_id(c: FuncCompiler, op: Operation) -> OpFn:
    res = c.result_slots(op)
    grid = func_grid(c)
    # result k is the coordinate along grid dimension k (fewer results: the leading ones);
    # `dim = k` asks for dimension k alone (spec: execution.md#the-grid)
    dim = c.attr(op, "dim")
    axes = [int(dim.value)] if isinstance(dim, at.IntegerAttr) else list(range(len(res)))
    if len(res) != len(axes) or any(not 0 <= a < len(grid) for a in axes):
        raise CompileError(
            f"ktdp.get_compute_tile_id has {len(res)} result(s) but the grid {list(grid)} has rank {len(grid)}", op
        )

    def run(fr: list[Any]) -> None:
        coords = fr[0].coords
        for r, a in zip(res, axes, strict=True):
            fr[r] = coords[a]

    return run


def func_grid(c: FuncCompiler) -> tuple[int, ...]:
    attr = c.attr(c.func, "grid")
    if attr is None:
        return (1,)
    return tuple(int_array(attr))


# ---------------------------------------------------------------------- views


def _space(c: FuncCompiler, op: Operation) -> tuple[str, int | None]:
    attr = c.attr(op, "memory_space")
    if attr is None:
        t = c.rtype(op)
        attr = c.program.attr(t.memory_space) if isinstance(t, ty.MemRefType) else None
    if attr is None:
        return "global", None
    if not isinstance(attr, at.MemorySpaceAttr):
        raise CompileError(f"unsupported memory space attribute {type(attr).__name__}", op)
    return attr.kind, attr.ct_id


def _set(c: FuncCompiler, op: Operation, name: str, what: str) -> CompiledSet | None:
    attr = c.attr(op, name)
    if attr is None:
        return None
    if not isinstance(attr, at.IntegerSetAttr):
        raise CompileError(f"'{name}' must be an affine_set", op)
    return CompiledSet(attr.value, what, c.options.max_set_points)


@impl(Ktdp.construct_memory_view)
def memory_view(c: FuncCompiler, op: Operation) -> OpFn:
    off = c.operand_slot(op, "offset")
    dyn_sizes = list(c.operand_group(op, "sizes"))
    sizes = mixed(c, int_array(c.need_attr(op, "static_sizes")), dyn_sizes)
    strides = mixed(c, int_array(c.need_attr(op, "static_strides")), list(c.operand_group(op, "strides")))
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    if not isinstance(t, ty.MemRefType):
        raise CompileError("construct_memory_view must produce a memref", op)
    dt = np_dtype(element(t))
    space, ct_id = _space(c, op)
    cset = _set(c, op, "coordinate_set", "the view's coordinate_set")
    rank = len(sizes[0])
    if cset is not None and (cset.nd != rank or cset.ns > len(dyn_sizes)):
        raise CompileError(
            f"coordinate_set has {cset.nd} dims and {cset.ns} symbols; the view has rank {rank} and "
            f"{len(dyn_sizes)} dynamic sizes", op)
    # the set's symbols bind to the first dynamic sizes, left to right (construct_memory_view.C5)
    set_syms = dyn_sizes[: cset.ns] if cset is not None else []
    type_shape = t.shape
    geometries: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # (sizes, strides, set symbols) -> view geometry
    # (offset, sizes, strides) that passed the view checks, which depend on nothing else: they
    # pass again (in this run or a later one)
    checked: set[tuple[Any, ...]] = set()

    token = object()  # this op's key in the run's view cache

    # sizes and strides all static (the common case): resolved once, not on every execution
    static_geometry: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    if not sizes[1] and not strides[1]:  # then no entry is None
        static_geometry = (tuple(v for v in sizes[0] if v is not None), tuple(v for v in strides[0] if v is not None))
    per_tile_space = space != "global" and ct_id is None

    def run(fr: list[Any]) -> None:
        ctx: TileContext = fr[0]
        machine = ctx.machine
        offset = int(fr[off])
        if static_geometry is not None:
            made = machine.views.get((token, offset, ctx.tile if per_tile_space else None))
            if made is not None:
                fr[r] = made
                return
            sz, st = static_geometry
        else:
            sz = tuple(resolve_mixed(*sizes, fr))
            st = tuple(resolve_mixed(*strides, fr))
        csyms = tuple(int(fr[s]) for s in set_syms)
        # a view depends only on these (and on the tile for a scratchpad of its own): made and
        # checked once per run, shared by the tiles and the iterations that make it again
        ckey = ((token, offset, ctx.tile if per_tile_space else None) if static_geometry is not None
                else (token, offset, sz, st, csyms, ctx.tile if per_tile_space else None))
        made = machine.views.get(ckey)
        if made is not None:
            fr[r] = made
            return
        if (offset, sz, st) not in checked:
            _check_view(offset, sz, st)
            if len(checked) > 64:
                checked.clear()
            checked.add((offset, sz, st))
        addr = offset * dt.itemsize
        if space == "global":
            alloc = machine.memory.find(addr)
        else:
            owner = ctx.tile if ct_id is None else ct_id
            if not 0 <= owner < machine.n_tiles:
                raise fail("out-of-bounds", f"ct_id = {owner} names no tile of the grid {list(machine.grid)}")
            alloc = machine.local(owner)
        key = (sz, st, csyms)
        geometry = geometries.get(key)
        view = MemoryView(space, alloc, addr, sz, st, dt, cset, csyms, ct_id, geometry=geometry)
        if geometry is None:
            if len(geometries) > 64:
                geometries.clear()
            geometries[key] = view.geometry()
        if alloc is not None and alloc.growable and alloc.space == "global":
            _reach(view, alloc)
        if len(machine.views) > 4096:
            machine.views.clear()
        machine.views[ckey] = view
        fr[r] = view

    def _check_view(offset: int, sz: tuple[int, ...], st: tuple[int, ...]) -> None:
        if any(s < 0 for s in sz) or any(s <= 0 for s in st):
            raise fail("type", f"view sizes {list(sz)} must be non-negative and strides {list(st)} positive")
        if any(e is not None and e != s for e, s in zip(type_shape, sz, strict=True)):
            raise fail("type", f"view sizes {list(sz)} do not match the result type {dims_text(tuple(type_shape))}")
        # addresses are 64-bit: a view reaching past them, or a stride beyond them in bytes
        # (a stride near 2**63), is no view
        last = offset + sum((n - 1) * step for n, step in zip(sz, st, strict=True) if n > 0)
        if (max(last, offset) + 1) * dt.itemsize > 1 << 63 or any(step * dt.itemsize >= 1 << 63 for step in st):
            raise fail("out-of-bounds", f"view of sizes {list(sz)} and strides {list(st)} at offset {offset} reaches past "
                       "the 64-bit address range")

    return run


def _reach(view: MemoryView, alloc: Any) -> None:
    """A growable global allocation is the probe array of `ktir run --random-inputs`: size it
    to every element the view can address (an indirect access reaches any row of its table,
    whatever the probe's index values), not just to what the probe run touched."""
    if any(h < lo for lo, h in zip(view.box_lo, view.box_hi, strict=True)):
        return
    reach = sum(max(0, h - o) * st for h, o, st in zip(view.box_hi, view.origin, view.strides, strict=True))
    alloc.ensure(view.addr - alloc.base + (reach + 1) * view.itemsize)


@impl(Ktdp.construct_distributed_memory_view)
def distributed_view(c: FuncCompiler, op: Operation) -> OpFn:
    slots = c.operand_group(op, "memrefs")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    if not isinstance(t, ty.MemRefType):
        raise CompileError("construct_distributed_memory_view must produce a memref", op)
    dt = np_dtype(element(t))
    shape = tuple(d if d is not None else -1 for d in t.shape)

    def run(fr: list[Any]) -> None:
        parts = [fr[s] for s in slots]
        for p in parts:
            if not isinstance(p, MemoryView):
                raise fail("type", "construct_distributed_memory_view takes memory views")
            if p.dtype != dt or p.rank != len(shape):
                raise fail("type", f"partition of element type {p.dtype} and rank {p.rank} in a view of {dt}, rank {len(shape)}")
        fr[r] = DistributedView(parts, shape, dt)

    return run


# ---------------------------------------------------------------------- access tiles


def _order(c: FuncCompiler, op: Operation, name: str, rank: int) -> tuple[int, ...] | None:
    attr = c.attr(op, name)
    if attr is None:
        return None
    if not isinstance(attr, at.AffineMapAttr):
        raise CompileError(f"'{name}' must be an affine_map", op)
    m = attr.value
    if not m.is_permutation() or m.num_dims != rank:
        raise CompileError(f"'{name}' must be a permutation of the {rank} set dimensions", op)
    perm = tuple(e.position for e in m.results)  # type: ignore[attr-defined]
    return None if perm == tuple(range(rank)) else perm


def _check_tile_type(tile: AccessTile, t: ty.Type) -> None:
    _check_tile_type_shape(tile.shape, t)


def _check_tile_type_shape(shape: tuple[int, ...], t: ty.Type) -> None:
    expect = getattr(t, "shape", ())
    if len(expect) != len(shape) or any(e is not None and e != s for e, s in zip(expect, shape, strict=True)):
        raise fail("type", f"the access tile has shape {dims_text(shape)} but its type says {dims_text(tuple(expect))}")


def _check_in_view(view: Any, tile: AccessTile) -> None:
    """Every coordinate of the tile is in the view (raises out-of-view with the first bad one)."""
    if isinstance(view, MemoryView):
        if tile.coords is None and tile.mask is None:
            assert tile.lo is not None
            if view.contains_box(tile.lo, tile.ext):
                return
        elif tile.coords is not None and view.is_box and _coords_in_box(tile.coords, view.box_lo, view.box_hi):
            return
        pts = tile.points()
        ok = view.contains(pts)
        if ok.all():
            return
        full = np.broadcast_arrays(*pts)
        k = int(np.argmin(ok.reshape(-1)))
        coord = tuple(int(x.reshape(-1)[k]) for x in full)
        sizes_hi = tuple(o + s - 1 for o, s in zip(view.origin, view.sizes, strict=True))
        inside_sizes = all(o <= x <= h for o, x, h in zip(view.origin, coord, sizes_hi, strict=True))
        what = "the view's coordinate_set" if inside_sizes else f"the view's sizes {list(view.sizes)}"
        raise fail("out-of-view", f"coordinate {coord} is outside {what}", coordinate=coord)
    if isinstance(view, DistributedView):
        if tile.coords is None and tile.mask is None and box_parts(view, tile.lo, tile.ext) is not None:  # type: ignore[arg-type]
            return
        route(view, tile.points())
        return
    if isinstance(view, np.ndarray):
        grid = np.broadcast_arrays(*tile.points())
        for d, (x, n) in enumerate(zip(grid, view.shape, strict=True)):
            bad = (x < 0) | (x >= n)
            if bad.any():
                k = int(np.argmax(bad.reshape(-1)))
                coord = tuple(int(p.reshape(-1)[k]) for p in grid)
                raise fail("out-of-view", f"coordinate {coord} is outside the tensor's shape {view.shape} (dimension {d})",
                           coordinate=coord)
        return
    raise fail("type", f"an access tile needs a memref or tensor base, not {type(view).__name__}")


def _coords_in_box(coords: list[np.ndarray], lo: tuple[int, ...], hi: tuple[int, ...]) -> bool:
    """Every point of explicit coordinates (arrays broadcast together, at least one point) lies
    in the box [lo, hi]: each array's own minimum and maximum decide, since every element of
    each array is a coordinate of some point. False sends the caller to the exact check."""
    if len(coords) != len(lo):
        return False
    for c, a, b in zip(coords, lo, hi, strict=True):
        facts = coord_facts(c)
        if facts is not None:
            if not a <= facts[0][0] <= facts[0][1] <= b:
                return False
        elif not (c.size and a <= c.min() and c.max() <= b):
            return False
    return True


def _rank(view: Any) -> int:
    if isinstance(view, MemoryView | DistributedView):
        return view.rank
    return int(np.ndim(view))


@impl(Ktdp.construct_access_tile)
def access_tile(c: FuncCompiler, op: Operation) -> OpFn:
    base = c.operand_slot(op, "base")
    idx = c.operand_group(op, "indices")
    syms = c.operand_group(op, "symbol_operands")
    n_idx, n_sym = len(idx), len(syms)
    (r,) = c.result_slots(op)
    bmap_attr = c.need_attr(op, "base_map")
    if not isinstance(bmap_attr, at.AffineMapAttr):
        raise CompileError("base_map must be an affine_map", op)
    bmap = bmap_attr.value
    if bmap.num_dims + bmap.num_symbols != n_idx:
        raise CompileError(f"base_map takes {bmap.num_dims + bmap.num_symbols} values but {n_idx} are given", op)
    fn = compile_map(bmap)
    cset = _set(c, op, "access_tile_set", "the access_tile_set")
    if cset is None:
        raise CompileError("missing access_tile_set", op)
    if cset.nd != len(bmap.results) or cset.ns != n_sym:
        raise CompileError(
            f"access_tile_set has {cset.nd} dims and {cset.ns} symbols; expected {len(bmap.results)} and {n_sym}", op)
    perm = _order(c, op, "access_tile_order", cset.nd)
    t = c.rtype(op)
    rank = len(bmap.results)
    fixed: list[Any] = []  # the set's points and tile shape when it has no symbols (computed once)

    def points(fr: list[Any]) -> tuple[SetPoints, tuple[int, ...], bool]:
        if fixed:
            return fixed[0]  # type: ignore[no-any-return]
        pts = cset.points(tuple(int(fr[s]) for s in syms))
        shape = pts.ext if perm is None else tuple(pts.ext[p] for p in perm)
        _check_tile_type_shape(shape, t)
        found = (pts, shape, any(pts.lo))
        if not syms:
            fixed.append(found)
        return found

    new_tile = AccessTile.__new__
    add = operator.add

    def slow(fr: list[Any], view: Any, tile: AccessTile, pts: SetPoints) -> None:
        if _rank(view) != rank:
            raise fail("type", f"{rank} subscripts for a rank-{_rank(view)} base")
        if pts.count:
            _check_in_view(view, tile)
        fr[r] = tile

    if rank == 1 and len(idx) == 1:
        (i0,) = idx

        def run1(fr: list[Any]) -> None:
            """The rank-1 case of run() below, unrolled (it is the commonest access tile)."""
            view = fr[base]
            (b,) = fn(fr[i0])
            pts, shape, shifted = fixed[0] if fixed else points(fr)
            a = b + pts.lo[0] if shifted else b
            tile = new_tile(AccessTile)
            tile.view = view
            tile.lo = (a,)
            ext = tile.ext = pts.ext
            tile.mask = pts.mask
            tile.perm = perm
            tile.shape = shape
            tile.coords = None
            if (type(view) is MemoryView and view.is_box and pts.mask is None and len(view.sizes) == 1
                    and view.box_lo[0] <= a and a + ext[0] - 1 <= view.box_hi[0]):
                fr[r] = tile
                return
            slow(fr, view, tile, pts)

        return run1

    if rank == 2 and len(idx) == 2:
        i0, i1 = idx

        def run2(fr: list[Any]) -> None:
            """The rank-2 case of run() below, unrolled (blocks of matrices)."""
            view = fr[base]
            b0, b1 = fn(fr[i0], fr[i1])
            pts, shape, shifted = fixed[0] if fixed else points(fr)
            if shifted:
                b0 += pts.lo[0]
                b1 += pts.lo[1]
            tile = new_tile(AccessTile)
            tile.view = view
            tile.lo = (b0, b1)
            ext = tile.ext = pts.ext
            tile.mask = pts.mask
            tile.perm = perm
            tile.shape = shape
            tile.coords = None
            if type(view) is MemoryView and view.is_box and pts.mask is None and len(view.sizes) == 2:
                lo, hi = view.box_lo, view.box_hi
                if lo[0] <= b0 and b0 + ext[0] - 1 <= hi[0] and lo[1] <= b1 and b1 + ext[1] - 1 <= hi[1]:
                    fr[r] = tile
                    return
            elif type(view) is DistributedView and pts.mask is None and len(view.shape) == 2 and box_parts(view, tile.lo, ext):
                fr[r] = tile
                return
            slow(fr, view, tile, pts)

        return run2

    def run(fr: list[Any]) -> None:
        view = fr[base]
        if len(idx) == 1:
            b = fn(fr[idx[0]])
        elif len(idx) == 2:
            b = fn(fr[idx[0]], fr[idx[1]])
        else:
            b = fn(*[fr[s] for s in idx])
        pts, shape, shifted = fixed[0] if fixed else points(fr)
        lo = tuple(map(add, b, pts.lo)) if shifted else b
        tile = new_tile(AccessTile)
        tile.view = view
        tile.lo = lo
        ext = tile.ext = pts.ext
        tile.mask = pts.mask
        tile.perm = perm
        tile.shape = shape
        tile.coords = None
        if type(view) is MemoryView and view.is_box and pts.mask is None and len(view.sizes) == rank:
            for a, e, low, high in zip(lo, ext, view.box_lo, view.box_hi):  # noqa: B905 - lengths checked
                if a < low or a + e - 1 > high:
                    break
            else:
                fr[r] = tile
                return
        elif type(view) is DistributedView and pts.mask is None and len(view.shape) == rank and box_parts(view, lo, ext):
            fr[r] = tile
            return
        slow(fr, view, tile, pts)

    return run


@impl(Ktdp.construct_indirect_access_tile)
def indirect_access_tile(c: FuncCompiler, op: Operation) -> OpFn:
    base = c.operand_slot(op, "base")
    views = c.operand_group(op, "indirect_memrefs")
    caps = c.operand_group(op, "captured_variables")
    syms = c.operand_group(op, "symbol_operands")
    n_views, n_cap, n_sym = len(views), len(caps), len(syms)
    (r,) = c.result_slots(op)
    kinds = [bool(v) for v in c.need_attr(op, "per_dim_subscript_kinds").values]
    maps = [c.program.attr(m) for m in c.need_attr(op, "per_dim_subscript_maps").elements]
    n_vars = len(op.regions[0].blocks[0].arguments) if op.regions and op.regions[0].blocks else 0
    fns = []
    for m in maps:
        if not isinstance(m, at.AffineMapAttr):
            raise CompileError("per_dim_subscript_maps must be affine maps", op)
        if m.value.num_symbols:
            raise CompileError("symbol() subscripts in indirect access tiles are not supported", op)
        if m.value.num_dims != n_vars + n_cap:
            raise CompileError("a subscript map's inputs must be the variables then the captured values", op)
        fns.append(compile_exprs(m.value.results, m.value.num_dims, 0))
    if sum(kinds) != n_views:
        raise CompileError(f"{sum(kinds)} indirect subscripts but {n_views} index views", op)
    vset = _set(c, op, "variables_space_set", "the variables_space_set")
    if vset is None or vset.nd != n_vars or vset.ns != n_sym:
        raise CompileError("variables_space_set must have one dim per intermediate variable and one symbol per symbol operand", op)
    perm = _order(c, op, "variables_space_order", n_vars)
    t = c.rtype(op)
    opname = op.name
    boxes = [_index_box_plan(m.value, n_vars) for is_ind, m in zip(kinds, maps, strict=True)  # type: ignore[union-attr]
             if is_ind]

    fixed: list[Any] = []  # without symbols, the variable space and its points are computed once

    def space(fr: list[Any]) -> tuple[SetPoints, list[np.ndarray]]:
        if fixed:
            return fixed[0]  # type: ignore[no-any-return]
        pts = vset.points(tuple(int(fr[s]) for s in syms))
        variables = vset.coordinates(pts)
        for v in variables:
            v.flags.writeable = False  # shared by every execution of the op
        if not syms:
            fixed.append((pts, variables))
        return pts, variables

    def run(fr: list[Any]) -> None:
        ctx: TileContext = fr[0]
        view = fr[base]
        pts, variables = space(fr)
        captured = [int(fr[s]) for s in caps]
        coords: list[np.ndarray] = []
        vi = 0
        for is_ind, fn in zip(kinds, fns, strict=True):
            sub = fn(*variables, *captured)
            if not is_ind:
                coords.append(np.asarray(sub[0], dtype=np.int64))
                continue
            index_view = fr[views[vi]]
            box = boxes[vi]
            vi += 1
            if box is not None and pts.mask is None and pts.count and type(index_view) is MemoryView:
                values = _index_box(ctx, index_view, box, pts, captured, opname)
                if values is not None:
                    coords.append(values.astype(np.int64))
                    continue
            sub_arrays = [np.asarray(s, dtype=np.int64) for s in sub]
            if isinstance(index_view, MemoryView) and pts.count and not (
                    index_view.is_box and _coords_in_box(sub_arrays, index_view.box_lo, index_view.box_hi)):
                _check_in_view(index_view, AccessTile(index_view, (), None, coords=sub_arrays))
            values = gather(ctx, index_view, sub_arrays, opname) if pts.count else np.zeros((), np.int64)
            coords.append(np.asarray(values).astype(np.int64))
        if _rank(view) != len(coords):
            raise fail("type", f"{len(coords)} subscripts for a rank-{_rank(view)} base")
        if pts.mask is None:
            coords = [np.broadcast_to(x, pts.ext) if np.ndim(x) < len(pts.ext) else x for x in coords]
        tile = AccessTile(view, pts.ext, perm, mask=pts.mask, coords=coords)
        _check_tile_type(tile, t)
        if pts.count:
            _check_in_view(view, tile)
        fr[r] = tile

    return run


IndexBox = tuple[tuple[tuple[int | None, tuple[tuple[int, int], ...], int], ...], tuple[int, ...]]


def _index_box_plan(m: Any, n_vars: int) -> IndexBox | None:
    """When an index view's subscripts read a box of it: per subscript, the variable it steps
    with unit stride (or None), the captured values' coefficients and the constant; and the
    shape the values take over the variable space. Each variable is used at most once and in
    increasing order, so the box's traversal order is the order of the points."""
    plan = []
    used: list[int] = []
    for e in m.results:
        lin = linear(e)
        if lin is None:
            return None
        dims, _syms, const = lin
        steps = {d: k for d, k in dims.items() if d < n_vars}
        if len(steps) > 1 or any(k != 1 for k in steps.values()):
            return None
        v = next(iter(steps), None)
        if v is not None:
            used.append(v)
        plan.append((v, tuple((d - n_vars, k) for d, k in dims.items() if d >= n_vars), const))
    if used != sorted(set(used)):
        return None
    return tuple(plan), tuple(used)


def _index_box(ctx: TileContext, view: MemoryView, box: IndexBox, pts: SetPoints, captured: list[int],
               opname: str) -> np.ndarray | None:
    """The index values read as one box (a strided view, no index arrays), shaped to broadcast
    over the variable space as the gathered values would; None sends the caller to the
    general gather, which also reports any error with its own coordinate."""
    plan, used = box
    if len(plan) != view.rank:
        return None
    lo, ext = [], []
    for v, caps, const in plan:
        a = const + sum(k * captured[i] for i, k in caps)
        if v is None:
            lo.append(a)
            ext.append(1)
        else:
            lo.append(a + pts.lo[v])
            ext.append(pts.ext[v])
    if not view.contains_box(tuple(lo), tuple(ext)):
        return None
    try:
        data = load_box(ctx, view, tuple(lo), tuple(ext), opname)
    except KtirRuntimeError:
        return None
    return data.reshape(tuple(pts.ext[v] if v in used else 1 for v in range(len(pts.ext))) if used else ())


# ---------------------------------------------------------------------- load / store


@impl(Ktdp.load)
def ktdp_load(c: FuncCompiler, op: Operation) -> OpFn:
    a = c.operand_slot(op, "access_tile")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    name = op.name
    dt = np_dtype(element(t))

    static = tuple(getattr(t, "shape", ()))
    if any(d is None for d in static):
        static = None  # type: ignore[assignment]

    def run(fr: list[Any]) -> None:
        data = load(fr[0], fr[a], name)
        if data.dtype != dt:
            raise fail("type", f"loads element type {data.dtype} from the view but the result type says {dt}")
        if data.shape != static:
            check_shape(data, t, "the loaded tensor")
        fr[r] = data

    return run


@impl(Ktdp.store)
def ktdp_store(c: FuncCompiler, op: Operation) -> OpFn:
    d, a = c.operand_slot(op, "data"), c.operand_slot(op, "access_tile")
    name = op.name

    def run(fr: list[Any]) -> None:
        store(fr[0], fr[a], np.asarray(fr[d]), name)

    return run


@impl(Ktdp.runtime_arg_extract)
def runtime_arg_extract(c: FuncCompiler, op: Operation) -> OpFn:
    a = c.operand_slot(op, "input")
    (r,) = c.result_slots(op)
    t = c.operand_type(op, "input")
    kind = getattr(c.need_attr(op, "kind"), "value", "value")
    if not isinstance(t, ty.RuntimeArgType):
        raise CompileError("runtime_arg_extract needs a !ktdp.runtime_arg operand", op)
    if kind == "value":
        def run(fr: list[Any]) -> None:
            fr[r] = fr[a]
        return run
    field = getattr(t, kind, None)
    if field is None:
        raise CompileError(f"the runtime_arg type has no {kind}", op)
    value = scalar_from_element(field, t.value_type)

    def run_const(fr: list[Any]) -> None:
        fr[r] = value

    return run_const
