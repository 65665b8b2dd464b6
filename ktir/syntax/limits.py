"""What KTIR text may ask for: nesting depth, rank, integer width and literal size.

Every tool walks the IR recursively (printers, verifier, interpreter, AST equality) and
hands shapes and literals to numpy. Text is untrusted, so the parser bounds what it
builds and reports an input over a bound as a located syntax error; every tool can then
take anything the parser accepts within Python's default recursion limit and numpy's
array limits. The bounds are far above what kernels use (a few levels of nesting, rank
at most 8, 64-bit integers) and are the same in both parsers (they run in the shared
builder callbacks, or before either parser runs).
"""

from __future__ import annotations

import re

from ktir.syntax.diagnostics import ParseError

# Brackets open at once: regions `{`, parentheses, lists `[`, `<...>` of types and
# attributes. Each level costs the deepest walker (the generic printer) about ten Python
# frames; 64 levels stay well inside the default limit of 1000 with the caller's frames.
MAX_NESTING = 64
# Depth of an affine expression's tree (`d0 + d0 + ...` is a chain as deep as its terms).
MAX_AFFINE_DEPTH = 64
# numpy's limit on the dimensions of an array (NPY_MAXDIMS).
MAX_RANK = 64
# MLIR's IntegerType::kMaxWidth.
MAX_INT_WIDTH = (1 << 24) - 1
# Digits of one integer literal (decimal or hex): below Python's 4,300-digit limit on
# converting between int and decimal text, with room for what the printer writes back.
MAX_LITERAL_DIGITS = 3000
# Shapes, strides, offsets and affine constants are int64 in MLIR.
INT64_MAX = (1 << 63) - 1

# Brackets, and what holds brackets that do not nest: `->`, `>=` and `<=`, strings and
# comments (the lexer's spelling of both).
_BRACKETS = re.compile(r'->|>=|<=|[\[\](){}<>]|"(?:\\.|[^"\\\n])*"|//[^\n]*')
_OPEN = frozenset("[({<")
_CLOSE = frozenset("])}>")


def check_nesting(text: str, filename: str | None = None) -> None:
    """Raise a ParseError at the first bracket that opens more than MAX_NESTING levels."""
    # cheap test first: text with few opening brackets cannot nest deeply
    if text.count("{") + text.count("(") + text.count("[") + text.count("<") <= MAX_NESTING:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        s = m.group()
        if s in _OPEN:
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, m.start()) + 1
                column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                raise ParseError(f"nesting deeper than {MAX_NESTING} levels of brackets", line, column, filename)
        elif s in _CLOSE and depth:
            depth -= 1


def literal_digits_error(text: str) -> str | None:
    """Why the integer literal `text` (decimal, or hex with 0x) is refused, or None."""
    digits = len(text) - 2 if text[:2] in ("0x", "0X") else len(text)
    if digits > MAX_LITERAL_DIGITS:
        return f"integer literal of {digits} digits (at most {MAX_LITERAL_DIGITS})"
    return None
