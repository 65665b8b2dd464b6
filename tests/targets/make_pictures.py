"""Regenerate the pictures of docs/guides/hardware-model.md from real interpreter runs.

    python -m tests.targets.make_pictures

Each picture is the timeline of a kernel from the repository, run by the reference
interpreter and estimated on the Spyre target; test_pictures.py checks they are current.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ktir
import reference_interp as ri
from ktir.targets import estimate, load_target
from ktir.targets.from_interp import from_interp
from ktir.targets.svg import render_svg

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "guides" / "images"
KERNELS = Path(__file__).with_name("kernels")


def _parse(path: Path) -> ktir.Module:
    return ktir.parse(path.read_text(encoding="utf-8"), path.name)


def tiled_matmul_svg() -> str:
    m = _parse(ROOT / "tests" / "corpus" / "kernels" / "tiled_matmul.ktir")
    args = {"a_ptr": np.ones((64, 1024), np.float16), "b_ptr": np.ones((1024, 512), np.float16),
            "c_ptr": np.zeros((64, 512), np.float16)}
    trace = from_interp(m, ri.run(m, "matmul", args, trace=True), "matmul").trace
    est = estimate(trace, load_target("spyre"))
    r = est.report
    title = (f"tiled_matmul.ktir @matmul (grid 2x4) on spyre: {r.estimate_seconds * 1e6:.1f} µs, "
             f"roofline {r.roofline_seconds * 1e6:.1f} µs, bound by {r.binding.resource if r.binding else '-'}")
    return render_svg(est.timeline, title, tiles=[0, 1, 7], channels=2)


def stream_svg(name: str) -> str:
    m = _parse(KERNELS / f"{name}.ktir")
    x = np.linspace(-2, 2, 8192).astype(np.float16)
    trace = from_interp(m, ri.run(m, None, {"X": x, "Y": np.zeros(8192, np.float16)}, trace=True)).trace
    est = estimate(trace, load_target("spyre"))
    r = est.report
    title = f"{name}.ktir on spyre: {r.estimate_cycles:,.0f} cycles ({r.ratio_to_roofline:.2f} x the roofline bound)"
    return render_svg(est.timeline, title, tiles=[0], channels=1)


PICTURES = {
    "tiled_matmul_spyre.svg": tiled_matmul_svg,
    "stream_naive_spyre.svg": lambda: stream_svg("stream_naive"),
    "stream_double_buffered_spyre.svg": lambda: stream_svg("stream_double_buffered"),
}


def main() -> None:
    IMAGES.mkdir(exist_ok=True)
    for name, make in PICTURES.items():
        (IMAGES / name).write_text(make(), encoding="utf-8")
        print(f"wrote {IMAGES / name}")


if __name__ == "__main__":
    main()
