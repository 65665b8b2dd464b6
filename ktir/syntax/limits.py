"""What KTIR text may ask for: nesting depth, rank, integer width and literal size.

Every tool walks the IR recursively (printers, verifier, interpreter, schedulers' copies)
and hands shapes and literals to numpy. Text is untrusted, so the parser bounds what it
builds and reports an input over a bound as a located syntax error; every tool then takes
anything the parser accepts within Python's default recursion limit (1000 frames) and
numpy's array limits. The bounds are far above what kernels use (a few levels of
nesting, rank at most 8, 64-bit integers) and the same for both parsers: they are checked
before either runs, in the builder callbacks both share, or on the module built.

Nesting is bounded twice. The text's brackets first (MAX_TEXT_NESTING, a cheap scan
before parsing, so the parser itself never sees more). Then the module's own depth
(MAX_NESTING): an op inside another's region is one level deeper, an attribute or type
inside an op (or inside another attribute or type) one more, each list level of a dense
literal one more. That depth is the same whichever form the text used (the generic form
of a program spends about twice the brackets of its custom form), and is what every
walker's stack grows with: the deepest, the generic printer, takes about ten frames per
level.
"""

from __future__ import annotations

import re
from typing import Any

from ktir.ir.base import Attribute, Type
from ktir.ir.types import INT64_MAX as INT64_MAX  # re-exported: int64 in MLIR
from ktir.syntax.diagnostics import ParseError

# Depth of a module: regions, attributes, types, dense literal lists (see above).
MAX_NESTING = 64
# Brackets open at once in the text: enough for the generic form of any module within
# MAX_NESTING (two brackets per region, one per attribute or type level, and a few more).
MAX_TEXT_NESTING = 3 * MAX_NESTING
# Depth of an affine expression's tree (`d0 + d0 + ...` is a chain as deep as its terms).
MAX_AFFINE_DEPTH = 64
# numpy's limit on the dimensions of an array (NPY_MAXDIMS).
MAX_RANK = 64
# MLIR's IntegerType::kMaxWidth.
MAX_INT_WIDTH = (1 << 24) - 1
# Digits of one integer literal: below Python's 4,300-digit limit on converting between
# int and decimal text. A hex literal may print back in decimal: at most as many hex
# digits as make a number of MAX_LITERAL_DIGITS decimal ones (16**2490 < 10**3000).
MAX_LITERAL_DIGITS = 3000
MAX_HEX_DIGITS = 2490

# Brackets, and what holds brackets that do not nest: `->`, `>=` and `<=`, strings and
# comments (the lexer's spelling of both).
_BRACKETS = re.compile(r'->|>=|<=|[\[\](){}<>]|"(?:\\.|[^"\\\n])*"|//[^\n]*')
_OPEN = frozenset("[({<")
_CLOSE = frozenset("])}>")


def text_nesting(text: str, filename: str | None = None) -> int:
    """The deepest nesting of brackets in `text`; a ParseError at the first bracket that
    opens more than MAX_TEXT_NESTING. Strings and comments do not count."""
    # cheap test first: text with few opening brackets cannot nest deeply
    opening = text.count("{") + text.count("(") + text.count("[") + text.count("<")
    if opening <= MAX_NESTING:
        return opening
    depth = deepest = 0
    for m in _BRACKETS.finditer(text):
        s = m.group()
        if s in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > MAX_TEXT_NESTING:
                    line = text.count("\n", 0, m.start()) + 1
                    column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                    raise ParseError(f"nesting deeper than {MAX_TEXT_NESTING} levels of brackets", line, column, filename)
        elif s in _CLOSE and depth:
            depth -= 1
    return deepest


def check_module_nesting(module: Any, alias_lines: list[tuple[int, int, str]], filename: str | None = None) -> None:
    """A ParseError at the first op (or alias) of `module` nested deeper than MAX_NESTING,
    walking with an explicit stack (the module may be as deep as the text allowed)."""
    for line, column, key in alias_lines:
        value = (module.attr_aliases if key[0] == "#" else module.type_aliases).get(key[1:])
        if value is not None and value_depth(value, 0) > MAX_NESTING:
            raise _too_deep(line, column, filename)
    stack = [(op, 0, op.loc) for op in reversed(module.operations)]
    while stack:
        op, level, where = stack.pop()
        where = op.loc or where  # an op the parser added (an implicit terminator) has none
        deepest = level
        for value in (*op.attributes.values(), *(op.properties or {}).values(), *op.operand_types, *op.result_types):
            deepest = max(deepest, value_depth(value, level))
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    deepest = max(deepest, value_depth(arg.type, level + 1))
                stack.extend((inner, level + 1, where) for inner in reversed(block.operations))
        if deepest > MAX_NESTING:
            line, column = (where.line, where.column) if where is not None else (0, 0)
            raise _too_deep(line, column, filename)


def _too_deep(line: int, column: int, filename: str | None) -> ParseError:
    return ParseError(f"nested deeper than {MAX_NESTING} levels (regions, attributes, types and dense lists)",
                      line, column, filename)


# Attributes and types written without brackets (`1 : i32`, `f32`, `@sym`, `#alias`):
# no level of their own. Every other one is written in brackets and is one level, so a
# module's depth is never more than its text's bracket depth (the parser checks the
# module only when the text nests deeper than MAX_NESTING).
_FLAT = frozenset(
    {"IntegerAttr", "FloatAttr", "StringAttr", "BoolAttr", "UnitAttr", "TypeAttr", "SymbolRefAttr", "AttrAliasRef",
     "IndexType", "NoneType", "IntegerType", "FloatType", "TypeAliasRef"}
)


def value_depth(value: Attribute | Type, level: int) -> int:
    """`level` plus the depth of an attribute or type: one per bracketed attribute or
    type, one per list level of a dense literal (affine expressions are bounded apart)."""
    deepest = level
    stack: list[tuple[Any, int]] = [(value, level)]
    while stack:
        x, d = stack.pop()
        name = type(x).__name__
        if name not in _FLAT:
            d += 1
        deepest = max(deepest, d)
        for field in x.__dict__.values():
            if isinstance(field, Type | Attribute):
                stack.append((field, d))
            elif isinstance(field, tuple):
                if name == "DenseAttr":
                    deepest = max(deepest, d + _list_depth(field))
                    continue
                for item in field:
                    if isinstance(item, Type | Attribute):
                        stack.append((item, d))
                    elif isinstance(item, tuple):  # a dictionary's (name, value) entries
                        stack.extend((sub, d) for sub in item if isinstance(sub, Type | Attribute))
    return deepest


def _list_depth(values: tuple[Any, ...]) -> int:
    deepest = 0
    stack = [(values, 1)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((x, d + 1) for x in v if isinstance(x, tuple))
    return deepest


def literal_digits_error(text: str) -> str | None:
    """Why the integer literal `text` (decimal, or hex with 0x) is refused, or None."""
    if text[:2] in ("0x", "0X"):
        if len(text) - 2 > MAX_HEX_DIGITS:
            return f"hexadecimal literal of {len(text) - 2} digits (at most {MAX_HEX_DIGITS})"
        return None
    if len(text) > MAX_LITERAL_DIGITS:
        return f"integer literal of {len(text)} digits (at most {MAX_LITERAL_DIGITS})"
    return None
