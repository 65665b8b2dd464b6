"""docs/guides/schedule.md's 28-kernel and natural-form tables are what
benchmarks/bench_schedule.py --write-table writes: the renderer on made-up results gives the
table the guide's layout has, the guide's text re-rendered from the numbers it holds comes out
the same (a hand edit, or a change of format without a new run, fails), and its rows are the
benchmark's kernels. The numbers themselves are the run's and are not checked (no benchmark
runs here)."""

from __future__ import annotations

import importlib
import math
import sys

import pytest
from conftest_paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
schedule_table = importlib.import_module("schedule_table")

CLOCK = 1e9  # cycles per second: 1,000 cycles are 1 µs


def _m(estimate: float, bound: float, seconds: float, timeline: float | None = None) -> dict[str, float]:
    out = {"estimate": estimate, "bound": bound, "seconds": seconds}
    if timeline is not None:
        out["timeline"] = timeline
    return out


RESULTS = {
    "a/decode/matmul": {"baseline": _m(2000, 1000, 0.5), "exact": _m(1100, 1000, 0.25, timeline=1200),
                        "search": _m(1100, 1000, 1.25)},
    "b/prefill/rope": {"baseline": _m(4_000_000, 2_000_000, 0.01), "exact": _m(2_000_000, 2_000_000, 0.02),
                       "search": _m(2_000_000, 2_000_000, 0.03)},
}


def test_the_renderer_writes_the_guide_layout_from_the_results() -> None:
    text = schedule_table.render_suite(schedule_table.suite_from_results(RESULTS, CLOCK))
    g = math.sqrt(2.0 * 2.0)  # baseline: ratios 2 and 2
    assert text.splitlines() == [
        schedule_table.begin("suite28"), "",
        "| kernel | bound (µs) | baseline | exact (model) | exact (timeline) | search | slowest scheduling (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        "| a/decode/matmul | 1.0 | 2.000 | 1.100 | 1.200 | 1.100 | 1.25 |",  # the slowest scheduler's time
        "| b/prefill/rope | 2,000.0 | 2.000 | 1.000 | - | 1.000 | 0.03 |",  # no timeline: a dash
        # the timeline's mean is over the kernels that have one, and says how many
        f"| **geometric mean** | | **{g:.3f}** | **{math.sqrt(1.1):.3f}** | **1.200** (1) | **{math.sqrt(1.1):.3f}** | |",
        "",
        "Geometric means: `exact` 1.200x the roofline bound on the timeline over the 1 kernels simulated (target <= "
        f"1.25: met), {math.sqrt(1.1):.3f}x in the model over all 2; `baseline` {g:.3f}x, `search` {math.sqrt(1.1):.3f}x "
        "in the model. Slowest scheduling: 1.25 s (a/decode/matmul; target < 2 s: met).",
        "", schedule_table.end("suite28")]


def test_the_natural_renderer_writes_dashes_for_a_declined_kernel() -> None:
    rows = {"matmul": {"class": "matmul", "applied": True, "grid": [1, 32], "bound": 100.0, "estimate": 207.0,
                       "timeline": 210.0, "check": True, "seconds": 0.5, "cached_seconds": 0.0123},
            "scatter": {"class": "natural", "applied": False, "grid": [], "bound": None, "estimate": None,
                        "seconds": 0.1, "cached_seconds": 0.01, "reason": "a scatter"}}
    text = schedule_table.render_natural(schedule_table.natural_from_results(rows))
    assert text.splitlines()[4:6] == ["| matmul | matmul | [1, 32] | 2.070 | 2.100 | ok | 0.50 | 0.012 |",
                                      "| scatter | natural | [] | - | - | - | 0.10 | 0.010 |"]


def test_rendered_tables_parse_back_to_the_same_text() -> None:
    suite = schedule_table.suite_from_results(RESULTS, CLOCK)
    doc = f"before\n\n{schedule_table.begin('suite28')}\nold\n{schedule_table.end('suite28')}\n\nbetween\n\n" \
          f"{schedule_table.render_natural([])}\n\nafter\n"
    once = schedule_table.replace_in(doc, suite, [])
    assert once.startswith("before\n\n") and once.endswith("\n\nafter\n") and "old" not in once
    again = schedule_table.replace_in(once, schedule_table.parse_suite(once), schedule_table.parse_natural(once))
    assert again == once


def test_the_guide_holds_tables_rendered_by_the_current_code() -> None:
    text = schedule_table.GUIDE.read_text()
    suite, natural = schedule_table.parse_suite(text), schedule_table.parse_natural(text)
    assert schedule_table.replace_in(text, suite, natural) == text


def test_the_guide_tables_hold_the_benchmark_kernels_and_consistent_means() -> None:
    bench = importlib.import_module("bench_schedule")
    text = schedule_table.GUIDE.read_text()
    suite = schedule_table.parse_suite(text)
    assert [r.kernel for r in suite.rows] == [name for name, _ in bench.suite()]
    assert [r.kernel for r in schedule_table.parse_natural(text)] == list(bench.natural_suite())
    means = suite.means
    assert means is not None
    timed = [r.timeline for r in suite.rows if r.timeline is not None]
    assert means.timed == len(timed)
    # the means are of the unrounded ratios, the rows are rounded to 3 decimals
    for stated, ratios in ((means.baseline, [r.baseline for r in suite.rows]), (means.exact, [r.exact for r in suite.rows]),
                           (means.timeline, timed), (means.search, [r.search for r in suite.rows])):
        assert schedule_table.geomean(ratios) == pytest.approx(stated, rel=1e-3)


def _edits() -> list[tuple[str, str]]:
    """Hand edits of the guide's current tables: a row's bound without its thousands comma, a
    ratio with a fourth decimal, the mean row without its count, an extra cell, a renamed
    column, a summary figure changed, a summary sentence dropped."""
    text = schedule_table.GUIDE.read_text()
    suite, natural = schedule_table.parse_suite(text), schedule_table.parse_natural(text)
    big = next(r for r in suite.rows if r.bound_us >= 1000)
    means = suite.means
    assert means is not None
    tl = f"**{means.timeline:.3f}** ({means.timed})"
    summary = schedule_table.suite_summary(suite)
    return [(f"| {big.bound_us:,.1f} |", f"| {big.bound_us:.1f} |"),
            (f"| {natural[0].timeline:.3f} |", f"| {natural[0].timeline:.4f} |"),
            (tl, tl.split(" ")[0]), (f"| {natural[0].kernel_class} |", f"| {natural[0].kernel_class} | x |"),
            ("| slowest scheduling (s) |", "| slowest (s) |"),
            (summary, summary.replace(f"{means.exact:.3f}x in the model", f"{means.exact + 0.01:.3f}x in the model")),
            (schedule_table.natural_summary(natural), "")]


@pytest.mark.parametrize("edit", _edits())
def test_a_hand_edit_is_noticed(edit: tuple[str, str]) -> None:
    text = schedule_table.GUIDE.read_text()
    assert edit[0] in text
    edited = text.replace(edit[0], edit[1], 1)
    assert edited != text
    try:
        again = schedule_table.replace_in(edited, schedule_table.parse_suite(edited), schedule_table.parse_natural(edited))
    except ValueError:
        return
    assert again != edited


def test_the_summaries_say_not_met_when_a_target_is_missed() -> None:
    suite = schedule_table.suite_from_results(RESULTS, CLOCK)
    assert suite.means is not None
    suite.means.timeline = 1.251
    assert "(target <= 1.25: **NOT met**)" in schedule_table.suite_summary(suite)
    suite.means.timeline = 1.25
    assert "(target <= 1.25: met)" in schedule_table.suite_summary(suite)
    rows = schedule_table.natural_from_results({
        "a": {"class": "row", "applied": True, "grid": [4], "bound": 100.0, "estimate": 150.0, "timeline": 140.0,
              "check": True, "seconds": 2.5, "cached_seconds": 0.01},
        "b": {"class": "natural", "applied": False, "grid": [1], "bound": None, "estimate": None,
              "seconds": 0.1, "cached_seconds": 0.02}})
    assert schedule_table.natural_summary(rows) == (
        "Geometric means of the table's ratios: 1.400 on the timeline over 1 kernels (target <= 1.3: **NOT met**), "
        "1.500 in the model over 1. Divided over more than one tile: 1 of 2; checks passed: 1 of 1 run. Slowest "
        "scheduling 2.50 s (a), slowest cached run 0.020 s.")


@pytest.mark.parametrize("option", [["--only", "decode"], ["--natural"], ["--random", "3"], ["--real"],
                                    ["--proof", "2"], ["--budget", "0.5"]])
def test_write_table_needs_the_full_default_run(option: list[str], monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bench = importlib.import_module("bench_schedule")
    monkeypatch.setattr(sys, "argv", ["bench_schedule.py", "--write-table", *option])
    with pytest.raises(SystemExit) as e:
        bench.main()  # refused by the argument check, before any kernel is scheduled
    assert e.value.code == 2 and "--write-table needs the full default run" in capsys.readouterr().err
