"""Adding an elementwise math op takes its dialect row, one interpreter function, its exact
value for the conformance oracle and its spec text, and every layer sees it: parse, print,
verify (with generated negative tests), interpret, cost class, docs, conformance cases.

The fixture adds a fake `math.cosh` exactly that way, in memory, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ktir.dialects import math as math_dialect
from ktir.dialects.base import OpDef
from ktir.dialects.constraints import FLOAT_LIKE
from ktir.dialects.cost import CostClass
from ktir.dialects.registry import OPS, SPELLINGS
from ktir.syntax.generic_printer import print_generic
from ktir.syntax.parser import parse
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from tests.verify.generated import negative_cases

ri = pytest.importorskip("reference_interp")

FAKE = "math.cosh"
ROW: math_dialect.Row = ("cosh", 1, FLOAT_LIKE, "2 ulp", CostClass.TRANSCENDENTAL, "Hyperbolic cosine.")
SPEC_TEXT = "\n## math.cosh\n\nThe hyperbolic cosine `(e^x + e^-x) / 2` of each element.\n"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cosh(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpDef]:
    """Registers the fake op: its dialect row, its interpreter function, its oracle function."""
    import mpmath

    from conformance.oracle import transcendental
    from reference_interp.compiler import FACTORIES
    from reference_interp.ops import math as math_ops

    assert FAKE not in OPS, f"{FAKE} exists now: pick another fake op for this test"
    op = math_dialect.op_from_row(ROW)  # the dialect row
    monkeypatch.setitem(OPS, FAKE, op)
    monkeypatch.setitem(SPELLINGS, FAKE, op)
    monkeypatch.setitem(math_ops.FLOAT_FUNCTIONS, "cosh", np.cosh)  # the interpreter function
    monkeypatch.setitem(FACTORIES, FAKE, math_ops.math_op)
    monkeypatch.setitem(transcendental.FUNCTIONS, "cosh", mpmath.cosh)  # the oracle's exact value
    yield op


KERNEL = """func.func @k(%x: tensor<4xf32>, %y: f16) -> (tensor<4xf32>, f16) {
  %a = math.cosh %x : tensor<4xf32>
  %b = math.cosh %y fastmath<fast> : f16
  return %a, %b : tensor<4xf32>, f16
}
"""


def test_parse_and_print_round_trip(cosh: OpDef) -> None:
    module = parse(KERNEL)
    ops = [o.name for o in module.walk()]
    assert ops.count(FAKE) == 2
    assert parse(KERNEL, fast=False) == module  # the grammar path (lark) sees it too
    text = print_module(module)
    assert "math.cosh %x : tensor<4xf32>" in text  # the custom form, not the generic fallback
    assert parse(text) == module
    assert print_module(parse(text)) == text
    generic = print_generic(module)
    assert '"math.cosh"(%x)' in generic and print_module(parse(generic)) == text


def test_verify_accepts_valid_and_reports_the_typed_constraint_ids(cosh: OpDef) -> None:
    _, diagnostics = validate_text(KERNEL)
    assert [d for d in diagnostics if d.severity == "error"] == []
    _, diagnostics = validate_text("func.func @k(%x: i32) {\n  %a = math.cosh %x : i32\n  return\n}\n")
    assert [(d.id, d.message) for d in diagnostics] == [("math.cosh.C2", "'math.cosh' needs float operands, found i32")]
    generated = negative_cases(cosh)
    assert [c.expected for c in generated] == ["math.cosh.C1", "math.cosh.C2"]
    for case in generated:
        _, diagnostics = validate_text(case.text)
        assert [d.id for d in diagnostics if d.severity == "error"] == [case.expected], case.text


def test_interpret(cosh: OpDef) -> None:
    module = parse(KERNEL)
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    result = ri.run(module, "k", {"x": x, "y": np.float16(1.5)})
    ((a, b),) = result.returns  # one tile
    np.testing.assert_allclose(a, np.cosh(x.astype(np.float64)), rtol=2e-7)
    assert np.asarray(b).dtype == np.float16 and float(b) == float(np.float16(np.cosh(1.5)))
    assert FAKE in ri.implemented_ops()


def test_cost_model_reads_the_cost_class(cosh: OpDef) -> None:
    from ktir.targets.from_interp import TRANSCENDENTAL, from_interp

    assert FAKE in TRANSCENDENTAL
    text = (ROOT / "tests/targets/kernels/stream_naive.ktir").read_text(encoding="utf-8")
    assert "math.exp" in text
    module = parse(text.replace("math.exp", FAKE))
    x = np.linspace(-2, 2, 8192).astype(np.float16)
    result = ri.run(module, None, {"X": x, "Y": np.zeros(8192, np.float16)}, trace=True)
    records = [r for r in from_interp(module, result).trace.records if r.op == FAKE]
    assert records and all(r.kind == "vector" and r.transcendental for r in records)


def test_docs_page_and_status(cosh: OpDef) -> None:
    from ktir.docsgen.checks import constraint_problems, semantics_problems, unknown_sections
    from ktir.docsgen.pages import nav, op_page, op_page_path
    from ktir.docsgen.semantics import parse_dialect_text
    from ktir.docsgen.status import Coverage, row
    from ktir.verify import checked_constraints

    spec = (ROOT / "spec/ops/math.md").read_text(encoding="utf-8") + SPEC_TEXT  # the spec text
    texts = {"math": parse_dialect_text(spec, "math")}
    assert semantics_problems(cosh, texts) == [] and unknown_sections(OPS, texts) == []
    page = op_page(cosh, texts["math"].sections[FAKE])
    assert constraint_problems(cosh, page) == []
    for expected in ("# math.cosh", "Hyperbolic cosine.", "(e^x + e^-x) / 2", "float (scalar or tensor)",
                     "The element type is a float type.", "`transcendental`", "math.cosh.C2"):
        assert expected in page, expected
    assert any(isinstance(e, dict) and {FAKE: op_page_path(FAKE)} in e.get("math", []) for e in nav())
    coverage = Coverage(checked_constraints(), ri.implemented_ops(), {}, {})
    cells = row(cosh, True, coverage)
    assert (cells["spec"], cells["verifier"], cells["interpreter"]) == ("yes, 2 constraints", "2/2", "yes")


def test_conformance_cases_are_generated(cosh: OpDef, tmp_path: Path) -> None:
    from conformance.gen.core import untabled_elementwise_cases
    from conformance.regen import to_case, write_suite
    from conformance.values import case_inputs, read_npz

    drafts = list(untabled_elementwise_cases())
    assert sorted(d.id for d in drafts) == sorted(
        f"core.{FAKE}.{dt}.{shape}" for dt in ("f16", "bf16", "f32") for shape in ("16", "4x8")
    )
    f32 = [d for d in drafts if d.id == f"core.{FAKE}.f32.16"]
    write_suite(f32, root=tmp_path)  # the golden comes from the oracle (mpmath's cosh, rounded once)
    (case,) = [to_case(d) for d in f32]
    assert FAKE in case.ops and case.outputs[0].tolerance == "2 ulp"
    x = case_inputs(case, tmp_path)["x0_ptr"]
    y = read_npz(tmp_path / "goldens" / "core" / f"{FAKE}.f32.16.npz")["y_ptr"]
    np.testing.assert_allclose(y, np.cosh(x.astype(np.float64)), rtol=3e-7)


def test_a_generator_row_added_mid_table_rewrites_only_its_cases(cosh: OpDef, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs are seeded by case id and argument name, never by position: inserting the new op's
    row in the middle of the elementwise table and regenerating changes no other case's files."""
    from conformance.gen import core
    from conformance.regen import write_suite

    def f32_cases() -> list[Any]:  # one element type keeps the test fast; the seeding is the same for all
        return [d for d in core.elementwise_cases() if ".f32." in d.id]

    # the suite before the op existed: the fixture's op only adds its untabled cases, at the end
    before = write_suite([d for d in f32_cases() if FAKE not in d.id], root=tmp_path)
    assert before.added and not before.changed
    rows = list(core.FLOAT_ARITH.items())
    middle = len(rows) // 2
    monkeypatch.setattr(core, "FLOAT_ARITH", dict(rows[:middle] + [(FAKE, (core.NORMAL,))] + rows[middle:]))
    after = write_suite(f32_cases(), root=tmp_path, check=True)
    assert sorted(after.added) == [f"cases/core/{FAKE}.f32.{s}.ktir" for s in ("16", "4x8")] + [
        f"goldens/core/{FAKE}.f32.{s}.npz" for s in ("16", "4x8")], after.lines()
    # the only file both runs wrote that differs is the level's manifest, which lists every case
    assert [Path(p).name for p in after.changed] == ["core.toml"], after.lines()
    assert after.removed == []


def test_its_name_constant_is_generated(cosh: OpDef) -> None:
    """`python -m ktir.dialects.namegen --write` gives code its name as `Math.cosh`; until
    it is run, the check of the checked-in module reports it stale."""
    from ktir.dialects import namegen

    assert '    cosh: Final[str] = "math.cosh"\n' in namegen.render()
    assert namegen.main(["--check"]) == 1
