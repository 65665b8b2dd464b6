"""The fast path keeps alias-free types and affine maps/sets across parses (fastparse's
_SHARED_* tables); what one module defines must never leak into another."""

from __future__ import annotations

import pytest

from ktir.syntax import fastparse
from ktir.syntax import parser as p
from ktir.syntax.diagnostics import ParseError

_WITH_ALIAS = """#l = affine_map<(d0) -> (d0)>
func.func @f(%m: memref<4xf32, #l>) {
  func.return
}
"""
_WITHOUT = "func.func @f(%m: memref<4xf32, #l>) {\n  func.return\n}\n"


def test_a_type_naming_an_alias_is_not_shared() -> None:
    p.parse(_WITH_ALIAS)
    assert "memref<4xf32, #l>" not in fastparse._SHARED_TYPES
    with pytest.raises(ParseError, match="undefined attribute alias"):
        p.parse(_WITHOUT)


def test_an_alias_free_type_and_affine_set_are_shared_and_equal_to_the_grammars() -> None:
    text = (
        "func.func @f(%a: index, %t: !ktdp.access_tile<3x5xindex>) {\n"
        "  %v = ktdp.construct_memory_view %a, sizes: [3, 5], strides: [5, 1] "
        "{coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 4 >= 0)>, "
        "memory_space = #ktdp.memory_space<global>} : memref<3x5xbf16>\n"
        "  func.return\n}\n"
    )
    first = p.parse(text)
    assert "memref<3x5xbf16>" in fastparse._SHARED_TYPES
    assert any(key[0] == "affine_set" and "4" in key for key in fastparse._SHARED_AFFINE)
    again = p.parse(text)  # now from the shared tables
    assert again == first == p.parse(text, fast=False)


def test_an_affine_map_naming_an_undefined_dimension_is_an_error_every_time() -> None:
    text = "#m = affine_map<(d0) -> (d1)>\nfunc.func @f() {\n  func.return\n}\n"
    for _ in range(2):
        with pytest.raises(ParseError):
            p.parse(text)


def test_a_legacy_memory_space_warns_every_time() -> None:
    """A memory space that warns is not kept: the second module warns too, at its own place."""
    text = (
        "func.func @f(%a: index) {{\n{pad}  %v = ktdp.construct_memory_view %a, sizes: [4], strides: [1] "
        "{{memory_space = #ktdp.spyre_memory_space<HBM>}} : memref<4xf16>\n  func.return\n}}\n"
    )
    for pad in ("", "\n"):
        module = p.parse(text.format(pad=pad))
        assert [w.line for w in module.warnings] == [2 + len(pad)]
        assert module == p.parse(text.format(pad=pad), fast=False)
