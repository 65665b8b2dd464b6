"""The LALR tables of `ktir.lark`, cached on disk, and a lean driver for them.

lark's grammar analysis takes about a second; its own parse loop several microseconds per
token (Rule objects hashed per reduction, an assert per action). So lark runs only when
the grammar changed: `load_tables` turns its tables into plain tuples, keyed by the
grammar's hash and kept in the user's cache directory, and `Driver` runs them with the
rule callbacks lark would have called, children shaped the way lark shapes them
(anonymous tokens dropped, `?rule` inlined, `__star` helpers spliced). A missing, stale,
corrupt or unwritable cache only costs the rebuild; it never changes a parse.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from ktir.syntax.diagnostics import ParseError
from ktir.syntax.lexer import KtirLexer, Terminals, Tok

FORMAT = 3  # bump when the layout of the cached tables changes
Tables = dict[str, Any]


class UnexpectedToken(Exception):
    def __init__(self, token: Tok, state: ParserView) -> None:
        super().__init__(f"unexpected {token.type}")
        self.token = token
        self.state = state


class _Conf:
    __slots__ = ("states",)

    def __init__(self, states: dict[int, Any]) -> None:
        self.states = states


class ParserView:
    """What the contextual lexer and error reporting read: the current state stack.

    `parse_conf.states[state]` maps each acceptable symbol to its action: (True, target)
    for a shift or goto, (False, length, origin, rule) for a reduction."""

    __slots__ = ("parse_conf", "state_stack")

    def __init__(self, conf: _Conf, state_stack: list[int]) -> None:
        self.parse_conf = conf
        self.state_stack = state_stack

    @property
    def position(self) -> int:
        return self.state_stack[-1]


class Tree:
    """What lark builds for a rule the callbacks do not name (never reached by a valid
    parse of ktir.lark: such rules are `?rule`s with one child)."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list[Any]) -> None:
        self.data = data
        self.children = children

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


# ---------------------------------------------------------------- tables


def cache_dir() -> Path:
    """`$KTIR_CACHE_DIR`, else `$XDG_CACHE_HOME/ktir`, else `~/.cache/ktir`."""
    explicit = os.environ.get("KTIR_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ktir"


def load_tables(grammar: str, starts: tuple[str, ...]) -> Tables:
    """The tables for `grammar`, from the cache when it holds them, else built by lark and
    stored (atomically, best effort) for the next process. A cache file that does not match
    its checksum is rebuilt."""
    key = _fast_key(grammar, starts)
    path = cache_dir() / f"lalr-{key}.marshal"
    try:
        data = path.read_bytes()
        # the file is the SHA-256 of the tables, then the tables: a damaged file (a flipped
        # bit leaves marshal data that loads, with a wrong entry) is rebuilt, never used
        digest, blob = data[:_DIGEST], data[_DIGEST:]
        if hashlib.sha256(blob).digest() == digest:
            tables = marshal.loads(blob)
            if isinstance(tables, dict) and tables.get("key") == key and tables.get("format") == FORMAT:
                return tables
    except (OSError, ValueError, EOFError, TypeError):
        pass
    tables = build_tables(grammar, starts)
    tables["key"] = key
    blob = marshal.dumps(tables)
    _store(path, hashlib.sha256(blob).digest() + blob)
    return tables


_DIGEST = 32  # bytes of a SHA-256 digest


def _fast_key(grammar: str, starts: tuple[str, ...]) -> str:
    # importlib.metadata costs more than the whole table load; lark's version is in the
    # module only once lark is imported, so key on its installed file instead
    lark_marker = _lark_marker()
    text = "\0".join([grammar, *starts, str(FORMAT), lark_marker, sys.version.split()[0]])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _lark_marker() -> str:
    """Identifies the installed lark without importing it: its package path and mtime."""
    import importlib.util

    spec = importlib.util.find_spec("lark")
    if spec is None or spec.origin is None:
        return "no-lark"
    try:
        return f"{spec.origin}:{os.stat(spec.origin).st_mtime_ns}"
    except OSError:
        return spec.origin


def _store(path: Path, data: bytes) -> None:
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".lalr-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # an unwritable cache: the next process builds the tables again


def build_tables(grammar: str, starts: tuple[str, ...]) -> Tables:
    """Run lark's LALR analysis and keep what parsing needs, as plain data."""
    import lark
    from lark.lexer import Lexer
    from lark.parsers.lalr_analysis import Shift

    class _NoLexer(Lexer):  # lark wants a lexer class; the tables are all we take
        def __init__(self, conf: Any) -> None:
            pass

        def lex(self, *args: Any) -> Iterator[Any]:
            raise NotImplementedError

    parser = lark.Lark(grammar, parser="lalr", lexer=_NoLexer, start=list(starts), maybe_placeholders=False)
    table = parser.parser.parser.parser.parse_table
    rule_index: dict[Any, int] = {}
    rules: list[tuple[str, int, str, bool, list[tuple[int, bool]] | None]] = []
    for rule in parser.rules:
        rule_index[rule] = len(rules)
        rules.append(_rule_entry(rule))
    shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # one object per distinct action
    rows: dict[int, dict[str, tuple[Any, ...]]] = {}
    for state, actions in table.states.items():
        row = {}
        for symbol, (action, arg) in actions.items():
            if action is Shift:
                entry: tuple[Any, ...] = (True, arg)
            else:
                entry = (False, len(arg.expansion), str(arg.origin.name), rule_index[arg])
            row[str(symbol)] = shared.setdefault(entry, entry)
        rows[state] = row
    terminals = [
        (t.name, t.pattern.type, t.pattern.value if t.pattern.type == "str" else t.pattern.to_regexp())
        for t in parser.terminals
    ]
    return {
        "format": FORMAT,
        # each rule's symbols, for generating text from the grammar (tests/fuzz)
        "expansions": [[str(sym.name) for sym in rule.expansion] for rule in parser.rules],
        "start": dict(table.start_states),
        "end": dict(table.end_states),
        "rows": rows,
        "rules": rules,
        "terminals": terminals,
    }


def _rule_entry(rule: Any) -> tuple[str, int, str, bool, list[tuple[int, bool]] | None]:
    """(origin, length, callback name, inline-single-child, children to keep) for one rule,
    computed as lark's parse_tree_builder does without placeholders."""
    name = str(rule.alias or rule.options.template_source or rule.origin.name)
    expand1 = bool(rule.options.expand1 and not rule.alias)
    keep_all = rule.options.keep_all_tokens
    include = [
        (i, (not sym.is_term) and sym.name.startswith("_"))
        for i, sym in enumerate(rule.expansion)
        if keep_all or not (sym.is_term and sym.filter_out)
    ]
    needs_filter = len(include) < len(rule.expansion) or any(splice for _, splice in include)
    return str(rule.origin.name), len(rule.expansion), name, expand1, include if needs_filter else None


def make_callbacks(rules: list[Any], builder_class: type) -> list[Callable[[Any, list[Any]], Any]]:
    """One callable per rule, `(builder, children)`, from `builder_class`'s method of the
    rule's name (or alias). Nothing is bound: one driver serves every parse, each with its
    own builder."""
    callbacks = []
    for origin, _, name, expand1, include in rules:
        method = getattr(builder_class, name, None)
        if method is None:
            method = _list if origin.startswith("_") else _tree_maker(name)
        callbacks.append(_shape(method, expand1, include))
    return callbacks


def _list(b: Any, children: list[Any]) -> list[Any]:
    return list(children)


def _tree_maker(name: str) -> Callable[[Any, list[Any]], Any]:
    return lambda b, children: Tree(name, children)


def _shape(
    method: Callable[[Any, list[Any]], Any], expand1: bool, include: list[tuple[int, bool]] | None
) -> Callable[[Any, list[Any]], Any]:
    if include is None:
        if not expand1:
            return method
        return lambda b, children: children[0] if len(children) == 1 else method(b, children)
    keep = tuple(i for i, _ in include)
    if not any(splice for _, splice in include):
        if len(keep) == 1:
            (only,) = keep
            if expand1:
                return lambda b, children: children[only]
            return lambda b, children: method(b, [children[only]])

        def pick(b: Any, children: list[Any]) -> Any:
            kept = [children[i] for i in keep]
            return kept[0] if expand1 and len(kept) == 1 else method(b, kept)

        return pick
    plan = tuple(include)

    def splice(b: Any, children: list[Any]) -> Any:
        kept: list[Any] = []
        for i, spliced in plan:
            if spliced:
                if kept:
                    kept += children[i]
                else:
                    kept = children[i]  # the left-recursive helper's own list, reused
            else:
                kept.append(children[i])
        return kept[0] if expand1 and len(kept) == 1 else method(b, kept)

    return splice


# ---------------------------------------------------------------- driver


class Driver:
    """The tables and the rule callbacks, shared by every parse and never changed by one:
    each parse brings its own builder and lexer."""

    def __init__(self, tables: Tables, builder_class: type) -> None:
        self._rows: dict[int, dict[str, tuple[Any, ...]]] = tables["rows"]
        self._start: dict[str, int] = tables["start"]
        self._end: dict[str, int] = tables["end"]
        self.terminals: list[tuple[str, str, str]] = tables["terminals"]
        self._callbacks = make_callbacks(tables["rules"], builder_class)
        self._conf = _Conf(self._rows)
        self._terminals = Terminals(self.terminals)

    def lexer(self, type_hook: Callable[[str], bool] | None = None, comment_sink: list[Any] | None = None) -> KtirLexer:
        """A lexer for one parse (see KtirLexer)."""
        return KtirLexer(self._terminals, type_hook, comment_sink)

    def parse(self, text: str, start: str, builder: Any, lexer: KtirLexer | None = None) -> Any:
        """Parse `text` from rule `start`, the callbacks building through `builder`."""
        rows = self._rows
        callbacks = self._callbacks
        end_state = self._end[start]
        stack = [self._start[start]]
        values: list[Any] = []
        view = ParserView(self._conf, stack)
        last: Tok | None = None

        def end() -> Iterator[Tok]:  # placed at the last token, as errors show it
            yield Tok("$END", "", len(text), last.line if last else 1, last.column if last else 1)

        for tok in chain((lexer or self.lexer()).lex(text, view), end()):
            last = tok
            kind = tok.type
            while True:
                action = rows[stack[-1]].get(kind)
                if action is None:
                    raise UnexpectedToken(tok, view)
                if action[0]:
                    stack.append(action[1])
                    values.append(tok)
                    break
                _, size, origin, rule = action
                if size:
                    children = values[-size:]
                    del stack[-size:]
                    del values[-size:]
                else:
                    children = []
                try:
                    values.append(callbacks[rule](builder, children))
                except ParseError as e:
                    raise _located(e, children, tok) from None
                stack.append(rows[stack[-1]][origin][1])
                if stack[-1] == end_state and kind == "$END":
                    return values[-1]
        raise AssertionError("the lexer ends every text with $END")

    def acceptable(self, view: ParserView) -> set[str]:
        """Terminals that would really be shifted next: LALR error states list lookaheads
        of pending reductions from every context, so replay the reductions."""
        rows = self._rows
        found = set()
        for terminal in rows[view.position]:
            if not terminal.isupper():
                continue
            stack = list(view.state_stack)
            while True:
                action = rows[stack[-1]].get(terminal)
                if action is None:
                    break
                if action[0]:
                    found.add(terminal)
                    break
                size = action[1]
                if size:
                    del stack[-size:]
                goto = rows[stack[-1]].get(action[2])
                if goto is None:
                    break
                stack.append(goto[1])
        return found

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
