"""Finite buffers on the timeline (`ktir.targets.timeline`, module docstring): the executions of
one op on a tile share the buffers the program owns for it, at least `buffers` of them, and a
posted value stays until its receivers have read it. Toy target of helpers.py (1 DMA engine,
memory 100 B/cycle, vector 64 f16 elements/cycle)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ktir.targets import KernelTrace, Kind, OpRecord, simulate

from .helpers import load, toy, vector

CHUNK = 1000  # bytes per load: 10 cycles of data at 100 B/cycle, after 60 of latency
WORK = 64 * 400  # elements per compute: 400 cycles, far longer than a load


def _stream(chunks: int, carried: bool) -> KernelTrace:
    """A loop of `chunks` iterations over one load op (stream 1) and one compute op (stream 2).
    Plain: each iteration loads its chunk and computes on it. Carried: the chunk is loaded one
    iteration ahead (load of i + 1, then the compute of i), so two loads are live in program order."""
    records: list[OpRecord] = []
    loads: list[int] = []

    def add_load() -> None:
        loads.append(len(records))
        records.append(replace(load(0, len(records), CHUNK), stream=1))

    if carried:
        add_load()
    for i in range(chunks):
        if not carried or i + 1 < chunks:
            add_load()
        records.append(replace(vector(0, len(records), WORK, deps=(loads[i],)), stream=2))
    return KernelTrace(records)


def _load_starts(trace: KernelTrace, buffers: int) -> tuple[list[float], list[float], int]:
    t = simulate(trace, toy(), buffers=buffers)
    starts = [o.start for o in t.ops if o.record.kind is Kind.TRANSFER]
    ends = [o.end for o in t.ops if o.record.kind is Kind.VECTOR]
    return starts, ends, t.peak_local[0]


def test_a_load_waits_for_the_compute_that_frees_its_buffer() -> None:
    """One buffer per op: the load of chunk i + 1 writes the buffer chunk i is computed from, so it
    starts when that compute ends and only one chunk is ever held. Two (double buffering): the load
    of chunk i + 2 starts when the compute of chunk i ends, and two chunks are held."""
    trace = _stream(6, carried=False)
    starts, ends, peak = _load_starts(trace, 1)
    assert all(starts[i + 1] == pytest.approx(ends[i]) for i in range(5))
    assert peak == CHUNK
    starts, ends, peak = _load_starts(trace, 2)
    assert starts[1] == pytest.approx(starts[0] + 70)  # one load after the other: no compute to wait for
    assert all(starts[i + 2] == pytest.approx(ends[i]) for i in range(4))
    assert peak == 2 * CHUNK
    # without a stream the loads are not bounded: all six are issued at once behind each other
    free = KernelTrace([replace(r, stream=-1) for r in trace.records])
    assert simulate(free, toy(), buffers=1).peak_local[0] == 6 * CHUNK


def test_a_value_carried_to_the_next_iteration_owns_two_buffers_whatever_the_floor() -> None:
    """Loaded one iteration ahead, two chunks are live in program order, so the op owns two
    buffers even with a floor of one: the load of chunk i + 2 waits for the compute of chunk i."""
    starts, ends, peak = _load_starts(_stream(6, carried=True), 1)
    assert all(starts[i + 2] == pytest.approx(ends[i]) for i in range(4))
    assert peak == 2 * CHUNK


def test_a_posted_value_stays_until_its_receiver_has_read_it() -> None:
    """Tile 0 loads a value and posts it; tile 1 receives it only after a long compute of its own.
    Tile 0's copy is held until the receive ends (before, it was freed when the post ended)."""
    value = replace(load(0, 0, CHUNK), stream=1)
    post = OpRecord(0, 1, "ktdp.inter_tile_produce", Kind.POST, deps=(0,), sync="f0:0", stream=2)
    busy = replace(vector(1, 0, WORK), stream=3)
    receive = OpRecord(1, 1, "ktdp.inter_tile_consume", Kind.RECEIVE, deps=(0,), sync="f0:0",
                       sources=((0, CHUNK),), result_bytes=CHUNK, stream=4)
    t = simulate(KernelTrace([value, post, busy, receive], grid=(2,)), toy())
    got = {(o.record.tile, o.record.seq): o for o in t.ops}
    received = got[(1, 1)].end
    assert received > got[(0, 1)].end + 300  # the receive waited for tile 1's compute
    held = [(when, v) for when, v in t.occupancy[0]]
    assert held[-1] == (pytest.approx(received), 0)  # freed when the receive ended
    assert max(v for _, v in held) == CHUNK


def test_buffers_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        simulate(_stream(2, carried=False), toy(), buffers=0)
