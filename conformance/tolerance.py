"""Tolerance classes (spec/conformance.md#tolerance-classes), applied element-wise with numpy.

Goldens are exact: the oracle (`conformance.oracle`) computes each output's exact result and
rounds it once to the output type. For `exact` and `correctly-rounded` outputs the result must
be that golden, bit for bit (any NaN matches any NaN). For every other class the golden file
also holds, per element, the interval `[lo, hi]` of accepted values (arrays `NAME.lo`,
`NAME.hi` of the output's type), which the oracle derived from the exact value and the
class: the runner only checks `lo <= r <= hi` (a NaN result matches a NaN golden). No class needs a
magnitude or a tolerance formula here, so a runner in another language does the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

_ULP = re.compile(r"^(\d+) ulp$")
CLASSES = ("exact", "correctly-rounded", "N ulp", "reduction", "matmul", "derived")
BIT_FOR_BIT = ("exact", "correctly-rounded")
GOLDEN_FORMAT = 2  # the golden file's `__format__`: 2 = exact goldens with per-element intervals


@dataclass(frozen=True)
class Verdict:
    ok: bool
    mismatches: int
    worst_error: float  # how far the worst element is outside what is accepted, in ulps of the output type
    worst_index: tuple[int, ...] | None
    got: float | None
    want: float | None
    message: str


def check_class(name: str) -> None:
    """Raise ValueError unless `name` is a tolerance class."""
    if name not in ("exact", "correctly-rounded", "reduction", "matmul", "derived") and not _ULP.match(name):
        raise ValueError(f"unknown tolerance class {name!r} (expected one of {', '.join(CLASSES)})")


def bit_for_bit(name: str) -> bool:
    """Whether outputs of class `name` are compared bit for bit (no interval in the golden)."""
    return name in BIT_FOR_BIT


def unit_roundoff(dt: np.dtype[Any]) -> float:
    return float(ml_dtypes.finfo(dt).eps) / 2


def ulp(x: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    """Distance between the two floating-point numbers of type `dt` around |x| (float64): the
    spacing of the binade of |x|, the smallest subnormal below the normal range."""
    fi = ml_dtypes.finfo(dt)
    tiny = float(fi.smallest_subnormal)
    top = float(fi.max)
    a = np.minimum(np.abs(np.asarray(x).astype(np.float64)), top)
    _, e2 = np.frexp(np.where(a > 0, a, 1.0))
    step = np.ldexp(1.0, (e2 - 1 - fi.nmant).astype(np.int64))
    return np.where(np.isfinite(a) & (a > 0), np.maximum(step, tiny), tiny)


def compare(got: np.ndarray, want: np.ndarray, tolerance: str, lo: np.ndarray | None = None,
            hi: np.ndarray | None = None) -> Verdict:
    """Whether `got` is what the golden `want` (and, outside the bit-for-bit classes, the
    accepted interval [lo, hi]) allows. Same shape and dtype required."""
    check_class(tolerance)
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return Verdict(False, want.size, float("inf"), None, None, None, f"shape {got.shape} != expected {want.shape}")
    if got.dtype != want.dtype:
        return Verdict(False, want.size, float("inf"), None, None, None, f"dtype {got.dtype} != expected {want.dtype}")
    if want.dtype.kind in "biu":
        bad = got != want
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        return _verdict(bad, err, got, want, None, None, "integer results are compared exactly")
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    if bit_for_bit(tolerance) or lo is None or hi is None:
        if not bit_for_bit(tolerance):
            raise ValueError(f"a {tolerance} output needs its accepted interval (NAME.lo, NAME.hi) in the golden file")
        bad = ~both_nan & ((g != w) | (np.signbit(g) != np.signbit(w)))
        with np.errstate(invalid="ignore"):
            err = np.where(both_nan, 0.0, np.abs(g - w) / ulp(w, want.dtype))
        err = np.where(np.isnan(err), np.inf, err)
        return _verdict(bad, err, got, want, None, None, f"{tolerance}: bit for bit")
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    if lo.shape != want.shape or hi.shape != want.shape:
        raise ValueError(f"the accepted interval has shape {lo.shape}, the output {want.shape}")
    with np.errstate(invalid="ignore"):
        inside = (g >= lo) & (g <= hi)
        bad = ~(inside | both_nan)
        outside = np.where(g < lo, lo - g, g - hi)
        err = np.where(bad, outside / ulp(w, want.dtype), 0.0)
    err = np.where(np.isnan(err), np.inf, err)
    return _verdict(bad, err, got, want, lo, hi, f"{tolerance}: error shown in ulps beyond the accepted interval")


def _verdict(bad: np.ndarray, err: np.ndarray, got: np.ndarray, want: np.ndarray, lo: np.ndarray | None,
             hi: np.ndarray | None, how: str) -> Verdict:
    count = int(np.count_nonzero(bad))
    if count == 0:
        return Verdict(True, 0, 0.0, None, None, None, "")
    masked = np.where(bad, err, -1.0)
    flat = int(np.argmax(masked))
    idx = tuple(int(i) for i in np.unravel_index(flat, bad.shape))
    g, w = got[idx], want[idx]
    accepted = f" (accepted [{lo[idx]:.9g}, {hi[idx]:.9g}])" if lo is not None and hi is not None else ""
    message = f"{count} of {bad.size} elements differ; worst at {list(idx)}: got {g}, expected {w}{accepted} [{how}]"
    return Verdict(False, count, float(masked.flat[flat]), idx, float(g), float(w), message)
