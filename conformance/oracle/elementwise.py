"""Elementwise ops on whole arrays: exact results (object arrays of exact values for float
results, int64 arrays for integer ones), and the expected output for an op's class."""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from conformance.oracle import scalar
from conformance.oracle.expect import Expected, rounded, same, within_ulps
from conformance.oracle.formats import FORMATS, exact_array, format_of, round_exact, to_numpy
from ktir.dialects.names import Linalg

INT_WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
INT_NUMPY: dict[str, Any] = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                             "index": np.int64}
# linalg's elementwise ops, by the arith/math op they mean per element (spec/ops/linalg.md)
LINALG_MEANS = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf", "max": "maximumf", "min": "minimumf",
                "powf": "powf", "exp": "exp", "log": "log", "abs": "absf", "negf": "negf", "sqrt": "sqrt",
                "rsqrt": "rsqrt", "tanh": "tanh", "erf": "erf", "floor": "floor"}
_ULP = re.compile(r"^(\d+) ulp$")


def is_int_type(t: str) -> bool:
    return t in INT_WIDTH


def ints(a: np.ndarray) -> np.ndarray:
    """An integer array as an object array of Python ints (the signed reading)."""
    out = np.empty(np.shape(a), dtype=object)
    for i, v in np.ndenumerate(np.asarray(a)):
        out[i] = int(v)
    return out


def int_array(values: np.ndarray, t: str) -> np.ndarray:
    """Python ints (signed readings of `t`'s bits) as an array of `t`'s numpy type."""
    flat = [int(v) for v in np.asarray(values, dtype=object).reshape(-1)]
    if t == "i1":
        return np.array([v & 1 for v in flat], dtype=np.bool_).reshape(np.shape(values))
    return np.array(flat, dtype=np.int64).reshape(np.shape(values)).astype(INT_NUMPY[t])


def map_elements(fn: Any, *arrays: np.ndarray) -> np.ndarray:
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    cols = [np.broadcast_to(np.asarray(a, dtype=object), shape) for a in arrays]
    out = np.empty(shape, dtype=object)
    for i in np.ndindex(shape):
        out[i] = fn(*(c[i] for c in cols))
    return out


def mnemonic(op: str) -> str:
    dialect, name = op.split(".", 1)
    return LINALG_MEANS[name] if dialect == "linalg" else name


def float_result(op: str, *operands: np.ndarray) -> np.ndarray:
    """The exact (unrounded) results of a float op on arrays of any float format."""
    exact = [exact_array(a) for a in operands]
    if op == Linalg.reciprocal:
        return map_elements(lambda a: scalar.divf(Fraction(1), a), *exact)
    if op == Linalg.square:
        return map_elements(lambda a: scalar.mulf(a, a), *exact)
    name = mnemonic(op)
    if name == "fma":
        return map_elements(scalar.fma, *exact)
    if len(exact) == 1:
        return map_elements(scalar.float_unary(name), *exact)
    return map_elements(scalar.FLOAT_BINARY[name], *exact)


def int_result(op: str, t: str, *operands: np.ndarray) -> np.ndarray:
    """The results (signed readings) of an integer op on arrays of type `t`."""
    name = mnemonic(op)
    w = INT_WIDTH[t]
    if op == Linalg.div:
        name = "divsi"
    elif op.startswith("linalg."):
        name = {"add": "addi", "sub": "subi", "mul": "muli", "max": "maxsi", "min": "minsi", "abs": "absi"}[op.split(".")[1]]
    args = [ints(a) for a in operands]
    if len(args) == 1:
        return map_elements(lambda a: scalar.int_unary(name, a, w), *args)
    return map_elements(lambda a, b: scalar.int_binary(name, a, b, w), *args)


def by_class(exact: np.ndarray, t: str, tolerance: str) -> Expected:
    """The expected output of exact float results under an op's accuracy class."""
    m = _ULP.match(tolerance)
    if m is not None:
        return within_ulps(exact, t, int(m.group(1)))
    if tolerance in ("exact", "correctly-rounded"):
        return rounded(exact, t)
    raise ValueError(f"class {tolerance!r} is not the class of an elementwise op")


def expected(op: str, t: str, tolerance: str, *operands: np.ndarray) -> Expected:
    """The expected output of elementwise `op` with result type `t` on the operand arrays."""
    if is_int_type(t):
        return same(int_array(int_result(op, t, *operands), t))
    return by_class(float_result(op, *operands), t, tolerance)


# ---------------------------------------------------------------------- conversions


def convert(op: str, x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The result of a conversion op as an array of `dst`'s numpy type (rounded once where the
    op rounds: truncf, sitofp, uitofp)."""
    name = op.split(".")[1]
    if name == "bitcast":
        return np.asarray(x).view(_numpy(dst)).copy()
    if name in ("extf", "truncf"):
        f = format_of(dst)
        return to_numpy(map_elements(lambda v: round_exact(v, f), exact_array(x)), f)
    if name in ("sitofp", "uitofp"):
        f = format_of(dst)
        w = INT_WIDTH[src]
        return to_numpy(map_elements(lambda v: round_exact(scalar.from_integer(v, w, name == "sitofp"), f), ints(x)), f)
    if name in ("fptosi", "fptoui"):
        w = INT_WIDTH[dst]
        return int_array(map_elements(lambda v: scalar.to_integer(v, w, name == "fptosi"), exact_array(x)), dst)
    w_src, w_dst = INT_WIDTH[src], INT_WIDTH[dst]
    if name in ("extsi", "trunci") or (name == "index_cast"):
        return int_array(map_elements(lambda v: scalar.wrap(v, w_dst), ints(x)), dst)
    if name in ("extui", "index_castui"):
        # widening zero-extends; narrowing keeps the low bits either way
        return int_array(map_elements(lambda v: scalar.wrap(scalar.unsigned(v, w_src), w_dst), ints(x)), dst)
    raise KeyError(op)


def _numpy(t: str) -> Any:
    return INT_NUMPY[t] if t in INT_NUMPY else FORMATS[t].dtype


def compare_float(pred: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return map_elements(lambda x, y: scalar.cmpf(pred, x, y), exact_array(a), exact_array(b)).astype(np.bool_)


def compare_int(pred: str, t: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w = INT_WIDTH[t]
    return map_elements(lambda x, y: scalar.cmpi(pred, x, y, w), ints(a), ints(b)).astype(np.bool_)


def round_each(values: np.ndarray, t: str) -> np.ndarray:
    """Exact values rounded once to `t` (an op's one rounding), as an array of `t`."""
    f = format_of(t)
    return to_numpy(map_elements(lambda v: round_exact(v, f), values), f)


def apply_rounded(op: str, t: str, *operands: np.ndarray) -> np.ndarray:
    """A correctly rounded float op (or any integer op) applied as an implementation must:
    the exact result rounded once to `t`. For composing models of exact-class kernels."""
    if is_int_type(t):
        return int_array(int_result(op, t, *operands), t)
    return round_each(float_result(op, *operands), t)


def operands_of(inputs: dict[str, Any], names: Sequence[str]) -> list[np.ndarray]:
    return [np.asarray(inputs[n]) for n in names]
