"""`ktir validate` over the repository, its CLI contract, and robustness on hostile input."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktir.cli import main
from ktir.verify import validate_text

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = tomllib.loads((ROOT / "tests" / "corpus" / "EXPECTED_ERRORS.toml").read_text())
_SKIP = {"site", "build", "ci-artifacts", "invalid", "invalid_syntax"}


def _programs() -> list[Path]:
    # hidden directories (.git, .venv, a regeneration's .staging) hold no sources
    files = [p for ext in ("*.ktir", "*.mlir") for p in ROOT.rglob(ext)]
    parts = [p.relative_to(ROOT).parts for p in files]
    return sorted(
        p for p, ps in zip(files, parts, strict=True)
        if not _SKIP.intersection(ps) and not any(x.startswith(".") for x in ps)
    )


@pytest.mark.parametrize("path", _programs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_repository_programs_validate(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    _, diagnostics = validate_text(path.read_text(), rel)
    errors = sorted({d.id for d in diagnostics if d.severity == "error"})
    assert errors == sorted(EXPECTED.get(rel, [])), [f"{d.line}:{d.column} {d.id} {d.message}" for d in diagnostics if d.severity == "error"]


def test_expected_errors_list_names_real_files() -> None:
    for rel in EXPECTED:
        assert (ROOT / rel).is_file(), rel


GOOD = "func.func @f(%a: f32) -> f32 {\n  %b = arith.addf %a, %a : f32\n  return %b : f32\n}\n"
BAD = "func.func @f(%a: f32) -> f32 {\n  %b = arith.addi %a, %a : f32\n  return %b : f32\n}\n"
LEGACY = "func.func @f(%t: !ktdp.tile<4xindex>) {\n  return\n}\n"


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_exit_codes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    good, bad, legacy = (_write(tmp_path, n, t) for n, t in (("g.ktir", GOOD), ("b.ktir", BAD), ("l.ktir", LEGACY)))
    assert main(["validate", good]) == 0
    assert main(["validate", good, bad]) == 1
    assert main(["validate", legacy]) == 0
    assert main(["validate", "--werror", legacy]) == 1
    assert main(["validate", str(tmp_path / "missing.ktir")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:3: error[arith.addi.C2]" in err
    assert "\n    %b = arith.addi %a, %a : f32\n    ^\n" in err


def test_json_output(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = _write(tmp_path, "b.ktir", BAD)
    assert main(["validate", "--format", "json", bad]) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records == [
        {
            "file": bad, "line": 2, "col": 3, "severity": "error", "id": "arith.addi.C2",
            "message": "'arith.addi' needs signless integer or index operands, found f32", "notes": [],
        }
    ]


def test_stdin(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(BAD))
    assert main(["validate", "-"]) == 1
    assert "<stdin>:2:3: error[arith.addi.C2]" in capsys.readouterr().err


def test_undecidable_properties_are_notes_not_silence() -> None:
    text = """
#s = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#id = affine_map<(d0) -> (d0)>
func.func @f(%a: index, %off: index) {
  %v = ktdp.construct_memory_view %a, sizes: [8], strides: [1] {memory_space = #ktdp.memory_space<global>} : memref<8xf16>
  %t = ktdp.construct_access_tile %v[%off] {access_tile_order = #id, access_tile_set = #s} : memref<8xf16> -> !ktdp.access_tile<4xindex>
  return
}
"""
    _, diagnostics = validate_text(text)
    notes = [d for d in diagnostics if d.severity == "note"]
    assert not [d for d in diagnostics if d.severity == "error"]
    assert any("could not prove the access tile stays inside its view" in d.message and d.line == 6 for d in notes)


# ---------------------------------------------------------------- robustness

_CORPUS = [p.read_text() for p in _programs()[:40]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("%@#!^{}()[]<>:=,.-+*x0123456789 \n\"abcdefgiklmnoprstuvyz_")), max_size=200))
def test_random_text_never_crashes(text: str) -> None:
    module, diagnostics = validate_text(text, "fuzz.ktir")
    if module is None:
        assert diagnostics and diagnostics[0].severity == "error"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_programs_never_crash(data) -> None:  # type: ignore[no-untyped-def]
    source = data.draw(st.sampled_from(_CORPUS))
    tokens = source.split(" ")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(tokens) - 1))
        action = data.draw(st.sampled_from(["drop", "dup", "swap", "digit"]))
        if action == "drop":
            tokens.pop(i)
        elif action == "dup":
            tokens.insert(i, tokens[i])
        elif action == "swap":
            j = data.draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            tokens[i] = tokens[i].replace("4", "5").replace("1", "0")
        if not tokens:
            break
    validate_text(" ".join(tokens), "mutant.ktir")  # must return diagnostics, never raise
