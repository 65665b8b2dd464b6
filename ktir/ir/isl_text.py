"""Affine expressions and integer sets as isl (islpy) text, for the solvers of the
verifier and the interpreter. Only affine forms are written: a product of two non-constant
terms, or a division by a non-constant or non-positive number, raises NotAffine, and so
does a dimension or symbol the caller supplies no name for (an ill-formed program, whose
counts the verifier reports separately)."""

from __future__ import annotations

from collections.abc import Sequence

from ktir.ir import affine as af


class NotAffine(Exception):
    pass


def isl_expr(expr: af.AffineExpr, dims: Sequence[str], syms: Sequence[str]) -> str:
    if isinstance(expr, af.Const):
        return str(expr.value)
    if isinstance(expr, af.Dim):
        return _name(dims, expr.position, "d")
    if isinstance(expr, af.Symbol):
        return _name(syms, expr.position, "s")
    assert isinstance(expr, af.Binary)
    lhs = isl_expr(expr.lhs, dims, syms)
    if expr.kind == "add":
        return f"({lhs} + {isl_expr(expr.rhs, dims, syms)})"
    if isinstance(expr.rhs, af.Const):
        c = expr.rhs.value
        if expr.kind == "mul":
            return f"({c} * {lhs})"
        if c <= 0:
            raise NotAffine(f"{expr.kind} by a non-positive constant")
        if expr.kind == "floordiv":
            return f"floor(({lhs}) / {c})"
        if expr.kind == "ceildiv":
            return f"ceil(({lhs}) / {c})"
        return f"(({lhs}) mod {c})"
    if expr.kind == "mul" and isinstance(expr.lhs, af.Const):
        return f"({expr.lhs.value} * {isl_expr(expr.rhs, dims, syms)})"
    raise NotAffine("a product or division of two non-constant terms")


def _name(names: Sequence[str], position: int, prefix: str) -> str:
    if not 0 <= position < len(names):
        kind = "dimension" if prefix == "d" else "symbol"
        raise NotAffine(f"{prefix}{position} is used but only {len(names)} {kind} value(s) are given")
    return names[position]


def isl_constraints(iset: af.IntegerSet, dims: Sequence[str], syms: Sequence[str]) -> list[str]:
    return [f"{isl_expr(c.expr, dims, syms)} {'=' if c.is_equality else '>='} 0" for c in iset.constraints]
