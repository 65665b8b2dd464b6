"""The legality proof against adversarial memory views (`schedulers.proof`).

Every verdict here is checked by something that did not produce it: a brute-force enumeration
of the coordinates and element offsets each tile touches (spec/memory.md: `address(x) = o +
sum((x_i - lo_i) * s_i)`, `lo` the least point of the coordinate set), and the reference
interpreter, whose race detector, view checks and output comparison (`schedulers.check`) see
what the scheduled module really does. The cases: views of one argument that alias each other
(transposed, shifted by an offset), coordinate sets that are not boxes or do not start at 0,
strides that map two coordinates to one element, a coordinate set whose symbols are sizes the
proof does not know, memrefs the proof used to skip (memref function arguments, memref.load,
linalg in buffer form, memref.subview), and a view whose memory space is only in its type.

Two arguments never alias: spec/execution.md makes a launch with overlapping arrays a
`runtime.argument` error, which the interpreter reports (`test_two_arguments_never_alias`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, ind, ssa
from ktir.dialects.names import Arith
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from reference_interp.executor import At
from schedulers.check import check_equivalent
from schedulers.proof import prove

INDEX = ty.IndexType()
F32 = ty.FloatType(kind="f32")
KINDS = ("outside its coordinate set", "one element twice", "both write element", "reads elements of",
         "is written by no tile", "which the input does not write", "neither reads nor writes")


def _parse(m: Module, valid: bool = True) -> Module:
    text = print_module(m)
    if valid:
        _, diags = validate_text(text, "k.ktir")
        assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    return ktir.parse(text, "k.ktir")


def kind(why: str | None) -> str | None:
    if why is None:
        return None
    found = [k for k in KINDS if k in why]
    assert len(found) == 1, why
    return found[0]


def _ge(e: af.AffineExpr) -> af.Constraint:
    return af.Constraint(expr=e, is_equality=False)


def coordinate_set(lo: tuple[int, int], n: tuple[int, int], cut: int | None) -> af.IntegerSet:
    """The box [lo, lo + n); with `cut`, only the points with (c1 - lo1) <= (c0 - lo0) + cut (a
    staircase: not a box, but with the same least point while cut >= 0)."""
    d0, d1 = af.dim(0), af.dim(1)
    cons = [_ge(d0 - lo[0]), _ge(-d0 + (lo[0] + n[0] - 1)), _ge(d1 - lo[1]), _ge(-d1 + (lo[1] + n[1] - 1))]
    if cut is not None:
        cons.append(_ge((d0 - lo[0]) - (d1 - lo[1]) + cut))
    return af.IntegerSet(num_dims=2, num_symbols=0, constraints=tuple(cons))


# ---------------------------------------------------------------- random views: the proof against enumeration


def whole(N: int) -> Module:
    """One tile: y[0, N) = x[0, N) through flat views."""
    b = Builder()
    with b.func("k", [("x_ptr", INDEX), ("y_ptr", INDEX)], grid=[1]) as (xp, yp):
        c0 = b.constant(0, INDEX)
        x = b.memory_view(xp, [N], [1], F32, coordinate_set=box(N))
        y = b.memory_view(yp, [N], [1], F32, coordinate_set=box(N))
        b.store(b.load(b.access_tile(x, [c0], box(N), (N,)), F32), b.access_tile(y, [c0], box(N), (N,)))
        b.func_return()
    return _parse(b.module)


def divided(p: dict[str, Any]) -> Module:
    """Tile t stores a block of `ext` at `base + (step * t, 0)` through the write view (offset, sizes,
    strides, a coordinate set from `lo`, maybe a staircase), and, with `read`, first loads a block of
    `rext` at `rbase + (rstep * t, 0)` through a second view of the same argument (an alias). The
    data stored is loaded from x through a view and a tile like the write's."""
    b = Builder()
    with b.func("k", [("x_ptr", INDEX), ("y_ptr", INDEX)], grid=[p["grid"]]) as (xp, yp):
        (tid,) = b.tile_id(1)
        e0, e1 = p["ext"]

        def view(offset: int, sizes: tuple[int, int], strides: tuple[int, int], cset: af.IntegerSet,
                 arg: Any = yp) -> Any:
            o = b.arith.addi(arg, b.constant(offset, INDEX)) if offset else arg
            return b.memory_view(o, list(sizes), list(strides), F32, coordinate_set=cset)

        def at_(base: tuple[int, int], step: int) -> list[Any]:
            r = b.arith.addi(b.arith.muli(tid, b.constant(step, INDEX)), b.constant(base[0], INDEX))
            return [r, b.constant(base[1], INDEX)]

        if p["read"]:
            r0, r1 = p["rext"]
            rv = view(p["roffset"], p["rsizes"], p["rstrides"], box(*p["rsizes"]))
            b.load(b.access_tile(rv, at_(p["rbase"], p["rstep"]), box(r0, r1), (r0, r1)), F32)
        # the data comes from the same elements of x (viewed alike), so a legal schedule computes y = x
        xv = view(p["offset"], p["sizes"], p["strides"], coordinate_set(p["lo"], p["sizes"], p["cut"]), xp)
        data = b.load(b.access_tile(xv, at_(p["base"], p["step"]), box(e0, e1), (e0, e1)), F32)
        wv = view(p["offset"], p["sizes"], p["strides"], coordinate_set(p["lo"], p["sizes"], p["cut"]))
        b.store(data, b.access_tile(wv, at_(p["base"], p["step"]), box(e0, e1), (e0, e1)))
        b.func_return()
    return _parse(b.module, valid=False)  # the verifier refuses a tile it can prove out of view: that is a case


def enumerate_verdict(p: dict[str, Any], N: int) -> str | None:
    """The verdict from the coordinates and element offsets each tile touches, enumerated, in the
    order the proof reports: an access outside its view, a store writing one element twice, two
    tiles writing one element, a tile reading what another writes, an element lost, one extra, a read
    of an element the input does not access (x is read where y is written)."""
    lo, n, cut = p["lo"], p["sizes"], p["cut"]

    def in_write_view(c: tuple[int, int]) -> bool:
        k = (c[0] - lo[0], c[1] - lo[1])
        return 0 <= k[0] < n[0] and 0 <= k[1] < n[1] and (cut is None or k[1] <= k[0] + cut)

    def block(base: tuple[int, int], step: int, ext: tuple[int, int], t: int) -> list[tuple[int, int]]:
        return [(base[0] + step * t + i, base[1] + j) for i in range(ext[0]) for j in range(ext[1])]

    tiles = range(p["grid"])
    stores = [block(p["base"], p["step"], p["ext"], t) for t in tiles]
    loads = [block(p["rbase"], p["rstep"], p["rext"], t) for t in tiles] if p["read"] else [[] for _ in tiles]
    rn = p["rsizes"]
    if any(not in_write_view(c) for s in stores for c in s) or \
            any(not (0 <= c[0] < rn[0] and 0 <= c[1] < rn[1]) for s in loads for c in s):
        return "outside its coordinate set"
    s0, s1 = p["strides"]
    writes = [np.array([p["offset"] + (c[0] - lo[0]) * s0 + (c[1] - lo[1]) * s1 for c in s]) for s in stores]
    r0, r1 = p["rstrides"]
    reads = [np.array([p["roffset"] + c[0] * r0 + c[1] * r1 for c in s], dtype=np.int64) for s in loads]
    if any(len(np.unique(w)) < len(w) for w in writes):
        return "one element twice"
    for t in tiles:
        for u in tiles:
            if t != u and np.intersect1d(writes[t], writes[u]).size:
                return "both write element"
    for t in tiles:
        for u in tiles:
            if t != u and np.intersect1d(reads[t], writes[u]).size:
                return "reads elements of"
    got, want = set(np.concatenate(writes).tolist()), set(range(N))
    if want - got:
        return "is written by no tile"
    if got - want:
        return "which the input does not write"
    if set(np.concatenate(reads).tolist()) - want:  # y[0, N) is all the input touches: more may be no array
        return "neither reads nor writes"
    return None


@st.composite
def views(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly views that hold the blocks the tiles access (sizes from what they reach, plus a slack
    that is sometimes -1), strides row-major, transposed or anything."""
    ext = (draw(st.integers(1, 3)), draw(st.integers(1, 4)))
    grid = draw(st.integers(1, 4))
    step = draw(st.sampled_from([ext[0], ext[0], ext[0], 0, ext[0] + 1, max(ext[0] - 1, 0)]))
    lo = (draw(st.sampled_from([0, 0, 1, 2])), draw(st.sampled_from([0, 0, 1])))
    shift = (draw(st.sampled_from([0, 0, 0, 1, -1])), draw(st.sampled_from([0, 0, 0, 1, -1])))
    slack = draw(st.sampled_from([0, 0, 0, 1, -1]))
    sizes = (max(1, shift[0] + step * (grid - 1) + ext[0] + slack), max(1, shift[1] + ext[1] + max(slack, 0)))
    row = draw(st.sampled_from(["packed", "packed", "transposed", "any"]))
    if row == "packed":  # row-major rows of sizes[1] elements
        strides = (sizes[1], 1)
    elif row == "transposed":
        strides = (1, sizes[0])
    else:  # anything: equal strides, rows that overlap, gaps
        strides = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    p = {
        "grid": grid, "ext": ext, "lo": lo, "sizes": sizes, "strides": strides,
        "offset": draw(st.sampled_from([0, 0, 1, 3])),
        "cut": draw(st.sampled_from([None, None, None, 0, ext[1]])),
        "base": (lo[0] + shift[0], lo[1] + shift[1]), "step": step,
        "read": draw(st.booleans()),
    }
    rext = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    rstep = draw(st.sampled_from([0, 1, 2, ext[0]]))
    rbase = (draw(st.sampled_from([0, 0, 1])), 0)
    rsizes = (max(1, rbase[0] + rstep * (grid - 1) + rext[0] + draw(st.sampled_from([0, 0, 1, -1]))), rext[1])
    p.update({
        "rext": rext, "rsizes": rsizes, "rbase": rbase, "rstep": rstep,
        "rstrides": draw(st.sampled_from([(rsizes[1], 1), (1, max(rsizes[0], 1)), (sizes[1], 1), (2, 2)])),
        "roffset": draw(st.sampled_from([0, 0, 1, sizes[1]])),
    })
    return p


def _legal_size(p: dict[str, Any]) -> int:
    """The input's N: the elements the scheduled module writes, when they are [0, N) (else their
    highest plus one, or 1)."""
    lo, (s0, s1) = p["lo"], p["strides"]
    top = [p["offset"] + (p["base"][0] + p["step"] * t + i - lo[0]) * s0 + (p["base"][1] + j - lo[1]) * s1
           for t in range(p["grid"]) for i in range(p["ext"][0]) for j in range(p["ext"][1])]
    return max(1, max(top) + 1)


LEGAL = {"grid": 2, "ext": (2, 3), "lo": (0, 0), "sizes": (4, 3), "strides": (3, 1), "offset": 0, "cut": None,
         "base": (0, 0), "step": 2, "read": False, "rext": (1, 1), "rsizes": (4, 3), "rstrides": (3, 1),
         "roffset": 0, "rbase": (0, 0), "rstep": 2}


@settings(max_examples=70, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(p=views(), trim=st.sampled_from([0, 0, 0, 1, -1]))
@example(p=LEGAL, trim=0)  # legal: two row blocks
@example(p={**LEGAL, "lo": (2, 1), "base": (2, 1), "offset": 0}, trim=0)  # a set from (2, 1): coordinate (2, 1) is element 0
@example(p={**LEGAL, "lo": (2, 0), "base": (0, 0)}, trim=0)  # below the set's least point: out of view
@example(p={**LEGAL, "cut": 0}, trim=0)  # a staircase set: the block's corner (0, 2) is outside it
@example(p={**LEGAL, "cut": 2}, trim=0)  # a staircase that holds the whole block: legal
@example(p={**LEGAL, "strides": (2, 1)}, trim=0)  # rows of 3 every 2: (0, 2) and (1, 0) are one element
@example(p={**LEGAL, "strides": (1, 1), "ext": (1, 3), "step": 1}, trim=0)  # one row each, tiles overlap
@example(p={**LEGAL, "strides": (1, 4), "sizes": (4, 3)}, trim=0)  # transposed with gaps: elements lost
@example(p={**LEGAL, "read": True, "rstrides": (1, 3), "rsizes": (3, 4), "rext": (3, 1), "rstep": 1}, trim=0)  # reads a column through a transposed alias: races
@example(p={**LEGAL, "read": True, "roffset": 3, "rext": (2, 3), "rstep": 2}, trim=0)  # reads the next block through a shifted alias
@example(p={**LEGAL, "read": True, "roffset": 3, "rext": (1, 3), "rstep": 2, "rsizes": (4, 3)}, trim=0)  # reads its own second row: legal
@example(p={**LEGAL, "grid": 1, "ext": (1, 1), "sizes": (1, 1), "strides": (1, 1), "step": 1, "read": True,
            "rext": (1, 2), "rsizes": (1, 2), "rstep": 0, "rstrides": (2, 1)}, trim=0)  # reads y[1] of a 1-element y
def test_random_views_get_the_enumerated_verdict(p: dict[str, Any], trim: int) -> None:
    """The proof's verdict is the enumerated one; where it proves a schedule, the interpreter runs the
    scheduled module without error and to the input's outputs."""
    N = max(1, _legal_size(p) - trim)
    before, after = whole(N), divided(p)
    want = enumerate_verdict(p, N)
    got = prove(before, after)
    assert kind(got) == want, (got, want)
    assert kind(prove(before, after, coordinates=False)) == want
    if got is None:
        verdict = check_equivalent(before, after)
        assert verdict.ok, verdict.message


# ---------------------------------------------------------------- named cases, against the interpreter


def _interpreted(before: Module, after: Module, sizes: dict[str, int] | None = None) -> str:
    """What the interpreter says of the scheduled module: "" when it computes the input's outputs."""
    verdict = check_equivalent(before, after, sizes)
    return "" if verdict.ok else verdict.message


def memref_rows(grid: int, per_tile: int, replicated: bool) -> Module:
    """x and y are memref arguments (8 x 16): tile t copies rows [t * per_tile, ...) of x into y (all
    from row 0 when `replicated`)."""
    b = Builder()
    mt = ty.MemRefType(shape=(8, 16), element_type=F32)
    with b.func("k", [("x", mt), ("y", mt)], grid=[grid]) as (x, y):
        c0 = b.constant(0, INDEX)
        (tid,) = b.tile_id(1)
        r = c0 if replicated else b.arith.muli(tid, b.constant(per_tile, INDEX))
        v = b.load(b.access_tile(x, [r, c0], box(per_tile, 16), (per_tile, 16)), F32)
        b.store(v, b.access_tile(y, [r, c0], box(per_tile, 16), (per_tile, 16)))
        b.func_return()
    return _parse(b.module)


def test_memref_arguments_are_arrays() -> None:
    """A memref argument is the array itself: its accesses were not modelled, and a store of every
    row on both tiles was proven legal."""
    before = memref_rows(1, 8, False)
    legal, racy = memref_rows(2, 4, False), memref_rows(2, 8, True)
    assert prove(before, legal) is None and _interpreted(before, legal) == ""
    why = prove(before, racy)
    assert kind(why) == "both write element", why
    assert "data race" in _interpreted(before, racy)


def rows_then_peek(grid: int, how: str) -> Module:
    """Tile t copies row t of x into y, then reads one element of y's other row (`memref.load`, or a
    linalg.copy in buffer form from y into z) and fills row t of z with it."""
    b = Builder()
    with b.func("k", [("x", INDEX), ("y", INDEX), ("z", INDEX)], grid=[grid]) as (x, y, z):
        c0, c1 = b.constant(0, INDEX), b.constant(1, INDEX)
        (tid,) = b.tile_id(1)
        xv, yv, zv = (b.memory_view(a, [2, 4], [4, 1], F32, coordinate_set=box(2, 4)) for a in (x, y, z))
        n = 2 // grid
        r = b.arith.muli(tid, b.constant(n, INDEX))
        b.store(b.load(b.access_tile(xv, [r, c0], box(n, 4), (n, 4)), F32), b.access_tile(yv, [r, c0], box(n, 4), (n, 4)))
        other = b.arith.subi(c1, r) if grid == 2 else c1
        if how == "memref.load":
            s = b.create("memref.load", [yv, other, c0], [F32])[0]
            f = b.fill(s, b.empty(ty.TensorType(shape=(n, 4), element_type=F32)))
            b.store(f, b.access_tile(zv, [r, c0], box(n, 4), (n, 4)))
        else:
            one = b.constant(1.0, F32)
            b.create("linalg.fill", [one, yv], [], {"operandSegmentSizes": at.DenseArrayAttr(
                element_type=ty.I32, values=(1, 1))})
            b.store(b.fill(one, b.empty(ty.TensorType(shape=(n, 4), element_type=F32))),
                    b.access_tile(zv, [r, c0], box(n, 4), (n, 4)))
        b.func_return()
    return _parse(b.module)


def test_memref_load_is_a_read() -> None:
    before, after = rows_then_peek(1, "memref.load"), rows_then_peek(2, "memref.load")
    why = prove(before, after)
    assert why is not None and kind(why) == "reads elements of" and "memref.load" in why, why
    assert "data race" in _interpreted(before, after)


def test_linalg_in_buffer_form_on_global_memory_is_declined() -> None:
    before, after = rows_then_peek(1, "linalg.fill"), rows_then_peek(2, "linalg.fill")
    why = prove(before, after)
    assert why is not None and "linalg.fill" in why and "outside ktdp.load and ktdp.store" in why, why
    assert "data race" in _interpreted(before, after)


def test_a_subview_of_global_memory_is_declined() -> None:
    """Both tiles store row 0 through a memref.subview of y: declined with the op named (the
    interpreter finds the race)."""

    def k(grid: int) -> Module:
        b = Builder()
        with b.func("k", [("x", INDEX), ("y", INDEX)], grid=[grid]) as (x, y):
            c0 = b.constant(0, INDEX)
            xv = b.memory_view(x, [1, 4], [4, 1], F32, coordinate_set=box(1, 4))
            yv = b.memory_view(y, [1, 4], [4, 1], F32, coordinate_set=box(1, 4))
            sub_t = ty.MemRefType(shape=(1, 4), element_type=F32, layout=at.StridedLayoutAttr(strides=(4, 1), offset=0))
            sub = b.create("memref.subview", [yv], [sub_t], {
                "static_offsets": at.i64_array([0, 0]), "static_sizes": at.i64_array([1, 4]),
                "static_strides": at.i64_array([1, 1]),
                "operandSegmentSizes": at.DenseArrayAttr(element_type=ty.I32, values=(1, 0, 0, 0))})[0]
            v = b.load(b.access_tile(xv, [c0, c0], box(1, 4), (1, 4)), F32)
            b.store(v, b.access_tile(sub, [c0, c0], box(1, 4), (1, 4)))
            b.func_return()
        return _parse(b.module, valid=False)

    why = prove(k(1), k(2))
    assert why is not None and "memref.subview" in why, why
    assert "data race" in _interpreted(k(1), k(2))


def test_a_store_conflict_through_strides_is_found() -> None:
    """A 2 x 4 view with strides [1, 1] covers y[0, 5) like the input's flat store, but writes
    elements 1 to 3 twice (runtime.store-conflict)."""
    before = whole(5)
    p = {**LEGAL, "grid": 1, "ext": (2, 4), "sizes": (2, 4), "strides": (1, 1), "step": 0}
    why = prove(before, divided(p))
    assert why is not None and kind(why) == "one element twice", why
    assert "store-conflict" in why and enumerate_verdict(p, 5) == "one element twice"
    assert "twice" in _interpreted(before, divided(p))


@pytest.mark.parametrize("where", ["below", "staircase"])
def test_an_access_outside_the_coordinate_set_is_found(where: str) -> None:
    """Element offsets right, coordinates outside the set: the interpreter stops at the access tile.
    "below": a set from row 2 at offset y + 6 reached at rows 0 and 1 (elements 0 to 5, as the input
    writes); "staircase": a set that is not a box, reached in its bounding box."""
    p = {**LEGAL, "lo": (2, 0), "offset": 6, "base": (0, 0)} if where == "below" else {**LEGAL, "cut": 0}
    before, after = whole(_legal_size(p)), divided(p)
    assert enumerate_verdict(p, _legal_size(p)) == "outside its coordinate set"
    why = prove(before, after)
    assert kind(why) == "outside its coordinate set", why
    assert "outside the view's" in _interpreted(before, after)


def transposed_alias(read_own: bool) -> Module:
    """Tile t (of 4) sets row t of y (4 x 4) to x[t, :] + what it reads through a transposed view of
    y: column t (other tiles' elements), or, with `read_own`, row t (its own, in the tile order
    that transposes it back)."""
    b = Builder()
    with b.func("k", [("x", INDEX), ("y", INDEX)], grid=[4]) as (x, y):
        c0 = b.constant(0, INDEX)
        (tid,) = b.tile_id(1)
        xv = b.memory_view(x, [4, 4], [4, 1], F32, coordinate_set=box(4, 4))
        rows = b.memory_view(y, [4, 4], [4, 1], F32, coordinate_set=box(4, 4))
        cols = b.memory_view(y, [4, 4], [1, 4], F32, coordinate_set=box(4, 4))
        swap = af.AffineMap(num_dims=2, num_symbols=0, results=(af.dim(1), af.dim(0)))
        peek = b.access_tile(cols, [c0, tid], box(4, 1), (1, 4), order=swap) if read_own else \
            b.access_tile(cols, [tid, c0], box(1, 4), (1, 4))
        seen = b.load(peek, F32)
        v = b.load(b.access_tile(xv, [tid, c0], box(1, 4), (1, 4)), F32)
        b.store(b.create("arith.addf", [v, seen], [ty.TensorType(shape=(1, 4), element_type=F32)])[0],
                b.access_tile(rows, [tid, c0], box(1, 4), (1, 4)))
        b.func_return()
    return _parse(b.module)


def one_tile_update() -> Module:
    """y = x + y on one tile (the input of `transposed_alias`'s legal form)."""
    b = Builder()
    with b.func("k", [("x", INDEX), ("y", INDEX)], grid=[1]) as (x, y):
        c0 = b.constant(0, INDEX)
        xv, yv = (b.memory_view(a, [4, 4], [4, 1], F32, coordinate_set=box(4, 4)) for a in (x, y))
        s = b.create("arith.addf", [b.load(b.access_tile(xv, [c0, c0], box(4, 4), (4, 4)), F32),
                                    b.load(b.access_tile(yv, [c0, c0], box(4, 4), (4, 4)), F32)],
                     [ty.TensorType(shape=(4, 4), element_type=F32)])[0]
        b.store(s, b.access_tile(yv, [c0, c0], box(4, 4), (4, 4)))
        b.func_return()
    return _parse(b.module)


def test_a_transposed_alias_is_compared_by_address() -> None:
    """Reading column t through a transposed view of the array tile t writes row t of reads the
    other tiles' rows: a race; reading row t through it is the tile's own and legal."""
    before = one_tile_update()
    why = prove(before, transposed_alias(read_own=False))
    assert kind(why) == "reads elements of", why
    assert "data race" in _interpreted(before, transposed_alias(read_own=False))
    assert prove(before, transposed_alias(read_own=True)) is None
    assert _interpreted(before, transposed_alias(read_own=True)) == ""


def symbolic_set(grid: int, first_row: int) -> Module:
    """A view of y with sizes [%n, 4] whose coordinate set is rows [2, %n + 2): its coordinate (2, 0)
    is element 0. Tile t stores row first_row + t (as coordinates of that view)."""
    b = Builder()
    with b.func("k", [("x", INDEX), ("y", INDEX), ("n", INDEX)], grid=[grid]) as (x, y, n):
        c0 = b.constant(0, INDEX)
        (tid,) = b.tile_id(1)
        d0, d1, s0 = af.dim(0), af.dim(1), af.sym(0)
        cset = af.IntegerSet(num_dims=2, num_symbols=1, constraints=(
            _ge(d0 - 2), _ge(-d0 + s0 + 1), _ge(d1), _ge(-d1 + 3)))
        xv = b.memory_view(x, [1, 4], [4, 1], F32, coordinate_set=box(1, 4))
        yv = b.memory_view(y, [n, 4], [4, 1], F32, coordinate_set=cset)
        r = b.arith.addi(tid, b.constant(first_row, INDEX))
        v = b.load(b.access_tile(xv, [c0, c0], box(1, 4), (1, 4)), F32)
        b.store(v, b.access_tile(yv, [r, c0], box(1, 4), (1, 4)))
        b.func_return()
    return _parse(b.module)


def plain_rows(rows: tuple[int, int]) -> Module:
    """One tile stores x's row into rows [rows[0], rows[1]) of y (4 x 4, row-major)."""
    b = Builder()
    with b.func("k", [("x", INDEX), ("y", INDEX), ("n", INDEX)], grid=[1]) as (x, y, _n):
        c0 = b.constant(0, INDEX)
        xv = b.memory_view(x, [1, 4], [4, 1], F32, coordinate_set=box(1, 4))
        yv = b.memory_view(y, [4, 4], [4, 1], F32, coordinate_set=box(4, 4))
        v = b.load(b.access_tile(xv, [c0, c0], box(1, 4), (1, 4)), F32)
        for r in range(*rows):
            b.store(v, b.access_tile(yv, [b.constant(r, INDEX), c0], box(1, 4), (1, 4)))
        b.func_return()
    return _parse(b.module)


def test_a_coordinate_set_with_unknown_symbols_keeps_its_least_point() -> None:
    """Without %n, the proof took the least point of the set as 0 and placed coordinate rows 2, 3 at
    elements 8 to 15: a schedule writing rows 0, 1 of y was proven equal to one writing rows 2, 3."""
    after = symbolic_set(2, 2)  # rows 2, 3 of the view: elements 0 to 7
    assert prove(plain_rows((0, 2)), after) is None
    assert _interpreted(plain_rows((0, 2)), after, {"n": 4}) == ""
    why = prove(plain_rows((2, 4)), after)
    assert why is not None and "written by no tile" in why, why
    assert "differ" in _interpreted(plain_rows((2, 4)), after, {"n": 4})
    assert prove(plain_rows((0, 2)), after, {"n": 4}) is None  # with %n known: the same verdicts
    assert kind(prove(plain_rows((2, 4)), after, {"n": 4})) == "is written by no tile"


def test_a_view_in_the_executing_tiles_memory_by_its_type_is_not_global() -> None:
    """A view without memory_space whose type says ct_local is in each tile's scratchpad, as the
    interpreter reads it: its stores write no global element (the proof had taken it as global)."""

    def k(grid: int, local: bool) -> Module:
        b = Builder()
        with b.func("k", [("x", INDEX), ("y", INDEX)], grid=[grid]) as (x, y):
            c0 = b.constant(0, INDEX)
            (tid,) = b.tile_id(1)
            xv = b.memory_view(x, [4, 4], [4, 1], F32, coordinate_set=box(4, 4))
            yv = b.memory_view(y, [4, 4], [4, 1], F32, coordinate_set=box(4, 4))
            if local:
                op = b.block.operations[-1]
                del op.attributes["memory_space"]
                op.result_types = [ty.MemRefType(shape=(4, 4), element_type=F32,
                                                 memory_space=at.MemorySpaceAttr(kind="ct_local"))]
            n = 4 // grid
            r = b.arith.muli(tid, b.constant(n, INDEX))
            v = b.load(b.access_tile(xv, [r, c0], box(n, 4), (n, 4)), F32)
            b.store(v, b.access_tile(yv, [r, c0], box(n, 4), (n, 4)))
            b.func_return()
        return _parse(b.module, valid=not local)  # the verifier wants the attribute; the interpreter runs it

    before, after = k(1, False), k(2, True)
    why = prove(before, after)
    assert why is not None and "never stores to %y" in why, why
    assert "differ" in _interpreted(before, after)


def test_two_arguments_never_alias() -> None:
    """The proof treats two arguments as disjoint arrays, as spec/execution.md does: a launch whose
    arrays overlap is a runtime.argument error. x's rows are y's, swapped: tile t reads row 1 - t
    of y and writes row t of x, which is legal only because x is not y; the interpreter agrees, and
    refuses one array for both."""

    def k(grid: int) -> Module:
        b = Builder()
        with b.func("k", [("x", INDEX), ("y", INDEX)], grid=[grid]) as (x, y):
            c0, c1 = b.constant(0, INDEX), b.constant(1, INDEX)
            xv, yv = (b.memory_view(a, [2, 4], [4, 1], F32, coordinate_set=box(2, 4)) for a in (x, y))
            if grid == 1:
                pairs = [(c0, c1), (c1, c0)]
            else:
                (tid,) = b.tile_id(1)
                pairs = [(tid, b.arith.subi(c1, tid))]
            for row, other in pairs:
                v = b.load(b.access_tile(yv, [other, c0], box(1, 4), (1, 4)), F32)
                b.store(v, b.access_tile(xv, [row, c0], box(1, 4), (1, 4)))
            b.func_return()
        return _parse(b.module)

    assert prove(k(1), k(2)) is None
    assert _interpreted(k(1), k(2)) == ""
    arr = np.arange(8, dtype=np.float32)
    with pytest.raises(ri.KtirRuntimeError, match="overlaps"):
        ri.run(k(2), None, {"x": At(arr, 0), "y": At(arr.copy(), 0)})


def rows_in_a_while(grid: int) -> Module:
    """Tile t stores row t of y (2 x 4) inside an scf.while that runs 1 - t times when `grid` is 2
    (tile 1 never stores), once when it is 1 (rows 0 and 1 at once)."""
    from ktir.builder import Value
    from ktir.ir.operation import Region

    b = Builder()
    with b.func("k", [("x", INDEX), ("y", INDEX)], grid=[grid]) as (x, y):
        c0, c1 = b.constant(0, INDEX), b.constant(1, INDEX)
        (tid,) = b.tile_id(1)
        xv, yv = (b.memory_view(a, [2, 4], [4, 1], F32, coordinate_set=box(2, 4)) for a in (x, y))
        rows = 2 // grid
        limit = b.arith.subi(c1, tid)
        first = b.arith.muli(tid, b.constant(rows, INDEX))
        before = b._region_block([INDEX], None, "i")
        after = b._region_block([INDEX], None, "j")
        b.create("scf.while", [c0], [INDEX], {}, [Region(blocks=[before]), Region(blocks=[after])])
        with b.insert_into(before):
            i = Value(before.arguments[0].name, INDEX)
            b.create("scf.condition", [b.cmp("arith.cmpi", "slt", i, limit), i], [])
        with b.insert_into(after):
            j = Value(after.arguments[0].name, INDEX)
            v = b.load(b.access_tile(xv, [first, c0], box(rows, 4), (rows, 4)), F32)
            b.store(v, b.access_tile(yv, [first, c0], box(rows, 4), (rows, 4)))
            b.yield_(b.arith.addi(j, c1))
        b.func_return()
    return _parse(b.module)


def test_a_store_inside_an_scf_while_is_declined() -> None:
    """The while body runs as often as its condition says (not at all on tile 1): the proof had
    modelled its store as run once on every tile and proven the schedule, which loses row 1."""
    before, after = rows_in_a_while(1), rows_in_a_while(2)
    why = prove(before, after)
    assert why is not None and "ktdp.store" in why and "not affine" in why, why
    assert "differ" in _interpreted(before, after)


def gather_after_writing_ids(grid: int) -> Module:
    """ids = src (two i32, written by tile 0 alone), then tile t gathers row ids[t] of the 4 x 8 table
    into row t of out (with one tile: both rows). The gather reads ids where its tile is built."""
    i32 = ty.i(32)
    b = Builder()
    with b.func("k", [("src", INDEX), ("ids", INDEX), ("table", INDEX), ("out", INDEX)], grid=[grid]) as (s, i, t, o):
        c0 = b.constant(0, INDEX)
        (tid,) = b.tile_id(1)
        sv = b.memory_view(s, [2], [1], i32, coordinate_set=box(2))
        iv = b.memory_view(i, [2], [1], i32, coordinate_set=box(2))
        tv = b.memory_view(t, [4, 8], [8, 1], F32, coordinate_set=box(4, 8))
        ov = b.memory_view(o, [2, 8], [8, 1], F32, coordinate_set=box(2, 8))
        with b.if_(b.cmp(Arith.cmpi, "eq", tid, c0)):
            b.store(b.load(b.access_tile(sv, [c0], box(2), (2,)), i32), b.access_tile(iv, [c0], box(2), (2,)))
        rows = 2 // grid
        first = b.arith.muli(tid, b.constant(rows, INDEX))
        gather = b.indirect_access_tile(tv, [rows, 8], lambda m, k: [ind(iv, ssa(first) + ssa(m)), k])
        b.store(b.load(gather, F32), b.access_tile(ov, [first, c0], box(rows, 8), (rows, 8)))
        b.func_return()
    return _parse(b.module)


def test_the_index_view_of_a_gather_is_read() -> None:
    """Tile 1's gather reads ids, which tile 0 writes: a race the proof did not see (the index views of
    an indirect tile were not reads)."""
    before, after = gather_after_writing_ids(1), gather_after_writing_ids(2)
    why = prove(before, after)
    assert why is not None and kind(why) == "reads elements of" and "%ids" in why, why

    def args() -> dict[str, np.ndarray]:  # indices in the table (random ones would leave it)
        return {"src": np.array([2, 1], np.int32), "ids": np.zeros(2, np.int32),
                "table": np.arange(32, dtype=np.float32), "out": np.zeros(16, np.float32)}

    assert ri.run(before, None, args()).outputs["out"].tolist() == list(range(16, 24)) + list(range(8, 16))
    with pytest.raises(ri.KtirRuntimeError, match="data race"):
        ri.run(after, None, args())
