"""Affine expressions, maps and integer sets, in MLIR's canonical form.

Expressions are built through the smart constructors (`add`, `mul`, ...), which apply
the same simplifications MLIR applies on construction (constant folding, constants on
the right, `a - b` as `a + b * -1`). Because parsing goes through these constructors
and printing inverts them, parse -> print -> parse is a fixpoint.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

BinaryKind = Literal["add", "mul", "mod", "floordiv", "ceildiv"]


class AffineExpr(BaseModel):
    model_config = ConfigDict(frozen=True)

    def __add__(self, other: AffineExpr | int) -> AffineExpr:
        return add(self, _lift(other))

    def __radd__(self, other: int) -> AffineExpr:
        return add(_lift(other), self)

    def __sub__(self, other: AffineExpr | int) -> AffineExpr:
        return sub(self, _lift(other))

    def __mul__(self, other: AffineExpr | int) -> AffineExpr:
        return mul(self, _lift(other))

    def __rmul__(self, other: int) -> AffineExpr:
        return mul(_lift(other), self)

    def __neg__(self) -> AffineExpr:
        return mul(self, const(-1))

    def floordiv(self, other: AffineExpr | int) -> AffineExpr:
        return binary("floordiv", self, _lift(other))

    def ceildiv(self, other: AffineExpr | int) -> AffineExpr:
        return binary("ceildiv", self, _lift(other))

    def mod(self, other: AffineExpr | int) -> AffineExpr:
        return binary("mod", self, _lift(other))


class Dim(AffineExpr):
    position: int


class Symbol(AffineExpr):
    position: int


class Const(AffineExpr):
    value: int


class Binary(AffineExpr):
    kind: BinaryKind
    lhs: AffineExpr
    rhs: AffineExpr


def _lift(value: AffineExpr | int) -> AffineExpr:
    return value if isinstance(value, AffineExpr) else const(value)


# Leaves are frozen and few: each distinct one is built (and validated) once.
@functools.lru_cache(maxsize=1024)
def dim(position: int) -> Dim:
    return Dim(position=position)


@functools.lru_cache(maxsize=1024)
def sym(position: int) -> Symbol:
    return Symbol(position=position)


@functools.lru_cache(maxsize=4096)
def const(value: int) -> Const:
    return Const(value=value)


def _floordiv_int(a: int, b: int) -> int:
    return a // b


def _ceildiv_int(a: int, b: int) -> int:
    return -((-a) // b)


def _mod_int(a: int, b: int) -> int:
    # MLIR's `mod` is the non-negative remainder for positive divisors.
    return a % b


_FOLD: dict[str, Callable[[int, int], int]] = {
    "floordiv": _floordiv_int,
    "ceildiv": _ceildiv_int,
    "mod": _mod_int,
}


def add(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        return const(lhs.value + rhs.value)
    if isinstance(lhs, Const):
        lhs, rhs = rhs, lhs
    if isinstance(rhs, Const) and rhs.value == 0:
        return lhs
    # (x + c1) + c2 -> x + (c1 + c2)
    if (
        isinstance(rhs, Const)
        and isinstance(lhs, Binary)
        and lhs.kind == "add"
        and isinstance(lhs.rhs, Const)
    ):
        return add(lhs.lhs, const(lhs.rhs.value + rhs.value))
    return Binary(kind="add", lhs=lhs, rhs=rhs)


def mul(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        return const(lhs.value * rhs.value)
    if isinstance(lhs, Const):
        lhs, rhs = rhs, lhs
    if isinstance(rhs, Const):
        if rhs.value == 1:
            return lhs
        if rhs.value == 0:
            return rhs
        # (x * c1) * c2 -> x * (c1 * c2)
        if isinstance(lhs, Binary) and lhs.kind == "mul" and isinstance(lhs.rhs, Const):
            return mul(lhs.lhs, const(lhs.rhs.value * rhs.value))
    return Binary(kind="mul", lhs=lhs, rhs=rhs)


def sub(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    return add(lhs, mul(rhs, const(-1)))


def binary(kind: BinaryKind, lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    if kind == "add":
        return add(lhs, rhs)
    if kind == "mul":
        return mul(lhs, rhs)
    if isinstance(lhs, Const) and isinstance(rhs, Const) and rhs.value > 0:
        return const(_FOLD[kind](lhs.value, rhs.value))
    if isinstance(rhs, Const) and rhs.value == 1 and kind != "mod":
        return lhs
    return Binary(kind=kind, lhs=lhs, rhs=rhs)


class AffineMap(BaseModel):
    model_config = ConfigDict(frozen=True)
    num_dims: int
    num_symbols: int
    results: tuple[AffineExpr, ...]

    @classmethod
    def identity(cls, rank: int) -> AffineMap:
        return cls(num_dims=rank, num_symbols=0, results=tuple(dim(i) for i in range(rank)))

    def is_permutation(self) -> bool:
        if self.num_symbols or len(self.results) != self.num_dims:
            return False
        positions = sorted(r.position for r in self.results if isinstance(r, Dim))
        return positions == list(range(self.num_dims))


class Constraint(BaseModel):
    """`expr == 0` when `is_equality`, else `expr >= 0`."""

    model_config = ConfigDict(frozen=True)
    expr: AffineExpr
    is_equality: bool


class IntegerSet(BaseModel):
    model_config = ConfigDict(frozen=True)
    num_dims: int
    num_symbols: int
    constraints: tuple[Constraint, ...]


def constraint(lhs: AffineExpr, op: Literal["==", ">=", "<="], rhs: AffineExpr) -> Constraint:
    """Canonicalise `lhs op rhs` to `e == 0` or `e >= 0` as MLIR does."""
    if op == "<=":
        return Constraint(expr=sub(rhs, lhs), is_equality=False)
    expr = lhs if isinstance(rhs, Const) and rhs.value == 0 else sub(lhs, rhs)
    return Constraint(expr=expr, is_equality=op == "==")


def bound_problem(expr: AffineExpr, max_depth: int, max_constant: int) -> str | None:
    """Why `expr` is out of bounds, or None: more than `max_depth` levels (a leaf is one)
    or a constant beyond +-`max_constant`. Found without recursion: text can chain any
    number of terms (`d0 + d0 + ...` is as deep as it is long), and the recursive walkers
    below are safe only on bounded depths."""
    stack = [(expr, 1)]
    while stack:
        e, d = stack.pop()
        if d > max_depth:
            return f"affine expression nested deeper than {max_depth} levels"
        if isinstance(e, Binary):
            stack.append((e.lhs, d + 1))
            stack.append((e.rhs, d + 1))
        elif isinstance(e, Const) and not -max_constant - 1 <= e.value <= max_constant:
            return f"affine constant {e.value} does not fit in 64 bits"
    return None


# ---------------------------------------------------------------- evaluation


def evaluate(expr: AffineExpr, dims: Sequence[int], symbols: Sequence[int] = ()) -> int:
    """Evaluate on integers; used by tests and by the interpreter's slow paths."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Dim):
        return dims[expr.position]
    if isinstance(expr, Symbol):
        return symbols[expr.position]
    assert isinstance(expr, Binary)
    lhs = evaluate(expr.lhs, dims, symbols)
    rhs = evaluate(expr.rhs, dims, symbols)
    if expr.kind == "add":
        return lhs + rhs
    if expr.kind == "mul":
        return lhs * rhs
    if rhs == 0:
        raise ZeroDivisionError(f"affine {expr.kind} by zero")
    return _FOLD[expr.kind](lhs, rhs)


Linear = tuple[dict[int, int], dict[int, int], int]
"""The linear form of an affine expression: dim coefficients, symbol coefficients, constant."""


def linear(expr: AffineExpr) -> Linear | None:
    """The linear form of `expr` (zero coefficients dropped), or None when it uses floordiv,
    ceildiv, mod or a product of two non-constants."""
    if isinstance(expr, Const):
        return {}, {}, expr.value
    if isinstance(expr, Dim):
        return {expr.position: 1}, {}, 0
    if isinstance(expr, Symbol):
        return {}, {expr.position: 1}, 0
    if not isinstance(expr, Binary) or expr.kind not in ("add", "mul"):
        return None
    a, b = linear(expr.lhs), linear(expr.rhs)
    if a is None or b is None:
        return None
    if expr.kind == "add":
        return _merge(a[0], b[0]), _merge(a[1], b[1]), a[2] + b[2]
    if a[0] or a[1]:
        a, b = b, a
    if a[0] or a[1]:
        return None
    k = a[2]
    return ({i: c * k for i, c in b[0].items() if c * k}, {i: c * k for i, c in b[1].items() if c * k}, b[2] * k)


def _merge(x: dict[int, int], y: dict[int, int]) -> dict[int, int]:
    out = dict(x)
    for k, v in y.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v != 0}
