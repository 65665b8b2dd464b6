"""The bounds of ktir.syntax.limits (issue 33): at a bound, every tool handles the program
within Python's default recursion limit (with frames to spare for its caller); one past
it, both parsers give the same located error.

The programs are text on purpose: the bounds are on what text may ask for.
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Callable

import pytest

import ktir
import reference_interp
from ktir.syntax.generic_printer import print_generic
from ktir.syntax.limits import (
    MAX_AFFINE_DEPTH,
    MAX_INT_WIDTH,
    MAX_LITERAL_DIGITS,
    MAX_NESTING,
    MAX_RANK,
    MAX_TEXT_NESTING,
)
from ktir.verify import verify

# A tool runs with this many frames of its own caller's below it (a CLI, a test runner, a
# notebook) and must still fit in Python's default limit of 1000.
CALLER_FRAMES = 250


def _func(body: str = "", attrs: str = "", args: str = "") -> str:
    return f"func.func @f({args}){attrs} {{\n{body}  return\n}}\n"


# kind -> (program at nesting n, n at the bound)
def _regions(n: int) -> str:
    return _func("scf.execute_region {\n" * n + "  %k = arith.constant 1.0 : f32\nscf.yield\n" + "}\nscf.yield\n" * (n - 1) + "}\n")


def _generic_regions(n: int) -> str:
    return _func('"scf.execute_region"() ({\n' * n + '"scf.yield"() : () -> ()\n}) : () -> ()\n' * n)


def _dicts(n: int) -> str:
    return _func(attrs=" attributes {a = " + "{a = " * n + "1" + "}" * n + "}")


def _arrays(n: int) -> str:
    return _func(attrs=" attributes {a = " + "[" * n + "1" + "]" * n + "}")


def _tuples(n: int) -> str:
    return _func(args="%x: " + "tuple<" * n + "f32" + ">" * n)


def _dense(n: int) -> str:
    shape = "1x" * n
    return f"func.func @f() -> tensor<{shape}f32> {{\n  %c = arith.constant dense<{'[' * n}1.0{']' * n}> : tensor<{shape}f32>\n  return %c : tensor<{shape}f32>\n}}\n"


# the largest n each kind accepts: the module's depth counts the func's region (1) and, for
# attributes and types, the op they belong to (0 for the func itself)
KINDS: dict[str, tuple[Callable[[int], str], int]] = {
    "regions": (_regions, MAX_NESTING - 1),
    "generic regions": (_generic_regions, MAX_NESTING - 1),
    "dictionaries": (_dicts, MAX_NESTING),
    "arrays": (_arrays, MAX_NESTING),
    "tuple types": (_tuples, MAX_NESTING - 1),  # its function type is a level too
    "dense literals": (_dense, MAX_NESTING - 2),  # the constant op inside the function, the dense attribute
}


def _with_frames(depth: int, fn: Callable[[], object]) -> object:
    """`fn()` called `depth` frames below this one, under the default recursion limit."""
    if depth > 0:
        return _with_frames(depth - 1, fn)
    return fn()


@pytest.fixture
def default_recursion_limit() -> object:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


def _run(module: ktir.Module) -> object:
    try:
        return reference_interp.run(module, args={})
    except reference_interp.KtirRuntimeError as e:  # a located runtime error is a result too
        assert e.kind != "internal", e
        return e


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_at_the_bound_every_tool_works(kind: str, default_recursion_limit: object) -> None:
    make, n = KINDS[kind]
    text = make(n)
    module = ktir.parse(text)
    padding = CALLER_FRAMES - len(inspect.stack())
    tools: dict[str, Callable[[], object]] = {
        "parse": lambda: ktir.parse(text),
        "grammar": lambda: ktir.parse(text, fast=False),
        "print": lambda: ktir.parse(ktir.print_module(module)) == module,
        "generic": lambda: ktir.parse(print_generic(module, None)) == module,
        "verify": lambda: verify(module),
        "equality": lambda: module == ktir.parse(text),
        "copy": lambda: copy.deepcopy(module) == module,
        "run": lambda: _run(module),
    }
    for name, tool in tools.items():
        result = _with_frames(padding, tool)
        assert result is not False, name


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "grammar"])
def test_past_the_bound_a_located_error(kind: str, fast: bool) -> None:
    make, n = KINDS[kind]
    for past in (n + 1, 4 * n):
        with pytest.raises(ktir.ParseError) as info:
            ktir.parse(make(past), fast=fast)
        assert info.value.line >= 1 and info.value.column >= 1
        assert "nest" in info.value.message or "rank" in info.value.message


def test_text_nesting_is_bounded_before_parsing() -> None:
    text = "[" * (MAX_TEXT_NESTING + 1)
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(_func(attrs=f" attributes {{a = {text}}}"))
    # the attribute dictionary is the first level: the 192nd `[` (at column 32 + 191) is one too many
    assert (info.value.line, info.value.column) == (1, 32 + MAX_TEXT_NESTING - 1)
    assert info.value.message == f"nesting deeper than {MAX_TEXT_NESTING} levels of brackets"
    # brackets in strings and comments do not nest
    assert ktir.parse(_func(attrs=' attributes {a = "' + "[" * 500 + '"}') + "// " + "{" * 500 + "\n")


def test_the_generic_form_of_a_program_at_the_bound_reads_back() -> None:
    """The generic form spends two brackets on a region where the custom form spends one:
    the bound is on the module's depth, not on its text's brackets."""
    module = ktir.parse(_regions(MAX_NESTING - 1))
    generic = print_generic(module, None)
    assert max(generic.count("({"), 0) >= MAX_NESTING - 1
    assert ktir.parse(generic) == module


@pytest.mark.parametrize(
    ("expr", "ok"),
    [
        (" + ".join(["d0"] * MAX_AFFINE_DEPTH), True),
        (" + ".join(["d0"] * (MAX_AFFINE_DEPTH + 1)), False),
        ("d0 * 9223372036854775807", True),
        ("d0 * 9223372036854775807 * 2", False),  # the folded constant leaves int64
        ("-9223372036854775808", True),
        ("9223372036854775808", False),
    ],
)
def test_affine_expressions_are_bounded(expr: str, ok: bool) -> None:
    text = _func(attrs=f" attributes {{m = affine_map<(d0) -> ({expr})>}}")
    if ok:
        module = ktir.parse(text)
        assert ktir.parse(ktir.print_module(module)) == module
    else:
        with pytest.raises(ktir.ParseError) as info:
            ktir.parse(text)
        assert info.value.line == 1 and info.value.column >= 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_func(f"  %x = arith.constant {'9' * MAX_LITERAL_DIGITS} : i64\n"), None),
        (_func(f"  %x = arith.constant {'9' * (MAX_LITERAL_DIGITS + 1)} : i64\n"), "integer literal of 3001 digits"),
        (_func(f"  %x = arith.constant 0x{'F' * 2490} : i64\n"), None),
        (_func(f"  %x = arith.constant 0x{'F' * 2491} : i64\n"), "hexadecimal literal of 2491 digits"),
        (_func(args=f"%x: tensor<{'1x' * MAX_RANK}f32>"), None),
        (_func(args=f"%x: tensor<{'1x' * (MAX_RANK + 1)}f32>"), "a shape of rank 65"),
        (_func(args="%x: tensor<9223372036854775807xf32>"), None),
        (_func(args="%x: tensor<9223372036854775808xf32>"), "dimension 9223372036854775808 does not fit in 64 bits"),
        (_func(f"  %x = arith.constant 1 : i{MAX_INT_WIDTH}\n"), None),
        (_func(f"  %x = arith.constant 1 : i{MAX_INT_WIDTH + 1}\n"), "integer type 'i16777216' is wider"),
        (_func(attrs=" attributes {a = array<i8: -128, 255>}"), None),
        (_func(attrs=" attributes {a = array<i8: 256>}"), "integer constant 256 out of range of i8"),
        (_func(attrs=" attributes {a = array<ui8: -1>}"), "integer constant -1 out of range of ui8"),
        (_func("  %r:99999999999999999999 = arith.addf %a, %a : f32\n", args="%a: f32"), "defines 1 result(s)"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
)
def test_sizes_are_bounded(text: str, message: str | None) -> None:
    for fast in (True, False):
        if message is None:
            module = ktir.parse(text, fast=fast)
            printed = ktir.print_module(module)
            assert ktir.parse(printed) == module  # what it prints stays within the bounds
        else:
            with pytest.raises(ktir.ParseError) as info:
                ktir.parse(text, fast=fast)
            assert message in info.value.message and info.value.line >= 1
