"""Integer sets and maps the scheduled kernels share (as IR values, for `Builder.alias`)."""

from __future__ import annotations

from ktir.builder import box
from ktir.ir import affine as af


def group_tiles(size: int) -> af.IntegerSet:
    """The tiles of group s0 when the grid is cut into groups of `size` consecutive tiles."""
    d0, s0 = af.dim(0), af.sym(0)
    return af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.Constraint(expr=d0 - s0 * size, is_equality=False),
        af.Constraint(expr=-d0 + s0 * size + (size - 1), is_equality=False)))


def group_first(size: int) -> af.IntegerSet:
    """The first tile of group s0 (groups of `size` consecutive tiles)."""
    d0, s0 = af.dim(0), af.sym(0)
    return af.IntegerSet(num_dims=1, num_symbols=1, constraints=(af.Constraint(expr=d0 - s0 * size, is_equality=True),))


def projection(num_dims: int, *dims: int) -> af.AffineMap:
    """`(d0, ..., d{n-1}) -> (d{dims[0]}, ...)`; the identity when `dims` is empty."""
    picked = dims or tuple(range(num_dims))
    return af.AffineMap(num_dims=num_dims, num_symbols=0, results=tuple(af.dim(d) for d in picked))


__all__ = ["box", "group_first", "group_tiles", "projection"]
