"""Tolerance classes (spec/conformance.md#tolerance-classes), applied element-wise with numpy.

The runner compares an implementation's result `r` with the reference interpreter's golden
`g`. Both are meant to lie within the class's bound of the exact result, so the runner
allows twice the bound between them; `exact` and `correctly-rounded` allow nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

_ULP = re.compile(r"^(\d+) ulp$")
CLASSES = ("exact", "correctly-rounded", "N ulp", "reduction", "matmul")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    mismatches: int
    worst_error: float  # |r - g| at the worst element (in units of the allowed error when > 0)
    worst_index: tuple[int, ...] | None
    got: float | None
    want: float | None
    message: str


def check_class(name: str) -> None:
    """Raise ValueError unless `name` is a tolerance class."""
    if name not in ("exact", "correctly-rounded", "reduction", "matmul") and not _ULP.match(name):
        raise ValueError(f"unknown tolerance class {name!r} (expected one of {', '.join(CLASSES)})")


def unit_roundoff(dt: np.dtype[Any]) -> float:
    return float(ml_dtypes.finfo(dt).eps) / 2


def ulp(x: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    """Distance between the two floating-point numbers of type `dt` around |x| (float64)."""
    fi = ml_dtypes.finfo(dt)
    tiny = float(fi.smallest_subnormal)
    top = float(fi.max)
    a = np.minimum(np.abs(x.astype(np.float64)), top)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = np.exp2(e - fi.nmant)
    return np.where(np.isfinite(step) & (a > 0), np.maximum(step, tiny), tiny)


def compare(got: np.ndarray, want: np.ndarray, tolerance: str, n: int = 1, magnitude: np.ndarray | None = None) -> Verdict:
    """Whether `got` is within `tolerance` of the golden `want` (same shape and dtype required)."""
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
        return _verdict(bad, err, got, want, "integer results are compared exactly")
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore"):
        err = np.where(both_nan, 0.0, np.abs(g - w))
    err = np.where(np.isnan(err), np.inf, err)
    special = ~np.isfinite(w) | (w == 0)
    # infinities, NaN and zeros must be that value, with the sign of the golden
    special_bad = special & ~both_nan & ((g != w) | (np.signbit(g) != np.signbit(w)))
    if tolerance in ("exact", "correctly-rounded"):
        bad = ~both_nan & ((g != w) | (np.signbit(g) != np.signbit(w)))
        return _verdict(bad, err, got, want, tolerance)
    m = _ULP.match(tolerance)
    if m is not None:
        allowed = 2 * int(m.group(1)) * ulp(w, want.dtype)
    else:
        u = unit_roundoff(want.dtype)
        factor = (n - 1) if tolerance == "reduction" else (n + 1)
        mag = np.abs(w) if magnitude is None else np.abs(magnitude.astype(np.float64))
        allowed = 2 * (factor * u * mag + ulp(w, want.dtype))
        special_bad = special & ~both_nan & ~np.isfinite(w) & (g != w)  # a sum may be +-0 either way
    bad = special_bad | (~special & (err > allowed)) | (~np.isfinite(g) & np.isfinite(w))
    ratio = np.where(allowed > 0, err / np.where(allowed > 0, allowed, 1.0), err)
    return _verdict(bad, ratio, got, want, f"{tolerance} (error shown in units of the allowed error)")


def _verdict(bad: np.ndarray, err: np.ndarray, got: np.ndarray, want: np.ndarray, how: str) -> Verdict:
    count = int(np.count_nonzero(bad))
    if count == 0:
        return Verdict(True, 0, float(err.max()) if err.size else 0.0, None, None, None, "")
    masked = np.where(bad, err, -1.0)
    flat = int(np.argmax(masked))
    idx = tuple(int(i) for i in np.unravel_index(flat, bad.shape))
    g, w = got[idx], want[idx]
    message = f"{count} of {bad.size} elements differ; worst at {list(idx)}: got {g}, expected {w} [{how}]"
    return Verdict(False, count, float(masked.flat[flat]), idx, float(g), float(w), message)
