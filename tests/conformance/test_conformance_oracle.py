"""The oracle that computes the goldens: independent of the reference interpreter, exact where
it claims to be, rounding once, and the same on every machine."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.oracle import approx, scalar
from conformance.oracle.elementwise import float_result, round_each
from conformance.oracle.formats import FORMATS, exact_array, round_exact, round_float64
from conformance.oracle.sums import exact_contract, exact_sum

ROOT = Path(__file__).resolve().parents[2]
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
         "f8E5M2": ml_dtypes.float8_e5m2}

INDEPENDENCE = """
import importlib, pkgutil, sys
import conformance.oracle
for m in pkgutil.iter_modules(conformance.oracle.__path__):
    importlib.import_module("conformance.oracle." + m.name)
from conformance.gen import all_drafts
from conformance.model import SUITE_ROOT
from conformance.regen import golden, to_case
executing = [d for d in all_drafts() if d.expect == "run"]
computed = 0
for d in executing[::20]:
    if "tiled_matmul" in d.id or "softmax" in d.id:
        continue
    golden(to_case(d), SUITE_ROOT, d.model, d.npy)
    computed += 1
print(computed, sorted(k for k in sys.modules if k.split(".")[0] == "reference_interp"))
"""


def test_goldens_are_computed_without_the_reference_interpreter() -> None:
    # a fresh interpreter imports every module of the oracle and every generator (the same
    # `all_drafts` that `python -m conformance.regen` writes) and computes goldens of every
    # kind: the interpreter is never imported
    out = subprocess.run([sys.executable, "-c", INDEPENDENCE], cwd=ROOT, capture_output=True, text=True, check=True)
    count, loaded = out.stdout.strip().split(" ", 1)
    assert int(count) >= 30 and loaded == "[]", out.stdout


def test_a_model_cannot_import_the_interpreter() -> None:
    from conformance.gen.core import elementwise
    from conformance.model import SUITE_ROOT
    from conformance.regen import golden, to_case

    d = elementwise("arith.addf", "f32", (16,), ({"recipe": "normal"}, {"recipe": "normal"}))

    def cheat(a: object) -> object:
        import reference_interp  # noqa: F401

        raise AssertionError("imported")

    with pytest.raises(ImportError):
        golden(to_case(d), SUITE_ROOT, cheat, {})


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(sorted(NUMPY)))
def test_rounding_once_matches_ieee_conversion(x: float, name: str) -> None:
    # numpy's and ml_dtypes' float64 -> narrower conversions round once, to nearest even
    f = FORMATS[name]
    want = np.array([x]).astype(NUMPY[name]).astype(np.float64)[0]
    got = float(round_exact(Fraction(x) if x != 0 else x, f))
    assert (got == want) or (math.isnan(got) and math.isnan(want)), (x, got, want)
    vec = round_float64(np.array([x]), f)[0]
    assert (vec == want) or (math.isnan(vec) and math.isnan(want))


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(["f16", "bf16", "f32"]),
       st.sampled_from(["up", "down"]))
def test_directed_rounding_brackets_the_value(x: float, name: str, mode: str) -> None:
    f = FORMATS[name]
    r = round_exact(Fraction(x) if x != 0 else x, f, mode)  # type: ignore[arg-type]
    assert (r >= x) if mode == "up" else (r <= x)
    assert float(round_float64(np.array([x]), f, mode)[0]) == float(r)  # type: ignore[arg-type]


def test_fma_rounds_once() -> None:
    # x * y + z = 1 + 2^-24 + 2^-60: just above the midpoint of 1 and the next f32, so it
    # rounds up; float64 loses the 2^-60, lands on the midpoint and then rounds to even (1)
    x, y, z = np.float32(1 + 2.0**-12), np.float32(2.0**-24 * (1 - 2.0**-12 + 2.0**-24)), np.float32(1.0)
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    assert exact == 1 + Fraction(1, 2**24) + Fraction(1, 2**60)
    single = float(round_each(float_result("math.fma", np.array([x]), np.array([y]), np.array([z])), "f32")[0])
    twice = float(np.float32(np.float64(x) * np.float64(y) + np.float64(z)))
    assert single == 1 + 2.0**-23 and twice == 1.0


def test_min_max_follow_ieee_754_2019() -> None:
    nz, pz, nan = -0.0, 0.0, math.nan
    assert math.copysign(1, scalar.maxnumf(nz, pz)) == 1 and math.copysign(1, scalar.maxnumf(pz, nz)) == 1
    assert math.copysign(1, scalar.minnumf(pz, nz)) == -1 and math.copysign(1, scalar.minnumf(nz, pz)) == -1
    assert scalar.maxnumf(nan, Fraction(2)) == 2 and scalar.minnumf(Fraction(2), nan) == 2
    assert math.isnan(scalar.maximumf(nan, Fraction(2))) and math.isnan(scalar.minimumf(Fraction(2), nan))
    assert math.copysign(1, scalar.maximumf(nz, pz)) == 1 and math.copysign(1, scalar.minimumf(pz, nz)) == -1


def test_integer_edge_cases() -> None:
    assert scalar.int_binary("ceildivsi", 7, -2, 32) == -3 and scalar.int_binary("floordivsi", 7, -2, 32) == -4
    assert scalar.int_binary("ceildivsi", -7, -2, 32) == 4 and scalar.int_binary("floordivsi", -7, 2, 32) == -4
    assert scalar.int_binary("remsi", -7, 2, 8) == -1 and scalar.int_binary("divsi", -7, 2, 8) == -3
    assert scalar.int_binary("muli", 2**40 + 3, 2**30 + 5, 64) == scalar.wrap((2**40 + 3) * (2**30 + 5), 64)
    assert scalar.wrap(300, 8) == 44 and scalar.wrap(-129, 8) == 127
    with pytest.raises(scalar.Undefined):
        scalar.int_binary("divsi", -128, -1, 8)
    with pytest.raises(scalar.Undefined):
        scalar.int_binary("shli", 1, 8, 8)


def test_transcendental_values_are_exact_where_they_are_short_and_correct_elsewhere() -> None:
    from conformance.oracle import transcendental as tr

    assert tr.unary("exp", Fraction(0)) == 1 and tr.unary("log2", Fraction(1024)) == 10
    assert tr.unary("sqrt", Fraction(9, 4)) == Fraction(3, 2) and tr.powf(Fraction(4), Fraction(1, 2)) == 2
    v = tr.unary("exp", Fraction(1))
    with mpmath.workprec(300):
        e = mpmath.e()
        sign, man, exp, _ = e._mpf_
    assert isinstance(v, Fraction) and abs(v - Fraction(man) * Fraction(2) ** exp) < Fraction(1, 2**200)
    assert tr.unary("log", 0.0) == -math.inf and math.isnan(tr.unary("log", Fraction(-1)))
    assert tr.atan2(0.0, -0.0) == tr.unary("atan", math.inf) * 2  # pi, from both routes


def test_exact_sums_and_products() -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 9)) * 2.0 ** rng.integers(-30, 30, (4, 9))).astype(np.float32)
    s, m = exact_sum(x, 1)
    for i in range(4):
        assert s[i] == sum(Fraction(float(v)) for v in x[i])
        assert m[i] == sum(abs(Fraction(float(v))) for v in x[i])
    a = (rng.standard_normal((4, 5)) * 2.0 ** rng.integers(-10, 10, (4, 5))).astype(np.float16)
    b = (rng.standard_normal((5, 3)) * 2.0 ** rng.integers(-10, 10, (5, 3))).astype(np.float16)
    c, _ = exact_contract("mk,kn->mn", a, b)
    want = sum(Fraction(float(a[0, k])) * Fraction(float(b[k, 1])) for k in range(5))
    assert (c[0, 1] == want) or (want == 0 and c[0, 1] == 0.0)


def test_limb_products_are_exact() -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((6, 300)).astype(np.float16).astype(np.float64)
    b = rng.standard_normal((300, 5)).astype(ml_dtypes.bfloat16).astype(np.float64)
    s, m, err = approx.limb_matmul(a, b)
    for i, j in ((0, 0), (5, 4), (3, 2)):
        exact = sum(Fraction(a[i, k]) * Fraction(b[k, j]) for k in range(300))
        assert abs(Fraction(s[i, j]) - exact) <= Fraction(err[i, j])
        assert m[i, j] >= float(sum(abs(Fraction(a[i, k]) * Fraction(b[k, j])) for k in range(300)))


def test_exp64_is_within_its_bound_everywhere() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-700, 700, 3000), rng.uniform(-2, 2, 3000), rng.standard_normal(500) * 1e-9])
    y = approx.exp64(x)
    with mpmath.workprec(120):
        worst = max(abs((mpmath.mpf(float(yi)) - mpmath.exp(xi)) / mpmath.exp(xi)) for xi, yi in zip(x, y, strict=True))
    assert worst < approx.EXP_REL / 64


def test_approx_bounds_hold_for_float32_and_float64_implementations() -> None:
    # the same softmax row computed as an implementation would (f32, and in float64 then
    # rounded) lies inside the model's bound; the bound is far below an f16 ulp
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 256)).astype(np.float16)
    xa = approx.exact(x.astype(np.float64))
    mx = approx.maximum(xa, 1)
    e = approx.exp(approx.sub(xa, mx[:, None], "f32"), "f32")
    s = approx.total(e, 1, "f32")
    p = approx.div(e, s[:, None], "f32")
    x32 = x.astype(np.float32)
    e32 = np.exp((x32 - x32.max(1, keepdims=True)).astype(np.float64)).astype(np.float32)
    for impl in (e32 / e32[:, ::-1].sum(1, keepdims=True, dtype=np.float32), (e32 / e32.astype(np.float64).sum(1, keepdims=True))):
        assert (np.abs(impl.astype(np.float64) - p.v) <= p.e).all()
    assert (p.e <= 2.0**-14 * np.abs(p.v) + 2.0**-30).all()


def test_exact_arrays_keep_signed_zeros_and_specials() -> None:
    v = exact_array(np.array([-0.0, np.inf, np.nan, 1.5], np.float16))
    assert math.copysign(1, v[0]) == -1 and v[1] == math.inf and math.isnan(v[2]) and v[3] == Fraction(3, 2)
