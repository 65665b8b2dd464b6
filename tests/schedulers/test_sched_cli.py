"""`ktir schedule`: outputs, report JSON, --check, and clean errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest_paths import EXAMPLES, ktir_schedule

from ktir.cli import main
from schedulers import naive
from schedulers.report import ScheduleReport


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = ktir_schedule(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_schedule_writes_module_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "mm.ktir"
    src.write_text(naive.matmul(128, 256, 256, "f16"))
    out, rep = tmp_path / "mm.sched.ktir", tmp_path / "r.json"
    code, stdout, err = run([str(src), "--target", "spyre", "--scheduler", "exact", "--check", "-o", str(out),
                             "--report-json", str(rep)], capsys)
    assert code == 0, err
    assert "check: ok" in err and "ratio" in stdout  # the table goes to stdout when the module goes to a file
    report = ScheduleReport.model_validate_json(rep.read_text())
    assert report.schema_version == 1 and report.kernel_class == "matmul" and report.dims == {"M": 128, "N": 256, "K": 256}
    assert report.schedule is not None and report.schedule.grid[0] * report.schedule.grid[1] > 1
    assert report.bytes_per_level["global"] >= (128 * 256 + 256 * 256 + 128 * 256) * 2
    assert main(["validate", "-q", str(out)]) == 0


def test_report_schema_is_strict() -> None:
    schema = ScheduleReport.model_json_schema()
    assert schema["additionalProperties"] is False and "schema_version" in schema["properties"]
    with pytest.raises(ValueError):
        ScheduleReport.model_validate({"scheduler": "x", "target": "t", "kernel": "k", "kernel_class": "matmul",
                                       "applied": True, "surprise": 1})


def test_module_goes_to_stdout_without_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=1024", "-q"],
                            capsys)
    assert code == 0 and stdout.startswith("//") and "grid = [" in stdout
    # -q drops the table, not the outcome
    (line,) = err.splitlines()
    assert line.startswith("ktir schedule: @softmax: applied by exact"), err


def test_missing_size_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(EXAMPLES / "softmax.ktir"), "--target", "spyre"], capsys)
    assert code == 1 and "--size R=INT" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,code,needle", [
    (["--target", "nowhere"], 2, "nowhere"),
    (["--target", "spyre", "--size", "R"], 2, "NAME=INT"),
])
def test_usage_errors(argv: list[str], code: int, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    got, _, err = run([str(EXAMPLES / "softmax.ktir"), *argv], capsys)
    assert got == code and needle in err and "Traceback" not in err


def test_invalid_input_gets_a_diagnostic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.ktir"
    bad.write_text("func.func @f() {\n  %x = arith.addi %nope, %nope : index\n  func.return\n}\n")
    code, _, err = run([str(bad), "--target", "spyre"], capsys)
    assert code == 1 and "bad.ktir:2:" in err and "error[" in err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["/no/such/file.ktir", "--target", "spyre"], capsys)
    assert code == 2 and "file.ktir" in err


def test_no_legal_schedule_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "wide.ktir"
    src.write_text(naive.softmax(4, 1 << 20, "f16"))
    code, _, err = run([str(src), "--target", "spyre", "-q"], capsys)
    assert code == 1 and "does not fit" in err and "x_ptr" in err


def test_unrecognised_kernel_comes_back_unchanged_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rep = tmp_path / "r.json"
    code, stdout, _ = run([str(EXAMPLES / "swiglu.ktir"), "--target", "spyre", "--scheduler", "search",
                           "--time-budget", "0.1", "--report-json", str(rep), "-q"], capsys)
    assert code == 0
    report = json.loads(rep.read_text())
    assert report["applied"] is False and "matmul" in report["reason"]
    assert stdout == (EXAMPLES / "swiglu.ktir").read_text()


def test_ktir_command_has_the_schedule_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["schedule", str(EXAMPLES / "rmsnorm.ktir"), "--target", "spyre", "--size", "R=256", "--scheduler",
                 "baseline", "--check", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and "check: ok" in err and "grid = [" in out


def test_a_module_without_a_kernel_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # was "the module has 0 functions with bodies (); choose one with --func"
    src = tmp_path / "decl.ktir"
    src.write_text("func.func private @decl(%a: index)\n")
    code, _, err = run([str(src), "--target", "spyre"], capsys)
    assert code == 1 and "no function with a body: there is no kernel to schedule" in err and "--func" not in err


@pytest.mark.parametrize("budget", ["-1", "0", "nan", "inf", "soon"])
def test_a_time_budget_must_be_seconds_above_0(budget: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a negative or zero budget was accepted and silently searched nothing
    src = tmp_path / "mm.ktir"
    src.write_text(naive.matmul(64, 64, 64))
    code, _, err = run([str(src), "--target", "spyre", "--time-budget", budget], capsys)
    assert code == 2 and "--time-budget" in err and "Traceback" not in err
