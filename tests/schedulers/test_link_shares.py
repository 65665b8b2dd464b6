"""`space_ring.link_shares` gives the schedulers' cost model the rates the timeline gives the same
routes: each tile reading and writing global memory and receiving from another tile."""

from __future__ import annotations

import pytest

from ktir.targets import KernelTrace, Kind, OpRecord
from ktir.targets.machine import Machine
from ktir.targets.timeline import simulate
from schedulers.space_ring import link_shares

NBYTES = 1 << 17  # a whole number of granules: the data phases move exactly these bytes


def _trace(active: int, flows: tuple[tuple[int, int], ...]) -> KernelTrace:
    """Per tile: a load and a store of global memory, a post, and a receive from its flow's source."""
    source = dict((dst, src) for src, dst in flows)
    records = []
    for t in range(active):
        records += [OpRecord(t, 0, "ktdp.load", Kind.TRANSFER, bytes_read={"global": NBYTES}),
                    OpRecord(t, 1, "ktdp.store", Kind.TRANSFER, deps=(0,), bytes_written={"global": NBYTES}),
                    OpRecord(t, 2, "ktdp.inter_tile_produce", Kind.POST, sync="ring")]
        if t in source:
            records.append(OpRecord(t, 3, "ktdp.inter_tile_consume", Kind.RECEIVE, deps=(1, 2), sync="ring",
                                    sources=((source[t], NBYTES),)))
    return KernelTrace(records, grid=(active,))


def _ring_flows(gm: int, g: int) -> tuple[tuple[int, int], ...]:
    """Each tile of a ring group of g receives from its left neighbour (`space_ring.rates`)."""
    return tuple(((t // g) * g + (t % g - 1) % g, t) for t in range(gm * g))


@pytest.mark.parametrize("sharing", ["static", "maxmin"])
@pytest.mark.parametrize(("active", "flows"), [(32, _ring_flows(4, 8)), (32, _ring_flows(2, 16)), (16, _ring_flows(1, 16)),
                                               (8, _ring_flows(2, 4)), (32, tuple((t + 8, t) for t in range(8)))])
def test_link_shares_are_the_timelines_rates_on_spyre(active: int, flows: tuple[tuple[int, int], ...], sharing: str,
                                                      spyre) -> None:  # type: ignore[no-untyped-def]
    machine = Machine(spyre)
    mem, ring = link_shares(machine, active, flows, sharing)  # type: ignore[arg-type]
    timeline = simulate(_trace(active, flows), machine, sharing)  # type: ignore[arg-type]
    rate: dict[tuple[int, int], float] = {}
    for op in timeline.ops:
        if op.data_start is not None:
            rate[(op.record.tile, op.record.seq)] = NBYTES / (op.end - op.data_start)
    for t in range(active):
        assert min(rate[(t, 0)], rate[(t, 1)]) == pytest.approx(mem[t], rel=1e-9)
    for (_, dst), r in zip(flows, ring, strict=True):
        assert rate[(dst, 3)] == pytest.approx(r, rel=1e-9)
    if sharing == "maxmin":  # never below the equal shares
        static_mem, static_ring = link_shares(machine, active, flows, "static")
        assert all(m >= s * (1 - 1e-9) for m, s in zip(mem, static_mem, strict=True))
        assert all(m >= s * (1 - 1e-9) for m, s in zip(ring, static_ring, strict=True))


@pytest.mark.parametrize("sharing", ["static", "maxmin"])
@pytest.mark.parametrize(("sk", "g", "scatter"), [(2, 16, False), (4, 8, False), (4, 8, True), (2, 4, True)])
def test_the_split_rings_rates_are_the_timelines_on_spyre(sk: int, g: int, scatter: bool, sharing: str,
                                                          spyre) -> None:  # type: ignore[no-untyped-def]
    """`space_ringsplit._rates` against the timeline on the split ring's routes: every tile reads
    memory and receives from tile t - sk; the receivers of partials (each group's first tile, or
    every tile when reduce-scattered) write memory and receive their group's other partials in one
    receive, whose flows split a link they cross."""
    from schedulers import space_ringsplit

    machine = Machine(spyre)
    tiles = sk * g
    mem, ring, slowest = space_ringsplit._rates(machine, sk, g, scatter, sharing)  # type: ignore[arg-type]
    receivers = range(tiles) if scatter else range(0, tiles, sk)
    records = []
    for t in range(tiles):
        records += [OpRecord(t, 0, "ktdp.load", Kind.TRANSFER, bytes_read={"global": NBYTES}),
                    OpRecord(t, 1, "ktdp.inter_tile_produce", Kind.POST, sync="ring"),
                    OpRecord(t, 2, "ktdp.inter_tile_consume", Kind.RECEIVE, deps=(0, 1), sync="ring",
                             sources=(((t - sk) % tiles, NBYTES),)),
                    OpRecord(t, 3, "ktdp.inter_tile_produce", Kind.POST, deps=(2,), sync="partials")]
        if t in receivers:
            others = tuple((t - t % sk + x, NBYTES) for x in range(sk) if x != t % sk)
            records += [OpRecord(t, 4, "ktdp.inter_tile_reduce", Kind.RECEIVE, deps=(3,), sync="partials", sources=others),
                        OpRecord(t, 5, "ktdp.store", Kind.TRANSFER, deps=(4,), bytes_written={"global": NBYTES})]
    timeline_ = simulate(KernelTrace(records, grid=(tiles,)), machine, sharing)  # type: ignore[arg-type]
    phase = {(op.record.tile, op.record.seq): op.end - op.data_start for op in timeline_.ops if op.data_start is not None}
    for t in range(tiles):
        assert NBYTES / phase[(t, 0)] == pytest.approx(mem[t], rel=1e-9)
        assert NBYTES / phase[(t, 2)] == pytest.approx(ring[t], rel=1e-9)
    # the partials' receive lasts as long as its slowest flow: the slowest partial over all receivers
    assert min(NBYTES / phase[(t, 4)] for t in receivers) == pytest.approx(slowest, rel=1e-9)
