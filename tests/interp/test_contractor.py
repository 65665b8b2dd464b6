"""The per-op contraction (ops/linalg.contractor) against the general one (ops/linalg._contract):
the same bits (compared byte for byte, NaN payloads included) or the same error, for every
named contraction spec and transposed ones, operand types f16/bf16/f8/f32/f64/int, f16/f32/f64
accumulators and results, raw random bits (NaN, infinities, subnormals), mismatched shapes,
with and without the run's cache of widened boxes, and one contractor fed a sequence of
different operand types (its per-type specialisations must not leak into each other).
Both sides call the same BLAS on the same machine: no dependence on BLAS's own bits.

End to end: a box that is loaded, contracted, overwritten by a store and loaded again (the
cache of widened boxes must not hand the old values to the second contraction).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference_interp as ri
from ktir.builder import Builder, box
from ktir.dialects.names import Linalg
from ktir.ir import types as ty
from reference_interp.half import WideCache
from reference_interp.ops.linalg import _NAMED_SPECS, _contract, _einsum2, _einsum_f32, contractor

from .helpers import FAST

SPECS = sorted(set(_NAMED_SPECS.values())) + ["ac,bc->ab", "ka,kb->ab"]
OPERAND_TYPES = [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float32,
                 np.float64, np.int8, np.int32]
ACC_TYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int32]


def _spec_shapes(spec: str, sizes: dict[str, int]) -> tuple[tuple[int, ...], ...]:
    ins, out = spec.split("->")
    a, b = ins.split(",")
    return tuple(tuple(sizes[ch] for ch in part) for part in (a, b, out))


@st.composite
def cases(draw: st.DrawFn, spec: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Operands for `spec` with random bits; sometimes one operand of a wrong shape; whether
    the narrow operands are noted as loaded boxes (the run's cache widens them)."""
    sizes = {ch: draw(st.integers(1, 6)) for ch in sorted(set(spec) - set(",->"))}
    shapes = list(_spec_shapes(spec, sizes))
    if draw(st.integers(0, 7)) == 0:  # a mismatch: both sides must fail alike
        which = draw(st.integers(0, 2))
        if shapes[which]:
            shapes[which] = shapes[which][:-1] + (shapes[which][-1] + 1,)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    types = [draw(st.sampled_from(OPERAND_TYPES)), draw(st.sampled_from(OPERAND_TYPES)), draw(st.sampled_from(ACC_TYPES))]
    arrays = []
    for shape, t in zip(shapes, types, strict=True):
        dt = np.dtype(t)
        n = int(np.prod(shape, dtype=np.int64))
        if draw(st.booleans()):  # raw bits: NaNs, infinities, subnormals
            a = np.frombuffer(rng.bytes(n * dt.itemsize), dtype=dt).reshape(shape).copy()
        else:  # ordinary values
            a = (rng.standard_normal(shape) * 4).astype(dt)
        if draw(st.booleans()) and a.ndim == 2 and a.shape[0] > 1:
            a = a[::-1]  # a strided view (not C-contiguous)
        arrays.append(a)
    return arrays[0], arrays[1], arrays[2], draw(st.booleans())


def _outcome(fn: Any) -> tuple[str, Any]:
    with np.errstate(all="ignore"):
        try:
            v = np.asarray(fn())
        except (ValueError, TypeError) as e:
            return "error", (type(e), str(e))
    return "value", (v.dtype, v.shape, v.tobytes())


def _caches(x: np.ndarray, y: np.ndarray, noted: bool) -> tuple[WideCache | None, WideCache | None]:
    if not noted:
        return None, None
    pair = []
    for _ in range(2):
        cache = WideCache()
        for i, v in enumerate((x, y)):
            cache.note(v, ("alloc", i, v.shape, v.strides, v.dtype))
        pair.append(cache)
    return pair[0], pair[1]


@FAST
@given(st.data(), st.sampled_from(SPECS), st.sampled_from([np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int32]),
       st.integers(1, 4))
def test_contractor_gives_contracts_bits_and_errors(data: st.DataObject, spec: str, out: type, calls: int) -> None:
    out_dt = np.dtype(out)
    contract = contractor(spec, out_dt)
    for _ in range(calls):  # one op, operands of changing types
        x, y, acc, noted = data.draw(cases(spec))
        mine, general = _caches(x, y, noted)
        for _ in range(2):  # a second call: the specialisation and the cache are reused
            got = _outcome(lambda: contract(x, y, acc, mine))  # noqa: B023
            want = _outcome(lambda: _contract(spec, x, y, acc, out_dt, general))  # noqa: B023
            assert got == want


def test_contractor_same_calls_on_a_sequence_of_types() -> None:
    """Operand types changing from call to call through one contractor (its memo of the last
    types seen, keyed on all three operands): each call the general contraction's bits."""
    rng = np.random.default_rng(7)
    contract = contractor("mk,kn->mn", np.dtype(np.float32))
    f16, f32, f64, bf16, i32 = np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int32
    # (large integers: int32 -> f32 rounds them, so a product taken in f64 would differ)
    for ta, tb, tc in ((f16, f16, f32), (f16, f64, f32), (f16, f16, f32), (f16, f16, f64), (f32, f32, f32),
                       (i32, f32, f32), (f32, f32, f32), (f32, i32, f32), (f32, f32, f32), (f32, f32, i32),
                       (f16, f16, f16), (bf16, f16, f32), (f16, bf16, f32), (f16, f16, f32)):
        x, y, acc = ((rng.standard_normal(shape) * 3).astype(t) if t != i32 else rng.integers(-2**30, 2**30, shape).astype(t)
                     for shape, t in (((5, 7), ta), ((7, 3), tb), ((5, 3), tc)))
        got = contract(x, y, acc, None)
        want = _contract("mk,kn->mn", x, y, acc, np.dtype(np.float32))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _reload_kernel(et: ty.Type, m: int, k: int, n: int):  # type: ignore[no-untyped-def]
    """C1 = A @ B; A's box overwritten with D; C2 = A' @ B (A' = the box loaded again)."""
    f32 = ty.F32
    acc_t = ty.TensorType(shape=(m, n), element_type=f32)
    b = Builder()
    with b.func("k", [("a", ty.INDEX), ("bm", ty.INDEX), ("d", ty.INDEX), ("c", ty.INDEX)], grid=[1]) as (ap, bp, dp, cp):
        va = b.memory_view(ap, [m, k], [k, 1], et, coordinate_set=box(m, k))
        vb = b.memory_view(bp, [k, n], [n, 1], et, coordinate_set=box(k, n))
        vd = b.memory_view(dp, [m, k], [k, 1], et, coordinate_set=box(m, k))
        vc = b.memory_view(cp, [2 * m, n], [n, 1], f32, coordinate_set=box(2 * m, n))
        ta = b.access_tile(va, [0, 0], box(m, k), [m, k])
        y = b.load(b.access_tile(vb, [0, 0], box(k, n), [k, n]), et)
        zero = b.fill(b.constant(0.0, f32), b.empty(acc_t))
        x1 = b.load(ta, et)
        c1 = b.dps(Linalg.matmul, [x1, y], [zero])
        b.store(b.load(b.access_tile(vd, [0, 0], box(m, k), [m, k]), et), ta)
        x2 = b.load(ta, et)
        c2 = b.dps(Linalg.matmul, [x2, y], [zero])
        b.store(c1, b.access_tile(vc, [0, 0], box(m, n), [m, n]))
        b.store(c2, b.access_tile(vc, [m, 0], box(m, n), [m, n]))
        b.func_return()
    return b.module


@FAST
@given(st.sampled_from(["f16", "bf16", "f8", "f32"]), st.integers(1, 40), st.integers(1, 70), st.integers(1, 9),
       st.integers(0, 2**32 - 1))
def test_a_box_stored_to_and_loaded_again_is_contracted_with_its_new_values(et_name: str, m: int, k: int, n: int,
                                                                         seed: int) -> None:
    et, t = {"f16": (ty.F16, np.float16), "bf16": (ty.BF16, ml_dtypes.bfloat16),
             "f8": (ty.F8E4M3FN, ml_dtypes.float8_e4m3fn), "f32": (ty.F32, np.float32)}[et_name]
    rng = np.random.default_rng(seed)
    # small integers: every sum is exact, whatever order BLAS adds in
    a, b, d = (rng.integers(-3, 4, shape).astype(t) for shape in ((m, k), (k, n), (m, k)))
    args = {"a": a, "bm": b, "d": d, "c": np.zeros((2 * m, n), np.float32)}
    got = ri.run(_reload_kernel(et, m, k, n), args=args).outputs["c"]
    f = np.float32
    want = np.concatenate([a.astype(f) @ b.astype(f), d.astype(f) @ b.astype(f)])
    assert np.array_equal(got, want)


EINSUM_CASES = [
    ("ac,bc->ab", [((1, 64), (128, 64)), ((7, 5), (3, 5))]),
    ("mk,nk->mn", [((37, 32), (48, 32)), ((2, 2), (2, 2))]),
    ("km,kn->mn", [((32, 64), (32, 48)), ((1, 1), (1, 9))]),
    ("mk,k->m", [((64, 32), (32,)), ((3, 4), (4,))]),
    ("k,k->", [((100,), (100,)), ((1,), (1,))]),
    ("bmk,bnk->bmn", [((3, 16, 8), (3, 24, 8)), ((1, 2, 3), (1, 4, 3))]),
    ("abc,acd->abd", [((2, 3, 4), (2, 4, 5)), ((1, 1, 1), (1, 1, 1))]),
    ("ab,ab->ab", [((5, 6), (5, 6)), ((1, 6), (1, 6))]),
]


@pytest.mark.parametrize(("spec", "shapes"), EINSUM_CASES)
def test_the_f32_einsum_replays_einsum2(spec: str, shapes: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> None:
    """_einsum_f32 (its plan kept while the shapes stay): _einsum2's bits, shapes alternating,
    and a non-f32 operand handed to _einsum2 itself."""
    run = _einsum_f32(spec)
    rng = np.random.default_rng(len(spec))
    for sa, sb in [*shapes, *shapes, shapes[0]]:
        for dt in (np.float32, np.float32, np.float64):
            a = (rng.standard_normal(sa) * 8).astype(dt)
            b = (rng.standard_normal(sb) * 8).astype(np.float32)
            got = np.asarray(run(a, b))
            want = np.asarray(_einsum2(spec, a, b))
            assert got.shape == want.shape and got.dtype == want.dtype and got.strides == want.strides
            assert got.tobytes() == want.tobytes()
