"""Negative tests generated from an op's typed constraints.

For each typed constraint Ck of an op (`Constraint.check`), find operand and result types
that satisfy the constraints before it and break Ck, build the op with `ktir.builder` and
print it: verifying that text must report exactly `<op>.Ck`. So a new op whose constraints
are typed gets its negative tests without writing any.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from ktir.builder import Builder
from ktir.dialects.base import OpDef
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.syntax.printer import print_module

_SCALARS: tuple[Type, ...] = (
    ty.F16, ty.F32, ty.FloatType(kind="f64"), ty.FloatType(kind="bf16"), ty.I1, ty.IntegerType(width=8),
    ty.I32, ty.IntegerType(width=64), ty.INDEX, ty.IntegerType(width=32, signedness="signed"),
)
POOL: tuple[Type, ...] = (
    *_SCALARS,
    ty.TensorType(shape=(4,), element_type=ty.F32),
    ty.TensorType(shape=(4,), element_type=ty.F16),
    ty.TensorType(shape=(2, 2), element_type=ty.F32),
    ty.TensorType(shape=(4,), element_type=ty.I32),
    ty.TensorType(shape=(4,), element_type=ty.INDEX),
    ty.MemRefType(shape=(4,), element_type=ty.F32),
)


@dataclass(frozen=True)
class NegativeCase:
    op: str
    expected: str  # the constraint ID, e.g. "math.exp.C2"
    text: str  # a whole module whose only error is `expected`


def _candidates(n_in: int, n_out: int) -> Iterator[tuple[list[Type], list[Type]]]:
    """Operand and result types to try: all operands one type, the results another; then
    the first operand differing from the rest."""
    for a, r in itertools.product(POOL, repeat=2):
        yield [a] * n_in, [r] * n_out
    for a, b in itertools.product(POOL, repeat=2):
        if n_in > 1:
            yield [a] + [b] * (n_in - 1), [b] * n_out


def _show(t: Type) -> str:
    return repr(t)


def negative_cases(op: OpDef) -> list[NegativeCase]:
    """One case per typed constraint of `op` that some type assignment breaks."""
    checked = op.checked_constraints()
    if not checked or any(x.variadic or getattr(x, "optional", False) for x in (*op.operands, *op.results)):
        return []
    cases = []
    for k, constraint in enumerate(checked):
        assert constraint.check is not None
        for ins, outs in _candidates(len(op.operands), len(op.results)):
            earlier = all(c.check is not None and c.check.violation(op, ins, outs, _show) is None for c in checked[:k])
            if earlier and constraint.check.violation(op, ins, outs, _show) is not None:
                cases.append(NegativeCase(op.name, f"{op.name}.{constraint.id}", _module_text(op, ins, outs)))
                break
    return cases


def _module_text(op: OpDef, ins: list[Type], outs: list[Type]) -> str:
    b = Builder()
    with b.func("negative", [(f"x{i}", t) for i, t in enumerate(ins)]) as args:
        b.create(op.name, list(args), outs, {})
        b.func_return()
    return print_module(b.module)
