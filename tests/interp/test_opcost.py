"""The cheaper op implementations give the bits of the formulas they replaced.

Each test holds the earlier formula (copied here as the oracle, numpy calls and all) and
compares the current implementation with it byte for byte (NaN payloads and the signs of
zeros included) on random shapes, dtypes and raw bit patterns: NaNs, infinities, signed
zeros and subnormals are all common among random bits, and zeros of both signs are mixed in
on purpose (the min/max fixes are about them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.ir import affine as af
from ktir.ir import types as ty
from reference_interp.dtypes import unsigned_dtype
from reference_interp.half import SMALL_WIDEN, SMALL_WIDEN8, widen8, widen16
from reference_interp.ops import arith, linalg

from .helpers import FAST

FLOATS = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16]


# ---------------------------------------------------------------------- the earlier formulas


def _old_minimum(a: Any, b: Any) -> Any:
    r = np.minimum(a, b)
    both_zero = (a == b) & (a == 0)
    if np.any(both_zero):
        r = np.where(both_zero, np.where(np.signbit(a), a, b), r)
    return r


def _old_maximum(a: Any, b: Any) -> Any:
    r = np.maximum(a, b)
    both_zero = (a == b) & (a == 0)
    if np.any(both_zero):
        r = np.where(both_zero, np.where(np.signbit(a), b, a), r)
    return r


def _old_zeros_signed(r: Any, a: Any, b: Any, negative: Any) -> Any:
    both_zero = (a == 0) & (b == 0)
    if np.any(both_zero):
        zero = np.where(negative, -np.zeros_like(r), np.zeros_like(r))
        r = np.where(both_zero, zero, r)
        if np.ndim(r) == 0 and not isinstance(a, np.ndarray):
            return r[()]
    return r


def _old_minnum(a: Any, b: Any) -> Any:
    return _old_zeros_signed(np.fmin(a, b), a, b, np.signbit(a) | np.signbit(b))


def _old_maxnum(a: Any, b: Any) -> Any:
    return _old_zeros_signed(np.fmax(a, b), a, b, np.signbit(a) & np.signbit(b))


def _old_combine(kind: str, init: np.ndarray, red: np.ndarray, out_dt: np.dtype[Any]) -> np.ndarray:
    if kind in ("add", "mul") and out_dt.kind not in "iub":
        wide = linalg._acc_dtype(out_dt)
        i = init.astype(wide, copy=False)
        v = np.asarray(i + red if kind == "add" else i * red)
        return linalg.narrow16(v) if out_dt == linalg.F16 and v.dtype == linalg.F32 else v.astype(out_dt, copy=False)
    if out_dt == np.bool_ and kind in ("add", "mul"):
        return np.asarray(init ^ red if kind == "add" else init & red)
    table: dict[str, Callable[[Any, Any], Any]] = {
        "add": np.add, "mul": np.multiply, "maximum": _old_maximum, "minimum": _old_minimum,
        "fmax": _old_maxnum, "fmin": _old_minnum, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    }
    if kind in ("umax", "umin"):
        udt = unsigned_dtype(out_dt)
        uf = np.maximum if kind == "umax" else np.minimum
        return np.asarray(uf(init.view(udt), np.asarray(red).astype(out_dt).view(udt))).view(out_dt)
    if out_dt.kind in "iu" and kind in ("maximum", "minimum"):
        table[kind] = np.maximum if kind == "maximum" else np.minimum
    return np.asarray(table[kind](init, np.asarray(red).astype(out_dt, copy=False))).astype(out_dt, copy=False)


# ---------------------------------------------------------------------- values


def _bits(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any], zeros: bool) -> np.ndarray:
    """Random bit patterns of `dt`; with `zeros`, about a third of them +0 or -0."""
    n = int(np.prod(shape, dtype=np.int64))
    a = np.frombuffer(rng.bytes(n * dt.itemsize), dtype=dt).reshape(shape).copy()
    if zeros and dt.kind not in "iub":
        pick = rng.integers(0, 6, shape)
        a[pick == 0] = dt.type(0)
        a[pick == 1] = -dt.type(0)
    return a


@st.composite
def operand_pairs(draw: st.DrawFn, dtypes: list[Any]) -> tuple[Any, Any]:
    """Two operands of one dtype: arrays of broadcastable shapes (possibly 0-d, possibly
    strided views) or numpy scalars."""
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    zeros = draw(st.booleans())
    base = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=3)))
    out = []
    for _ in range(2):
        form = draw(st.sampled_from(["full", "broadcast", "scalar", "strided"]))
        if form == "scalar" or not base:
            out.append(_bits(rng, (), dt, zeros)[()])
        elif form == "broadcast":
            shape = tuple(1 if draw(st.booleans()) else s for s in base)
            out.append(_bits(rng, shape, dt, zeros))
        elif form == "strided":
            out.append(_bits(rng, (*base[:-1], 2 * base[-1]), dt, zeros)[..., ::2])
        else:
            out.append(_bits(rng, base, dt, zeros))
    return out[0], out[1]


def _same(got: Any, want: Any) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert type(got) is type(want) or (isinstance(got, np.ndarray) and isinstance(want, np.ndarray))
    assert (g.dtype, g.shape) == (w.dtype, w.shape)
    assert g.tobytes() == w.tobytes()


# ---------------------------------------------------------------------- tests


@FAST
@given(operand_pairs(FLOATS), st.sampled_from(["minimum", "maximum", "minnum", "maxnum"]))
def test_min_and_max_give_the_earlier_formulas_bits(pair: tuple[Any, Any], which: str) -> None:
    new = {"minimum": arith._minimum, "maximum": arith._maximum, "minnum": arith._minnum, "maxnum": arith._maxnum}[which]
    old = {"minimum": _old_minimum, "maximum": _old_maximum, "minnum": _old_minnum, "maxnum": _old_maxnum}[which]
    a, b = pair
    with np.errstate(all="ignore"):
        _same(new(a, b), old(a, b))
        _same(new(b, a), old(b, a))


@pytest.mark.parametrize("which", ["minimum", "maximum", "minnum", "maxnum"])
def test_min_and_max_order_signed_zeros_as_ieee(which: str) -> None:
    """The fix the early exit guards still happens: every pair of signed zeros (min: negative
    if either is; max: negative only if both are), and a zero beside a non-zero value (the
    result is whichever operand wins, its zero's sign kept)."""
    fn = {"minimum": arith._minimum, "maximum": arith._maximum, "minnum": arith._minnum, "maxnum": arith._maxnum}[which]
    low = which in ("minimum", "minnum")
    values = [0.0, -0.0, 1.0, -1.0]
    pairs = [(x, y) for x in values for y in values]
    a = np.array([x for x, _ in pairs], np.float32)
    b = np.array([y for _, y in pairs], np.float32)
    got = fn(a, b)
    for k, (x, y) in enumerate(pairs):
        if x == 0 and y == 0:
            sx, sy = np.signbit(np.float32(x)), np.signbit(np.float32(y))
            want = -0.0 if ((sx or sy) if low else (sx and sy)) else 0.0
        else:
            want = (min if low else max)(x, y)
        assert np.float32(want).tobytes() == got[k].tobytes(), (x, y, got[k])


COMBINE_KINDS = ["add", "mul", "maximum", "minimum", "fmax", "fmin", "and", "or", "xor", "umax", "umin"]


@st.composite
def combine_cases(draw: st.DrawFn) -> tuple[str, np.ndarray, np.ndarray, np.dtype[Any]]:
    kind = draw(st.sampled_from(COMBINE_KINDS))
    if kind in ("fmax", "fmin"):
        types: list[Any] = FLOATS
    elif kind in ("and", "or", "xor", "umax", "umin"):
        types = [np.int8, np.int16, np.int32, np.int64, np.bool_] if kind in ("and", "or", "xor") else [np.int8, np.int32, np.int64]
    else:
        types = [*FLOATS, np.int8, np.int32, np.int64, np.bool_]
    dt = np.dtype(draw(st.sampled_from(types)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=2)))
    zeros = draw(st.booleans())
    init = _bits(rng, shape, dt, zeros)
    if dt == np.bool_:
        init = rng.integers(0, 2, shape).astype(bool)
    # the reduced value comes in the accumulation type (f32 for narrow floats' sums) or the out type
    red_dt = linalg._acc_dtype(dt) if kind in ("add", "mul") and dt.kind not in "iub" else dt
    red = _bits(rng, shape, np.dtype(red_dt), zeros) if red_dt != np.bool_ else rng.integers(0, 2, shape).astype(bool)
    return kind, init, red, dt


@FAST
@given(combine_cases())
def test_reduction_combine_gives_the_earlier_formulas_bits(case: tuple[str, np.ndarray, np.ndarray, np.dtype[Any]]) -> None:
    kind, init, red, dt = case
    with np.errstate(all="ignore"):
        _same(linalg._combine(kind, init, red, dt), _old_combine(kind, init, red, dt))


@FAST
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                                                   ml_dtypes.float8_e4m3fnuz]),
       st.sampled_from(["contiguous", "block", "reversed", "transposed"]))
def test_table_widening_gives_astypes_bits_and_layout(seed: int, t: Any, layout: str) -> None:
    """widen16/widen8 from their thresholds on (the table gathers with mode="clip") against
    astype, in every layout the interpreter hands them."""
    dt = np.dtype(t)
    rng = np.random.default_rng(seed)
    small = SMALL_WIDEN if dt == np.float16 else SMALL_WIDEN8
    rows = int(rng.integers(1, 5)) * 16
    cols = -(-small // rows) * int(rng.integers(1, 3))
    whole = _bits(rng, (2 * rows, 2 * cols), dt, True)
    x = {"contiguous": whole, "block": whole[:rows, cols // 2:cols // 2 + cols], "reversed": whole[::-1],
         "transposed": whole.T}[layout]
    fn = widen16 if dt == np.float16 else widen8
    got = fn(x)
    want = x.astype(np.float32)
    assert got.flags.c_contiguous == want.flags.c_contiguous and got.strides == want.strides
    assert got.tobytes() == want.tobytes()


# ---------------------------------------------------------------------- rank-2 access tiles


def _shifted_box(lo: tuple[int, ...], ext: tuple[int, ...]) -> af.IntegerSet:
    """lo_i <= d_i <= lo_i + ext_i - 1."""
    cons: list[af.Constraint] = []
    for i, (low, e) in enumerate(zip(lo, ext, strict=True)):
        d = af.dim(i)
        cons += [af.Constraint(expr=d - low, is_equality=False), af.Constraint(expr=-d + (low + e - 1), is_equality=False)]
    return af.IntegerSet(num_dims=len(lo), num_symbols=0, constraints=tuple(cons))


def _tile_copy(rows: int, cols: int, ext: tuple[int, int], shift: tuple[int, int], lead: bool) -> ktir.Module:
    """Y = the tile of X at the (dynamic) subscripts (o0, o1) whose set is the box `ext` moved by
    `shift`; with `lead`, X is viewed as 1 x rows x cols and the tile as 1 x e0 x e1 (a rank-3
    access tile: the general path, beside the rank-2 one)."""
    f32 = ty.F32
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX), ("o0", ty.INDEX), ("o1", ty.INDEX)], grid=[1]) as (xp, yp, o0, o1):
        if lead:
            vx = b.memory_view(xp, [1, rows, cols], [rows * cols, cols, 1], f32, coordinate_set=box(1, rows, cols))
            t = b.access_tile(vx, [0, o0, o1], _shifted_box((0, *shift), (1, *ext)), [1, *ext])
        else:
            vx = b.memory_view(xp, [rows, cols], [cols, 1], f32, coordinate_set=box(rows, cols))
            t = b.access_tile(vx, [o0, o1], _shifted_box(shift, ext), list(ext))
        data = b.load(t, f32)
        full = [1, *ext] if lead else list(ext)
        vy = b.memory_view(yp, full, [ext[0] * ext[1], ext[1], 1][-len(full):], f32, coordinate_set=box(*full))
        b.store(data, b.access_tile(vy, [0] * len(full), box(*full), full))
        b.func_return()
    return b.module


@FAST
@given(st.integers(1, 9), st.integers(1, 9), st.tuples(st.integers(1, 4), st.integers(1, 4)),
       st.tuples(st.integers(0, 2), st.integers(0, 2)), st.tuples(st.integers(-2, 9), st.integers(-2, 9)))
def test_rank2_access_tiles_read_what_the_general_path_reads(rows: int, cols: int, ext: tuple[int, int],
                                                            shift: tuple[int, int], off: tuple[int, int]) -> None:
    """ktdp.construct_access_tile's unrolled rank-2 form: the data numpy slicing gives, and the
    same outcome (value or error kind) as the same tile written with a leading unit dimension
    (rank 3, the general form), in bounds or not, with and without a shifted set."""
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    outcomes = []
    for lead in (False, True):
        y = np.zeros((1, *ext) if lead else ext, np.float32)
        try:
            got = ri.run(_tile_copy(rows, cols, ext, shift, lead), args={"x": x, "y": y, "o0": off[0], "o1": off[1]},
                         lockstep=False).outputs["y"]
            outcomes.append(("value", got.reshape(ext).tobytes()))
        except ri.KtirRuntimeError as e:
            outcomes.append(("error", e.kind))
    assert outcomes[0] == outcomes[1]
    r0, c0 = off[0] + shift[0], off[1] + shift[1]
    inside = r0 >= 0 and r0 + ext[0] <= rows and c0 >= 0 and c0 + ext[1] <= cols
    assert outcomes[0][0] == ("value" if inside else "error")
    if inside:
        assert outcomes[0][1] == x[r0:r0 + ext[0], c0:c0 + ext[1]].tobytes()


# ---------------------------------------------------------------------- linalg.fill


def _fill_kernel() -> ktir.Module:
    """Each of 2 tiles fills a 2 x 3 tensor with the scalar argument v and stores it at rows 2t, 2t + 1."""
    f32 = ty.F32
    b = Builder()
    with b.func("k", [("v", f32), ("y", ty.INDEX)], grid=[2]) as (v, yp):
        (t,) = b.tile_id()
        filled = b.fill(v, b.empty(ty.TensorType(shape=(2, 3), element_type=f32)))
        vy = b.memory_view(yp, [4, 3], [3, 1], f32, coordinate_set=box(4, 3))
        b.store(filled, b.access_tile(vy, [ssa(t) * 2, 0], box(2, 3), [2, 3]))
        b.func_return()
    return b.module


def test_fill_gives_the_bits_of_each_value_in_turn() -> None:
    """The fill reuses its last array for the same scalar object (both tiles of a run) and
    refills for a new one, also when the values compare equal but differ in bits (0.0 and
    -0.0) or are NaNs (which compare unequal to themselves): each run's output is np.full's."""
    m = _fill_kernel()
    nan = np.array([0x7FC01234], np.uint32).view(np.float32)[0]
    for v in [0.0, -0.0, -0.0, 1.5, nan, nan, np.float32(-np.inf), 0.0, 1.5]:
        y = np.zeros((4, 3), np.float32)
        got = ri.run(m, args={"v": v, "y": y}, lockstep=False).outputs["y"]
        want = np.full((4, 3), np.float32(v), np.float32)
        assert got.tobytes() == want.tobytes(), v
