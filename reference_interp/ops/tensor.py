"""`tensor`: creation, element and slice access, reshapes, concat, pad, generate.

`tensor.empty` has unspecified contents (MLIR semantics). With `strict=True` (the default)
it yields an *uninitialised* value and any op that reads an unspecified element fails with
`runtime.undefined`; with `strict=False` (`--lenient`) it reads as zeros
(`insert`/`insert_slice` into it are tracked elementwise; ops that only use its shape,
like the `outs` of elementwise linalg ops, are fine).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ktir.dialects.access import named
from ktir.dialects.names import Memref, Tensor
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from ..compiler import FuncCompiler, OpFn, Uninit, impl
from ..dtypes import np_dtype, scalar_from_element
from ..errors import fail
from .common import dims_text, element, int_array, mixed, resolve_mixed


def _static_shape_with(t: ty.Type, dyn: list[int]) -> tuple[int, ...]:
    assert isinstance(t, ty.TensorType)
    it = iter(dyn)
    out = []
    for d in t.shape:
        v = int(next(it)) if d is None else d
        if v < 0:
            raise fail("type", f"negative tensor dimension {v}")
        out.append(v)
    return tuple(out)


def _check_size(fr: list[Any], shape: tuple[int, ...], dt: np.dtype[Any]) -> None:
    n = dt.itemsize
    for d in shape:
        n *= d
    if n > fr[0].machine.options.max_value_bytes:
        fr[0].machine.check_bytes(n, f"a tensor of shape {dims_text(shape)}")


@impl(Tensor.empty, Memref.alloc, Memref.alloca)
def empty(c: FuncCompiler, op: Operation) -> OpFn:
    if op.name.startswith("memref."):
        from .memref import alloc

        return alloc(c, op)
    dyn = c.operand_group(op, "dynamic_sizes")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    dt = np_dtype(element(t))
    strict = c.options.strict

    # values are immutable: the zeros of one shape are shared. [shape, zeros, nothing defined,
    # bytes]: the size is checked on every run (the limit is a run's option)
    last: list[Any] = [None, None, None, 0]

    def run(fr: list[Any]) -> None:
        shape = _static_shape_with(t, [fr[s] for s in dyn]) if dyn or last[0] is None else last[0]
        if shape != last[0]:
            _check_size(fr, shape, dt)
            data = np.zeros(shape, dtype=dt)
            data.flags.writeable = False
            nothing = np.zeros(shape, dtype=bool)
            nothing.flags.writeable = False
            last[0], last[1], last[2], last[3] = shape, data, nothing, data.nbytes
        elif last[3] > fr[0].machine.options.max_value_bytes:
            _check_size(fr, shape, dt)
        # strict: the shared zeros marked undefined (inserting into it copies both arrays)
        fr[r] = Uninit(last[1], last[2]) if strict else last[1]

    return run


@impl(Tensor.splat)
def splat(c: FuncCompiler, op: Operation) -> OpFn:
    v, dyn = c.operand_slot(op, "input"), c.operand_group(op, "dynamic_sizes")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    dt = np_dtype(element(t))

    def run(fr: list[Any]) -> None:
        shape = _static_shape_with(t, [fr[s] for s in dyn])
        _check_size(fr, shape, dt)
        fr[r] = np.full(shape, fr[v], dtype=dt)

    return run


def _check_index(idx: list[int], shape: tuple[int, ...]) -> None:
    if len(idx) != len(shape):
        raise fail("type", f"{len(idx)} indices for a rank-{len(shape)} tensor")
    for i, (x, n) in enumerate(zip(idx, shape, strict=True)):
        if not 0 <= x < n:
            raise fail("out-of-bounds", f"index {tuple(idx)} is outside the tensor's shape {dims_text(shape)} (dimension {i})",
                       coordinate=tuple(idx))


@impl(Tensor.extract)
def extract(c: FuncCompiler, op: Operation) -> OpFn:
    src, idx = c.operand_slot(op, "tensor"), c.operand_group(op, "indices")
    (r,) = c.result_slots(op)
    et = element(c.operand_type(op, "tensor"))
    vector = c.vector

    def run(fr: list[Any]) -> None:
        arr = fr[src]
        ii = [int(fr[s]) for s in idx]
        _check_index(ii, arr.shape)
        x = arr[tuple(ii)]
        fr[r] = x if vector else scalar_from_element(x, et)

    return run


def _insert_into(dest: Any, region: Any, value: Any) -> Any:
    """A copy of `dest` with `dest[region] = value`; tracks definedness of Uninit dests."""
    if type(dest) is Uninit:
        data = dest.data.copy()
        data[region] = value
        defined = dest.defined.copy()
        defined[region] = True
        if defined.all():
            return data
        return Uninit(data, defined)
    out = np.array(dest)
    out[region] = value
    return out


@impl(Tensor.insert, shape_only=lambda op: {1})
def insert(c: FuncCompiler, op: Operation) -> OpFn:
    v, dest, idx = c.operand_slot(op, "scalar"), c.operand_slot(op, "dest"), c.operand_group(op, "indices")
    (r,) = c.result_slots(op)

    def run(fr: list[Any]) -> None:
        d = fr[dest]
        ii = [int(fr[s]) for s in idx]
        _check_index(ii, d.shape)
        fr[r] = _insert_into(d, tuple(ii), fr[v])

    return run


class _Slice:
    """Offsets, sizes and strides of a slice op: static attributes plus dynamic operands."""

    def __init__(self, c: FuncCompiler, op: Operation) -> None:
        self.parts = [mixed(c, int_array(c.need_attr(op, f"static_{name}")), list(c.operand_group(op, name)))
                      for name in ("offsets", "sizes", "strides")]

    def values(self, fr: list[Any]) -> tuple[list[int], list[int], list[int]]:
        o, s, t = (resolve_mixed(entries, slots, fr) for entries, slots in self.parts)
        return o, s, t


def _region(offsets: list[int], sizes: list[int], strides: list[int], shape: tuple[int, ...]) -> tuple[slice, ...]:
    if not (len(offsets) == len(sizes) == len(strides) == len(shape)):
        raise fail("type", f"slice with {len(offsets)} offsets for a rank-{len(shape)} tensor")
    out = []
    for d, (o, n, st, dim) in enumerate(zip(offsets, sizes, strides, shape, strict=True)):
        if n < 0 or st <= 0:
            raise fail("type", f"slice size {n} / stride {st} in dimension {d}")
        last = o + (n - 1) * st
        if n and (o < 0 or last >= dim):
            raise fail("out-of-bounds", f"slice [{o} : {o} + {n} * {st}] leaves dimension {d} of size {dim}")
        out.append(slice(o, o + n * st, st) if n else slice(0, 0))
    return tuple(out)


def _reduced_shape(sizes: list[int], t: ty.Type) -> tuple[int, ...]:
    """The result shape of a (possibly rank-reducing) slice of `sizes` typed `t`: unit
    dimensions of `sizes` are dropped until the rest match the type."""
    target = list(getattr(t, "shape", ()))

    def match(i: int, j: int) -> list[int] | None:
        if j == len(target):
            return [] if all(n == 1 for n in sizes[i:]) else None
        if i == len(sizes):
            return None
        if target[j] is None or target[j] == sizes[i]:
            rest = match(i + 1, j + 1)
            if rest is not None:
                return [sizes[i], *rest]
        if sizes[i] == 1:
            return match(i + 1, j)
        return None

    found = match(0, 0)
    if found is None:
        raise fail("type", f"slice sizes {sizes} do not match the result type {dims_text(tuple(target))}")
    return tuple(found)


@impl(Tensor.extract_slice)
def extract_slice(c: FuncCompiler, op: Operation) -> OpFn:
    src = c.operand_slot(op, "source")
    (r,) = c.result_slots(op)
    sl = _Slice(c, op)
    t = c.rtype(op)

    def run(fr: list[Any]) -> None:
        arr = fr[src]
        o, s, st = sl.values(fr)
        part = arr[_region(o, s, st, arr.shape)]
        fr[r] = part.reshape(_reduced_shape(s, t))

    return run


@impl(Tensor.insert_slice, Tensor.parallel_insert_slice, shape_only=lambda op: {named(op).operand_position("dest")})
def insert_slice(c: FuncCompiler, op: Operation) -> OpFn:
    src, dest = c.operand_slot(op, "source"), c.operand_slot(op, "dest")
    res = c.result_slots(op)
    sl = _Slice(c, op)
    # parallel_insert_slice updates the shared output in place (its dest is the forall's block argument)
    target = res[0] if res else dest

    def run(fr: list[Any]) -> None:
        d = fr[dest]
        o, s, st = sl.values(fr)
        region = _region(o, s, st, d.shape)
        value = fr[src]
        if type(value) is Uninit:
            raise fail("undefined", "inserts the unspecified contents of a tensor.empty; `ktir run --lenient`"
                                    " (run(..., strict=False)) reads them as zeros, as ktir-cpu does")
        fr[target] = _insert_into(d, region, np.reshape(value, s))

    return run


def _reassociation(c: FuncCompiler, op: Operation) -> list[list[int]]:
    attr = c.need_attr(op, "reassociation")
    return [[int(getattr(x, "value", 0)) for x in g.elements] for g in attr.elements]


@impl(Tensor.collapse_shape)
def collapse_shape(c: FuncCompiler, op: Operation) -> OpFn:
    src = c.operand_slot(op, "src")
    (r,) = c.result_slots(op)
    groups = _reassociation(c, op)

    def run(fr: list[Any]) -> None:
        arr = fr[src]
        shape = tuple(int(math.prod([arr.shape[i] for i in g])) for g in groups)
        if not groups and arr.size != 1:  # a collapse to rank 0 (`[]`) of dynamic dimensions that are not all 1
            raise fail("type", f"cannot collapse {dims_text(arr.shape)} into a rank-0 tensor (one element)")
        fr[r] = arr.reshape(shape)

    return run


@impl(Tensor.expand_shape)
def expand_shape(c: FuncCompiler, op: Operation) -> OpFn:
    src, dyn = c.operand_slot(op, "src"), c.operand_group(op, "output_shape")
    (r,) = c.result_slots(op)
    static, _ = mixed(c, int_array(c.need_attr(op, "static_output_shape")), list(dyn))

    def run(fr: list[Any]) -> None:
        arr = fr[src]
        shape = tuple(resolve_mixed(static, list(dyn), fr))
        if int(math.prod(shape)) != arr.size:
            raise fail("type", f"cannot expand {dims_text(arr.shape)} into {dims_text(shape)}")
        fr[r] = arr.reshape(shape)

    return run


@impl(Tensor.reshape)
def reshape(c: FuncCompiler, op: Operation) -> OpFn:
    src, shp = c.operand_slot(op, "source"), c.operand_slot(op, "shape")
    (r,) = c.result_slots(op)

    def run(fr: list[Any]) -> None:
        arr = fr[src]
        shape = tuple(int(x) for x in np.asarray(fr[shp]).reshape(-1))
        if int(math.prod(shape)) != arr.size:
            raise fail("type", f"cannot reshape {dims_text(arr.shape)} into {dims_text(shape)}")
        fr[r] = arr.reshape(shape)

    return run


@impl(Tensor.concat)
def concat(c: FuncCompiler, op: Operation) -> OpFn:
    slots = c.operand_group(op, "inputs")
    (r,) = c.result_slots(op)
    dim = int(c.need_attr(op, "dim").value)

    def run(fr: list[Any]) -> None:
        try:
            fr[r] = np.concatenate([fr[s] for s in slots], axis=dim)
        except ValueError as e:
            raise fail("type", f"cannot concatenate: {e}") from None

    return run


@impl(Tensor.pad)
def pad(c: FuncCompiler, op: Operation) -> OpFn:
    src = c.operand_slot(op, "source")
    (r,) = c.result_slots(op)
    low = mixed(c, int_array(c.need_attr(op, "static_low")), list(c.operand_group(op, "low")))
    high = mixed(c, int_array(c.need_attr(op, "static_high")), list(c.operand_group(op, "high")))
    body = c.compile_region(op.regions[0], vector=True)
    dt = np_dtype(element(c.rtype(op)))

    def run(fr: list[Any]) -> None:
        arr = fr[src]
        lo = resolve_mixed(*low, fr)
        hi = resolve_mixed(*high, fr)
        if any(x < 0 for x in lo + hi):
            raise fail("type", "negative padding")
        shape = tuple(n + a + b for n, a, b in zip(arr.shape, lo, hi, strict=True))
        _check_size(fr, shape, dt)
        grids = np.indices(shape, sparse=True) if shape else ()
        for s, g in zip(body.arg_slots, grids, strict=True):
            fr[s] = g
        body.run(fr)
        (value,) = body.results(fr)
        out = np.array(np.broadcast_to(np.asarray(value, dtype=dt), shape))
        out[tuple(slice(a, a + n) for a, n in zip(lo, arr.shape, strict=True))] = arr
        fr[r] = out

    return run


@impl(Tensor.generate)
def generate(c: FuncCompiler, op: Operation) -> OpFn:
    dyn = c.operand_group(op, "dynamic_extents")
    (r,) = c.result_slots(op)
    t = c.rtype(op)
    dt = np_dtype(element(t))
    body = c.compile_region(op.regions[0], vector=True)

    def run(fr: list[Any]) -> None:
        shape = _static_shape_with(t, [fr[s] for s in dyn])
        _check_size(fr, shape, dt)
        grids = np.indices(shape, sparse=True) if shape else ()
        for s, g in zip(body.arg_slots, grids, strict=True):
            fr[s] = g
        body.run(fr)
        (value,) = body.results(fr)
        fr[r] = np.array(np.broadcast_to(np.asarray(value, dtype=dt), shape))

    return run


@impl(Tensor.dim, Memref.dim, shape_only=lambda op: {0})
def dim(c: FuncCompiler, op: Operation) -> OpFn:
    src, i = c.operand_slot(op, "source"), c.operand_slot(op, "index")
    (r,) = c.result_slots(op)

    def run(fr: list[Any]) -> None:
        v = fr[src]
        shape = v.sizes if hasattr(v, "sizes") else np.shape(v)
        k = int(fr[i])
        if not 0 <= k < len(shape):
            raise fail("undefined", f"dimension {k} of a rank-{len(shape)} value")
        fr[r] = int(shape[k])

    return run


@impl(Tensor.cast, shape_only=lambda op: {named(op).operand_position("source")})
def tensor_cast(c: FuncCompiler, op: Operation) -> OpFn:
    src = c.operand_slot(op, "source")
    (r,) = c.result_slots(op)
    t = c.rtype(op)

    def run(fr: list[Any]) -> None:
        v = fr[src]
        shape = np.shape(v) if type(v) is not Uninit else v.shape
        target = getattr(t, "shape", ())
        if len(target) != len(shape) or any(e is not None and e != g for e, g in zip(target, shape, strict=True)):
            raise fail("type", f"tensor.cast of shape {dims_text(tuple(shape))} to {dims_text(tuple(target))}")
        fr[r] = v

    return run
