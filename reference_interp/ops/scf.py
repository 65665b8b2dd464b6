"""`scf`: structured control flow.

`scf.parallel` and `scf.forall` iterations are independent by definition; the
interpreter runs them in lexicographic order (one valid schedule). In vector mode
(inside a linalg body) an `scf.if` on a vector condition runs both branches and selects
elementwise (bodies are pure).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Generator
from typing import Any

import numpy as np

from ktir.dialects.access import named
from ktir.dialects.names import Scf
from ktir.ir import attributes as at
from ktir.ir.operation import Operation

from ..compiler import Blocking, CBlock, FuncCompiler, OpFn, impl
from ..errors import CompileError, fail
from .common import int_array


def _for_inits(op: Operation) -> set[int]:
    return set(named(op).operand_positions("init_args"))


@impl(Scf.for_, shape_only=_for_inits)
def scf_for(c: FuncCompiler, op: Operation) -> OpFn | Blocking:
    lb, ub, st = (c.operand_slot(op, n) for n in ("lower_bound", "upper_bound", "step"))
    inits = c.operand_group(op, "init_args")
    res = c.result_slots(op)
    body = c.compile_region(op.regions[0], c.vector)
    if len(body.arg_slots) != 1 + len(inits) or len(body.term_slots) != len(inits):
        raise CompileError("scf.for: the body's arguments and yields must match the iter_args", op)
    iv = body.arg_slots[0]
    carried = body.arg_slots[1:]
    ys = body.term_slots
    pairs = tuple(zip(carried, inits, strict=True))
    outs = tuple(zip(res, carried, strict=True))

    def bounds(fr: list[Any]) -> range:
        lo, hi, step = int(fr[lb]), int(fr[ub]), int(fr[st])
        if step <= 0:
            raise fail("undefined", f"scf.for step {step} is not positive")
        _within_step_limit(fr[0], trip_count(lo, hi, step), body.n)
        return range(lo, hi, step)

    if body.blocking:
        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            for s, i in pairs:
                fr[s] = fr[i]
            for v in bounds(fr):
                fr[iv] = v
                yield from body.gen(fr)
                vals = [fr[y] for y in ys]
                for s, x in zip(carried, vals, strict=True):
                    fr[s] = x
            for r, s in outs:
                fr[r] = fr[s]
        return Blocking(gen)

    run_body = body.run
    if not inits:
        def run0(fr: list[Any]) -> None:
            for v in bounds(fr):
                fr[iv] = v
                run_body(fr)
        return run0
    if len(inits) == 1:
        (c0,) = carried
        (y0,) = ys
        (i0,) = inits
        (r0,) = res

        def run1(fr: list[Any]) -> None:
            fr[c0] = fr[i0]
            for v in bounds(fr):
                fr[iv] = v
                run_body(fr)
                fr[c0] = fr[y0]
            fr[r0] = fr[c0]
        return run1

    def run(fr: list[Any]) -> None:
        for s, i in pairs:
            fr[s] = fr[i]
        for v in bounds(fr):
            fr[iv] = v
            run_body(fr)
            vals = [fr[y] for y in ys]
            for s, x in zip(carried, vals, strict=True):
                fr[s] = x
        for r, s in outs:
            fr[r] = fr[s]

    return run


def trip_count(lo: int, hi: int, step: int) -> int:
    """len(range(lo, hi, step)) for a positive step, at any size (len raises OverflowError
    past 2^63 trips: bounds near INT64_MIN and INT64_MAX)."""
    return max(0, -((lo - hi) // step))


def _within_step_limit(ctx: Any, trips: int, ops: int, what: str = Scf.for_) -> None:
    """A loop whose trips alone would pass the step limit fails at once, not after running
    until the limit (at ~1 µs an op, minutes for the default limit): every trip executes at
    least the body's `ops` ops, so it would certainly fail there."""
    left = ctx.step_limit - ctx.steps
    if trips * ops > left:
        raise fail("step-limit", f"this {what} would run {trips:,} iterations of at least {ops} ops, more than the "
                   f"{max(left, 0):,} ops left of the step limit {ctx.step_limit:,} (raise it, step_limit= or "
                   "--step-limit, if the program is meant to run this long)")


@impl(Scf.if_, shape_only=lambda op: set())
def scf_if(c: FuncCompiler, op: Operation) -> OpFn | Blocking:
    k = c.operand_slot(op, "condition")
    res = c.result_slots(op)
    then = c.compile_region(op.regions[0], c.vector)
    other = c.compile_region(op.regions[1], c.vector) if len(op.regions) > 1 and op.regions[1].blocks else None
    if res and other is None:
        raise CompileError("scf.if with results needs an else region", op)

    def finish(fr: list[Any], block: CBlock) -> None:
        for r, y in zip(res, block.term_slots, strict=True):
            fr[r] = fr[y]

    if then.blocking or (other is not None and other.blocking):
        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            if fr[k]:
                yield from then.gen(fr)
                finish(fr, then)
            elif other is not None:
                yield from other.gen(fr)
                finish(fr, other)
        return Blocking(gen)

    vector = c.vector

    def run(fr: list[Any]) -> None:
        cond = fr[k]
        if vector and isinstance(cond, np.ndarray) and cond.ndim:
            then.run(fr)
            a = then.results(fr)
            if other is None:
                return
            other.run(fr)
            b = other.results(fr)
            for r, x, y in zip(res, a, b, strict=True):
                fr[r] = np.where(cond, x, y)
            return
        if cond:
            then.run(fr)
            finish(fr, then)
        elif other is not None:
            other.run(fr)
            finish(fr, other)

    return run


@impl(Scf.while_, shape_only=lambda op: set(named(op).operand_positions("inits")))
def scf_while(c: FuncCompiler, op: Operation) -> OpFn | Blocking:
    inits = c.operand_group(op, "inits")
    res = c.result_slots(op)
    before = c.compile_region(op.regions[0], c.vector)
    after = c.compile_region(op.regions[1], c.vector)
    if before.term is None or before.term.name != Scf.condition:
        raise CompileError("scf.while: the before region must end in scf.condition", op)
    cond_slot, *passed = before.term_slots

    if before.blocking or after.blocking:
        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            vals = [fr[i] for i in inits]
            while True:
                for s, v in zip(before.arg_slots, vals, strict=True):
                    fr[s] = v
                yield from before.gen(fr)
                out = [fr[s] for s in passed]
                if not fr[cond_slot]:
                    break
                for s, v in zip(after.arg_slots, out, strict=True):
                    fr[s] = v
                yield from after.gen(fr)
                vals = after.results(fr)
            for r, v in zip(res, out, strict=True):
                fr[r] = v
        return Blocking(gen)

    def run(fr: list[Any]) -> None:
        vals = [fr[i] for i in inits]
        while True:
            for s, v in zip(before.arg_slots, vals, strict=True):
                fr[s] = v
            before.run(fr)
            out = [fr[s] for s in passed]
            if not fr[cond_slot]:
                break
            for s, v in zip(after.arg_slots, out, strict=True):
                fr[s] = v
            after.run(fr)
            vals = after.results(fr)
        for r, v in zip(res, out, strict=True):
            fr[r] = v

    return run


@impl(Scf.execute_region)
def execute_region(c: FuncCompiler, op: Operation) -> OpFn | Blocking:
    res = c.result_slots(op)
    body = c.compile_region(op.regions[0], c.vector)
    if body.blocking:
        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            yield from body.gen(fr)
            for r, y in zip(res, body.term_slots, strict=True):
                fr[r] = fr[y]
        return Blocking(gen)

    def run(fr: list[Any]) -> None:
        body.run(fr)
        for r, y in zip(res, body.term_slots, strict=True):
            fr[r] = fr[y]

    return run


@impl(Scf.parallel, shape_only=lambda op: set())
def scf_parallel(c: FuncCompiler, op: Operation) -> OpFn:
    lbs, ubs, sts, inits = (c.operand_group(op, n) for n in ("lower_bounds", "upper_bounds", "steps", "init_vals"))
    res = c.result_slots(op)
    body = c.compile_region(op.regions[0], c.vector)
    if body.blocking:
        raise CompileError("inter-tile ops inside scf.parallel are not supported", op)
    red = body.term
    combiners: list[CBlock] = []
    red_slots: tuple[int, ...] = ()
    if red is not None and red.name == Scf.reduce:
        red_slots = c.operand_slots(red)
        combiners = [c.compile_region(r, c.vector) for r in red.regions]
    if len(red_slots) != len(inits) or len(combiners) != len(inits):
        raise CompileError("scf.parallel: scf.reduce needs one operand and one combiner per init value", op)

    def run(fr: list[Any]) -> None:
        ranges = []
        for lo, hi, st in zip(lbs, ubs, sts, strict=True):
            step = int(fr[st])
            if step <= 0:
                raise fail("undefined", f"scf.parallel step {step} is not positive")
            ranges.append(range(int(fr[lo]), int(fr[hi]), step))
        # Before itertools.product, which makes a tuple of each range (OverflowError past 2^63 points).
        _within_step_limit(fr[0], math.prod(trip_count(r.start, r.stop, r.step) for r in ranges), max(body.n, 1),
                           Scf.parallel)
        acc = [fr[i] for i in inits]
        for point in itertools.product(*ranges):
            for s, v in zip(body.arg_slots, point, strict=True):
                fr[s] = v
            body.run(fr)
            for j, comb in enumerate(combiners):
                lhs, rhs = comb.arg_slots
                fr[lhs], fr[rhs] = acc[j], fr[red_slots[j]]
                comb.run(fr)
                acc[j] = fr[comb.term_slots[0]]
        for r, v in zip(res, acc, strict=True):
            fr[r] = v

    return run


@impl(Scf.forall, shape_only=lambda op: set(range(len(op.operands))))
def scf_forall(c: FuncCompiler, op: Operation) -> OpFn:
    dyn = [s for n in ("dynamic_lower_bound", "dynamic_upper_bound", "dynamic_step") for s in c.operand_group(op, n)]
    outs = c.operand_group(op, "outputs")
    res = c.result_slots(op)
    lbs = _static_or_dyn(c.attr(op, "staticLowerBound"))
    ubs = _static_or_dyn(c.attr(op, "staticUpperBound"))
    sts = _static_or_dyn(c.attr(op, "staticStep"))
    body = c.compile_region(op.regions[0], c.vector)
    if body.blocking:
        raise CompileError("inter-tile ops inside scf.forall are not supported", op)
    n_iv = len(body.arg_slots) - len(outs)
    iv_slots = body.arg_slots[:n_iv]
    out_args = body.arg_slots[n_iv:]
    term = body.term
    inserts: CBlock | None = None
    if term is not None and term.regions:
        inserts = c.compile_region(term.regions[0], c.vector)

    def run(fr: list[Any]) -> None:
        it = iter(dyn)
        vals = [[int(fr[next(it)]) if v is None else v for v in arr] for arr in (lbs, ubs, sts)]
        ranges = []
        for lo, hi, st in zip(*vals, strict=True):
            if st <= 0:
                raise fail("undefined", f"scf.forall step {st} is not positive")
            ranges.append(range(lo, hi, st))
        _within_step_limit(fr[0], math.prod(trip_count(r.start, r.stop, r.step) for r in ranges), max(body.n, 1),
                           Scf.forall)
        for s, o in zip(out_args, outs, strict=True):
            fr[s] = fr[o]
        for point in itertools.product(*ranges):
            for s, v in zip(iv_slots, point, strict=True):
                fr[s] = v
            body.run(fr)
            if inserts is not None:
                inserts.run(fr)
        for r, s in zip(res, out_args, strict=True):
            fr[r] = fr[s]

    return run


def _static_or_dyn(attr: at.Attribute | None) -> list[int | None]:
    from ktir.ir.types import KDYNAMIC

    if attr is None:
        return []
    return [None if v == KDYNAMIC else v for v in int_array(attr)]
