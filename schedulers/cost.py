"""The analytic cost model: machine figures from `ktir.targets`, the roofline bound, transfer costs.

The schedulers evaluate thousands of candidate schedules, so the model is a closed form over
a kernel's loop nest, evaluated on numpy arrays (one element per candidate). It uses the
same figures as `ktir.targets`' timeline simulation: DMA setup + memory latency + ring hops
per transfer, transfers rounded up to the memory granularity, a per-tile DMA queue with
its engines, one global memory channel shared by every active tile, the matrix and vector
rates of the target at the operands' element type, and each unit's startup. A step of a
double-buffered loop costs the larger of its compute and its transfers; without double
buffering it costs their sum.

The roofline bound is `ktir.targets.roofline` applied to the kernel's compulsory work
spread evenly over every tile (each input read once, each output written once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ktir.dialects.names import Ktdp, Linalg
from ktir.targets.machine import Machine
from ktir.targets.records import GLOBAL, KernelTrace, Kind, OpRecord
from ktir.targets.roofline import roofline
from ktir.targets.schema import Target


@dataclass(frozen=True)
class Figures:
    """Per-cycle numbers of one target, read once from `ktir.targets.Machine`."""

    name: str
    tiles: int
    clock_hz: float
    global_bw: float  # B/cycle, shared by all tiles
    dma_bw: float  # B/cycle per engine
    engines: int
    transfer_fixed: float  # cycles: DMA setup + memory latency + mean ring hops
    granularity: int  # bytes (a Spyre stick is 128)
    local_bw: float
    local_capacity: int
    matrix_startup: float
    vector_startup: float
    machine: Machine

    def mac_rate(self, dtype: str) -> float:
        return self.machine.matrix_rate(dtype)[0]

    def vector_rate(self, dtype: str, transcendental: bool = False) -> float:
        return self.machine.vector_rate(dtype, transcendental)[0]

    def rounded(self, nbytes: np.ndarray | float) -> np.ndarray:
        g = self.granularity
        return np.ceil(np.asarray(nbytes, dtype=np.float64) / g) * g

    def transfer(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Cycles one DMA transfer of nbytes occupies an engine (0 for no transfer)."""
        n = np.asarray(nbytes, dtype=np.float64)
        return np.where(n > 0, self.transfer_fixed + self.rounded(n) / self.dma_bw, 0.0)

    def load_step(self, sizes: list[np.ndarray], active: np.ndarray) -> np.ndarray:
        """Cycles to move one block of each size on every active tile at once.

        The tile's DMA engines share the transfers (never faster than the longest one) and
        all active tiles share the global memory channel, whose first byte arrives after the
        fixed latency.
        """
        if not sizes:
            return np.zeros_like(np.asarray(active, dtype=np.float64))
        each = [self.transfer(s) for s in sizes]
        queue = np.maximum(sum(each) / self.engines, np.maximum.reduce(each))
        channel = self.transfer_fixed + active * sum(self.rounded(s) for s in sizes) / self.global_bw
        return np.maximum(queue, channel)

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz


_CACHE: dict[int, tuple[Target, Figures]] = {}


def figures(target: Target) -> Figures:
    """The figures of a target (cached per target object, which is immutable)."""
    found = _CACHE.get(id(target))
    if found is None or found[0] is not target:
        found = _CACHE[id(target)] = (target, _figures(target))
    return found[1]


def _figures(target: Target) -> Figures:
    name = target.name
    m = Machine(target)
    routes = [m.memory_route(t, True).latency for t in range(m.n_tiles)]
    return Figures(
        name=name, tiles=m.n_tiles, clock_hz=m.clock_hz, global_bw=m.global_bw, dma_bw=m.dma_bw, engines=m.dma_engines,
        transfer_fixed=m.dma_setup + m.global_latency + float(np.mean(routes)), granularity=m.global_granularity,
        local_bw=m.local_bw, local_capacity=m.local_capacity, matrix_startup=m.matrix_startup,
        vector_startup=m.vector_startup, machine=m,
    )


@dataclass(frozen=True)
class Work:
    """A kernel's compulsory work, the input to the roofline bound."""

    macs: float = 0.0
    mac_dtype: str = "f16"
    vector: Mapping[str, float] | None = None  # dtype -> simple elements
    transcendental: Mapping[str, float] | None = None  # dtype -> elements
    bytes_read: float = 0.0
    bytes_written: float = 0.0


@dataclass(frozen=True)
class Bound:
    cycles: float
    binding: str


def roofline_bound(work: Work, fig: Figures) -> Bound:
    """`ktir.targets.roofline` of the work spread evenly over every tile of the target."""
    n = fig.tiles
    share: list[dict[str, object]] = []  # the records of one tile
    if work.macs:
        share.append({"op": Linalg.matmul, "kind": Kind.MATRIX, "macs": int(np.ceil(work.macs / n)), "dtype": work.mac_dtype})
    for dt, e in (work.vector or {}).items():
        share.append({"op": "vector", "kind": Kind.VECTOR, "elements": int(np.ceil(e / n)), "dtype": dt})
    for dt, e in (work.transcendental or {}).items():
        share.append({"op": "vector", "kind": Kind.VECTOR, "elements": int(np.ceil(e / n)), "dtype": dt,
                      "transcendental": True})
    if work.bytes_read:
        share.append({"op": Ktdp.load, "kind": Kind.TRANSFER, "bytes_read": {GLOBAL: int(np.ceil(work.bytes_read / n))}})
    if work.bytes_written:
        share.append({"op": Ktdp.store, "kind": Kind.TRANSFER,
                      "bytes_written": {GLOBAL: int(np.ceil(work.bytes_written / n))}})
    records = [OpRecord(tile=t, seq=i, **kw) for t in range(n) for i, kw in enumerate(share)]  # type: ignore[arg-type]
    r = roofline(KernelTrace(records, grid=(n,), name="bound"), fig.machine)
    return Bound(r.bound, r.binding.resource if r.binding else "none")
