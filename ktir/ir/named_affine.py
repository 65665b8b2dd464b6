"""Affine expressions over named values (`%i + 2`, `symbol(%n)`) and the map they make.

MLIR writes subscripts over SSA values; the IR stores an affine map over dims and symbols
plus the values bound to them. `ssa_map` turns the first into the second.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ktir.ir import affine as af


class AffineName(af.AffineExpr):
    """A name in an affine expression, resolved once the enclosing map is complete."""

    name: str
    is_symbol: bool = False
    line: int = 0
    column: int = 0


class UndeclaredAffineName(ValueError):
    """A name that the enclosing map or set does not declare (with where it was written)."""

    def __init__(self, name: str, line: int = 0, column: int = 0) -> None:
        super().__init__(f"use of undeclared affine identifier '{name}'")
        self.name, self.line, self.column = name, line, column


def resolve_names(expr: af.AffineExpr, names: dict[Any, af.AffineExpr]) -> af.AffineExpr:
    """`expr` with each AffineName replaced by its dim or symbol in `names`."""
    if isinstance(expr, AffineName):
        # SSA subscripts keep `%x` and `symbol(%x)` apart; map/set bodies use bare names
        found = names.get((expr.name, expr.is_symbol), names.get(expr.name))
        if found is None:
            raise UndeclaredAffineName(expr.name, expr.line, expr.column)
        return found
    if isinstance(expr, af.Binary):
        return af.Binary(kind=expr.kind, lhs=resolve_names(expr.lhs, names), rhs=resolve_names(expr.rhs, names))
    return expr


def collect_names(expr: af.AffineExpr, out: list[AffineName]) -> None:
    if isinstance(expr, AffineName):
        out.append(expr)
    elif isinstance(expr, af.Binary):
        collect_names(expr.lhs, out)
        collect_names(expr.rhs, out)


class SsaMap(NamedTuple):
    """Subscripts over SSA values: the map plus its operands (dims, then symbols)."""

    map: af.AffineMap
    operands: list[str]


def ssa_map(exprs: list[af.AffineExpr], fixed_dims: list[str] = ()) -> SsaMap:  # type: ignore[assignment]
    """Turn expressions over SSA names into an affine map: `fixed_dims` first, then other
    values in order of first appearance; `symbol(%x)` values become symbols."""
    dims = list(fixed_dims)
    syms: list[str] = []
    leaves: list[AffineName] = []
    for e in exprs:
        collect_names(e, leaves)
    for leaf in leaves:
        bucket = syms if leaf.is_symbol else dims
        if leaf.name not in bucket:
            bucket.append(leaf.name)
    names: dict[Any, af.AffineExpr] = {(n, False): af.dim(i) for i, n in enumerate(dims)}
    names.update({(n, True): af.sym(i) for i, n in enumerate(syms)})
    results = tuple(resolve_names(e, names) for e in exprs)
    return SsaMap(af.AffineMap(num_dims=len(dims), num_symbols=len(syms), results=results), dims + syms)
