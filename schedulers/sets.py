"""Integer sets and maps the scheduled kernels share (as IR values, for `Builder.alias`)."""

from __future__ import annotations

from ktir.builder import box
from ktir.ir import affine as af
from ktir.ir import types as ty


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




def band(r0: int, r1: int, cols: int) -> af.IntegerSet:
    """Rows [r0, r1) of a matrix of `cols` columns."""
    d0, d1 = af.dim(0), af.dim(1)
    return af.IntegerSet(num_dims=2, num_symbols=0, constraints=(
        af.Constraint(expr=d0 - r0, is_equality=False), af.Constraint(expr=-d0 + (r1 - 1), is_equality=False),
        af.Constraint(expr=d1, is_equality=False), af.Constraint(expr=-d1 + (cols - 1), is_equality=False)))


def scalar(name: str) -> ty.Type:
    """The element type spelled `name` (`f16`, `bf16`, `i32`, `index`)."""
    if name == "index":
        return ty.INDEX
    if name in ty.FLOAT_KINDS:
        return ty.FloatType(kind=name)  # type: ignore[arg-type]
    if name.startswith("i") and name[1:].isdigit():
        return ty.i(int(name[1:]))
    raise ValueError(f"not an element type: {name}")


__all__ = ["band", "box", "group_first", "group_tiles", "projection", "scalar"]
