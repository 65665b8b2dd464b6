"""Printer and parser defects found by reading KTIR with MLIR 22's own parser (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktir

ROOT = Path(__file__).resolve().parents[2]

_BOOL_ARRAY = """func.func @f() {
  "test.op"() {flags = array<i1: true, false, true>} : () -> ()
  func.return
}
"""

_TWO_RESULTS = """#id = affine_map<(d0) -> (d0)>
func.func @f(%a: tensor<4xf32>, %e: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e, %e : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: f32, %o1: f32, %o2: f32):
    linalg.yield %x, %x : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
"""


def test_bool_dense_array_prints_true_false() -> None:
    # MLIR reads `array<i1: 1, 0>` as an error: i1 elements are spelled true/false
    assert ktir.print_module(ktir.parse(_BOOL_ARRAY)) == _BOOL_ARRAY


def test_multi_result_linalg_generic_prints_parenthesised_types() -> None:
    assert ktir.print_module(ktir.parse(_TWO_RESULTS)) == _TWO_RESULTS


def test_multi_result_without_parentheses_is_rejected() -> None:
    # MLIR's optional arrow type list: several result types need parentheses
    bad = _TWO_RESULTS.replace("} -> (tensor<4xf32>, tensor<4xf32>)", "} -> tensor<4xf32>, tensor<4xf32>")
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(bad)
    assert (info.value.line, info.value.column) == (6, 21)  # the comma after the first type


def test_single_result_may_be_parenthesised() -> None:
    text = _TWO_RESULTS.replace("outs(%e, %e : tensor<4xf32>, tensor<4xf32>)", "outs(%e : tensor<4xf32>)")
    text = text.replace("%r:2 =", "%r =").replace("%o2: f32", "").replace("%o1: f32, ", "%o1: f32")
    text = text.replace("linalg.yield %x, %x : f32, f32", "linalg.yield %x : f32")
    text = text.replace("} -> (tensor<4xf32>, tensor<4xf32>)", "} -> (tensor<4xf32>)")
    text = text.replace("func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>", "func.return %r, %r : tensor<4xf32>, tensor<4xf32>")
    module = ktir.parse(text)
    assert "} -> tensor<4xf32>\n" in ktir.print_module(module)


def test_rope_example_uses_the_parenthesised_form() -> None:
    source = (ROOT / "examples" / "rope.ktir").read_text()
    assert "} -> (tensor<32x4x32xf32>, tensor<32x4x32xf32>)" in source
    assert ktir.print_module(ktir.parse(source)) == source


@pytest.mark.parametrize("ct_id", [str(1 << 64), str(1 << 63), "9" * 5000, "0" * 30 + "7"])
def test_a_string_memory_space_round_trips_whatever_its_ct_id(ct_id: str) -> None:
    """A ct_id past 64 bits stays the string it was written as (the custom form would refuse
    it on re-reading: fuzz seed 41204, input 98286) and the verifier refuses it."""
    from ktir.verify import validate_text

    text = f'func.func @f(%a: memref<64xf16, "#ktdp.memory_space<ct_local, ct_id = {ct_id}>">) {{\n  func.return\n}}\n'
    module = ktir.parse(text)
    again = ktir.parse(ktir.print_module(module))
    assert again == module
    _, diagnostics = validate_text(text, "f.ktir")
    errors = [d.id for d in diagnostics if d.severity == "error"]
    assert errors == ([] if ct_id.lstrip("0") == "7" else ["type.memory_space"])


@pytest.mark.parametrize("flags", ["#arith.fastmath<>", "#arith.fastmath< >", "#arith.overflow<>"])
def test_an_empty_arith_flag_property_round_trips(flags: str) -> None:
    """An empty flag list in MLIR's generic form was read as the enum value '' (the custom
    form then printed `{fastmath = #arith.fastmath<>}`, which reads back as a dialect
    attribute: fuzz seed 55821, input 159197); it stays the dialect attribute it is."""
    from ktir.syntax.generic_printer import print_generic

    key = "fastmath" if "fastmath" in flags else "overflowFlags"
    op = "arith.mulf" if key == "fastmath" else "arith.muli"
    ty = "f32" if key == "fastmath" else "i32"
    text = (f"func.func @f(%a: {ty}) -> {ty} {{\n  %0 = \"{op}\"(%a, %a) <{{{key} = {flags}}}> : ({ty}, {ty}) -> {ty}\n"
            f"  func.return %0 : {ty}\n}}\n")
    module = ktir.parse(text)
    assert ktir.parse(ktir.print_module(module)) == module
    assert ktir.parse(print_generic(module)) == module


@pytest.mark.parametrize("terminator", ["scf.yield", "ktdp.region_terminator", "linalg.yield"])
def test_a_bare_terminator_before_another_op_round_trips(terminator: str) -> None:
    """A terminator without operands in the middle of a block (invalid, but printable): in
    custom form the next line's `%x` read as its operand (fuzz CI seed 18, input 5206); it
    prints generic there."""
    from ktir.builder import Builder
    from ktir.ir import types as ty

    b = Builder()
    with b.func("f", [("a", ty.INDEX)]):
        b.create(terminator, [], [])
        b.constant(1, ty.INDEX)
        b.func_return()
    module = b.module
    again = ktir.parse(ktir.print_module(module))
    assert ktir.print_module(again) == ktir.print_module(module)
    assert [op.name for op in again.operations[0].regions[0].blocks[0].operations][:2] == [terminator, "arith.constant"]


def test_a_bare_terminator_before_another_top_level_op_round_trips() -> None:
    """At the top level too (fuzz seed 146966, input 45204: `func.return`, an alias line, then
    `%x0 = ktdp.load ...`; the printer puts the aliases first, so the load's `%x0` read as the
    return's operand): the terminator prints generic."""
    from ktir.builder import Builder
    from ktir.ir import types as ty

    b = Builder()
    with b.func("f", []):
        b.constant(1, ty.INDEX)
        b.func_return()
    ops = b.module.operations[0].regions[0].blocks[0].operations
    module = b.module.model_copy(update={"operations": [ops[1], ops[0]]})
    again = ktir.parse(ktir.print_module(module))
    assert again == module
    assert ktir.print_module(again) == ktir.print_module(module)
