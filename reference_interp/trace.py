"""Statistics and event-trace records produced by a run (read by the cost model).

These are plain dataclasses: a trace of a large kernel holds one record per executed op
per tile, so they stay cheap. `TraceEvent.start`/`end` are positions in the tile's
program order: `start` is the op's sequence number and `end` is one past the last op
executed inside it (so a region op such as `scf.for` spans its body's events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# (memory, first byte, one past the last byte, box): absolute byte addresses in `memory` ("global",
# or "ct_local:<owner tile>"); box = (address of coordinate 0, byte strides, first coordinates,
# extents) of the access tile's box in its view, which tells apart interleaved strided blocks
Span = tuple[str, int, int, tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]


@dataclass
class TileStats:
    """Per-tile totals for one run."""

    tile: int
    coords: tuple[int, ...]
    ops: int = 0
    bytes_read: dict[str, int] = field(default_factory=dict)
    bytes_written: dict[str, int] = field(default_factory=dict)
    scratchpad_peak: int = 0
    bytes_sent: int = 0  # partial values posted by inter_tile_produce
    bytes_received: int = 0  # values delivered by inter-tile delivery ops

    def to_dict(self) -> dict[str, Any]:
        return {
            "tile": self.tile,
            "coords": list(self.coords),
            "ops": self.ops,
            "bytes_read": dict(self.bytes_read),
            "bytes_written": dict(self.bytes_written),
            "scratchpad_peak": self.scratchpad_peak,
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
        }


@dataclass
class TraceEvent:
    """One executed op on one tile."""

    tile: int
    op: str
    start: int
    end: int
    line: int = 0
    # bytes read / written per memory space ("global", "ct_local", "alloc") by this op,
    # including ops nested in its regions
    bytes_read: dict[str, int] = field(default_factory=dict)
    bytes_written: dict[str, int] = field(default_factory=dict)
    # elements of the op's results (a proxy for compute work) and, for matmul-like ops,
    # multiply-accumulates
    elements: int = 0
    macs: int = 0
    # inter-tile ops: the future instance and the tiles waited on / delivered to
    future: tuple[int, int] | None = None
    peers: tuple[int, ...] = ()
    # the op's identity: its position in the module's pre-order walk (`Module.walk()`), the
    # same with or without source locations (-1: an op outside the module's walk)
    op_id: int = -1
    # bytes read from (`remote_read`) and written to (`remote_written`) other tiles' scratchpads
    # (ct_local memory with a ct_id other than this tile's), by owner tile: they cross the interconnect
    remote_read: dict[int, int] = field(default_factory=dict)
    remote_written: dict[int, int] = field(default_factory=dict)
    # ktdp.load / ktdp.store: the bytes the access tile can touch (`access_span`), None when unknown.
    # The timeline orders two accesses of one buffer only when their spans may overlap (the
    # stores of disjoint blocks of an output need no ordering).
    span: Span | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "tile": self.tile, "op": self.op, "start": self.start, "end": self.end, "line": self.line,
            "bytes_read": self.bytes_read, "bytes_written": self.bytes_written,
            "elements": self.elements, "macs": self.macs, "op_id": self.op_id,
        }
        if self.remote_read:
            d["remote_read"] = {str(k): v for k, v in self.remote_read.items()}
        if self.remote_written:
            d["remote_written"] = {str(k): v for k, v in self.remote_written.items()}
        if self.span is not None:
            d["span"] = [*self.span[:3], [self.span[3][0], *map(list, self.span[3][1:])]]
        if self.future is not None:
            d["future"] = list(self.future)
            d["peers"] = list(self.peers)
        return d


def access_span(tile: Any) -> Span | None:
    """The byte span (`TraceEvent.span`) of an access tile's box in its memory view, if it has one
    (a superset of the bytes a masked tile touches)."""
    view: Any = getattr(tile, "view", None)
    lo = getattr(tile, "lo", None)
    alloc = getattr(view, "alloc", None)
    if lo is None or alloc is None or getattr(tile, "coords", None) is not None:
        return None  # explicit coordinates, a distributed view, or a view outside any allocation
    origin = alloc.base + view.boff
    first = last = origin
    for start, ext, stride in zip(lo, tile.ext, view.bstrides, strict=True):
        if ext <= 0:
            return None
        a, b = start * stride, (start + ext - 1) * stride
        first += min(a, b)
        last += max(a, b)
    memory = view.space if alloc.owner is None or view.space == "global" else f"{view.space}:{alloc.owner}"
    box = (int(origin), tuple(int(x) for x in view.bstrides), tuple(int(x) for x in lo), tuple(int(x) for x in tile.ext))
    return memory, int(first), int(last) + view.itemsize, box
