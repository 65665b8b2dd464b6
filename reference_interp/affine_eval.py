"""Exact evaluation of affine maps and integer sets.

Maps compile once into Python functions (generated source, so evaluation costs one call);
the same function evaluates on Python ints or, elementwise, on numpy int64 arrays
(`//` and `%` are floor division and the non-negative remainder for positive divisors in
both, which is MLIR's `floordiv` and `mod`).

An integer set is enumerated per tuple of symbol values, with exact integer arithmetic:

1. Each constraint that is linear in one dimension (`a*d + c(symbols) >= 0` or `== 0`)
   bounds that dimension. Dimensions left unbounded are bounded with islpy
   (`dim_min_val` / `dim_max_val`), which handles any quasi-affine constraints.
2. A set whose constraints are all of the first kind is a box: its points are never
   materialised (`SetPoints.mask is None`).
3. Otherwise the bounding box is enumerated with numpy and filtered by every
   constraint, giving a boolean mask over the box.

Results are cached per symbol tuple on the compiled set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ktir.ir import affine as af
from ktir.ir.isl_text import NotAffine, isl_constraints

from .errors import fail

Linear = af.Linear

_HELPERS = {
    "_cdiv": lambda a, b: -((-a) // _pos(b)),
    "_fdiv": lambda a, b: a // _pos(b),
    "_mod": lambda a, b: a % _pos(b),
}


def _pos(b: Any) -> Any:
    if np.any(np.asarray(b) <= 0):
        raise fail("undefined", f"affine floordiv/ceildiv/mod by a non-positive value ({b})")
    return b


def expr_source(expr: af.AffineExpr, dims: Sequence[str], syms: Sequence[str]) -> str:
    """Python source for an affine expression over the given variable names."""
    if isinstance(expr, af.Const):
        return f"({expr.value})"
    if isinstance(expr, af.Dim):
        return dims[expr.position]
    if isinstance(expr, af.Symbol):
        return syms[expr.position]
    assert isinstance(expr, af.Binary)
    lhs = expr_source(expr.lhs, dims, syms)
    rhs = expr_source(expr.rhs, dims, syms)
    if expr.kind == "add":
        return f"({lhs} + {rhs})"
    if expr.kind == "mul":
        return f"({lhs} * {rhs})"
    constant = isinstance(expr.rhs, af.Const)
    if constant and expr.rhs.value <= 0:  # type: ignore[attr-defined]
        raise fail("undefined", f"affine {expr.kind} by a non-positive constant")
    if expr.kind == "floordiv":
        return f"({lhs} // {rhs})" if constant else f"_fdiv({lhs}, {rhs})"
    if expr.kind == "mod":
        return f"({lhs} % {rhs})" if constant else f"_mod({lhs}, {rhs})"
    return f"(-((-{lhs}) // {rhs}))" if constant else f"_cdiv({lhs}, {rhs})"


def compile_exprs(exprs: Sequence[af.AffineExpr], num_dims: int, num_symbols: int) -> Callable[..., tuple[Any, ...]]:
    """`f(d0, ..., s0, ...) -> (r0, r1, ...)` for the given expressions."""
    dims = [f"d{i}" for i in range(num_dims)]
    syms = [f"s{i}" for i in range(num_symbols)]
    body = ", ".join(expr_source(e, dims, syms) for e in exprs)
    params = ", ".join(dims + syms)
    src = f"lambda {params}: ({body}{',' if exprs else ''})"
    fn: Callable[..., tuple[Any, ...]] = eval(src, dict(_HELPERS))  # noqa: S307 - generated from an AST
    return fn


def compile_map(m: af.AffineMap) -> Callable[..., tuple[Any, ...]]:
    return compile_exprs(m.results, m.num_dims, m.num_symbols)


linear = af.linear


@dataclass(frozen=True)
class SetPoints:
    """The points of an integer set: a bounding box, and a mask over it unless it is full.

    `lo` is the box's lower corner and `ext` its extents; a point is `lo + i` for each
    index `i` of the box where `mask[i]` (every index when `mask is None`).
    """

    lo: tuple[int, ...]
    ext: tuple[int, ...]
    mask: np.ndarray | None
    count: int

    @property
    def is_box(self) -> bool:
        return self.mask is None

    @property
    def hi(self) -> tuple[int, ...]:
        """The box's upper corner (inclusive)."""
        return tuple(a + e - 1 for a, e in zip(self.lo, self.ext, strict=True))


class CompiledSet:
    """An integer set ready to enumerate and test membership, per symbol tuple."""

    def __init__(self, iset: af.IntegerSet, what: str = "integer set", max_points: int = 1 << 26) -> None:
        self.iset = iset
        self.what = what
        self.nd = iset.num_dims
        self.ns = iset.num_symbols
        self.max_points = max_points
        # per dimension: (coef, sym coefs, const, is_eq) of single-dimension linear constraints
        self.bounds: list[list[tuple[int, dict[int, int], int, bool]]] = [[] for _ in range(self.nd)]
        self.const_cons: list[tuple[dict[int, int], int, bool]] = []
        self.other: list[int] = []  # indices of constraints that need filtering
        for i, c in enumerate(iset.constraints):
            lin = linear(c.expr)
            if lin is not None and len(lin[0]) <= 1:
                if not lin[0]:
                    self.const_cons.append((lin[1], lin[2], c.is_equality))
                else:
                    (d, a), = lin[0].items()
                    self.bounds[d].append((a, lin[1], lin[2], c.is_equality))
            else:
                self.other.append(i)
        self._fns = [
            compile_exprs([c.expr], self.nd, self.ns) for c in iset.constraints
        ]
        self._eq = [c.is_equality for c in iset.constraints]
        self._cache: dict[tuple[int, ...], SetPoints] = {}

    # ------------------------------------------------------------------ enumeration

    def points(self, syms: tuple[int, ...] = ()) -> SetPoints:
        found = self._cache.get(syms)
        if found is None:
            found = self._enumerate(syms)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[syms] = found
        return found

    def _enumerate(self, syms: tuple[int, ...]) -> SetPoints:
        if len(syms) != self.ns:
            raise fail("internal", f"{self.what}: {len(syms)} symbol value(s) for {self.ns} symbol(s)")
        empty = SetPoints(tuple([0] * self.nd), tuple([0] * self.nd), None, 0)
        for sc, const, is_eq in self.const_cons:
            v = const + sum(k * syms[s] for s, k in sc.items())
            if (v != 0) if is_eq else (v < 0):
                return empty
        lo: list[int | None] = [None] * self.nd
        hi: list[int | None] = [None] * self.nd
        for d in range(self.nd):
            for a, sc, const, is_eq in self.bounds[d]:
                c = const + sum(k * syms[s] for s, k in sc.items())
                if is_eq:
                    if c % a != 0:
                        return empty
                    v = -c // a
                    lo[d] = v if lo[d] is None else max(lo[d], v)  # type: ignore[type-var]
                    hi[d] = v if hi[d] is None else min(hi[d], v)  # type: ignore[type-var]
                elif a > 0:  # a*d + c >= 0  ->  d >= ceil(-c / a)
                    v = -(c // a)
                    lo[d] = v if lo[d] is None else max(lo[d], v)  # type: ignore[type-var]
                else:  # d <= floor(c / -a)
                    v = c // (-a)
                    hi[d] = v if hi[d] is None else min(hi[d], v)  # type: ignore[type-var]
        if any(b is None for b in lo + hi):
            lo, hi = self._isl_bounds(syms, lo, hi)
        los = [int(x) for x in lo]  # type: ignore[arg-type]
        ext = [max(int(h) - int(lx) + 1, 0) for lx, h in zip(lo, hi, strict=True)]  # type: ignore[arg-type]
        if any(e == 0 for e in ext):
            return empty
        volume = 1
        for e in ext:
            volume *= e
        if not self.other:
            return SetPoints(tuple(los), tuple(ext), None, volume)
        if volume > self.max_points:
            raise fail("memory-limit", f"{self.what} has a bounding box of {volume} points (limit {self.max_points})")
        grids = [a + lx for a, lx in zip(np.indices(ext, dtype=np.int64), los, strict=True)]
        mask = self.contains(grids, syms, only_other=True)
        count = int(mask.sum())
        if count == volume:
            return SetPoints(tuple(los), tuple(ext), None, volume)
        if count == 0:
            return empty
        # the set's box is its own points' least and greatest coordinates (spec/memory.md,
        # access tiles), which the other constraints may pull inside the single-dimension bounds
        crop = []
        for d in range(self.nd):
            used = np.flatnonzero(mask.any(axis=tuple(a for a in range(self.nd) if a != d)))
            crop.append(slice(int(used[0]), int(used[-1]) + 1))
        mask = mask[tuple(crop)]
        los = [lx + s.start for lx, s in zip(los, crop, strict=True)]
        if count == mask.size:
            return SetPoints(tuple(los), mask.shape, None, count)
        return SetPoints(tuple(los), mask.shape, mask, count)

    def coordinates(self, pts: SetPoints) -> list[np.ndarray]:
        """Each dimension's coordinates of the set's points `pts`, broadcastable against each
        other (a box: sparse ranges) or one array of the points (a masked set). A set with
        more points than the limit stops with runtime.memory-limit: its arrays would not fit."""
        if pts.count > self.max_points:
            raise fail("memory-limit", f"{self.what} has {pts.count} points (limit {self.max_points})")
        if pts.mask is None:
            return [lo + g for lo, g in zip(pts.lo, np.indices(pts.ext, sparse=True), strict=True)]
        return [lo + i for lo, i in zip(pts.lo, np.nonzero(pts.mask), strict=True)]

    def _isl_bounds(
        self, syms: tuple[int, ...], lo: list[int | None], hi: list[int | None]
    ) -> tuple[list[int | None], list[int | None]]:
        try:
            import islpy as isl
        except ImportError as e:  # pragma: no cover - islpy is a dependency in practice
            raise fail("unsupported", f"{self.what} is not bounded by single-dimension constraints and islpy is missing") from e
        dims = [f"d{i}" for i in range(self.nd)]
        svals = [str(v) for v in syms]
        try:
            cons = isl_constraints(self.iset, dims, svals)
        except NotAffine as e:
            raise fail("unsupported", f"{self.what} is not affine: {e}") from None
        text = "{ [" + ", ".join(dims) + "] : " + (" and ".join(cons) or "true") + " }"
        s = isl.Set(text)
        if s.is_empty():
            return [0] * self.nd, [-1] * self.nd
        out_lo, out_hi = list(lo), list(hi)
        for d in range(self.nd):
            vmin, vmax = s.dim_min_val(d), s.dim_max_val(d)
            if not (vmin.is_int() and vmax.is_int()):
                raise fail("unsupported", f"{self.what} is unbounded in dimension d{d}")
            out_lo[d] = int(vmin.to_python())
            out_hi[d] = int(vmax.to_python())
        return out_lo, out_hi

    # ------------------------------------------------------------------ membership

    def contains(self, coords: Sequence[Any], syms: tuple[int, ...] = (), only_other: bool = False) -> np.ndarray:
        """Membership of points given as one int64 array (or int) per dimension."""
        shape = np.broadcast_shapes(*(np.shape(c) for c in coords)) if coords else ()
        ok = np.ones(shape, dtype=bool)
        which = self.other if only_other else range(len(self._fns))
        for i in which:
            (v,) = self._fns[i](*coords, *syms)
            ok &= (v == 0) if self._eq[i] else (v >= 0)
        return ok

    def contains_point(self, point: Sequence[int], syms: tuple[int, ...] = ()) -> bool:
        for fn, eq in zip(self._fns, self._eq, strict=True):
            (v,) = fn(*point, *syms)
            if (v != 0) if eq else (v < 0):
                return False
        return True

    def contains_box(self, lo: Sequence[int], ext: Sequence[int], syms: tuple[int, ...] = ()) -> bool:
        """True when every point of the box [lo, lo + ext) lies in the set."""
        pts = self.points(syms)
        if pts.count == 0:
            return False
        for a, e, b, f in zip(lo, ext, pts.lo, pts.ext, strict=True):
            if a < b or a + e > b + f:
                return False
        if pts.mask is None:
            return True
        sl = tuple(slice(a - b, a - b + e) for a, e, b in zip(lo, ext, pts.lo, strict=True))
        return bool(pts.mask[sl].all())
