"""Certification: capability files, verdicts per level, mandatory levels, waivers, compare."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from conformance.__main__ import main as conformance_main
from conformance.capability import Capabilities, DeclarationError, Implementation, load_capabilities, load_waivers
from conformance.compare import compare_runs
from conformance.model import SUITE_ROOT, load_suite, suite_hash
from conformance.regen import schemas, write_suite
from conformance.reports import to_json
from conformance.results import json_schema
from conformance.runner import AdapterSpec, run_suite, select

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
WRONG = "python:conformance_wrong_adapters:"
SUITE = load_suite()
ACME = Implementation(name="acme-ktir", version="2.1.0")

EXECUTOR_TOML = """
schema_version = 1
kinds = ["verifier", "executor"]
levels = ["syntax", "validation", "core", "multi-tile", "full"]
optional_dtypes = []
[implementation]
name = "acme-ktir"
version = "2.1.0"
"""


def caps(**kw: object) -> Capabilities:
    data: dict[str, object] = {"implementation": ACME, "kinds": ["executor"], "levels": ["core", "multi-tile", "full"]}
    data.update(kw)
    return Capabilities.model_validate(data)


def test_a_kind_cannot_leave_out_its_mandatory_levels() -> None:
    with pytest.raises(ValidationError, match="core is mandatory"):
        caps(levels=["multi-tile", "full", "collective"])
    with pytest.raises(ValidationError, match="syntax, validation are mandatory"):
        caps(kinds=["verifier"], levels=[])
    with pytest.raises(ValidationError, match="cannot be claimed by parser"):
        caps(kinds=["parser"], levels=["syntax", "core"])
    with pytest.raises(ValidationError):
        caps(kinds=[])
    with pytest.raises(ValidationError):
        caps(optional_dtypes=["f32"])  # f32 is not optional
    assert caps(levels=["core", "multi-tile", "full", "collective"]).mandatory_levels() == {"core", "multi-tile", "full"}


def test_capability_file_loads_and_errors_name_the_field(tmp_path: Path) -> None:
    good = tmp_path / "caps.toml"
    good.write_text(EXECUTOR_TOML)
    c = load_capabilities(good)
    assert c.implementation.version == "2.1.0" and c.mandatory_levels() == {"syntax", "validation", "core", "multi-tile", "full"}
    bad = tmp_path / "bad.toml"
    bad.write_text(EXECUTOR_TOML.replace('"core", ', ""))
    with pytest.raises(DeclarationError, match="core is mandatory"):
        load_capabilities(bad)
    (tmp_path / "c.json").write_text(json.dumps(c.model_dump()))
    assert load_capabilities(tmp_path / "c.json") == c


def test_published_schemas_validate_the_files(tmp_path: Path) -> None:
    import tomllib

    published = {name: json.loads((SUITE_ROOT / "schema" / name).read_text()) for name in schemas()}
    assert {name: json.loads(text) for name, text in schemas().items()} == published
    jsonschema.validate(tomllib.loads(EXECUTOR_TOML), published["capabilities.schema.json"])
    jsonschema.validate({"schema_version": 1, "waiver": [{"case": "x", "reason": "y"}]}, published["waivers.schema.json"])


def test_nothing_supported_is_not_conformant_even_claiming_as_little_as_allowed() -> None:
    r = run_suite(SUITE, AdapterSpec(WRONG + "NothingSupported"), capabilities=caps(kinds=["parser"], levels=["syntax"]))
    assert not r.conformant and not r.passed
    verdicts = {v.level: v.verdict for v in r.levels}
    assert verdicts["syntax"] == "not certified"
    assert {verdicts[lv] for lv in ("validation", "core", "multi-tile", "collective", "full")} == {"not attempted"}
    assert all(c.excused == "capability" for c in r.cases if c.level != "syntax")


def test_every_level_optional_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # only `collective` may be optional: the rest cannot be declared away on the command line
    assert conformance_main(["run", "-q", "--adapter", WRONG + "NothingSupported", "--optional", "syntax"]) == 2
    assert "invalid choice: 'syntax'" in capsys.readouterr().err
    code = conformance_main(["run", "-q", "--adapter", WRONG + "NothingSupported", "--level", "syntax",
                             "--optional", "collective", "--optional-dtype", "f64", "--optional-dtype", "f8E4M3FN",
                             "--optional-dtype", "f8E5M2"])
    assert code == 1


def test_cases_outside_the_declaration_are_not_run_and_do_not_count() -> None:
    cases = select(SUITE, None, "core.math.exp.")
    r = run_suite(cases, AdapterSpec(WRONG + "CrashesOnF64"), capabilities=caps())
    s = {c.id: c for c in r.cases}
    assert s["core.math.exp.f64.16"].status == "not_supported" and s["core.math.exp.f64.16"].excused == "capability"
    assert "f64 not declared" in s["core.math.exp.f64.16"].message
    assert s["core.math.exp.f32.16"].status == "pass" and r.passed
    # declared but not supported by the implementation: counts against it
    r = run_suite(cases, AdapterSpec(WRONG + "NoF64"), capabilities=caps(optional_dtypes=["f64"]))
    assert not r.passed and {c.status for c in r.cases if "f64" in c.id} == {"not_supported"}


def test_verdicts_on_a_small_suite(tmp_path: Path) -> None:
    from conformance.gen.core import elementwise_cases

    drafts = [d for d in elementwise_cases() if d.id.startswith(("core.arith.addf.f32", "core.arith.subf.f32"))]
    write_suite(drafts, root=tmp_path)
    small = load_suite(tmp_path)
    r = run_suite(small, AdapterSpec(), capabilities=caps(), root=tmp_path)
    v = {x.level: x for x in r.levels}
    assert v["core"].verdict == "certified" and v["core"].run == v["core"].total == len(small)
    assert v["multi-tile"].verdict == "not attempted" and not r.conformant  # mandatory, but no case exists here
    assert r.suite.hash == suite_hash(tmp_path) != suite_hash()
    assert r.implementation == ACME
    partial = run_suite(small[:1], AdapterSpec(), capabilities=caps(), root=tmp_path)
    assert {x.level: x.verdict for x in partial.levels}["core"] == "not certified" and partial.passed
    wrong = run_suite(small, AdapterSpec(WRONG + "FlipsSign"), capabilities=caps(), root=tmp_path)
    assert {x.level: x.verdict for x in wrong.levels}["core"] == "not certified"


def _waivers(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "waivers.toml"
    path.write_text("schema_version = 1\n" + rows)
    return path


def test_waivers_excuse_named_cases_with_a_reason(tmp_path: Path) -> None:
    cases = select(SUITE, None, "core.arith.subf.f32")
    failing = [c.id for c in run_suite(cases, AdapterSpec(WRONG + "FlipsSign")).cases if c.status == "fail"]
    assert failing
    rows = "".join(f'[[waiver]]\ncase = "{cid}"\nreason = "ACME-123: operands swapped"\n' for cid in failing)
    waivers = load_waivers(_waivers(tmp_path, rows), SUITE)
    r = run_suite(cases, AdapterSpec(WRONG + "FlipsSign"), waivers=waivers)
    assert r.passed and {c.excused for c in r.cases if c.id in failing} == {"waiver"}
    assert r.cases[0].waiver == "ACME-123: operands swapped" and r.waivers[0].case in failing
    with pytest.raises(DeclarationError, match="unknown case"):
        load_waivers(_waivers(tmp_path, '[[waiver]]\ncase = "core.nope"\nreason = "x"\n'), SUITE)
    with pytest.raises(DeclarationError, match="reason"):
        load_waivers(_waivers(tmp_path, f'[[waiver]]\ncase = "{failing[0]}"\nreason = ""\n'), SUITE)
    with pytest.raises(DeclarationError, match="twice"):
        load_waivers(_waivers(tmp_path, rows + rows), SUITE)


def test_compare_shows_regressions_and_fixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = select(SUITE, None, "core.arith.sub")
    good = run_suite(cases, AdapterSpec(), capabilities=caps())
    bad = run_suite(cases, AdapterSpec(WRONG + "FlipsSign"), capabilities=caps(implementation=Implementation(name="acme-ktir", version="2.2.0")))
    diff = compare_runs(good, bad)
    assert diff.worse and all(".subf." in line for line in diff.regressed) and diff.regressed
    assert "implementation: acme-ktir 2.1.0 -> acme-ktir 2.2.0" in diff.header
    back = compare_runs(bad, good)
    assert not back.worse and len(back.fixed) == len(diff.regressed)
    assert compare_runs(good, good).lines() == ["no differences"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(to_json(good))
    b.write_text(to_json(bad))
    jsonschema.validate(json.loads(b.read_text()), json_schema())  # infinite errors are written as "Infinity"
    assert conformance_main(["compare", str(a), str(b)]) == 1
    assert "regressed" in capsys.readouterr().out
    assert conformance_main(["compare", str(b), str(a)]) == 0
    assert conformance_main(["compare", str(a), str(tmp_path / "missing.json")]) == 2


def test_command_line_capabilities_and_waivers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = tmp_path / "caps.toml"
    cap.write_text(EXECUTOR_TOML)
    out = tmp_path / "r.json"
    assert conformance_main(["run", "-q", "-k", "core.math.exp.", "--capabilities", str(cap), "--report", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["implementation"] == {"name": "acme-ktir", "version": "2.1.0"} and len(saved["suite"]["hash"]) == 64
    assert any(c["excused"] == "capability" for c in saved["cases"])
    assert conformance_main(["run", "-q", "-k", "core.math.exp.", "--capabilities", str(cap), "--optional", "collective"]) == 2
    assert conformance_main(["run", "-q", "-k", "core.math.exp.", "--capabilities", str(tmp_path / "none.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = _waivers(tmp_path, '[[waiver]]\ncase = "core.nope"\nreason = "x"\n')
    assert conformance_main(["run", "-q", "-k", "core.math.exp.", "--waivers", str(bad)]) == 2
    for which in ("capabilities", "waivers", "results"):
        assert conformance_main(["schema", which]) == 0


def test_html_report_groups_filters_and_shows_expected_vs_got() -> None:
    from conformance.reports import group_of, to_html

    cases = select(SUITE, None, "core.arith.sub")
    r = run_suite(cases, AdapterSpec(WRONG + "FlipsSign"), capabilities=caps())
    page = to_html(r)
    assert group_of("core.arith.subf.f16.16") == "arith.subf" and group_of("multi-tile.grid2.arith.addf.f32") == "grid2"
    assert "<h3 id='level-core'>" in page and "arith.subf — " in page and "arith.subi — " in page
    assert all(f"<input type='checkbox' value='{s}'" in page for s in ("pass", "fail", "error", "not_supported", "timeout"))
    assert "id='case-core.arith.subf.f32.16'" in page and "href='#case-core.arith.subf.f32.16'" in page
    assert "<th>expected</th><th>got</th>" in page
    assert "arith.subf %x0, %x1" in page  # the failing case's program text
    assert "acme-ktir 2.1.0" in page and r.suite.hash[:12] in page
