"""Regenerate the pictures and the Perfetto trace of docs/guides/schedule.md.

    python tests/schedulers/make_schedule_pictures.py

A 256 x 1024 softmax written for one tile (`schedulers.naive.softmax`) is re-partitioned
to 4 tiles of 16-row blocks, once streamed and once double-buffered, run by the reference
interpreter and estimated on Spyre; each timeline is drawn as SVG, and the double-buffered
one is also written as a Perfetto trace. A natural-form RMSNorm (`schedulers.single_tile`)
scheduled by `exact` is drawn the same way. test_sched_pictures.py checks they are current.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ktir
import reference_interp as ri
from ktir.targets import estimate, load_target
from ktir.targets.from_interp import from_interp
from ktir.targets.perfetto import trace_events
from ktir.targets.svg import render_svg
from reference_interp.inputs import infer_args
from schedulers import naive
from schedulers.kernels import RowKernel, recognise
from schedulers.rowloop import rewrite_rows

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "guides" / "images"
POINT = {"g": 4, "rb": 16}


def scheduled(db: int) -> ktir.Module:
    module = ktir.parse(naive.softmax(256, 1024, "f16"), "softmax.ktir")
    kernel = recognise(module).kernel
    assert isinstance(kernel, RowKernel)
    return rewrite_rows(module, kernel, {**POINT, "db": db})


def timeline(db: int):  # type: ignore[no-untyped-def]
    m = scheduled(db)
    run = ri.run(m, None, infer_args(m, None, {}, 0, {}), trace=True)
    return estimate(from_interp(m, run).trace, load_target("spyre"))


def svg(db: int) -> str:
    est = timeline(db)
    r = est.report
    how = "double-buffered" if db else "streamed"
    title = (f"softmax 256x1024, grid [4], 16-row blocks, {how}: {r.estimate_cycles:,.0f} cycles "
             f"({r.ratio_to_roofline:.2f} x the roofline bound)")
    return render_svg(est.timeline, title, tiles=[0], channels=1)


def natural_rmsnorm() -> ktir.Module:
    """The natural-form RMSNorm of the guide, scheduled by `exact` (cache off, budget wide enough to
    re-rank every candidate, so the picture does not depend on the machine's load)."""
    import os

    import schedulers
    from ktir.syntax.printer import print_module
    from schedulers import single_tile

    os.environ["KTIR_SCHEDULE_CACHE"] = "off"
    before = ktir.parse(print_module(single_tile.rmsnorm(1024, 1024)), "rmsnorm.ktir")
    return schedulers.schedule(before, load_target("spyre"), "exact", schedulers.ScheduleOptions(time_budget=60)).module


def natural_svg() -> str:
    m = natural_rmsnorm()
    run = ri.run(m, None, infer_args(m, None, {}, 0, {}), trace=True)
    est = estimate(from_interp(m, run).trace, load_target("spyre"))
    r = est.report
    grid = [int(getattr(e, "value", 1)) for e in getattr(m.functions()[0].attributes.get("grid"), "elements", ())]
    title = (f"natural-form RMSNorm 1024x1024 scheduled by exact: grid {grid}, "
             f"{r.estimate_cycles:,.0f} cycles ({r.ratio_to_roofline:.2f} x the roofline bound)")
    return render_svg(est.timeline, title, tiles=[0], channels=1)


def perfetto() -> str:
    import json

    return json.dumps(trace_events(timeline(1).timeline, "softmax"), indent=None)


OUTPUTS = {
    "schedule_softmax_streamed.svg": lambda: svg(0),
    "schedule_softmax_double_buffered.svg": lambda: svg(1),
    "schedule_softmax_double_buffered.perfetto.json": perfetto,
    "schedule_natural_rmsnorm.svg": natural_svg,
}


def main() -> int:
    IMAGES.mkdir(exist_ok=True)
    for name, make in OUTPUTS.items():
        (IMAGES / name).write_text(make(), encoding="utf-8")
        print(f"wrote {IMAGES / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
