"""The `dump_dir` option: per compiled graph, what a person needs to look at or replay it.

DIR/graphN[-K]/ holds graphN.ktir, graphN.manifest.json and graphN.weights.npz (as the
lowering saved them: `ktir run-program graphN.manifest.json` replays it), one
NAME.scheduled.ktir per kernel the scheduler rewrote, report.json and report.txt, and, when
the graph was estimated, traces/NAME.json (Perfetto) and timeline.svg (its slowest kernel).
Every file is written atomically.
"""

from __future__ import annotations

from pathlib import Path

from ktir.fileio import write_atomic
from ktir.lower.torch.program import Program
from ktir.syntax.printer import print_module
from ktir.torch_backend.report import GraphReport


def variant_dir(root: str | Path, graph: str) -> Path:
    """A fresh folder for this graph (graphN, then graphN-1, ... for later signatures)."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    folder = base / graph
    n = 0
    while folder.exists():
        n += 1
        folder = base / f"{graph}-{n}"
    folder.mkdir()
    return folder


def dump_variant(program: Program, report: GraphReport, root: str | Path) -> Path:
    from ktir.targets.perfetto import write_trace
    from ktir.targets.svg import render_svg

    folder = variant_dir(root, report.graph)
    program.save(folder / f"{report.graph}.ktir")
    for name, module in program.overrides.items():
        write_atomic(folder / f"{name}.scheduled.ktir", print_module(module))
    write_atomic(folder / "report.json", report.model_dump_json(indent=1) + "\n")
    write_atomic(folder / "report.txt", report.to_text())
    estimated = [k for k in report.kernels if k._estimate is not None]
    if estimated:
        traces = folder / "traces"
        traces.mkdir()
        for k in estimated:
            write_trace(k._estimate.timeline, traces / f"{k.name}.json", kernel=k.name)
        slowest = max(estimated, key=lambda k: k.estimate_seconds or 0.0)
        title = f"{report.graph} · {slowest.name} ({slowest.kind}) on {report.target}"
        write_atomic(folder / "timeline.svg", render_svg(slowest._estimate.timeline, title))
    return folder
