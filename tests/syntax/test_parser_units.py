"""Focused parser/printer behaviour: canonical spellings, warnings, errors, aliases."""

from __future__ import annotations

import pytest

import ktir
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.syntax.parser import parse


def roundtrip(text: str) -> str:
    module = ktir.parse(text)
    out = ktir.print_module(module)
    assert ktir.parse(out) == module
    return out


def test_legacy_spellings_print_canonically_with_warnings() -> None:
    src = """
func.func @k(%a: memref<4xf16, #ktdp.spyre_memory_space<LX, core = 3>>, %t: !ktdp.tile<4xindex>) {
  %x = ktdp.load %t : <4xindex> -> tensor<4xf16>
  return
}
"""
    module = ktir.parse(src, "k.ktir")
    out = ktir.print_module(module)
    assert "#ktdp.memory_space<ct_local, ct_id = 3>" in out
    assert "!ktdp.access_tile<4xindex>" in out and "!ktdp.tile<" not in out
    assert "spyre_memory_space" not in out
    messages = [w.message for w in module.warnings]
    assert len(messages) == 3
    assert all(w.severity == "warning" and w.file == "k.ktir" for w in module.warnings)
    # the short form warns at its own position
    assert any(w.line == 3 and w.column == 23 for w in module.warnings)


def test_generic_and_custom_forms_give_equal_ast() -> None:
    custom = ktir.parse("""
func.func @f(%a: f32, %b: f32) -> i1 {
  %c = arith.cmpf olt, %a, %b : f32
  return %c : i1
}""")
    generic = ktir.parse("""
"func.func"() <{function_type = (f32, f32) -> i1, sym_name = "f"}> ({
^bb0(%a: f32, %b: f32):
  %c = "arith.cmpf"(%a, %b) <{predicate = 4 : i64}> : (f32, f32) -> i1
  "func.return"(%c) : (i1) -> ()
}) : () -> ()""")
    assert custom == generic


def test_unknown_generic_op_round_trips() -> None:
    out = roundtrip('%r:2 = "acme.frob"(%a) <{k = 1 : i32}> ({\n^bb0(%x: f32):\n  "acme.done"() : () -> ()\n}) {tag = "t"} : (f32) -> (f32, i8)\n')
    assert '"acme.frob"(%a) <{k = 1 : i32}>' in out


def test_aliases_are_kept() -> None:
    out = roundtrip("""
#map = affine_map<(i, j)[s] -> (i * 4 + s, j floordiv 2)>
!tile = !ktdp.access_tile<4x4xindex>
func.func @f(%t: !tile) attributes {m = #map} { return }
""")
    assert out.startswith("#map = affine_map<(d0, d1)[s0] -> (d0 * 4 + s0, d1 floordiv 2)>\n!tile = !ktdp.access_tile<4x4xindex>")
    assert "%t: !tile" in out and "m = #map" in out


def test_float_literals_round_trip_exactly() -> None:
    module = ktir.parse("""
func.func @f() {
  %a = arith.constant 0.1 : f64
  %b = arith.constant 1.0e-300 : f64
  %c = arith.constant 0xFC00 : f16
  %d = arith.constant -2.5e+10 : f32
  return
}""")
    values = [op.attributes["value"] for op in module.walk() if op.name == "arith.constant"]
    assert isinstance(values[0], at.FloatAttr) and values[0].value == 0.1
    assert values[2] == at.FloatAttr(value=float("-inf"), type=ty.F16, bits=0xFC00)
    out = ktir.print_module(module)
    assert "0xFC00 : f16" in out and "1.0e-300 : f64" in out
    assert ktir.parse(out) == module


def test_result_groups_print_back() -> None:
    out = roundtrip("func.func @f() {\n  %i:2 = ktdp.get_compute_tile_id : index, index\n  %a, %b = ktdp.get_compute_tile_id : index, index\n  return\n}\n")
    assert "%i:2 = ktdp.get_compute_tile_id" in out and "%a, %b = ktdp.get_compute_tile_id" in out


def test_shapes_with_spaces_and_dynamic_dims() -> None:
    out = roundtrip("func.func @f(%t: !ktdp.access_tile<? x 4 x index>, %m: memref<?x?xf16, strided<[?, 1], offset: ?>>) { return }")
    assert "!ktdp.access_tile<?x4xindex>" in out
    assert "memref<?x?xf16, strided<[?, 1], offset: ?>>" in out


def test_keywords_are_identifiers_where_no_keyword_fits() -> None:
    out = roundtrip("func.func @f() attributes {sizes = 1, to = 2, dimensions = [3], index = 4} { return }")
    assert "{dimensions = [3], index = 4, sizes = 1, to = 2}" in out


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        ("func.func @f() {\n  %x = arith.addf %a %b : f32\n}", 2, 22, "expected ','"),
        ("func.func @f() {\n  %x = arith.constant 1 : tensor<4xfoo>\n}", 2, 36, "unexpected 'foo'"),
        ("func.func @f() {\n  %x = memref.dealloc %a : memref<4xf32>\n}", 2, 8, "unknown operation 'memref.dealloc'"),
        ("func.func @f() {\n  %x, %y = arith.addf %a, %a : f32\n}", 2, 3, "defines 1 result(s) but 2 name(s)"),
        ("func.func @f() {\n  return\n", 3, 1, "unexpected end of input"),
        ('func.func @f() attributes {s = "abc} { return }', 1, 32, "unexpected character"),
        ("#s = affine_set<(d0) : (d1 >= 0)>", 1, 25, "undeclared affine identifier 'd1'"),
        ("func.func @f() {\n  %x = arith.cmpi bogus, %a, %a : i32\n}", 2, 19, "unknown predicate 'bogus'"),
    ],
)
def test_syntax_errors_are_located(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(text, "bad.ktir")
    err = info.value
    assert fragment in err.message
    assert (err.line, err.column) == (line, col)
    assert err.diagnostics[0].file == "bad.ktir"


def test_comments_survive_formatting() -> None:
    src = """// file header
#m = affine_map<(d0) -> (d0)>  // trailing on an alias
func.func @f(%a: f32) -> f32 {
  // before the add
  %b = arith.addf %a, %a : f32  // after the add
  scf.for %i = %c0 to %c1 step %c1 {
    // inside the loop
    %x = arith.negf %a : f32
  }
  return %b : f32
}
// the end
"""
    out = ktir.print_module(ktir.parse(src))
    for comment in ("// file header", "// trailing on an alias", "// before the add", "// inside the loop", "// the end"):
        assert comment in out
    assert "  %b = arith.addf %a, %a : f32  // after the add\n" in out
    assert "    // inside the loop\n    %x = arith.negf" in out
    assert ktir.print_module(ktir.parse(out)) == out


def test_mlir_spellings_found_by_the_interpreter_work() -> None:
    # `-> (T1, T2)` results and an omitted `ins(...)` on linalg.generic, as MLIR prints them
    roundtrip("""
#m = affine_map<(d0) -> (d0)>
func.func @f(%o: tensor<4xf32>, %p: tensor<4xi32>) {
  %a, %b = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} outs(%o, %p : tensor<4xf32>, tensor<4xi32>) {
  ^bb0(%x: f32, %y: i32):
    linalg.yield %x, %y : f32, i32
  } -> (tensor<4xf32>, tensor<4xi32>)
  return
}
""")
    # an alias naming an affine map in a memref type is its layout, not its memory space
    module = ktir.parse("#tr = affine_map<(d0, d1) -> (d1, d0)>\nfunc.func @g(%m: memref<4x4xf32, #tr>) { return }")
    arg = module.functions()[0].regions[0].blocks[0].arguments[0].type
    assert isinstance(arg, ty.MemRefType) and arg.layout == at.AttrAliasRef(name="tr") and arg.memory_space is None


def test_hex_in_float_dense_literal_is_a_bit_pattern() -> None:
    src = """func.func @f() {
  %a = arith.constant dense<0x7F800000> : tensor<4xf32>
  %b = arith.constant dense<[0x3C00, 0x4000, 0xFC00]> : tensor<3xf16>
  %c = arith.constant dense<0x10> : tensor<2xi32>
  func.return
}
"""
    module = ktir.parse(src)
    values = [op.attributes["value"] for op in module.walk() if op.name == "arith.constant"]
    assert values[0].values == float("inf")
    assert values[1].values == (1.0, 2.0, float("-inf"))
    assert values[2].values == 16 and isinstance(values[2].values, int)
    out = roundtrip(src)
    # inf has no decimal literal: it prints as the element type's bit pattern, as MLIR does
    assert "dense<0x7F800000> : tensor<4xf32>" in out
    assert "dense<[1.0, 2.0, 0xFC00]> : tensor<3xf16>" in out
    assert "dense<16> : tensor<2xi32>" in out


def test_blank_lines_between_ops_are_kept_once() -> None:
    src = """
// header

#m = affine_map<(d0) -> (d0)>


func.func @f(%a: index) {
  %c = arith.constant 1 : index

  // second group
  %d = arith.addi %a, %c : index
  scf.for %i = %c to %d step %c {
    %e = arith.addi %i, %c : index

  }

  func.return
}

"""
    out = roundtrip(src)
    assert out == """// header

#m = affine_map<(d0) -> (d0)>

func.func @f(%a: index) {
  %c = arith.constant 1 : index

  // second group
  %d = arith.addi %a, %c : index
  scf.for %i = %c to %d step %c {
    %e = arith.addi %i, %c : index
  }

  func.return
}
"""
    assert ktir.print_module(ktir.parse(out)) == out


@pytest.mark.parametrize(
    "text",
    [
        'func.func @k(%m: memref<4x4xf32,\n "L1">) {\n  func.return\n}\n',
        'func.func @k() {\n  %0 = "x.y"() {a = #foo.bar<1,\n 2>} : () -> i32\n  func.return\n}\n',
    ],
)
def test_a_token_over_several_lines_moves_the_later_locations(text: str) -> None:
    """A type or dialect attribute taken whole by the grammar's lexer may hold newlines:
    the ops after it are on the lines they are written on."""
    ret = [op for op in parse(text, fast=False).walk() if op.name == "func.return"]
    assert ret[0].loc is not None and ret[0].loc.line == text.split("\n").index("  func.return") + 1


@pytest.mark.parametrize("kind", ["f16", "bf16", "f32", "f64"])
def test_hex_floats_read_without_numpy_equal_numpys_reading(kind: str) -> None:
    """A hex float of f16/bf16/f32/f64 is read with the standard library (no numpy import
    in a cold parse); the value is numpy's (ktir.ir.floats.float_from_bits), bit for bit,
    on every class of pattern: zeros, subnormals, normals, infinities, NaNs, both signs."""
    import random
    import struct

    from hypothesis import given
    from hypothesis import strategies as st

    from ktir.ir.floats import float_from_bits
    from ktir.syntax.parser import _float_from_bits

    t = ty.FloatType(kind=kind)
    width = t.width
    exponent, mantissa = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}[kind]
    rng = random.Random(kind)
    patterns = {0, 1, (1 << mantissa) - 1, 1 << mantissa, (1 << width) - 1}
    for e in (0, 1, (1 << exponent) - 2, (1 << exponent) - 1):
        for m in (0, 1, 1 << (mantissa - 1), (1 << mantissa) - 1, rng.getrandbits(mantissa)):
            patterns.update({(e << mantissa) | m, (1 << (width - 1)) | (e << mantissa) | m})

    def same(bits: int) -> None:
        ours, numpys = _float_from_bits(bits, t), float_from_bits(bits, t)
        assert struct.pack("<d", ours) == struct.pack("<d", numpys), hex(bits)

    for bits in sorted(patterns):
        same(bits)
    given(st.integers(0, (1 << width) - 1))(same)()
