"""Result buffers of large elementwise ops, reused once nothing refers to them.

A loop that computes a large tensor per iteration (the ring all-reduce's 256 KiB partial
sums) otherwise asks the C allocator for a fresh buffer every time, and the allocator, which
returns memory of that size to the system when it is freed, hands back pages the kernel must
fault in and zero again (measured: a quarter of such additions took 64 faults and three times
as long). A buffer is handed out again only when this pool holds the only reference to it:
values in frames, messages, iter_args, views of it (which refer to their base) and the arrays
a run returns all count, so a buffer anything can still read is never written.

The pool is per thread (runs in other threads never share a buffer) and bounded.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

MIN_BYTES = 1 << 16  # smaller results are cheap to allocate: not pooled
MAX_BUFFERS = 32
MAX_BYTES = 64 << 20

_local = threading.local()


def _pool() -> list[np.ndarray]:
    pool: list[np.ndarray] | None = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = []
    return pool


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-contiguous array of `shape` and `dtype`: a pooled buffer nothing
    else refers to, or a new one (kept in the pool while it has room)."""
    pool = _pool()
    for buf in pool:
        # 3 references: the pool's list, `buf`, getrefcount's argument
        if sys.getrefcount(buf) == 3 and buf.shape == shape and buf.dtype == dtype:
            return buf
    buf = np.empty(shape, dtype)
    if len(pool) < MAX_BUFFERS and sum(b.nbytes for b in pool) + buf.nbytes <= MAX_BYTES:
        pool.append(buf)
    return buf


def binary(ufunc: Any, x: Any, y: Any, dtype: Any) -> np.ndarray | None:
    """ufunc(x, y) into a recycled buffer when x and y are arrays of `dtype` and one shape
    and large enough to pool (the values x + y etc. give: one type, no casting); None
    otherwise (the caller computes it its usual way)."""
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.nbytes < MIN_BYTES or x.shape != y.shape \
            or x.dtype != dtype or y.dtype != dtype:
        return None
    return ufunc(x, y, out=empty(x.shape, dtype))  # type: ignore[no-any-return]


def clear() -> None:
    """Forget this thread's buffers (the memory returns once nothing else refers to them)."""
    _pool().clear()
