"""`ktir schedule`'s surface: sizes refused, one kind of `-o` output, the outcome stated, the HTML report.

- `--size` must name an index argument and be a positive integer (exit 2 otherwise).
- `-o` always writes the whole module: the scheduled function rewritten (or unchanged when
  declined), every other function as it was; the outcome of every function is stated on
  stderr, with `-q` too.
- `--report-html` draws the timeline before and after scheduling with `ktir.targets.svg`.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from conftest_paths import EXAMPLES, ROOT, ktir_schedule

import ktir
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from schedulers.cli import whole_module

sys.path.insert(0, str(ROOT / "benchmarks"))
import kernelgen  # noqa: E402


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = ktir_schedule(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("size,needle", [
    ("R=-5", "positive integer, not -5"),
    ("R=0", "positive integer, not 0"),
    ("R=1.5", "NAME=INT"),
    ("R=abc", "NAME=INT"),
    ("=8", "NAME=INT"),
    ("R", "NAME=INT"),
    ("Q=8", "no index argument %Q (index arguments: R, x_ptr, y_ptr)"),
])
def test_a_bad_size_is_refused(size: str, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", size], capsys)
    assert code == 2 and needle in err and "Traceback" not in err and not out, err


def test_two_values_of_one_size_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=64", "--size", "R=128"],
                       capsys)
    assert code == 2 and "given twice" in err


def test_an_unknown_function_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=64", "--func", "nope"], capsys)
    assert code == 2 and "no function @nope (functions: @softmax)" in err


def _functions(text: str) -> dict[str, str]:
    """Function name -> its printed text."""
    module = ktir.parse(text, "m.ktir")
    out = {}
    for fn in module.functions():
        alone = module.model_copy(update={"operations": [fn]})
        out[str(fn.attributes["sym_name"].value)] = print_module(alone).split("func.func", 1)[1]  # type: ignore[attr-defined]
    return out


EMPTY = "func.func @empty(%p: index) attributes {grid = [1]} {\n  func.return\n}\n"


@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("func", ["elementwise", "empty"])
def test_output_is_always_the_whole_module(func: str, quiet: bool, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Applied (a random elementwise kernel) or declined (nothing to schedule): the same kind of output."""
    kernel = kernelgen.generate("elementwise", random.Random(4), 4)
    src = tmp_path / "two.ktir"
    src.write_text(kernel.text() + "\n" + EMPTY)
    out = tmp_path / "out.ktir"
    code, _, err = run([str(src), "--target", "spyre", "--func", func, "-o", str(out), *(["-q"] if quiet else [])],
                       capsys)
    assert code == 0, err
    written = out.read_text()
    _, diagnostics = validate_text(written, "out.ktir")
    assert not [d for d in diagnostics if d.severity == "error"]
    before, after = _functions(src.read_text()), _functions(written)
    assert set(after) == {"elementwise", "empty"}
    other = "empty" if func == "elementwise" else "elementwise"
    assert after[other] == before[other]  # the function not scheduled is unchanged
    outcome = [line for line in err.splitlines() if line.startswith("ktir schedule: @")]
    assert len(outcome) == 2, err
    assert f"ktir schedule: @{other}: unchanged (not scheduled; --func {other} schedules it)" in outcome
    mine = next(line for line in outcome if line.startswith(f"ktir schedule: @{func}:"))
    if func == "empty":
        assert "declined by exact, written unchanged:" in mine and after[func] == before[func]
    else:
        assert ("applied by exact" in mine) or ("declined by exact" in mine and after[func] == before[func])


def test_a_scheduled_alias_that_clashes_is_renamed() -> None:
    kernel = kernelgen.generate("elementwise", random.Random(5), 5).text()
    original = ktir.parse("#box = 1\n" + kernel + "\n" + EMPTY, "o.ktir")
    scheduled = ktir.parse("#box = 2\n" + EMPTY.replace("grid = [1]", "grid = [1], tag = #box"), "s.ktir")
    text = print_module(whole_module(original, scheduled, "empty"))
    assert "#box = 1" in text and "#box_sched = 2" in text and "tag = #box_sched" in text, text
    assert set(_functions(text)) == {"elementwise", "empty"}


def test_html_report_draws_before_and_after(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "report.html"
    code, _, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=256", "-q",
                        "--report-html", str(page), "-o", str(tmp_path / "s.ktir")], capsys)
    assert code == 0, err
    html = page.read_text()
    assert html.count("<svg") == 2 and "before: as written" in html and "after: as scheduled" in html
    assert "timeline / roofline" in html and "applied" in html


def test_the_table_gives_the_timeline_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=256"], capsys)
    assert code == 0 and "(timeline / roofline)" in err and "(cost model / roofline)" in err, err
