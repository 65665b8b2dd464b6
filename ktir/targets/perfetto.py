"""Chrome trace-event JSON of a timeline, for ui.perfetto.dev or chrome://tracing.

Layout: one process per tile ("tile 3") with one thread track per resource ("dma 0",
"dma 1", "port" (data phases), "matrix", "vector", "local", "comm") holding the ops as
complete ("X") events,
and a counter track of the tile's ct_local use. A "memory" process and an "interconnect"
process hold one counter track per shared channel (bytes per cycle over time).
Timestamps are microseconds of the target's clock.

The format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ktir.fileio import write_atomic

from .timeline import QUEUES, Timeline

PHASES = {"X", "B", "E", "i", "I", "C", "M", "b", "e", "n", "s", "t", "f"}


def lanes(dma_engines: int) -> list[str]:
    """Thread names of one tile, in track order."""
    return [f"dma {i}" for i in range(dma_engines)] + ["port"] + [q for q in QUEUES if q != "dma"]


def trace_events(timeline: Timeline, kernel: str = "kernel") -> dict[str, Any]:
    """The trace-event JSON object of `timeline`."""
    m = timeline.machine
    us = 1e6 / m.clock_hz
    names = lanes(m.dma_engines)
    tid_of = {name: i + 1 for i, name in enumerate(names)}
    events: list[dict[str, Any]] = []
    memory_pid = timeline.n_tiles + 1
    network_pid = timeline.n_tiles + 2

    def meta(pid: int, kind: str, value: str, tid: int = 0) -> None:
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": kind, "args": {"name": value}})

    for t in range(timeline.n_tiles):
        pid = t + 1
        meta(pid, "process_name", f"tile {t}")
        events.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": pid}})
        for name, tid in tid_of.items():
            meta(pid, "thread_name", name, tid)
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    meta(memory_pid, "process_name", "memory")
    meta(network_pid, "process_name", "interconnect")

    for o in timeline.ops:
        if o.queue is None:
            continue
        r = o.record
        lane = f"dma {o.lane}" if o.queue == "dma" else o.queue
        args: dict[str, Any] = {"seq": r.seq, "line": r.line, "cycles": round(o.end - o.start, 3)}
        for key in ("macs", "elements", "dtype", "sync", "result_bytes"):
            value = getattr(r, key)
            if value:
                args[key] = value
        if r.bytes_read:
            args["bytes_read"] = dict(r.bytes_read)
        if r.bytes_written:
            args["bytes_written"] = dict(r.bytes_written)
        if r.sources:
            args["sources"] = [list(s) for s in r.sources]
        events.append({
            "ph": "X", "pid": r.tile + 1, "tid": tid_of[lane], "name": r.op, "cat": r.kind.value,
            "ts": _ts(o.start * us), "dur": _ts((o.end - o.start) * us), "args": args,
        })
        if o.data_start is not None:
            events.append({
                "ph": "X", "pid": r.tile + 1, "tid": tid_of["port"], "name": r.op, "cat": "data",
                "ts": _ts(o.data_start * us), "dur": _ts((o.end - o.data_start) * us), "args": {"seq": r.seq},
            })

    for t, occupancy in timeline.occupancy.items():
        for time, value in occupancy:
            events.append({"ph": "C", "pid": t + 1, "tid": 0, "name": f"{m.local_name} bytes", "ts": _ts(time * us),
                           "args": {"bytes": value}})
    for channel, series in sorted(timeline.rate_series.items()):
        pid = memory_pid if channel.startswith("memory.") else network_pid
        label = channel.split(".", 1)[1]
        for time, rate in series:
            events.append({"ph": "C", "pid": pid, "tid": 0, "name": label, "ts": _ts(time * us),
                           "args": {"B/cycle": round(rate, 3)}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"kernel": kernel, "target": m.name, "clock_hz": m.clock_hz, "cycles": timeline.makespan},
    }


def _ts(x: float) -> float:
    return round(x, 6)


def write_trace(timeline: Timeline, path: str | Path, kernel: str = "kernel") -> None:
    write_atomic(path, json.dumps(trace_events(timeline, kernel)))


def problems(obj: Any) -> list[str]:
    """What makes `obj` not a valid trace-event JSON object (empty when it is valid)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
        return ["the top level must be an object with a traceEvents array"]
    out: list[str] = []
    for i, ev in enumerate(obj["traceEvents"]):
        where = f"traceEvents[{i}]"
        if not isinstance(ev, dict):
            out.append(f"{where}: not an object")
            continue
        ph = ev.get("ph")
        if ph not in PHASES:
            out.append(f"{where}: unknown phase {ph!r}")
            continue
        if not isinstance(ev.get("name"), str):
            out.append(f"{where}: name must be a string")
        for key in ("pid", "tid"):
            if not isinstance(ev.get(key), int):
                out.append(f"{where}: {key} must be an integer")
        if ph != "M" and not isinstance(ev.get("ts"), int | float):
            out.append(f"{where}: ts must be a number")
        if ph == "X" and not (isinstance(ev.get("dur"), int | float) and ev["dur"] >= 0):
            out.append(f"{where}: a complete event needs dur >= 0")
        if ph in ("C", "M") and not isinstance(ev.get("args"), dict):
            out.append(f"{where}: a {ph} event needs args")
        if ph == "C" and not all(isinstance(v, int | float) for v in ev.get("args", {}).values()):
            out.append(f"{where}: counter values must be numbers")
    return out


def read_tracks(source: str | Path | dict[str, Any]) -> dict[str, list[str]]:
    """Process name -> its thread names, read back from a trace file (or object)."""
    obj = source if isinstance(source, dict) else json.loads(Path(source).read_text(encoding="utf-8"))
    procs: dict[int, str] = {}
    threads: dict[int, list[tuple[int, str]]] = {}
    for ev in obj["traceEvents"]:
        if ev.get("ph") != "M":
            continue
        if ev.get("name") == "process_name":
            procs[ev["pid"]] = ev["args"]["name"]
        elif ev.get("name") == "thread_name":
            threads.setdefault(ev["pid"], []).append((ev["tid"], ev["args"]["name"]))
    return {name: [t for _, t in sorted(threads.get(pid, []))] for pid, name in sorted(procs.items())}
