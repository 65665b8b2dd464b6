"""Timeline simulation: when each op of a trace runs on a target.

The model, in full:

- Each tile has in-order queues: `dma` (global transfers; `dma.engines_per_tile` of them in
  flight at once), `matrix`, `vector`, `local` (ct_local reads and writes) and `comm`
  (inter-tile posts and receives). A record joins its tile's queue in program order. The
  record at the head of a queue starts when a server of the queue is free and every record
  it depends on has finished. Records on different queues run concurrently: a transfer
  overlaps compute whenever the program issued it without depending on that compute.
  `scalar` records take no time and use no queue.
- Compute takes `ceil(work / rate) + startup` cycles: MACs at the tile's matrix rate, elements
  at its vector rate (transcendental rate for exp, division...), for the record's dtype.
  A ct_local access takes `latency + bytes / bandwidth` on the tile's `local` queue.
- A global transfer first waits its fixed latency (`dma.setup + memory latency + hops x hop
  latency`); a receive waits `dma.setup + hops x hop latency` after its sources have posted,
  and so does a transfer's access to another tile's scratchpad (its `sources`).
  Then its bytes (a global transfer: whole granules of the memory, counted over the contiguous
  runs of its box, `OpRecord.global_box`, so a strided block pays a granule per short run) move through the
  tile's network port: one data phase at a time per tile, in program order, so several
  transfers in flight hide each other's latency but not each other's bytes. A data phase
  moves each flow (memory -> links -> tile, tile -> links -> memory, or source tile -> links
  -> tile) at most at one DMA engine's bandwidth.
- Shared channels (the global memory, each interconnect link) are divided between tiles:
  `sharing="static"` gives each tile that routes bytes over a channel anywhere in the kernel
  an equal fixed share of it; `sharing="maxmin"` (the default: a network's arbiter hands an
  idle share to whoever can use it) gives each tile fixed rates too, but divides the channels max-min fairly over the routes the tiles use anywhere in the
  kernel (`maxmin_shares`), so a share one tile cannot use (a tile reading memory is held to
  its part of the memory channel on the links next to it) goes to the tiles that can;
  `sharing="fair"` shares each channel max-min fairly among the data phases active at each
  moment. Static sharing makes the estimate a monotone function of every size and every
  bandwidth (more work never finishes earlier, more bandwidth never later). Max-min static
  rates depend only on the kernel's routes, not on timing, so more work still never finishes
  earlier, and every route's rate is at least its static share (an op whose flows cross one
  channel together, a copy from memory to memory, splits its tile's use there and may get
  less); but a faster channel can move the split of another channel away from a tile that is
  then slower. Fair sharing follows phases
  more closely but, like real networks, can occasionally get slower when a bandwidth grows.
  Under both static modes an op whose several flows cross one channel splits its tile's
  rate there between them.
- Tensor results (`result_bytes`) occupy the tile's ct_local memory from the op's start until
  the last record that depends on them finishes, on top of `resident_local_bytes`. A
  destination-style op (`reuses`: a linalg op and the tensor in its `outs`) that starts as the
  last unfinished user of that tensor writes its result over it (spec/ops/linalg.md, storage):
  the two are counted once, as an accumulator updated in place. A value a `post` record reads
  stays until every receive of that post has finished: the receivers read it from this tile.
- Buffers are finite, as in a compiled program with an explicitly managed scratchpad: the
  executions of one op on a tile are a stream (`OpRecord.stream`, or the op's name and line)
  whose results take turns in a fixed set of buffers, and an execution starts only when the
  buffer it writes is free, that is when the result of the execution that many before it has
  been released (its last user finished; a posted value, its last receiver). A stream owns the
  most of its results the tile's program order holds at once (a value carried to the next
  iteration, such as a block loaded one step ahead, makes two), and at least `buffers` (default
  2: every stream double buffered, so a transfer may fill the next buffer while the compute
  reads the current one). So a transfer never runs further ahead of the compute than the
  program's buffers allow, and the ct_local peak is that of a fixed allocation. Results updated
  in place (`reuses`) and records without a stream (neither `stream` nor `line`) are not bounded.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from .machine import Flow, Machine
from .records import KernelTrace, Kind, OpRecord, TraceError, check_records
from .schema import Target

Sharing = Literal["static", "maxmin", "fair"]
SHARINGS: tuple[Sharing, ...] = ("static", "maxmin", "fair")

DEFAULT_SHARING: Sharing = "maxmin"  # what `simulate` uses unless told (the schedulers' models: space_ring.MODEL_SHARING)


QUEUE_OF: dict[Kind, str | None] = {
    Kind.SCALAR: None,
    Kind.TRANSFER: "dma",
    Kind.LOCAL: "local",
    Kind.MATRIX: "matrix",
    Kind.VECTOR: "vector",
    Kind.POST: "comm",
    Kind.RECEIVE: "comm",
}
QUEUES = ("dma", "matrix", "vector", "local", "comm")

_END, _READY, _DATA_END = 0, 1, 2  # event kinds
BUFFERS = 2  # the fewest result buffers an op owns: double buffering (module docstring)


@dataclass
class OpTiming:
    """When one record ran: [start, end) in cycles, on which queue and lane; the data phase of a transfer."""

    record: OpRecord
    queue: str | None
    lane: int
    start: float
    end: float
    data_start: float | None = None  # transfers and receives: when their bytes started to move
    ready: float | None = None  # transfers and receives: when their fixed latency was over
    cause: int | None = None  # index (in Timeline.ops) of the op whose end let this one start
    port_cause: int | None = None  # the data phase this one waited for on its tile's port
    limit: str | None = None  # what limited the data phase's rate (a channel, or "tileN.port" for the engine)


@dataclass
class Timeline:
    """The outcome of a simulation."""

    machine: Machine
    sharing: Sharing
    makespan: float  # cycles from the first op to the last
    ops: list[OpTiming]
    # cycles each resource was busy: per-tile queues ("tile3.dma", averaged over its lanes;
    # time occupied, including waits), ports ("tile3.port": bytes / one engine's bandwidth)
    # and shared channels ("memory.lpddr5", "link.3->4": bytes / bandwidth)
    busy: dict[str, float]
    capacity: dict[str, float]  # shared channels: bytes per cycle
    channel_bytes: dict[str, float]  # shared channels: bytes carried
    rate_changes: list[tuple[float, str, float]]  # shared channels: (time, channel, change of bytes per cycle)
    occupancy: dict[int, list[tuple[float, int]]]  # tile -> (time, ct_local bytes in use) at each change
    peak_local: dict[int, int]
    n_tiles: int
    warnings: list[str] = field(default_factory=list)
    _series: dict[str, list[tuple[float, float]]] | None = field(default=None, repr=False)

    @property
    def rate_series(self) -> dict[str, list[tuple[float, float]]]:
        """Shared channels: (time, bytes per cycle) at each change of the total rate."""
        if self._series is None:
            self._series = _series(self.rate_changes)
        return self._series


def _series(changes: list[tuple[float, str, float]]) -> dict[str, list[tuple[float, float]]]:
    level: dict[str, float] = {}
    out: dict[str, list[tuple[float, float]]] = {}
    for t, c, d in sorted(changes):
        v = level.get(c, 0.0) + d
        if abs(v) < 1e-9:
            v = 0.0
        level[c] = v
        series = out.setdefault(c, [])
        if series and series[-1][0] == t:
            series[-1] = (t, v)
        elif not series or series[-1][1] != v:
            series.append((t, v))
    return out


@dataclass(frozen=True)
class Shares:
    """Fixed rates from `maxmin_shares`, in bytes per cycle."""

    rate: dict[tuple[int, tuple[str, ...]], float]  # (tile, route) -> the route's rate
    limit: dict[tuple[int, tuple[str, ...]], str | None]  # (tile, route) -> the full channel that set it (None: the engine)
    use: dict[tuple[int, str], float]  # (tile, channel) -> the tile's use of it: its routes' largest rate there


def maxmin_shares(routes: dict[int, set[tuple[str, ...]]], capacity: dict[str, float], engine: float) -> Shares:
    """Max-min fair fixed rates (`sharing="maxmin"`) for the routes (tuples of channels) each tile
    uses anywhere in a kernel: progressive filling, every route's rate rising at one level until
    it reaches one DMA engine's bandwidth (`engine`) or a channel it crosses is full. A tile's use
    of a channel is the largest rate of its routes through it, not their sum (as under static
    sharing, a tile's routes are not assumed to move at once), and a channel is full when its
    tiles' uses add up to its capacity. Depends on the routes only, not on timing."""
    keys = sorted({(t, r) for t, rs in routes.items() for r in rs})
    rate: dict[tuple[int, tuple[str, ...]], float] = {}
    limit: dict[tuple[int, tuple[str, ...]], str | None] = {}
    unfrozen = set(keys)
    level = 0.0
    while unfrozen:
        live: dict[str, set[int]] = {}  # channel -> tiles with a route through it still rising
        for t, r in unfrozen:
            for c in r:
                live.setdefault(c, set()).add(t)
        held: dict[tuple[int, str], float] = {}  # (tile, channel) -> the use of a tile no longer rising there
        for (t, r), v in rate.items():
            for c in r:
                if c in live and t not in live[c]:
                    held[(t, c)] = max(held.get((t, c), 0.0), v)
        residual = {c: capacity[c] for c in live}
        for (_, c), v in held.items():
            residual[c] -= v
        fill = {c: residual[c] / len(tiles) for c, tiles in live.items()}
        level = max(level, min([engine, *fill.values()]))  # levels only rise (rounding aside)
        tight = level * (1 + 1e-12)
        for key in sorted(unfrozen):
            full = [c for c in key[1] if fill[c] <= tight]
            if engine <= tight or full:
                rate[key] = level
                # the engine when it holds the route as much as a channel (as static sharing says)
                limit[key] = min(full, key=lambda c: fill[c]) if full and engine > tight else None
                unfrozen.discard(key)
    use: dict[tuple[int, str], float] = {}
    for (t, r), v in rate.items():
        for c in r:
            use[(t, c)] = max(use.get((t, c), 0.0), v)
    return Shares(rate, limit, use)


class _Op:
    __slots__ = ("rec", "idx", "queue", "deps", "waiting", "dependents", "users_left", "start", "end", "lane",
                 "flows", "flows_left", "data_start", "ready", "cause", "port_cause", "limit", "handed",
                 "gate", "freed", "freed_by", "heir_of", "remote_left")

    def __init__(self, rec: OpRecord, idx: int) -> None:
        self.rec = rec
        self.idx = idx
        self.queue: str | None = QUEUE_OF[rec.kind]
        self.deps: list[int] = []
        self.waiting = 0
        self.dependents: list[int] = []
        self.users_left = 0
        self.start = math.nan
        self.end = math.nan
        self.lane = 0
        self.flows: list[Flow] = []
        self.flows_left = 0
        self.data_start: float | None = None
        self.ready: float | None = None
        self.cause: int | None = None
        self.port_cause: int | None = None
        self.limit: str | None = None
        self.handed = False  # its result's storage was taken over by a user's result (`OpRecord.reuses`)
        self.gate = -1  # the earlier execution of the same stream whose buffer this one writes (-1: none)
        self.freed = False  # its result's buffer is free again (released, or released by whoever took it over)
        self.freed_by: int | None = None  # the op whose end freed it
        self.heir_of = -1  # the op whose storage this one's result took over
        self.remote_left = 0  # POST: receives on other tiles that have not finished reading its value


class _ActiveFlow:
    __slots__ = ("op", "total", "remaining", "rate", "channels", "cap")

    def __init__(self, op: int, nbytes: float, channels: tuple[str, ...], cap: float) -> None:
        self.op = op
        self.total = nbytes
        self.remaining = nbytes
        self.rate = 0.0
        self.channels = channels
        self.cap = cap


class _Queue:
    __slots__ = ("items", "free")

    def __init__(self, servers: int) -> None:
        self.items: deque[int] = deque()
        self.free = list(range(servers))


class _Port:
    __slots__ = ("order", "pos", "ready", "busy", "last")

    def __init__(self) -> None:
        self.order: list[int] = []  # ops with a data phase, in program order
        self.pos = 0
        self.ready: set[int] = set()
        self.busy = False
        self.last: int | None = None  # the op of the last data phase


def simulate(trace: KernelTrace, target: Target | Machine, sharing: Sharing | None = None,
             buffers: int = BUFFERS) -> Timeline:
    """Run the timeline model of `trace` on `target`; raise TraceError on inconsistent records.
    `sharing`: how shared channels are divided (module docstring; None: `DEFAULT_SHARING`).
    `buffers`: the fewest buffers each op owns for its results (2: double buffering; 1: only those
    the program order holds at once)."""
    if sharing is None:
        sharing = DEFAULT_SHARING
    if sharing not in SHARINGS:
        raise ValueError(f"sharing must be one of {', '.join(map(repr, SHARINGS))}, not {sharing!r}")
    if buffers < 1:
        raise ValueError(f"buffers must be at least 1, not {buffers}")
    machine = target if isinstance(target, Machine) else Machine(target)
    return _Simulation(trace, machine, sharing, buffers).run()


class _Simulation:
    def __init__(self, trace: KernelTrace, machine: Machine, sharing: Sharing, buffers: int = BUFFERS) -> None:
        check_records(trace)
        self.buffers = buffers
        if trace.n_tiles > machine.n_tiles:
            raise TraceError(f"the kernel's grid {list(trace.grid)} has {trace.n_tiles} tiles; {machine.name} has {machine.n_tiles}")
        self.m = machine
        self.sharing = sharing
        self.trace = trace
        self.warnings: list[str] = []
        self.ops: list[_Op] = []
        self._build_graph(trace)
        self.queues: dict[tuple[int, str], _Queue] = {}
        self.ports: dict[int, _Port] = {}
        self.capacity = machine.channel_capacity()
        self.channel_bytes: dict[str, float] = {}
        users: dict[str, set[int]] = {}
        routes: dict[int, set[tuple[str, ...]]] = {}
        for op in self.ops:
            if op.queue is not None:
                key = (op.rec.tile, op.queue)
                if key not in self.queues:
                    self.queues[key] = _Queue(machine.dma_engines if op.queue == "dma" else 1)
                self.queues[key].items.append(op.idx)
            if op.rec.kind in (Kind.TRANSFER, Kind.RECEIVE):
                op.flows = machine.flows(op.rec)
                if op.flows:
                    self.ports.setdefault(op.rec.tile, _Port()).order.append(op.idx)
                for f in op.flows:
                    routes.setdefault(op.rec.tile, set()).add(f.channels)
                    for c in f.channels:
                        users.setdefault(c, set()).add(op.rec.tile)
                        self.channel_bytes[c] = self.channel_bytes.get(c, 0.0) + f.nbytes
        self.users = {c: len(tiles) for c, tiles in users.items()}
        self.shares = maxmin_shares(routes, self.capacity, machine.dma_bw) if sharing == "maxmin" else None
        self.now = 0.0
        self.events: list[tuple[float, int, int, int]] = []  # (time, tiebreak, kind, op index)
        self.counter = 0
        self.active: list[_ActiveFlow] = []
        self.rate_changes: list[tuple[float, str, float]] = []  # (time, channel, change of its total rate)
        self.current_rate: dict[str, float] = {}  # fair sharing: the total rate of each channel now
        self.dirty: set[tuple[int, str]] = set(self.queues)
        self.live: dict[int, int] = {t: trace.resident_local_bytes.get(t, 0) for t in range(trace.n_tiles)}
        self.occupancy: dict[int, list[tuple[float, int]]] = {t: [(0.0, v)] for t, v in self.live.items()}
        self.peak: dict[int, int] = dict(self.live)
        self._rates: dict[tuple[str, str | None, bool], tuple[float, float]] = {}
        self._static_rates: dict[tuple[int, tuple[str, ...], tuple[int, ...]], tuple[float, str | None]] = {}
        self.started: dict[tuple[int, str], int] = {}  # queue -> the op it started last
        self.released: dict[tuple[int, str], int] = {}  # queue -> the op that freed a server last

    def _build_graph(self, trace: KernelTrace) -> None:
        index: dict[tuple[int, int], int] = {}
        posts: dict[tuple[str, int], int] = {}
        for tile, recs in sorted(trace.by_tile().items()):
            for r in recs:
                op = _Op(r, len(self.ops))
                index[(tile, r.seq)] = op.idx
                self.ops.append(op)
                if r.kind is Kind.POST and r.sync is not None:
                    posts[(r.sync, tile)] = op.idx
        for op in self.ops:
            r = op.rec
            deps = {index[(r.tile, d)] for d in r.deps}
            if r.kind is Kind.RECEIVE and r.sync is not None:
                deps.update(posts[(r.sync, src)] for src, _ in r.sources)
            op.deps = sorted(deps)
            op.waiting = len(deps)
            for d in op.deps:
                self.ops[d].dependents.append(op.idx)
        for op in self.ops:
            op.users_left = len(op.dependents)
            if op.rec.kind is Kind.POST:
                op.remote_left = sum(1 for u in op.dependents if self.ops[u].rec.tile != op.rec.tile)
        self.index = index
        self.gated: dict[int, list[int]] = {}  # op -> the ops waiting for its buffer
        self._windows()

    def _windows(self) -> None:
        """Give each execution of a stream the buffer of the execution `w` before it, `w` the most
        executions of the stream live at once in the tile's program order (from each one's record
        to its last user's on the tile)."""
        streams: dict[tuple[object, ...], list[_Op]] = {}
        for op in self.ops:
            r = op.rec
            if r.result_bytes <= 0 or r.reuses >= 0 or op.queue is None:
                continue
            if r.stream >= 0:
                key: tuple[object, ...] = (r.tile, r.stream)
            elif r.line > 0:
                key = (r.tile, r.op, r.line)
            else:
                continue
            streams.setdefault(key, []).append(op)
        for members in streams.values():
            live: list[int] = []  # last uses (seq) of the executions still live, a heap
            window = self.buffers
            for op in members:
                seq = op.rec.seq
                while live and live[0] < seq:
                    heapq.heappop(live)
                last = max((self.ops[u].rec.seq for u in op.dependents if self.ops[u].rec.tile == op.rec.tile),
                           default=seq)
                heapq.heappush(live, last)
                window = max(window, len(live))
            for before, op in zip(members, members[window:], strict=False):
                op.gate = before.idx
                self.gated.setdefault(before.idx, []).append(op.idx)

    # main loop -------------------------------------------------------------------

    def run(self) -> Timeline:
        for op in self.ops:
            if op.queue is None and op.waiting == 0:
                op.start = 0.0
                self._push(0.0, _END, op.idx)
        self._drain()
        while True:
            t_event = self.events[0][0] if self.events else math.inf
            t_flow = math.inf
            for f in self.active:
                if f.rate > 0:
                    t_flow = min(t_flow, self.now + f.remaining / f.rate)
            t = min(t_event, t_flow)
            if math.isinf(t):
                break
            self._advance(t)
            while self.events and self.events[0][0] <= self.now:
                _, _, kind, idx = heapq.heappop(self.events)
                op = self.ops[idx]
                if kind == _END:
                    self._complete(op)
                elif kind == _READY:
                    op.ready = self.now
                    port = self.ports[op.rec.tile]
                    port.ready.add(idx)
                    self._serve_port(op.rec.tile)
                else:
                    self._data_done(op)
            self._drain()
        stuck = [op for op in self.ops if math.isnan(op.end)]
        if stuck:
            shown = "; ".join(f"tile {op.rec.tile} seq {op.rec.seq} ({op.rec.op}) waits for {op.waiting} op(s)" for op in stuck[:5])
            raise TraceError(f"the records cannot all run (a dependency cycle across tiles): {shown}")
        return self._timeline()

    def _advance(self, t: float) -> None:
        dt = t - self.now
        # flows whose finish time (as run() computed it) is reached: far from time 0 the
        # subtraction below can leave a remainder above the tolerance, and the flow would
        # never end (a transfer set up 10^15 cycles in looped forever)
        due = {id(f) for f in self.active if f.rate > 0 and self.now + f.remaining / f.rate <= t}
        if dt > 0:
            for f in self.active:
                f.remaining -= f.rate * dt
        self.now = max(self.now, t)
        finished = [f for f in self.active if id(f) in due or f.remaining <= 1e-9 * f.total + 1e-9]
        if not finished:
            return
        done = set(map(id, finished))
        self.active = [f for f in self.active if id(f) not in done]
        for f in finished:
            op = self.ops[f.op]
            op.flows_left -= 1
            if op.flows_left == 0:
                self._data_done(op)
        self._allocate()

    def _push(self, time: float, kind: int, idx: int) -> None:
        self.counter += 1
        heapq.heappush(self.events, (time, self.counter, kind, idx))

    def _drain(self) -> None:
        """Start the head of every queue that may have become startable (in a fixed order)."""
        keys = sorted(self.dirty)
        self.dirty.clear()
        for key in keys:
            q = self.queues[key]
            while q.items and q.free:
                op = self.ops[q.items[0]]
                if op.waiting or (op.gate >= 0 and not self.ops[op.gate].freed):
                    break
                q.items.popleft()
                op.lane = heapq.heappop(q.free)
                self._start(op)

    # ops -------------------------------------------------------------------------

    def _start(self, op: _Op) -> None:
        r = op.rec
        op.start = self.now
        op.cause = self._cause(op)
        self.started[(r.tile, op.queue or "")] = op.idx
        if r.result_bytes:
            self._occupy(r.tile, r.result_bytes - self._take_over(op))
        kind = r.kind
        if kind is Kind.MATRIX or kind is Kind.VECTOR:
            self._push(self.now + self._compute_cycles(r), _END, op.idx)
        elif kind is Kind.LOCAL or (kind is Kind.TRANSFER and not op.flows):
            self._push(self.now + self.m.local_cycles(r), _END, op.idx)
        elif op.flows:
            self._push(self.now + max(f.latency for f in op.flows), _READY, op.idx)
        else:  # POST, a receive with nothing to move, or a SCALAR record that reached a queue
            self._push(self.now, _END, op.idx)

    def _cause(self, op: _Op) -> int | None:
        """What let `op` start now: its last dependency, a freed server, or the op issued before it."""
        eps = 1e-9 * max(1.0, self.now)
        if op.deps:
            last = max(op.deps, key=lambda d: self.ops[d].end)
            if self.ops[last].end >= self.now - eps:
                return last
        if op.gate >= 0:  # its buffer was freed just now
            by = self.ops[op.gate].freed_by
            if by is not None and self.ops[by].end >= self.now - eps:
                return by
        key = (op.rec.tile, op.queue or "")
        freed = self.released.get(key)
        if freed is not None and self.ops[freed].end >= self.now - eps:
            return freed
        before = self.started.get(key)
        if before is not None and self.ops[before].start >= self.now - eps:
            return before
        return None

    def _compute_cycles(self, r: OpRecord) -> float:
        unit = "matrix" if r.kind is Kind.MATRIX else "vector"
        work = r.macs if unit == "matrix" else r.elements
        if work <= 0:
            return 0.0
        rate, startup = self._rate(unit, r.dtype, r.transcendental)
        return math.ceil(work / rate) + startup

    def _rate(self, unit: str, dtype: str | None, transcendental: bool) -> tuple[float, float]:
        key = (unit, dtype, transcendental)
        found = self._rates.get(key)
        if found is None:
            if unit == "matrix":
                rate, warning = self.m.matrix_rate(dtype)
                found = (rate, self.m.matrix_startup)
            else:
                rate, warning = self.m.vector_rate(dtype, transcendental)
                found = (rate, self.m.vector_startup)
            if warning is not None and warning not in self.warnings:
                self.warnings.append(warning)
            self._rates[key] = found
        return found

    # the port: one data phase per tile at a time, in program order ------------------

    def _serve_port(self, tile: int) -> None:
        port = self.ports[tile]
        if port.busy or port.pos >= len(port.order) or port.order[port.pos] not in port.ready:
            return
        op = self.ops[port.order[port.pos]]
        port.pos += 1
        port.busy = True
        op.data_start = self.now
        if op.ready is not None and self.now > op.ready + 1e-9 * max(1.0, self.now):
            op.port_cause = port.last
        port.last = op.idx
        op.limit = self._limit(op)
        if self.sharing != "fair":
            duration = 0.0
            for f in op.flows:
                rate = self.static_rate(op, f)
                for c in f.channels:
                    self.rate_changes.append((self.now, c, rate))
                    self.rate_changes.append((self.now + f.nbytes / rate, c, -rate))
                duration = max(duration, f.nbytes / rate)
            self._push(self.now + duration, _DATA_END, op.idx)
            return
        op.flows_left = len(op.flows)
        for f in op.flows:
            self.active.append(_ActiveFlow(op.idx, f.nbytes, f.channels, self.m.dma_bw))
        self._allocate()

    def static_rate(self, op: _Op, f: Flow) -> float:
        """A flow's fixed rate (static or max-min static sharing): one DMA engine, and the tile's
        share of each channel it crosses, split between the op's flows that cross it."""
        return self._fixed(op, f)[0]

    def _fixed(self, op: _Op, f: Flow, split: bool = True) -> tuple[float, str | None]:
        """A flow's fixed rate and what sets it (a channel; None: the DMA engine). `split`: with
        the op's flows splitting a channel they both cross."""
        shared: tuple[int, ...] = ()
        if split and len(op.flows) > 1:  # the op's own flows split its share of a channel they both cross
            shared = tuple(sum(1 for g in op.flows if c in g.channels) for c in f.channels)
        tile = op.rec.tile if self.shares is not None else -1  # static shares do not depend on the tile
        key = (tile, f.channels, shared)
        found = self._static_rates.get(key)
        if found is not None:
            return found
        rate, which = self.m.dma_bw, None
        if self.shares is not None:
            rate, which = self.shares.rate[(tile, f.channels)], self.shares.limit[(tile, f.channels)]
        for i, c in enumerate(f.channels):
            n = shared[i] if shared else 1
            # max-min: the tile's use of the channel; static: its equal share
            share = (self.shares.use[(tile, c)] / n if self.shares is not None
                     else self.capacity[c] / (self.users[c] * n))
            if share < rate:
                rate, which = share, c
        self._static_rates[key] = (rate, which)
        return rate, which

    def _limit(self, op: _Op) -> str:
        """The resource that sets the rate of the op's slowest flow under static sharing (either mode)."""
        best_time, best = -1.0, f"tile{op.rec.tile}.port"
        for f in op.flows:
            # static: the channel's share before the op's own split, as the limit was always reported
            rate, which = self._fixed(op, f, split=self.shares is not None)
            if f.nbytes / rate > best_time:
                best_time, best = f.nbytes / rate, which or f"tile{op.rec.tile}.port"
        return best

    def _data_done(self, op: _Op) -> None:
        port = self.ports[op.rec.tile]
        port.busy = False
        self._complete(op)
        self._serve_port(op.rec.tile)

    # completion ------------------------------------------------------------------------

    def _complete(self, op: _Op) -> None:
        op.end = self.now
        if math.isnan(op.start):
            op.start = self.now
        r = op.rec
        if op.queue is not None:
            key = (r.tile, op.queue)
            heapq.heappush(self.queues[key].free, op.lane)
            self.dirty.add(key)
            self.released[key] = op.idx
        if r.result_bytes and not op.dependents:
            self._occupy(r.tile, -r.result_bytes)
            self._free(op, op)
        if not op.remote_left:  # a post's value is read by its receivers until they finish
            self._release(op)
        for u in op.dependents:
            user = self.ops[u]
            user.waiting -= 1
            if user.waiting == 0:
                if user.queue is None:
                    user.start = self.now
                    user.cause = op.idx
                    self._push(self.now, _END, user.idx)
                else:
                    self.dirty.add((user.rec.tile, user.queue))

    def _release(self, op: _Op) -> None:
        """`op` no longer needs what it read: free each result whose last user it was."""
        for d in op.deps:
            dep = self.ops[d]
            if dep.rec.tile != op.rec.tile and dep.rec.kind is Kind.POST:
                dep.remote_left -= 1
                if dep.remote_left == 0 and not math.isnan(dep.end):
                    self._release(dep)
                continue
            dep.users_left -= 1
            if dep.users_left == 0 and dep.rec.result_bytes and not dep.handed:
                self._occupy(dep.rec.tile, -dep.rec.result_bytes)
                self._free(dep, op)

    def _free(self, op: _Op, by: _Op) -> None:
        """`op`'s buffer (and that of every result whose storage it took over) is free: wake whoever waits for it."""
        cur: _Op | None = op
        while cur is not None and not cur.freed:
            cur.freed = True
            cur.freed_by = by.idx
            for g in self.gated.get(cur.idx, ()):
                waiter = self.ops[g]
                if waiter.queue is not None:
                    self.dirty.add((waiter.rec.tile, waiter.queue))
            cur = self.ops[cur.heir_of] if cur.heir_of >= 0 else None

    def _take_over(self, op: _Op) -> int:
        """The bytes `op`'s result takes over from the result it overwrites (`OpRecord.reuses`): that
        result's, when `op` is its last unfinished user and they have one size; else 0."""
        r = op.rec
        if r.reuses < 0:
            return 0
        i = self.index.get((r.tile, r.reuses))
        if i is None or i not in op.deps:
            return 0
        dep = self.ops[i]
        if dep.users_left != 1 or dep.handed or dep.rec.result_bytes != r.result_bytes:
            return 0
        dep.handed = True
        op.heir_of = dep.idx
        return r.result_bytes

    def _occupy(self, tile: int, delta: int) -> None:
        v = self.live.get(tile, 0) + delta
        self.live[tile] = v
        series = self.occupancy.setdefault(tile, [])
        if series and series[-1][0] == self.now:
            series[-1] = (self.now, v)
        else:
            series.append((self.now, v))
        if v > self.peak.get(tile, 0):
            self.peak[tile] = v

    # fair sharing ------------------------------------------------------------------------

    def _allocate(self) -> None:
        """Max-min fair rates for the active flows (progressive filling), each capped by its DMA engine."""
        residual: dict[str, float] = {}
        users: dict[str, int] = {}
        for f in self.active:
            for c in f.channels:
                residual[c] = self.capacity[c]
                users[c] = users.get(c, 0) + 1
        unfrozen = list(self.active)
        while unfrozen:
            level = min(f.cap for f in unfrozen)
            for c, n in users.items():
                if n:
                    level = min(level, residual[c] / n)
            tight = {c for c, n in users.items() if n and residual[c] / n <= level * (1 + 1e-12)}
            keep = []
            for f in unfrozen:
                if f.cap <= level * (1 + 1e-12) or any(c in tight for c in f.channels):
                    f.rate = level
                    for c in f.channels:
                        residual[c] -= level
                        users[c] -= 1
                else:
                    keep.append(f)
            unfrozen = keep
        totals: dict[str, float] = {}
        for f in self.active:
            for c in f.channels:
                totals[c] = totals.get(c, 0.0) + f.rate
        for c in set(totals) | set(self.current_rate):
            v = totals.get(c, 0.0)
            before = self.current_rate.get(c, 0.0)
            if v != before:
                self.current_rate[c] = v
                self.rate_changes.append((self.now, c, v - before))

    # result --------------------------------------------------------------------------

    def _timeline(self) -> Timeline:
        makespan = max((op.end for op in self.ops), default=0.0)
        ops = [OpTiming(op.rec, op.queue, op.lane, op.start, op.end, op.data_start, op.ready, op.cause, op.port_cause, op.limit)
               for op in self.ops]
        busy: dict[str, float] = {}
        for op in self.ops:
            if op.queue is None:
                continue
            key = f"tile{op.rec.tile}.{op.queue}"
            busy[key] = busy.get(key, 0.0) + (op.end - op.start)
            if op.flows:  # the port's own capacity use: its data phase at one engine's full rate
                port = f"tile{op.rec.tile}.port"
                busy[port] = busy.get(port, 0.0) + max(f.nbytes for f in op.flows) / self.m.dma_bw
        for key in busy:
            if key.endswith(".dma"):
                busy[key] /= self.m.dma_engines
        for c, nbytes in self.channel_bytes.items():
            busy[c] = nbytes / self.capacity[c]
        for t in range(self.trace.n_tiles):
            if self.peak.get(t, 0) > self.m.local_capacity:
                self.warnings.append(
                    f"tile {t}: ct_local use peaks at {self.peak[t]} bytes, beyond the {self.m.local_capacity} bytes of {self.m.local_name}"
                )
        return Timeline(
            machine=self.m, sharing=self.sharing, makespan=makespan, ops=ops, busy=busy, capacity=dict(self.capacity),
            channel_bytes=dict(self.channel_bytes), rate_changes=self.rate_changes, occupancy=self.occupancy,
            peak_local=dict(self.peak), n_tiles=self.trace.n_tiles, warnings=self.warnings,
        )


def critical_path(timeline: Timeline) -> dict[str, float]:
    """Cycles of the critical path spent on each resource.

    Walks back from the op that finishes last: a data phase counts for the resource that
    limited its rate, and continues into the data phase it waited for on the port (if any);
    otherwise the op's latency (`tileN.latency`) or compute time counts, and the walk
    continues into whatever let the op start (its last dependency, the op that freed its
    queue, or the op issued just before it). Time the walk cannot attribute is `idle`.
    """
    ops = timeline.ops
    shares: dict[str, float] = {}
    if not ops:
        return shares

    def add(resource: str, cycles: float) -> None:
        if cycles > 0:
            shares[resource] = shares.get(resource, 0.0) + cycles

    cur: int | None = max(range(len(ops)), key=lambda i: ops[i].end)
    seen: set[int] = set()
    while cur is not None and cur not in seen:
        seen.add(cur)
        o = ops[cur]
        tile = o.record.tile
        if o.data_start is not None:
            add(o.limit or f"tile{tile}.port", o.end - o.data_start)
            if o.port_cause is not None:
                cur = o.port_cause
                continue
            add(f"tile{tile}.latency", (o.ready if o.ready is not None else o.data_start) - o.start)
        elif o.queue in ("matrix", "vector", "local"):
            add(f"tile{tile}.{o.queue}", o.end - o.start)
        elif o.queue == "dma":  # a transfer with only ct_local bytes
            add(f"tile{tile}.local", o.end - o.start)
        cur = o.cause
    idle = timeline.makespan - sum(shares.values())
    if idle > 1e-9 * max(1.0, timeline.makespan):
        shares["idle"] = idle
    return shares
