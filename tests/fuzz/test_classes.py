"""One plain example of each failure class the fuzzer found, fixed in the parser, the
printer or the verifier (issue 18). A replacement parser front end must keep these."""

from __future__ import annotations

import pytest

import ktir
from ktir.verify import verify


def _round_trips(text: str) -> str:
    module = ktir.parse(text)
    verify(module)  # must not raise, whatever it reports
    printed = ktir.print_module(module)
    again = ktir.parse(printed)
    assert again == module, printed
    assert ktir.print_module(again) == printed
    return printed


# ---------------------------------------------------------------- parser


def test_a_huge_result_group_is_an_error_not_a_hang() -> None:
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse("func.func @f(%a: f32) {\n  %r:99999999999999999999 = arith.addf %a, %a : f32\n  return\n}\n")
    assert (info.value.line, info.value.column) == (2, 3)
    assert "defines 1 result(s) but 99999999999999999999 name(s)" in info.value.message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("func.func @f(%a: i32) {\n^bb0(%b: f16):\n  return\n}\n", (2, 1)),
        ("func.func @f(%n: index) {\n  scf.for %i = %n to %n step %n {\n  ^bb0(%j: index):\n  }\n  return\n}\n", (3, 3)),
    ],
    ids=["func", "scf.for"],
)
def test_a_labelled_entry_block_where_the_header_gives_arguments_is_an_error(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(text)
    assert (info.value.line, info.value.column) == where
    assert "no label" in info.value.message


def test_a_labelled_entry_block_without_header_arguments_is_fine() -> None:
    _round_trips("func.func @f() {\n^bb0:\n  return\n}\n")


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("func.func @f(%a: vector<?x4xf32>) {\n  return\n}\n", (1, 18), "vector dimensions must be static"),
        ('func.func @f() {\n  %c = arith.constant "s"\n  return\n}\n', (2, 8), "arith.constant needs a typed value"),
    ],
)
def test_errors_raised_while_building_the_ast_are_located(text: str, where: tuple[int, int], message: str) -> None:
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(text)
    assert (info.value.line, info.value.column) == where and info.value.message == message


# ---------------------------------------------------------------- printer: generic when custom cannot say it


GENERIC_ONLY = {
    # operand types the custom form implies from one type
    "mixed-operand-types": '%r = "arith.addf"(%a, %h) : (f32, f16) -> f32',
    "cmp-operand-types": '%r = "arith.cmpf"(%a, %h) {predicate = 1 : i64} : (f32, f16) -> i1',
    "select-value-types": '%r = "arith.select"(%c, %a, %h) : (i1, f32, f16) -> f32',
    "if-condition-type": '"scf.if"(%i) ({\n    "scf.yield"() : () -> ()\n  }, {\n  }) : (i32) -> ()',
    "extract-result-type": '%r = "tensor.extract"(%t, %n) : (tensor<4xf32>, index) -> f16',
    "insert-value-type": '%r = "tensor.insert"(%h, %t, %n) : (f16, tensor<4xf32>, index) -> tensor<4xf32>',
    "splat-value-type": '%r = "tensor.splat"(%h) : (f16) -> tensor<4xf32>',
    # counts no custom form spells
    "too-few-operands": '%r = "arith.addf"(%a) : (f32) -> f32',
    "too-many-results": '%r:2 = "arith.addf"(%a, %a) : (f32, f32) -> (f32, f32)',
    "no-tile-id-result": '"ktdp.get_compute_tile_id"() : () -> ()',
    "parallel-segments": '"scf.parallel"(%n, %n, %n, %n) ({\n  ^bb0(%i: index):\n    scf.reduce\n  }) {operandSegmentSizes = array<i32: 1, 2, 1, 0>} : (index, index, index, index) -> ()',
    "forall-static-bounds": '"scf.forall"() ({\n  ^bb0(%i: index):\n    scf.forall.in_parallel {\n    }\n  }) {operandSegmentSizes = array<i32: 0, 0, 0, 0>, staticLowerBound = array<i64: 0, 0>, staticStep = array<i64: 1>, staticUpperBound = array<i64: 4>} : () -> ()',
    # regions the custom form would change on reading back
    "if-without-blocks": '"scf.if"(%c) ({\n  }, {\n  }) : (i1) -> ()',
    "for-without-terminator": '"scf.for"(%n, %n, %n) ({\n  ^bb0(%i: index):\n    %x = "arith.addi"(%i, %i) : (index, index) -> index\n  }) : (index, index, index) -> ()',
    "empty-entry-then-block": '"scf.execute_region"() ({\n  ^bb0:\n  ^bb1:\n    "scf.yield"() : () -> ()\n  }) : () -> ()',
}


@pytest.mark.parametrize("body", GENERIC_ONLY.values(), ids=GENERIC_ONLY.keys())
def test_ops_a_custom_form_cannot_carry_print_generic_and_round_trip(body: str) -> None:
    text = (
        "func.func @f(%a: f32, %h: f16, %c: i1, %i: i32, %n: index, %t: tensor<4xf32>) {\n"
        f"  {body}\n  return\n}}\n"
    )
    printed = _round_trips(text)
    op_name = body.split('"')[1]
    assert f'"{op_name}"(' in printed, printed


def test_a_function_whose_empty_entry_block_precedes_another_block_prints_generic() -> None:
    text = (
        '"func.func"() ({\n^bb0(%a: i32):\n^bb1:\n  "func.return"() : () -> ()\n}) '
        '{function_type = (i32) -> (), sym_name = "f"} : () -> ()\n'
    )
    assert '"func.func"' in _round_trips(text)


def test_consistent_ops_keep_their_custom_form() -> None:
    printed = _round_trips(
        "func.func @f(%a: f32, %c: i1) {\n  %r = arith.addf %a, %a : f32\n  arith.addf %a, %a : f32\n"
        "  scf.if %c {\n  }\n  return\n}\n"
    )
    assert '"' not in printed


# ---------------------------------------------------------------- verifier: ill-formed counts are notes, not crashes


def test_access_tile_on_a_view_of_another_rank_is_reported_not_raised() -> None:
    text = (
        "func.func @f(%p: index) {\n  %c0 = arith.constant 0 : index\n"
        "  %v = ktdp.construct_memory_view %p, sizes: [4, 8], strides: [8, 1] {coordinate_set = affine_set<(d0) : (d0 >= 0)>,"
        " memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>\n"
        "  %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_order = affine_map<(d0, d1) -> (d0, d1)>,"
        " access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>}"
        " : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>\n  return\n}\n"
    )
    diagnostics = verify(ktir.parse(text))
    assert "ktdp.construct_memory_view.C5" in {d.id for d in diagnostics}


# ---------------------------------------------------------------- found by the 200,000-input run


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("1.0e+99999 : f32", "floating-point literal 1.0e+99999 is out of range"),
        ("0x1FF800000 : f32", "has more than the 32 bits of f32"),
        ("99999999999999999999" * 20 + " : f32", "too large for a floating-point value"),
    ],
    ids=["decimal-overflow", "hex-too-wide", "integer-too-large"],
)
def test_float_literals_out_of_range_are_located_errors(literal: str, message: str) -> None:
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(f"func.func @f() {{\n  %c = arith.constant {literal}\n  return\n}}\n")
    assert info.value.line == 2 and info.value.column >= 1 and message in info.value.message


def test_forall_with_short_segment_sizes_is_reported_not_raised() -> None:
    text = (
        'func.func @f() {\n  "scf.forall"() ({\n  ^bb0(%i: index):\n    scf.forall.in_parallel {\n    }\n  })'
        " {operandSegmentSizes = array<i32: 0, 0>, staticLowerBound = array<i64: 0>, staticStep = array<i64: 1>,"
        " staticUpperBound = array<i64: 4>} : () -> ()\n  return\n}\n"
    )
    _round_trips(text)


def test_the_interpreter_runs_ops_with_unnamed_results() -> None:
    import numpy as np

    import reference_interp

    module = ktir.parse(
        "func.func @k(%a: memref<4xf32>) {\n  arith.constant 1.0 : f32\n  %c0 = arith.constant 0 : index\n"
        "  %x = memref.load %a[%c0] : memref<4xf32>\n  return\n}\n"
    )
    reference_interp.run(module, None, {"a": np.zeros(4, np.float32)})
