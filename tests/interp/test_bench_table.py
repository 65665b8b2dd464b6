"""docs/guides/run.md's performance tables are what benchmarks/bench_interp.py --write-table
writes: the text is re-rendered from the numbers it holds by the current code and must come
out the same (so a hand edit, or a change of format without a new run, fails), and the rows
are the benchmark's current cases. The numbers themselves are the machine's and are not
checked."""

from __future__ import annotations

import importlib
import sys

import pytest

from .helpers import EXAMPLES, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
interp_table = importlib.import_module("interp_table")


def test_the_guide_holds_tables_rendered_by_the_current_code() -> None:
    text = interp_table.GUIDE.read_text()
    tables = interp_table.parse(text)
    start = text.index(interp_table.BEGIN)
    end = text.index(interp_table.END) + len(interp_table.END)
    assert text[start:end] == interp_table.render(tables)


def test_the_tables_hold_every_case_of_the_benchmark() -> None:
    bench = importlib.import_module("bench_interp")
    tables = interp_table.parse(interp_table.GUIDE.read_text())
    keys = [row[0].split("`")[1] for row in tables.kernels]
    assert keys == list(bench.CASES)
    assert [rows for rows, _, _ in tables.races] == bench.RACE_ROWS
    assert tables.conditions.startswith("Measured ") and "load average" in tables.conditions


def test_every_example_has_a_benchmark_case() -> None:
    bench = importlib.import_module("bench_interp")
    assert set(bench.EXAMPLE_OF) <= set(bench.CASES)
    assert {p.name for p in EXAMPLES.glob("*.ktir")} == set(bench.EXAMPLE_OF.values())


@pytest.mark.parametrize("edit", [("| 1,024 |", "| 1024 |"), ("interpreter / numpy |", "ratio |")])
def test_a_hand_edit_is_noticed(edit: tuple[str, str]) -> None:
    text = interp_table.GUIDE.read_text()
    if edit[0] not in text:
        pytest.skip("the guide's tables have no such text yet")
    edited = text.replace(edit[0], edit[1], 1)
    start, end = edited.index(interp_table.BEGIN), edited.index(interp_table.END) + len(interp_table.END)
    try:
        again = interp_table.render(interp_table.parse(edited))
    except (ValueError, IndexError):
        return
    assert edited[start:end] != again
