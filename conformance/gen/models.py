"""Models of what generated kernels compute, built from `conformance.oracle`: one per kind of
case, taking the case's arguments by name (outputs hold their initial contents) and giving
each compared output's expected contents. They restate the case's description in numpy and
exact arithmetic; none of them runs the kernel.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from conformance.gen.draft import Model
from conformance.oracle.elementwise import apply_rounded, convert, expected
from conformance.oracle.expect import Expected, same, summed
from conformance.oracle.sums import exact_contract, exact_sum

Inputs = Mapping[str, Any]


def seed_of(case_id: str, arg: str) -> int:
    """The input seed of argument `arg` of case `case_id`: a hash of both, so that adding,
    removing or reordering cases leaves every other case's inputs alone."""
    return zlib.crc32(f"{case_id}/{arg}".encode()) & 0x7FFF_FFFF


def elementwise(op: str, ins: Sequence[str], out: str, t: str, tolerance: str) -> Model:
    """out = op(ins...) element-wise, result type `t`, checked with `tolerance`."""

    def model(a: Inputs) -> dict[str, Expected]:
        return {out: expected(op, t, tolerance, *(np.asarray(a[n]) for n in ins))}

    return model


def conversion(ops: Sequence[tuple[str, str, str]], src: str, out: str) -> Model:
    """out = a chain of conversions (op, from type, to type) applied to `src`."""

    def model(a: Inputs) -> dict[str, Expected]:
        v = np.asarray(a[src])
        for op, s, d in ops:
            v = convert(op, v, s, d)
        return {out: same(v)}

    return model


def computed(fn: Callable[..., dict[str, np.ndarray]]) -> Model:
    """Outputs compared bit for bit, whose values `fn` computes (data movement, integer
    arithmetic, and float ops each rounded once as `apply_rounded` does)."""

    def model(a: Inputs) -> dict[str, Expected]:
        return {k: same(v) for k, v in fn(a).items()}

    return model


def rounded_op(op: str, t: str, *operands: np.ndarray) -> np.ndarray:
    return apply_rounded(op, t, *operands)


def reduction(out: str, t: str, fn: Callable[[Inputs], tuple[np.ndarray, np.ndarray, int]], acc: str | None = None) -> Model:
    """A `reduction` output: `fn` gives the exact sums, the sums of |terms| and the number of terms."""

    def model(a: Inputs) -> dict[str, Expected]:
        s, m, n = fn(a)
        return {out: summed(s, m, t, n, products=False, acc=acc)}

    return model


def row_sums(x: str, out: str, t: str, axis: int, init: str | None = None, acc: str | None = None) -> Model:
    """out = init + the sums of x over `axis` (reshaped to out's shape), a `reduction` output."""

    def fn(a: Inputs) -> tuple[np.ndarray, np.ndarray, int]:
        xs = np.asarray(a[x])
        s, m = exact_sum(xs, axis, None if init is None else np.asarray(a[init]))
        shape = np.shape(a[out])
        return s.reshape(shape), m.reshape(shape), xs.shape[axis] + (init is not None)

    return reduction(out, t, fn, acc)


def contraction(spec: str, lhs: str, rhs: str, out: str, t: str, k: int, init: str | None = None,
                reshape: Callable[[np.ndarray], np.ndarray] | None = None) -> Model:
    """A `matmul` output: init + einsum(spec, lhs, rhs) over K = k products, accumulated in `t`.
    Without `init` the output starts from zero (a linalg.fill of 0)."""

    def model(a: Inputs) -> dict[str, Expected]:
        s, m = exact_contract(spec, np.asarray(a[lhs]), np.asarray(a[rhs]), None if init is None else np.asarray(a[init]))
        if reshape is not None:
            s, m = reshape(s), reshape(m)
        return {out: summed(s, m, t, k + 1, products=True)}

    return model


def combine(*models: Model) -> Model:
    """One model from several, each giving some of the outputs."""

    def model(a: Inputs) -> dict[str, Expected]:
        out: dict[str, Expected] = {}
        for m in models:
            out.update(m(a))
        return out

    return model
