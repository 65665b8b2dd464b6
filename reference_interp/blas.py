"""BLAS threads during a run.

The interpreter runs tiles one after another, so each contraction is one tile's block
(typically a few hundred rows and columns): BLAS threads would split work that takes a
millisecond, and on a machine shared with other processes they mostly wait for each other
(about 16x the CPU time of one thread for 512 x 256 x 256 blocks on a busy 2-core machine).
So a run limits BLAS to `Options.blas_threads` (default 1) while it executes, through
threadpoolctl, and restores the previous limits when it ends. The limit is applied at the
run's first contraction only (finding the BLAS library costs milliseconds once per process),
so runs without matmuls pay nothing. The limit is applied and restored through each BLAS
library's own thread-count calls (threadpoolctl's LibController: a fraction of a microsecond
each), and only for the libraries not already at the wanted count: threadpoolctl's limiter
object (`ThreadpoolController.limit`) collects every library's description on each use, about
140 us to apply and 30 us to restore on a loaded machine, 15% of a 1 ms run with a few matmuls.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()
_controller: Any = None
_wanted: list[int | None] = []  # the thread counts of the runs in progress (innermost last)
# what the run in progress changed, restored when the last run ends: [(library, its thread count
# before)], [] when nothing needed changing, a threadpoolctl limiter (libraries whose count is
# unknown), None before the first contraction
_applied: Any = None


def begin(threads: int | None) -> None:
    """A run starts: contractions from now on use at most `threads` BLAS threads (None: leave
    BLAS as it is)."""
    with _LOCK:
        _wanted.append(threads)


def end() -> None:
    """A run ends: restore BLAS's limits once no run is in progress."""
    global _applied
    with _LOCK:
        if _wanted:
            _wanted.pop()
        if not _wanted and _applied is not None:
            if isinstance(_applied, list):
                for lib, threads in _applied:
                    lib.set_num_threads(threads)
            else:
                _applied.restore_original_limits()
            _applied = None


def before_contraction() -> None:
    """Called before each BLAS call: applies the running run's limit the first time."""
    global _controller, _applied
    if _applied is not None or not _wanted or _wanted[-1] is None:
        return
    with _LOCK:
        if _applied is not None or not _wanted or _wanted[-1] is None:
            return
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # a declared dependency; without it BLAS keeps its own choice
            _wanted[-1] = None
            return
        if _controller is None:
            _controller = ThreadpoolController()
        want = _wanted[-1]
        libs = [lib for lib in _controller.lib_controllers if lib.user_api == "blas"]
        counts = [lib.get_num_threads() for lib in libs]
        if any(not isinstance(n, int) for n in counts):
            _applied = _controller.limit(limits=want, user_api="blas")
            return
        changed = []
        for lib, n in zip(libs, counts, strict=True):
            if n != want:
                lib.set_num_threads(want)
                changed.append((lib, n))
        _applied = changed
