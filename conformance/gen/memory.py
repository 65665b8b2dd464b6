"""Memory semantics, one cause per case: view offsets and strides, access tile bases, sets
with holes, traversal orders, distributed views, and grids that place their tiles without
`affine.apply`.

Each case moves data and does nothing else, so a failing case names what its
implementation gets wrong: `core.memory.view_strides.rows2_cols2` fails when view strides
are ignored, `core.memory.holes.store.lower_triangle.f32` when a store writes its holes. Kernels are
built with `ktir.builder`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.draft import Draft, out
from conformance.gen.kernel import Arr
from ktir.builder import Builder, Value, ssa
from ktir.dialects.names import Ktdp
from ktir.ir import affine as af
from ktir.ir import types as ty
from ktir.syntax.printer import print_module

TYPES: dict[str, ty.Type] = {"f16": ty.F16, "bf16": ty.BF16, "f32": ty.F32, "i8": ty.I8, "i32": ty.I32, "i64": ty.I64}
INT: dict[str, Any] = {"recipe": "int", "low": -100, "high": 100}
NORMAL: dict[str, Any] = {"recipe": "normal"}
Moves = Callable[..., dict[str, np.ndarray]]  # arrays by name -> outputs by name


def box(shape: Sequence[int], extra: Sequence[af.Constraint] = ()) -> af.IntegerSet:
    """`0 <= d_i < shape_i` for every dimension, plus `extra` constraints."""
    cons = []
    for i, n in enumerate(shape):
        cons += [af.constraint(af.dim(i), ">=", af.const(0)), af.constraint(af.dim(i), "<=", af.const(n - 1))]
    return af.IntegerSet(num_dims=len(shape), num_symbols=0, constraints=(*cons, *extra))


def ranges(bounds: Sequence[tuple[int, int]]) -> af.IntegerSet:
    """`lo_i <= d_i <= hi_i` for every dimension (a view's coordinate set that does not start at 0)."""
    cons = []
    for i, (lo, hi) in enumerate(bounds):
        cons += [af.constraint(af.dim(i), ">=", af.const(lo)), af.constraint(af.dim(i), "<=", af.const(hi))]
    return af.IntegerSet(num_dims=len(bounds), num_symbols=0, constraints=tuple(cons))


def row_major(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def order(perm: Sequence[int]) -> af.AffineMap:
    return af.AffineMap(num_dims=len(perm), num_symbols=0, results=tuple(af.dim(p) for p in perm))


class Kernel:
    """A one-function module under construction: `%NAME_ptr: index` arguments for the arrays."""

    def __init__(self, names: Sequence[str], grid: Sequence[int] = (1,)) -> None:
        self.b = Builder()
        self._func = self.b.func("kernel", [(f"{n}_ptr", ty.INDEX) for n in names], grid=list(grid))
        self.ptr = dict(zip(names, self._func.__enter__(), strict=True))

    def view(self, name: str, shape: Sequence[int], dtype: str, strides: Sequence[int] | None = None, offset: int = 0,
             cset: af.IntegerSet | None = None) -> Value:
        ptr = self.ptr[name]
        if offset:
            ptr = self.b.arith.addi(ptr, self.b.constant(offset, ty.INDEX))
        return self.b.memory_view(ptr, list(shape), list(strides or row_major(shape)), TYPES[dtype],
                                  coordinate_set=cset or box(shape))

    def tile(self, view: Value, base: Sequence[af.AffineExpr | Value | int], tile_set: af.IntegerSet, ext: Sequence[int],
             perm: Sequence[int] | None = None) -> Value:
        shape = list(ext) if perm is None else [ext[p] for p in perm]
        return self.b.access_tile(view, list(base), tile_set, shape, order=order(perm) if perm is not None else None)

    def load(self, tile: Value, dtype: str) -> Value:
        return self.b.load(tile, TYPES[dtype])

    def store_whole(self, data: Value, name: str, shape: Sequence[int], dtype: str) -> None:
        v = self.view(name, shape, dtype)
        self.b.store(data, self.tile(v, [0] * len(shape), box(shape), shape))

    def text(self, comment: str) -> str:
        self.b.func_return()
        self._func.__exit__(None, None, None)
        return "".join(f"// {line}\n" for line in comment.splitlines()) + print_module(self.b.module)


def draft(case_id: str, text: str, ins: list[Arr], outs: list[Arr], description: str, fn: Moves,
          grid: Sequence[int] = (1,)) -> Draft:
    """A case whose outputs `fn` gives from the arguments (without `_ptr`), compared bit for bit."""
    level = case_id.split(".", 1)[0]
    return Draft(id=case_id, level=level, text=text, description=description, grid=list(grid),
                 model=models.computed(lambda a: {f"{k}_ptr": v for k, v in fn({n[:-4]: v for n, v in a.items()}).items()}),
                 arrays=[*(Arr(f"{a.name}_ptr", a.shape, a.dtype, a.recipe) for a in ins),
                         *(out(Arr(f"{a.name}_ptr", a.shape, a.dtype)) for a in outs)],
                 outputs=[(f"{a.name}_ptr", "exact", 1) for a in outs])


def _copy_case(case_id: str, comment: str, x: Arr, y: Arr, body: Callable[[Kernel], Value],
               fn: Callable[..., np.ndarray]) -> Draft:
    """y = what `body` loads from x, stored whole; `fn` says what that is."""
    k = Kernel(["x", "y"])
    k.store_whole(body(k), "y", y.shape, y.dtype)
    return draft(case_id, k.text(comment), [x], [y], comment.splitlines()[0], lambda a: {"y": fn(a["x"])})


def scatter(dst: np.ndarray, data: np.ndarray, strides: Sequence[int], offset: int) -> np.ndarray:
    """`dst` after storing `data` through a view of `strides`, `offset` elements in."""
    out = dst.copy()
    idx = gather(np.arange(out.size), data.shape, strides, offset)
    out.reshape(-1)[idx] = data
    return out


def gather(flat: np.ndarray, shape: Sequence[int], strides: Sequence[int], offset: int) -> np.ndarray:
    """The elements a view of `shape` and `strides`, `offset` elements in, reaches."""
    idx = offset + sum(np.arange(n).reshape([-1 if i == d else 1 for i in range(len(shape))]) * st
                       for d, (n, st) in enumerate(zip(shape, strides, strict=True)))
    return flat.reshape(-1)[np.broadcast_to(idx, tuple(shape))]


# ---------------------------------------------------------------------- views


def view_offsets() -> Iterator[Draft]:
    """A view that starts `offset` elements into the array."""
    for dtype, offset in (("f32", 1), ("f32", 13), ("i8", 7), ("f16", 5)):
        x = Arr("x", (32,), dtype, dict(INT))
        y = Arr("y", (8, 2), dtype)

        def body(k: Kernel, offset: int = offset, dtype: str = dtype) -> Value:
            v = k.view("x", (8, 2), dtype, offset=offset)
            return k.load(k.tile(v, [0, 0], box((8, 2)), (8, 2)), dtype)

        yield _copy_case(f"core.memory.view_offset.{offset}.{dtype}",
                         f"y = the 8x2 row-major view of x starting at element {offset} (the pointer plus {offset})", x, y, body,
                         lambda x, offset=offset: x[offset:offset + 16].reshape(8, 2))


def view_strides() -> Iterator[Draft]:
    """Views whose strides are not the row-major strides of their sizes."""
    x = Arr("x", (8, 8), "f32", dict(INT))
    shapes: list[tuple[str, tuple[int, ...], list[int], int, str]] = [
        ("rows2_cols2", (4, 4), [16, 2], 0, "every other row and column"),
        ("column_major", (8, 8), [1, 8], 0, "x seen column-major: y = transpose(x)"),
        ("padded_rows", (8, 5), [8, 1], 2, "rows of 5 elements with a pitch of 8, from element 2"),
        ("diagonal", (8,), [9], 0, "the diagonal: stride 9"),
        ("stride3", (5, 2), [12, 3], 1, "stride 3 in the inner dimension, 12 in the outer, from element 1"),
    ]
    for name, shape, strides, offset, what in shapes:
        y = Arr("y", shape, "f32")

        def body(k: Kernel, shape: tuple[int, ...] = shape, strides: list[int] = strides, offset: int = offset) -> Value:
            v = k.view("x", shape, "f32", strides=strides, offset=offset)
            return k.load(k.tile(v, [0] * len(shape), box(shape), shape), "f32")

        yield _copy_case(f"core.memory.view_strides.{name}", f"load through a strided view: {what}\n"
                         f"view sizes {list(shape)}, strides {strides}, offset {offset} over an 8x8 array", x, y, body,
                         lambda x, shape=shape, strides=strides, offset=offset: gather(x, shape, strides, offset))
    # a strided store: the 4x4 input written to every other row and column of an 8x8 output
    for name, strides, offset in (("rows2_cols2", [16, 2], 0), ("column_major", [1, 8], 0), ("rows2_cols2_from9", [16, 2], 9)):
        src = Arr("x", (4, 4), "f32", dict(INT))
        dst = Arr("y", (8, 8), "f32")
        k = Kernel(["x", "y"])
        vx = k.view("x", (4, 4), "f32")
        data = k.load(k.tile(vx, [0, 0], box((4, 4)), (4, 4)), "f32")
        vy = k.view("y", (4, 4), "f32", strides=strides, offset=offset)
        k.b.store(data, k.tile(vy, [0, 0], box((4, 4)), (4, 4)))
        comment = (f"store a 4x4 tensor through a view of strides {strides} at offset {offset} into an 8x8 output;\n"
                   "the elements the view does not reach keep the output's initial value")
        yield draft(f"core.memory.store_strides.{name}", k.text(comment), [src], [dst], "strided store",
                    lambda a, strides=strides, offset=offset: {"y": scatter(a["y"], a["x"], strides, offset)})


def tile_bases() -> Iterator[Draft]:
    """Access tiles that do not start at coordinate 0, as SSA values and as constants."""
    x = Arr("x", (8, 8), "f32", dict(INT))
    for (r, c), spelled in itertools.product(((2, 3), (3, 2), (4, 0), (0, 5)), ("ssa", "literal")):
        y = Arr("y", (4, 3), "f32")

        def body(k: Kernel, r: int = r, c: int = c, spelled: str = spelled) -> Value:
            v = k.view("x", (8, 8), "f32")
            base: list[Any] = [r, c] if spelled == "literal" else [k.b.constant(r, ty.INDEX), k.b.constant(c, ty.INDEX)]
            return k.load(k.tile(v, base, box((4, 3)), (4, 3)), "f32")

        yield _copy_case(f"core.memory.tile_base.{r}_{c}.{spelled}",
                         f"y = x[{r}:{r + 4}, {c}:{c + 3}]: a 4x3 access tile at base [{r}, {c}] ({spelled} subscripts)", x, y, body,
                         lambda x, r=r, c=c: x[r:r + 4, c:c + 3])
    # the base inside the view's coordinate set that does not start at 0
    y = Arr("y", (2, 4), "f32")

    def shifted(k: Kernel) -> Value:
        v = k.view("x", (4, 4), "f32", strides=[8, 1], offset=18, cset=ranges([(2, 5), (2, 5)]))
        return k.load(k.tile(v, [3, 2], box((2, 4)), (2, 4)), "f32")

    yield _copy_case("core.memory.tile_base.view_origin_2_2",
                     "a view whose coordinate set is [2, 5] x [2, 5] over x from element 18 (so coordinate (2, 2) is x[2, 2]);\n"
                     "y = its 2x4 access tile at base [3, 2] = x[3:5, 2:6]", x, y, shifted,
                     lambda x: x[3:5, 2:6])


# ---------------------------------------------------------------------- sets with holes


Shift = Callable[[af.AffineExpr, af.AffineExpr], list[af.Constraint]]


def _holes() -> list[tuple[str, Shift, str]]:
    """(name, the constraints that cut holes in the 4x6 box, in terms of (d0, d1), what they say)."""
    return [
        ("lower_triangle", lambda d0, d1: [af.constraint(d0, ">=", d1)], "d0 >= d1"),
        ("upper_band", lambda d0, d1: [af.constraint(d1, ">=", d0), af.constraint(d1 - d0, "<=", af.const(1))],
         "d0 <= d1 <= d0 + 1"),
        ("anti_diagonal", lambda d0, d1: [af.constraint(d0 + d1, "<=", af.const(4))], "d0 + d1 <= 4"),
        ("checkerboard", lambda d0, d1: [af.Constraint(expr=(d0 + d1).mod(2), is_equality=True)], "(d0 + d1) mod 2 == 0"),
        # the least d1 of the set is 2, not the box's 0: position (q0, q1) is the point (q0, q1 + 2)
        ("raised_start", lambda d0, d1: [af.constraint(d1, ">=", d0 + af.const(2))], "d1 >= d0 + 2"),
    ]


def _extents(mask: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The least point and the extents (max - min + 1) per dimension of the points of `mask`:
    an access tile's shape is its set's extents (spec/memory.md), not the box that holds it."""
    used = [np.flatnonzero(mask.any(axis=tuple(a for a in range(mask.ndim) if a != d))) for d in range(mask.ndim)]
    return tuple(int(u[0]) for u in used), tuple(int(u[-1] - u[0] + 1) for u in used)


def holes() -> Iterator[Draft]:
    """Non-rectangular access tiles, shaped by their sets' extents. A load's elements at holes
    are unspecified (spec/memory.md), so a load case stores what it loaded through a tile with
    the same holes: only the positions of the set are compared, and the output keeps its
    initial value at holes. A store writes nothing at holes."""
    d0, d1 = af.dim(0), af.dim(1)
    for (name, cut, what), dtype in itertools.product(_holes(), ("f32", "i32")):
        tile_set = box((4, 6), cut(d0, d1))
        mask4x6 = np.zeros((4, 6), bool)
        for p in np.ndindex(4, 6):
            mask4x6[p] = all((af.evaluate(c.expr, p) == 0) if c.is_equality else (af.evaluate(c.expr, p) >= 0)
                             for c in tile_set.constraints)
        lo, ext = _extents(mask4x6)
        mask = mask4x6[lo[0]:lo[0] + ext[0], lo[1]:lo[1] + ext[1]]
        # the same points as positions of a tile based at [0, 0]: the set moved by -lo
        at_origin = box(ext, cut(d0 + af.const(lo[0]), d1 + af.const(lo[1])))
        shape = "x".join(map(str, ext))
        x = Arr("x", (6, 8), dtype, dict(INT, low=1, high=100))
        y = Arr("y", ext, dtype)
        k = Kernel(["x", "y"])
        data = k.load(k.tile(k.view("x", (6, 8), dtype), [1, 2], tile_set, ext), dtype)
        k.b.store(data, k.tile(k.view("y", ext, dtype), [0, 0], at_origin, ext))
        first = (1 + lo[0], 2 + lo[1])
        yield draft(f"core.memory.holes.load.{name}.{dtype}",
                    k.text(f"load an access tile at base [1, 2] whose set is the 4x6 box and {what}: its shape is the set's "
                           f"extents, {shape},\nand position q is the point {list(lo)} + q; store it through a tile with "
                           f"the same holes: y[q] = x[1 + {lo[0]} + q0, 2 + {lo[1]} + q1] at the set's points, its "
                           "initial value elsewhere"), [x], [y], "load through a set with holes",
                    lambda a, mask=mask, first=first, ext=ext: {"y": np.where(
                        mask, a["x"][first[0]:first[0] + ext[0], first[1]:first[1] + ext[1]], a["y"])})
        src = Arr("x", ext, dtype, dict(INT, low=1, high=100))
        dst = Arr("y", (6, 8), dtype)
        k = Kernel(["x", "y"])
        data = k.load(k.tile(k.view("x", ext, dtype), [0, 0], box(ext), ext), dtype)
        k.b.store(data, k.tile(k.view("y", (6, 8), dtype), [1, 2], tile_set, ext))
        yield draft(f"core.memory.holes.store.{name}.{dtype}",
                    k.text(f"store a {shape} tensor through an access tile at base [1, 2] whose set is the 4x6 box and "
                           f"{what} (shape: the set's extents):\nmemory at holes keeps the output's initial value"),
                    [src], [dst], "store through a set with holes",
                    lambda a, mask=mask, first=first, ext=ext: {"y": _store_masked(a["y"], a["x"], mask, first, ext)})


def _store_masked(y: np.ndarray, x: np.ndarray, mask: np.ndarray, first: tuple[int, ...], ext: tuple[int, ...]) -> np.ndarray:
    out = y.copy()
    block = (slice(first[0], first[0] + ext[0]), slice(first[1], first[1] + ext[1]))
    out[block] = np.where(mask, x, out[block])
    return out


# ---------------------------------------------------------------------- traversal order


def orders() -> Iterator[Draft]:
    """`access_tile_order` permutations: the loaded tensor's dimension r is the set's dimension perm[r]."""
    ext = (2, 3, 4)
    for perm in itertools.permutations(range(3)):
        if perm == (0, 1, 2):
            continue
        name = "".join(map(str, perm))
        x = Arr("x", ext, "f32", dict(INT))
        shape = tuple(ext[p] for p in perm)
        y = Arr("y", shape, "f32")

        def body(k: Kernel, perm: tuple[int, ...] = perm) -> Value:
            v = k.view("x", ext, "f32")
            return k.load(k.tile(v, [0, 0, 0], box(ext), ext, perm=perm), "f32")

        m = ", ".join(f"d{p}" for p in perm)
        yield _copy_case(f"core.memory.order.load.{name}", f"load a 2x3x4 array with access_tile_order (d0, d1, d2) -> ({m}):\n"
                         f"y has shape {list(shape)} and y[i0, i1, i2] = x at the coordinate whose d{perm[0]} = i0, "
                         f"d{perm[1]} = i1, d{perm[2]} = i2", x, y, body,
                         lambda x, perm=perm: np.transpose(x, perm).copy())
        # the same order on a store: the tensor has the permuted shape
        src = Arr("x", shape, "f32", dict(INT))
        dst = Arr("y", ext, "f32")
        k = Kernel(["x", "y"])
        data = k.load(k.tile(k.view("x", shape, "f32"), [0, 0, 0], box(shape), shape), "f32")
        k.b.store(data, k.tile(k.view("y", ext, "f32"), [0, 0, 0], box(ext), ext, perm=perm))
        yield draft(f"core.memory.order.store.{name}", k.text(f"store a {'x'.join(map(str, shape))} tensor into a 2x3x4 array "
                                                               f"through access_tile_order (d0, d1, d2) -> ({m})"), [src], [dst],
                    "store with a permuted traversal order",
                    lambda a, perm=perm: {"y": np.transpose(a["x"], np.argsort(perm)).copy()})
    # a permuted order on a non-rectangular set: holes move with the order. What the load gives
    # at holes is unspecified, so it is stored through a 6x4 tile with the transposed holes
    tile_set = box((4, 6), [af.constraint(af.dim(0), ">=", af.dim(1) - 2)])
    transposed_set = box((6, 4), [af.constraint(af.dim(1), ">=", af.dim(0) - 2)])
    x = Arr("x", (4, 6), "f32", dict(INT, low=1, high=100))
    y = Arr("y", (6, 4), "f32")
    k = Kernel(["x", "y"])
    data = k.load(k.tile(k.view("x", (4, 6), "f32"), [0, 0], tile_set, (4, 6), perm=(1, 0)), "f32")
    k.b.store(data, k.tile(k.view("y", (6, 4), "f32"), [0, 0], transposed_set, (6, 4)))
    inside = np.indices((4, 6))[0] >= np.indices((4, 6))[1] - 2
    yield draft("core.memory.order.load.10_holes",
                k.text("load a 4x6 set {d0 >= d1 - 2} in the order (d1, d0): a 6x4 tensor whose holes are where the "
                       "transpose puts them;\nstore it through a 6x4 tile whose set has those holes: y = transpose(x) "
                       "at the set's points, its initial value elsewhere"), [x], [y],
                "load with a permuted order on a set with holes",
                lambda a: {"y": np.where(inside.T, a["x"].T, a["y"])})


# ---------------------------------------------------------------------- multi-tile placement


def _assemble(a: dict[str, np.ndarray], parts: list[list[tuple[int, int]]]) -> np.ndarray:
    """The 8x8 logical array whose part i (its coordinate box) is the array p_i."""
    whole = np.zeros((8, 8), np.float32)
    for i, ((lo0, hi0), (lo1, hi1)) in enumerate(parts):
        whole[lo0:hi0 + 1, lo1:hi1 + 1] = a[f"p{i}"]
    return whole


def distributed_shapes() -> Iterator[Draft]:
    """Distributed views made of parts of several shapes; each tile of a grid [2] loads half the rows."""
    layouts: list[tuple[str, tuple[int, int], list[list[tuple[int, int]]], str]] = [
        ("columns", (8, 8), [[(0, 7), (0, 3)], [(0, 7), (4, 7)]], "two 8x4 parts side by side (split along d1)"),
        ("uneven_rows", (8, 8), [[(0, 1), (0, 7)], [(2, 6), (0, 7)], [(7, 7), (0, 7)]], "three parts of 2, 5 and 1 rows"),
        ("quadrants", (8, 8), [[(0, 3), (0, 3)], [(0, 3), (4, 7)], [(4, 7), (0, 3)], [(4, 7), (4, 7)]], "four 4x4 quadrants"),
    ]
    for name, full, parts, what in layouts:
        ins = [Arr(f"p{i}", (hi0 - lo0 + 1, hi1 - lo1 + 1), "f32", dict(INT))
               for i, ((lo0, hi0), (lo1, hi1)) in enumerate(parts)]
        y = Arr("y", full, "f32")
        k = Kernel([*(a.name for a in ins), "y"], grid=(2,))
        (t,) = k.b.tile_id()
        views = [k.view(a.name, a.shape, "f32", cset=ranges(p)) for a, p in zip(ins, parts, strict=True)]
        whole = k.b.create(Ktdp.construct_distributed_memory_view, views, [ty.MemRefType(shape=full, element_type=ty.F32)])[0]
        half = (full[0] // 2, full[1])
        data = k.load(k.tile(whole, [ssa(t) * half[0], 0], box(half), half), "f32")
        vy = k.view("y", full, "f32")
        k.b.store(data, k.tile(vy, [ssa(t) * half[0], 0], box(half), half))
        comment = (f"a distributed view of {what}, seen as one 8x8 memref; grid [2]: tile t copies rows "
                   f"[{half[0]} t, {half[0]} (t + 1)) of it to y")
        yield draft(f"multi-tile.memory.distributed.{name}", k.text(comment), ins, [y], "distributed view",
                    lambda a, parts=parts: {"y": _assemble(a, parts)}, grid=(2,))


def grids_without_affine_apply() -> Iterator[Draft]:
    """Tiles placed by arith on the tile id, or by the access tile's own subscripts: no affine.apply."""
    for grid, how in itertools.product((2, 4), ("arith", "subscript")):
        part = 32 // grid
        x = Arr("x", (32,), "f32", dict(NORMAL))
        y = Arr("y", (32,), "f32")
        k = Kernel(["x", "y"], grid=(grid,))
        (t,) = k.b.tile_id()
        if how == "arith":
            base: af.AffineExpr | Value = k.b.arith.muli(t, k.b.constant(part, ty.INDEX))
        else:
            base = ssa(t) * part
        data = k.load(k.tile(k.view("x", (32,), "f32"), [base], box((part,)), (part,)), "f32")
        neg = k.b.arith.negf(data)
        k.b.store(neg, k.tile(k.view("y", (32,), "f32"), [base], box((part,)), (part,)))
        spelled = "arith.muli on the tile id" if how == "arith" else f"the subscript %t * {part}"
        yield draft(f"multi-tile.memory.grid{grid}.base_{how}",
                    k.text(f"grid [{grid}]: tile t negates elements [{part} t, {part} (t + 1)), its base computed by {spelled}"),
                    [x], [y], "tile placement without affine.apply", lambda a: {"y": -a["x"]}, grid=(grid,))
    # a 2-D grid that is not square, so that swapping the two tile coordinates shows
    x = Arr("x", (8, 8), "f32", dict(NORMAL))
    y = Arr("y", (8, 8), "f32")
    k = Kernel(["x", "y"], grid=(2, 4))
    i, j = k.b.tile_id(2)
    sub = [ssa(i) * 4, ssa(j) * 2]
    data = k.load(k.tile(k.view("x", (8, 8), "f32"), sub, box((4, 2)), (4, 2)), "f32")
    k.b.store(k.b.arith.negf(data), k.tile(k.view("y", (8, 8), "f32"), sub, box((4, 2)), (4, 2)))
    yield draft("multi-tile.memory.grid2x4.base_subscript",
                k.text("grid [2, 4]: tile (i, j) negates the 4x2 block at [4 i, 2 j], placed by the subscripts %i * 4, %j * 2"),
                [x], [y], "2-D tile placement without affine.apply", lambda a: {"y": -a["x"]}, grid=(2, 4))


def cases() -> Iterator[Draft]:
    yield from view_offsets()
    yield from view_strides()
    yield from tile_bases()
    yield from holes()
    yield from orders()


def multitile_cases() -> Iterator[Draft]:
    yield from distributed_shapes()
    yield from grids_without_affine_apply()
