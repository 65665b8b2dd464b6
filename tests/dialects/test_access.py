"""Named operand/result/attribute access derived from the op definitions (ktir.dialects.access)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktir
from ktir.dialects.access import AccessError, named
from ktir.dialects.base import OpDef, Operand
from ktir.dialects.constraints import INDEX
from ktir.dialects.registry import OPS
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation
from ktir.verify import validate_text

ROOT = Path(__file__).resolve().parents[2]


def _op(text: str, name: str) -> Operation:
    module = ktir.parse(text)
    return next(op for op in module.walk() if op.name == name)


PAD = """
func.func @f(%t: tensor<4x4xf32>, %a: index, %b: index) -> tensor<?x?xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %t low[%a, 1] high[2, %b] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<4x4xf32> to tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}
"""


def test_segments_split_the_variadic_groups_by_name() -> None:
    v = named(_op(PAD, "tensor.pad"))
    assert v.operand("source") == "%t"
    assert v.operand_type("source") == ty.tensor((4, 4), ty.F32)
    assert v.operands("low") == ["%a"]
    assert v.operands("high") == ["%b"]
    assert v.result("result") == "%p"
    assert v.attr("static_low") == at.DenseArrayAttr(element_type=ty.I64, values=(ty.KDYNAMIC, 1))


def test_one_variadic_group_takes_what_the_others_leave() -> None:
    text = """
    func.func @f(%t: tensor<4x8xf32>, %i: index, %j: index) -> f32 {
      %x = tensor.extract %t[%i, %j] : tensor<4x8xf32>
      return %x : f32
    }"""
    v = named(_op(text, "tensor.extract"))
    assert v.operand("tensor") == "%t"
    assert v.operands("indices") == ["%i", "%j"]
    assert list(v.operand_positions("indices")) == [1, 2]


def test_optional_operand_present_or_absent() -> None:
    """No KTIR op declares an optional operand today; the rule is MLIR's, checked on a made-up op."""
    d = OpDef(name="test.opt", format="generic", summary="", operands=(
        Operand("a", INDEX), Operand("b", INDEX, optional=True), Operand("c", INDEX)))
    present = named(Operation(name="test.opt", operands=["%x", "%y", "%z"]), d)
    assert (present.operand("a"), present.operands("b"), present.operand("c")) == ("%x", ["%y"], "%z")
    absent = named(Operation(name="test.opt", operands=["%x", "%z"]), d)
    assert (absent.operands("b"), absent.has_operand("b"), absent.operand("c")) == ([], False, "%z")
    with pytest.raises(AccessError, match="do not fit a, b, c"):
        named(Operation(name="test.opt", operands=["%1", "%2", "%3", "%4"]), d).operands("b")


def test_unknown_names_and_bad_segments_are_errors_naming_the_op() -> None:
    op = _op(PAD, "tensor.pad")
    with pytest.raises(AccessError, match=r"tensor.pad declares no operand 'sources' \(operands: source, low, high\)"):
        named(op).operand("sources")
    with pytest.raises(AccessError, match="declares no attribute 'static_lo'"):
        named(op).attr("static_lo")
    with pytest.raises(AccessError, match=r"operand 'low' is variadic or optional: use operands\('low'\)"):
        named(op).operand("low")
    broken = op.model_copy(update={"attributes": {**op.attributes, "operandSegmentSizes": at.DenseArrayAttr(
        element_type=ty.I32, values=(1, 2, 2))}})
    with pytest.raises(AccessError, match=r"operandSegmentSizes \[1, 2, 2\] does not split 3 values"):
        named(broken).operands("low")
    missing = op.model_copy(update={"attributes": {k: v for k, v in op.attributes.items() if k != "operandSegmentSizes"}})
    with pytest.raises(AccessError, match="needs operandSegmentSizes"):
        named(missing).operands("low")
    with pytest.raises(AccessError, match="has no definition"):
        named(Operation(name="foo.bar"))


def test_fixed_operands_must_match_the_definition() -> None:
    with pytest.raises(AccessError, match="has 1 values where its definition declares 2"):
        named(Operation(name="arith.addf", operands=["%a"], operand_types=[ty.F32])).operand("lhs")


@pytest.mark.parametrize("folder", ["examples", "tests/corpus/kernels", "tests/corpus/upstream", "tests/corpus/rfc"])
def test_every_op_of_every_valid_file_decodes_under_its_definition(folder: str) -> None:
    """The definitions and the parser agree: every declared operand and result of every op in
    the valid files we have has a position."""
    checked = 0
    for path in sorted((ROOT / folder).rglob("*.ktir")):
        module, diagnostics = validate_text(path.read_text(), str(path))
        if module is None or any(d.severity == "error" for d in diagnostics):
            continue
        for op in module.walk():
            if op.name not in OPS:
                continue
            v = named(op)
            for o in v.opdef.operands:
                v.operand_positions(o.name)
            for r in v.opdef.results:
                v.result_positions(r.name)
            checked += 1
    assert checked > 0
