"""Hypothesis oracles: every elementwise arith/math op, for every dtype it accepts, against
numpy (exact for correctly rounded and exact ops, a few ulps for transcendentals)."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri

FLOATS: dict[str, Any] = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
}
INTS: dict[str, Any] = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
N = 16
# few examples, many values each: one example checks N values per operand
ORACLE = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


@cache
def compiled(text: str) -> ktir.Module:
    return ktir.parse(text, "oracle.ktir")


def call(text: str, *args: np.ndarray | Any) -> tuple[Any, ...]:
    m = compiled(text)
    names = [f"a{i}" for i in range(len(args))]
    return ri.run(m, args=dict(zip(names, args, strict=True))).returns[0]


def func(op_lines: str, arg_types: list[str], ret_types: list[str], rets: list[str]) -> str:
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    results = ", ".join(ret_types)
    return f"func.func @f({params}) -> ({results}) {{\n{op_lines}\n  return {', '.join(rets)} : {results}\n}}\n"


def tensor(t: str) -> str:
    return f"tensor<{N}x{t}>"


SPECIAL_FLOATS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-3, 3.0, 448.0, 65504.0, 1e-7])


def float_arrays(dt: Any, count: int = 2) -> st.SearchStrategy[list[np.ndarray]]:
    """`count` arrays of N values of dtype `dt`: special values, small values and values
    spread over the type's whole range (generated from one hypothesis-drawn seed)."""
    finfo = ml_dtypes.finfo(dt)
    top = math.log2(float(finfo.max))
    bottom = math.log2(float(finfo.smallest_subnormal))

    def make(seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(count):
            kind = rng.integers(0, 4, N)
            special = rng.choice(SPECIAL_FLOATS, N)
            small = rng.uniform(-8, 8, N)
            wide = np.exp2(rng.uniform(bottom, top, N)) * rng.choice([-1.0, 1.0], N)
            v = np.where(kind == 0, special, np.where(kind == 1, small, wide))
            with np.errstate(all="ignore"):
                out.append(v.astype(dt))
        return out

    return st.integers(0, 2**32 - 1).map(make)


def int_arrays(dt: Any, count: int = 2) -> st.SearchStrategy[list[np.ndarray]]:
    info = np.iinfo(dt)
    special = np.array([0, 1, -1, int(info.min), int(info.max), 2, 7], dtype=dt)

    def make(seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(count):
            kind = rng.integers(0, 3, N)
            wide = rng.integers(int(info.min), int(info.max), N, dtype=dt, endpoint=True)
            small = rng.integers(-20, 21, N).astype(dt)
            out.append(np.where(kind == 0, rng.choice(special, N), np.where(kind == 1, small, wide)).astype(dt))
        return out

    return st.integers(0, 2**32 - 1).map(make)


def same_float(got: np.ndarray, want: np.ndarray, ulps: float = 0, signed_zero: bool = True) -> None:
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    assert g.shape == w.shape
    both_nan = np.isnan(g) & np.isnan(w)
    if ulps == 0:
        ok = both_nan | (g == w)
        if signed_zero:
            ok &= both_nan | (np.signbit(g) == np.signbit(w))
    else:
        dt = np.asarray(want).dtype
        tiny = float(ml_dtypes.finfo(dt).smallest_subnormal)
        eps = float(ml_dtypes.finfo(dt).eps)
        with np.errstate(all="ignore"):
            mag = np.where(np.isfinite(w) & (w != 0), 2.0 ** np.floor(np.log2(np.abs(w))), 0)
        tol = np.maximum(ulps * eps * mag, ulps * tiny)
        ok = both_nan | (g == w) | (np.abs(g - w) <= tol)
    assert ok.all(), f"got {g[~ok]}, want {w[~ok]}"


# ---------------------------------------------------------------------- float binary

F_BINARY = {
    "addf": lambda a, b: a + b, "subf": lambda a, b: a - b, "mulf": lambda a, b: a * b, "divf": lambda a, b: a / b,
    "remf": np.fmod,
}


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", [*F_BINARY, "minimumf", "maximumf", "minnumf", "maxnumf"])
@ORACLE
@given(data=st.data())
def test_float_binary(op: str, dtype: str, data: st.DataObject) -> None:
    dt = FLOATS[dtype]
    a, b = data.draw(float_arrays(dt))
    T = tensor(dtype)
    (got,) = call(func(f"  %r = arith.{op} %a0, %a1 : {T}", [T, T], [T], ["%r"]), a, b)
    assert got.dtype == dt
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        if op in F_BINARY:
            same_float(got, F_BINARY[op](a64, b64).astype(dt))
        elif op in ("minimumf", "maximumf"):
            nan = np.isnan(a64) | np.isnan(b64)
            pick_a = (a64 < b64) if op == "minimumf" else (a64 > b64)
            zeros = (a64 == 0) & (b64 == 0)
            neg = np.signbit(a64) | np.signbit(b64) if op == "minimumf" else np.signbit(a64) & np.signbit(b64)
            want = np.where(pick_a, a64, b64)
            want = np.where(zeros, np.where(neg, -0.0, 0.0), want)
            same_float(got, np.where(nan, np.nan, want).astype(dt))
        else:
            fn = np.fmin if op == "minnumf" else np.fmax
            same_float(got, fn(a64, b64).astype(dt), signed_zero=False)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f8E4M3FN"])
@ORACLE
@given(data=st.data())
def test_float_scalar_ops_match_tensor_ops(dtype: str, data: st.DataObject) -> None:
    dt = FLOATS[dtype]
    a, b = data.draw(float_arrays(dt))
    lines = "\n".join(f"  %{op} = arith.{op} %a0, %a1 : {dtype}" for op in ("addf", "subf", "mulf", "divf", "maximumf"))
    scalar = func(lines, [dtype, dtype], [dtype] * 5, ["%addf", "%subf", "%mulf", "%divf", "%maximumf"])
    T = tensor(dtype)
    vector = func(lines.replace(f": {dtype}", f": {T}"), [T, T], [T] * 5, ["%addf", "%subf", "%mulf", "%divf", "%maximumf"])
    whole = call(vector, a, b)
    for i in (0, N - 1):
        got = call(scalar, a[i], b[i])
        for g, w in zip(got, whole, strict=True):
            assert type(g) is dt or np.asarray(g).dtype == dt
            same_float(np.asarray(g), np.asarray(w)[i])


CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")


@pytest.mark.parametrize("dtype", list(FLOATS))
@ORACLE
@given(data=st.data())
def test_cmpf_every_predicate(dtype: str, data: st.DataObject) -> None:
    dt = FLOATS[dtype]
    a, b = data.draw(float_arrays(dt))
    T = tensor(dtype)
    B = tensor("i1")
    lines = "\n".join(f"  %{p} = arith.cmpf {p}, %a0, %a1 : {T}" for p in CMPF)
    got = call(func(lines, [T, T], [B] * len(CMPF), [f"%{p}" for p in CMPF]), a, b)
    x, y = a.astype(np.float64), b.astype(np.float64)
    uno = np.isnan(x) | np.isnan(y)
    want = {
        "false": np.zeros(N, bool), "true": np.ones(N, bool), "oeq": ~uno & (x == y), "ogt": ~uno & (x > y),
        "oge": ~uno & (x >= y), "olt": ~uno & (x < y), "ole": ~uno & (x <= y), "one": ~uno & (x != y), "ord": ~uno,
        "ueq": uno | (x == y), "ugt": uno | (x > y), "uge": uno | (x >= y), "ult": uno | (x < y), "ule": uno | (x <= y),
        "une": uno | (x != y), "uno": uno,
    }
    for p, g in zip(CMPF, got, strict=True):
        np.testing.assert_array_equal(g, want[p], err_msg=p)


@pytest.mark.parametrize("dtype", list(FLOATS))
@ORACLE
@given(data=st.data(), cond=st.lists(st.booleans(), min_size=N, max_size=N))
def test_select_and_negf(dtype: str, data: st.DataObject, cond: list[bool]) -> None:
    dt = FLOATS[dtype]
    a, b = data.draw(float_arrays(dt))
    T, B = tensor(dtype), tensor("i1")
    text = func(f"  %s = arith.select %a2, %a0, %a1 : {B}, {T}\n  %n = arith.negf %a0 : {T}", [T, T, B], [T, T], ["%s", "%n"])
    s, n = call(text, a, b, np.array(cond))
    same_float(s, np.where(cond, a, b))
    same_float(n, (-a.astype(np.float64)).astype(dt))


# ---------------------------------------------------------------------- math


MATH_UNARY: dict[str, tuple[Any, float]] = {
    # op: (float64 reference, ulps allowed after rounding to the type; 0 = exact)
    "exp": (np.exp, 2), "exp2": (np.exp2, 2), "expm1": (np.expm1, 2), "log": (np.log, 2), "log2": (np.log2, 2),
    "log10": (np.log10, 2), "log1p": (np.log1p, 2), "sqrt": (np.sqrt, 0), "rsqrt": (lambda x: 1 / np.sqrt(x), 2),
    "tanh": (np.tanh, 2), "sin": (np.sin, 2), "cos": (np.cos, 2), "tan": (np.tan, 2), "atan": (np.arctan, 2),
    "erf": (np.vectorize(math.erf, otypes=[np.float64]), 2), "absf": (np.abs, 0), "ceil": (np.ceil, 0),
    "floor": (np.floor, 0), "roundeven": (np.rint, 0), "trunc": (np.trunc, 0),
    "round": (lambda x: np.where(np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x), np.trunc(x)), 0),
}


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(MATH_UNARY))
@ORACLE
@given(data=st.data())
def test_math_unary(op: str, dtype: str, data: st.DataObject) -> None:
    dt = FLOATS[dtype]
    (a,) = data.draw(float_arrays(dt, 1))
    if op in ("sin", "cos", "tan"):
        a = np.where(np.abs(a.astype(np.float64)) > 1e4, 0, a.astype(np.float64)).astype(dt)  # big arguments: range reduction differs
    T = tensor(dtype)
    (got,) = call(func(f"  %r = math.{op} %a0 : {T}", [T], [T], ["%r"]), a)
    assert got.dtype == dt
    ref, ulps = MATH_UNARY[op]
    with np.errstate(all="ignore"):
        want = np.asarray(ref(a.astype(np.float64))).astype(dt)
    same_float(got, want, ulps=ulps, signed_zero=ulps == 0 and op != "round")


def _exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: str) -> np.ndarray:
    """a * b + c computed exactly and rounded once (the conformance oracle's exact arithmetic):
    a float64 a * b + c rounds twice, which the bf16/f16/f32 results sometimes show."""
    from conformance.oracle.elementwise import float_result, round_each

    return round_each(float_result("math.fma", a, b, c), dtype).astype(np.float64)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", ["atan2", "powf", "copysign", "fma"])
@ORACLE
@given(data=st.data())
def test_math_multi(op: str, dtype: str, data: st.DataObject) -> None:
    dt = FLOATS[dtype]
    arrays = data.draw(float_arrays(dt, 3 if op == "fma" else 2))
    T = tensor(dtype)
    names = " ".join(f"%a{i}," for i in range(len(arrays)))[:-1]
    (got,) = call(func(f"  %r = math.{op} {names} : {T}", [T] * len(arrays), [T], ["%r"]), *arrays)
    x = [v.astype(np.float64) for v in arrays]
    with np.errstate(all="ignore"):
        ref = {"atan2": lambda: np.arctan2(x[0], x[1]), "powf": lambda: np.power(x[0], x[1]),
               "copysign": lambda: np.copysign(x[0], x[1]), "fma": lambda: _exact_fma(*arrays, dtype)}[op]()
    ulps = {"copysign": 0, "fma": 0, "atan2": 2, "powf": 2}[op]
    same_float(got, np.asarray(ref).astype(dt), ulps=ulps, signed_zero=ulps == 0 and op != "fma")


def test_f64_fma_of_an_overflowing_product_and_an_infinity() -> None:
    """a * b overflows float64 but is finite: adding an infinity gives that infinity, not the
    NaN of inf - inf (found by test_math_multi[fma-f64])."""
    T = tensor("f64")
    a = np.full(N, 1e300)
    b = np.full(N, -1e300)
    c = np.where(np.arange(N) % 2 == 0, np.inf, -np.inf)
    (got,) = call(func("  %r = math.fma %a0, %a1, %a2 : " + T, [T] * 3, [T], ["%r"]), a, b, c)
    assert np.array_equal(got, c)

# ---------------------------------------------------------------------- integers


def wrap(v: int, w: int) -> int:
    return ((v + (1 << (w - 1))) % (1 << w)) - (1 << (w - 1))


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


INT_OPS = {
    "addi": lambda a, b, w: a + b, "subi": lambda a, b, w: a - b, "muli": lambda a, b, w: a * b,
    "divsi": lambda a, b, w: trunc_div(a, b), "remsi": lambda a, b, w: a - b * trunc_div(a, b),
    "divui": lambda a, b, w: (a % (1 << w)) // (b % (1 << w)), "remui": lambda a, b, w: (a % (1 << w)) % (b % (1 << w)),
    "ceildivsi": lambda a, b, w: -((-a) // b), "floordivsi": lambda a, b, w: a // b,
    "andi": lambda a, b, w: a & b, "ori": lambda a, b, w: a | b, "xori": lambda a, b, w: a ^ b,
    "shli": lambda a, b, w: a << (b % w), "shrsi": lambda a, b, w: a >> (b % w), "shrui": lambda a, b, w: (a % (1 << w)) >> (b % w),
    "minsi": lambda a, b, w: min(a, b), "maxsi": lambda a, b, w: max(a, b),
    "minui": lambda a, b, w: min(a % (1 << w), b % (1 << w)), "maxui": lambda a, b, w: max(a % (1 << w), b % (1 << w)),
}


@pytest.mark.parametrize("dtype", list(INTS))
@pytest.mark.parametrize("op", list(INT_OPS))
@ORACLE
@given(data=st.data())
def test_int_binary(op: str, dtype: str, data: st.DataObject) -> None:
    dt = INTS[dtype]
    w = np.dtype(dt).itemsize * 8
    a, b = data.draw(int_arrays(dt))
    # keep to defined behaviour (undefined cases are tested in test_checks)
    if op in ("divsi", "remsi", "divui", "remui", "ceildivsi", "floordivsi"):
        b = np.where(b == 0, 3, b).astype(dt)
        if op in ("divsi", "ceildivsi", "floordivsi"):
            b = np.where((a == np.iinfo(dt).min) & (b == -1), 5, b).astype(dt)
    if op.startswith("sh"):
        b = (b.astype(np.int64) % w).astype(dt)
    T = tensor(dtype)
    text = func(f"  %r = arith.{op} %a0, %a1 : {T}", [T, T], [T], ["%r"])
    (got,) = call(text, a, b)
    want = np.array([wrap(INT_OPS[op](int(x), int(y), w), w) for x, y in zip(a, b, strict=True)], dtype=dt)
    np.testing.assert_array_equal(got, want)
    # the same op on scalars (Python ints) agrees
    s = call(func(f"  %r = arith.{op} %a0, %a1 : {dtype}", [dtype, dtype], [dtype], ["%r"]), int(a[0]), int(b[0]))[0]
    assert s == int(want[0])


@pytest.mark.parametrize("dtype", [*INTS, "index"])
@ORACLE
@given(data=st.data())
def test_cmpi_every_predicate(dtype: str, data: st.DataObject) -> None:
    dt = INTS.get(dtype, np.int64)
    w = np.dtype(dt).itemsize * 8
    a, b = data.draw(int_arrays(dt))
    preds = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
    T, B = tensor(dtype), tensor("i1")
    lines = "\n".join(f"  %{p} = arith.cmpi {p}, %a0, %a1 : {T}" for p in preds)
    got = call(func(lines, [T, T], [B] * len(preds), [f"%{p}" for p in preds]), a, b)
    u = lambda v: int(v) % (1 << w)  # noqa: E731
    ops = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y, "le": lambda x, y: x <= y,
           "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
    for p, g in zip(preds, got, strict=True):
        if p[0] == "u" and p not in ("eq", "ne"):
            want = [ops[p[1:]](u(x), u(y)) for x, y in zip(a, b, strict=True)]
        else:
            f = ops[p[1:]] if p[0] == "s" else ops[p]
            want = [f(int(x), int(y)) for x, y in zip(a, b, strict=True)]
        np.testing.assert_array_equal(g, want, err_msg=p)


@pytest.mark.parametrize("dtype", list(INTS))
@ORACLE
@given(data=st.data())
def test_math_integer(dtype: str, data: st.DataObject) -> None:
    dt = INTS[dtype]
    w = np.dtype(dt).itemsize * 8
    (a,) = data.draw(int_arrays(dt, 1))
    T = tensor(dtype)
    absi, ctpop = call(func(f"  %x = math.absi %a0 : {T}\n  %y = math.ctpop %a0 : {T}", [T], [T, T], ["%x", "%y"]), a)
    np.testing.assert_array_equal(absi, [wrap(abs(int(v)), w) for v in a])
    np.testing.assert_array_equal(ctpop, [bin(int(v) % (1 << w)).count("1") for v in a])


@pytest.mark.parametrize("op", ["andi", "ori", "xori", "addi", "muli", "maxsi", "minui"])
@ORACLE
@given(a=st.lists(st.booleans(), min_size=N, max_size=N), b=st.lists(st.booleans(), min_size=N, max_size=N))
def test_i1_ops(op: str, a: list[bool], b: list[bool]) -> None:
    T = tensor("i1")
    (got,) = call(func(f"  %r = arith.{op} %a0, %a1 : {T}", [T, T], [T], ["%r"]), np.array(a), np.array(b))
    s = lambda v: -int(v)  # noqa: E731 - i1 true is -1 when signed
    ref = {"andi": lambda x, y: x & y, "ori": lambda x, y: x | y, "xori": lambda x, y: x ^ y, "addi": lambda x, y: x ^ y,
           "muli": lambda x, y: x & y, "maxsi": lambda x, y: x if s(x) >= s(y) else y, "minui": lambda x, y: x & y}[op]
    np.testing.assert_array_equal(got, [ref(x, y) for x, y in zip(a, b, strict=True)])


# ---------------------------------------------------------------------- casts

INT_CASTS = [("extsi", "i8", "i32"), ("extsi", "i1", "i16"), ("extui", "i8", "i64"), ("extui", "i1", "i32"),
             ("trunci", "i64", "i8"), ("trunci", "i32", "i1"), ("index_cast", "index", "i16"), ("index_cast", "i32", "index"),
             ("index_castui", "i8", "index"), ("index_castui", "index", "i32")]


def _int_strategy(t: str) -> st.SearchStrategy[np.ndarray]:
    if t == "i1":
        return st.lists(st.booleans(), min_size=N, max_size=N).map(lambda xs: np.array(xs))
    return int_arrays(INTS.get(t, np.int64), 1).map(lambda xs: xs[0])


def _as_int(v: Any, t: str) -> int:
    return -int(v) if t == "i1" else int(v)


@pytest.mark.parametrize(("op", "src", "dst"), INT_CASTS)
@ORACLE
@given(data=st.data())
def test_integer_casts(op: str, src: str, dst: str, data: st.DataObject) -> None:
    a = data.draw(_int_strategy(src))
    ws = 1 if src == "i1" else np.dtype(INTS.get(src, np.int64)).itemsize * 8
    wd = 1 if dst == "i1" else np.dtype(INTS.get(dst, np.int64)).itemsize * 8
    (got,) = call(func(f"  %r = arith.{op} %a0 : {tensor(src)} to {tensor(dst)}", [tensor(src)], [tensor(dst)], ["%r"]), a)
    unsigned = op in ("extui", "index_castui") and wd > ws
    vals = [(int(v) % (1 << ws)) if unsigned else _as_int(v, src) for v in a]
    if dst == "i1":
        np.testing.assert_array_equal(got, [bool(v & 1) for v in vals])
    else:
        np.testing.assert_array_equal(got, [wrap(v, wd) for v in vals])


FLOAT_CASTS = [("extf", "f16", "f32"), ("extf", "bf16", "f64"), ("extf", "f8E4M3FN", "f16"), ("extf", "f8E5M2", "f32"),
               ("truncf", "f32", "f16"), ("truncf", "f32", "bf16"), ("truncf", "f64", "f32"), ("truncf", "f32", "f8E4M3FN"),
               ("truncf", "f16", "f8E5M2")]


@pytest.mark.parametrize(("op", "src", "dst"), FLOAT_CASTS)
@ORACLE
@given(data=st.data())
def test_float_casts(op: str, src: str, dst: str, data: st.DataObject) -> None:
    (a,) = data.draw(float_arrays(FLOATS[src], 1))
    (got,) = call(func(f"  %r = arith.{op} %a0 : {tensor(src)} to {tensor(dst)}", [tensor(src)], [tensor(dst)], ["%r"]), a)
    assert got.dtype == FLOATS[dst]
    same_float(got, a.astype(np.float64).astype(FLOATS[dst]))


@pytest.mark.parametrize(("src", "dst"), [("i32", "f32"), ("i8", "f16"), ("i64", "bf16"), ("i16", "f8E4M3FN")])
@ORACLE
@given(data=st.data())
def test_int_to_float(src: str, dst: str, data: st.DataObject) -> None:
    (a,) = data.draw(int_arrays(INTS[src], 1))
    w = np.dtype(INTS[src]).itemsize * 8
    text = func(f"  %s = arith.sitofp %a0 : {tensor(src)} to {tensor(dst)}\n  %u = arith.uitofp %a0 : {tensor(src)} to {tensor(dst)}",
                [tensor(src)], [tensor(dst)] * 2, ["%s", "%u"])
    s, u = call(text, a)
    same_float(s, np.array([float(int(v)) for v in a]).astype(FLOATS[dst]))
    same_float(u, np.array([float(int(v) % (1 << w)) for v in a]).astype(FLOATS[dst]))


@pytest.mark.parametrize(("src", "dst"), [("f32", "i32"), ("f16", "i16"), ("f64", "i64"), ("bf16", "i8")])
@ORACLE
@given(data=st.data())
def test_float_to_int(src: str, dst: str, data: st.DataObject) -> None:
    (a,) = data.draw(float_arrays(FLOATS[src], 1))
    w = np.dtype(INTS[dst]).itemsize * 8
    x = a.astype(np.float64)
    a = np.where(np.isfinite(x) & (np.abs(x) < 2.0 ** (w - 2)), x, 1.5).astype(FLOATS[src])  # defined inputs only
    text = func(f"  %s = arith.fptosi %a0 : {tensor(src)} to {tensor(dst)}", [tensor(src)], [tensor(dst)], ["%s"])
    (s,) = call(text, a)
    np.testing.assert_array_equal(s, [int(math.trunc(float(v))) for v in a])


@pytest.mark.parametrize(("src", "dst"), [("f32", "i32"), ("i16", "f16"), ("bf16", "i16"), ("i8", "f8E5M2")])
@ORACLE
@given(data=st.data())
def test_bitcast(src: str, dst: str, data: st.DataObject) -> None:
    a = data.draw(float_arrays(FLOATS[src], 1))[0] if src in FLOATS else data.draw(int_arrays(INTS[src], 1))[0]
    (got,) = call(func(f"  %r = arith.bitcast %a0 : {tensor(src)} to {tensor(dst)}", [tensor(src)], [tensor(dst)], ["%r"]), a)
    want = a.view(FLOATS.get(dst) or INTS[dst])
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("op", ["exp", "log", "tan", "atan2"])
def test_f32_functions_meet_their_class_on_many_values(op: str) -> None:
    # numpy's float32 kernels are up to 3 ulp off for these; the interpreter must not be
    rng = np.random.default_rng(7)
    x = rng.uniform(0.05 if op == "log" else -3, 3, 1 << 15).astype(np.float32)
    y = rng.uniform(-3, 3, 1 << 15).astype(np.float32)
    T = f"tensor<{1 << 15}xf32>"
    if op == "atan2":
        (got,) = call(func(f"  %r = math.atan2 %a0, %a1 : {T}", [T, T], [T], ["%r"]), x, y)
        want = np.arctan2(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    else:
        (got,) = call(func(f"  %r = math.{op} %a0 : {T}", [T], [T], ["%r"]), x)
        want = MATH_UNARY[op][0](x.astype(np.float64)).astype(np.float32)
    same_float(got, want, ulps=1)
