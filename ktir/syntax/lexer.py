"""The contextual lexer behind `ktir.lark`.

One master regex splits the text; each word or symbol is then classified into the
grammar's terminals. Where several terminals fit (a keyword that is also a valid
identifier, an op name, `32x64x` as a shape prefix or `32` as an integer), the lexer asks
the LALR parser which terminals its current state accepts, as lark's contextual lexer
does. Tokens are light slotted objects: lark's `Token` costs more than parsing them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ktir.dialects.registry import SPELLINGS
from ktir.ir.operation import Location, new_location


class Tok:
    __slots__ = ("type", "value", "start_pos", "line", "column")
    # lark reads these when it builds the end-of-input token
    end_line = end_column = end_pos = None

    def __init__(self, type_: str, value: str, start_pos: int, line: int, column: int) -> None:
        self.type = type_
        self.value = value
        self.start_pos = start_pos
        self.line = line
        self.column = column

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r}, {self.line}:{self.column})"

    def location(self) -> Location:
        """Where the token starts, as an op's or block's location."""
        return new_location(self.line, self.column)


# Tokens taken with their whole `<...>` body, which may hold newlines.
_WHOLE_BRACKETS = frozenset({"DIALECT_ATTR", "DIALECT_TYPE", "PARSED_TYPE"})


class LexError(Exception):
    def __init__(self, message: str, pos: int, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.line = line
        self.column = column


_MASTER = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<value>%[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?)
  | (?P<symbol>@[A-Za-z_$.\-][A-Za-z0-9_$.\-]*|@"(?:\\.|[^"\\\n])*")
  | (?P<block>\^[A-Za-z0-9_$.\-]+)
  | (?P<hash>\#[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<bang>![A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<number>0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*(?:[eE][+\-]?[0-9]+)?)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<punct>->|==|>=|<=|::|[=,:<>()\[\]{}+\-*?])
    """,
    re.VERBOSE,
)
# Terminals the master regex recognises itself; the rest are keyword-like patterns.
_GENERAL = frozenset(
    {"BARE_ID", "INT", "FLOAT", "HEX_INT", "DIMS", "STRING", "VALUE_ID", "SYMBOL_REF", "BLOCK_ID", "ATTR_ALIAS", "TYPE_ALIAS"}
)
# Words that open a type with a `<...>` body, eligible for the repeated-type fast path.
_TYPE_STARTS = frozenset({"tensor", "memref", "vector", "!ktdp.access_tile", "!ktdp.tile_future", "!ktdp.runtime_arg"})
_DIMS = re.compile(r"(?:(?:[0-9]+|\?)[ \t]*x[ \t]*)+|\*x")
_FLOAT = re.compile(r"[0-9]+\.")


def _balanced_end(text: str, start: int) -> int:
    """Index just past the `>` matching the `<` at `start` (strings skipped, `->`/`>=` ignored)."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "<":
            depth += 1
        elif c == ">" and text[i - 1] != "-" and not text.startswith(">=", i):
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


class Terminals:
    """The grammar's terminals as the lexer looks them up: built once, read by every lexer."""

    __slots__ = ("literals", "patterns")

    def __init__(self, terminals: list[tuple[str, str, str]]) -> None:
        """`terminals`: (name, "str" or "re", the literal or the regexp) per terminal."""
        self.literals: dict[str, str] = {value: name for name, kind, value in terminals if kind == "str"}
        self.patterns = tuple(
            (name, re.compile(value)) for name, kind, value in terminals if kind != "str" and name not in _GENERAL
        )


class KtirLexer:
    """The contextual lexer: `lex` reads the parser's state stack to pick terminals. One
    lexer serves one parse: its word cache and its two hooks belong to that parse."""

    def __init__(
        self,
        terminals: Terminals | list[tuple[str, str, str]],
        type_hook: Callable[[str], bool] | None = None,
        comment_sink: list[tuple[int, int, str]] | None = None,
    ) -> None:
        """`type_hook`: given a type's text, parse it once (cached) and say whether it may
        be passed on as a single PARSED_TYPE token. `comment_sink`: where `//` comments go,
        as (line, column, text)."""
        if not isinstance(terminals, Terminals):
            terminals = Terminals(terminals)
        self.type_hook = type_hook
        self.comment_sink = comment_sink
        self._literals = terminals.literals
        self._patterns = terminals.patterns
        self._cache: dict[str, tuple[str, ...]] = {}

    # A word's candidate terminals, most specific first; BARE_ID last.
    def _candidates(self, text: str, kind: str) -> tuple[str, ...]:
        found = self._cache.get(text)
        if found is not None:
            return found
        names: list[str] = []
        op = SPELLINGS.get(text) if kind == "word" else None
        if op is not None:
            names.append("OP_" + op.format)
        literal = self._literals.get(text)
        if literal is not None:
            names.append(literal)
        names.extend(name for name, rx in self._patterns if rx.fullmatch(text))
        if kind == "word":
            names.append("BARE_ID")
        elif kind == "hash":
            names.append("ATTR_ALIAS")
        elif kind == "bang":
            names.append("TYPE_ALIAS")
        result = tuple(dict.fromkeys(names))
        self._cache[text] = result
        return result

    def lex(self, text: str, parser_state: Any) -> Iterator[Tok]:
        states = parser_state.parse_conf.states
        # the driver's state stack is mutated in place; reading it avoids a property call
        stack = parser_state.state_stack
        match = _MASTER.match
        candidates_of = self._candidates
        pos = 0
        line = 1
        line_start = 0
        n = len(text)
        while pos < n:
            m = match(text, pos)
            if m is None:
                raise LexError(
                    f"unexpected character {text[pos]!r}", pos, line, pos - line_start + 1
                )
            kind = m.lastgroup or ""
            end = m.end()
            if kind == "ws":
                if text[pos] == "/" and self.comment_sink is not None:
                    self.comment_sink.append((line, pos - line_start + 1, text[pos:end]))
                newlines = text.count("\n", pos, end)
                if newlines:
                    line += newlines
                    line_start = text.rfind("\n", pos, end) + 1
                pos = end
                continue
            column = pos - line_start + 1
            accepted = states[stack[-1]]
            if kind == "value":
                tok_type = "VALUE_ID"
            elif kind == "number" or (kind == "punct" and text[pos] in "?*"):
                if "DIMS" in accepted and (d := _DIMS.match(text, pos)) is not None:
                    end = d.end()
                    tok_type = "DIMS"
                elif kind == "punct":
                    tok_type = self._pick(text[pos], kind, accepted)
                elif text.startswith("0x", pos):
                    tok_type = "HEX_INT"
                elif _FLOAT.match(text, pos):
                    tok_type = "FLOAT"
                else:
                    tok_type = "INT"
            elif kind == "symbol":
                tok_type = "SYMBOL_REF"
            elif kind == "block":
                tok_type = "BLOCK_ID"
            elif kind == "string":
                tok_type = "STRING"
            else:
                word = m.group()
                if kind in ("hash", "bang") and end < n and text[end] == "<" and "." in word:
                    candidates = self._candidates(word, kind)
                    if candidates[0] in ("ATTR_ALIAS", "TYPE_ALIAS"):
                        # an attribute or type of a dialect KTIR does not model
                        close = _balanced_end(text, end)
                        if close < 0:
                            raise LexError(f"unterminated '<' after {word}", pos, line, column)
                        end = close
                        tok_type = "DIALECT_ATTR" if kind == "hash" else "DIALECT_TYPE"
                    else:
                        tok_type = self._pick(word, kind, accepted)
                elif word in _TYPE_STARTS and end < n and text[end] == "<" and "PARSED_TYPE" in accepted:
                    close = _balanced_end(text, end)
                    if close > 0 and self.type_hook is not None and self.type_hook(text[pos:close]):
                        end = close
                        tok_type = "PARSED_TYPE"
                    else:
                        tok_type = self._pick(word, kind, accepted)
                else:
                    candidates = candidates_of(word, kind)
                    tok_type = candidates[0]
                    if len(candidates) > 1 and tok_type not in accepted:
                        tok_type = self._pick(word, kind, accepted)
            yield Tok(tok_type, text[pos:end], pos, line, column)
            if tok_type in _WHOLE_BRACKETS and (newlines := text.count("\n", pos, end)):
                # a type or dialect attribute taken whole may span lines: later tokens' lines
                line += newlines
                line_start = text.rfind("\n", pos, end) + 1
            pos = end

    def _pick(self, text: str, kind: str, accepted: dict[str, Any]) -> str:
        candidates = self._candidates(text, kind)
        for name in candidates:
            if name in accepted:
                return name
        return candidates[0] if candidates else "BARE_ID"
