"""The runner: reference 100%, wrong implementations caught by named cases, statuses,
subprocess adapters end to end, reports and their schema, the command line."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conformance.__main__ import main as conformance_main
from conformance.model import LEVELS, load_suite
from conformance.reports import to_html, to_json, to_junit
from conformance.results import Results, json_schema
from conformance.runner import AdapterSpec, run_suite, select

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the wrong adapters below are imported by name, also in worker processes
WRONG = "python:conformance_wrong_adapters:"
SUITE = load_suite()


def run(pattern: str | None = None, adapter: str = "reference", command: str | None = None, **kw: object) -> Results:
    cases = select(SUITE, None, pattern)
    assert cases, pattern
    return run_suite(cases, AdapterSpec(adapter, command), **kw)  # type: ignore[arg-type]


def statuses(results: Results) -> dict[str, str]:
    return {c.id: c.status for c in results.cases}


@pytest.fixture(scope="module")
def full_run() -> Results:
    return run_suite(SUITE, AdapterSpec(), jobs=2, timeout=60)


def test_reference_passes_every_case(full_run: Results) -> None:
    assert full_run.conformant and full_run.passed
    assert {v.level: v.verdict for v in full_run.levels} == dict.fromkeys(LEVELS, "certified")
    assert {c.status for c in full_run.cases} == {"pass"}
    assert len(full_run.cases) == len(SUITE)


def test_results_json_validates_against_the_published_schema(full_run: Results, tmp_path: Path) -> None:
    data = json.loads(to_json(full_run))
    jsonschema.validate(data, json_schema())
    broken = dict(data, cases=[dict(data["cases"][0], status="maybe")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json_schema())


def test_flipped_sign_is_caught_by_the_subf_cases() -> None:
    s = statuses(run("core.arith.", WRONG + "FlipsSign"))
    failing = {k for k, v in s.items() if v != "pass"}
    assert "core.arith.subf.f32.16" in failing and "core.arith.subf.bf16.4x8" in failing
    assert all(".subf." in k for k in failing)
    assert s["core.arith.addf.f32.16"] == "pass"


def test_dropped_store_is_caught_by_the_loop_cases() -> None:
    s = statuses(run("*.scf.for.*", WRONG + "DropsStore"))
    assert s["core.scf.for.f32"] == "fail"
    s = statuses(run("multi-tile.runtime_arg", WRONG + "DropsStore"))
    assert set(s.values()) == {"fail"}


def test_wrong_rounding_is_caught_by_exact_cases_only() -> None:
    s = statuses(run("f16.16", WRONG + "RoundsWrongly"))
    assert s["core.arith.addf.f16.16"] == "fail"
    assert s["core.arith.mulf.bf16.16"] == "fail"
    # the lost bit adds at most one ulp to the reference's half: a 2-ulp class (measured from
    # the exact value) tolerates it; f32 results are untouched
    assert s["core.math.tanh.f16.16"] == "pass"
    r = run("core.arith.addf.f32", WRONG + "RoundsWrongly")
    assert r.passed


def test_ignored_tile_is_caught_by_the_multi_tile_cases() -> None:
    r = run("multi-tile.grid4.arith.addf", WRONG + "IgnoresTile")
    assert {c.status for c in r.cases} == {"fail"}
    worst = r.cases[0].mismatch
    # the last tile's quarter, elements 48..63, keeps the output's initial value
    assert worst is not None and worst.index is not None and worst.index[0] >= 48 and worst.mismatches == 16


def test_accepting_everything_fails_validation_and_malformed_syntax() -> None:
    s = statuses(run("syntax.reject.unbalanced", WRONG + "AcceptsEverything"))
    assert set(s.values()) == {"fail"}
    r = run("validation.math", WRONG + "AcceptsEverything")
    assert {c.status for c in r.cases} == {"fail"} and "accepted an invalid program" in r.cases[0].message


def test_not_supported_conforms_only_at_optional_levels() -> None:
    r = run("grid2", WRONG + "NoCollectives")
    assert {c.level: c.status for c in r.cases}["collective"] == "not_supported"
    assert not r.passed
    r = run("grid2", WRONG + "NoCollectives", optional_levels={"collective"})
    assert r.passed and {c.excused for c in r.cases if c.level == "collective"} == {"capability"}


def test_errors_and_timeouts_are_statuses() -> None:
    r = run("core.arith.addf.f32.16", WRONG + "Crashes")
    assert r.cases[0].status == "error" and "device lost" in r.cases[0].message
    r = run("core.arith.addf.f32.16", WRONG + "Slow", timeout=0.3)
    assert r.cases[0].status == "timeout" and r.cases[0].duration_s < 2


def test_parallel_run_keeps_suite_order_and_reports_timeouts() -> None:
    r = run("core.arith.sub", WRONG + "Slow", jobs=2, timeout=0.2)
    assert [c.id for c in r.cases] == [c.id for c in select(SUITE, None, "core.arith.sub")]
    assert {c.status for c in r.cases} == {"timeout"}


def external(flags: str = "") -> str:
    return f"{sys.executable} {HERE / 'conformance_external_impl.py'} {flags} {{ktir}} {{inputs}} {{outputs}}"


# one case per kind of multi-tile and inter-tile program (each case starts 1-2 processes)
SUBPROCESS_SAMPLE = {"multi-tile.grid2.arith.addf.f32", "multi-tile.indirect_gather.grid2.f32",
                     "multi-tile.distributed_view.grid2.i32", "collective.reduce.grid2.f32", "collective.all_to_all.grid2.f32"}


def test_subprocess_adapter_end_to_end() -> None:
    cases = [c for c in SUITE if c.id in SUBPROCESS_SAMPLE]
    r = run_suite(cases, AdapterSpec(command=external()), jobs=2, timeout=60)
    assert r.passed and len(r.cases) == len(SUBPROCESS_SAMPLE), [(c.id, c.status, c.message) for c in r.cases if c.status != "pass"]
    r = run("validation.math.same_type.math.ex", command=external(), jobs=2, timeout=60)
    assert r.passed and len(r.cases) == 3  # the rejection IDs come back through stdout
    r = run("syntax.reject.unbalanced", command=external(), jobs=2, timeout=60)
    assert r.passed and len(r.cases) == 2


def test_subprocess_adapter_catches_a_wrong_program_and_honours_exit_77() -> None:
    r = run("multi-tile.grid2.arith.addf.f32", command=external("--wrong"), timeout=60)
    assert r.cases[0].status == "fail"
    r = run("collective.reduce.grid2", command=external("--no-collectives"), timeout=60)
    assert r.cases[0].status == "not_supported" and r.cases[0].excused is None and not r.passed


def test_subprocess_failures_are_errors() -> None:
    r = run("core.arith.addf.f32.16", command=f"{sys.executable} -c 'import sys; sys.exit(3)' {{ktir}}", timeout=60)
    assert r.cases[0].status == "error" and "exited 3" in r.cases[0].message
    r = run("core.arith.addf.f32.16", command=f"{sys.executable} -c 'pass' {{ktir}}", timeout=60)
    assert r.cases[0].status == "error" and "no outputs" in r.cases[0].message


def test_worked_example_wrapper_runs_ktir_run() -> None:
    wrapper = Path(__file__).resolve().parents[2] / "conformance" / "examples" / "ktir_run_wrapper.py"
    r = run("core.arith.addf.*.16", command=f"{sys.executable} {wrapper} {{ktir}} {{inputs}} {{outputs}}", jobs=2, timeout=60)
    s = statuses(r)
    assert s["core.arith.addf.f32.16"] == "pass" and s["core.arith.addf.f16.16"] == "pass"
    assert s["core.arith.addf.bf16.16"] == "not_supported"


def test_junit_and_html_reports() -> None:
    r = run("core.arith.sub", WRONG + "FlipsSign")
    root = ET.fromstring(to_junit(r))
    core = root.find("testsuite[@name='core']")
    assert core is not None and int(core.get("failures", "0")) == sum(c.status == "fail" for c in r.cases) > 0
    page = to_html(r)
    assert "not conformant" in page and "core.arith.subf.f32.16" in page


def test_command_line_run_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code = conformance_main(["run", "-q", "-k", "core.arith.addi", "--report", str(out), "--junit", str(tmp_path / "r.xml"),
                             "--html", str(tmp_path / "r.html")])
    assert code == 0 and out.exists() and (tmp_path / "r.xml").exists() and (tmp_path / "r.html").exists()
    assert conformance_main(["report", str(out)]) == 0
    assert "core" in capsys.readouterr().out
    code = conformance_main(["run", "-q", "-k", "core.arith.subf.f32", "--adapter", WRONG + "FlipsSign", "--report", str(out)])
    assert code == 1
    assert conformance_main(["report", str(out)]) == 1


def test_command_line_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance_main(["run", "-q", "--adapter", "python:no.such.module:X", "-k", "core.arith.addf.f32.16"]) == 2
    assert "cannot import" in capsys.readouterr().err
    assert conformance_main(["run", "-q", "-k", "no-such-case"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert conformance_main(["report", str(bad)]) == 2
    assert "schema_version" in capsys.readouterr().err or True
    assert conformance_main(["report", str(tmp_path / "missing.json")]) == 2
    assert conformance_main(["schema"]) == 0


def test_subprocess_timeout_kills_the_command(tmp_path: Path) -> None:
    # no clock: had the runner waited for the command, it would have written `woke` after its
    # sleep; and the shell that would write it is gone (killed, not left running)
    woke, pid = tmp_path / "woke", tmp_path / "pid"
    command = f"echo $$ > {pid}; sleep 30; touch {woke}; {sys.executable} -c 'pass' {{ktir}}"
    r = run("core.arith.addf.f32.16", command=command, timeout=0.5)
    assert r.cases[0].status == "timeout" and not woke.exists()
    stat = Path(f"/proc/{int(pid.read_text())}/stat")
    if stat.parent.parent.is_dir() and stat.exists():  # a zombie is dead too
        assert stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_adapter_constructor_failure_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance_main(["run", "-q", "-k", "core.arith.addf.f32.16", "--adapter", WRONG + "Broken"]) == 2
    assert "constructing the adapter failed" in capsys.readouterr().err


def test_not_supported_conforms_for_an_optional_element_type() -> None:
    r = run("core.math.exp.", WRONG + "NoF64")
    s = statuses(r)
    assert s["core.math.exp.f64.16"] == "not_supported" and s["core.math.exp.f32.16"] == "pass"
    assert not r.passed
    assert run("core.math.exp.", WRONG + "NoF64", optional_dtypes={"f64"}).passed
    assert not run("core.math.exp.", WRONG + "NoF64", optional_dtypes={"f8E5M2"}).passed


def test_published_schema_file_is_the_results_model() -> None:
    from conformance.model import SUITE_ROOT

    published = json.loads((SUITE_ROOT / "schema" / "results.schema.json").read_text())
    assert published == json_schema()


def test_ktir_command_has_the_conformance_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    from ktir.cli import main as ktir_main

    assert ktir_main(["conformance", "run", "-q", "-k", "core.arith.maxsi"]) == 0
    assert ktir_main(["conformance", "schema"]) == 0
    assert '"title": "Results"' in capsys.readouterr().out


def test_no_more_workers_than_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """`-j 1000` on one case ran a pool of a thousand processes (forked up front): a hang in
    the fuzz lane (seed 41204, input 129799)."""
    import conformance.runner as runner

    sizes: list[int] = []
    real = runner.ProcessPoolExecutor

    def recording(max_workers: int, **kw: object) -> object:
        sizes.append(max_workers)
        return real(max_workers=max_workers, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(runner, "ProcessPoolExecutor", recording)
    results = run("core.arith.addf.f32.", jobs=1000)
    assert statuses(results) == {"core.arith.addf.f32.16": "pass", "core.arith.addf.f32.4x8": "pass"}
    assert sizes == [2]
    assert results.jobs == 2  # the report says how many ran, not how many were asked for
