"""The read-a-trace guide's command runs as written and its numbers are the run's numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ktir.cli import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "read-a-trace.md"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("trace")
    report, timeline, events = out / "report.json", out / "timeline.json", out / "ev.json"
    argv = [
        "run", str(ROOT / "examples" / "softmax.ktir"), "--random-inputs", "0", "--arg", "R=1024",
        "--target", "spyre", "--report-json", str(report), "--trace", str(timeline), "--event-trace", str(events),
    ]
    assert main(argv) == 0
    return {
        "report": json.loads(report.read_text()),
        "timeline": json.loads(timeline.read_text()),
        "events": json.loads(events.read_text()),
    }


def _guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def test_command_in_guide_is_the_one_tested():
    assert "ktir run examples/softmax.ktir --random-inputs 0 --arg R=1024" in _guide()


def test_report_numbers_match_the_guide(outputs):
    report = outputs["report"]
    text = _guide()
    est_us = report["estimate_seconds"] * 1e6
    bound_us = report["roofline_seconds"] * 1e6
    assert f"{est_us:.1f} µs" in text, est_us
    assert f"{bound_us:.1f} µs" in text, bound_us
    assert f"estimate / bound │ {report['ratio_to_roofline']:.2f}" in text
    assert "bound by memory.lpddr5" in text
    assert report["bottleneck"]["resource"] == "memory.lpddr5"


def test_timeline_tracks_named_in_guide_exist(outputs):
    events = outputs["timeline"]["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] in ("thread_name", "process_name")}
    counters = {e["name"] for e in events if e["ph"] == "C"}
    for track in ("dma 0", "dma 1", "port", "matrix", "vector", "memory", "interconnect", "tile 0"):
        assert track in names, track
    assert "lx bytes" in counters
    slice_args = next(e["args"] for e in events if e["ph"] == "X" and e["name"] == "ktdp.load" and "line" in e["args"])
    for key in ("seq", "line", "cycles", "bytes_read"):
        assert key in slice_args


def test_event_trace_per_tile_traffic(outputs):
    tiles = outputs["events"]
    assert len(tiles) == 32
    for events in tiles:
        loads = [e for e in events if e["op"] == "ktdp.load"]
        assert sum(e["bytes_read"].get("global", 0) for e in loads) == 65536
    sample = re.search(r"```json\n(.*?)```", _guide(), re.S)
    assert sample is not None
    stated = json.loads(sample.group(1))
    actual = next(e for e in tiles[0] if e["op"] == "ktdp.load")
    assert stated == actual


def test_uneven_division_claim(tmp_path):
    events = tmp_path / "ev.json"
    argv = ["run", str(ROOT / "examples" / "softmax.ktir"), "--random-inputs", "0", "--arg", "R=128", "--event-trace", str(events)]
    assert main(argv) == 0
    tiles = json.loads(events.read_text())
    assert "only tiles 0-3 get a block" in _guide()
    for t in tiles[:4]:
        assert any(e["op"] == "ktdp.load" for e in t)
    for t in tiles[4:]:
        assert not any(e["op"] in ("ktdp.load", "ktdp.store") for e in t)
        assert not any(e["bytes_read"] or e["bytes_written"] for e in t)
