"""Perfetto trace files, the cost report (JSON and tables), and the command-line pieces."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import ktir
from ktir.targets import KernelTrace, estimate, load_target, simulate
from ktir.targets.cli import add_cost_arguments, add_targets_parser, cost_outputs, emit_cost_outputs, wants_cost
from ktir.targets.perfetto import lanes, problems, read_tracks, trace_events, write_trace
from ktir.targets.report import CostReport, print_report
from ktir.targets.svg import render_svg

from .families import all_reduce, tiled_matmul
from .helpers import load, toy

ri = pytest.importorskip("reference_interp")

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).with_name("trace_event.schema.json")


@pytest.fixture(scope="module")
def matmul_run():
    m = ktir.parse((ROOT / "tests/corpus/kernels/tiled_matmul.ktir").read_text(), "tiled_matmul.ktir")
    args = {"a_ptr": np.ones((64, 1024), np.float16), "b_ptr": np.ones((1024, 512), np.float16),
            "c_ptr": np.zeros((64, 512), np.float16)}
    return m, ri.run(m, "matmul", args, trace=True)


# ---------------------------------------------------------------------- Perfetto


def validate(obj: dict) -> None:
    assert problems(obj) == []
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(obj, json.loads(SCHEMA.read_text()))


def test_trace_file_validates_and_every_tile_has_its_tracks(tmp_path):
    timeline = simulate(all_reduce(4, 2048, 1024), toy())
    path = tmp_path / "t.json"
    write_trace(timeline, path, "all_reduce")
    obj = json.loads(path.read_text())
    validate(obj)
    tracks = read_tracks(path)
    for t in range(4):
        assert tracks[f"tile {t}"] == lanes(1)
    assert "memory" in tracks and "interconnect" in tracks
    # the ops are on their tile's tracks, in microseconds of the target clock
    xs = [e for e in obj["traceEvents"] if e["ph"] == "X" and e["pid"] == 1]
    assert {e["cat"] for e in xs} >= {"transfer", "post", "receive", "vector", "data"}
    last = max(e["ts"] + e["dur"] for e in obj["traceEvents"] if e["ph"] == "X")
    assert last == pytest.approx(timeline.makespan / 1e9 * 1e6, rel=1e-6)
    counters = {e["name"] for e in obj["traceEvents"] if e["ph"] == "C"}
    assert "sram bytes" in counters and "dram" in counters


def test_complete_events_of_a_track_do_not_overlap():
    obj = trace_events(simulate(tiled_matmul(4, 3, 2000, 3000, 50_000), toy()))
    by_track: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in obj["traceEvents"]:
        if e["ph"] == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end - 1e-6


def test_trace_of_a_real_run_finds_every_tile(tmp_path, matmul_run):
    m, result = matmul_run
    path = tmp_path / "matmul.json"
    assert cost_outputs(m, result, "spyre", "matmul", report=False, trace_path=str(path)) == 0
    obj = json.loads(path.read_text())
    validate(obj)
    tracks = read_tracks(obj)
    assert [name for name in tracks if name.startswith("tile ")] == [f"tile {t}" for t in range(8)]
    assert all(tracks[f"tile {t}"] == lanes(2) for t in range(8))
    assert obj["otherData"]["target"] == "spyre" and obj["otherData"]["kernel"] == "matmul"


def test_problems_are_found():
    assert problems({"events": []}) == ["the top level must be an object with a traceEvents array"]
    bad = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0}, {"ph": "Q", "name": "b", "pid": 1, "tid": 1}]}
    assert problems(bad) == ["traceEvents[0]: a complete event needs dur >= 0", "traceEvents[1]: unknown phase 'Q'"]


def test_svg_picture():
    timeline = simulate(tiled_matmul(4, 3, 2000, 3000, 50_000), toy())
    svg = render_svg(timeline, "matmul on toy", tiles=[0, 3])
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "tile 3 · matrix" in svg and "memory.dram" in svg
    import xml.etree.ElementTree as ET

    ET.fromstring(svg)


# ---------------------------------------------------------------------- report


def test_report_fields():
    trace = tiled_matmul(4, 2, 2000, 3000, 50_000)
    report = estimate(trace, toy()).report
    assert report.ratio_to_roofline >= 1
    assert report.estimate_seconds == pytest.approx(report.estimate_cycles / 1e9)
    dram, sram = report.memory
    assert (dram.level, dram.scope, dram.bytes_read, dram.bytes_written) == ("dram", "global", 4 * 2 * 5000, 4 * 4096)
    assert (sram.scope, sram.bytes_written, sram.bytes_read) == ("ct_local", 4 * 2 * 5000, 4 * 4096)
    assert [s.tile for s in report.scratchpad] == [0, 1, 2, 3] and all(s.fits for s in report.scratchpad)
    assert report.scratchpad[0].peak_bytes >= 2000 + 3000
    assert report.op_counts == {"transfer": 20, "matrix": 8}
    assert report.bottleneck is not None and report.bottleneck == report.critical_path[0]
    assert sum(p.cycles for p in report.critical_path) == pytest.approx(report.estimate_cycles)
    assert {t.category for t in report.roofline_terms} >= {"compute", "off-chip", "dma"}
    again = CostReport.model_validate_json(report.model_dump_json())
    assert again == report


def test_report_table_mentions_the_essentials():
    report = estimate(KernelTrace([load(0, 0, 10_000)]), toy()).report
    out = io.StringIO()
    print_report(report, Console(file=out, width=120))
    text = out.getvalue()
    for needle in ("estimate", "resource bound", "bottleneck", "Memory traffic", "scratchpad peak", "dram"):
        assert needle in text


# ---------------------------------------------------------------------- command line


def targets_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="ktir")
    sub = parser.add_subparsers(dest="command", required=True)
    add_targets_parser(sub)
    args = parser.parse_args(list(argv))
    return int(args.run(args))


def test_targets_list(capsys):
    assert targets_cli("targets", "list") == 0
    out = capsys.readouterr().out
    assert "spyre" in out and "wormhole-n150" in out
    assert targets_cli("targets", "list", "--json") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    spyre = next(r for r in rows if r["name"] == "spyre")
    assert spyre["tiles"] == 32 and spyre["interconnect"] == "ring"


def test_targets_show(capsys, tmp_path):
    assert targets_cli("targets", "show", "spyre") == 0
    out = capsys.readouterr().out
    for needle in ("memory.lx.capacity_bytes", "assumption: clock", "torch-spyre-arch", "Derived peaks", "314.6"):
        assert needle in out
    assert targets_cli("targets", "show", "spyre", "--json") == 0
    assert load_target("spyre").model_dump(exclude_none=True) == json.loads(capsys.readouterr().out)
    assert targets_cli("targets", "show", "no-such-target") == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("schema_version = 1\nname = 'x'\n")
    assert targets_cli("targets", "show", str(bad)) == 1
    assert "invalid target description" in capsys.readouterr().err


def test_targets_schema(capsys, tmp_path):
    from ktir.targets.schema import json_schema_text

    assert targets_cli("targets", "schema") == 0
    assert capsys.readouterr().out == json_schema_text()
    path = tmp_path / "s.json"
    assert targets_cli("targets", "schema", "-o", str(path)) == 0
    assert path.read_text() == json_schema_text()


def run_parser() -> argparse.ArgumentParser:
    """A stand-in for `ktir run`: the options the cost model reads."""
    p = argparse.ArgumentParser(prog="ktir run")
    p.add_argument("file")
    p.add_argument("--func")
    p.add_argument("--target")
    add_cost_arguments(p)
    return p


def test_run_options_write_report_and_trace(tmp_path, capsys, matmul_run):
    m, result = matmul_run
    args = run_parser().parse_args(["k.ktir", "--func", "matmul", "--target", "spyre", "--report",
                                    "--report-json", str(tmp_path / "r.json"), "--trace", str(tmp_path / "t.json")])
    assert wants_cost(args)
    assert emit_cost_outputs(args, m, result) == 0
    out = capsys.readouterr().out
    assert "matmul on spyre" in out and "resource bound" in out and "roofline" not in out
    report = CostReport.model_validate_json((tmp_path / "r.json").read_text())
    assert report.target == "spyre" and report.grid == [2, 4]
    assert report.estimate_cycles >= report.roofline_cycles
    assert read_tracks(tmp_path / "t.json")["tile 7"] == lanes(2)


def test_run_options_default_target_and_errors(tmp_path, capsys, matmul_run):
    m, result = matmul_run
    args = run_parser().parse_args(["k.ktir", "--func", "matmul", "--report-json", str(tmp_path / "r.json")])
    assert emit_cost_outputs(args, m, result) == 0
    assert CostReport.model_validate_json((tmp_path / "r.json").read_text()).target == "spyre"
    assert not wants_cost(run_parser().parse_args(["k.ktir"]))
    assert emit_cost_outputs(run_parser().parse_args(["k.ktir"]), m, result) == 0
    assert cost_outputs(m, result, "nope", "matmul") == 2
    assert "unknown target 'nope'" in capsys.readouterr().err
    tiny = toy()  # 4 tiles: the kernel's 8-tile grid does not fit
    path = tmp_path / "toy.toml"
    path.write_text(_toml(tiny.model_dump(exclude_none=True)))
    assert cost_outputs(m, result, str(path), "matmul") == 1
    assert "has 8 tiles" in capsys.readouterr().err


def _toml(data: dict, prefix: str = "") -> str:
    """A minimal TOML writer for the test (inline tables)."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        raise TypeError(v)

    return "".join(f"{json.dumps(k)} = {value(v)}\n" for k, v in data.items())
