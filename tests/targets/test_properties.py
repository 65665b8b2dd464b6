"""Properties of the cost model over generated traces and targets.

- The timeline estimate is never below the roofline bound (both sharing modes).
- With static sharing (the default), the estimate is monotone: more work never finishes
  earlier, more bandwidth never later. (Fair sharing is exempt: like a real network it can
  slow down when one flow gets faster and takes link share from another; see timeline.py.)
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktir.targets import KernelTrace, Kind, OpRecord, TargetError, roofline, simulate

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
@given(trace=traces(), changes=targets(), sharing=st.sampled_from(["static", "fair"]))
def test_estimate_is_never_below_the_roofline_bound(trace, changes, sharing):
    target = toy(**changes)
    est = simulate(trace, target, sharing).makespan
    bound = roofline(trace, target).bound
    assert est >= bound * (1 - TOLERANCE)


@SETTINGS
@given(trace=traces(), changes=targets(), k=st.integers(2, 4))
def test_more_work_never_finishes_earlier(trace, changes, k):
    target = toy(**changes)
    assert simulate(scaled(trace, k), target).makespan >= simulate(trace, target).makespan * (1 - TOLERANCE)


@SETTINGS
@given(trace=traces(), changes=targets(), which=st.sampled_from(["memory", "link", "dma", "local"]),
       factor=st.sampled_from([1.25, 2.0, 8.0]))
def test_more_bandwidth_never_makes_a_kernel_slower(trace, changes, which, factor):
    slow = simulate(trace, toy(**changes)).makespan
    fast = simulate(trace, toy(**faster(changes, which, factor))).makespan
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
@given(family=families(), changes=targets(), grow=st.integers(1, 1000))
def test_kernel_families_are_monotone_in_problem_size(family, changes, grow):
    make, args, index = family
    target = toy(**changes)
    bigger = list(args)
    bigger[index] = int(bigger[index]) + grow
    assert simulate(make(*bigger), target).makespan >= simulate(make(*args), target).makespan * (1 - TOLERANCE)


@SETTINGS
@given(family=families(), changes=targets(), which=st.sampled_from(["memory", "link", "dma"]),
       factor=st.sampled_from([1.5, 4.0]))
def test_kernel_families_never_slow_down_with_more_bandwidth(family, changes, which, factor):
    make, args, _ = family
    trace = make(*args)
    slow = simulate(trace, toy(**changes)).makespan
    fast = simulate(trace, toy(**faster(changes, which, factor))).makespan
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
       sharing=st.sampled_from(["static", "fair"]))
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
