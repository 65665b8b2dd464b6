"""The adapter from the reference interpreter's event trace, on real kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ktir
from ktir.targets import Kind, estimate, load_target
from ktir.targets.from_interp import from_interp

ri = pytest.importorskip("reference_interp")

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).with_name("kernels")


def parse(path: Path) -> ktir.Module:
    return ktir.parse(path.read_text(encoding="utf-8"), str(path))


@pytest.fixture(scope="module")
def matmul_run():
    m = parse(ROOT / "tests/corpus/kernels/tiled_matmul.ktir")
    rng = np.random.default_rng(0)
    args = {"a_ptr": rng.standard_normal((64, 1024)).astype(np.float16),
            "b_ptr": rng.standard_normal((1024, 512)).astype(np.float16),
            "c_ptr": np.zeros((64, 512), np.float16)}
    return m, ri.run(m, "matmul", args, trace=True)


def run_stream(name: str):
    m = parse(KERNELS / f"{name}.ktir")
    x = np.linspace(-2, 2, 8192).astype(np.float16)
    result = ri.run(m, None, {"X": x, "Y": np.zeros(8192, np.float16)}, trace=True)
    np.testing.assert_allclose(result.outputs["Y"].astype(np.float64), np.exp(x.astype(np.float64)), rtol=1e-2)
    return m, result


def test_matmul_records_follow_the_ssa_chain(matmul_run):
    m, result = matmul_run
    conv = from_interp(m, result, "matmul")
    assert conv.warnings == []
    tile1 = [r for r in conv.trace.records if r.tile == 1]
    kinds = [r.kind for r in tile1]
    assert kinds.count(Kind.MATRIX) == 8 and kinds.count(Kind.TRANSFER) == 17 and kinds.count(Kind.VECTOR) == 2
    matmuls = [r for r in tile1 if r.kind is Kind.MATRIX]
    fill = tile1[0]
    assert fill.op == "linalg.fill"
    # the first matmul reads the filled accumulator and its two loads; each later one the previous matmul
    assert set(matmuls[0].deps) == {fill.seq, matmuls[0].seq - 2, matmuls[0].seq - 1}
    for before, after in zip(matmuls, matmuls[1:], strict=False):
        assert set(after.deps) == {before.seq, after.seq - 2, after.seq - 1}
    assert all(r.macs == 32 * 128 * 128 and r.dtype == "f16" and r.result_bytes == 32 * 128 * 4 for r in matmuls)
    store = tile1[-1]
    assert store.op == "ktdp.store" and store.bytes_written == {"global": 32 * 128 * 2}
    assert tile1[-2].op == "arith.truncf" and tile1[-2].deps == (matmuls[-1].seq,)


def test_bytes_match_the_interpreter_statistics(matmul_run):
    m, result = matmul_run
    conv = from_interp(m, result, "matmul")
    for stats in result.stats:
        records = [r for r in conv.trace.records if r.tile == stats.tile]
        for space, n in stats.bytes_read.items():
            assert sum(r.bytes_read.get(space, 0) for r in records) == n
        for space, n in stats.bytes_written.items():
            assert sum(r.bytes_written.get(space, 0) for r in records) == n


def test_loop_carried_values_bind_per_iteration():
    m, result = run_stream("stream_double_buffered")
    records = from_interp(m, result).trace.records
    loads = [r for r in records if r.op == "ktdp.load"]
    exps = [r for r in records if r.op == "math.exp"]
    assert len(loads) == 8 and len(exps) == 8
    # exp i reads the chunk loaded one iteration earlier (the carried %cur), not the next one
    for i, e in enumerate(exps):
        assert e.deps == (loads[i].seq,)
        assert e.transcendental and e.elements == 1024


def test_double_buffered_kernel_is_faster_on_spyre():
    spyre = load_target("spyre")
    naive = estimate(from_interp(*run_stream("stream_naive")).trace, spyre).report
    double = estimate(from_interp(*run_stream("stream_double_buffered")).trace, spyre).report
    assert double.estimate_cycles < naive.estimate_cycles
    assert double.ratio_to_roofline < naive.ratio_to_roofline
    assert double.roofline_cycles == pytest.approx(naive.roofline_cycles)  # same work


def test_memory_hazards_order_accesses_to_the_same_array():
    m, result = run_stream("stream_naive")
    records = from_interp(m, result).trace.records
    stores = [r for r in records if r.op == "ktdp.store"]
    loads = [r for r in records if r.op == "ktdp.load"]
    # the stores write disjoint chunks of Y: none waits for another; loads of X never wait for stores to Y
    assert all(not (set(s.deps) & {t.seq for t in stores}) for s in stores)
    assert all(not (set(load.deps) & {s.seq for s in stores}) for load in loads)


def test_memory_hazards_follow_the_bytes_each_access_touches():
    m = parse(KERNELS / "hazards_by_span.ktir")
    x = np.arange(256, dtype=np.float16).reshape(2, 128)
    result = ri.run(m, None, {"X": x, "Y": np.zeros((2, 128), np.float16)}, trace=True)
    np.testing.assert_array_equal(result.outputs["Y"], np.concatenate([x[:, :64], x[:, :64]], axis=1))
    records = from_interp(m, result).trace.records
    load_x, left, right, load_left, left_again, head, whole = records
    assert [r.op for r in records] == ["ktdp.load", "ktdp.store", "ktdp.store", "ktdp.load", "ktdp.store",
                                       "ktdp.load", "ktdp.load"]
    assert right.deps == (load_x.seq,)  # the right half interleaves with the left one but shares no byte
    assert load_left.deps == (left.seq,)  # read after write, not after the right half's store
    assert left_again.deps == (left.seq, load_left.seq)  # write after write and after read
    # through another view of Y (1-D): the first 64 elements are row 0 of the left half only
    assert head.deps == (left.seq, left_again.seq)
    assert whole.deps == (left.seq, right.seq, left_again.seq)


def test_inter_tile_reduce_and_broadcast():
    m = parse(ROOT / "tests/corpus/kernels/ring_reduce.ktir")
    result = ri.run(m, "group_reduce_then_broadcast",
                    {"in_ptr": np.ones((8, 128), np.float32), "scratch": ri.Local(np.zeros((8, 1, 128), np.float32))},
                    trace=True)
    trace = from_interp(m, result, "group_reduce_then_broadcast").trace
    leader = [r for r in trace.records if r.tile == 4]
    member = [r for r in trace.records if r.tile == 5]
    assert [r.kind for r in leader] == [Kind.TRANSFER, Kind.POST, Kind.VECTOR, Kind.RECEIVE, Kind.VECTOR, Kind.POST,
                                        Kind.RECEIVE, Kind.LOCAL]
    reduce_rx = leader[3]
    assert reduce_rx.sources == tuple((t, 512) for t in range(4, 8))
    assert leader[4].elements == 4 * 128  # the combiner runs once per partial
    assert [r.kind for r in member] == [Kind.TRANSFER, Kind.POST, Kind.VECTOR, Kind.RECEIVE, Kind.LOCAL]
    assert member[3].sources == ((4, 512),) and member[3].sync == leader[5].sync
    assert trace.resident_local_bytes[5] == 512  # the Local() argument
    report = estimate(trace, load_target("spyre")).report
    assert report.op_counts["receive"] == 8 + 2 and report.op_counts["post"] == 8 + 2


def test_a_run_without_trace_is_refused(matmul_run):
    m, result = matmul_run

    class Untraced:
        grid = result.grid
        stats = result.stats
        trace = None

    with pytest.raises(ValueError, match="trace=True"):
        from_interp(m, Untraced(), "matmul")
