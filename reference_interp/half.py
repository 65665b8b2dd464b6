"""Fast exact f16 -> f32 and f32 -> f16 conversions, and a per-run cache of widened loads.

numpy converts float16 one element at a time in software (about 1.5 ns per element to f32
and 2.5 back here). The interpreter widens f16 operands of contractions and reductions to
f32 and rounds f32 results to f16 many times per run:

- `widen16(x)`: f16 -> f32 through a 65,536-entry table made by numpy's own conversion
  (the same bits as `x.astype(np.float32)` by construction: a gather instead of a
  per-element conversion), from SMALL_WIDEN elements on (below, and for tile-sized blocks
  inside a run, where the table has left the caches, numpy's astype is faster);
- `narrow16(x)`: f32 -> f16 rounded to nearest, ties to even, with integer operations on
  the bits (after Giesen's float_to_half_fast3_rtne): overflow to infinity, and NaNs as
  numpy converts them (the top 10 significand bits kept; one that would keep none becomes
  0x7c01, with its sign). The same bits as `x.astype(np.float16)` for every one of the 2^32
  float32 values (checked once exhaustively; tests/interp/test_half_convert.py checks every
  rounding boundary and random bits);
- `widen8(x)`: the fp8 types to f32 through a 256-entry table per type, made by ml_dtypes' own
  conversion (again the same bits by construction);
- `WideCache`: a box loaded in place from an array the run never wrote (a read-only view of
  the caller's array, access._load_box) is the same data every time it is loaded, so its f32
  copy is made once per run and shared by every contraction that reads the box (several
  tiles, several iterations, several matmuls of one tile).

The gathers take mode="clip": every 16-bit (8-bit) pattern indexes the 2^16 (256) entry
table, so clipping never changes an index, and it spares numpy's per-index bounds check
(a (4, 64, 64) fp8 array: 12.7 against 21.3 us).

Both conversions return arrays laid out as `astype` lays them out (C order for the arrays
they take; others go to `astype`), so a later BLAS call sees the same operands. Small arrays
keep numpy's conversions (the fixed cost of the table gather and of the bit operations is
higher below a few thousand elements).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
# the float types narrower than f32 (contractions widen them to f32)
NARROW_FLOATS = frozenset(np.dtype(t) for t in (
    np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3fnuz))

# below this many elements numpy's own conversions are as fast (measured: 1-D and 2-D arrays).
# f16 -> f32: the table (256 KiB) gathers fast only while it sits in the caches; inside a run,
# between other ops, it mostly does not, and numpy 2.4's astype is then faster on tile-sized
# blocks (64 x 64: 5.4 against 10.7 us with the caches flushed in between, 4.2 against 4.4 us
# hot; swiglu and causal_attention ran 4-7% faster with astype for their blocks of 2,048 and
# 4,096 elements at the time)
SMALL_WIDEN = 16384
SMALL_NARROW = 8192
SMALL_WIDEN8 = 1024  # fp8: the table gathers faster from here on (8.6 against 4.7 us at 4,096 elements)

_TABLE = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
_TABLE.flags.writeable = False

_U13 = np.uint32(13)
_SIGN = np.uint32(0x80000000)
_ABS = np.uint32(0x7FFFFFFF)
_BIAS = np.uint32((((15 - 127) << 23) + 0xFFF) & 0xFFFFFFFF)  # rebias the exponent, add half an f16 ulp - 1
_ONE = np.uint32(1)
_MIN_NORMAL = np.uint32(113 << 23)  # 2^-14, the smallest normal f16, as f32 bits
_OVERFLOW = np.uint32(0x477FF000)  # 65520 = the f16 max + half an ulp: from here on, infinity
_INF = np.uint32(0x7F800000)
_SIG = np.uint32(0x007FFFFF)
_HALF = np.float32(0.5)
_HALF_BITS = np.uint32(0x3F000000)


def widen16(x: np.ndarray) -> np.ndarray:
    """`x.astype(np.float32)` for a float16 array, faster."""
    if x.size < SMALL_WIDEN or not _c_order(x):
        return x.astype(F32)
    return np.take(_TABLE, x.view(np.uint16), mode="clip")


def narrow16(x: np.ndarray) -> np.ndarray:
    """`x.astype(np.float16)` for a float32 array, faster."""
    if x.size < SMALL_NARROW or not x.flags.c_contiguous:
        return x.astype(F16)
    u = x.view(np.uint32)
    # two uint32 work arrays, updated in place (fresh large temporaries cost page faults)
    a = np.bitwise_and(u, _ABS)
    lo = int(a.min())
    hi = int(a.max())
    o = np.right_shift(a, _U13)
    o &= _ONE  # the last kept bit: ties round to even
    o += a
    o += _BIAS  # rebias the exponent, add half an f16 ulp - 1 (wraps for the special cases below)
    o >>= _U13
    if lo < _MIN_NORMAL:
        # subnormal results (and zero): adding 0.5 shifts the value's bits into the low bits of
        # the significand, rounding to nearest even in the float addition
        small = a < _MIN_NORMAL
        with np.errstate(invalid="ignore"):  # NaN inputs (taken from the other path below)
            sub = np.add(a.view(np.float32), _HALF).view(np.uint32)
        sub -= _HALF_BITS
        np.copyto(o, sub, where=small)
    if hi >= _OVERFLOW:
        # overflow to infinity; a NaN keeps its top 10 significand bits, and one that would
        # keep none becomes 0x7c01 (as numpy converts)
        nan = a > _INF
        sig = (a & _SIG) >> _U13
        sig[sig == 0] = 1
        special = np.where(nan, np.uint32(0x7C00) + sig, np.uint32(0x7C00))
        np.copyto(o, special, where=a >= _OVERFLOW)
    np.bitwise_and(u, _SIGN, out=a)
    a >>= np.uint32(16)
    o |= a
    return o.astype(np.uint16).view(np.float16).reshape(x.shape)


def _c_order(x: np.ndarray) -> bool:
    """Whether `x.astype(...)` lays its result out in C order (np.take's order): x is C-contiguous,
    or its strides are positive and decreasing with no dimension of 1 (a block of a row-major array)."""
    if x.flags.c_contiguous:
        return True
    st = x.strides
    sh = x.shape
    return all(st[i] > 0 and sh[i] > 1 and not (i and st[i] > st[i - 1]) for i in range(len(st)))


# 1-byte float type -> the f32 value of each of its 256 bit patterns, by its own conversion
_TABLES8: dict[np.dtype[Any], np.ndarray] = {}


def widen8(x: np.ndarray) -> np.ndarray:
    """`x.astype(np.float32)` for a 1-byte float array (the fp8 types), faster: ml_dtypes converts
    element by element (about 2 ns each here); a 256-entry table made by that very conversion
    gives its bits by construction, from SMALL_WIDEN8 elements on."""
    if x.size < SMALL_WIDEN8 or not _c_order(x):
        return x.astype(F32)
    table = _TABLES8.get(x.dtype)
    if table is None:
        table = np.arange(256, dtype=np.uint8).view(x.dtype).astype(F32)
        table.flags.writeable = False
        _TABLES8[x.dtype] = table
    return np.take(table, x.view(np.uint8), mode="clip")


def widen(x: np.ndarray) -> np.ndarray:
    """`x.astype(np.float32)` (x a narrower float array)."""
    if x.dtype == F16:
        return widen16(x)
    if x.dtype.itemsize == 1:
        return widen8(x)
    return x.astype(F32)


class WideCache:
    """Per run: the f32 copies of narrow-float boxes loaded in place (from arrays the run never
    wrote, whose contents therefore stay put for the whole run), made once per box."""

    __slots__ = ("src", "boxes", "nbytes")

    LIMIT = 64 << 20  # bytes of f32 copies kept per run
    MAX_SRC = 4096  # loaded arrays remembered (the oldest are forgotten)

    def __init__(self) -> None:
        # id(loaded array) -> (the array, its box: allocation, first byte, extents, byte strides)
        self.src: dict[int, tuple[Any, ...]] = {}
        self.boxes: dict[tuple[Any, ...], np.ndarray] = {}
        self.nbytes = 0

    def note(self, arr: np.ndarray, box: tuple[Any, ...]) -> None:
        """`arr` was loaded in place from `box` of an allocation the run has not written."""
        if len(self.src) >= self.MAX_SRC:
            self.src.clear()
        self.src[id(arr)] = (arr, box)

    def widen(self, x: np.ndarray) -> np.ndarray:
        """`x.astype(np.float32)`, shared with earlier loads of the same box."""
        ent = self.src.get(id(x))
        if ent is None or ent[0] is not x:
            return widen(x)
        box = ent[1]
        w = self.boxes.get(box)
        if w is None:
            w = widen(x)
            if self.nbytes + w.nbytes <= self.LIMIT:
                w.flags.writeable = False
                self.boxes[box] = w
                self.nbytes += w.nbytes
        return w
