"""Each op form the fast path reads is taken by it (does not fall back to the grammar), and
read as the grammar reads it. A form whose reader is removed fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ktir.syntax import fastparse
from ktir.syntax import parser as p
from ktir.syntax.diagnostics import ParseError

try:  # tests/ as a package, or as a rootdir-relative directory (pytest's default)
    from .test_fastparse_equivalence import SETTINGS, _mutate, check, fast_only
except ImportError:
    from test_fastparse_equivalence import SETTINGS, _mutate, check, fast_only  # type: ignore[no-redef]


ROOT = Path(__file__).resolve().parents[2]


def _kernel(body: str, params: str = "%t: tensor<4x8xf32>, %i: index, %c: i1") -> str:
    lines = "\n".join("  " + line for line in body.strip().split("\n"))
    return f"func.func @k({params}) {{\n{lines}\n  func.return\n}}\n"


FORMS = {
    # declarative formats, read from their descriptions (ktir.syntax.assembly)
    "linalg.index": """
%e = tensor.empty() : tensor<4x8xf32>
%g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x8xf32>) {
^bb0(%o: f32):
  %r = linalg.index 1 : index
  %x = arith.index_cast %r : index to i32
  %f = arith.sitofp %x : i32 to f32
  linalg.yield %f : f32
} -> tensor<4x8xf32>""",
    "tensor.extract_slice": "%s = tensor.extract_slice %t[0, %i] [2, 4] [1, 1] : tensor<4x8xf32> to tensor<2x4xf32>",
    "tensor.insert_slice": """
%s = tensor.extract_slice %t[0, 0] [2, 4] [1, 1] : tensor<4x8xf32> to tensor<2x4xf32>
%u = tensor.insert_slice %s into %t[2, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x8xf32>""",
    "tensor.collapse_shape": "%f = tensor.collapse_shape %t [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>",
    "tensor.expand_shape": "%f = tensor.expand_shape %t [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>",
    "tensor.splat": "%z = arith.constant 0.0 : f32\n%s = tensor.splat %z : tensor<4x8xf32>",
    "tensor.insert": "%z = arith.constant 0.0 : f32\n%u = tensor.insert %z into %t[%i, %i] : tensor<4x8xf32>",
    "tensor.dim": "%d = tensor.dim %t, %i : tensor<4x8xf32>",
    "tensor.reshape": """
%sh = arith.constant dense<[32]> : tensor<1xindex>
%r = tensor.reshape %t(%sh) : (tensor<4x8xf32>, tensor<1xindex>) -> tensor<32xf32>""",
    "tensor.concat": "%r = tensor.concat dim(0) %t, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>",
    "memref.reinterpret_cast": (
        "%r = memref.reinterpret_cast %m to offset: [0], sizes: [8, 4], strides: [4, 1] : memref<4x8xf32> to memref<8x4xf32>",
        "%m: memref<4x8xf32>",
    ),
    # hand-written readers
    "scf.while + scf.condition": """
%c0 = arith.constant 0 : index
%c4 = arith.constant 4 : index
%r = scf.while (%k = %c0) : (index) -> index {
  %go = arith.cmpi slt, %k, %c4 : index
  scf.condition(%go) %k : index
} do {
^bb0(%n: index):
  %c1 = arith.constant 1 : index
  %n1 = arith.addi %n, %c1 : index
  scf.yield %n1 : index
}""",
    "scf.parallel + scf.reduce": """
%c0 = arith.constant 0 : index
%c1 = arith.constant 1 : index
%c4 = arith.constant 4 : index
%z = arith.constant 0.0 : f32
%s = scf.parallel (%a) = (%c0) to (%c4) step (%c1) init (%z) -> f32 {
  %x = tensor.extract %t[%a, %c0] : tensor<4x8xf32>
  scf.reduce(%x : f32) {
  ^bb0(%l: f32, %r: f32):
    %y = arith.addf %l, %r : f32
    scf.reduce.return %y : f32
  }
}""",
    "scf.forall + scf.forall.in_parallel": """
%f = scf.forall (%a) in (2) shared_outs(%o = %t) -> (tensor<4x8xf32>) {
  %s = tensor.extract_slice %t[%a, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  scf.forall.in_parallel {
    tensor.parallel_insert_slice %s into %o[%a, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  }
}""",
    "scf.execute_region": """
%w = scf.execute_region -> tensor<4x8xf32> {
  %h = arith.addf %t, %t : tensor<4x8xf32>
  scf.yield %h : tensor<4x8xf32>
}""",
    "tensor.generate": """
%g = tensor.generate {
^bb0(%a: index, %b: index):
  %z = arith.constant 1.0 : f32
  tensor.yield %z : f32
} : tensor<4x8xf32>""",
    "tensor.pad": """
%z = arith.constant 0.0 : f32
%q = tensor.pad %t low[1, 0] high[1, 0] {
^bb0(%a: index, %b: index):
  tensor.yield %z : f32
} : tensor<4x8xf32> to tensor<6x8xf32>""",
    "memref strided layout": (
        "%s = memref.subview %m[2, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 16>>\n"
        "%d = memref.subview %m[%i, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: ?>>",
        "%m: memref<4x8xf32>, %i: index",
    ),
    # legacy type spellings, read with their warnings
    "legacy !ktdp.tile": (
        "%x = ktdp.load %a : !ktdp.tile<4x8xindex> -> tensor<4x8xf32>",
        "%a: !ktdp.tile<4x8xindex>",
    ),
    "short access tile": (
        "%x = ktdp.load %a : <4x?xindex> -> tensor<4x8xf32>\nktdp.store %x, %a : tensor<4x8xf32>, <4x?xindex>",
        "%a: !ktdp.access_tile<4x?xindex>",
    ),
    "short runtime_arg": (
        "%v = ktdp.runtime_arg_extract value from %n : <index, granularity=4> -> index",
        "%n: !ktdp.runtime_arg<index, granularity=4>",
    ),
    "generic form": '%s = "arith.addf"(%t, %t) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>\n"test.op"() : () -> ()',
    "short access tile without a shape": (
        "%v = ktdp.runtime_arg_extract value from %n : <index> -> index",
        "%n: !ktdp.runtime_arg<index>",
    ),
    # attributes of MLIR's generic form
    "function type attribute": '"test.op"() <{t = (f32, index) -> f32, u = () -> (index, i1 {x}), v = (tensor<4xf32>) -> ()}> : () -> ()',
    "dense array attribute": (
        '"test.op"(%i) {operandSegmentSizes = array<i32: 1, 0>, f = array<f32: 1.5, -2.0, 3>,'
        " b = array<i1: true, false>, n = array<i64: -4>, e = array<i64>} : (index) -> ()"
    ),
    "dense_resource attribute": '"test.op"() {r = dense_resource<blob1> : tensor<4xf32>} : () -> ()',
    # types whose text the scan leaves in pieces (a string in it): read whole, as the lexer reads them
    "memref memory space string": (
        '%b = memref.alloc() : memref<f32, "L1">\n'
        '%c = memref.alloc() : memref<f16, strided<[], offset: 4>,\t"L1">\n'
        '%v = memref.load %b[] : memref<f32, "L1">',
        "",
    ),
    "shaped types with a string": (
        '%b = memref.alloc(%i) : memref<?x4xf32, "L1">\n'
        '%c = memref.alloc() : memref<8xf16, strided<[1], offset: ?>, "L1">\n'
        '%d = memref.cast %c : memref<8xf16, strided<[1], offset: ?>, "L1"> to memref<?xf16, strided<[1], offset: ?>, "L1">\n'
        '%e = tensor.empty() : tensor<4 x 8xf32, "enc">\n'
        '%v = "test.op"() : () -> vector<4x!my.t<"a">>',
        "%i: index",
    ),
    # attributes and types of dialects KTIR does not model: their text whole
    "dialect attribute": (
        '"test.op"() <{fastmath = #arith.fastmath<fast>, layout = #my.layout<"row", 2>, e = #my.e< a >}> : () -> ()\n'
        '"test.op"() {n = #my.nested<[1, <2>], "s>", (d0) -> (d0), x >= 1>} : () -> ()\n'
        '%r = arith.addf %t, %t {flags = [#arith.fastmath<nnan,\tninf>]} : tensor<4x8xf32>'
    ),
    "dialect type": (
        '%b = "other.make"() : () -> !my.buffer<16 x f32>\n"other.use"(%b) {ty = !my.buffer<4x  f32>} : (!my.buffer<16 x f32>) -> ()',
        "",
    ),
    "tensor string encoding": ('%e = tensor.empty() : tensor<f32, "enc">\n%u = tensor.empty() : tensor<i8,   "enc">', ""),
}

COLLECTIVE = """#all = affine_set<(d0)[s0] : (d0 - s0 * 2 >= 0, -d0 + s0 * 2 + 1 >= 0)>
#lead = affine_set<(d0)[s0] : (d0 - s0 * 2 == 0)>
#one = affine_set<(d0) : (d0 == 0)>
func.func @k(%x: tensor<1x16xf32>) attributes {grid = [2]} {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<1x16xf32>), groups = #one> {
  ^bb0(%gid: index):
    ktdp.yield_partial %x : tensor<1x16xf32>
  }
  %g = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #lead, dimensions = [0] : !ktdp.tile_future<(tensor<1x16xf32>), groups = #one> -> tensor<2x16xf32>
  func.return
}
"""


def _text(form: str) -> str:
    spec = FORMS[form]
    return _kernel(*spec) if isinstance(spec, tuple) else _kernel(spec)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_fast_path_takes_the_form(form: str) -> None:
    text = _text(form)
    p.parse(text, fast=False)  # the grammar accepts it: a valid program
    assert check(text), f"{form} falls back to the grammar"


SHORT_FUTURE = """#all = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>
#one = affine_set<(d0) : (d0 == 0)>
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {grid = [2]} {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all
      -> <(tensor<4xf32>), groups = #one>
  { ^bb0(%gid: index): ktdp.yield_partial %x : tensor<4xf32> }
  %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all
      : <(tensor<4xf32>), groups = #one> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def test_the_fast_path_takes_the_short_tile_future() -> None:
    p.parse(SHORT_FUTURE, fast=False)
    assert check(SHORT_FUTURE)


def test_legacy_types_warn_where_they_stand() -> None:
    text = _text("short access tile")
    warnings = p.parse(text).warnings
    assert [(w.line, w.column) for w in warnings] == [(w.line, w.column) for w in p.parse(text, fast=False).warnings]
    assert [w.line for w in warnings] == [2, 3]
    assert "short access tile type" in warnings[0].message


def test_the_fast_path_takes_a_collective() -> None:
    p.parse(COLLECTIVE, fast=False)
    assert check(COLLECTIVE)


# Texts the fast path leaves to the grammar although they are valid: where the whitespace
# the scan dropped could change what the grammar reads.
# (fastparse._Parser.spelled_type says why for types read in pieces)
# Valid forms the production parser once left to the grammar (which then built the module):
# it reads them now, to the grammar's module, comments and warnings.
ONCE_LEFT_TO_THE_GRAMMAR = {
    "a type keyword apart from its bracket": 'func.func @k(%m: memref <f32, "L1">) {\n  func.return\n}\n',
    "a type read in pieces over two lines": 'func.func @k(%m: memref<f32,\n    "L1">) {\n  func.return\n}\n',
    "a dialect attribute over two lines": '"test.op"() {a = #my.attr<x,\n  y>} : () -> ()\n',
    "a dialect attribute with a comment in it": '"test.op"() {a = #my.attr<x, // c\n  y>} : () -> ()\n',
    "a comment between a type keyword and its bracket": "func.func @k(%m: memref//c\n<16xbf16>) {\n  func.return\n}\n",
    "a comment with a bracket before a type's bracket": "func.func @k(%m: memref // c <\n<4xf32>) {\n  func.return\n}\n",
    "a comment in a type": "func.func @k(%m: memref<4x // rows\n f32>) {\n  func.return\n}\n",
    "a comment with a bracket in a type": "func.func @k(%m: memref<4x // r>\n f32>, %n: memref<4x // <\n f32>) {\n  func.return\n}\n",
    "a comment in a type that warns": (
        "func.func @k(%m: memref<4x // rows\n f32, #ktdp.spyre_memory_space<HBM>>) {\n  func.return\n}\n"
    ),
    "an access tile apart from its bracket": "func.func @k(%t: !ktdp.access_tile <4x // c\n index>) {\n  func.return\n}\n",
    "a short access tile with blanks": "func.func @k(%t: < 3 x0x index >, %u: <4xindex >, %v: < //x\n 4x index >) {\n  func.return\n}\n",
    "dotted alias names": "#a.b = affine_map<(d0) -> (d0)>\n!t.u = tensor<4xf32>\nfunc.func @k(%m: memref<4xf32, #a.b>, %t: !t.u) {\n  func.return\n}\n",
    "complex and tuple types": 'func.func @k(%c: complex<f32>, %t: tuple<>, %u: tuple<index, complex<f16>>) {\n  func.return\n}\n',
    "arrows in types": "func.func @k(%m: memref<4xf32, affine_map<(d0) -> (d0)>>, %t: tensor<f32, () -> ()>) {\n  func.return\n}\n",
    "an affine set in a type": "func.func @k(%t: tensor<4xf32, affine_set<(d0) : (d0 >= 0)>>) {\n  func.return\n}\n",
}


@pytest.mark.parametrize("name", sorted(ONCE_LEFT_TO_THE_GRAMMAR))
def test_forms_once_left_to_the_grammar_are_read(name: str) -> None:
    assert check(ONCE_LEFT_TO_THE_GRAMMAR[name])


def test_the_legacy_groups_clause_is_read() -> None:
    text = (ROOT / "tests" / "corpus" / "legacy" / "groups_on_op.ktir").read_text(encoding="utf-8")
    assert check(text)
    assert len(p.parse(text).warnings) == 5


def test_a_repeated_line_with_a_carriage_return_in_a_shape() -> None:
    """The third line repeats the first's tokens, but its `4\\rx4` is no shape to the
    grammar: the text is refused."""
    line = '  %{} = memref.alloc() : memref<4{}x4xf32, "L1">\n'
    text = "func.func @k() {\n" + line.format("b", "") + line.format("c", "\r") + line.format("d", "") + "  func.return\n}\n"
    assert fast_only(text) is None
    with pytest.raises(ParseError):
        p.parse(text)


@SETTINGS
@given(st.data())
def test_repeated_raw_text_lines_are_read_again(data: st.DataObject) -> None:
    """Lines equal in their tokens but not in the whitespace of a dialect attribute or type,
    or of a type read in pieces: each is read from its own text (an op copied from an
    earlier line would carry the earlier text)."""
    line = data.draw(
        st.sampled_from(
            [
                '"test.op"() {{a = #my.attr<"x",{}1>}} : () -> ()',
                '%b = "test.op"() : () -> !my.type<4{}x{}f32>',
                '%b = memref.alloc() : memref<4{}x4xf32,{}"L1">',
            ]
        )
    )
    blanks = st.sampled_from(["", " ", "\t", "  ", "\r"])
    body = "\n".join(line.format(data.draw(blanks), data.draw(blanks)) for _ in range(data.draw(st.integers(2, 4))))
    check(_kernel(body, ""))


def test_a_type_in_pieces_naming_an_alias_is_read_in_each_module() -> None:
    """`#m` in `memref<tensor<f32, "x">, #m>` is a layout or a memory space by what the
    module defines it as: the op is not copied from another module's."""
    layouts = []
    for alias in ("affine_map<() -> ()>", "1"):
        text = f"#m = {alias}\n" + _kernel('%b = memref.alloc() : memref<tensor<f32, "x">, #m>', "")
        p.parse(text, fast=False)
        check(text)
        (alloc,) = [op for op in p.parse(text).walk() if op.name == "memref.alloc"]
        layouts.append(alloc.result_types[0].layout)
    assert layouts[0] is not None and layouts[1] is None


# Invalid spellings of the forms above: the fast path must not take them.
WRONG = [
    '"test.op"() {a = array<i32: 0x1>} : () -> ()',
    '"test.op"() {a = array<i32:>} : () -> ()',
    '"test.op"() {a = array<i32: 1,>} : () -> ()',
    '"test.op"() {a = array<i32: 1} : () -> ()',
    '"test.op"() {r = dense_resource<1> : tensor<4xf32>} : () -> ()',
    '"test.op"() {r = dense_resource<blob1>} : () -> ()',
    '"test.op"() {t = (f32) -> } : () -> ()',
    '"test.op"() {t = (f32)} : () -> ()',
    '%b = memref.alloc() : memref<f32, "L1"',
    '%b = memref.alloc() : memref<f32, "L1" "L2">',
    '%b = memref.alloc() : memref<f32, "L1", x <= 1>',
    '"test.op"() {a = #my.attr<"x", <1>} : () -> ()',
    '"test.op"() {a = #my.attr<"x", 1} : () -> ()',
    '"test.op"() {a = #my.attr<x <= 1>} : () -> ()',
    '"test.op"() {a = #my.attr <x>} : () -> ()',
    '"test.op"() : () -> !my.type<4x',
    '%v = ktdp.runtime_arg_extract value from %i : <index -> index',
]


@pytest.mark.parametrize("body", WRONG)
def test_wrong_spellings_are_the_grammars_to_report(body: str) -> None:
    text = _kernel(body)
    assert fast_only(text) is None
    with pytest.raises(ParseError):
        p.parse(text)


def test_type_keywords_match_the_grammar() -> None:
    """The `!x.y` words the grammar has terminals for, which are no dialect types."""
    terminals = {name: value for name, _, value in p._driver().terminals}
    kws = ("ACCESS_TILE_KW", "FUTURE_KW", "RUNTIME_ARG_KW")
    words = {w.replace("\\", "") for name in kws for w in terminals[name].strip("()?:").split("|")}
    assert words == fastparse.TYPE_KWS


def test_a_wrong_declarative_op_is_the_grammars_to_report() -> None:
    text = _kernel("%f = tensor.collapse_shape %t [[0, 1] : tensor<4x8xf32> into tensor<32xf32>")
    assert fast_only(text) is None
    with pytest.raises(ParseError):
        p.parse(text)


@SETTINGS
@given(st.data())
def test_mutated_forms(data: st.DataObject) -> None:
    """Token-level mutations of the forms (mostly invalid): the fast path accepts only what
    the grammar accepts, and builds the same module."""
    form = data.draw(st.sampled_from(sorted(FORMS)))
    check(_mutate(data.draw(st.sampled_from([_text(form), COLLECTIVE, SHORT_FUTURE])), data))
