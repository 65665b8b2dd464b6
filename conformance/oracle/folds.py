"""Sequential folds of a binary op along an axis, every step rounded as the op rounds.

For combiners exact in any order (max, min, integer ops) this is the exact reduction; for a
loop that carries a float sum (`scf.for` with `iter_args`), whose order the program fixes,
it is the exact result of that loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.oracle import scalar
from conformance.oracle.elementwise import INT_WIDTH, int_array, ints
from conformance.oracle.formats import exact_array, format_of, round_exact, to_numpy


def fold(op: str, x: np.ndarray, axis: int, init: np.ndarray, t: str) -> np.ndarray:
    """init[i] op x[i, 0] op x[i, 1] ... along `axis`, left to right, in type `t`."""
    moved = np.moveaxis(np.asarray(x), axis, -1)
    if t in INT_WIDTH:
        w = INT_WIDTH[t]
        xs, acc = ints(moved), ints(np.asarray(init))
        out = np.empty(acc.shape, dtype=object)
        v: Any
        for idx in np.ndindex(acc.shape):
            v = acc[idx]
            for e in xs[idx]:
                v = scalar.int_binary(op, v, e, w)
            out[idx] = v
        return int_array(out, t)
    f = format_of(t)
    fn = scalar.FLOAT_BINARY[op]
    xs, acc = exact_array(moved), exact_array(np.asarray(init))
    out = np.empty(acc.shape, dtype=object)
    for idx in np.ndindex(acc.shape):
        v = acc[idx]
        for e in xs[idx]:
            v = round_exact(fn(v, e), f)
        out[idx] = v
    return to_numpy(out, f)
