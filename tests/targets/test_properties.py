"""Properties of the cost model over generated traces and targets.

- The timeline estimate is never below the roofline bound (every sharing mode).
- With static sharing, the estimate is monotone: more work never finishes
  earlier, more bandwidth never later. (Fair sharing is exempt: like a real network it can
  slow down when one flow gets faster and takes link share from another; see timeline.py.)
- With max-min static sharing (the default), more work never finishes earlier; no channel ever carries
  more than its capacity; every data phase is at most as long as under static sharing (but
  an op whose flows cross one channel together); and
  the rates are max-min fair: each route is held by its engine or by a full channel on which
  its tile uses as much as any tile. More bandwidth can make it slower (a faster channel moves
  another channel's split), so it is not tested for that.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktir.targets import KernelTrace, Kind, OpRecord, TargetError, roofline, simulate
from ktir.targets.machine import Machine
from ktir.targets.timeline import maxmin_shares

from .families import all_reduce, stream, tiled_matmul
from .helpers import BASE, bw, q, toy

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOLERANCE = 1e-9


@st.composite
def targets(draw: Any) -> dict[str, Any]:
    """Changes to the toy target: topology, bandwidths, engines, latencies (4 tiles)."""
    topology = draw(st.sampled_from(["ring", "mesh", "crossbar"]))
    link = bw(draw(st.sampled_from([16, 50, 100, 1000])))
    hop = q(draw(st.sampled_from([0, 2])))
    changes: dict[str, Any] = {
        "memory.0.bandwidth": bw(draw(st.sampled_from([20, 64, 100, 300]))),
        "memory.0.latency_cycles": q(draw(st.sampled_from([0, 50]))),
        "memory.0.granularity_bytes": q(draw(st.sampled_from([1, 32, 128]))),
        "dma.engine_bandwidth": bw(draw(st.sampled_from([20, 64, 1000]))),
        "dma.engines_per_tile": q(draw(st.integers(1, 3))),
    }
    if topology == "ring":
        changes["interconnect"] = {"topology": "ring", "bidirectional": draw(st.booleans()), "link_bandwidth": link,
                                   "hop_latency_cycles": hop}
        changes["memory.0.attach_tiles"] = q([draw(st.integers(0, 3))])
    elif topology == "mesh":
        changes["interconnect"] = {"topology": "mesh2d", "shape": q([2, 2]), "wraparound": draw(st.booleans()),
                                   "link_bandwidth": link, "hop_latency_cycles": hop}
        changes["memory.0.attach_tiles"] = q([draw(st.integers(0, 3))])
    else:
        changes["interconnect"] = {"topology": "crossbar", "port_bandwidth": link, "latency_cycles": hop}
        changes["memory.0.attach_tiles"] = None
    return changes


@st.composite
def traces(draw: Any) -> KernelTrace:
    """Random programs on 1-4 tiles: transfers, compute, local accesses, and inter-tile posts and
    receives (a tile only receives from lower-numbered tiles, so there is no cycle)."""
    tiles = draw(st.integers(1, 4))
    records: list[OpRecord] = []
    posts: list[tuple[int, str]] = []
    size = st.integers(1, 5000)
    for t in range(tiles):
        for s in range(draw(st.integers(1, 8))):
            deps = tuple(sorted(draw(st.sets(st.integers(0, s - 1), max_size=2)))) if s else ()
            kind = draw(st.sampled_from(["load", "store", "copy", "matmul", "vector", "exp", "local", "post", "receive"]))
            live = draw(st.integers(0, 256))
            if kind == "load":
                r = OpRecord(t, s, "ktdp.load", Kind.TRANSFER, deps, bytes_read={"global": draw(size)}, result_bytes=live)
            elif kind == "store":
                r = OpRecord(t, s, "ktdp.store", Kind.TRANSFER, deps, bytes_written={"global": draw(size)})
            elif kind == "copy":
                r = OpRecord(t, s, "memref.copy", Kind.TRANSFER, deps, bytes_read={"global": draw(size)},
                             bytes_written={"global": draw(size)})
            elif kind == "matmul":
                r = OpRecord(t, s, "linalg.matmul", Kind.MATRIX, deps, macs=draw(st.integers(1, 200_000)), dtype="f16",
                             result_bytes=live)
            elif kind in ("vector", "exp"):
                r = OpRecord(t, s, "math.exp" if kind == "exp" else "arith.addf", Kind.VECTOR, deps,
                             elements=draw(st.integers(1, 20_000)), dtype=draw(st.sampled_from(["f16", "f32", "i8"])),
                             transcendental=kind == "exp", result_bytes=live)
            elif kind == "local":
                r = OpRecord(t, s, "ktdp.store", Kind.LOCAL, deps, bytes_written={"ct_local": draw(size)})
            elif kind == "post":
                sync = f"s{len(posts)}"
                posts.append((t, sync))
                r = OpRecord(t, s, "ktdp.inter_tile_produce", Kind.POST, deps, sync=sync)
            else:
                earlier = [p for p in posts if p[0] < t]
                if not earlier:
                    r = OpRecord(t, s, "arith.addf", Kind.VECTOR, deps, elements=64, dtype="f16")
                else:
                    src, sync = draw(st.sampled_from(earlier))
                    r = OpRecord(t, s, "ktdp.inter_tile_consume", Kind.RECEIVE, deps, sync=sync,
                                 sources=((src, draw(size)),), result_bytes=live)
            records.append(r)
    return KernelTrace(records, grid=(tiles,), resident_local_bytes={0: draw(st.integers(0, 1000))})


def scaled(trace: KernelTrace, k: int) -> KernelTrace:
    """Every byte count, MAC count and element count times k."""
    out = []
    for r in trace.records:
        d = r.to_dict()
        for key in ("bytes_read", "bytes_written"):
            if key in d:
                d[key] = {space: n * k for space, n in d[key].items()}
        for key in ("macs", "elements"):
            if key in d:
                d[key] *= k
        if "sources" in d:
            d["sources"] = [[src, n * k] for src, n in d["sources"]]
        out.append(OpRecord.from_dict(d))
    return KernelTrace(out, grid=trace.grid, resident_local_bytes=trace.resident_local_bytes)


def faster(changes: dict[str, Any], which: str, factor: float) -> dict[str, Any]:
    out = dict(changes)
    if which == "link":
        ic = dict(out["interconnect"])
        key = "port_bandwidth" if ic["topology"] == "crossbar" else "link_bandwidth"
        ic[key] = bw(ic[key]["value"] * factor)
        out["interconnect"] = ic
    elif which == "local":
        out["memory.1.bandwidth"] = bw(200 * factor)
    else:
        key = {"memory": "memory.0.bandwidth", "dma": "dma.engine_bandwidth"}[which]
        out[key] = bw(out[key]["value"] * factor)
    return out


@SETTINGS
@given(trace=traces(), changes=targets(), sharing=st.sampled_from(["static", "maxmin", "fair"]))
def test_estimate_is_never_below_the_roofline_bound(trace, changes, sharing):
    target = toy(**changes)
    est = simulate(trace, target, sharing).makespan
    bound = roofline(trace, target).bound
    assert est >= bound * (1 - TOLERANCE)


@SETTINGS
@given(trace=traces(), changes=targets(), k=st.integers(2, 4), sharing=st.sampled_from(["static", "maxmin"]))
def test_more_work_never_finishes_earlier(trace, changes, k, sharing):
    target = toy(**changes)
    assert (simulate(scaled(trace, k), target, sharing).makespan
            >= simulate(trace, target, sharing).makespan * (1 - TOLERANCE))


@SETTINGS
@given(trace=traces(), changes=targets(), sharing=st.sampled_from(["static", "maxmin", "fair"]))
def test_no_channel_carries_more_than_its_capacity(trace, changes, sharing):
    timeline = simulate(trace, toy(**changes), sharing)
    for channel, series in timeline.rate_series.items():
        capacity = timeline.capacity[channel]
        assert max(rate for _, rate in series) <= capacity * (1 + 1e-9) + 1e-9, channel


@SETTINGS
@given(trace=traces(), changes=targets())
def test_max_min_data_phases_are_never_longer_than_static_ones(trace, changes):
    """The rates depend on the routes only: each data phase (a transfer's or a receive's, from the
    start of its bytes to its end) lasts the same whatever the timing, and max-min never gives a
    route less than its equal share. Not for an op whose flows cross a channel together (a copy
    from memory to memory): they split the tile's use of it, which may be below its equal share
    when the tile's other route there is held elsewhere."""
    target = toy(**changes)
    machine = Machine(target)
    static, maxmin = simulate(trace, machine, "static"), simulate(trace, machine, "maxmin")
    for s, m in zip(static.ops, maxmin.ops, strict=True):
        assert s.record is m.record
        if s.data_start is None:
            continue
        channels = [c for f in machine.flows(s.record) for c in f.channels]
        if len(channels) > len(set(channels)):
            continue
        assert m.data_start is not None
        assert m.end - m.data_start <= (s.end - s.data_start) * (1 + 1e-9) + 1e-9


@st.composite
def route_sets(draw: Any) -> tuple[dict[int, set[tuple[str, ...]]], dict[str, float], float]:
    """Tiles using routes over a few channels of random capacities, and an engine bandwidth."""
    channels = [f"c{i}" for i in range(draw(st.integers(1, 6)))]
    capacity = {c: float(draw(st.sampled_from([1, 7, 16, 50, 128, 1000]))) for c in channels}
    route = st.lists(st.sampled_from(channels), max_size=4, unique=True).map(tuple)
    routes = {t: set(draw(st.lists(route, min_size=1, max_size=4))) for t in range(draw(st.integers(1, 6)))}
    return routes, capacity, float(draw(st.sampled_from([5, 64, 128, 10_000])))


@settings(max_examples=300, deadline=None)
@given(case=route_sets())
def test_max_min_shares_are_feasible_fair_and_above_equal_shares(case):
    routes, capacity, engine = case
    shares = maxmin_shares(routes, capacity, engine)
    users = {c: {t for t, rs in routes.items() for r in rs if c in r} for c in capacity}
    for c, cap in capacity.items():  # no channel over its capacity
        assert sum(shares.use.get((t, c), 0.0) for t in routes) <= cap * (1 + 1e-9)
    for t, rs in routes.items():
        for r in rs:
            rate = shares.rate[(t, r)]
            assert rate <= engine * (1 + 1e-12)
            assert rate >= min([engine] + [capacity[c] / len(users[c]) for c in r]) * (1 - 1e-9)  # static's share
            # max-min: held by the engine, or by a full channel on which the tile uses as much as any tile
            full = [c for c in r if sum(shares.use.get((u, c), 0.0) for u in routes) >= capacity[c] * (1 - 1e-9)
                    and shares.use[(t, c)] >= max(shares.use.get((u, c), 0.0) for u in routes) * (1 - 1e-9)]
            assert rate >= engine * (1 - 1e-12) or full
            limit = shares.limit[(t, r)]
            assert limit is None or limit in full


def test_max_min_gives_a_ring_flow_the_link_share_memory_readers_cannot_use():
    """Four tiles read memory (attached at tile 0) over a ring of 1000 B/cycle links: each can only
    take 100 / 4 B/cycle of the memory channel, so the link next to the attach point, which static
    sharing splits equally over the readers and a ring flow, leaves the ring flow the rest."""
    machine = Machine(toy())
    memory = ("memory.dram",)
    routes = {t: {memory + tuple(f"link.{x}" for x in machine.memory_route(t, True).links)} for t in range(4)}
    ring = tuple(f"link.{x}" for x in machine.tile_route(0, 1).links)
    routes[1].add(ring)
    shares = maxmin_shares(routes, machine.channel_capacity(), 10_000.0)
    assert shares.rate[(1, ring)] == 1000 - 25  # static: 1000 / 2 (tile 1 reads memory over the same link)
    assert all(shares.rate[(t, r)] == 25 for t in range(4) for r in routes[t] if r != ring)


@SETTINGS
@given(trace=traces(), changes=targets(), which=st.sampled_from(["memory", "link", "dma", "local"]),
       factor=st.sampled_from([1.25, 2.0, 8.0]))
def test_more_bandwidth_never_makes_a_kernel_slower(trace, changes, which, factor):
    slow = simulate(trace, toy(**changes), "static").makespan
    fast = simulate(trace, toy(**faster(changes, which, factor)), "static").makespan
    assert fast <= slow * (1 + TOLERANCE)


@st.composite
def families(draw: Any) -> tuple[Any, list[int | bool], int]:
    """An SPMD kernel family, its parameters, and the index of a size parameter."""
    tiles = draw(st.integers(1, 4))
    which = draw(st.sampled_from(["stream", "matmul", "all_reduce"]))
    if which == "stream":
        args: list[int | bool] = [tiles, draw(st.integers(1, 6)), draw(st.integers(1, 4000)), draw(st.integers(1, 20_000)),
                                  draw(st.booleans())]
        return stream, args, draw(st.sampled_from([1, 2, 3]))
    if which == "matmul":
        args = [tiles, draw(st.integers(1, 5)), draw(st.integers(1, 4000)), draw(st.integers(1, 4000)),
                draw(st.integers(1, 300_000))]
        return tiled_matmul, args, draw(st.sampled_from([1, 2, 3, 4]))
    args = [tiles, draw(st.integers(1, 4000)), draw(st.integers(1, 5000))]
    return all_reduce, args, draw(st.sampled_from([1, 2]))


@SETTINGS
@given(family=families(), changes=targets(), grow=st.integers(1, 1000), sharing=st.sampled_from(["static", "maxmin"]))
def test_kernel_families_are_monotone_in_problem_size(family, changes, grow, sharing):
    make, args, index = family
    target = toy(**changes)
    bigger = list(args)
    bigger[index] = int(bigger[index]) + grow
    assert (simulate(make(*bigger), target, sharing).makespan
            >= simulate(make(*args), target, sharing).makespan * (1 - TOLERANCE))


@SETTINGS
@given(family=families(), changes=targets(), which=st.sampled_from(["memory", "link", "dma"]),
       factor=st.sampled_from([1.5, 4.0]))
def test_kernel_families_never_slow_down_with_more_bandwidth(family, changes, which, factor):
    make, args, _ = family
    trace = make(*args)
    slow = simulate(trace, toy(**changes), "static").makespan
    fast = simulate(trace, toy(**faster(changes, which, factor)), "static").makespan
    assert fast <= slow * (1 + TOLERANCE)


def _number_paths(node: Any, path: str = "") -> list[str]:
    """Dotted paths (toy()'s form) of every number of the toy target."""
    if isinstance(node, dict):
        if "value" in node and isinstance(node["value"], int | float):
            return [path]
        return [p for k, v in node.items() for p in _number_paths(v, f"{path}.{k}" if path else k)]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _number_paths(v, f"{path}.{i}")]
    return []


NUMBER_PATHS = _number_paths(BASE)
EXTREMES = [0, 5e-324, 1e-320, 1e-7, 0.5, 1e15, 1e18, 1e19, 1e300, 10**30]


@SETTINGS
@given(trace=traces(), path=st.sampled_from(NUMBER_PATHS), value=st.sampled_from(EXTREMES),
       sharing=st.sampled_from(["static", "maxmin", "fair"]))
def test_any_figure_is_refused_or_gives_finite_times(trace, path, value, sharing):
    """A description with one figure at an extreme (a rate of 1e-320 once made a cycle count
    infinite: OverflowError) is either refused as a user error or costs every trace finitely."""
    node: Any = BASE
    for k in path.split("."):
        node = node[int(k)] if isinstance(node, list) else node[k]
    try:
        target = toy(**{path: {**node, "value": value}})
    except TargetError:
        return
    est = simulate(trace, target, sharing)
    assert math.isfinite(est.makespan) and est.makespan >= 0
    assert math.isfinite(roofline(trace, target).bound)


def test_max_min_shares_can_drop_when_a_link_gets_faster():
    """Why bandwidth monotonicity is not claimed for max-min static sharing (docs/guides/hardware-model.md,
    found by hypothesis as a makespan of 30.25 cycles becoming 30.30): on a one-way ring, memory of
    20 B/cycle at tile 0, tiles 0 and 1 read memory and tile 2 receives from tile 0. With links of
    16 the link 0->1 fills first (8 each for tiles 1 and 2) and tile 0 takes the memory channel's
    other 12; with links of 20 the memory channel fills first (10 each) and tile 0 gets 10."""
    def tile0_rate(link: float) -> float:
        machine = Machine(toy(**{"interconnect": {"topology": "ring", "bidirectional": False, "link_bandwidth": bw(link),
                                                   "hop_latency_cycles": q(0)},
                                 "memory.0.bandwidth": bw(20), "dma.engine_bandwidth": bw(20)}))
        memory = ("memory.dram",)
        reads = {t: memory + tuple(f"link.{x}" for x in machine.memory_route(t, True).links) for t in (0, 1)}
        ring = tuple(f"link.{x}" for x in machine.tile_route(0, 2).links)
        shares = maxmin_shares({0: {reads[0]}, 1: {reads[1]}, 2: {ring}}, machine.channel_capacity(), machine.dma_bw)
        return shares.rate[(0, reads[0])]

    assert tile0_rate(16) == 12 and tile0_rate(20) == 10
