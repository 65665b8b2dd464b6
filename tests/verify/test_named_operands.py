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


TILE = """
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%v: memref<4x64xf16>) {
  %c0 = arith.constant 0 : index
  %t = "ktdp.construct_access_tile"(%v, %c0, %c0) {access_tile_order = #id, access_tile_set = #s, base_map = affine_map<(d0, d1) -> (d0, d1)>, operandSegmentSizes = array<i32: SIZES>} : (memref<4x64xf16>, index, index) -> !ktdp.access_tile<4x64xindex>
  return
}
"""


def test_access_tile_operands_split_by_segments() -> None:
    assert _errors(TILE.replace("SIZES", "1, 2, 0")) == []


def test_a_negative_segment_size_is_malformed_not_a_traceback() -> None:
    assert _errors(TILE.replace("SIZES", "1, 3, -1")) == ["ktdp.construct_access_tile.C1"]
