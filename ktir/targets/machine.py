"""A target as the cost model sees it: rates per cycle, routes through the interconnect."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .records import CT_LOCAL, GLOBAL, Kind, OpRecord
from .schema import Crossbar, MatrixEngine, Mesh2D, Ring, SystolicArray, Target, VectorUnit


@dataclass(frozen=True)
class Route:
    """The interconnect links a transfer crosses, in order, and the cycles that adds."""

    links: tuple[str, ...]
    latency: float


class Topology:
    """Links (directed, by id) with their capacities, and a fixed route between any two tiles."""

    def __init__(self, target: Target) -> None:
        ic = target.interconnect
        self.n = target.tiles.count.value
        self.kind = ic.topology
        self.capacity: dict[str, float] = {}
        clock = target.clock_hz
        if isinstance(ic, Crossbar):
            self.hop_latency = ic.latency_cycles.value
            bw = ic.port_bandwidth.per_cycle(clock)
            for t in range(self.n):
                self.capacity[f"out{t}"] = bw
                self.capacity[f"in{t}"] = bw
        else:
            self.hop_latency = ic.hop_latency_cycles.value
            bw = ic.link_bandwidth.per_cycle(clock)
            for a, b in self._edges(ic):
                self.capacity[link_id(a, b)] = bw
        self.ic = ic
        self._cache: dict[tuple[int, int], tuple[str, ...]] = {}

    def _edges(self, ic: Ring | Mesh2D) -> list[tuple[int, int]]:
        n = self.n
        edges: set[tuple[int, int]] = set()
        if isinstance(ic, Ring):
            for a in range(n):
                b = (a + 1) % n
                if a != b:
                    edges.add((a, b))
                    if ic.bidirectional:
                        edges.add((b, a))
            return sorted(edges)
        cols, rows = ic.shape.value
        for t in range(n):
            x, y = t % cols, t // cols
            for dx, dy in ((1, 0), (0, 1)):
                nx, ny = x + dx, y + dy
                if nx >= cols or ny >= rows:
                    if not ic.wraparound:
                        continue
                    nx, ny = nx % cols, ny % rows
                u = ny * cols + nx
                if u != t:
                    edges.add((t, u))
                    edges.add((u, t))
        return sorted(edges)

    def route(self, src: int, dst: int) -> tuple[str, ...]:
        """Links from tile `src` to tile `dst` (empty when they are the same tile)."""
        key = (src, dst)
        found = self._cache.get(key)
        if found is None:
            found = self._route(src, dst)
            self._cache[key] = found
        return found

    def _route(self, src: int, dst: int) -> tuple[str, ...]:
        if src == dst:
            return ()
        ic = self.ic
        if isinstance(ic, Crossbar):
            return (f"out{src}", f"in{dst}")
        if isinstance(ic, Ring):
            return tuple(link_id(a, b) for a, b in _steps_1d(src, dst, self.n, ic.bidirectional, True))
        cols, rows = ic.shape.value
        sx, sy, dx, dy = src % cols, src // cols, dst % cols, dst // cols
        links: list[str] = []
        for a, b in _steps_1d(sx, dx, cols, True, ic.wraparound):
            links.append(link_id(sy * cols + a, sy * cols + b))
        for a, b in _steps_1d(sy, dy, rows, True, ic.wraparound):
            links.append(link_id(a * cols + dx, b * cols + dx))
        return tuple(links)

    def latency(self, links: tuple[str, ...]) -> float:
        if self.kind == "crossbar":
            return self.hop_latency if links else 0.0
        return self.hop_latency * len(links)


def link_id(a: int, b: int) -> str:
    return f"{a}->{b}"


def _steps_1d(a: int, b: int, n: int, both_ways: bool, wrap: bool) -> list[tuple[int, int]]:
    """Single steps from position a to b on a line (or a cycle when wrap) of n positions."""
    if a == b:
        return []
    if not wrap:
        step = 1 if b > a else -1
        return [(p, p + step) for p in range(a, b, step)]
    up = (b - a) % n
    down = (a - b) % n
    if not both_ways or up <= down:
        return [((a + i) % n, (a + i + 1) % n) for i in range(up)]
    return [((a - i) % n, (a - i - 1) % n) for i in range(down)]


class Machine:
    """Per-cycle figures of a target, resolved once; what the simulator and the roofline read."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.name = target.name
        self.clock_hz = target.clock_hz
        self.n_tiles = target.tiles.count.value
        clock = self.clock_hz
        g = target.global_memory
        self.global_name = g.name
        self.global_bw = g.bandwidth.per_cycle(clock)
        self.global_latency = g.latency_cycles.value
        self.global_granularity = max(1, g.granularity_bytes.value)
        self.global_capacity = g.capacity_bytes.value
        self.attach = list(g.attach_tiles.value) if g.attach_tiles is not None else []
        loc = target.local_memory
        self.local_name = loc.name
        self.local_bw = loc.bandwidth.per_cycle(clock)
        self.local_latency = loc.latency_cycles.value
        self.local_granularity = max(1, loc.granularity_bytes.value)
        self.local_capacity = loc.capacity_bytes.value
        self.dma_engines = target.dma.engines_per_tile.value
        self.dma_bw = target.dma.engine_bandwidth.per_cycle(clock)
        self.dma_setup = target.dma.setup_cycles.value
        self.topology = Topology(target)
        self.matrix_units = [u for u in target.compute_units if isinstance(u, SystolicArray | MatrixEngine)]
        self.vector_units = [u for u in target.compute_units if isinstance(u, VectorUnit)]
        self.matrix_startup = max((_startup(u) for u in self.matrix_units), default=0.0)
        self.vector_startup = max((_startup(u) for u in self.vector_units), default=0.0)
        self._mem_routes: dict[tuple[int, bool], Route] = {}
        self._flows: dict[tuple[object, ...], list[Flow]] = {}

    # rates ------------------------------------------------------------------

    def matrix_rate(self, dtype: str | None) -> tuple[float, str | None]:
        """MACs per cycle of one tile at `dtype`, and a warning when the rate is a fallback."""
        tables = [(u.count.value, dict(u.macs_per_cycle)) for u in self.matrix_units]
        return _rate(tables, dtype, "matrix", self.name)

    def vector_rate(self, dtype: str | None, transcendental: bool) -> tuple[float, str | None]:
        """Elements per cycle of one tile at `dtype`, and a warning when the rate is a fallback."""
        tables = []
        for u in self.vector_units:
            table = dict(u.elements_per_cycle)
            if transcendental:
                table.update(u.transcendentals_per_cycle)
            tables.append((u.count.value, table))
        return _rate(tables, dtype, "vector", self.name)

    # transfers ----------------------------------------------------------------

    def global_bytes(self, n: int) -> int:
        """Bytes a transfer of n bytes moves once rounded up to the global granularity."""
        g = self.global_granularity
        return -(-n // g) * g

    def global_moved(self, r: OpRecord) -> tuple[int, int]:
        """Bytes a record moves from and to global memory: whole granules. A record with a
        `global_box` is charged the granules its runs touch (never less than its bytes rounded
        up once); otherwise its bytes are one run, rounded up to the granularity."""
        rd, wr = r.bytes_read.get(GLOBAL, 0), r.bytes_written.get(GLOBAL, 0)
        moved_rd = self.global_bytes(rd) if rd > 0 else 0
        moved_wr = self.global_bytes(wr) if wr > 0 else 0
        if r.global_box is not None and (rd > 0) != (wr > 0):
            touched = granules(r.global_box, self.global_granularity) * self.global_granularity
            if rd > 0:
                moved_rd = max(moved_rd, touched)
            else:
                moved_wr = max(moved_wr, touched)
        return moved_rd, moved_wr

    def local_bytes(self, n: int) -> int:
        g = self.local_granularity
        return -(-n // g) * g

    def memory_route(self, tile: int, inbound: bool) -> Route:
        """Route between global memory and `tile` (inbound: memory -> tile)."""
        key = (tile, inbound)
        found = self._mem_routes.get(key)
        if found is not None:
            return found
        topo = self.topology
        if topo.kind == "crossbar":
            links: tuple[str, ...] = (f"in{tile}",) if inbound else (f"out{tile}",)
        else:
            best: tuple[str, ...] | None = None
            for a in self.attach:
                r = topo.route(a, tile) if inbound else topo.route(tile, a)
                if best is None or len(r) < len(best):
                    best = r
            links = best or ()
        found = Route(links, topo.latency(links))
        self._mem_routes[key] = found
        return found

    def tile_route(self, src: int, dst: int) -> Route:
        links = self.topology.route(src, dst)
        return Route(links, self.topology.latency(links))

    def transfer_latency(self, route: Route) -> float:
        """Fixed cycles of one global transfer: DMA setup, memory latency, hops."""
        return self.dma_setup + self.global_latency + route.latency

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def flows(self, r: OpRecord) -> list[Flow]:
        """The data movements of a transfer or receive record through the shared channels."""
        moved = self.global_moved(r) if r.kind is Kind.TRANSFER else (0, 0)
        key = (r.kind, r.tile, moved, r.sources)
        found = self._flows.get(key)
        if found is None:
            found = self._flows[key] = self._make_flows(r, moved)
        return found

    def _make_flows(self, r: OpRecord, moved: tuple[int, int]) -> list[Flow]:
        flows: list[Flow] = []
        if r.kind is Kind.TRANSFER:
            for inbound, nbytes in ((True, moved[0]), (False, moved[1])):
                if nbytes <= 0:
                    continue
                route = self.memory_route(r.tile, inbound)
                channels = (f"memory.{self.global_name}",) + tuple(f"link.{link}" for link in route.links)
                flows.append(Flow(self.transfer_latency(route), float(nbytes), channels))
            for src, nbytes in r.sources:  # reads and writes of other tiles' scratchpads cross the links
                if nbytes <= 0 or src == r.tile:
                    continue
                route = self.tile_route(src, r.tile)
                flows.append(Flow(self.dma_setup + route.latency, float(self.local_bytes(nbytes)),
                                  tuple(f"link.{link}" for link in route.links)))
        elif r.kind is Kind.RECEIVE:
            for src, nbytes in r.sources:
                if nbytes <= 0 or src == r.tile:
                    continue
                route = self.tile_route(src, r.tile)
                channels = tuple(f"link.{link}" for link in route.links)
                flows.append(Flow(self.dma_setup + route.latency, float(nbytes), channels))
        return flows

    def channel_capacity(self) -> dict[str, float]:
        """Bytes per cycle of every shared channel: the global memory and each link."""
        capacity = {f"memory.{self.global_name}": self.global_bw}
        capacity.update({f"link.{k}": v for k, v in self.topology.capacity.items()})
        return capacity

    def local_cycles(self, r: OpRecord) -> float:
        """Cycles of a ct_local access on the tile's local queue."""
        n = self.local_bytes(r.bytes_read.get(CT_LOCAL, 0)) + self.local_bytes(r.bytes_written.get(CT_LOCAL, 0))
        return self.local_latency + n / self.local_bw if n else 0.0


@dataclass(frozen=True)
class Flow:
    """Bytes that move through shared channels after a fixed latency."""

    latency: float
    nbytes: float
    channels: tuple[str, ...]


def granules(box: tuple[int, int, tuple[tuple[int, int], ...]], granularity: int) -> int:
    """How many distinct granules (aligned blocks of `granularity` bytes) the elements of a box
    touch: (byte address of the first element, element bytes, ((byte stride, extent), ...)).
    Exact: a run of contiguous bytes that straddles a granule boundary touches both granules,
    and runs that share a granule count it once."""
    base, itemsize, dims = box
    kept: list[tuple[int, int]] = []
    for stride, n in dims:
        if n <= 0:
            return 0
        if n == 1 or stride == 0:
            continue  # one coordinate, or the same bytes again
        if stride < 0:  # the same addresses, walked upwards from the lowest
            base += (n - 1) * stride
            stride = -stride
        kept.append((stride, n))
    kept.sort()
    run = itemsize
    while kept and kept[0][0] == run:  # dimensions that extend the contiguous run
        run *= kept.pop(0)[1]
    g = max(1, granularity)
    # shifting every address by a multiple of g shifts every granule index alike
    return _granules(base % g, run, tuple(kept), g)


@lru_cache(maxsize=4096)
def _granules(first: int, run: int, dims: tuple[tuple[int, int], ...], g: int) -> int:
    """`granules` of runs of `run` bytes at `first + sum(i_k * stride_k)`, strides ascending."""
    if not dims:
        return (first % g + run - 1) // g + 1
    *inner, (stride, n) = dims
    width = sum((m - 1) * s for s, m in inner) + run
    if stride >= width + g - 1:
        # the outermost steps touch disjoint granules: count each distinct offset modulo g once
        offsets, counts = np.unique((first + stride * np.arange(n, dtype=np.int64)) % g, return_counts=True)
        return sum(int(c) * _granules(int(o), run, tuple(inner), g) for o, c in zip(offsets, counts, strict=True))
    # interleaved or granule-sharing runs: list every run's granules and merge them
    starts = np.array([first], dtype=np.int64)
    for s, m in dims:
        starts = (starts[:, None] + s * np.arange(m, dtype=np.int64)).ravel()
    starts.sort()
    lo, hi = starts // g, (starts + run - 1) // g
    shared = np.maximum(hi[:-1] - lo[1:] + 1, 0)  # granules a run shares with the one before it
    return int((hi - lo + 1).sum() - shared.sum())


def _startup(u: SystolicArray | MatrixEngine | VectorUnit) -> float:
    return u.startup_cycles.value if u.startup_cycles is not None else 0.0


_F8 = ("f8E4M3FN", "f8E5M2", "f8E4M3", "f8E5M2FNUZ", "f8E4M3FNUZ")


def _lookup(table: dict[str, object], dtype: str) -> object | None:
    if dtype in table:
        return table[dtype]
    if dtype in _F8 and "f8" in table:
        return table["f8"]
    return None


def _rate(tables: list[tuple[int, dict]], dtype: str | None, what: str, target: str) -> tuple[float, str | None]:
    total = 0.0
    if dtype is not None:
        for count, table in tables:
            q = _lookup(table, dtype)
            if q is not None:
                total += count * q.value  # type: ignore[attr-defined]
    if total > 0:
        return total, None
    # no unit supports dtype: every unit at its slowest declared rate
    slowest = sum(count * min(q.value for q in table.values()) for count, table in tables if table)
    if slowest <= 0 or math.isinf(slowest):
        return 1.0, f"{target} declares no {what} rate; 1 per cycle assumed"
    shown = dtype or "an unknown type"
    return slowest, f"{target} has no {what} rate for {shown}; the slowest declared rate was used"
