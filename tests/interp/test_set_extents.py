"""An enumerated integer set's box is the set's own extents (spec/memory.md, access tiles):
the least and greatest point per dimension of the points themselves, not the bounds its
single-dimension constraints give. Checked against brute-force enumeration on generated sets."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ktir.ir import affine as af
from reference_interp.affine_eval import CompiledSet


@st.composite
def sets(draw: st.DrawFn) -> af.IntegerSet:
    """A box 0 <= d_i <= n_i - 1 (rank 1 to 3) cut by one to three constraints a.d + c >= 0 (or == 0)."""
    rank = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 6)) for _ in range(rank)]
    cons = []
    for i, n in enumerate(sizes):
        cons += [af.constraint(af.dim(i), ">=", af.const(0)), af.constraint(af.dim(i), "<=", af.const(n - 1))]
    for _ in range(draw(st.integers(1, 3))):
        expr: af.AffineExpr = af.const(draw(st.integers(-6, 6)))
        for i in range(rank):
            expr = expr + af.dim(i) * draw(st.integers(-2, 2))
        if draw(st.booleans()) and rank > 1:
            cons.append(af.Constraint(expr=expr.mod(2), is_equality=True))
        else:
            cons.append(af.Constraint(expr=expr, is_equality=False))
    return af.IntegerSet(num_dims=rank, num_symbols=0, constraints=tuple(cons))


def _members(s: af.IntegerSet) -> list[tuple[int, ...]]:
    ranges = [range(-1, 8)] * s.num_dims
    return [p for p in itertools.product(*ranges)
            if all((af.evaluate(c.expr, p) == 0) if c.is_equality else (af.evaluate(c.expr, p) >= 0) for c in s.constraints)]


@settings(max_examples=300, deadline=None)
@given(sets())
def test_points_have_the_sets_own_extents(s: af.IntegerSet) -> None:
    pts = CompiledSet(s).points()
    members = _members(s)
    assert pts.count == len(members)
    if not members:
        return
    arr = np.array(members)
    assert pts.lo == tuple(int(v) for v in arr.min(axis=0))
    assert pts.ext == tuple(int(v) for v in arr.max(axis=0) - arr.min(axis=0) + 1)
    inside = {tuple(int(a + b) for a, b in zip(pts.lo, i, strict=True))
              for i in np.ndindex(*pts.ext) if pts.mask is None or pts.mask[i]}
    assert inside == set(members)
