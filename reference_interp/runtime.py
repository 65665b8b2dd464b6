"""Run-time state: options, the machine (memories, clocks, futures) and per-tile contexts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import fail
from .half import WideCache
from .memo import MISSING, Memo
from .memory import SPACES, Allocation, GlobalMemory
from .races import RaceTracker
from .trace import TileStats, TraceEvent

_N_SPACES = len(SPACES)

SPYRE_SCRATCHPAD = 2 * 1024 * 1024

# Scratchpad capacities of the targets the interpreter knows until the hardware model
# (ktir.targets) lands; `None` means unlimited.
TARGETS: dict[str, int | None] = {
    "spyre": SPYRE_SCRATCHPAD,
    "unlimited": None,
}


@dataclass
class Options:
    """Limits and checks of one run (all checks are on by default)."""

    step_limit: int = 20_000_000  # executed ops per tile: at about 1 µs an op, a runaway loop stops within ~20 s
    max_value_bytes: int = 2 << 30  # largest single tensor, enumerated set or memory
    max_set_points: int = 1 << 26
    scratchpad_bytes: int | None = None  # ct_local capacity per tile; None = unlimited
    target: str | None = None
    check_races: bool = True
    strict: bool = True  # reading tensor.empty contents is an error (False: they read as zeros)
    trace: bool = False
    max_call_depth: int = 64
    # tiles of the grid: each has a context and frame, and communicating tiles a vector clock
    # of one entry per tile (races.py), so the grid's size is bounded before anything is made
    max_tiles: int = 4096
    # BLAS threads for the run's contractions (blas.py: tiles run one after another, each
    # contraction is one tile's block); None leaves BLAS's own setting
    blas_threads: int | None = 1
    # cost tracing: tensor compute ops (linalg, arith, math on tensors) make zero-filled results
    # of their types instead of computing them; loads, stores, control flow and inter-tile ops
    # run as usual. The trace is that of a real run when no control flow or address depends on
    # tensor contents; the outputs are meaningless.
    shapes_only: bool = False


class Undefined:
    """The value of an inter-tile result on a tile that is not a consumer."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<undefined: {self.why}>"


class Machine:
    """State shared by all tiles of one run."""

    def __init__(self, grid: tuple[int, ...], options: Options) -> None:
        self.grid = grid
        self.strides, self.tile_coords, self.n_tiles = _layout(grid)
        self.options = options
        self.memory = GlobalMemory()
        self.tracker = RaceTracker(self.n_tiles, enabled=options.check_races)
        self.locals: list[Allocation | None] = [None] * self.n_tiles
        self.local_top = 0  # bytes of every scratchpad reserved for Local() arguments
        self.futures: Any = None  # intertile.FutureStore, created on demand
        self.posts = 0  # number of posted partials (progress detection)
        # no tile can reach another's scratchpad or memref.alloc memory (Program.shares_scratchpads)
        self.private_local = False
        # memory views made by construct_memory_view, by op and operands (ops/ktdp.py)
        self.views: dict[tuple[Any, ...], Any] = {}
        # f32 copies of narrow-float boxes loaded in place, for contractions and arith.extf
        # (half.py); None when the program has neither (executor._attempt)
        self.wide: WideCache | None = None

    def coords(self, tile: int) -> tuple[int, ...]:
        """The grid coordinates of linear tile id `tile`: dimension 0 varies fastest
        (spec execution.md#the-grid, as ktir-cpu numbers tiles)."""
        if not 0 <= tile < self.n_tiles:
            raise ValueError(f"tile {tile} is not in the grid {list(self.grid)}")
        return self.tile_coords[tile]

    def local(self, tile: int) -> Allocation:
        alloc = self.locals[tile]
        if alloc is None:
            cap = self.options.scratchpad_bytes
            alloc = Allocation(f"ct_local[{tile}]", "ct_local", 0, np.zeros(0, dtype=np.uint8), 0,
                               owner=tile, capacity=cap if cap is not None else 1 << 62, track_init=True)
            alloc.private = self.private_local
            self.locals[tile] = alloc
        return alloc

    def check_bytes(self, n: int, what: str) -> None:
        if n > self.options.max_value_bytes:
            raise fail("memory-limit", f"{what} needs {n} bytes (limit {self.options.max_value_bytes})")


# the grid's strides, every tile's coordinates and the number of tiles, by grid: a kernel's
# runs share its grid
_LAYOUTS: Memo[tuple[int, ...], tuple[tuple[int, ...], tuple[tuple[int, ...], ...], int]] = Memo(64)


def _layout(grid: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...], int]:
    """(_tile_strides(grid), the coordinates of each linear tile id, the number of tiles), once
    per grid."""
    found = _LAYOUTS.get(grid)
    if found is not MISSING:
        return found
    n = int(math.prod(grid)) if grid else 1
    coords = []
    for tile in range(n):
        out = []
        for g in grid:
            tile, c = divmod(tile, g)
            out.append(c)
        coords.append(tuple(out))
    return _LAYOUTS.put(grid, (_tile_strides(grid), tuple(coords), n))


def _tile_strides(grid: tuple[int, ...]) -> tuple[int, ...]:
    """What one step along each grid dimension adds to the linear tile id (dimension 0 fastest)."""
    out = []
    acc = 1
    for g in grid:
        out.append(acc)
        acc *= g
    return tuple(out)


class TileContext:
    """One compute tile's execution state; it lives in slot 0 of every frame."""

    __slots__ = (
        "tile", "coords", "machine", "steps", "step_limit", "rd", "wr", "counters",
        "trace", "seq", "depth", "sent", "received", "returns", "tracker", "race_on", "sync", "remote",
    )

    def __init__(self, machine: Machine, tile: int) -> None:
        if not 0 <= tile < machine.n_tiles:
            machine.coords(tile)  # its error
        self.tile = tile
        self.coords = machine.tile_coords[tile]
        self.machine = machine
        self.steps = 0
        options = machine.options
        self.step_limit = options.step_limit
        self.rd = [0] * _N_SPACES
        self.wr = [0] * _N_SPACES
        self.counters: dict[int, int] = {}
        self.trace: list[TraceEvent] | None = [] if options.trace else None
        self.seq = 0
        self.depth = 0
        self.sent = 0
        self.received = 0
        self.returns: tuple[Any, ...] = ()
        self.tracker = tracker = machine.tracker
        self.race_on = tracker.enabled
        self.sync: tuple[tuple[int, int], tuple[int, ...]] | None = None  # for the tracer
        # bytes read (+) and written (-tile - 1 keys) in other tiles' scratchpads, by owner: the ring traffic
        self.remote: dict[int, int] = {}

    def local(self) -> Allocation:
        return self.machine.local(self.tile)

    def stats(self) -> TileStats:
        return tile_stats([self])[0]


_NO_BYTES = [0] * _N_SPACES


def tile_stats(contexts: list[TileContext]) -> list[TileStats]:
    """Each context's TileStats, built positionally: half the cost of keywords per tile and run
    (tests/interp/test_binding_plan checks the field order)."""
    if not contexts:
        return []
    scratchpads = contexts[0].machine.locals
    out = []
    for ctx in contexts:
        local = scratchpads[ctx.tile]
        rd, wr = ctx.rd, ctx.wr
        out.append(TileStats(
            ctx.tile,  # tile
            ctx.coords,  # coords
            ctx.steps,  # ops
            _by_space(rd) if rd != _NO_BYTES else {},  # bytes_read
            _by_space(wr) if wr != _NO_BYTES else {},  # bytes_written
            local.peak if local is not None else 0,  # scratchpad_peak
            ctx.sent,  # bytes_sent
            ctx.received,  # bytes_received
        ))
    return out


def _by_space(counts: list[int]) -> dict[str, int]:
    """Byte counts indexed by memory space id, by space name (the nonzero ones)."""
    return {SPACES[i]: v for i, v in enumerate(counts) if v}
