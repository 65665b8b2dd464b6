"""A Pygments lexer for KTIR text (`.ktir`), for the docs site and any Pygments user.

Registered under the `pygments.lexers` entry point as `ktir`, so ```` ```ktir ```` code
blocks in Markdown and `pygmentize -l ktir file.ktir` highlight KTIR. Op names the
registry defines are keywords; SSA values, block labels, symbols, aliases, types and
affine-map words each get their own token type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from pygments.lexer import RegexLexer, bygroups
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
    _TokenType,
)

from ktir.dialects.registry import SPELLINGS

__all__ = ["KtirLexer"]

_TYPE_WORDS = frozenset(
    {
        "index", "none", "tensor", "memref", "vector", "complex", "tuple",
        "f16", "bf16", "f32", "f64", "tf32", "f8E4M3FN", "f8E5M2", "f8E4M3", "f8E5M2FNUZ", "f8E4M3FNUZ",
    }
)  # fmt: skip

_KEYWORDS = frozenset(
    {
        "affine_map", "affine_set", "array", "attributes", "ceildiv", "dense", "dense_resource", "dim",
        "dimensions", "do", "else", "floordiv", "from", "groups", "high", "identity", "in", "ind",
        "init", "ins", "intermediate_variables", "into", "iter_args", "low", "mod", "nested", "nofold",
        "offset", "outs", "output_shape", "permutation", "private", "public", "shared_outs", "sizes",
        "step", "strided", "strides", "symbol", "symbols", "to", "unit", "fastmath", "overflow",
        "producer_tiles_per_group", "consumer_tiles_per_group", "producer_dependency_per_consumer",
        "gather_dimensions", "scatter_dimensions", "split_dimensions", "concat_dimensions",
    }
)  # fmt: skip

_CONSTANTS = frozenset({"true", "false"})


def _is_integer_type(word: str) -> bool:
    body = word[1:] if word[:1] in ("s", "u") else word
    return len(body) > 1 and body[0] == "i" and body[1:].isdigit() and body[1] != "0"


def _word(lexer: RegexLexer, match: Any) -> Iterator[tuple[int, _TokenType, str]]:
    word: str = match.group(0)
    if word in SPELLINGS:
        token = Keyword
    elif word in _TYPE_WORDS or _is_integer_type(word):
        token = Keyword.Type
    elif word in _CONSTANTS:
        token = Keyword.Constant
    elif word in _KEYWORDS:
        token = Keyword.Reserved
    else:
        token = Name
    yield match.start(), token, word


class KtirLexer(RegexLexer):
    """KTIR: MLIR's custom assembly of the ktdp, arith, math, linalg, tensor, memref, scf,
    affine and func dialects, and MLIR's generic op form."""

    name = "KTIR"
    aliases: ClassVar[list[str]] = ["ktir"]
    filenames: ClassVar[list[str]] = ["*.ktir"]
    mimetypes: ClassVar[list[str]] = ["text/x-ktir"]
    url = "https://github.com/torch-spyre"

    tokens: ClassVar[dict[str, Any]] = {
        "root": [
            (r"[ \t\r\n]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r'"(\\.|[^"\\])*"', String),
            (r"%[A-Za-z0-9_$.\-]+(#[0-9]+)?", Name.Variable),
            (r"\^[A-Za-z0-9_$.\-]+", Name.Label),
            (r'@[A-Za-z_$.\-][A-Za-z0-9_$.\-]*|@"[^"]*"', Name.Function),
            (r"![A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z0-9_$.]+", Keyword.Type),
            (r"![A-Za-z_][A-Za-z0-9_$.]*", Name.Class),
            (r"#[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z0-9_$.]+", Name.Builtin),
            (r"#[A-Za-z_][A-Za-z0-9_$.]*", Name.Constant),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"[0-9]+\.[0-9]*([eE][+\-]?[0-9]+)?", Number.Float),
            # a shape prefix: `32x64x`, `?x`, `*x`
            (r"([0-9]+|\?|\*)([ \t]*)(x)(?=[ \t]*[0-9?A-Za-z!])", bygroups(Number.Integer, Whitespace, Punctuation)),
            (r"[0-9]+", Number.Integer),
            (r"[A-Za-z_][A-Za-z0-9_$.]*", _word),
            (r"->|==|>=|<=|::", Operator),
            (r"[=+\-*]", Operator),
            (r"[()\[\]{}<>,:?]", Punctuation),
            (r".", Text),
        ]
    }
