"""Text of affine expressions, maps and sets, printed the way MLIR prints them.

The printer inverts the smart constructors of `ktir.ir.affine`, so printing then
parsing an expression gives the same tree.
"""

from __future__ import annotations

from collections.abc import Callable

from ktir.ir.affine import AffineExpr, AffineMap, Binary, Const, Dim, IntegerSet, Symbol

_PREC = {"add": 1, "mul": 2, "mod": 2, "floordiv": 2, "ceildiv": 2}


def format_expr(expr: AffineExpr, names: Callable[[AffineExpr], str] | None = None) -> str:
    """Print `expr` the way MLIR does; `names` maps Dim/Symbol leaves to text."""
    namer = names or _default_name
    return _fmt(expr, namer, 0)


def _default_name(leaf: AffineExpr) -> str:
    if isinstance(leaf, Dim):
        return f"d{leaf.position}"
    assert isinstance(leaf, Symbol)
    return f"s{leaf.position}"


def _negated_term(expr: AffineExpr) -> AffineExpr | None:
    """If `expr` is `x * -c` (c > 0), return `x * c` (or `x`), else None."""
    if isinstance(expr, Binary) and expr.kind == "mul" and isinstance(expr.rhs, Const):
        if expr.rhs.value == -1:
            return expr.lhs
        if expr.rhs.value < 0:
            return Binary(kind="mul", lhs=expr.lhs, rhs=Const(value=-expr.rhs.value))
    return None


def _fmt(expr: AffineExpr, namer: Callable[[AffineExpr], str], parent_prec: int) -> str:
    if isinstance(expr, Const):
        return str(expr.value)
    if isinstance(expr, Dim | Symbol):
        return namer(expr)
    assert isinstance(expr, Binary)
    prec = _PREC[expr.kind]
    if expr.kind == "add":
        lhs = _fmt(expr.lhs, namer, 1)
        if isinstance(expr.rhs, Const) and expr.rhs.value < 0:
            text = f"{lhs} - {-expr.rhs.value}"
        elif (negated := _negated_term(expr.rhs)) is not None:
            text = f"{lhs} - {_fmt(negated, namer, 2)}"
        else:
            # right operand at higher precedence: `a + (b + c)` keeps its tree shape
            text = f"{lhs} + {_fmt(expr.rhs, namer, 2)}"
    elif expr.kind == "mul" and isinstance(expr.rhs, Const) and expr.rhs.value == -1:
        text = f"-{_fmt(expr.lhs, namer, 3)}"
        prec = 3
    else:
        op = "*" if expr.kind == "mul" else expr.kind
        text = f"{_fmt(expr.lhs, namer, prec)} {op} {_fmt(expr.rhs, namer, prec + 1)}"
    return f"({text})" if prec < parent_prec else text


def _dim_names(num_dims: int, num_symbols: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    syms = ", ".join(f"s{i}" for i in range(num_symbols))
    return f"({dims})" + (f"[{syms}]" if num_symbols else "")


def format_map(amap: AffineMap) -> str:
    results = ", ".join(format_expr(r) for r in amap.results)
    return f"{_dim_names(amap.num_dims, amap.num_symbols)} -> ({results})"


def format_set(iset: IntegerSet) -> str:
    parts = [
        f"{format_expr(c.expr)} {'==' if c.is_equality else '>='} 0" for c in iset.constraints
    ]
    body = ", ".join(parts)
    return f"{_dim_names(iset.num_dims, iset.num_symbols)} : ({body})"
