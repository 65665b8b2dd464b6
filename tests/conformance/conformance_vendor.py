"""A deliberately wrong "vendor" implementation, written from outside the suite: the reference
interpreter with one behaviour changed the way real hardware or a real compiler gets it wrong.

Each class is an adapter (`python:conformance_vendor:NAME`) that wraps the reference
interpreter and perturbs one behaviour while a case runs: the op kernels it names are wrapped
so that their results come out as the vendor's would. Nothing here reads the suite's cases or
goldens; tests/conformance/test_conformance_vendor.py checks that the suite rejects each one
at the level where the behaviour matters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import ml_dtypes
import numpy as np

from conformance.adapters import ReferenceAdapter

# what a wrapped op's kernel hands on after it ran: (op name, operand values, result values,
# result element types) -> the result values the vendor's hardware gives instead
Change = Callable[[str, list[Any], list[Any], list[Any]], list[Any]]


def _as_before(before: Any, new: np.ndarray) -> Any:
    """`new` in the representation the interpreter kept the value in (array, numpy scalar or
    Python number)."""
    if isinstance(before, np.ndarray):
        return new.astype(before.dtype, copy=False).reshape(before.shape)
    if isinstance(before, np.generic):
        return new.astype(before.dtype).reshape(())[()]
    if isinstance(before, bool):
        return bool(new)
    if isinstance(before, int):
        return int(new)
    if isinstance(before, float):
        return float(new)
    return new


def numpy_type(t: Any) -> np.dtype[Any]:
    from reference_interp.dtypes import np_dtype

    return np.dtype(np_dtype(t))


@contextlib.contextmanager
def _wrapped(ops: tuple[str, ...], change: Change) -> Iterator[None]:
    """While active, the kernels of `ops` run as before and then hand their results to `change`."""
    import reference_interp.ops  # noqa: F401  (registers the op kernels)
    from ktir.ir import types as ty
    from reference_interp.compiler import FACTORIES, Blocking

    saved = {name: FACTORIES[name] for name in ops if name in FACTORIES}

    def wrap(factory: Any) -> Any:
        def make(c: Any, op: Any) -> Any:
            run = factory(c, op)
            if isinstance(run, Blocking):
                return run
            ins, outs = c.operand_slots(op), c.result_slots(op)
            types = [ty.element_type(c.type(t)) for t in op.result_types]

            def vendor(fr: list[Any]) -> None:
                run(fr)
                new = change(op.name, [fr[s] for s in ins], [fr[s] for s in outs], types)
                for s, v in zip(outs, new, strict=True):
                    fr[s] = v
            return vendor
        return make

    try:
        for name, factory in saved.items():
            FACTORIES[name] = wrap(factory)
        yield
    finally:
        FACTORIES.update(saved)


class Vendor(ReferenceAdapter):
    """The reference, with the results of `OPS` passed through `change`."""

    name = "vendor"
    OPS: tuple[str, ...] = ()

    def change(self, op: str, operands: list[Any], results: list[Any], types: list[Any]) -> list[Any]:
        raise NotImplementedError

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        with _wrapped(self.OPS, self.change):
            return super().run(source, filename, function, inputs)


FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32), np.dtype(np.float64))


class FlushesSubnormals(Vendor):
    """Flush to zero: every arithmetic result below the smallest normal number becomes a zero
    of its sign (the default mode of many accelerators)."""

    name = "flushes-subnormals"
    OPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.extf", "arith.truncf",
           "math.fma", "math.sqrt", "math.exp", "linalg.add", "linalg.sub", "linalg.mul", "linalg.div",
           "linalg.matmul", "linalg.reduce")

    def change(self, op: str, operands: list[Any], results: list[Any], types: list[Any]) -> list[Any]:
        out = []
        for r, t in zip(results, types, strict=True):
            dt = numpy_type(t)
            if dt not in FLOATS:
                out.append(r)
                continue
            wide = np.asarray(r).astype(np.float64)
            tiny = float(ml_dtypes.finfo(dt).smallest_normal)
            flushed = np.where((wide != 0) & (np.abs(wide) < tiny), np.copysign(0.0, wide), wide)
            out.append(_as_before(r, flushed.astype(dt)))
        return out


class RoundsTowardZero(Vendor):
    """+ - * / of f16, bf16 and f32 rounded toward zero instead of to nearest (a cheaper adder
    and multiplier)."""

    name = "rounds-toward-zero"
    EXACT = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide}
    OPS = tuple(EXACT)

    def change(self, op: str, operands: list[Any], results: list[Any], types: list[Any]) -> list[Any]:
        (r,), dt = results, numpy_type(types[0])
        if dt not in FLOATS[:3]:  # f64 has no wider type to round from here
            return results
        with np.errstate(all="ignore"):
            # float64 is exact for + - * of f16 and bf16 and for * of f32, and within 2^-53 otherwise
            wide = self.EXACT[op](*(np.asarray(x).astype(np.float64) for x in operands))
            near = np.asarray(r).astype(np.float64)
            # where rounding to nearest went away from zero, step one value back toward zero
            away = np.isfinite(near) & np.isfinite(wide) & (np.abs(near) > np.abs(wide))
            back = np.nextafter(np.asarray(r).astype(dt), np.zeros((), dt)).astype(np.float64)
            overflowed = np.isinf(near) & np.isfinite(wide)  # toward zero never overflows
            out = np.where(away, back, np.where(overflowed, np.copysign(float(ml_dtypes.finfo(dt).max), wide), near))
        return [_as_before(r, out.astype(dt))]


class Index32(Vendor):
    """`index` is 32 bits wide: index arithmetic and casts to index wrap modulo 2^32."""

    name = "index-32"
    OPS = ("arith.addi", "arith.subi", "arith.muli", "arith.index_cast", "arith.index_castui")

    def change(self, op: str, operands: list[Any], results: list[Any], types: list[Any]) -> list[Any]:
        from ktir.ir import types as ty

        return [_as_before(r, np.asarray(r).astype(np.int64).astype(np.int32).astype(np.int64))
                if isinstance(t, ty.IndexType) else r for r, t in zip(results, types, strict=True)]


class NanIgnoringMax(Vendor):
    """max and min of floats skip a NaN operand (the IEEE 754-2008 maxNum of many ALUs) where
    `arith.maximumf`, `arith.minimumf`, `linalg.max` and `linalg.min` must propagate it."""

    name = "nan-ignoring-max"
    SKIPPING = {"arith.maximumf": np.fmax, "linalg.max": np.fmax, "arith.minimumf": np.fmin, "linalg.min": np.fmin}
    OPS = tuple(SKIPPING)

    def change(self, op: str, operands: list[Any], results: list[Any], types: list[Any]) -> list[Any]:
        if not results:  # linalg on memrefs: writes its output operand (not in the suite's core cases)
            return results
        (r,) = results
        a, b = (np.asarray(x).astype(np.float64) for x in operands[:2])  # linalg's third operand is the init
        with np.errstate(all="ignore"):
            skipped = self.SKIPPING[op](a, b)
        got = np.asarray(r).astype(np.float64)
        return [_as_before(r, np.where(np.isnan(a) | np.isnan(b), skipped, got).astype(numpy_type(types[0])))]
