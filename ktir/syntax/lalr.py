"""A lean driver for lark's LALR tables.

lark's own loop costs several microseconds per token (Rule objects hashed per reduction,
an assert per action). This driver runs the same tables and the same rule callbacks, with
each action pre-resolved to plain tuples. Profiled before writing: it was the largest
single cost of parsing.
"""

from __future__ import annotations

from typing import Any

import lark
from lark.parsers.lalr_analysis import Shift

from ktir.syntax.diagnostics import ParseError
from ktir.syntax.lexer import Tok


class UnexpectedToken(Exception):
    def __init__(self, token: Tok, state: ParserView) -> None:
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.state = state


class _Conf:
    __slots__ = ("states", "parse_table")

    def __init__(self, states: dict[int, Any], parse_table: Any) -> None:
        self.states = states
        self.parse_table = parse_table


class ParserView:
    """What the contextual lexer and error reporting read: the current state stack."""

    __slots__ = ("parse_conf", "state_stack")

    def __init__(self, conf: _Conf, state_stack: list[int]) -> None:
        self.parse_conf = conf
        self.state_stack = state_stack

    @property
    def position(self) -> int:
        return self.state_stack[-1]


class _Text:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Driver:
    def __init__(self, parser: lark.Lark) -> None:
        inner = parser.parser.parser.parser  # ParsingFrontend -> LALR_Parser -> _Parser
        table = inner.parse_table
        callbacks = inner.callbacks
        self._lexer = parser.parser.lexer
        self._start = table.start_states
        self._end = table.end_states
        self._rows: dict[int, dict[str, tuple[bool, int, str, Any]]] = {}
        for state, actions in table.states.items():
            row = {}
            for symbol, (action, arg) in actions.items():
                # plain str keys: lark's names are Token objects with a Python-level __eq__
                if action is Shift:
                    row[str(symbol)] = (True, arg, "", None)
                else:
                    row[str(symbol)] = (False, len(arg.expansion), str(arg.origin.name), callbacks[arg])
            self._rows[state] = row
        self._conf = _Conf(self._rows, table)

    def parse(self, text: str, start: str) -> Any:
        rows = self._rows
        end_state = self._end[start]
        stack = [self._start[start]]
        values: list[Any] = []
        view = ParserView(self._conf, stack)
        last: Tok | None = None
        for tok in self._lexer.lex(_Text(text), view):
            last = tok
            kind = tok.type
            while True:
                action = rows[stack[-1]].get(kind)
                if action is None:
                    raise UnexpectedToken(tok, view)
                is_shift, arg, origin, callback = action
                if is_shift:
                    stack.append(arg)
                    values.append(tok)
                    break
                if arg:
                    children = values[-arg:]
                    del stack[-arg:]
                    del values[-arg:]
                else:
                    children = []
                try:
                    values.append(callback(children))
                except ParseError as e:
                    raise _located(e, children, tok) from None
                stack.append(rows[stack[-1]][origin][1])
        end = Tok("$END", "", len(text), last.line if last else 1, last.column if last else 1)
        while True:
            action = rows[stack[-1]].get("$END")
            if action is None:
                raise UnexpectedToken(end, view)
            _, arg, origin, callback = action
            if arg:
                children = values[-arg:]
                del stack[-arg:]
                del values[-arg:]
            else:
                children = []
            try:
                value = callback(children)
            except ParseError as e:
                raise _located(e, children, end) from None
            stack.append(rows[stack[-1]][origin][1])
            values.append(value)
            if stack[-1] == end_state:
                return value


def _first_token(value: Any, depth: int = 0) -> Tok | None:
    if isinstance(value, Tok):
        return value
    if isinstance(value, list | tuple) and depth < 3:
        for item in value:
            found = _first_token(item, depth + 1)
            if found is not None:
                return found
    return None


def _located(error: ParseError, children: list[Any], lookahead: Tok) -> ParseError:
    """A rule callback's error without a position is placed at the rule's first token
    (or, when its children hold none, at the token that ended the rule)."""
    if error.line >= 1:
        return error
    tok = _first_token(children) or lookahead
    return ParseError(error.message, tok.line, tok.column, error.diagnostics[0].file, error.diagnostics[0].id)
