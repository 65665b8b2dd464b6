"""The KTIR reference interpreter: exact SPMD semantics on a simulated grid.

    >>> import numpy as np, ktir, reference_interp
    >>> m = ktir.parse(open("examples/vector_add.ktir").read(), "vector_add.ktir")
    >>> n = 65536  # the kernel adds blocks of 65,536 elements: N is a multiple of that
    >>> a = np.ones(n, np.float16); b = np.full(n, 0.5, np.float16)
    >>> r = reference_interp.run(m, args={"A": a, "B": b, "C": np.zeros(n, np.float16), "N": n})
    >>> bool((r.outputs["C"] == a + b).all())
    True

`run()` executes the function on every compute tile of its `grid` and returns a
`RunResult`: the final contents of every array argument, per-tile statistics and, with
`trace=True`, an event trace for the cost model. Every runtime check (out-of-view
coordinates, data races between tiles, reads of unwritten scratchpad memory, scratchpad
capacity, step and memory limits, deadlocks) raises a `KtirRuntimeError` naming the op,
the tile and the coordinate. See README.md for the execution and memory model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ktir.dialects.names import Builtin, Func
from ktir.lazy import lazy_exports

if TYPE_CHECKING:
    from reference_interp.errors import KtirRuntimeError
    from reference_interp.executor import At, Local, RunResult, run
    from reference_interp.runtime import SPYRE_SCRATCHPAD, TARGETS, Options
    from reference_interp.trace import TileStats, TraceEvent

# loaded on first use (ktir.lazy): importing a submodule such as the CLI's stays cheap
__getattr__ = lazy_exports(
    __name__,
    {
        "KtirRuntimeError": "reference_interp.errors",
        "At": "reference_interp.executor",
        "Local": "reference_interp.executor",
        "RunResult": "reference_interp.executor",
        "run": "reference_interp.executor",
        "SPYRE_SCRATCHPAD": "reference_interp.runtime",
        "TARGETS": "reference_interp.runtime",
        "Options": "reference_interp.runtime",
        "TileStats": "reference_interp.trace",
        "TraceEvent": "reference_interp.trace",
    },
)


def implemented_ops() -> frozenset[str]:
    """Names of the ops the interpreter executes (read by the docs' status table)."""
    from ktir.dialects.registry import OPS
    from reference_interp.compiler import FACTORIES, TERMINATORS

    structural = {Builtin.module, Func.func}  # run as the program's structure itself
    return frozenset(n for n in OPS if n in FACTORIES or n in TERMINATORS or n in structural)


__all__ = [
    "SPYRE_SCRATCHPAD",
    "TARGETS",
    "At",
    "KtirRuntimeError",
    "Local",
    "Options",
    "RunResult",
    "TileStats",
    "TraceEvent",
    "implemented_ops",
    "run",
]
