"""Trace records: what the cost model reads.

One `OpRecord` per executed op instance that costs something, on one tile, in the tile's
program order. Records say what an op moved and computed, never how long it took: the
timeline simulation (`ktir.targets.timeline`) decides that from a target. They are built by
an adapter from an executor's event trace (`ktir.targets.from_interp` for the reference
interpreter) or by hand in tests.

Dependencies are explicit: `deps` lists the `seq` of earlier records on the same tile whose
results this op reads (SSA def-use through values, plus memory hazards the producer of the
records found). Ordering across tiles exists only through inter-tile communication: a
`receive` record waits for the `post` records with the same `sync` on its source tiles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """Which resource of a tile an op occupies."""

    SCALAR = "scalar"  # free: index arithmetic, views, constants (kept only for their dependencies)
    TRANSFER = "transfer"  # DMA between global memory and the tile (through the interconnect)
    LOCAL = "local"  # reads/writes of the tile's own ct_local memory
    MATRIX = "matrix"  # multiply-accumulates on the systolic/matrix units
    VECTOR = "vector"  # elementwise ops, reductions and special functions on the vector units
    POST = "post"  # inter-tile: this tile's partial value is ready for its consumers
    RECEIVE = "receive"  # inter-tile: partial values flow from source tiles to this tile


GLOBAL = "global"
CT_LOCAL = "ct_local"


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One executed op instance on one tile."""

    tile: int  # linear tile id (dimension 0 of the grid fastest, spec execution.md)
    seq: int  # position in the tile's program order; strictly increasing per tile
    op: str  # op name, e.g. "ktdp.load"
    kind: Kind
    deps: tuple[int, ...] = ()  # seq of earlier records on this tile that must finish first
    bytes_read: Mapping[str, int] = field(default_factory=dict)  # by KTIR memory space: "global", "ct_local"
    bytes_written: Mapping[str, int] = field(default_factory=dict)
    macs: int = 0  # multiply-accumulates (MATRIX)
    elements: int = 0  # elements processed (VECTOR)
    dtype: str | None = None  # element type that selects the rate ("f16", "i8", ...)
    transcendental: bool = False  # VECTOR: exp, log, tanh, division, sqrt...
    sync: str | None = None  # POST/RECEIVE: the future instance, identical on both sides
    # RECEIVE: (source tile, bytes) per source; TRANSFER: (peer tile, bytes) moved to or from
    # other tiles' scratchpads (ct_id views), over the interconnect
    sources: tuple[tuple[int, int], ...] = ()
    result_bytes: int = 0  # bytes of tensor results that live in ct_local memory until their last use
    line: int = 0  # source line, for people
    # the seq of the record whose result this one's result may be written over (the `outs` operand of a
    # destination-style op, spec/ops/linalg.md): done when this record is that result's last user; -1: none
    reuses: int = -1
    # the static op this record is one execution of (an id unique within the trace, e.g. the op's
    # index in a walk of the module): its executions on a tile are one stream, whose results share
    # the buffers the program owns for that op (`ktir.targets.timeline`); -1: the op's (name, line)
    stream: int = -1
    # TRANSFER: the box of its global access, so a strided transfer is charged the granules its
    # contiguous runs touch (`ktir.targets.machine.granules`), not its bytes rounded up once:
    # (byte address of the first element, element bytes, ((byte stride, extent), ...)); it applies
    # to the record's one global direction (read or write). None: the bytes are one contiguous run.
    global_box: tuple[int, int, tuple[tuple[int, int], ...]] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tile": self.tile, "seq": self.seq, "op": self.op, "kind": self.kind.value}
        if self.deps:
            d["deps"] = list(self.deps)
        for name in ("bytes_read", "bytes_written"):
            value = getattr(self, name)
            if value:
                d[name] = dict(value)
        for name in ("macs", "elements", "dtype", "transcendental", "sync", "result_bytes", "line"):
            value = getattr(self, name)
            if value:
                d[name] = value
        if self.sources:
            d["sources"] = [list(s) for s in self.sources]
        if self.reuses >= 0:
            d["reuses"] = self.reuses
        if self.stream >= 0:
            d["stream"] = self.stream
        if self.global_box is not None:
            d["global_box"] = [self.global_box[0], self.global_box[1], [list(x) for x in self.global_box[2]]]
        return d

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> OpRecord:
        return OpRecord(
            tile=int(d["tile"]), seq=int(d["seq"]), op=str(d["op"]), kind=Kind(d["kind"]),
            deps=tuple(int(x) for x in d.get("deps", ())),
            bytes_read={str(k): int(v) for k, v in d.get("bytes_read", {}).items()},
            bytes_written={str(k): int(v) for k, v in d.get("bytes_written", {}).items()},
            macs=int(d.get("macs", 0)), elements=int(d.get("elements", 0)), dtype=d.get("dtype"),
            transcendental=bool(d.get("transcendental", False)), sync=d.get("sync"),
            sources=tuple((int(a), int(b)) for a, b in d.get("sources", ())),
            result_bytes=int(d.get("result_bytes", 0)), line=int(d.get("line", 0)),
            reuses=int(d.get("reuses", -1)), stream=int(d.get("stream", -1)),
            global_box=_box(d.get("global_box")),
        )


def _box(b: Any) -> tuple[int, int, tuple[tuple[int, int], ...]] | None:
    if b is None:
        return None
    return int(b[0]), int(b[1]), tuple((int(st), int(n)) for st, n in b[2])


@dataclass
class KernelTrace:
    """The records of one kernel run, with what the cost model needs besides them."""

    records: list[OpRecord]
    grid: tuple[int, ...] = (1,)
    name: str = "kernel"
    # ct_local bytes a tile holds for the whole run (arrays placed there by the caller,
    # explicitly allocated buffers), on top of live tensor values
    resident_local_bytes: dict[int, int] = field(default_factory=dict)

    @property
    def n_tiles(self) -> int:
        n = 1
        for g in self.grid:
            n *= g
        return n

    def by_tile(self) -> dict[int, list[OpRecord]]:
        out: dict[int, list[OpRecord]] = {}
        for r in self.records:
            out.setdefault(r.tile, []).append(r)
        for recs in out.values():
            recs.sort(key=lambda r: r.seq)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "grid": list(self.grid),
            "resident_local_bytes": {str(k): v for k, v in self.resident_local_bytes.items()},
            "records": [r.to_dict() for r in self.records],
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> KernelTrace:
        return KernelTrace(
            records=[OpRecord.from_dict(r) for r in d["records"]],
            grid=tuple(int(g) for g in d.get("grid", (1,))),
            name=str(d.get("name", "kernel")),
            resident_local_bytes={int(k): int(v) for k, v in d.get("resident_local_bytes", {}).items()},
        )


class TraceError(ValueError):
    """Records that contradict each other (a dependency on a later op, a receive with no post...)."""


def check_records(trace: KernelTrace) -> None:
    """Raise TraceError unless every tile's seq increases and every dependency points back."""
    n = trace.n_tiles
    posts: set[tuple[str, int]] = set()
    for r in trace.records:
        if r.kind is Kind.POST and r.sync is not None:
            posts.add((r.sync, r.tile))
    for tile, recs in trace.by_tile().items():
        if not 0 <= tile < n:
            raise TraceError(f"record of tile {tile} outside the grid {list(trace.grid)}")
        seen: set[int] = set()
        for r in recs:
            if r.seq in seen:
                raise TraceError(f"tile {tile}: seq {r.seq} appears twice")
            for d in r.deps:
                if d not in seen:
                    raise TraceError(f"tile {tile} seq {r.seq} ({r.op}) depends on seq {d}, which is not an earlier record")
            seen.add(r.seq)
            if r.kind in (Kind.POST, Kind.RECEIVE) and r.sync is None:
                raise TraceError(f"tile {tile} seq {r.seq} ({r.op}): a {r.kind.value} record needs a sync id")
            if r.kind is Kind.RECEIVE:
                for src, _ in r.sources:
                    if (r.sync, src) not in posts:
                        raise TraceError(f"tile {tile} seq {r.seq}: receives {r.sync} from tile {src}, which never posts it")


def total_bytes(records: Iterable[OpRecord], space: str) -> tuple[int, int]:
    """(bytes read, bytes written) of one memory space over `records`."""
    rd = wr = 0
    for r in records:
        rd += r.bytes_read.get(space, 0)
        wr += r.bytes_written.get(space, 0)
    return rd, wr
