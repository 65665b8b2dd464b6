"""The fast path keeps what it has read (types, affine maps and sets, op lines) for the
parse of one text only: nothing one module defines or spells reaches the parse of another.
The fuzzing lane found two texts that parsed differently late in a long-running worker
than alone, when these tables were process-wide."""

from __future__ import annotations

import copy
import importlib
import pkgutil
import re
import threading
import types
from pathlib import Path
from typing import Any

import pytest

import ktir.syntax
from ktir.syntax import fastparse
from ktir.syntax import parser as p
from ktir.syntax.diagnostics import ParseError
from ktir.syntax.printer import print_module

_WITH_ALIAS = """#l = affine_map<(d0) -> (d0)>
func.func @f(%m: memref<4xf32, #l>) {
  func.return
}
"""
_WITHOUT = "func.func @f(%m: memref<4xf32, #l>) {\n  func.return\n}\n"


def test_a_type_naming_an_alias_is_not_shared() -> None:
    p.parse(_WITH_ALIAS)
    with pytest.raises(ParseError, match="undefined attribute alias"):
        p.parse(_WITHOUT)


def test_an_alias_free_type_and_affine_set_read_again_equal_the_grammars() -> None:
    text = (
        "func.func @f(%a: index, %t: !ktdp.access_tile<3x5xindex>) {\n"
        "  %v = ktdp.construct_memory_view %a, sizes: [3, 5], strides: [5, 1] "
        "{coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 4 >= 0)>, "
        "memory_space = #ktdp.memory_space<global>} : memref<3x5xbf16>\n"
        "  func.return\n}\n"
    )
    first = p.parse(text)
    again = p.parse(text)
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


# --- op lines repeated within and across texts ------------------------------------------

_VIEW = (
    "  %v = ktdp.construct_memory_view %a, sizes: [3, 5], strides: [5, 1] "
    "{{coordinate_set = {cset}, memory_space = #ktdp.memory_space<global>}} : memref<3x5xbf16>\n"
)
_INLINE_SET = "affine_set<(d0, d1) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 4 >= 0)>"


def _kernel(body: str, header: str = "") -> str:
    return f"{header}func.func @f(%a: index) {{\n{body}  func.return\n}}\n"


def _view(module: object) -> object:
    return next(op for op in module.walk() if op.name == "ktdp.construct_memory_view")  # type: ignore[attr-defined]


def test_a_repeated_op_line_is_read_with_its_own_names_and_place() -> None:
    """Within one text a line repeating an earlier one's tokens (other SSA names) is copied;
    the copy has its own operands, results and location, as the grammar reads them."""
    line = _VIEW.format(cset=_INLINE_SET)
    body = line + "".join(line.replace("%v", f"%w{k}") for k in range(3))
    text = _kernel("  %z = arith.constant 0 : index\n" + body + line.replace("%v", "%u").replace("%a", "%z"))
    module = p.parse(text)
    assert module == p.parse(text, fast=False)
    views = [op for op in module.walk() if op.name == "ktdp.construct_memory_view"]  # type: ignore[attr-defined]
    assert [v.loc.line for v in views] == [3, 4, 5, 6, 7]
    assert views[-1].operands == ["%z"] and views[-1].results == ["%u"]


def test_a_line_naming_an_alias_is_kept_only_for_modules_that_define_it() -> None:
    """The op keeps `#cs` by name; what a module adds is only whether `#cs` is defined.
    A module that does not define it is an error, even after others had the same line."""
    body = _VIEW.format(cset="#cs")
    for definition in ("(d0 >= 0, d1 >= 0)", "(d0 - 1 >= 0, d1 - 1 >= 0)"):
        text = _kernel(body, f"#cs = affine_set<(d0, d1) : {definition}>\n")
        assert p.parse(text) == p.parse(text, fast=False)
    with pytest.raises(ParseError, match="undefined attribute alias"):
        p.parse(_kernel(body))


def test_a_line_with_an_alias_inside_a_type_is_not_kept_across_modules() -> None:
    """`memref<4xf32, #m>`: `#m` is read as a layout or a memory space by its definition."""
    line = "  %v = ktdp.construct_memory_view %a, sizes: [4], strides: [1] : memref<4xf32, #m>\n"
    for definition in ("affine_map<(d0) -> (d0)>", "#ktdp.memory_space<global>"):
        text = _kernel(line, f"#m = {definition}\n")
        assert p.parse(text) == p.parse(text, fast=False)


def test_changing_a_parsed_op_does_not_change_later_parses() -> None:
    """The tables keep a snapshot, not the op the caller received."""
    text = _kernel(_VIEW.format(cset=_INLINE_SET))
    first = p.parse(text)
    view = _view(first)
    view.attributes.clear()  # type: ignore[attr-defined]
    view.operand_types[0] = view.result_types[0]  # type: ignore[attr-defined]
    view.name = "ktdp.changed"  # type: ignore[attr-defined]
    assert p.parse(text) == p.parse(text, fast=False)


def test_an_op_with_a_legacy_warning_is_not_kept() -> None:
    """A line that warns must warn again, in every module that has it."""
    line = "  %v = ktdp.construct_memory_view %a, sizes: [4], strides: [1] {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4xf16>\n"
    for _ in range(2):
        module = p.parse(_kernel(line))
        assert [w.line for w in module.warnings] == [2]


def _globals_snapshot() -> dict[str, object]:
    """Every module-level container of the fast path, deep-copied."""
    return {
        name: copy.deepcopy(value)
        for name, value in vars(fastparse).items()
        if isinstance(value, (dict, list, set, bytearray)) and not name.startswith("__")
    }


def test_parsing_changes_no_module_level_state_of_the_fast_path() -> None:
    """The fast path's module-level tables are constants: parsing texts of every kind
    (aliases, repeated lines, warnings, errors) leaves them as they were."""
    before = _globals_snapshot()
    line = _VIEW.format(cset=_INLINE_SET)
    texts = [
        _kernel(line * 80),
        _kernel(_VIEW.format(cset="#cs"), "#cs = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>\n"),
        _WITH_ALIAS,
        _kernel("  %v = ktdp.construct_memory_view %a, sizes: [4], strides: [1] {memory_space = #ktdp.spyre_memory_space<HBM>} : memref<4xf16>\n"),
    ]
    for text in texts:
        p.parse(text)
    with pytest.raises(ParseError):
        p.parse(_WITHOUT)
    assert _globals_snapshot() == before


# --- the whole package: no module-level mutable state, parses in threads ------------------

_MODULES = [importlib.import_module(f"ktir.syntax.{m.name}") for m in pkgutil.iter_modules(ktir.syntax.__path__)]
_IMMUTABLE = (str, bytes, int, float, bool, type(None), tuple, frozenset, re.Pattern, types.ModuleType, type)
_ROOT = Path(__file__).resolve().parents[2]


def _is_code(value: object) -> bool:
    """Functions (cached ones too), methods and descriptors."""
    return callable(value) or hasattr(value, "__get__")


def _is_frozen(value: object) -> bool:
    """A frozen dataclass or pydantic model (IR attributes and types, format descriptions)."""
    params = getattr(type(value), "__dataclass_params__", None)
    config = getattr(type(value), "model_config", None)
    return bool(params is not None and params.frozen) or bool(isinstance(config, dict) and config.get("frozen"))


def _package_snapshot() -> dict[str, object]:
    """Every module-level value of ktir.syntax that is not code, deep-copied (containers
    as they are, other objects as their attributes), and every class's own attributes."""
    seen: dict[str, object] = {}
    for module in _MODULES:
        for name, value in vars(module).items():
            if name.startswith("__") or isinstance(value, types.ModuleType):
                continue
            key = f"{module.__name__}.{name}"
            if isinstance(value, type):
                if value.__module__ == module.__name__:
                    seen[key] = {k: copy.deepcopy(v) for k, v in vars(value).items() if not k.startswith(("__", "_abc_")) and not _is_code(v)}
            elif isinstance(value, (dict, list, set, bytearray)):
                seen[key] = copy.deepcopy(value)
            elif not isinstance(value, _IMMUTABLE) and not _is_code(value):
                seen[key] = copy.deepcopy(vars(value)) if hasattr(value, "__dict__") else value
    return seen


def test_module_level_values_are_constants_or_code() -> None:
    """A module-level value of ktir.syntax is code, an immutable constant, or a table
    (checked unchanged below); no object a parse could write into, such as a shared
    callback builder or a lock around one."""
    odd = []
    for module in _MODULES:
        for name, value in vars(module).items():
            if name.startswith("__") or isinstance(value, _IMMUTABLE + (dict, list, set)) or _is_code(value) or _is_frozen(value):
                continue
            if name == "annotations" or isinstance(value, types.GenericAlias | types.UnionType) or type(value).__module__ in ("typing", "collections.abc"):
                continue  # `from __future__ import annotations`, type aliases
            odd.append(f"{module.__name__}.{name}: {type(value).__name__}")
    assert odd == []


def _texts() -> list[str]:
    files = [*sorted((_ROOT / "examples").glob("*.ktir"))[:6], _ROOT / "tests" / "corpus" / "legacy" / "groups_on_op.ktir"]
    return [f.read_text(encoding="utf-8") for f in files] + [_WITH_ALIAS, _kernel(_VIEW.format(cset=_INLINE_SET) * 40)]


def test_parses_in_two_threads_agree_with_one_and_change_no_module_state() -> None:
    """Two threads parse and print files (and report errors) at the same time, several
    rounds each; every result equals the one a lone parse and print give, and no
    module-level value or class attribute of any ktir.syntax module has changed."""
    texts = _texts()
    alone = [p.parse(t) for t in texts]  # also loads every lazily-built table
    printed = [print_module(m) for m in alone]
    with pytest.raises(ParseError) as bad_alone:
        p.parse(_WITHOUT)
    before = _package_snapshot()
    barrier = threading.Barrier(2)
    failures: list[Any] = []

    def work(order: list[int]) -> None:
        barrier.wait()
        for _ in range(3):
            for k in order:
                try:
                    module = p.parse(texts[k])
                    if module != alone[k] or print_module(module) != printed[k]:
                        failures.append(("differs", k))
                except Exception as e:  # noqa: BLE001 - reported below
                    failures.append((k, e))
                try:
                    p.parse(_WITHOUT)
                    failures.append("no error")
                except ParseError as e:
                    if e.message != bad_alone.value.message:
                        failures.append(e.message)

    threads = [threading.Thread(target=work, args=(order,)) for order in (list(range(len(texts))), list(reversed(range(len(texts)))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert _package_snapshot() == before
