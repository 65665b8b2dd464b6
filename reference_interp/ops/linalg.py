"""`linalg`: named ops, `generic`, `map`, `reduce`, `broadcast`, `transpose`.

Bodies run in vector mode: each block argument is bound to its operand broadcast over
the op's whole iteration space (a numpy view, no copy), so the body's ops run once.

Accumulation rules (documented in README.md):

- matmul-like ops (`matmul`, `batch_matmul`, `matvec`, `dot`, their transposed
  spellings, and `generic` bodies of the form `out + a * b`) compute
  `round(C + sum_k A*B)`: products and sums in float32 (float64 when the result is
  f64), the sum in an unspecified order (BLAS), the accumulator C added once, one
  rounding to the result type. Integer contractions are exact in int64, then wrap to the
  result width.
- reductions whose combiner is one associative op (`addf`, `mulf`, `maximumf`, `addi`,
  ...) reduce with numpy in an unspecified (pairwise) order; float sums and products
  accumulate in at least float32 and round once. Other combiners run sequentially, in
  index order, vectorised over the kept dimensions.
"""

from __future__ import annotations

import importlib
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ktir.dialects.access import named
from ktir.dialects.names import Arith, Linalg
from ktir.dialects.registry import contractions
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Block, Operation

from .. import blas, recycle
from ..compiler import CBlock, FuncCompiler, OpFn, Uninit, impl
from ..dtypes import np_dtype, unsigned_dtype
from ..errors import CompileError, fail
from ..half import F16, F32, NARROW_FLOATS, WideCache, narrow16, widen, widen16
from ..memo import MISSING, Memo
from .arith import _array_int, _maximum, _maxnum, _minimum, _minnum
from .common import element, int_array

# ---------------------------------------------------------------------- helpers


def _dps_groups(op: Operation) -> tuple[list[str], str]:
    """The names of a linalg op's input operand groups and of its outs (destination) group:
    every linalg definition declares its destination operands last (`outs`, `init`, `inits`)."""
    *ins, outs = (o.name for o in named(op).opdef.operands)
    return ins, outs


def _split(c: FuncCompiler, op: Operation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ins, outs = _dps_groups(op)
    return tuple(s for name in ins for s in c.operand_group(op, name)), c.operand_group(op, outs)


def _outs_shape_only(op: Operation) -> set[int]:
    return set(named(op).operand_positions(_dps_groups(op)[1]))


def _acc_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    if dt.kind in "iub":
        return np.dtype(np.int64)
    if dt == np.float64:
        return dt
    return F32


def _store_results(fr: list[Any], res: tuple[int, ...], values: list[Any]) -> None:
    for r, v in zip(res, values, strict=False):
        fr[r] = v


def _single(res: tuple[int, ...]) -> int | None:
    """The slot of an op's one result (stored directly: `_store_results(fr, res, [v])` is a
    call, a list and a zip per execution); None when the op has none or several."""
    return res[0] if len(res) == 1 else None


def _out_types(c: FuncCompiler, op: Operation, outs: tuple[int, ...]) -> list[ty.Type]:
    return [c.type(t) for t in named(op).operand_types(_dps_groups(op)[1])]


# ---------------------------------------------------------------------- named elementwise

_UNARY: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "log": np.log, "abs": np.abs, "negf": np.negative, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "tanh": np.tanh, "reciprocal": lambda x: 1.0 / x,
    "square": lambda x: x * x, "floor": np.floor,
}


def _binary_fn(name: str, dt: np.dtype[Any]) -> Callable[[Any, Any], Any]:
    if dt.kind in "iub":
        et: ty.Type = ty.I1 if dt == np.bool_ else ty.IntegerType(width=8 * dt.itemsize)
        kind = {"add": "addi", "sub": "subi", "mul": "muli", "div": "divsi", "max": "maxsi", "min": "minsi"}.get(name)
        if kind is None:
            raise CompileError(f"linalg.{name} on integers")
        return _array_int(kind, et)
    table: dict[str, Callable[[Any, Any], Any]] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "max": _maximum, "min": _minimum, "powf": np.power,
    }
    if name == "powf" and dt != np.float64:
        # numpy's float32 power is several ulp off: evaluate in float64, round once (as math.powf)
        return lambda x, y: np.power(x.astype(np.float64), y.astype(np.float64)).astype(dt)
    return table[name]


@impl(*(f"linalg.{n}" for n in ("add", "sub", "mul", "div", "max", "min", "powf")), shape_only=_outs_shape_only)
def named_binary(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    r0 = _single(res)
    if len(ins) != 2 or len(outs) != 1:
        raise CompileError(f"{op.name} takes two inputs and one output", op)
    a, b = ins
    (o,) = outs
    dt = np_dtype(element(_out_types(c, op, outs)[0]))
    fn = _binary_fn(op.name.split(".")[1], dt)
    # large float results of the four arithmetic ops go into recycled buffers (recycle.py)
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}.get(op.name.split(".")[1]) \
        if dt.kind == "f" else None
    def run(fr: list[Any]) -> None:
        x, y, out = fr[a], fr[b], fr[o]
        if x.shape != out.shape or y.shape != out.shape:
            raise fail("type", f"operand shapes {x.shape}, {y.shape} and output {out.shape} differ")
        v = None if ufunc is None else recycle.binary(ufunc, x, y, dt)
        if v is None:
            v = np.asarray(fn(x if x.dtype == dt else x.astype(dt), y if y.dtype == dt else y.astype(dt)))
        v = v if v.dtype == dt else v.astype(dt)
        if r0 is not None:
            fr[r0] = v
        else:
            _store_results(fr, res, [v])

    return run


@impl(*(f"linalg.{n}" for n in (*_UNARY, "erf")), shape_only=_outs_shape_only)
def named_unary(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    r0 = _single(res)
    if len(ins) != 1 or len(outs) != 1:
        raise CompileError(f"{op.name} takes one input and one output", op)
    (a,) = ins
    (o,) = outs
    dt = np_dtype(element(_out_types(c, op, outs)[0]))
    name = op.name.split(".")[1]
    if name == "erf":
        from .math import _float_fn

        fn = _float_fn("erf", dt)
    else:
        fn = _UNARY[name]
    if name in ("exp", "log", "tanh", "rsqrt") and dt != np.float64 and dt.kind not in "iub":
        inner = fn
        # numpy's float32 kernels are up to 3 ulp off: evaluate in float64, round once (as math.*)
        fn = lambda x: inner(x.astype(np.float64))  # noqa: E731
    elif dt not in (np.float16, np.float32, np.float64) and dt.kind not in "iub":
        inner = fn
        fn = lambda x: inner(x.astype(np.float32))  # noqa: E731 - bf16/f8 evaluate in f32

    def run(fr: list[Any]) -> None:
        x, out = fr[a], fr[o]
        if x.shape != out.shape:
            raise fail("type", f"operand shape {x.shape} and output {out.shape} differ")
        v = np.asarray(fn(x.astype(dt, copy=False)))
        v = v.astype(dt, copy=False)
        if r0 is not None:
            fr[r0] = v
        else:
            _store_results(fr, res, [v])

    return run


@impl(Linalg.fill, shape_only=_outs_shape_only)
def fill(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    r0 = _single(res)
    (a,) = ins
    (o,) = outs
    dt = np_dtype(element(_out_types(c, op, outs)[0]))

    # values are immutable: reuse the last fill of the same value. [shape, value's bytes, the
    # fill, the scalar object filled with]: the very same scalar object (a constant's, on every
    # execution) needs no conversion to compare (scalars only: an array could be the caller's)
    last: list[Any] = [None, None, None, None]
    ndarray = np.ndarray

    def run(fr: list[Any]) -> None:
        v = fr[a]
        shape = fr[o].shape
        if v is not last[3] or type(v) is ndarray or last[0] != shape:
            value = np.asarray(v).astype(dt)
            key = value.tobytes()
            if last[0] != shape or last[1] != key:
                filled = np.full(shape, value, dtype=dt)
                filled.flags.writeable = False
                last[0], last[1], last[2] = shape, key, filled
            last[3] = v
        if r0 is not None:
            fr[r0] = last[2]
        else:
            _store_results(fr, res, [last[2]])

    return run


@impl(Linalg.copy, shape_only=_outs_shape_only)
def copy(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    (a,) = ins
    (o,) = outs
    dt = np_dtype(element(_out_types(c, op, outs)[0]))

    def run(fr: list[Any]) -> None:
        x, out = fr[a], fr[o]
        if x.shape != out.shape:
            raise fail("type", f"copy of shape {x.shape} into {out.shape}")
        _store_results(fr, res, [np.array(x, dtype=dt)])

    return run


@impl(Linalg.transpose, shape_only=_outs_shape_only)
def transpose(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    (a,) = ins
    (o,) = outs
    perm = tuple(int_array(c.need_attr(op, "permutation")))

    def run(fr: list[Any]) -> None:
        x, out = fr[a], fr[o]
        v = np.transpose(x, perm)
        if v.shape != out.shape:
            raise fail("type", f"transpose of {x.shape} by {list(perm)} gives {v.shape}, the init is {out.shape}")
        _store_results(fr, res, [v.astype(out.dtype, copy=False)])

    return run


@impl(Linalg.broadcast, shape_only=_outs_shape_only)
def broadcast(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    (a,) = ins
    (o,) = outs
    dims = tuple(int_array(c.need_attr(op, "dimensions")))
    shapes: dict[tuple[int, ...], tuple[int, ...] | None] = {}  # input shape -> shape with the new dims (size 1)

    def expand(x: Any) -> Any:
        shape = x.shape if type(x) is np.ndarray else None
        new = shapes.get(shape) if shape is not None else None
        if new is None:
            expanded = np.expand_dims(x, dims)
            if shape is not None and len(shapes) < 64:
                shapes[shape] = expanded.shape
            return expanded
        return x.reshape(new)  # what expand_dims returns, without its argument handling

    def run(fr: list[Any]) -> None:
        x, out = fr[a], fr[o]
        expanded = expand(x) if dims else x
        try:
            v = np.broadcast_to(expanded, out.shape)
        except ValueError:
            raise fail("type", f"cannot broadcast {x.shape} to {out.shape} by adding dimensions {list(dims)}") from None
        _store_results(fr, res, [v.astype(out.dtype, copy=False)])

    return run


# ---------------------------------------------------------------------- contractions


def _widened(x: np.ndarray, wide: np.dtype[Any], cache: WideCache | None) -> np.ndarray:
    """`x.astype(wide, copy=False)`: narrow floats to f32 through the run's cache of loaded boxes."""
    if type(x) is np.ndarray and x.dtype in NARROW_FLOATS and wide == F32:
        return cache.widen(x) if cache is not None else widen(x)
    return x.astype(wide, copy=False)


def contraction_dtype(a_dt: np.dtype[Any], b_dt: np.dtype[Any], out_dt: np.dtype[Any]) -> np.dtype[Any]:
    """The type a contraction's operands are widened to (and its products summed in)."""
    wide = _acc_dtype(out_dt if out_dt.kind not in "iub" else np.dtype(np.int64))
    if out_dt.kind not in "iub" and (a_dt.kind in "iub" or b_dt.kind in "iub"):
        wide = F32 if out_dt != np.float64 else out_dt
    return wide


def _contract(spec: str, a: np.ndarray, b: np.ndarray, acc: np.ndarray, out_dt: np.dtype[Any],
              cache: WideCache | None = None) -> np.ndarray:
    """`round(acc + a @ b)` in the contraction type (module docstring): the general path."""
    wide = contraction_dtype(a.dtype, b.dtype, out_dt)
    a2, b2 = _apart(_c_order(_widened(a, wide, cache)), _c_order(_widened(b, wide, cache)))
    blas.before_contraction()
    prod = np.matmul(a2, b2) if spec in _PLAIN_MATMULS else _einsum2(spec, a2, b2)
    prod = np.asarray(prod)
    if prod.dtype != wide:
        prod = prod.astype(wide)
    prod += widen16(acc) if acc.dtype == F16 and wide == F32 else acc.astype(wide, copy=False)
    return narrow16(prod) if out_dt == F16 and wide == F32 else prod.astype(out_dt, copy=False)


Contractor = Callable[[Any, Any, Any, "WideCache | None"], np.ndarray]


def contractor(spec: str, out_dt: np.dtype[Any]) -> Contractor:
    """`_contract(spec, ., ., ., out_dt, .)` for one op: the same numpy calls in the same order
    (so the same bits and the same errors), without re-deciding per call what depends only on
    the operands' types. Specialised per (a, b, acc) dtypes seen (the last one is checked first:
    one op sees the same types on every call); any other operand (a scalar, an Uninit) takes
    `_contract` itself."""
    ndarray = np.ndarray
    plain = spec in _PLAIN_MATMULS
    fns: dict[tuple[Any, ...], Any] = {}
    last: list[Any] = [None, None, None, None]

    def general(x: Any, y: Any, acc: Any, cache: WideCache | None) -> np.ndarray:
        return _contract(spec, x, y, acc, out_dt, cache)

    def specialise(a_dt: np.dtype[Any], b_dt: np.dtype[Any], acc_dt: np.dtype[Any]) -> Any:
        wide = contraction_dtype(a_dt, b_dt, out_dt)
        if wide != F32 or any(d != F32 and d not in NARROW_FLOATS for d in (a_dt, b_dt)) \
                or acc_dt not in (F16, F32) or out_dt not in (F16, F32):
            return general
        # _widened: a narrow float goes through the run's cache (or widen), f32 stays as it is
        wa, wb = a_dt != F32, b_dt != F32
        acc16, out16 = acc_dt == F16, out_dt == F16
        matmul = np.matmul if plain else _einsum_f32(spec)
        before = blas.before_contraction

        def fast(x: np.ndarray, y: np.ndarray, acc: np.ndarray, cache: WideCache | None) -> np.ndarray:
            a2 = (cache.widen(x) if cache is not None else widen(x)) if wa else x
            b2 = (cache.widen(y) if cache is not None else widen(y)) if wb else y
            a2, b2 = _apart(_c_order(a2), _c_order(b2))
            before()
            prod = matmul(a2, b2)
            if type(prod) is not ndarray or prod.dtype != F32:
                prod = np.asarray(prod)
                if prod.dtype != F32:
                    prod = prod.astype(F32)
            prod += widen16(acc) if acc16 else acc
            return narrow16(prod) if out16 else prod

        return fast

    def contract(x: Any, y: Any, acc: Any, cache: WideCache | None) -> np.ndarray:
        if type(x) is not ndarray or type(y) is not ndarray or type(acc) is not ndarray:
            return _contract(spec, x, y, acc, out_dt, cache)
        xd, yd, cd = x.dtype, y.dtype, acc.dtype
        if xd is last[0] and yd is last[1] and cd is last[2]:
            fn = last[3]
        else:
            key = (xd, yd, cd)
            fn = fns.get(key)
            if fn is None:
                fn = fns[key] = specialise(xd, yd, cd)
            last[:] = [xd, yd, cd, fn]
        return fn(x, y, acc, cache)  # type: ignore[no-any-return]

    return contract


# np.einsum(spec, a, b, optimize=True) plans its one contraction on every call (einsum_path,
# tens of microseconds of Python, more than a block's arithmetic); the plan depends only on
# the spec, shapes and dtypes, so it is made once and replayed with the very calls einsum
# makes (numpy 2's einsum: one (batched) matrix multiplication, bmm_einsum, for two
# operands): the same results, bit for bit. A numpy whose einsum differs gets einsum itself.
_bmm_einsum: Any = getattr(importlib.import_module("numpy._core.einsumfunc"), "bmm_einsum", None)
_EINSUM_PLANS: dict[tuple[Any, ...], tuple[tuple[int, ...], str] | None] = {}


def _einsum2(spec: str, a: np.ndarray, b: np.ndarray) -> Any:
    found = _einsum_plan(spec, a, b)
    if found is None:
        return np.einsum(spec, a, b, optimize=True)
    inds, einsum_str = found
    operands = [a, b]
    return _bmm_einsum(einsum_str, *[operands.pop(x) for x in inds])


def _einsum_plan(spec: str, a: np.ndarray, b: np.ndarray) -> tuple[tuple[int, ...], str] | None:
    """einsum's plan for `spec` on operands of these shapes and types (made once): the order it
    pops the operands in and the equation it hands bmm_einsum; None: einsum itself."""
    key = (spec, a.shape, b.shape, a.dtype, b.dtype)
    if key not in _EINSUM_PLANS:
        plan: tuple[tuple[int, ...], str] | None = None
        if _bmm_einsum is not None:
            path: Any = np.einsum_path
            _, steps = path(spec, a, b, optimize=True, einsum_call=True)
            if len(steps) == 1 and len(steps[0]) == 3 and len(steps[0][0]) == 2:
                plan = (tuple(int(i) for i in steps[0][0]), str(steps[0][1]))
        if len(_EINSUM_PLANS) > 1024:
            _EINSUM_PLANS.clear()
        _EINSUM_PLANS[key] = plan
    return _EINSUM_PLANS[key]


def _einsum_f32(spec: str) -> Callable[[np.ndarray, np.ndarray], Any]:
    """`_einsum2(spec, ., .)` for one contraction's f32 operands: the plan looked up again only
    when the operands' shapes change (the same bmm_einsum call, without building the key)."""
    last: list[Any] = [None, None, None]  # a's shape, b's shape, (equation, swapped) or None

    def run(a: np.ndarray, b: np.ndarray) -> Any:
        if a.shape != last[0] or b.shape != last[1] or a.dtype != F32 or b.dtype != F32:
            if a.dtype != F32 or b.dtype != F32:
                return _einsum2(spec, a, b)
            found = _einsum_plan(spec, a, b)
            call = None
            if found is not None:
                inds, einsum_str = found
                order = [0, 1]
                try:
                    popped = [order.pop(x) for x in inds]
                except IndexError:
                    popped = []
                if popped in ([0, 1], [1, 0]):
                    call = (einsum_str, popped == [1, 0])
            last[:] = [a.shape, b.shape, call]
        call = last[2]
        if call is None:
            return _einsum2(spec, a, b)
        return _bmm_einsum(call[0], b, a) if call[1] else _bmm_einsum(call[0], a, b)

    return run


# the named contractions' einsum letters, from their definitions
_NAMED_SPECS = contractions()
# the two that numpy's matmul computes as they are written (the others go through _einsum2)
_PLAIN_MATMULS = frozenset({_NAMED_SPECS[Linalg.matmul], _NAMED_SPECS[Linalg.batch_matmul]})


def _spec_from_maps(maps: list[af.AffineMap]) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    parts = []
    for m in maps:
        s = ""
        for e in m.results:
            if not isinstance(e, af.Dim):
                raise CompileError("matmul indexing_maps must be projected permutations")
            s += letters[e.position]
        parts.append(s)
    return f"{parts[0]},{parts[1]}->{parts[2]}"


def matmul_plan(c: FuncCompiler, op: Operation) -> tuple[int, int, int, tuple[int, ...], str, np.dtype[Any]]:
    """A contraction's input, output and result slots, its einsum spec and result type."""
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    if len(ins) != 2 or len(outs) != 1:
        raise CompileError(f"{op.name} takes two inputs and one output", op)
    a, b = ins
    (o,) = outs
    maps_attr = c.attr(op, "indexing_maps")
    if maps_attr is not None:
        maps = [c.program.attr(e) for e in maps_attr.elements]
        spec = _spec_from_maps([m.value for m in maps if isinstance(m, at.AffineMapAttr)])
    else:
        spec = _NAMED_SPECS[op.name]
    return a, b, o, res, spec, np_dtype(element(_out_types(c, op, outs)[0]))


@impl(*_NAMED_SPECS)
def matmul(c: FuncCompiler, op: Operation) -> OpFn:
    a, b, o, res, spec, dt = matmul_plan(c, op)
    contract = contractor(spec, dt)
    r0 = _single(res)

    def run(fr: list[Any]) -> None:
        x, y, acc = fr[a], fr[b], fr[o]
        try:
            v = contract(x, y, acc, fr[0].machine.wide)
        except ValueError as e:
            raise fail("type", f"operand shapes {x.shape}, {y.shape}, {acc.shape} do not fit {spec}: {e}") from None
        if v.shape != acc.shape:
            raise fail("type", f"result shape {v.shape} differs from the output {acc.shape}")
        if r0 is not None:
            fr[r0] = v
        else:
            _store_results(fr, res, [v])

    return run


# ---------------------------------------------------------------------- bodies

_REDUCERS: dict[str, str] = {
    Arith.addf: "add", Arith.mulf: "mul", Arith.maximumf: "maximum", Arith.minimumf: "minimum",
    Arith.maxnumf: "fmax", Arith.minnumf: "fmin", Arith.addi: "add", Arith.muli: "mul",
    Arith.maxsi: "maximum", Arith.minsi: "minimum", Arith.maxui: "umax", Arith.minui: "umin",
    Arith.andi: "and", Arith.ori: "or", Arith.xori: "xor",
}


def _c_order(x: np.ndarray, dt: np.dtype[Any] | None = None) -> np.ndarray:
    """`x` (in `dt`), C-contiguous (copied only when it is not already).

    numpy's float sum (and product) follows the memory layout: pairwise along the fastest
    axis, one element after another along the others, in an order its iterator picks from
    the strides. On a C-contiguous operand that order depends on the shape alone, and a
    C-contiguous lockstep lane array (lanes in front) holds each lane as a C-contiguous
    array of the tile's shape: every lane is reduced exactly as the per-tile run reduces
    that tile's array (lockstep.py's contract). Reduced as laid out, a lane array whose
    tiles interleave in memory (a load split over a middle dimension) differed in the last
    bit; tests/interp/test_reduce_order.py checks lanes against tiles over shapes, axes and
    layouts. BLAS likewise: a matrix-vector product of rows `lda` apart, or a transposed
    operand, rounds differently from the same values C-contiguous (numpy picks gemv/gemm/syrk
    and their transpose flags from the layout), so contractions multiply C-contiguous
    operands too (tests/interp/test_contraction_layout.py)."""
    if dt is None:
        return x if type(x) is not np.ndarray or x.flags.c_contiguous else np.ascontiguousarray(x)
    return np.ascontiguousarray(x, dtype=dt)


def _apart(a: Any, b: Any) -> tuple[Any, Any]:
    """A contraction's operands in buffers of their own: numpy multiplies an array by its own
    transpose (one buffer, as when a tile contracts a loaded box with itself, or einsum
    transposes one operand of two that alias) with BLAS's syrk, which rounds otherwise than the
    gemm a lockstep lane, holding its own copies, gets."""
    if type(a) is np.ndarray and type(b) is np.ndarray and (a is b or np.may_share_memory(a, b)):
        return a, b.copy()
    return a, b


def _reduce(kind: str, x: np.ndarray, axes: tuple[int, ...], out_dt: np.dtype[Any]) -> np.ndarray:
    """Reduce `x` over `axes` with an associative combiner; floats sum in >= f32."""
    uf: Any
    if kind in ("add", "mul"):
        if out_dt.kind in "iub":
            uf = np.add if kind == "add" else np.multiply
            if out_dt == np.bool_:
                uf = np.bitwise_xor if kind == "add" else np.bitwise_and
                return uf.reduce(x, axis=axes)
            return uf.reduce(x.astype(out_dt, copy=False), axis=axes, dtype=out_dt)
        wide = _acc_dtype(out_dt)
        uf = np.add if kind == "add" else np.multiply
        x = widen16(x) if x.dtype == F16 and wide == F32 else x
        return uf.reduce(_c_order(x, wide), axis=axes)
    if kind in ("umax", "umin"):
        udt = unsigned_dtype(out_dt)
        uf = np.maximum if kind == "umax" else np.minimum
        return np.asarray(uf.reduce(x.astype(out_dt, copy=False).view(udt), axis=axes)).view(out_dt)
    uf = {"maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    if x.size == 0:
        return np.asarray(uf.reduce(x, axis=axes, initial=_identity(kind, out_dt)))
    red = np.asarray(uf.reduce(x, axis=axes))
    if kind in ("maximum", "fmax", "minimum", "fmin") and x.dtype.kind not in "iub":
        # numpy keeps whichever zero comes first; IEEE: max(-0, +0) = +0, min(-0, +0) = -0 (only
        # a zero result can have the wrong sign: the passes over x are made only when there is one)
        zero = red == 0
        if zero.any():
            low = kind in ("minimum", "fmin")
            wanted = (x == 0) & (np.signbit(x) == low)
            red = np.where(zero & wanted.any(axis=axes), -np.abs(red) if low else np.abs(red), red)
    return red


def _identity(kind: str, dt: np.dtype[Any]) -> Any:
    if dt.kind == "f" or dt.kind not in "iub":
        return {"maximum": -np.inf, "fmax": -np.inf, "minimum": np.inf, "fmin": np.inf}.get(kind, 0)
    info = np.iinfo(dt) if dt != np.bool_ else None
    if info is None:
        return {"and": True}.get(kind, False)
    return {"maximum": info.min, "minimum": info.max, "and": -1}.get(kind, 0)


def _combine(kind: str, init: np.ndarray, red: np.ndarray, out_dt: np.dtype[Any]) -> np.ndarray:
    if kind in ("add", "mul") and out_dt.kind not in "iub":
        wide = _acc_dtype(out_dt)
        i = init.astype(wide, copy=False)
        v = np.asarray(i + red if kind == "add" else i * red)
        return narrow16(v) if out_dt == F16 and v.dtype == F32 else v.astype(out_dt, copy=False)
    if out_dt == np.bool_ and kind in ("add", "mul"):
        return np.asarray(init ^ red if kind == "add" else init & red)
    if kind in ("umax", "umin"):
        udt = unsigned_dtype(out_dt)
        uf = np.maximum if kind == "umax" else np.minimum
        return np.asarray(uf(init.view(udt), np.asarray(red).astype(out_dt).view(udt))).view(out_dt)
    fn = (_INT_COMBINERS if out_dt.kind in "iu" else _COMBINERS)[kind]
    return np.asarray(fn(init, np.asarray(red).astype(out_dt, copy=False))).astype(out_dt, copy=False)


_COMBINERS: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "mul": np.multiply, "maximum": _maximum, "minimum": _minimum,
    "fmax": _maxnum, "fmin": _minnum, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}
# integers have no signed zeros to order
_INT_COMBINERS: dict[str, Callable[[Any, Any], Any]] = {**_COMBINERS, "maximum": np.maximum, "minimum": np.minimum}


def _single_combiner(block: Block) -> tuple[Operation, int, int] | None:
    """For a body `yield op(arg_i, arg_j)`: the op and the operand positions of (in, acc)."""
    ops = block.operations
    if len(ops) != 2 or ops[0].name not in _REDUCERS or ops[1].name not in (Linalg.yield_,):
        return None
    inner, yld = ops
    if named(yld).operands("values") != inner.results[:1] or len(block.arguments) != 2:
        return None
    names = [a.name for a in block.arguments]
    lhs, rhs = _lhs_rhs(inner)
    if sorted((lhs, rhs)) != sorted(names) or lhs == rhs:
        return None
    return inner, names.index(lhs), names.index(rhs)


def _lhs_rhs(op: Operation) -> tuple[str, str]:
    v = named(op)
    return v.operand("lhs"), v.operand("rhs")


def _other_operand(comb: Operation, acc: str) -> str:
    """The operand of a binary combiner that is not the accumulator."""
    lhs, rhs = _lhs_rhs(comb)
    return rhs if lhs == acc else lhs


@impl(Linalg.reduce)
def linalg_reduce(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    r0 = _single(res)
    dims = tuple(int_array(c.need_attr(op, "dimensions")))
    block = op.regions[0].blocks[0]
    out_dts = [np_dtype(element(t)) for t in _out_types(c, op, outs)]
    pattern = _single_combiner(block) if len(ins) == 1 else None
    if pattern is not None:
        kind = _REDUCERS[pattern[0].name]
        (a,) = ins
        (o,) = outs
        dt = out_dts[0]

        def fast(fr: list[Any]) -> None:
            x, init = fr[a], fr[o]
            red = _reduce(kind, x, dims, dt)
            if np.shape(red) != init.shape:
                raise fail("type", f"reducing {x.shape} over {list(dims)} gives {np.shape(red)}, the init is {init.shape}")
            v = _combine(kind, init, np.asarray(red), dt)
            if r0 is not None:
                fr[r0] = v
            else:
                _store_results(fr, res, [v])

        return fast
    body = c.compile_block(block, vector=True)
    n = len(ins)

    def run(fr: list[Any]) -> None:
        xs = [fr[s] for s in ins]
        acc = [np.array(fr[s]) for s in outs]
        shape = xs[0].shape
        kept = [d for d in range(len(shape)) if d not in dims]
        # move reduced dims to the front, iterate over them in index order
        moved = [np.moveaxis(x, list(dims), list(range(len(dims)))) for x in xs]
        for idx in itertools.product(*(range(shape[d]) for d in dims)):
            for j in range(n):
                fr[body.arg_slots[j]] = moved[j][idx]
            for j in range(len(outs)):
                fr[body.arg_slots[n + j]] = acc[j]
            body.run(fr)
            acc = [np.asarray(v).astype(dt, copy=False) for v, dt in zip(body.results(fr), out_dts, strict=True)]
        del kept
        _store_results(fr, res, acc)

    return run


@impl(Linalg.map, shape_only=_outs_shape_only)
def linalg_map(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    body = c.compile_block(op.regions[0].blocks[0], vector=True)
    (o,) = outs
    dt = np_dtype(element(_out_types(c, op, outs)[0]))
    args = body.arg_slots

    def run(fr: list[Any]) -> None:
        out = fr[o]
        for s, i in zip(args, ins, strict=False):
            fr[s] = fr[i]
        body.run(fr)
        (v,) = body.results(fr)
        _store_results(fr, res, [np.broadcast_to(np.asarray(v, dtype=dt), out.shape).astype(dt, copy=False)])

    return run


# ---------------------------------------------------------------------- linalg.generic


class _Loops:
    """Per-call iteration space facts of a linalg.generic."""

    def __init__(self, maps: list[af.AffineMap], n_loops: int) -> None:
        self.maps = maps
        self.n = n_loops
        self.fns = [_map_fn(m) for m in maps]
        self.projected = [all(isinstance(e, af.Dim) or (isinstance(e, af.Const) and e.value == 0) for e in m.results)
                          for m in maps]
        self._plans: dict[tuple[tuple[int, ...], ...], tuple[list[int], list[Any], list[Any]]] = {}

    def extents(self, shapes: list[tuple[int, ...]]) -> list[int]:
        ext: list[int | None] = [None] * self.n
        for m, shape in zip(self.maps, shapes, strict=True):
            for e, size in zip(m.results, shape, strict=False):
                if isinstance(e, af.Dim):
                    if ext[e.position] is None:
                        ext[e.position] = size
                    elif ext[e.position] != size:
                        raise fail("type", f"loop d{e.position} has extent {ext[e.position]} and {size} in different operands")
        if any(x is None for x in ext):
            missing = [f"d{i}" for i, x in enumerate(ext) if x is None]
            raise fail("unsupported", f"cannot infer the extent of loop(s) {', '.join(missing)} from the operand shapes")
        return [int(x) for x in ext]  # type: ignore[arg-type]

    def plan(self, shapes: tuple[tuple[int, ...], ...]) -> tuple[list[int], list[Any], list[Any]]:
        """For these operand shapes: the loop extents, and per operand how to view it over
        the loops (index, transpose, reshape) and how to lay the loops out as it (outputs)."""
        found = self._plans.get(shapes)
        if found is not None:
            return found
        ext = self.extents(list(shapes))
        views: list[Any] = []
        outs: list[Any] = []
        for i, m in enumerate(self.maps):
            if not self.projected[i] or len(shapes[i]) != len(m.results):
                views.append(None)
                outs.append(None)
                continue
            consts = any(isinstance(e, af.Const) for e in m.results)
            index = tuple(0 if isinstance(e, af.Const) else slice(None) for e in m.results) if consts else None
            loops = [e.position for e in m.results if isinstance(e, af.Dim)]
            order = sorted(range(len(loops)), key=lambda k: loops[k])
            target = [1] * self.n
            for k in order:
                target[loops[k]] = ext[loops[k]]
            views.append((index, None if order == list(range(len(loops))) else tuple(order), tuple(target)))
            outs.append(None if loops == sorted(loops) else tuple(loops))
        found = (ext, views, outs)
        if len(self._plans) > 64:
            self._plans.clear()
        self._plans[shapes] = found
        return found

    def view(self, i: int, arr: Any, ext: list[int], spec: Any = None) -> Any:
        """Operand i as an array broadcastable over the iteration space (loop order)."""
        if spec is not None and isinstance(arr, np.ndarray) and arr.ndim:
            index, order, target = spec
            if index is not None:
                arr = arr[index]
            if order is not None:
                arr = arr.transpose(order)
            return arr.reshape(target)
        if not isinstance(arr, np.ndarray) or arr.ndim == 0:
            return arr
        m = self.maps[i]
        if self.projected[i]:
            index = tuple(0 if isinstance(e, af.Const) else slice(None) for e in m.results)
            arr = arr[index] if any(isinstance(e, af.Const) for e in m.results) else arr
            loops = [e.position for e in m.results if isinstance(e, af.Dim)]
            order = sorted(range(len(loops)), key=lambda k: loops[k])
            arr = np.transpose(arr, order)
            shape = [1] * self.n
            for k in order:
                shape[loops[k]] = ext[loops[k]]
            return arr.reshape(shape)
        grids = np.indices(ext, sparse=True)
        idx = self.fns[i](*grids)
        return arr[tuple(np.broadcast_arrays(*idx))]

    def to_out(self, i: int, value: Any, ext: list[int], keep: list[int], out_shape: tuple[int, ...]) -> np.ndarray:
        """A value over the loops in `keep` (in loop order) laid out as output i."""
        m = self.maps[i]
        if not self.projected[i]:
            raise fail("unsupported", "linalg.generic output maps must be projected permutations")
        loops = [e.position for e in m.results if isinstance(e, af.Dim)]
        v = np.broadcast_to(np.asarray(value), [ext[k] for k in keep]) if np.ndim(value) < len(keep) or \
            np.shape(value) != tuple(ext[k] for k in keep) else np.asarray(value)
        pos = {k: j for j, k in enumerate(keep)}
        v = np.transpose(v, [pos[k] for k in loops])
        return v.reshape(out_shape)


def _map_fn(m: af.AffineMap) -> Callable[..., tuple[Any, ...]]:
    from ..affine_eval import compile_map

    return compile_map(m)


def _iterators(c: FuncCompiler, op: Operation) -> list[str]:
    attr = c.need_attr(op, "iterator_types")
    out = []
    for e in attr.elements:
        e = c.program.attr(e)
        out.append(getattr(e, "value", ""))
    return out


def _generic_shape_only(op: Operation) -> set[int]:
    block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    if block is None:
        return set()
    used = {n for o in block.operations for n in o.operands}
    return {i for i, a in enumerate(block.arguments) if a.name not in used}


@impl(Linalg.generic, shape_only=_generic_shape_only)
def generic(c: FuncCompiler, op: Operation) -> OpFn:
    ins, outs = _split(c, op)
    res = c.result_slots(op)
    maps = [c.program.attr(e) for e in c.need_attr(op, "indexing_maps").elements]
    if not all(isinstance(m, at.AffineMapAttr) for m in maps):
        raise CompileError("indexing_maps must be affine maps", op)
    amaps = [m.value for m in maps]  # type: ignore[union-attr]
    iters = _iterators(c, op)
    loops = _Loops(amaps, len(iters))
    reduction = [i for i, k in enumerate(iters) if k == "reduction"]
    parallel = [i for i, k in enumerate(iters) if k != "reduction"]
    block = op.regions[0].blocks[0]
    out_dts = [np_dtype(element(t)) for t in _out_types(c, op, outs)]
    operands = ins + outs
    n_in = len(ins)
    index_slot = c.slot(f"%__linalg_index_{id(op)}")
    saved = c.linalg_index_slot
    c.linalg_index_slot = index_slot
    try:
        if not reduction:
            body = c.compile_block(block, vector=True)
            return _generic_parallel(c, op, body, loops, operands, n_in, res, out_dts, index_slot)
        plan = _reduction_plan(block, n_in)
        if plan is not None:
            body = _compile_with_passthrough(c, block, plan)
            return _generic_reduce(op, body, loops, operands, n_in, res, out_dts, reduction, parallel, plan, index_slot, block)
        body = c.compile_block(block, vector=True)
        return _generic_sequential(body, loops, operands, n_in, res, out_dts, reduction, parallel, index_slot)
    finally:
        c.linalg_index_slot = saved


_GRIDS: Memo[tuple[int, ...], tuple[np.ndarray, ...]] = Memo(256)


def _sparse_grids(ext: Any) -> tuple[np.ndarray, ...]:
    """np.indices(ext, sparse=True) (what linalg.index reads in a vectorised body), made once per
    extents and read-only: values are never written in place, and the arrays outlive the run."""
    key = tuple(ext)
    found = _GRIDS.get(key)
    if found is not MISSING:
        return found
    grids = tuple(np.indices(key, sparse=True))
    for g in grids:
        g.flags.writeable = False
    return _GRIDS.put(key, grids)


def _generic_parallel(c: FuncCompiler, op: Operation, body: CBlock, loops: _Loops, operands: tuple[int, ...],
                      n_in: int, res: tuple[int, ...], out_dts: list[np.dtype[Any]], index_slot: int) -> OpFn:
    r0 = _single(res)
    allp = list(range(loops.n))
    uses_index = any(o.name == Linalg.index for o in op.walk())
    arg_slots = body.arg_slots
    ndarray = np.ndarray
    # per operand shapes: (ext, [(arg slot, operand index, view spec)], [(output index, dtype, fast)])
    plans: dict[tuple[tuple[int, ...], ...], Any] = {}
    # block arguments the body never reads (typically the outputs: their values are only
    # shapes) are not bound when binding is a plain transpose and reshape (which cannot fail):
    # nothing could see them (a strict run's empty tensor was viewed over the loops on every call)
    block = op.regions[0].blocks[0]
    read = {n for o in block.operations for inner in o.walk() for n in inner.operands}
    unread = {i for i, a in enumerate(block.arguments) if a.name not in read}

    def prepare(key: tuple[tuple[int, ...], ...]) -> Any:
        ext, views, layouts = loops.plan(key)
        volume = math.prod(ext) if ext else 1
        # per operand: its view spec, or True when the operand is already laid out over the
        # loops (a plain reshape to its own shape) and binds as it is
        args = [(arg_slots[i], i, True if views[i] is not None and views[i][0] is None and views[i][1] is None
                 and tuple(views[i][2]) == key[i] else views[i]) for i in range(len(operands))
                if not (i in unread and views[i] is not None and views[i][0] is None)]
        outs = [(n_in + j, dt, views[n_in + j] is not None and layouts[n_in + j] is None)
                for j, dt in enumerate(out_dts)]
        plan = (ext, tuple(ext), args, outs, _sparse_grids(ext) if uses_index and ext else (), volume)
        if len(plans) > 64:
            plans.clear()
        plans[key] = plan
        return plan

    def views_of(key: tuple[tuple[int, ...], ...]) -> list[Any]:
        return loops.plan(key)[1]

    dead = _body_slots(c, op.regions[0].blocks[0])

    def run(fr: list[Any]) -> None:
        vals = [fr[s] for s in operands]
        key = tuple([v.shape if type(v) is ndarray else _shape(v) for v in vals])
        plan = plans.get(key) or prepare(key)
        ext, ext_t, args, outs, grids, volume = plan
        # checked on every run: the limit is a run's option (a plan outlives the run that made it)
        if volume * 8 > fr[0].machine.options.max_value_bytes:
            raise fail("memory-limit", f"linalg.generic iteration space of {volume} points")
        if uses_index:
            fr[index_slot] = grids
        for slot, i, spec in args:
            v = vals[i]
            if spec is True and type(v) is ndarray:
                fr[slot] = v
            else:
                if spec is True:
                    spec = views_of(key)[i]
                fr[slot] = loops.view(i, v, ext, spec) if spec is None or spec[0] is not None or spec[1] is not None \
                    or type(v) is not ndarray else v.reshape(spec[2])
        body.run(fr)
        results = body.results(fr)
        values = []
        for (k, dt, fast), v in zip(outs, results, strict=True):
            a = v if type(v) is ndarray else np.asarray(v)
            if a.dtype != dt:
                a = a.astype(dt)
            shape = key[k]
            if fast and a.shape == ext_t:
                values.append(a if shape == ext_t else a.reshape(shape))  # the common case: already in the output's layout
            else:
                values.append(loops.to_out(k, a, ext, allp, shape))
        if r0 is not None and len(values) == 1:
            fr[r0] = values[0]
        else:
            _store_results(fr, res, values)
        for s in dead:  # the body's operand views and temporaries, each as large as the iteration space
            fr[s] = None

    return run


def _body_slots(c: FuncCompiler, block: Any) -> tuple[int, ...]:
    """The frame slots of a linalg body's block arguments and of the values its ops define:
    no op outside the body reads them, so they are dropped once the body's results are stored
    (a vectorised body's temporaries otherwise stay alive, whole-iteration-space arrays, until
    the frame ends; freeing them together at the end of a run makes the C allocator hand the
    memory back to the system and fault it in again on the next run)."""
    names = [a.name for a in block.arguments]
    for inner in block.operations:
        for o in inner.walk():
            names.extend(o.results)
    slots = {c.slots.get(n, 0) for n in names}
    slots.discard(0)
    return tuple(sorted(slots))


def _shape(v: Any) -> tuple[int, ...]:
    """The shape of a value that is not a plain array (a scalar, a strict-mode Uninit)."""
    return tuple(v.shape) if type(v) is Uninit else np.shape(v)


def _reduction_plan(block: Block, n_in: int) -> list[tuple[str, Operation, str]] | None:
    """If every output is `yield combine(value, out_arg)`, the combiner per output."""
    term = block.operations[-1] if block.operations else None
    if term is None or term.name != Linalg.yield_:
        return None
    out_args = [a.name for a in block.arguments[n_in:]]
    uses: dict[str, int] = {}
    for o in block.operations:
        for n in o.operands:
            uses[n] = uses.get(n, 0) + 1
    producers = {r: o for o in block.operations for r in o.results}
    plan = []
    for j, y in enumerate(term.operands):
        comb = producers.get(y)
        if comb is None or comb.name not in _REDUCERS or len(comb.operands) != 2:
            return None
        arg = out_args[j] if j < len(out_args) else None
        if arg is None or arg not in comb.operands or uses.get(arg, 0) != 1 or uses.get(y, 0) != 1:
            return None
        if len(set(_lhs_rhs(comb))) == 1:
            return None
        plan.append((_REDUCERS[comb.name], comb, arg))
    return plan


def _compile_with_passthrough(c: FuncCompiler, block: Block, plan: list[tuple[str, Operation, str]]) -> CBlock:
    """Compile the body with each combiner replaced by `result = value` (its non-accumulator operand)."""
    for _kind, comb, acc in plan:
        value = _other_operand(comb, acc)
        src = c.slot(value)
        (r,) = c.result_slots(comb)

        def passthrough(fr: list[Any], r: int = r, src: int = src) -> None:
            fr[r] = fr[src]

        c.overrides[id(comb)] = passthrough
    try:
        return c.compile_block(block, vector=True)
    finally:
        for _kind, comb, _acc in plan:
            c.overrides.pop(id(comb), None)


def _generic_reduce(op: Operation, body: CBlock, loops: _Loops, operands: tuple[int, ...], n_in: int,
                    res: tuple[int, ...], out_dts: list[np.dtype[Any]], reduction: list[int], parallel: list[int],
                    plan: list[tuple[str, Operation, str]], index_slot: int, block: Block) -> OpFn:
    contraction = _contraction_form(block, n_in, plan, loops)
    contracts = [contractor(contraction[2], dt) for dt in out_dts] if contraction is not None else []
    uses_index = any(o.name == Linalg.index for o in op.walk())
    axes = tuple(reduction)
    ndarray = np.ndarray
    # outputs whose map lists the parallel loops in loop order: the reduced array is already laid out
    direct = [loops.projected[n_in + j] and [e.position for e in loops.maps[n_in + j].results
                                             if isinstance(e, af.Dim)] == parallel for j in range(len(out_dts))]

    def run(fr: list[Any]) -> None:
        vals = [fr[s] for s in operands]
        key = tuple([v.shape if type(v) is ndarray else _shape(v) for v in vals])
        ext, views, _layouts = loops.plan(key)  # cached per operand shapes; checks the extents agree
        outs = []
        if contraction is not None:
            ia, ib, _spec = contraction
            for j in range(len(out_dts)):
                acc = vals[n_in + j]
                outs.append(contracts[j](vals[ia], vals[ib], acc, fr[0].machine.wide))
            _store_results(fr, res, outs)
            return
        volume = int(math.prod(ext)) if ext else 1
        if volume * 8 > (2 << 30):
            raise fail("memory-limit", f"linalg.generic iteration space of {volume} points")
        if uses_index:
            fr[index_slot] = _sparse_grids(ext)
        for s, i, v in zip(body.arg_slots, range(len(vals)), vals, strict=True):
            fr[s] = loops.view(i, v, ext, views[i]) if i < n_in else None
        body.run(fr)
        ext_t = tuple(ext)
        for j, ((kind, _comb, _acc), v) in enumerate(zip(plan, body.results(fr), strict=True)):
            full = v if type(v) is ndarray and v.shape == ext_t else np.broadcast_to(np.asarray(v), ext)
            red = _reduce(kind, full, axes, out_dts[j])
            init = vals[n_in + j]
            if direct[j] and type(red) is ndarray and red.ndim == len(parallel):
                laid = red.reshape(init.shape)
            else:
                laid = loops.to_out(n_in + j, red, ext, parallel, init.shape)
            outs.append(_combine(kind, init, laid, out_dts[j]))
        _store_results(fr, res, outs)

    return run


def _contraction_form(block: Block, n_in: int, plan: list[tuple[str, Operation, str]], loops: _Loops) -> tuple[int, int, str] | None:
    """`out + a * b` (optionally through extf/sitofp casts of a and b): an einsum."""
    if len(plan) != 1 or plan[0][0] != "add" or n_in != 2:
        return None
    ops = block.operations[:-1]
    comb, acc = plan[0][1], plan[0][2]
    producers = {r: o for o in ops for r in o.results}
    names = [a.name for a in block.arguments]
    value = _other_operand(comb, acc)
    mul = producers.get(value)
    if mul is None or mul.name not in (Arith.mulf, Arith.muli):
        return None
    srcs = []
    for operand in mul.operands:
        o = producers.get(operand)
        while o is not None and o.name in (Arith.extf, Arith.extsi, Arith.sitofp):
            operand = named(o).operand("in")
            o = producers.get(operand)
        if operand not in names[:n_in]:
            return None
        srcs.append(names.index(operand))
    if len(ops) != 1 + 1 + sum(1 for o in ops if o.name in (Arith.extf, Arith.extsi, Arith.sitofp)):
        return None
    if sorted(srcs) != [0, 1] or not all(loops.projected):
        return None
    letters = "abcdefghijklmnopqrstuvwxyz"
    try:
        spec = ",".join("".join(letters[e.position] for e in loops.maps[i].results) for i in (0, 1))  # type: ignore[attr-defined]
        spec += "->" + "".join(letters[e.position] for e in loops.maps[2].results)  # type: ignore[attr-defined]
    except AttributeError:
        return None
    return 0, 1, spec  # a * b is commutative: operand order does not matter


def _generic_sequential(body: CBlock, loops: _Loops, operands: tuple[int, ...], n_in: int, res: tuple[int, ...],
                        out_dts: list[np.dtype[Any]], reduction: list[int], parallel: list[int],
                        index_slot: int) -> OpFn:
    """General reductions: iterate the reduction loops in order, vectorised over the others."""

    def run(fr: list[Any]) -> None:
        vals = [fr[s] for s in operands]
        ext = loops.extents([np.shape(v) for v in vals])
        par_ext = [ext[k] if k in parallel else 1 for k in range(loops.n)]
        acc = []
        for j in range(len(out_dts)):
            out = vals[n_in + j]
            acc.append(np.broadcast_to(loops.view(n_in + j, out, ext), par_ext).astype(out_dts[j]))
        full_views = [loops.view(i, v, ext) for i, v in enumerate(vals[:n_in])]
        grids = np.indices(ext, sparse=True) if ext else ()
        for point in itertools.product(*(range(ext[k]) for k in reduction)):
            for s, v in zip(body.arg_slots[:n_in], full_views, strict=True):
                fr[s] = _at(v, reduction, point)
            for s, a in zip(body.arg_slots[n_in:], acc, strict=True):
                fr[s] = a
            fr[index_slot] = tuple(_at(g, reduction, point) for g in grids)
            body.run(fr)
            acc = [np.broadcast_to(np.asarray(v).astype(dt, copy=False), par_ext) for v, dt in zip(body.results(fr), out_dts, strict=True)]
        outs = []
        for j in range(len(out_dts)):
            shape = np.shape(vals[n_in + j])
            outs.append(loops.to_out(n_in + j, np.asarray(acc[j]).reshape([ext[k] for k in parallel]), ext, parallel, shape).copy())
        _store_results(fr, res, outs)

    return run


def _at(v: Any, loops: list[int], point: tuple[int, ...]) -> Any:
    """`v` (broadcastable over the loops) at the given positions of some loops (kept as size 1)."""
    if not isinstance(v, np.ndarray) or v.ndim == 0:
        return v
    index: list[Any] = [slice(None)] * v.ndim
    for k, p in zip(loops, point, strict=True):
        if v.shape[k] != 1:
            index[k] = slice(p, p + 1)
    return v[tuple(index)]


@impl(Linalg.index)
def linalg_index(c: FuncCompiler, op: Operation) -> OpFn:
    (r,) = c.result_slots(op)
    dim = int(c.need_attr(op, "dim").value)
    slot = c.linalg_index_slot
    if slot is None:
        raise CompileError("linalg.index outside a linalg.generic body", op)

    def run(fr: list[Any]) -> None:
        fr[r] = fr[slot][dim]

    return run
