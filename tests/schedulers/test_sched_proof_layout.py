"""The legality proof on view coordinates (`schedulers.proof.coordinate_layout`) is the proof on element offsets.

The proof compares the accesses of an argument by view coordinates when they all go through
one layout that is one-to-one on what they touch, because isl's subtraction of two sets of
element offsets can take seconds (a transpose of [33, 49, 16]: 16 s). These tests make sure
the shortcut changes no verdict: on random divisions of an in-place update (tiles taking
blocks of rows that overlap, leave gaps, run past the end, or read a neighbour's block,
through views laid out like the input's, transposed, flat, or wider than a row), the
verdict on coordinates, the verdict on element offsets and a brute-force enumeration of the
elements each tile reads and writes all agree; and an illegal division the shortcut sees
(a replicated store of a transposed view) is still refused.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ktir
from ktir.builder import Builder, box
from ktir.ir import types as ty
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from schedulers.kernels import function_of
from schedulers.proof import coordinate_layout, footprint, prove

INDEX = ty.IndexType()
F32 = ty.FloatType(kind="f32")
LAYOUTS = ("same", "transposed", "flat", "wide")


def whole(R: int, C: int, unit: bool = False) -> Module:
    """One tile: y = y (read and written whole through an [R, C] row-major view; [R, C, 1] with a
    last dimension of one element, stride 1, when `unit`)."""
    b = Builder()
    with b.func("k", [("y_ptr", INDEX)], grid=[1]) as (yp,):
        c0 = b.constant(0, INDEX)
        shape, strides = ([R, C, 1], [C, 1, 1]) if unit else ([R, C], [C, 1])
        y = b.memory_view(yp, shape, strides, F32, coordinate_set=box(*shape))
        v = b.load(b.access_tile(y, [c0] * len(shape), box(*shape), shape), F32)
        b.store(v, b.access_tile(y, [c0] * len(shape), box(*shape), shape))
        b.func_return()
    return ktir.parse(print_module(b.module), "whole.ktir")


def divided(R: int, C: int, grid: int, step: int, first: int, rows: int, shift: int, layout: str,
            unit: int | None = None) -> Module:
    """Tile t reads rows [r + shift, r + shift + rows) and writes rows [r, r + rows) of y, where
    r = first + t * step, through a view laid out as `layout`: "same" ([R, C], strides [C, 1]),
    "transposed" ([C, R], strides [1, C]), "flat" ([R * C], stride 1) or "wide" (rows of C + 1
    elements with stride C: a row's last element is the next row's first). With `unit` (not
    "flat") the view has a last dimension of one element, stride 1, and the accesses take
    coordinate `unit` in it (1: every element moves one further)."""
    b = Builder()
    with b.func("k", [("y_ptr", INDEX)], grid=[grid]) as (yp,):
        c0 = b.constant(0, INDEX)
        (tid,) = b.tile_id(1)
        r = b.arith.addi(b.arith.muli(tid, b.constant(step, INDEX)), b.constant(first, INDEX))
        rr = b.arith.addi(r, b.constant(shift, INDEX))
        tail = [] if unit is None else [b.constant(unit, INDEX)]
        one = [] if unit is None else [1]
        if layout == "transposed":
            shape = [C, R, *one]
            y = b.memory_view(yp, shape, [1, C, *one], F32, coordinate_set=box(*shape))
            read, write = ([b.access_tile(y, [c0, at, *tail], box(C, rows, *one), (C, rows, *one)) for at in (rr, r)])
        elif layout == "flat":
            y = b.memory_view(yp, [R * C], [1], F32, coordinate_set=box(R * C))
            cc = b.constant(C, INDEX)
            read, write = ([b.access_tile(y, [b.arith.muli(at, cc)], box(rows * C), (rows * C,)) for at in (rr, r)])
        else:
            w = C + 1 if layout == "wide" else C
            shape = [R, w, *one]
            y = b.memory_view(yp, shape, [C, 1, *one], F32, coordinate_set=box(*shape))
            read, write = ([b.access_tile(y, [at, c0, *tail], box(rows, w, *one), (rows, w, *one)) for at in (rr, r)])
        b.store(b.load(read, F32), write)
        b.func_return()
    return ktir.parse(print_module(b.module), "divided.ktir")


def oracle(R: int, C: int, grid: int, step: int, first: int, rows: int, shift: int, layout: str,
           unit: int | None = None) -> str | None:
    """The verdict by enumerating the element offsets each tile reads and writes (the proof's order:
    an access outside its view, a store writing one element twice, two writers, a read of another
    tile's write, an element lost, an element extra)."""
    width = C + 1 if layout == "wide" else C
    moved = unit if unit is not None and layout != "flat" else 0
    # the scheduled module must be free of dynamic errors first: every block inside the view's R rows (and
    # coordinate 0 of a unit dimension), and no store writing one element twice (a wide row's last
    # element is the next row's first)
    starts = [first + t * step + d for t in range(grid) for d in (0, shift)]
    if moved or any(r0 < 0 or r0 + rows > R for r0 in starts):
        return "outside its coordinate set"
    if layout == "wide" and rows > 1:
        return "one element twice"

    def block(r0: int) -> set[int]:
        return {(r0 + i) * C + j + moved for i in range(rows) for j in range(width)}

    writes = [block(first + t * step) for t in range(grid)]
    reads = [block(first + t * step + shift) for t in range(grid)]
    for t in range(grid):
        for u in range(grid):
            if t != u and writes[t] & writes[u]:
                return "both write element"
    for t in range(grid):
        for u in range(grid):
            if t != u and reads[t] & writes[u]:
                return "reads elements of"
    got, want = set().union(*writes), set(range(R * C))
    if want - got:
        return "is written by no tile"
    if got - want:
        return "which the input does not write"
    return None


def kind(why: str | None) -> str | None:
    if why is None:
        return None
    found = [k for k in ("both write element", "reads elements of", "is written by no tile",
                         "which the input does not write", "outside its coordinate set", "one element twice")
             if k in why]
    assert len(found) == 1, why
    return found[0]


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(R=st.integers(2, 12), C=st.integers(1, 9), grid=st.integers(1, 5), step=st.integers(0, 5),
       first=st.integers(0, 2), rows=st.integers(1, 6), shift=st.sampled_from([0, 0, 0, 1, -1]),
       layout=st.sampled_from(LAYOUTS), unit=st.sampled_from([None, None, 0, 0, 1]))
@example(R=4, C=3, grid=2, step=2, first=0, rows=2, shift=0, layout="wide", unit=None)  # a row's end is the next block's start
@example(R=4, C=3, grid=2, step=2, first=0, rows=2, shift=0, layout="transposed", unit=None)  # legal
@example(R=6, C=3, grid=3, step=2, first=0, rows=2, shift=1, layout="transposed", unit=None)  # reads the next block
@example(R=4, C=3, grid=2, step=2, first=0, rows=2, shift=0, layout="same", unit=0)  # legal, a unit dimension
@example(R=4, C=3, grid=2, step=2, first=0, rows=2, shift=0, layout="transposed", unit=1)  # every element one further
def test_coordinates_and_element_offsets_give_the_enumerated_verdict(R: int, C: int, grid: int, step: int, first: int,
                                                                    rows: int, shift: int, layout: str,
                                                                    unit: int | None) -> None:
    if first + shift < 0:
        shift = 0
    if step > rows and layout == "wide":  # blocks far apart: make every other one adjacent (aliasing) instead
        step = rows
    before, after = whole(R, C, unit is not None), divided(R, C, grid, step, first, rows, shift, layout, unit)
    want = oracle(R, C, grid, step, first, rows, shift, layout, unit)
    fast, slow = prove(before, after), prove(before, after, coordinates=False)
    assert kind(slow) == want, slow
    assert kind(fast) == want, fast


def _accesses(m: Module) -> list:  # type: ignore[type-arg]
    fp = footprint(m, function_of(m, None))
    assert not fp.problems, fp.problems
    return fp.writes + fp.reads


def test_the_shortcut_is_taken_only_where_it_is_one_to_one() -> None:
    R, C = 8, 5
    base = _accesses(whole(R, C))
    same = _accesses(divided(R, C, 4, 2, 0, 2, 0, "same"))
    assert coordinate_layout(base + same) == (0, (C, 1), 0)
    transposed = _accesses(divided(R, C, 4, 2, 0, 2, 0, "transposed"))
    assert coordinate_layout(base + transposed) == (0, (C, 1), 0)  # the same layout, dimensions in stride order
    assert coordinate_layout(base + _accesses(divided(R, C, 4, 2, 0, 2, 0, "flat"))) is None  # two layouts
    wide = _accesses(divided(R, C, 4, 2, 0, 2, 0, "wide"))  # column C is the next row's column 0
    assert wide[0].layout == (0, (C, 1), 0) and coordinate_layout(base + wide) is None
    past = _accesses(divided(R, C, 4, 2, 1, 2, 0, "transposed"))  # rows up to R: still one-to-one (k0 unbounded)
    assert coordinate_layout(base + past) == (0, (C, 1), 0)
    unit = _accesses(whole(R, C, True))  # a dimension of one element repeats stride 1
    assert coordinate_layout(unit + _accesses(divided(R, C, 4, 2, 0, 2, 0, "transposed", 0))) == (0, (C, 1), 1)
    assert coordinate_layout(unit + _accesses(divided(R, C, 4, 2, 0, 2, 0, "transposed", 1))) is None  # off its corner


def test_a_replicated_store_of_a_transposed_view_is_refused() -> None:
    """Every tile writes the whole transposed array: found on coordinates, with the element named."""
    R, C = 33, 7
    before = whole(R, C)
    after = divided(R, C, 4, 0, 0, R, 0, "transposed")
    assert coordinate_layout(_accesses(before) + _accesses(after)) is not None
    why = prove(before, after)
    assert why is not None and "both write element" in why and "exactly one tile" in why, why
    elem = int(why.split("both write element ")[1].split(" ")[0])
    assert 0 <= elem < R * C


@pytest.mark.parametrize("layout", ["same", "transposed", "flat"])
def test_a_legal_division_is_proven_in_every_layout(layout: str) -> None:
    R, C = 33, 7
    assert prove(whole(R, C), divided(R, C, 3, 11, 0, 11, 0, layout)) is None
    why = prove(whole(R, C), divided(R, C, 3, 11, 0, 10, 0, layout))  # one row of each block lost
    assert why is not None and "is written by no tile" in why, why


def test_a_proof_past_its_budget_is_not_a_proof() -> None:
    """The proof has a budget of isl operations; a schedule it cannot prove within it is declined,
    never accepted, and a proof within it is unchanged."""
    before, after = whole(33, 7), divided(33, 7, 3, 11, 0, 11, 0, "flat")  # compared as element offsets
    assert prove(before, after) is None and prove(before, after, max_operations=0) is None
    why = prove(before, after, max_operations=100)
    assert why is not None and "not proven" in why and "100 isl operations" in why, why
    assert prove(before, after) is None  # the budget is per proof: the next one starts afresh
