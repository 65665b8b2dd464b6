"""Hand-computed answers for the timeline model on the toy target of helpers.py.

Toy target: 1 GHz; 4 tiles on a bidirectional ring, links 1000 B/cycle, 0 cycles per hop;
memory 100 B/cycle, latency 50, attached to tile 0; DMA: 1 engine, 1000 B/cycle, setup 10;
matrix 2 x 512 f16 MACs/cycle + 16 startup; vector 64 f16 (32 f32, 16 transcendental f16)
elements/cycle; ct_local 200 B/cycle, latency 4.
"""

from __future__ import annotations

import pytest

from ktir.targets import KernelTrace, Kind, OpRecord, TraceError, estimate, roofline, simulate
from ktir.targets.timeline import critical_path

from .helpers import bw, load, matmul, q, store, streaming, toy, vector


def end_of(trace: KernelTrace, target=None) -> float:
    return simulate(trace, target or toy()).makespan


def test_pure_transfer_costs_bytes_over_bandwidth_plus_latency():
    n = 10_000
    # setup 10 + memory latency 50 + n / 100 B/cycle
    assert end_of(KernelTrace([load(0, 0, n)])) == pytest.approx(60 + n / 100)
    assert end_of(KernelTrace([store(0, 0, n)])) == pytest.approx(60 + n / 100)


def test_transfer_latency_adds_hops_and_rate_is_the_narrowest_channel():
    target = toy(**{"interconnect.hop_latency_cycles": q(3), "interconnect.link_bandwidth": bw(40)})
    # tile 2 is two hops from memory at tile 0: latency 10 + 50 + 2 x 3; links at 40 B/cycle are narrower than memory
    trace = KernelTrace([load(2, 0, 4000)], grid=(4,))
    assert end_of(trace, target) == pytest.approx(66 + 4000 / 40)


def test_transfer_is_rounded_up_to_the_granularity():
    target = toy(**{"memory.0.granularity_bytes": q(128)})
    assert end_of(KernelTrace([load(0, 0, 1000)]), target) == pytest.approx(60 + 1024 / 100)


def test_bandwidth_in_bytes_per_second_uses_the_clock():
    target = toy(**{"memory.0.bandwidth": bw(50e9, "B/s")})  # 50 B/cycle at 1 GHz
    assert end_of(KernelTrace([load(0, 0, 5000)]), target) == pytest.approx(60 + 100)


def test_matmul_that_fits_on_chip_is_compute_bound_with_the_expected_cycles():
    macs = 1 << 20
    trace = KernelTrace([
        load(0, 0, 4096), load(0, 1, 4096),
        matmul(0, 2, macs, deps=(0, 1), result_bytes=4096),
        store(0, 3, 4096, deps=(2,)),
    ])
    est = estimate(trace, toy())
    mm = next(o for o in est.timeline.ops if o.record.kind is Kind.MATRIX)
    assert mm.end - mm.start == 1024 + 16  # 2^20 MACs / (2 x 512) + startup
    transfer = 60 + 4096 / 100
    assert est.report.estimate_cycles == pytest.approx(2 * transfer + 1040 + transfer)
    assert est.report.binding is not None and est.report.binding.resource == "tile0.matrix"
    assert est.report.roofline_cycles == pytest.approx(1024)
    assert est.report.bottleneck is not None and est.report.bottleneck.resource == "tile0.matrix"
    assert {p.resource for p in est.report.critical_path} == {"tile0.matrix", "tile0.latency", "memory.dram"}
    assert sum(p.cycles for p in est.report.critical_path) == pytest.approx(est.report.estimate_cycles)


def test_two_tiles_sharing_a_ring_link_take_longer_than_one():
    target = toy(**{"memory.0.bandwidth": bw(10_000), "interconnect.link_bandwidth": bw(100)})
    n = 10_000
    alone = end_of(KernelTrace([load(2, 0, n)], grid=(4,)), target)
    assert alone == pytest.approx(60 + n / 100)
    # tiles 1 and 2 both receive over link 0->1: 50 B/cycle each
    shared = end_of(KernelTrace([load(1, 0, n), load(2, 0, n)], grid=(4,)), target)
    assert shared == pytest.approx(60 + 2 * n / 100)
    assert shared > alone
    # tiles 1 and 3 leave memory in opposite directions: no shared link
    apart = end_of(KernelTrace([load(1, 0, n), load(3, 0, n)], grid=(4,)), target)
    assert apart == pytest.approx(alone)


def test_shared_memory_channel_is_split_fairly():
    n = 10_000
    both = end_of(KernelTrace([load(1, 0, n), load(3, 0, n)], grid=(4,)))
    assert both == pytest.approx(60 + 2 * n / 100)  # memory (100 B/cycle) is the narrow channel


def test_double_buffering_brings_a_streaming_kernel_toward_max_of_compute_and_transfer():
    # 8 chunks: load 1000 B (70 cycles), 6400 f16 elements (100 cycles), store 1000 B (70 cycles)
    naive = streaming(8, 1000, 6400, double_buffered=False)
    double = streaming(8, 1000, 6400, double_buffered=True)
    t_naive = end_of(naive)
    t_double = end_of(double)
    assert t_naive == pytest.approx(8 * (70 + 100 + 70))
    # the DMA queue is busy from the first store on: 16 transfers x 70, plus the first
    # compute's 100 cycles minus the second load's 70 it overlaps (see the module docstring)
    assert t_double == pytest.approx(1180)
    compute, transfer = 8 * 100, 16 * 70
    assert max(compute, transfer) <= t_double < t_naive
    assert roofline(double, toy()).bound == pytest.approx(max(compute, transfer))


def test_double_buffering_hides_transfers_when_compute_dominates():
    # compute 400 cycles per chunk, transfers 70 + 70: the estimate approaches the compute total
    double = end_of(streaming(8, 1000, 25_600, double_buffered=True))
    naive = end_of(streaming(8, 1000, 25_600, double_buffered=False))
    assert naive == pytest.approx(8 * (70 + 400 + 70))
    assert double == pytest.approx(70 + 8 * 400 + 70)


def test_independent_ops_overlap_across_queues():
    trace = KernelTrace([load(0, 0, 1000), vector(0, 1, 6400)])  # no dependency
    assert end_of(trace) == pytest.approx(100)


def test_receive_waits_for_the_post_then_moves_bytes_over_the_route():
    target = toy(**{"interconnect.hop_latency_cycles": q(5)})
    trace = KernelTrace([
        vector(0, 0, 6400),  # 100 cycles
        OpRecord(0, 1, "ktdp.inter_tile_produce", Kind.POST, deps=(0,), sync="f0:0"),
        OpRecord(2, 0, "ktdp.inter_tile_consume", Kind.RECEIVE, sync="f0:0", sources=((0, 1000),), result_bytes=1000),
    ], grid=(4,))
    tl = simulate(trace, target)
    rx = next(o for o in tl.ops if o.record.kind is Kind.RECEIVE)
    assert rx.start == pytest.approx(100)
    # setup 10 + 2 hops x 5 + 1000 B at min(link 1000, engine 1000) B/cycle
    assert rx.end == pytest.approx(100 + 10 + 10 + 1)


def test_compute_rates_by_dtype_and_transcendentals():
    assert end_of(KernelTrace([vector(0, 0, 6400, dtype="f32")])) == 200
    exp = OpRecord(0, 0, "math.exp", Kind.VECTOR, elements=6400, dtype="f16", transcendental=True)
    assert end_of(KernelTrace([exp])) == 400
    assert end_of(KernelTrace([vector(0, 0, 65)])) == 2  # whole cycles


def test_missing_dtype_rate_falls_back_to_the_slowest_and_warns():
    rec = OpRecord(0, 0, "linalg.matmul", Kind.MATRIX, macs=1024, dtype="i8")
    tl = simulate(KernelTrace([rec]), toy())
    assert tl.makespan == 1 + 16
    assert any("no matrix rate for i8" in w for w in tl.warnings)


def test_local_access_costs_latency_plus_bytes_over_local_bandwidth():
    rec = OpRecord(0, 0, "ktdp.load", Kind.LOCAL, bytes_read={"ct_local": 2000})
    assert end_of(KernelTrace([rec])) == pytest.approx(4 + 2000 / 200)


def test_scratchpad_use_over_time():
    trace = KernelTrace([
        load(0, 0, 1000),  # 0..70, holds 1000 B until the vector op ends
        vector(0, 1, 6400, deps=(0,), result_bytes=2000),  # 70..170
        store(0, 2, 2000, deps=(1,)),  # 170..250 (2000 B at 100 B/cycle + 60)
    ], resident_local_bytes={0: 500})
    tl = simulate(trace, toy())
    assert tl.peak_local[0] == 500 + 1000 + 2000
    assert tl.occupancy[0][-1] == (pytest.approx(250), 500)
    assert [v for _, v in tl.occupancy[0]] == [1500, 3500, 2500, 500]  # the change at time 0 replaces the start value


def test_capacity_overflow_is_reported():
    target = toy(**{"memory.1.capacity_bytes": q(1500)})
    est = estimate(KernelTrace([load(0, 0, 1000), load(0, 1, 1000), vector(0, 2, 64, deps=(0, 1))]), target)
    assert not est.report.scratchpad[0].fits
    assert any("beyond" in w for w in est.report.warnings)


def test_dma_engines_run_transfers_concurrently_in_program_order():
    target = toy(**{"dma.engines_per_tile": q(2), "memory.0.bandwidth": bw(10_000), "dma.engine_bandwidth": bw(100)})
    trace = KernelTrace([load(0, 0, 1000), load(0, 1, 1000), load(0, 2, 1000)])
    tl = simulate(trace, target)
    assert [o.lane for o in tl.ops] == [0, 1, 0]
    assert tl.makespan == pytest.approx(2 * (60 + 10))


def test_head_of_line_blocking_keeps_program_order_on_a_queue():
    # the store waits for the vector op; the load behind it on the DMA queue waits too
    trace = KernelTrace([vector(0, 0, 6400), store(0, 1, 1000, deps=(0,)), load(0, 2, 1000)])
    tl = simulate(trace, toy())
    assert tl.ops[2].start == pytest.approx(100 + 70)


def test_records_are_checked():
    with pytest.raises(TraceError, match="not an earlier record"):
        simulate(KernelTrace([load(0, 0, 10, deps=(1,)), load(0, 1, 10)]), toy())
    with pytest.raises(TraceError, match="never posts"):
        rx = OpRecord(1, 0, "ktdp.inter_tile_consume", Kind.RECEIVE, sync="x", sources=((0, 8),))
        simulate(KernelTrace([rx], grid=(2,)), toy())
    with pytest.raises(TraceError, match="has 8 tiles"):
        simulate(KernelTrace([load(0, 0, 10)], grid=(8,)), toy())


def test_cycle_across_tiles_is_reported():
    trace = KernelTrace([
        OpRecord(0, 0, "ktdp.inter_tile_consume", Kind.RECEIVE, sync="a", sources=((1, 8),)),
        OpRecord(0, 1, "ktdp.inter_tile_produce", Kind.POST, sync="b"),
        OpRecord(1, 0, "ktdp.inter_tile_consume", Kind.RECEIVE, sync="b", sources=((0, 8),)),
        OpRecord(1, 1, "ktdp.inter_tile_produce", Kind.POST, sync="a"),
    ], grid=(2,))
    with pytest.raises(TraceError, match="cannot all run"):
        simulate(trace, toy())


def test_records_round_trip_through_dicts():
    trace = streaming(2, 100, 64, double_buffered=True, tiles=2)
    again = KernelTrace.from_dict(trace.to_dict())
    assert again.records == trace.records and again.grid == trace.grid


def test_critical_path_of_a_naive_streaming_kernel():
    # per chunk: load (latency 60, 1000 B at 100 B/cycle on the memory channel), compute 100, store (same as load)
    tl = simulate(streaming(8, 1000, 6400, double_buffered=False), toy())
    shares = critical_path(tl)
    assert shares == pytest.approx({"tile0.latency": 8 * 120, "memory.dram": 8 * 20, "tile0.vector": 8 * 100})
    assert sum(shares.values()) == pytest.approx(tl.makespan)


def test_critical_path_follows_the_port_and_other_tiles():
    target = toy(**{"dma.engines_per_tile": q(2)})
    # two loads in flight: the second one's bytes wait for the first one's on the port
    tl = simulate(KernelTrace([load(0, 0, 1000), load(0, 1, 1000)]), target)
    assert critical_path(tl) == pytest.approx({"tile0.latency": 60, "memory.dram": 20})
    # a receive waits for its source's post: the path continues on the source tile
    trace = KernelTrace([
        vector(0, 0, 6400),
        OpRecord(0, 1, "ktdp.inter_tile_produce", Kind.POST, deps=(0,), sync="f0:0"),
        OpRecord(1, 0, "ktdp.inter_tile_consume", Kind.RECEIVE, sync="f0:0", sources=((0, 1000),)),
    ], grid=(2,))
    shares = critical_path(simulate(trace, toy()))
    assert shares == pytest.approx({"tile0.vector": 100, "tile1.latency": 10, "tile1.port": 1})
