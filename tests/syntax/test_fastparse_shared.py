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


# --- op lines kept across parses (_SHARED_SHAPES) ---------------------------------------

_VIEW = (
    "  %v = ktdp.construct_memory_view %a, sizes: [3, 5], strides: [5, 1] "
    "{{coordinate_set = {cset}, memory_space = #ktdp.memory_space<global>}} : memref<3x5xbf16>\n"
)
_INLINE_SET = "affine_set<(d0, d1) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 4 >= 0)>"


def _kernel(body: str, header: str = "") -> str:
    return f"{header}func.func @f(%a: index) {{\n{body}  func.return\n}}\n"


def _view(module: object) -> object:
    return next(op for op in module.walk() if op.name == "ktdp.construct_memory_view")  # type: ignore[attr-defined]


def test_an_op_line_is_copied_into_a_later_module_equal_to_the_grammars() -> None:
    fastparse.clear_shared()
    first = _kernel(_VIEW.format(cset=_INLINE_SET))
    p.parse(first)
    assert len(fastparse._SHARED_SHAPES) >= 1
    # the same line with other SSA names, at another place, in another module
    second = _kernel("  %z = arith.constant 0 : index\n" + _VIEW.format(cset=_INLINE_SET).replace("%v", "%w").replace("%a", "%z"))
    before = dict(fastparse._SHARED_SHAPES)
    module = p.parse(second)
    assert module == p.parse(second, fast=False)
    assert _view(module).loc.line == 3  # type: ignore[attr-defined]
    assert _view(module).operands == ["%z"]  # type: ignore[attr-defined]
    # it was a copy: the view's line added no entry of its own
    assert [k for k in fastparse._SHARED_SHAPES if k not in before and "ktdp.construct_memory_view" in k] == []


def test_a_line_naming_an_alias_is_kept_only_for_modules_that_define_it() -> None:
    """The op keeps `#cs` by name; what a module adds is only whether `#cs` is defined.
    A module that does not define it is an error, even after others had the same line."""
    fastparse.clear_shared()
    body = _VIEW.format(cset="#cs")
    for definition in ("(d0 >= 0, d1 >= 0)", "(d0 - 1 >= 0, d1 - 1 >= 0)"):
        text = _kernel(body, f"#cs = affine_set<(d0, d1) : {definition}>\n")
        assert p.parse(text) == p.parse(text, fast=False)
    assert any("#cs" in key for key in fastparse._SHARED_SHAPES)
    with pytest.raises(ParseError, match="undefined attribute alias"):
        p.parse(_kernel(body))


def test_a_line_with_an_alias_inside_a_type_is_not_kept_across_modules() -> None:
    """`memref<4xf32, #m>`: `#m` is read as a layout or a memory space by its definition."""
    fastparse.clear_shared()
    line = "  %v = ktdp.construct_memory_view %a, sizes: [4], strides: [1] : memref<4xf32, #m>\n"
    for definition in ("affine_map<(d0) -> (d0)>", "#ktdp.memory_space<global>"):
        text = _kernel(line, f"#m = {definition}\n")
        assert p.parse(text) == p.parse(text, fast=False)
    assert not any("memref<4xf32, #m>" in key for key in fastparse._SHARED_SHAPES)


def test_changing_a_parsed_op_does_not_change_later_parses() -> None:
    """The tables keep a snapshot, not the op the caller received."""
    fastparse.clear_shared()
    text = _kernel(_VIEW.format(cset=_INLINE_SET))
    first = p.parse(text)
    view = _view(first)
    view.attributes.clear()  # type: ignore[attr-defined]
    view.operand_types[0] = view.result_types[0]  # type: ignore[attr-defined]
    view.name = "ktdp.changed"  # type: ignore[attr-defined]
    assert p.parse(text) == p.parse(text, fast=False)


def test_an_op_with_a_legacy_warning_is_not_kept() -> None:
    """A line that warns must warn again, in every module that has it."""
    fastparse.clear_shared()
    line = "  %v = ktdp.construct_memory_view %a, sizes: [4], strides: [1] {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4xf16>\n"
    for _ in range(2):
        module = p.parse(_kernel(line))
        assert [w.line for w in module.warnings] == [2]
    assert not any("#ktdp.spyre_memory_space" in key for key in fastparse._SHARED_SHAPES)
