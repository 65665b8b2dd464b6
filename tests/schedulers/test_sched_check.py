"""A failed check cannot go unnoticed: `ktir schedule --check` exits 1 and writes nothing,
`ScheduleOptions(check=True)` raises `CheckFailed`, and a `CheckResult` is falsy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest_paths import ktir_schedule

import ktir
import schedulers
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from schedulers import naive, registry
from schedulers.check import CheckFailed, check_equivalent
from schedulers.report import ScheduleReport as ScheduleReportType


class WrongScheduler:
    """Returns softmax with a product where the input divides: valid KTIR, wrong results."""

    name = "wrong"

    def schedule(self, module: Module, target: Target, options: schedulers.ScheduleOptions) -> schedulers.ScheduleResult:
        text = print_module(module).replace("arith.divf %v, %s", "arith.mulf %v, %s")
        assert text != print_module(module)
        report = schedulers.ScheduleReport(scheduler=self.name, target=target.name, kernel="softmax",
                                           kernel_class="rowwise", applied=True)
        return schedulers.ScheduleResult(ktir.parse(text, "wrong.ktir"), report)


@pytest.fixture
def wrong(monkeypatch: pytest.MonkeyPatch) -> str:
    found = registry.discover()
    monkeypatch.setattr(registry, "discover", lambda: {**found, "wrong": WrongScheduler()})
    return "wrong"


@pytest.fixture
def softmax_file(tmp_path: Path) -> Path:
    src = tmp_path / "softmax.ktir"
    src.write_text(naive.softmax(16, 64, "f16"))
    return src


def test_failed_check_exits_1_and_leaves_earlier_outputs(wrong: str, softmax_file: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out, rep = tmp_path / "out.ktir", tmp_path / "r.json"
    out.write_text("earlier module\n")
    rep.write_text("earlier report\n")
    code = ktir_schedule([str(softmax_file), "--target", "spyre", "--scheduler", wrong, "--check", "-o", str(out),
                          "--report-json", str(rep)])
    stdout, err = capsys.readouterr()
    assert code == 1, err
    assert "check: FAILED" in err and "not written" in err and "Traceback" not in err
    assert out.read_text() == "earlier module\n" and rep.read_text() == "earlier report\n"
    assert "func.func" not in stdout


def test_failed_check_prints_no_module_on_stdout(wrong: str, softmax_file: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = ktir_schedule([str(softmax_file), "--target", "spyre", "--scheduler", wrong, "--check", "-q"])
    stdout, err = capsys.readouterr()
    assert code == 1 and "check: FAILED" in err and stdout == ""


def test_failed_check_through_the_ktir_command(wrong: str, softmax_file: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from ktir.cli import main

    out = tmp_path / "out.ktir"
    assert main(["schedule", str(softmax_file), "--target", "spyre", "--scheduler", wrong, "--check", "-q",
                 "-o", str(out)]) == 1
    assert not out.exists()


def test_without_check_the_same_run_writes(wrong: str, softmax_file: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.ktir"
    assert ktir_schedule([str(softmax_file), "--target", "spyre", "--scheduler", wrong, "-q", "-o", str(out)]) == 0
    assert "arith.mulf %v, %s" in out.read_text()


def test_api_check_option_raises(wrong: str, softmax_file: Path, spyre: Target) -> None:
    module = ktir.parse(softmax_file.read_text(), "softmax.ktir")
    with pytest.raises(CheckFailed) as info:
        schedulers.schedule(module, spyre, wrong, schedulers.ScheduleOptions(check=True))
    assert not info.value.check and "differ" in str(info.value) and isinstance(info.value, schedulers.ScheduleError)
    ok = schedulers.schedule(module, spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert ok.check is not None and ok.check.ok and any("outputs match" in n for n in ok.report.notes)


def test_check_result_is_falsy_on_mismatch(wrong: str, softmax_file: Path, spyre: Target) -> None:
    module = ktir.parse(softmax_file.read_text(), "softmax.ktir")
    bad = schedulers.schedule(module, spyre, wrong).module
    verdict = check_equivalent(module, bad)
    assert not verdict and not verdict.ok
    assert "elements differ" in verdict.message and "np." not in verdict.message  # plain numbers, not numpy reprs
    assert check_equivalent(module, module)


def test_a_bad_report_path_leaves_the_module_output_intact(softmax_file: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.ktir"
    out.write_text("earlier module\n")
    code = ktir_schedule([str(softmax_file), "--target", "spyre", "-q", "-o", str(out), "--report-json",
                          str(tmp_path / "missing" / "r.json")])
    _, err = capsys.readouterr()
    assert code == 2 and "nothing written" in err and "Traceback" not in err
    assert out.read_text() == "earlier module\n"


def _scaled_copy(shape: tuple[int, ...], dtype: str, factor: float | int) -> Module:
    """Y = X * factor on one tile (a float or integer kernel), built with ktir.builder."""
    from ktir.builder import Builder
    from ktir.ir import attributes as at
    from ktir.ir import types as ty
    from schedulers.sets import box, projection, scalar

    dt = scalar(dtype)
    b = Builder()
    full, idn = b.alias("full", box(*shape)), b.alias("id", projection(len(shape)))
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    with b.func("scale", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX)], grid=[1]) as (px, py):
        c0 = b.index(0, "c0")
        k = b.constant(at.FloatAttr(value=float(factor), type=dt) if isinstance(factor, float)
                       else at.IntegerAttr(value=factor, type=dt), name="k")
        x = b.memory_view(px, list(shape), strides, dt, None, full, name="x")
        y = b.memory_view(py, list(shape), strides, dt, None, full, name="y")
        xv = b.load(b.access_tile(x, [c0] * len(shape), full, shape, idn, name="tx"), dt, name="xv")
        ks = b.fill(k, b.empty(ty.tensor(shape, dt), "e"), "ks")
        mul = b.arith.mulf if isinstance(factor, float) else b.arith.muli
        b.store(mul(xv, ks, name="yv"), b.access_tile(y, [c0] * len(shape), full, shape, idn, name="ty"))
        b.func_return()
    return b.module


def test_check_compares_integer_outputs_exactly() -> None:
    # values in [0, 8) times 100: an off-by-one result was within the old 1e-2 relative slack
    want, off_by_one = _scaled_copy((64, 64), "i32", 100), _scaled_copy((64, 64), "i32", 101)
    verdict = check_equivalent(want, off_by_one)
    assert not verdict and "elements differ" in verdict.message
    assert check_equivalent(want, _scaled_copy((64, 64), "i32", 100))


def test_check_scales_the_absolute_slack_to_small_outputs() -> None:
    # outputs of magnitude ~1e-3 (like softmax rows of a thousand columns): twice the right
    # value was within the old absolute slack of 1e-2 on every element
    want, twice = _scaled_copy((64, 64), "f32", 1e-3), _scaled_copy((64, 64), "f32", 2e-3)
    verdict = check_equivalent(want, twice)
    assert not verdict and "elements differ" in verdict.message
    assert check_equivalent(want, _scaled_copy((64, 64), "f32", 1e-3))


def test_a_missing_argument_is_asked_for_with_the_schedule_flag(capsys: pytest.CaptureFixture[str]) -> None:
    # the interpreter's own hint names `ktir run --arg`, which `ktir schedule` does not take
    # a size the random-input probe cannot choose (embedding_gather's B now is: the smallest that runs)
    kernel = Path(__file__).parent / "data" / "reads_past_its_view.ktir"
    code = ktir_schedule([str(kernel), "--target", "spyre", "--check", "-q"])
    _, err = capsys.readouterr()
    assert code == 1 and "--size n=INT" in err and "--arg" not in err and "Traceback" not in err


def test_an_unchanged_module_is_not_run_again(softmax_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--check` of a result that is its input (by printed text) passes without the interpreter; a
    result that differs in one op is still run."""
    import schedulers.check as check
    module = ktir.parse(softmax_file.read_text(), "softmax.ktir")
    runs: list[int] = []
    real = check.check_equivalent

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(check, "check_equivalent", counted)
    same = schedulers.ScheduleResult(ktir.parse(print_module(module), "copy.ktir"), _report())
    verdict = check.check_schedule(module, same)
    assert verdict.ok and "unchanged" in verdict.message and not runs
    changed = ktir.parse(print_module(module).replace("arith.divf", "arith.mulf", 1), "changed.ktir")
    assert print_module(changed) != print_module(module)
    with pytest.raises(CheckFailed):
        check.check_schedule(module, schedulers.ScheduleResult(changed, _report()))
    assert runs == [1]


def _report() -> ScheduleReportType:
    return ScheduleReportType(scheduler="none", target="spyre", kernel="softmax", kernel_class="none", applied=False)
