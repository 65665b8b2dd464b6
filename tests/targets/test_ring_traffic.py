"""Reads of another tile's scratchpad are charged on the interconnect, from the interpreter's trace."""

from __future__ import annotations

import pytest

import ktir
from ktir.targets import Kind, load_target
from ktir.targets.from_interp import from_interp
from ktir.targets.timeline import simulate

ri = pytest.importorskip("reference_interp")
schedulers = pytest.importorskip("schedulers")
from reference_interp.inputs import infer_args  # noqa: E402
from schedulers import naive  # noqa: E402
from schedulers.emit_matmul import emit_matmul  # noqa: E402
from schedulers.kernels import recognise  # noqa: E402
from schedulers.spaces import SHARED  # noqa: E402


@pytest.fixture(scope="module")
def shared_run():
    """A matmul whose B panels are spread over 4 tiles' scratchpads and read through a distributed view."""
    before = ktir.parse(naive.matmul(64, 256, 256, "f16"), "mm.ktir")
    rec = recognise(before)
    after = emit_matmul(rec.kernel, rec.fn, {"gm": 4, "gn": 1, "bm": 16, "bn": 64, "bk": 64, "order": SHARED,
                                             "db": 0, "pp": 0})
    return after, ri.run(after, None, infer_args(after, None, {}, 0, {}), trace=True)


def test_events_name_the_scratchpads_they_reach(shared_run) -> None:
    _, run = shared_run
    for tile, events in enumerate(run.trace):
        remote = [ev for ev in events if ev.remote_read]
        assert remote, f"tile {tile} reads no other scratchpad"
        for ev in remote:
            assert tile not in ev.remote_read and set(ev.remote_read) <= {0, 1, 2, 3}
            assert sum(ev.remote_read.values()) <= ev.bytes_read["ct_local"]


def test_remote_reads_are_transfers_over_the_links(shared_run) -> None:
    module, run = shared_run
    conv = from_interp(module, run)
    remote = [r for r in conv.trace.records if r.sources and r.kind is Kind.TRANSFER]
    assert remote and all(src != r.tile for r in remote for src, _ in r.sources)
    moved = sum(n for r in remote for _, n in r.sources)
    tl = simulate(conv.trace, load_target("spyre"))
    on_links = sum(v for k, v in tl.channel_bytes.items() if k.startswith("link."))
    # the same records with the remote reads made local: the ring is what the difference charges
    from dataclasses import replace

    from ktir.targets.records import KernelTrace

    local = KernelTrace([replace(r, kind=Kind.LOCAL if r.sources and not r.bytes_read.get("global") else r.kind,
                                 sources=()) if r.kind is Kind.TRANSFER else r for r in conv.trace.records],
                        grid=conv.trace.grid, name="local")
    free = simulate(local, load_target("spyre"))
    free_links = sum(v for k, v in free.channel_bytes.items() if k.startswith("link."))
    assert free_links + moved <= on_links  # each remote byte crosses at least one link
    assert tl.makespan >= free.makespan
