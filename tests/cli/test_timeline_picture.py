"""`ktir run --timeline OUT.svg`: a picture of the estimate's timeline, the one the run guide shows."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ktir.cli import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE_PICTURE = ROOT / "docs" / "guides" / "images" / "run_softmax_timeline.svg"
# the command the run guide shows (docs/guides/run.md), with the output path replaced
COMMAND = ["run", str(ROOT / "examples" / "softmax.ktir"), "--random-inputs", "--arg", "R=64", "--target", "spyre"]


def test_timeline_is_a_picture_of_the_estimate(tmp_path: Path) -> None:
    out, report = tmp_path / "t.svg", tmp_path / "r.json"
    assert main([*COMMAND, "--timeline", str(out), "--report-json", str(report)]) == 0
    svg = ET.parse(out).getroot()
    assert svg.tag.endswith("svg")
    texts = ["".join(t.itertext()) for t in svg.iter() if t.tag.endswith("text")]
    estimate = json.loads(report.read_text())
    title = texts[0]
    assert title.startswith("softmax.ktir on spyre: ")
    assert f"{estimate['estimate_seconds'] * 1e6:.3g} µs" in title
    assert f"{estimate['ratio_to_roofline']:.2f} x the roofline bound" in title
    assert estimate["binding"]["resource"] in title
    assert any(t.startswith("tile 0") for t in texts) and any(t.startswith("tile 1") for t in texts)


def test_the_guides_picture_is_what_the_command_draws(tmp_path: Path) -> None:
    out = tmp_path / "t.svg"
    assert main([*COMMAND, "--timeline", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == GUIDE_PICTURE.read_text(encoding="utf-8"), (
        "docs/guides/images/run_softmax_timeline.svg is stale: rerun the command in docs/guides/run.md")
    assert "--timeline softmax.svg" in (ROOT / "docs" / "guides" / "run.md").read_text(encoding="utf-8")


def test_an_unwritable_timeline_is_an_io_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "no-such-dir" / "t.svg"
    assert main([*COMMAND, "--timeline", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "Traceback" not in err and not out.exists()
