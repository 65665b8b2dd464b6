"""`ktir.ir.affine.linear`: the linear form evaluates like the expression (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ktir.ir import affine as af

DIMS, SYMS = 3, 2


def _exprs() -> st.SearchStrategy[af.AffineExpr]:
    leaves = st.one_of(
        st.integers(0, DIMS - 1).map(af.dim),
        st.integers(0, SYMS - 1).map(af.sym),
        st.integers(-20, 20).map(af.const),
    )

    def extend(children: st.SearchStrategy[af.AffineExpr]) -> st.SearchStrategy[af.AffineExpr]:
        return st.one_of(
            st.tuples(children, children).map(lambda ab: af.add(*ab)),
            st.tuples(children, st.integers(-5, 5)).map(lambda ak: af.mul(ak[0], af.const(ak[1]))),
            st.tuples(children, st.integers(1, 5)).map(lambda ak: af.binary("mod", ak[0], af.const(ak[1]))),
        )

    return st.recursive(leaves, extend, max_leaves=8)


@given(_exprs(), st.lists(st.integers(-50, 50), min_size=DIMS, max_size=DIMS),
       st.lists(st.integers(-50, 50), min_size=SYMS, max_size=SYMS))
def test_linear_form_evaluates_like_the_expression(expr: af.AffineExpr, dims: list[int], syms: list[int]) -> None:
    form = af.linear(expr)
    if form is None:
        return
    d, s, c = form
    assert 0 not in d.values() and 0 not in s.values()
    assert sum(k * dims[i] for i, k in d.items()) + sum(k * syms[i] for i, k in s.items()) + c == af.evaluate(expr, dims, syms)


def test_non_linear_forms_are_none() -> None:
    d0, d1 = af.dim(0), af.dim(1)
    assert af.linear(af.binary("mod", d0, af.const(4))) is None
    assert af.linear(af.binary("floordiv", d0, af.const(4))) is None
    assert af.linear(af.Binary(kind="mul", lhs=d0, rhs=d1)) is None
    assert af.linear(af.add(af.mul(d0, af.const(3)), af.const(2))) == ({0: 3}, {}, 2)
