"""The recursive-descent fast path agrees with the grammar (which stays normative).

Wherever the fast path accepts a text, the LALR parser of `ktir.lark` must accept it too
and build the same AST, with the same locations, comments and warnings; wherever the
grammar rejects a text, the fast path must not accept it. Checked on every file in the
repository, on generated programs (tests/strategies.py), and on token-level mutations of
both, which are mostly invalid.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktir.ir.operation import Module
from ktir.syntax import fastparse
from ktir.syntax import parser as p
from ktir.syntax.diagnostics import ParseError
from ktir.syntax.printer import print_module

try:  # tests/ as a package, or as a rootdir-relative directory (pytest's default)
    from ..observable import observable
    from ..strategies import Options, generate_module
except ImportError:
    from observable import observable  # type: ignore[no-redef]
    from strategies import Options, generate_module  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
_SKIP = {"site", "build", "node_modules", "ci-artifacts"}
FILES = sorted(
    f
    for ext in ("*.ktir", "*.mlir")
    for f in ROOT.rglob(ext)
    if not _SKIP.intersection(f.relative_to(ROOT).parts) and not any(x.startswith(".") for x in f.relative_to(ROOT).parts)
)
# KTIR_FUZZ_EXAMPLES=5000 for a long fuzzing run
SETTINGS = settings(max_examples=int(os.environ.get("KTIR_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fast_only(text: str) -> Module | None:
    """The fast path's module, or None where it leaves the text to the grammar. The bounds
    of ktir.syntax.limits apply to both paths alike (`parse` checks them around either): a
    text past them is the grammar's to report."""
    try:
        nesting = p.text_nesting(text)
    except ParseError:
        return None
    b = p._Builder()
    module = p._parse_fast(text, b)
    if module is not None:
        if nesting > p.MAX_NESTING:
            try:
                p.check_module_nesting(module, b.alias_lines)
            except ParseError:
                return None
        p.attach_comments(module, b.comments + p.blank_lines(text), b.alias_lines)
    return module


def check(text: str) -> bool:
    """Assert the two paths agree on `text`: the production parser reads exactly the texts
    the grammar accepts, into the same module; True when the text is valid."""
    fast = fast_only(text)
    if fast is None:
        try:
            p.parse(text, fast=False)
        except ParseError:
            return False
        raise AssertionError(f"the production parser leaves a text the grammar accepts:\n{text}")
    try:
        reference = p.parse(text, fast=False)
    except ParseError as e:
        raise AssertionError(f"the fast path accepts text the grammar rejects ({e.message} at {e.line}:{e.column}):\n{text}") from None
    assert fast == reference, text
    assert observable(fast) == observable(reference), text
    return True


@pytest.mark.parametrize("path", FILES, ids=lambda f: str(f.relative_to(ROOT)))
def test_every_file(path: Path) -> None:
    check(path.read_text(encoding="utf-8"))


def test_the_fast_path_takes_the_common_files() -> None:
    """Not a correctness property, but the point of the fast path: most kernels use it."""
    examples = sorted((ROOT / "examples").rglob("*.ktir"))
    taken = [f for f in examples if check(f.read_text(encoding="utf-8"))]
    assert len(taken) >= 0.6 * len(examples), sorted(set(map(str, examples)) - set(map(str, taken)))
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_parse import generate

    assert check(generate(300))


def test_errors_are_the_grammars() -> None:
    """Bad text is reported by the grammar, at the grammar's position, through `parse`."""
    text = "func.func @f(%a: index) {\n  %x = arith.addi %a, %a : index index\n  func.return\n}\n"
    with pytest.raises(ParseError) as fast:
        p.parse(text)
    with pytest.raises(ParseError) as slow:
        p.parse(text, fast=False)
    assert (fast.value.message, fast.value.line, fast.value.column) == (slow.value.message, slow.value.line, slow.value.column)
    assert fast.value.line == 2


def test_the_grammar_only_reports_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """One production path: a valid text the production parser would not read is no
    module from the grammar but a located error naming the bug."""
    text = "func.func @f() {\n  func.return\n}\n"

    def refuse(text: str, builder: Any) -> Any:
        raise fastparse.Fallback

    monkeypatch.setattr(p, "parse_fast", refuse)
    with pytest.raises(ParseError, match="does not read this text, which its grammar accepts") as caught:
        p.parse(text, "k.ktir")
    diag = caught.value.diagnostics[0]
    assert (diag.line, diag.column, diag.file, diag.id) == (1, 1, "k.ktir", "syntax.internal")
    assert p.parse(text, fast=False).operations


def test_terminals_match_the_grammar() -> None:
    terminals = {name: (kind, value) for name, kind, value in p._driver().terminals}

    def words(name: str) -> set[str]:
        kind, value = terminals[name]
        return {value} if kind == "str" else {w.replace("\\", "") for w in re.sub(r"^\(\?:|\)$", "", value).split("|")}

    assert words("FLOAT_TYPE") == fastparse.FLOAT_TYPES
    assert words("AFF_DIV_OP") == fastparse.AFF_DIV_OPS
    assert words("CMP_OP") == fastparse.CMP_OPS
    assert words("FLAG_KIND") == fastparse.FLAG_KINDS
    assert words("VISIBILITY") == fastparse.VISIBILITIES
    assert words("MEMSPACE_KW") == fastparse.MEMSPACE_KWS
    assert terminals["INTEGER_TYPE"][1] == fastparse.INTEGER_TYPE.pattern


@SETTINGS
@given(st.integers(0, 2**32), st.integers(0, 2), st.integers(1, 6))
def test_generated_programs(seed: int, depth: int, ops: int) -> None:
    module = generate_module(seed, Options(max_depth=depth, max_ops=ops, max_funcs=2, budget=60))
    check(print_module(module))


_TOKEN = re.compile(r"%[\w$.#-]+|[A-Za-z_!#][\w$.]*|\"[^\"\n]*\"|[0-9]+|->|\S")


def _mutate(text: str, data: st.DataObject) -> str:
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return text
    for _ in range(data.draw(st.integers(1, 3))):
        start, end = spans[data.draw(st.integers(0, len(spans) - 1))]
        kind = data.draw(st.sampled_from(["drop", "double", "swap", "replace"]))
        if kind == "drop":
            text = text[:start] + text[end:]
        elif kind == "double":
            text = text[:end] + " " + text[start:end] + text[end:]
        elif kind == "swap":
            other = spans[data.draw(st.integers(0, len(spans) - 1))]
            a, b = sorted([(start, end), other])
            if a[1] <= b[0]:
                text = text[: a[0]] + text[b[0] : b[1]] + text[a[1] : b[0]] + text[a[0] : a[1]] + text[b[1] :]
        else:
            piece = data.draw(st.sampled_from([",", ":", "(", ")", "{", "}", "[", "]", "<", ">", "-", "->", "=", "x", "4", "%z", "index", "f32", "#map", "to", "tensor<4xf32>", ", tensor<4xf32>", ", %z", "\"s\"", "//c\n", "@", "$", "&", "`", ";", "'"]))
            text = text[:start] + piece + text[end:] if data.draw(st.booleans()) else text[:end] + piece + text[end:]
        spans = [m.span() for m in _TOKEN.finditer(text)]
        if not spans:
            break
    return text


_SEEDS = [f for f in FILES if "invalid" not in f.parts and f.stat().st_size < 6000]


@SETTINGS
@given(st.data())
def test_mutated_files(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_SEEDS))
    check(_mutate(path.read_text(encoding="utf-8"), data))


@SETTINGS
@given(st.integers(0, 2**32), st.data())
def test_mutated_programs(seed: int, data: st.DataObject) -> None:
    text = print_module(generate_module(seed, Options(max_depth=1, max_ops=4, max_funcs=1, budget=30)))
    check(_mutate(text, data))


@SETTINGS
@given(st.data())
def test_a_stray_character_before_a_final_comment_with_blanks(data: st.DataObject) -> None:
    """A character no token starts with, anywhere, in a text ending in a comment whose line
    ends in blanks: the fast path used to skip the character (fuzz seed 41204, input 125746)."""
    text = data.draw(st.sampled_from(_SEEDS)).read_text(encoding="utf-8").rstrip("\n")
    at = data.draw(st.integers(0, len(text)))
    stray = data.draw(st.sampled_from(["@", "$", "&", "`", ";", "'", "\\", "~"]))
    tail = data.draw(st.sampled_from(["\n// c ", "\n// c \t", "\n//  \n  ", " // c "]))
    check(text[:at] + stray + text[at:] + tail)


_TAILS = (", tensor<4xf32>", ", %z", " {x}", " f32")


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.ktir")), ids=lambda f: f.name)
def test_every_line_with_a_stray_tail(path: Path) -> None:
    """An op line with something appended (most such texts are invalid): a way to catch a
    list or an optional clause the fast path reads further than the grammar."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        for tail in _TAILS:
            check("\n".join([*lines[:n], line + tail, *lines[n + 1 :]]))


_VALUE = re.compile(r"%[A-Za-z0-9_$.\-]+(?:#[0-9]+)?")
_REPEATABLE = [f for f in _SEEDS if _VALUE.search(f.read_text(encoding="utf-8"))]


@SETTINGS
@given(st.data())
def test_repeated_lines_with_renamed_values(data: st.DataObject) -> None:
    """A line repeating an earlier op's tokens, SSA names aside, is read as the grammar
    reads it (fastparse once copied such lines): with its own names, a renaming that merges
    or splits names, names with `#`, and lines the grammar reads on into the next."""
    path = data.draw(st.sampled_from(_REPEATABLE))
    lines = path.read_text(encoding="utf-8").split("\n")
    candidates = [n for n, line in enumerate(lines) if _VALUE.search(line)]
    n = data.draw(st.sampled_from(candidates))
    names = sorted(set(_VALUE.findall(lines[n])))
    pool = ["%r0", "%r1", "%r2#1", *names]
    for _ in range(data.draw(st.integers(1, 3))):
        renaming = {name: data.draw(st.sampled_from(pool)) for name in names}
        copy = _VALUE.sub(lambda m: renaming[m.group()], lines[n])  # noqa: B023 - used at once
        at = data.draw(st.integers(n + 1, len(lines)))
        lines.insert(at, copy)
    check("\n".join(lines))


def test_a_repeated_line_read_on_by_the_grammar() -> None:
    """`func.return` ends its line the first time; the second time the next line carries
    on its operand list (a copy of the first would be wrong)."""
    text = (
        "func.func @f(%a: index) {\n  scf.if %a {\n    scf.yield\n  }\n"
        "  %b = scf.if %a -> (index) {\n    scf.yield\n    %a : index\n  } else {\n    scf.yield %a : index\n  }\n"
        "  func.return\n}\n"
    )
    assert check(text)
    module = p.parse(text)
    yields = [op for op in module.walk() if op.name == "scf.yield"]
    assert [op.operands for op in yields] == [[], ["%a"], ["%a"]]


def test_a_repeated_line_with_a_name_the_grammar_rejects() -> None:
    """A result name with `#` is an error, also on a line otherwise equal to an earlier one."""
    line = "  {} = arith.addf %a, %a : f32\n"
    text = "func.func @f(%a: f32) {\n" + line.format("%b") + line.format("%c#1") + line.format("%d") + "  func.return\n}\n"
    assert fast_only(text) is None
    with pytest.raises(ParseError):
        p.parse(text)


@pytest.mark.parametrize("text", [
    "func.func @f(%a: !ktdQ.access_tile<16xindex>, %b: !foo.bar<2 x 4 x index>) {\n  return\n}\n",
    "func.func @f(%a: !foo.bar <16xindex>) {\n  return\n}\n",
    "func.func @f() attributes {x = #foo.bar<16xindex>, y = #foo.bar<? x index>} {\n  return\n}\n",
    "func.func @f() attributes {x = #foo.bar <16xindex>} {\n  return\n}\n",
    "func.func @f() attributes {x = #ktdp.memory_space<16xindex>} {\n  return\n}\n",
])
def test_a_dialect_body_that_lexes_as_an_access_tile_shape(text: str) -> None:
    """`<16xindex>` is one token; glued to an unknown `!x.y` or `#x.y` it is the body of a
    dialect type or attribute (the fuzz lane's seed 18, input 461: `!ktdQ.access_tile<16xindex>`)."""
    check(text)


@pytest.mark.parametrize("body", ["unspec\\ified", "a~b /c", "a\\\"b", "a \"x>y\" b", "é", "a%b", "a ^ b", "@", "a#b!c"])
def test_any_character_in_a_dialect_body(body: str) -> None:
    """The LALR lexer reads `#x.y<...>` / `!x.y<...>` whole; characters no KTIR token starts
    with are part of it (the fuzz lane's seed 52817, input 27681: `#x.y<unspec\\ified>`)."""
    check(f"#m = #foo.bar<{body}>\nfunc.func @f(%a: !foo.baz<{body}>) {{\n  return\n}}\n")


@pytest.mark.parametrize("spelled", ["!ktdp.access_tile <4x8xindex>", "!ktdp.tile\n    <4xindex>", "tensor <4xindex>",
                                     "memref <2x?xindex>", "vector <4xindex>", "!ktdp.access_tile <4x8xf32>"])
def test_a_blank_before_a_shape_token(spelled: str) -> None:
    """`<4x8xindex>` lexes as one token; after a blank it still closes the type keyword before it
    (the fuzz lane's seed 52817, input 80013: `-> !ktdp.access_tile <4x8xindex>`)."""
    check(f"func.func @f(%a: {spelled}) {{\n  return\n}}\n")


@pytest.mark.parametrize("attribute", ["<(f32), groups = affine_set<(d0) : (d0 >= 0)>>", "<index, granularity = 4>",
                                       "[<(f16), groups = affine_set<()[] : ()>>, 1]"])
def test_an_upstream_short_type_as_an_attribute_value(attribute: str) -> None:
    """A type is an attribute, upstream's short ktdp types (`<(T), groups = S>`) included (the fuzz
    lane's seed 74113, input 111937: the production parser refused them in an attribute dict)."""
    check(f"func.func @f() attributes {{t = {attribute}}} {{\n  return\n}}\n")


@pytest.mark.parametrize("param", [
    "memref<f32, affine_set<(d0) : (d0 <= 3)>>",
    "memref<4xf32, affine_set<(d0) : (d0 <= 3, 2 <= d0)>, 1>",
    "tensor<4xf32, affine_set<(d0) : (d0 <= 3)>>",
    "memref<f32, affine_set<(d0) : (d0 <= 3)> // a comment <\n>",
    "memref<f32, affine_set<(d0) : (d0 <= 3)>>, %b: memref<f32, #x.y<a>>",
])
def test_a_less_or_equal_in_a_spelled_type(param: str) -> None:
    """The lexer's scan counts the `<` of `<=`, finds no type and reads the type token by token;
    the production parser refused it (the fuzz lane's seed 91356: `affine_set<(d0) : (d0 <= 3)>`
    as a memref layout)."""
    check(f"func.func @f(%a: {param}) {{\n  return\n}}\n")


@pytest.mark.parametrize("param", ["!ktdp.access_tile<// c\n16xindex>", "!ktdp.access_tile<16x// c\nindex>",
                                   "memref<// c\n16xf32>", "tensor<16x// c\nf32>", "!ktdp.access_tile <16xindex // c\n>"])
def test_a_comment_inside_a_spelled_type(param: str) -> None:
    """The lexer takes `tensor<...>`/`memref<...>` whole (comments inside dropped) but reads a
    `!ktdp.access_tile<...>` token by token (kept); the production parser dropped them there
    too (hypothesis, test_mutated_files: a conformance case with `//c` inside a store's type)."""
    check(f"func.func @f(%a: {param}) {{\n  return\n}}\n")
