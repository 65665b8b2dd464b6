"""Cycles of a row-loop schedule, replayed the way the timeline simulation runs it.

A row block's time is mostly fixed latency: every transfer holds one of the tile's DMA
engines from its issue until its last byte (set-up, memory latency and ring hops, then its
data phase), the engines take transfers in program order, and the tile's port moves one
data phase at a time, also in program order. Which latencies hide behind which data phases
decides the schedule, so a closed form over "load, compute, store" misjudges it (a 1-row
block per tile, or a double-buffered loop whose next block's transfer waits behind this
block's store). This module replays, for every candidate at once (numpy columns), the
busiest tile's program with the rules of `ktir.targets.timeline`:

- the resident loads (made before the loop), then per block its loads, its compute and
  its stores; double-buffered, the loads of block i + 1 are issued before the compute of
  block i and the last block loads nothing ahead;
- a transfer starts when the transfer before it in program order has started, an engine
  is free and what it reads is computed; its data phase starts after its fixed latency
  and after the port's previous data phase, and moves at the tile's share of the global
  channel and of each ring link on its route (static sharing among the active tiles) or
  one engine's bandwidth, whichever is lower (the slowest tile's figures);
- a block's compute starts when its loads and the resident loads have arrived and the
  previous block's compute is done.

The first `WARM` blocks are replayed; later blocks repeat the last replayed block's period.
"""

from __future__ import annotations

import numpy as np

from .cost import Figures

WARM = 6  # blocks replayed before extrapolating with the steady period


_SHARES: dict[tuple[int, int], tuple[float, float, float]] = {}


def shares(fig: Figures, active: int) -> tuple[float, float, float]:
    """For tiles 0 .. active - 1 moving data to and from global memory: the largest fixed
    latency of a transfer, and the lowest rate a tile's reads and its writes get, under the
    timeline's static sharing (each channel split evenly among the tiles routing over it)."""
    key = (id(fig), active)
    found = _SHARES.get(key)
    if found is not None:
        return found
    m = fig.machine
    capacity = m.channel_capacity()
    memory = f"memory.{m.global_name}"
    routes = {(t, d): m.memory_route(t, d) for t in range(active) for d in (True, False)}
    users: dict[str, set[int]] = {memory: set(range(active))}
    for (t, _), r in routes.items():
        for link in r.links:
            users.setdefault(f"link.{link}", set()).add(t)

    def rate(inbound: bool) -> float:
        return min(min([m.dma_bw] + [capacity[c] / len(users[c]) for c in [memory, *(f"link.{x}" for x in r.links)]])
                   for (t, d), r in routes.items() if d == inbound)

    found = _SHARES[key] = (max(m.transfer_latency(r) for r in routes.values()), rate(True), rate(False))
    return found


class _Tile:
    """One tile's DMA engines, port and transfer order, as columns over the candidates."""

    def __init__(self, n: int, engines: int, fixed: np.ndarray, rate_in: np.ndarray, rate_out: np.ndarray) -> None:
        self.free = np.zeros((engines, n))  # when each engine is free
        self.port = np.zeros(n)  # when the port's last data phase ends
        self.last_start = np.zeros(n)  # the previous transfer's start (program order)
        self.fixed, self.rate_in, self.rate_out = fixed, rate_in, rate_out

    def transfer(self, nbytes: float | np.ndarray, after: np.ndarray, on: np.ndarray | None = None,
                 write: bool = False) -> np.ndarray:
        """Issue a transfer of `nbytes` (where `on` is true) that may not start before `after`; its end."""
        lane = np.argmin(self.free, axis=0)
        cols = np.arange(self.free.shape[1])
        start = np.maximum(np.maximum(self.last_start, after), self.free[lane, cols])
        data = np.maximum(start + self.fixed, self.port)
        end = data + np.asarray(nbytes, dtype=np.float64) / (self.rate_out if write else self.rate_in)
        if on is None:
            on = np.ones(end.shape, dtype=bool)
        self.last_start = np.where(on, start, self.last_start)
        self.port = np.where(on, end, self.port)
        self.free[lane, cols] = np.where(on, end, self.free[lane, cols])
        return np.where(on, end, after)


def row_cycles(fig: Figures, steps: np.ndarray, active: np.ndarray, ins: list[np.ndarray], outs: list[np.ndarray],
               resident: list[float], compute: np.ndarray, db: np.ndarray) -> np.ndarray:
    """Cycles of the busiest tile: `steps` blocks, each loading `ins` bytes, computing for
    `compute` cycles and storing `outs` bytes, after loading `resident` bytes once."""
    n = steps.shape[0]
    table = np.array([shares(fig, a) for a in range(1, fig.tiles + 1)])
    at = np.clip(active.astype(np.int64), 1, fig.tiles) - 1
    tile = _Tile(n, fig.engines, table[at, 0], table[at, 1], table[at, 2])
    zero = np.zeros(n)
    ready = zero.copy()
    for r in resident:
        ready = np.maximum(ready, tile.transfer(fig.rounded(r), zero))
    rounded_in = [fig.rounded(b) for b in ins]
    rounded_out = [fig.rounded(b) for b in outs]

    def load(after: np.ndarray, on: np.ndarray | None = None) -> np.ndarray:
        got = after
        for b in rounded_in:
            got = np.maximum(got, tile.transfer(b, zero, on))
        return got

    loaded = np.where(db, load(zero, db), zero)  # the first block, before a double-buffered loop
    done = zero.copy()  # the previous block's compute
    finish = zero.copy()
    period = zero.copy()
    last = zero.copy()
    warm = int(min(WARM, max(1, int(steps.max()))))
    for i in range(warm):
        live = steps > i
        nxt = np.where(db, load(zero, db & (steps > i + 1)), zero)  # issued ahead of this block's compute
        here = np.where(db, loaded, load(zero, live & ~db))
        start = np.maximum(np.maximum(here, ready), done)
        end = start + compute
        stored = end
        for b in rounded_out:
            stored = np.maximum(stored, tile.transfer(b, end, live, write=True))
        period = np.where(live, end - last, period)
        last = np.where(live, end, last)
        done = np.where(live, end, done)
        finish = np.where(live, np.maximum(finish, stored), finish)
        loaded = np.where(db, nxt, loaded)
    extra = np.maximum(steps - warm, 0)
    return finish + extra * period


__all__ = ["row_cycles"]
