"""The schedule guide's pictures and Perfetto trace are those the current code makes, and the
double-buffered schedule is the faster one."""

from __future__ import annotations

import json

import pytest
from make_schedule_pictures import IMAGES, OUTPUTS, timeline


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_picture_is_current(name: str) -> None:
    path = IMAGES / name
    assert path.exists(), f"run python tests/schedulers/make_schedule_pictures.py ({name} is missing)"
    assert path.read_text(encoding="utf-8") == OUTPUTS[name](), (
        f"{name} is stale: run python tests/schedulers/make_schedule_pictures.py")


def test_double_buffering_overlaps_loads_with_compute() -> None:
    streamed, buffered = timeline(0).report, timeline(1).report
    assert buffered.estimate_cycles < 0.75 * streamed.estimate_cycles
    events = json.loads((IMAGES / "schedule_softmax_double_buffered.perfetto.json").read_text())
    assert any(e.get("ph") == "X" for e in (events["traceEvents"] if isinstance(events, dict) else events))
