"""An example scheduler plugin: the largest blocks that fit the scratchpad, double-buffered.

It reuses KTIR's kernel classes, cost model and rewrites through
`schedulers.builtin.StrategyScheduler` and only supplies a strategy: among the
candidates that fit, take the one with the fewest loop steps per tile (largest blocks),
preferring double buffering, then the cost model's estimate.
"""

from __future__ import annotations

import numpy as np

from schedulers.api import NoLegalSchedule, ScheduleOptions
from schedulers.builtin import StrategyScheduler
from schedulers.spaces import Space, row


def largest_block(space: Space, options: ScheduleOptions) -> tuple[dict[str, int], int]:
    cols = space.candidates()
    ev = space.evaluate(cols)
    fits = ev.scratch <= space.fig.local_capacity
    if not fits.any():
        raise NoLegalSchedule(space.fit_message())
    block = np.ones(ev.size)
    for name in ("bm", "bn", "bk", "rb", "bq", "bkv"):
        if name in cols:
            block = block * cols[name]
    db = cols.get("db", np.zeros(ev.size, dtype=np.int64))
    order = np.lexsort((ev.cycles, -db, -block, ~fits))
    return row(cols, int(order[0])), ev.size


class LargestBlockScheduler(StrategyScheduler):
    name = "largest-block"
    strategy = staticmethod(largest_block)  # type: ignore[assignment]
