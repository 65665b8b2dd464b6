"""A failed check cannot go unnoticed: `ktir schedule --check` exits 1 and writes nothing,
`ScheduleOptions(check=True)` raises `CheckFailed`, and a `CheckResult` is falsy."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_paths import ktir_schedule

import ktir
import schedulers
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from schedulers import naive, registry
from schedulers.check import CheckFailed, check_equivalent


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
