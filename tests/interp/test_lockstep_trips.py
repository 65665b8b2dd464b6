"""lockstep_ops._trips (the common trip count of a loop's lanes): over a few lanes it counts in
Python integers. Its answers and failures against the numpy formula it replaces, for bounds
and steps that are numbers or arrays over the lanes (Diverged when a step is not positive, when
the bounds are too far apart, when lanes differ)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from reference_interp.lockstep import Diverged
from reference_interp.lockstep_ops import _trips

from .helpers import FAST


def _numpy_trips(lo: Any, hi: Any, step: Any) -> int | str:
    lo_a, hi_a, st_a = (np.asarray(x, dtype=np.int64) for x in (lo, hi, step))
    if (st_a <= 0).any():
        return "step"
    if int(hi_a.max()) - int(lo_a.min()) >= 1 << 62:
        return "far"
    count = np.where(hi_a > lo_a, (hi_a - lo_a + st_a - 1) // st_a, 0)
    first = int(count.reshape(-1)[0])
    return first if (count == first).all() else "differ"


def _outcome(lo: Any, hi: Any, step: Any) -> int | str:
    try:
        return _trips(lo, hi, step)
    except Diverged as e:
        return {"scf.for step is not positive": "step", "loop bounds too far apart": "far"}.get(e.why, "differ")


values = st.integers(-40, 40)


@st.composite
def bounds(draw: st.DrawFn) -> tuple[Any, Any, Any]:
    lanes = draw(st.sampled_from([(4,), (2, 3), (1,), (4, 1)]))
    out: list[Any] = []
    for which in range(3):
        if draw(st.booleans()):
            out.append(draw(values) if which < 2 else draw(st.integers(-2, 9)))
        else:
            elems = st.integers(-2, 9) if which == 2 else values
            # lanes that mostly agree: the same value, or a few others
            base = draw(elems)
            arr = np.full(lanes, base, np.int64)
            if draw(st.booleans()):
                arr.reshape(-1)[draw(st.integers(0, arr.size - 1))] = draw(elems)
            out.append(arr)
    return out[0], out[1], out[2]


@given(bounds())
@FAST
def test_trips_over_a_few_lanes_are_the_numpy_formulas(b: tuple[Any, Any, Any]) -> None:
    lo, hi, step = b
    if all(type(x) is int for x in b):
        return  # the scalar path (trip_count) is not the one replaced
    assert _outcome(lo, hi, step) == _numpy_trips(lo, hi, step)


def test_far_apart_bounds_and_arrays_of_other_shapes() -> None:
    lo = np.array([0, -(1 << 61)], np.int64)
    assert _outcome(lo, np.int64(1 << 61), 1) == "far"
    # lanes of two shapes (broadcast): the numpy formula decides
    lo2 = np.array([[0], [0]], np.int64)
    hi2 = np.array([[5, 5, 5]], np.int64)
    assert _outcome(lo2, hi2, 1) == _numpy_trips(lo2, hi2, 1) == 5
