"""f16 and bf16 arithmetic is correctly rounded: every value of the type as the left operand.

The interpreter computes `addf`/`subf`/`mulf`/`divf` and `math.sqrt` on f16 and bf16 as
numpy does, in f32 with one rounding to the type per op. That is the correctly rounded
result: f32 has 24 >= 2p + 2 significand bits (p = 11 for f16, 8 for bf16), so rounding the
f32 result again to the type gives the same bits as rounding the exact result once. The
oracle here is independent of that argument: the operation in f64 (exact for f16 sums,
differences and products; for the rest rounding f64, 53 >= 2p + 2 bits, then the type is
again a single correct rounding) rounded to the type. All 65,536 bit patterns are the left
operand, against special right operands and random permutations of all values.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import reference_interp as ri
from ktir.builder import Builder
from ktir.ir import types as ty

DTYPES = {"f16": (np.dtype(np.float16), ty.F16), "bf16": (np.dtype(ml_dtypes.bfloat16), ty.BF16)}
ALL = np.arange(1 << 16, dtype=np.uint16)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, np.inf, -np.inf, np.nan, 1e-7, -6.1e-5, 65504.0, 1e38]
REF = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide}


@cache
def _module(op: str, dt: str) -> Any:
    t = ty.TensorType(shape=(1 << 16,), element_type=DTYPES[dt][1])
    b = Builder()
    unary = op == "math.sqrt"
    args = [("a", t)] if unary else [("a", t), ("b", t)]
    with b.func("f", args, results=[t]) as vals:
        r = b.create(op, list(vals), [t])[0]
        b.func_return(r)
    return b.module


def _same(got: np.ndarray, want: np.ndarray, dt: np.dtype[Any]) -> None:
    g, w = got.view(np.uint16), want.view(np.uint16)
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = (g != w) & ~nan
    if bad.any():
        k = int(np.argmax(bad))
        raise AssertionError(f"{int(bad.sum())} results differ, first at index {k}: got {got[k]!r}, want {want[k]!r} ({dt})")


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("op", list(REF))
def test_binary_ops_are_correctly_rounded_for_every_left_operand(op: str, dt: str) -> None:
    np_dt = DTYPES[dt][0]
    a = ALL.view(np_dt)
    rng = np.random.default_rng(31)
    m = _module(op, dt)
    with np.errstate(all="ignore"):  # 1e38 is inf in f16
        rights = [np.full(a.shape, s).astype(np_dt) for s in SPECIAL] + [rng.permutation(a) for _ in range(12)]
        for b in rights:
            got = ri.run(m, args={"a": a, "b": b}).returns[0][0]
            want = REF[op](a.astype(np.float64), b.astype(np.float64)).astype(np_dt)
            _same(got, want, np_dt)


@pytest.mark.parametrize("dt", list(DTYPES))
def test_sqrt_is_correctly_rounded_for_every_value(dt: str) -> None:
    np_dt = DTYPES[dt][0]
    a = ALL.view(np_dt)
    with np.errstate(all="ignore"):
        got = ri.run(_module("math.sqrt", dt), args={"a": a}).returns[0][0]
        want = np.sqrt(a.astype(np.float64)).astype(np_dt)
    _same(got, want, np_dt)
