"""Small targets with round numbers, so that expected times can be computed by hand."""

from __future__ import annotations

import copy
from typing import Any

from ktir.targets.loader import target_from_dict
from ktir.targets.records import KernelTrace, Kind, OpRecord
from ktir.targets.schema import Target


def q(value: Any) -> dict[str, Any]:
    return {"value": value, "assumption": "test"}


def bw(value: float, unit: str = "B/cycle") -> dict[str, Any]:
    return {"value": value, "unit": unit, "assumption": "test"}


BASE: dict[str, Any] = {
    "schema_version": 1,
    "name": "toy",
    "title": "Toy target for hand-computed tests",
    "description": "Round numbers.",
    "dtypes": ["f16", "f32"],
    "clock": {"hz": q(1e9)},
    "tiles": {"count": q(4)},
    "interconnect": {"topology": "ring", "bidirectional": True, "link_bandwidth": bw(1000), "hop_latency_cycles": q(0)},
    "compute_units": [
        {"name": "mm", "kind": "systolic", "count": q(2), "shape": q([8, 8]), "macs_per_cycle": {"f16": q(512)},
         "startup_cycles": q(16)},
        {"name": "vec", "kind": "vector", "count": q(1), "lanes": q(64), "elements_per_cycle": {"f16": q(64), "f32": q(32)},
         "transcendentals_per_cycle": {"f16": q(16)}},
    ],
    "memory": [
        {"name": "dram", "scope": "global", "capacity_bytes": q(1 << 30), "bandwidth": bw(100), "latency_cycles": q(50),
         "granularity_bytes": q(1), "attach_tiles": q([0])},
        {"name": "sram", "scope": "ct_local", "capacity_bytes": q(1 << 20), "bandwidth": bw(200), "latency_cycles": q(4),
         "granularity_bytes": q(1)},
    ],
    "dma": {"engines_per_tile": q(1), "engine_bandwidth": bw(1000), "setup_cycles": q(10)},
    "sources": {},
    "assumptions": {"test": {"reasoning": "round numbers for tests"}},
}


def toy(**changes: Any) -> Target:
    """BASE with dotted-path changes, e.g. toy(**{"memory.0.bandwidth": bw(50)})."""
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        node: Any = data
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return target_from_dict(data, "toy")


def load(tile: int, seq: int, nbytes: int, deps: tuple[int, ...] = ()) -> OpRecord:
    return OpRecord(tile, seq, "ktdp.load", Kind.TRANSFER, deps=deps, bytes_read={"global": nbytes}, result_bytes=nbytes)


def store(tile: int, seq: int, nbytes: int, deps: tuple[int, ...] = ()) -> OpRecord:
    return OpRecord(tile, seq, "ktdp.store", Kind.TRANSFER, deps=deps, bytes_written={"global": nbytes})


def matmul(tile: int, seq: int, macs: int, deps: tuple[int, ...] = (), result_bytes: int = 0) -> OpRecord:
    return OpRecord(tile, seq, "linalg.matmul", Kind.MATRIX, deps=deps, macs=macs, dtype="f16", result_bytes=result_bytes)


def vector(tile: int, seq: int, elements: int, deps: tuple[int, ...] = (), dtype: str = "f16", result_bytes: int = 0) -> OpRecord:
    return OpRecord(tile, seq, "arith.addf", Kind.VECTOR, deps=deps, elements=elements, dtype=dtype, result_bytes=result_bytes)


def streaming(chunks: int, chunk_bytes: int, compute_elements: int, double_buffered: bool, tiles: int = 1) -> KernelTrace:
    """load -> compute -> store per chunk; double buffering issues the next load before the compute."""
    records: list[OpRecord] = []
    for t in range(tiles):
        seq = 0
        if not double_buffered:
            for _ in range(chunks):
                records.append(load(t, seq, chunk_bytes))
                records.append(vector(t, seq + 1, compute_elements, deps=(seq,)))
                records.append(store(t, seq + 2, chunk_bytes, deps=(seq + 1,)))
                seq += 3
            continue
        records.append(load(t, 0, chunk_bytes))
        current = 0
        seq = 1
        for i in range(chunks):
            nxt = None
            if i + 1 < chunks:
                nxt = seq
                records.append(load(t, seq, chunk_bytes))
                seq += 1
            records.append(vector(t, seq, compute_elements, deps=(current,)))
            records.append(store(t, seq + 1, chunk_bytes, deps=(seq,)))
            seq += 2
            if nxt is not None:
                current = nxt
    grid = (tiles,)
    return KernelTrace(records, grid=grid, name="stream")
