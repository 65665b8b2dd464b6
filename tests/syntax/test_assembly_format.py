"""The declarative assembly formats (ktir.dialects.formats): grammar, parse and print
derive from one description per format, and the checked-in grammar agrees with them."""

from __future__ import annotations

import pytest

from ktir.dialects.formats import AssemblyFormat
from ktir.dialects.registry import OPS
from ktir.syntax import assembly
from ktir.syntax.parser import parse
from ktir.syntax.printer import print_module


def test_checked_in_grammar_matches_the_descriptions() -> None:
    current = assembly.grammar_path().read_text(encoding="utf-8")
    assert assembly.with_generated_section(current) == current, "run python -m ktir.syntax.assembly --write-grammar"
    assert assembly.main(["--check"]) == 0


def test_every_format_is_declarative_or_listed_as_hand_written() -> None:
    used = {op.format for op in OPS.values()}
    declarative = set(assembly.formats())
    hand_written = set(assembly.HAND_WRITTEN)
    assert not declarative & hand_written
    assert used == declarative | hand_written
    assert len(used) == 54


def test_a_stale_grammar_is_reported(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    grammar = assembly.grammar_path().read_text(encoding="utf-8")
    stale = grammar.replace("load_op: OP_LOAD value", "load_op: OP_LOAD value value", 1)
    path = tmp_path / "ktir.lark"
    path.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(assembly, "grammar_path", lambda: path)
    assert assembly.main(["--check"]) == 1
    assert assembly.main(["--write-grammar"]) == 0
    assert path.read_text(encoding="utf-8") == grammar


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (AssemblyFormat("$x custom<Nope>() attr-dict", operands=("x",), types=(("x", "index"),)), "unknown directive"),
        (AssemblyFormat("$x attr-dict", operands=("x",)), "neither written nor derived"),
        (AssemblyFormat("$y attr-dict"), "names no operand"),
        (AssemblyFormat("($x `:` type($x))? attr-dict", operands=("x*",)), "anchor"),
        (AssemblyFormat("$a $b attr-dict", operands=("a*", "b*"), types=(("a", "index"), ("b", "index"))), "segments"),
        (AssemblyFormat("$x attr-dict", operands=("x",), types=(("x", "f32"),)), "type rule"),
    ],
)
def test_bad_descriptions_are_refused(spec: AssemblyFormat, message: str) -> None:
    with pytest.raises(assembly.FormatError, match=message):
        assembly.read("TEST", spec)


# One line per declarative format, optional groups both present and absent, in canonical
# form: parse then print gives the same text back.
CANONICAL = """\
func.func @f(%a: f32, %i: index, %t: tensor<4x?xf32>, %m: memref<8x8xf32>, %s: tensor<2xindex>, %n: i32) {
  %0 = func.call @g(%a) : (f32) -> f32
  func.call @h() : () -> ()
  %1 = math.exp %a : f32
  %2 = arith.addf %a, %1 fastmath<fast> : f32
  %3 = arith.addi %n, %n overflow<nsw> {tag} : i32
  %4 = math.fma %a, %a, %a : f32
  %5 = arith.extf %a : f32 to f64
  %6 = arith.cmpf olt, %a, %2 : f32
  %7 = arith.select %6, %a, %2 : f32
  %8 = arith.cmpi slt, %t, %t : tensor<4x?xf32>
  %9 = arith.select %8, %t, %t : tensor<4x?xi1>, tensor<4x?xf32>
  %10:2 = ktdp.get_compute_tile_id : index, index
  %11 = ktdp.construct_memory_view %i, sizes: [8, %i], strides: [%i, 1] {memory_space = #ktdp.memory_space<global>} : memref<8x?xf32>
  %12 = ktdp.construct_distributed_memory_view(%m, %m : memref<8x8xf32>, memref<8x8xf32>) : memref<16x8xf32>
  %13 = ktdp.construct_distributed_memory_view() : memref<16x8xf32>
  %14 = linalg.index 1 : index
  %15 = tensor.empty(%i) : tensor<4x?xf32>
  %16 = tensor.empty() : tensor<4x4xf32>
  %17 = tensor.splat %a[%i] : tensor<4x?xf32>
  %18 = tensor.splat %a : tensor<4x4xf32>
  %19 = tensor.extract %t[%i, %i] : tensor<4x?xf32>
  %20 = tensor.insert %a into %t[%i, %i] : tensor<4x?xf32>
  memref.store %a, %m[%i, %i] : memref<8x8xf32>
  %21 = memref.load %m[] : memref<8x8xf32>
  %22 = tensor.extract_slice %t[0, %i] [2, 2] [1, 1] : tensor<4x?xf32> to tensor<2x2xf32>
  %23 = tensor.insert_slice %22 into %t[%i, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<4x?xf32>
  %24 = tensor.expand_shape %16 [[0], [1, 2]] output_shape [4, 2, 2] : tensor<4x4xf32> into tensor<4x2x2xf32>
  %25 = tensor.collapse_shape %24 [[0, 1, 2]] : tensor<4x2x2xf32> into tensor<16xf32>
  %26 = tensor.reshape %25(%s) : (tensor<16xf32>, tensor<2xindex>) -> tensor<4x4xf32>
  %27 = tensor.concat dim(0) %16, %26 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %28 = tensor.dim %t, %i : tensor<4x?xf32>
  %29 = memref.reinterpret_cast %m to offset: [0], sizes: [%i, 8], strides: [8, 1] : memref<8x8xf32> to memref<?x8xf32>
  func.return
}
"""


def test_declarative_formats_print_what_they_parse() -> None:
    assert print_module(parse(CANONICAL, fast=False)) == CANONICAL
    assert print_module(parse(CANONICAL)) == CANONICAL


def test_condition_and_store_and_load() -> None:
    text = """\
func.func @f(%c: i1, %a: f32, %t: !ktdp.access_tile<4xindex>, %x: tensor<4xf32>) {
  %0 = scf.while (%v = %a) : (f32) -> f32 {
    scf.condition(%c) %v : f32
  } do {
  ^bb0(%w: f32):
    scf.yield %w : f32
  }
  scf.while (%v = %a) : (f32) -> () {
    scf.condition(%c)
  } do {
    scf.yield
  }
  %2 = ktdp.load %t : !ktdp.access_tile<4xindex> -> tensor<4xf32>
  ktdp.store %x, %t : tensor<4xf32>, !ktdp.access_tile<4xindex>
  func.return
}
"""
    assert print_module(parse(text, fast=False)) == text


def test_types_other_than_the_implied_ones_print_in_generic_form() -> None:
    from ktir.ir import types as ty
    from ktir.ir.operation import Operation
    from ktir.syntax.printer import print_op

    f32, f64 = ty.FloatType(kind="f32"), ty.FloatType(kind="f64")
    fits = Operation(
        name="arith.addf", operands=["%a", "%b"], operand_types=[f32, f32], result_types=[f32], results=["%c"]
    )
    assert print_op(fits) == "%c = arith.addf %a, %b : f32"
    odd = Operation(
        name="arith.addf", operands=["%a", "%b"], operand_types=[f32, f64], result_types=[f32], results=["%c"]
    )
    assert print_op(odd).startswith('%c = "arith.addf"(%a, %b)')
    index_cmp = Operation(
        name="arith.cmpi",
        operands=["%a", "%b"],
        operand_types=[ty.INDEX, ty.INDEX],
        result_types=[ty.I1],
        results=["%c"],
    )
    assert print_op(index_cmp).startswith('%c = "arith.cmpi"(%a, %b)')  # no predicate: generic


def test_count_mismatches_are_reported_at_the_op() -> None:
    from ktir.syntax.diagnostics import ParseError

    text = "func.func @f(%m: memref<8xf32>) {\n  %v = ktdp.construct_distributed_memory_view(%m, %m : memref<8xf32>) : memref<16xf32>\n  func.return\n}\n"
    with pytest.raises(ParseError, match=r"2 value\(s\) but 1 type\(s\)") as info:
        parse(text)
    assert (info.value.diagnostics[0].line, info.value.diagnostics[0].column) == (2, 8)
    text = "func.func @f(%a: f32) {\n  func.call @g(%a) : (f32, f32) -> ()\n  func.return\n}\n"
    with pytest.raises(ParseError, match=r"has 1 operand\(s\) but its type lists 2"):
        parse(text)


def test_a_description_whose_spacing_depends_on_an_optional_element_is_refused() -> None:
    from ktir.syntax.printer import _printer_source

    spec = AssemblyFormat("`(` $xs `:` attr-dict", operands=("xs*",), types=(("xs", "index"),))
    with pytest.raises(assembly.FormatError, match="spacing"):
        _printer_source(assembly.read("TEST", spec))


def test_generated_code_is_readable() -> None:
    from ktir.syntax.parser import callback_source
    from ktir.syntax.printer import printer_source

    assert "def binary_op(self, c):" in callback_source("BINARY")
    assert "out += ', ' + operands[1]" in printer_source("BINARY")
