"""`memref`: private allocations, sub-views and element access.

`memref.alloc`/`alloca` create a fresh allocation private to the executing tile (space
`alloc`, tracked for uninitialised reads). `subview`/`reinterpret_cast` derive views of
the same memory; `load`/`store` access one element with the same checks as `ktdp.load`
and `ktdp.store`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ktir.dialects.names import Memref
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from ..access import gather, scatter
from ..compiler import FuncCompiler, OpFn, impl
from ..dtypes import np_dtype, scalar_from_element
from ..errors import CompileError, fail
from ..memory import ALIGN, Allocation, MemoryView, align_up
from .common import element, int_array, mixed, resolve_mixed


def alloc(c: FuncCompiler, op: Operation) -> OpFn:
    dyn = c.operand_group(op, "dynamic_sizes")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    if not isinstance(t, ty.MemRefType):
        raise CompileError(f"{op.name} must produce a memref", op)
    dt = np_dtype(element(t))
    name = op.name

    def run(fr: list[Any]) -> None:
        it = iter(dyn)
        shape = tuple(int(fr[next(it)]) if d is None else d for d in t.shape)
        if any(d < 0 for d in shape):
            raise fail("type", f"negative size in {list(shape)}")
        count = int(math.prod(shape)) if shape else 1
        nbytes = count * dt.itemsize
        fr[0].machine.check_bytes(nbytes, f"{name} of shape {list(shape)}")
        raw = np.zeros(max(align_up(nbytes), ALIGN), dtype=np.uint8)
        a = Allocation(f"the {name} of tile {fr[0].tile}", "alloc", 0, raw, nbytes, owner=fr[0].tile, track_init=True)
        a.private = fr[0].machine.private_local
        strides = []
        acc = 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= max(d, 1)
        fr[r] = MemoryView("alloc", a, 0, shape, tuple(reversed(strides)), dt)

    return run


def _view(v: Any) -> MemoryView:
    if not isinstance(v, MemoryView):
        raise fail("type", f"expected a memref view, found {type(v).__name__}")
    return v


@impl(Memref.load)
def memref_load(c: FuncCompiler, op: Operation) -> OpFn:
    m, idx = c.operand_slot(op, "memref"), c.operand_group(op, "indices")
    (r,) = c.result_slots(op)
    et = element(c.operand_type(op, "memref"))
    name = op.name
    vector = c.vector

    def run(fr: list[Any]) -> None:
        view = _view(fr[m])
        coord = [int(fr[s]) for s in idx]
        _in_view(view, coord)
        x = gather(fr[0], view, [np.int64(v) for v in coord], name)
        fr[r] = x if vector else scalar_from_element(np.asarray(x)[()], et)

    return run


@impl(Memref.store)
def memref_store(c: FuncCompiler, op: Operation) -> OpFn:
    v, m, idx = c.operand_slot(op, "value"), c.operand_slot(op, "memref"), c.operand_group(op, "indices")
    name = op.name

    def run(fr: list[Any]) -> None:
        view = _view(fr[m])
        coord = [int(fr[s]) for s in idx]
        _in_view(view, coord)
        scatter(fr[0], view, [np.int64(x) for x in coord], np.asarray(fr[v], dtype=view.dtype), name)

    return run


def _in_view(view: MemoryView, coord: list[int]) -> None:
    if len(coord) != view.rank:
        raise fail("type", f"{len(coord)} indices for a rank-{view.rank} memref")
    ok = view.contains([np.asarray(x) for x in coord])
    if not bool(ok):
        raise fail("out-of-view", f"index {tuple(coord)} is outside the memref (sizes {list(view.sizes)})",
                   coordinate=tuple(coord))


@impl(Memref.subview, Memref.reinterpret_cast)
def subview(c: FuncCompiler, op: Operation) -> OpFn:
    src = c.operand_slot(op, "source")
    offs = mixed(c, int_array(c.need_attr(op, "static_offsets")), list(c.operand_group(op, "offsets")))
    sizes = mixed(c, int_array(c.need_attr(op, "static_sizes")), list(c.operand_group(op, "sizes")))
    strides = mixed(c, int_array(c.need_attr(op, "static_strides")), list(c.operand_group(op, "strides")))
    (r,) = c.result_slots(op)
    reinterpret = op.name == Memref.reinterpret_cast

    target = _result_shape(c, op)

    def run(fr: list[Any]) -> None:
        v = _view(fr[src])
        o, s, st = (resolve_mixed(*x, fr) for x in (offs, sizes, strides))
        if reinterpret:
            # the offset is an element address in the source's memory, like construct_memory_view's
            (off,) = o
            addr = off * v.itemsize
            mem = fr[0].machine.memory.find(addr) if v.space == "global" else v.alloc
            fr[r] = MemoryView(v.space, mem, addr, tuple(s), tuple(st), v.dtype, ct_id=v.ct_id)
            return
        if len(o) != v.rank:
            raise fail("type", f"subview with {len(o)} offsets of a rank-{v.rank} memref")
        for d, (a, n, k, size) in enumerate(zip(o, s, st, v.sizes, strict=True)):
            if n and (a < 0 or a + (n - 1) * k >= size):
                raise fail("out-of-view", f"subview [{a} : {a} + {n} * {k}] leaves dimension {d} of size {size}")
        addr = v.addr + v.itemsize * sum(a * k for a, k in zip(o, v.strides, strict=True))
        new_strides = [a * k for a, k in zip(st, v.strides, strict=True)]
        keep = _kept_dims(s, target)
        fr[r] = MemoryView(v.space, v.alloc, addr, tuple(s[i] for i in keep), tuple(new_strides[i] for i in keep),
                           v.dtype, ct_id=v.ct_id)

    return run


def _kept_dims(sizes: list[int], target: tuple[Any, ...]) -> list[int]:
    """Indices of `sizes` kept by a rank-reducing subview whose result has shape `target`."""

    def match(i: int, j: int) -> list[int] | None:
        if j == len(target):
            return [] if all(n == 1 for n in sizes[i:]) else None
        if i == len(sizes):
            return None
        if target[j] is None or target[j] == sizes[i]:
            rest = match(i + 1, j + 1)
            if rest is not None:
                return [i, *rest]
        return match(i + 1, j) if sizes[i] == 1 else None

    found = match(0, 0)
    if found is None:
        raise fail("type", f"subview sizes {sizes} do not match the result shape {list(target)}")
    return found


def _result_shape(c: FuncCompiler, op: Operation) -> tuple[Any, ...]:
    t = c.rtype(op)
    return tuple(getattr(t, "shape", ()))


@impl(Memref.cast)
def memref_cast(c: FuncCompiler, op: Operation) -> OpFn:
    src = c.operand_slot(op, "source")
    (r,) = c.result_slots(op)

    def run(fr: list[Any]) -> None:
        fr[r] = fr[src]

    return run
