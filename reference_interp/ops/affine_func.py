"""`func.call` and the `affine` apply/min/max ops (`func.return` is a block terminator)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ktir.dialects.access import named
from ktir.dialects.names import Affine, Func
from ktir.ir import attributes as at
from ktir.ir.operation import Operation

from ..affine_eval import compile_map
from ..compiler import Blocking, FuncCompiler, OpFn, impl
from ..errors import CompileError, fail


@impl(Func.call, shape_only=lambda op: set(named(op).operand_positions("operands")))
def call(c: FuncCompiler, op: Operation) -> OpFn | Blocking:
    args = c.operand_group(op, "operands")
    res = c.result_slots(op)
    callee = op.attributes.get("callee")
    if not isinstance(callee, at.SymbolRefAttr) or callee.nested:
        raise CompileError("func.call needs a flat symbol callee", op)
    name = callee.root
    if name not in c.program.funcs:
        raise CompileError(f"call to unknown function @{name}", op)
    program = c.program
    options = c.options
    blocking = program.func_blocks(name)

    def enter(fr: list[Any]) -> Any:
        ctx = fr[0]
        if ctx.depth >= options.max_call_depth:
            raise fail("memory-limit", f"call depth exceeds {options.max_call_depth} (recursion?)")
        fn = program.function(name, options)
        return fn, fn.frame(ctx, [fr[s] for s in args])

    def finish(fr: list[Any], fn: Any, inner: list[Any]) -> None:
        values = fn.body.results(inner)
        if len(values) != len(res):
            raise fail("type", f"@{name} returned {len(values)} value(s), the call expects {len(res)}")
        for r, v in zip(res, values, strict=True):
            fr[r] = v

    if blocking:
        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            fn, inner = enter(fr)
            fr[0].depth += 1
            try:
                yield from fn.body.gen(inner)
            finally:
                fr[0].depth -= 1
            finish(fr, fn, inner)
        return Blocking(gen)

    def run(fr: list[Any]) -> None:
        fn, inner = enter(fr)
        fr[0].depth += 1
        try:
            fn.body.run(inner)
        finally:
            fr[0].depth -= 1
        finish(fr, fn, inner)

    return run


def compiled_map(c: FuncCompiler, op: Operation) -> tuple[tuple[int, ...], int, Callable[..., tuple[Any, ...]]]:
    """An `affine.apply`/`min`/`max`'s operand slots, result slot and compiled map (the lockstep
    form, lockstep_tensor.py, compiles the same)."""
    slots = c.operand_group(op, "map_operands")
    (r,) = c.result_slots(op)
    attr = c.need_attr(op, "map")
    if not isinstance(attr, at.AffineMapAttr):
        raise CompileError("map must be an affine_map", op)
    m = attr.value
    if m.num_dims + m.num_symbols != len(slots):
        raise CompileError(f"the map takes {m.num_dims + m.num_symbols} operands, {len(slots)} given", op)
    if op.name == Affine.apply and len(m.results) != 1:
        raise CompileError("affine.apply needs a single-result map", op)
    return slots, r, compile_map(m)


@impl(Affine.apply, Affine.min, Affine.max)
def affine_apply(c: FuncCompiler, op: Operation) -> OpFn:
    slots, r, fn = compiled_map(c, op)
    if op.name == Affine.apply:
        if len(slots) == 1:
            (a,) = slots

            def run1(fr: list[Any]) -> None:
                fr[r] = fn(fr[a])[0]
            return run1

        def run(fr: list[Any]) -> None:
            fr[r] = fn(*[fr[s] for s in slots])[0]
        return run
    pick = min if op.name == Affine.min else max

    def run_minmax(fr: list[Any]) -> None:
        fr[r] = pick(fn(*[fr[s] for s in slots]))

    return run_minmax
