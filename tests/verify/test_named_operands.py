"""Rules reach operands by name; an op whose operands its definition cannot split is reported."""

from __future__ import annotations

from ktir.verify import validate_text

FOR = """
func.func @f(%a: index) {
  %c1 = arith.constant 1 : index
  "scf.for"(%a, %a, %c1) ({
  ^bb0(%i: index):
    scf.yield
  }) {operandSegmentSizes = array<i32: SIZES>} : (index, index, index) -> ()
  return
}
"""


def _errors(text: str) -> list[str]:
    _, diagnostics = validate_text(text)
    return [d.id for d in diagnostics if d.severity == "error"]


def test_segment_sizes_that_do_not_split_the_operands_are_op_operands() -> None:
    assert _errors(FOR.replace("SIZES", "1, 1, 1, 5")) == ["op.operands"]


def test_segment_sizes_that_split_the_operands_are_accepted() -> None:
    assert _errors(FOR.replace("SIZES", "1, 1, 1, 0")) == []
