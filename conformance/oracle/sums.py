"""Exact sums and sums of products: the cores of reductions and contractions.

Every finite value of a float format is an integer times a power of two, so a sum of them (or
of their products) is computed exactly with Python integers: scale every element to an
integer by the smallest power of two present, add (numpy object arrays: Python's unbounded
ints, so the order of the additions does not matter), and divide once. No float addition
takes part, so the result is the same on every machine.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from conformance.oracle.formats import Exact


def _scaled(a: np.ndarray) -> tuple[np.ndarray, int]:
    """Integers n and a shift s with a = n * 2^-s (finite values; others are reported by the caller)."""
    x = np.asarray(a).astype(np.float64)
    finite = np.where(np.isfinite(x), x, 0.0)
    m, e = np.frexp(finite)  # finite = m * 2^e, m has at most 53 bits after the point
    nz = finite != 0
    shift = int(53 - e[nz].min()) if nz.any() else 0
    flat = [int(mi * 2.0**53) << (ei - 53 + shift)  # m * 2^53 is an integer; ei - 53 + shift >= 0
            for mi, ei in zip(m.reshape(-1).tolist(), e.reshape(-1).tolist(), strict=True)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(x.shape), shift


def _to_exact(n: int, shift: int) -> Exact:
    return Fraction(n, 1 << shift) if n != 0 else 0.0


def _specials(values: np.ndarray, axis: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per reduced element: NaN (a NaN, or infinities of both signs) and the infinity, if any."""
    x = np.asarray(values).astype(np.float64)
    nan = np.isnan(x).any(axis=axis) | ((x == np.inf).any(axis=axis) & (x == -np.inf).any(axis=axis))
    inf = np.where((x == np.inf).any(axis=axis), np.inf, np.where((x == -np.inf).any(axis=axis), -np.inf, 0.0))
    return nan, inf


def exact_sum(x: np.ndarray, axis: int | tuple[int, ...], init: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The exact sums of `x` over `axis` (plus `init`, an array of the result's shape), and the
    sums of the magnitudes of their terms. Object arrays of exact values / Fractions."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    x = np.asarray(x)
    n, s = _scaled(x)
    total = n.sum(axis=axes) if axes else n
    mags = np.abs(n).sum(axis=axes) if axes else np.abs(n)
    total = np.asarray(total, dtype=object)
    mags = np.asarray(mags, dtype=object)
    shift = s
    if init is not None:
        i_n, i_s = _scaled(init)
        shift = max(s, i_s)
        total = total * (1 << (shift - s)) + i_n * (1 << (shift - i_s))
        mags = mags * (1 << (shift - s)) + np.abs(i_n) * (1 << (shift - i_s))
    total, mags = np.asarray(total, dtype=object), np.asarray(mags, dtype=object)
    nan, inf = _specials(x, axes)
    if init is not None:
        i = np.asarray(init).astype(np.float64)
        nan = nan | np.isnan(i) | (np.isinf(i) & (inf != 0) & (np.sign(i) != np.sign(inf)))
        inf = np.where(inf != 0, inf, np.where(np.isinf(i), i, 0.0))
    return _finish(total, mags, shift, nan, inf)


def _finish(total: np.ndarray, mags: np.ndarray, shift: int, nan: np.ndarray, inf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty(total.shape, dtype=object)
    mag = np.empty(total.shape, dtype=object)
    for idx in np.ndindex(total.shape):
        if bool(np.asarray(nan)[idx]):
            out[idx] = math.nan
        elif float(np.asarray(inf)[idx]) != 0:
            out[idx] = float(np.asarray(inf)[idx])
        else:
            out[idx] = _to_exact(int(total[idx]), shift)
        mag[idx] = Fraction(int(mags[idx]), 1 << shift)
    return out, mag


def exact_contract(spec: str, a: np.ndarray, b: np.ndarray, init: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`init + einsum(spec, a, b)` exactly, and `|init| + einsum(spec, |a|, |b|)` (the sums of
    the magnitudes of the terms). Inputs of any float format, finite."""
    for arr in (a, b) if init is None else (a, b, init):
        if not np.isfinite(np.asarray(arr).astype(np.float64)).all():
            raise ValueError("exact_contract takes finite inputs")
    an, sa = _scaled(a)
    bn, sb = _scaled(b)
    total = np.asarray(np.einsum(spec, an, bn), dtype=object)
    mags = np.asarray(np.einsum(spec, np.abs(an), np.abs(bn)), dtype=object)
    shift = sa + sb
    if init is not None:
        i_n, i_s = _scaled(init)
        top = max(shift, i_s)
        total = total * (1 << (top - shift)) + i_n * (1 << (top - i_s))
        mags = mags * (1 << (top - shift)) + np.abs(i_n) * (1 << (top - i_s))
        shift = top
    zeros = np.zeros(total.shape, dtype=bool)
    return _finish(total, mags, shift, zeros, np.zeros(total.shape))


def as_fraction(v: Any) -> Fraction:
    return v if isinstance(v, Fraction) else Fraction(float(v))
