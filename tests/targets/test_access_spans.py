"""Byte spans of access tiles and the ordering the adapter derives from them (hypothesis).

The interpreter records, for each ktdp.load and ktdp.store, the bytes its access tile may
touch (`reference_interp.trace.access_span`); the adapter orders two accesses of one buffer
only when `_overlap` says they may share a byte, and forgets an earlier access once a later
write covers it (`_within`). Both must be sound on every box of every strided view: a missed
overlap would let the timeline run a store before the load it must follow.
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ktir.targets.from_interp import _overlap, _within
from reference_interp.trace import access_span

BASE = 4096  # the allocation's address in global memory


@st.composite
def boxes(draw: Any, shape: tuple[int, ...], itemsize: int) -> Any:
    """An access tile over a view of a `shape` array: row-major or transposed strides, any box."""
    order = draw(st.permutations(range(len(shape))))
    strides = [0] * len(shape)
    step = itemsize
    for d in reversed(order):  # the last dimension of `order` is the contiguous one
        strides[d] = step
        step *= shape[d]
    lo = tuple(draw(st.integers(0, n - 1)) for n in shape)
    ext = tuple(draw(st.integers(1, n - a)) for a, n in zip(lo, shape, strict=True))
    alloc = SimpleNamespace(base=BASE, owner=None)
    view = SimpleNamespace(alloc=alloc, boff=0, bstrides=tuple(strides), space="global", itemsize=itemsize)
    return SimpleNamespace(view=view, lo=lo, ext=ext, coords=None)


def touched(tile: Any) -> set[int]:
    out: set[int] = set()
    for point in itertools.product(*(range(a, a + e) for a, e in zip(tile.lo, tile.ext, strict=True))):
        addr = BASE + tile.view.boff + sum(p * s for p, s in zip(point, tile.view.bstrides, strict=True))
        out.update(range(addr, addr + tile.view.itemsize))
    return out


@st.composite
def pairs(draw: Any) -> tuple[Any, Any]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    itemsize = draw(st.sampled_from([1, 2, 4]))
    a = draw(boxes(shape, itemsize))
    # the second access: the same view's strides, or another view (reshaped to 1-D) of the same bytes
    b = draw(boxes(shape, itemsize)) if draw(st.booleans()) else draw(boxes((math.prod(shape),), itemsize))
    return a, b


@settings(max_examples=300, deadline=None)
@given(pairs())
def test_spans_are_sound(pair: tuple[Any, Any]) -> None:
    a, b = pair
    sa, sb = access_span(a), access_span(b)
    assert sa is not None and sb is not None
    ta, tb = touched(a), touched(b)
    assert sa[1] <= min(ta) and max(ta) < sa[2]  # the byte range holds every byte the tile touches
    if ta & tb:
        assert _overlap(sa, sb) and _overlap(sb, sa)
    if _within(sa, sb):
        assert ta <= tb


def test_interleaved_halves_are_disjoint_and_whole_rows_cover() -> None:
    def tile(lo: tuple[int, int], ext: tuple[int, int]) -> Any:
        alloc = SimpleNamespace(base=BASE, owner=None)
        view = SimpleNamespace(alloc=alloc, boff=0, bstrides=(256, 2), space="global", itemsize=2)
        return SimpleNamespace(view=view, lo=lo, ext=ext, coords=None)

    left, right, rows = access_span(tile((0, 0), (2, 64))), access_span(tile((0, 64), (2, 64))), access_span(tile((0, 0), (2, 128)))
    assert not _overlap(left, right)  # byte ranges interleave, elements do not
    assert _overlap(left, rows) and _within(left, rows) and _within(right, rows)
    assert not _within(rows, left)
    assert _overlap(None, left) and _within(left, None)  # an unknown span conflicts with and covers everything
    other = SimpleNamespace(view=SimpleNamespace(alloc=SimpleNamespace(base=BASE, owner=3), boff=0, bstrides=(2,),
                                                 space="ct_local", itemsize=2), lo=(0,), ext=(4,), coords=None)
    assert access_span(other)[0] == "ct_local:3" and not _overlap(access_span(other), left)  # another memory
