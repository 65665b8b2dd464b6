"""The validation level: one violation per case, judged by rule ID and line.

Checked here: every numbered constraint and structural rule has a case where it is the only
violation; each stored case, verified afresh, reports exactly its one error at its line; case
IDs carry no line numbers and survive insertions; the splitter keeps exactly one violation on
generated programs (hypothesis); and the runner's verdict on a reject case.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.adapters import CheckResult, CommandAdapter
from conformance.gen.split import Block, split
from conformance.gen.validation import INVALID, unsplit, validation_cases
from conformance.model import SUITE_ROOT, Case, load_suite
from conformance.reported import Reported, coerce_all, from_text
from conformance.runner import judge_reject
from ktir.builder import Builder
from ktir.dialects.registry import OPS
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.syntax.printer import print_module
from ktir.verify import STRUCTURAL_RULES, validate_text

CASES = [c for c in load_suite() if c.level == "validation"]


def test_every_rule_has_a_case_where_it_is_the_only_violation() -> None:
    wanted = {i for op in OPS.values() for i in op.constraint_ids()} | set(STRUCTURAL_RULES)
    alone = {c.diagnostic for c in CASES if c.line is not None}
    assert sorted(wanted - alone) == []
    assert all(c.expect == "reject" and c.line is not None and c.column is not None for c in CASES)


def test_each_case_is_its_own_program_and_ids_carry_no_line_numbers() -> None:
    assert len({c.file for c in CASES}) == len(CASES)
    assert [c.id for c in CASES if re.search(r"\.L\d+\.", c.id)] == []
    assert all(c.id.split(".")[-1] and re.fullmatch(r"[0-9a-f]{6}", c.id.split(".")[-1]) for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_reference_reports_exactly_the_one_error_at_its_line(case: Case) -> None:
    text = (SUITE_ROOT / case.file).read_text(encoding="utf-8")
    _, diagnostics = validate_text(text, case.file)
    errors = [(d.id, d.line, d.column) for d in diagnostics if d.severity == "error"]
    assert errors == [(case.diagnostic, case.line, case.column)]
    op_line = text.split("\n")[case.line - 1]  # type: ignore[operator]
    assert case.column == len(op_line) - len(op_line.lstrip()) + 1  # where the violating op begins


def test_only_marks_sharing_an_op_with_another_violation_are_left_out() -> None:
    left = unsplit()
    assert left and all("the same op also commits" in u.reason for u in left)
    assert len(left) <= 4


def test_inserting_a_case_renames_nothing(tmp_path: Path) -> None:
    for src in INVALID.glob("math.ktir"):
        shutil.copy(src, tmp_path / src.name)
    before = {d.id for d in validation_cases(tmp_path)}
    path = tmp_path / "math.ktir"
    new = ("func.func @inserted(%x: i32) {\n  // expected-error@+1 {{[math.exp.C2] }}\n  %0 = math.exp %x : i32\n"
           "  return\n}\n\n// -----\n\n")
    lines = path.read_text().split("\n")
    middle = next(i for i, line in enumerate(lines) if line.startswith("// -----")) + 1
    path.write_text("\n".join(lines[:middle]) + "\n\n" + new + "\n".join(lines[middle:]))
    after = {d.id for d in validation_cases(tmp_path)}
    assert before < after and len(after - before) == 1


# ------------------------------------------------------------------ the splitter, on generated programs

I8 = ty.IntegerType(width=8)


@st.composite
def function(draw: st.DrawFn, name: str, first_bad: int) -> tuple[list[str], int]:
    """A function of i8 arithmetic whose values feed each other at random, the tail of it
    maybe inside an scf.for; some constants are out of range for i8 (arith.constant.C1).
    Returns its printed lines and how many constants are bad."""
    n = draw(st.integers(2, 8))
    bad = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
    loop_at = draw(st.integers(0, n))  # ops from here on are in a loop body (n: no loop)
    b = Builder()
    with b.func(name, [("a", I8)]) as (a,):
        values = [a]
        index = [b.index(k) for k in (0, 2, 1)] if loop_at < n else []

        def emit(k: int) -> None:
            if k in bad or draw(st.booleans()):
                value = first_bad + k if k in bad else k
                values.append(b.create("arith.constant", [], [I8], {"value": at.IntegerAttr(value=value, type=I8)})[0])
            else:
                x, y = draw(st.sampled_from(values)), draw(st.sampled_from(values))
                values.append(b.create("arith.addi", [x, y], [I8], {})[0])

        for k in range(min(loop_at, n)):
            emit(k)
        if loop_at < n:
            outer = len(values)
            with b.for_(*index):
                for k in range(loop_at, n):
                    emit(k)
            del values[outer:]  # the body's values are not visible after the loop
        b.func_return()
    return print_module(b.module).strip("\n").split("\n"), len(bad)


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, int]:
    """One or two functions (printed by separate builders, so both use the names %0, %1...,
    as MLIR's scoping allows), each bad constant marked. Returns (text, number of marks)."""
    lines: list[str] = []
    count = 0
    for k in range(draw(st.integers(1, 2))):
        body, bad = draw(function(f"f{k}", 300 + 20 * k))
        lines += body
        count += bad
    marked = []
    for line in lines:
        m = re.search(r"arith\.constant (\d+) ", line)
        if m and int(m.group(1)) >= 300:
            marked.append(" " * (len(line) - len(line.lstrip())) + "// expected-error@+1 {{[arith.constant.C1] out of range}}")
        marked.append(line)
    return "\n".join(marked), count


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_a_split_keeps_exactly_its_one_violation(program: tuple[str, int]) -> None:
    text, count = program
    block = Block(1, tuple(text.split("\n")))
    marks = block.marks()
    assert len(marks) == count
    if count < 2:
        return
    for mark in marks:
        result = split(block, mark)
        assert not isinstance(result, str), result
        _, diagnostics = validate_text(result.text, "split.ktir")
        errors = [(d.id, d.line) for d in diagnostics if d.severity == "error"]
        assert errors == [("arith.constant.C1", result.line)], result.text
        assert result.text.split("\n")[result.line - 1] == block.lines[mark.target]  # the kept one is the marked one


# ------------------------------------------------------------------ the verdict on a reject case

CASE = Case(id="validation.x.f.ktdp.load.C1.abcdef", level="validation", file="x.ktir", expect="reject",
            diagnostic="ktdp.load.C1", line=7, column=3)
SYNTAX = Case(id="syntax.reject.x", level="syntax", file="y.ktir", expect="reject", diagnostic="syntax")


def verdict(case: Case, *reported: Reported | str, accepted: bool = False) -> tuple[str, str]:
    return judge_reject(case, accepted, [r for r in coerce_all(reported) if r.severity == "error"])


def test_a_reject_case_passes_only_with_its_id_at_its_line() -> None:
    assert verdict(CASE, Reported(id="ktdp.load.C1", line=7, column=9)) == ("pass", "")  # the column is not judged
    assert verdict(CASE, Reported(id="ktdp.load.C1", line=7), Reported(id="ktdp.load.C1", line=7))[0] == "pass"
    status, message = verdict(CASE, Reported(id="ktdp.load.C1", line=8))
    assert status == "fail" and "at line 8" in message and "expected error[ktdp.load.C1] at line 7" in message
    status, message = verdict(CASE, Reported(id="ktdp.load.C2", line=7))
    assert status == "fail" and "ktdp.load.C2" in message
    assert verdict(CASE, accepted=True)[0] == "fail"


def test_any_other_error_fails_the_case_but_warnings_and_notes_do_not() -> None:
    status, message = verdict(CASE, Reported(id="ktdp.load.C1", line=7), Reported(id="ssa.undefined", line=3))
    assert status == "fail" and "also reported error[ssa.undefined] at line 3" in message
    status, _ = verdict(CASE, Reported(id="ktdp.load.C1", line=7), Reported(id="op.results", line=7))
    assert status == "fail"  # another rule at the same line is a second claim
    assert verdict(CASE, Reported(id="ktdp.load.C1", line=7), Reported(id="legacy", line=2, severity="warning"),
                   Reported(id="ktdp.load.C1", line=4, severity="note"))[0] == "pass"


def test_an_id_without_a_line_cannot_pass_a_validation_case_but_passes_a_syntax_case() -> None:
    status, message = verdict(CASE, "ktdp.load.C1")
    assert status == "fail" and "without a line" in message and "protocol 2" in message
    assert verdict(SYNTAX, "syntax", "other")[0] == "pass"  # syntax rejects are judged by ID only
    assert verdict(SYNTAX, "other")[0] == "fail"


def test_located_diagnostics_are_read_from_text_and_json() -> None:
    text = ("/tmp/k/case.ktir:7:3: error[ktdp.load.C1]: must equal the access tile's shape\n"
            "    %x = ktdp.load %t : ...\n    ^\n"
            "case.ktir:2:1: warning[legacy]: !ktdp.tile is a legacy spelling\n"
            "error[bare.C1] somewhere\n"
            '{"id": "json.C2", "line": 5, "col": 4}\n'
            '{"id": "json.C3", "line": 6, "severity": "note"}\n')
    found = [(r.id, r.line, r.column, r.severity) for r in from_text(text)]
    assert found == [("ktdp.load.C1", 7, 3, "error"), ("legacy", 2, 1, "warning"), ("bare.C1", None, None, "error"),
                     ("json.C2", 5, 4, "error"), ("json.C3", 6, None, "note")]


class _Diag:  # the shape of ktir's own Diagnostic, as a Python adapter may return it
    id, line, column, severity = "math.exp.C1", 3, 3, "error"


def test_a_python_adapter_may_return_ids_dicts_or_diagnostic_objects() -> None:
    checked = CheckResult(accepted=False, diagnostics=["a.C1", {"id": "b.C1", "line": 2}, _Diag(),
                                                       Reported(id="c.C1", line=1, severity="warning")])
    assert [(r.id, r.line) for r in checked.errors()] == [("a.C1", None), ("b.C1", 2), ("math.exp.C1", 3)]


def test_the_command_adapter_reads_locations_from_ktir_validate(tmp_path: Path) -> None:
    import sys

    case = next(c for c in CASES if c.diagnostic == "math.exp.C1")
    adapter = CommandAdapter(f"{sys.executable} -c 'import sys; from ktir.cli import main; sys.exit(main())' validate -q {{ktir}}",
                             timeout=60)
    checked = adapter.check((SUITE_ROOT / case.file).read_text(encoding="utf-8"), case.file)
    assert judge_reject(case, checked.accepted, checked.errors()) == ("pass", "")
