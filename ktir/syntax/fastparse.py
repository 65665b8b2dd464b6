"""The production parser of KTIR text: recursive descent over one scan of the text.

The grammar (`ktir.lark`, run by `ktir.syntax.lalr`) stays normative and is the tests'
oracle. This parser hands each grammar rule's children to the same callbacks
(`ktir.syntax.parser._Builder`), shaped as the LALR parser shapes them, so both build the
same AST. The declarative assembly formats are read by code generated from their
descriptions (`reader_source`, like their grammar rules and printers); the irregular ones
(`ktir.syntax.assembly.HAND_WRITTEN`) by the methods of `_Parser`. It reads every text
the grammar accepts, and no other (tests/syntax/test_fastparse_equivalence.py checks both
ways, and the modules, on every file we have, on generated programs and on mutations of
both). It never reports an error itself: on anything wrong it raises `Fallback`, and
`ktir.syntax.parser.parse` has the grammar report the error.

Context the LALR lexer takes from the parser state is taken here from the position in
the rule: a type starting `tensor<`, `memref<`, `vector<` or `!ktdp.access_tile<` is one
token (parsed once per distinct text, as the LALR lexer's PARSED_TYPE does), and its
shape prefix (`4x?x`) is read only there.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from contextlib import suppress
from itertools import accumulate, compress, count, repeat
from operator import add, contains, itemgetter
from typing import Any

from ktir.dialects.registry import SPELLINGS
from ktir.ir.operation import Location, new_location
from ktir.syntax import assembly as asm
from ktir.syntax.lexer import _DIMS, Tok, _balanced_end

# One token with the whitespace before it: a type with its `<...>` body (one nesting level)
# or any other token. One findall over the whole text, without groups (a group per match
# doubles the scan's cost in tuples); each token is classified afterwards by its first
# character, and a type by its `<` and closing `>` (no other token of more than two
# characters has both, but a comment). The type body's quantifiers are possessive (no
# backtracking can help: its classes exclude the `<`/`>` that would end a run). An `->`
# (a function type's or an affine map's arrow), and in the nested level a `>=` (an affine
# set's), close nothing, as the LALR lexer's `_balanced_end` reads them; a comment ends the
# token (the type is read in pieces, see _Parser.spelled_type).
_SCAN = re.compile(
    r"""[ \t\r\n]*(?:
    (?:tensor|memref|vector|!ktdp\.access_tile|!ktdp\.tile)<(?:[^<>"\n\-/]++|->?|/(?!/)|<(?:[^<>"\n\-/]++|->?|/(?!/)|>=)*+>)*+>
  | <(?:(?:[0-9]+|\?)[ \t]*x[ \t]*)+index>
  | %[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?
  | ->|==|>=|<=|::|[=,:<>()\[\]{}+\-*?]
  | [A-Za-z_][A-Za-z0-9_$.]*
  | 0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*(?:[eE][+\-]?[0-9]+)?)?
  | \#[A-Za-z_][A-Za-z0-9_$.]*
  | @[A-Za-z_$.\-][A-Za-z0-9_$.\-]*|@"(?:\\.|[^"\\\n])*"
  | ![A-Za-z_][A-Za-z0-9_$.]*
  | "(?:\\.|[^"\\\n])*"
  | \^[A-Za-z0-9_$.\-]+
  | //[^\n]*
  | [^ \t\r\n])""",
    re.VERBOSE,
)
# The last alternative above takes one character no token starts with (a `\` or `~` inside a
# dialect attribute's `<...>`, which the LALR lexer reads whole): raw_bracketed can step
# over it, and anywhere else the parser meets a token it does not expect. Alone, these
# characters would get the kind of the token they start (a lone `/` a comment's): "other".
_LONE = frozenset('@%#!"^/')
_KIND = {c: "word" for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"}
_KIND.update({c: "number" for c in "0123456789"})
_KIND.update({"%": "value", "#": "hash", "!": "bang", '"': "string", "@": "symbol", "^": "block", "/": "comment"})
_FIRST = itemgetter(0)
# blanks and comments, where the LALR lexer skips them
_BLANKS = re.compile(r"(?:[ \t\r\n]+|//[^\n]*)*")
_WORD = re.compile(r"!?[A-Za-z_][A-Za-z0-9_$.]*")

# Terminals of ktir.lark this parser spells out (test_fastparse_equivalence checks them
# against the grammar).
INTEGER_TYPE = re.compile(r"[su]?i[1-9][0-9]*")
FLOAT_TYPES = frozenset({"f16", "bf16", "f32", "f64", "tf32", "f8E4M3FN", "f8E5M2", "f8E4M3", "f8E5M2FNUZ", "f8E4M3FNUZ"})
AFF_DIV_OPS = frozenset({"floordiv", "ceildiv", "mod"})
CMP_OPS = frozenset({"==", ">=", "<="})
FLAG_KINDS = frozenset({"fastmath", "overflow"})
# formats of the ops a linalg.map / linalg.reduce short body `{ op }` may name (ktir.lark: op_name)
SHORT_BODY_FORMATS = frozenset({"BINARY", "UNARY", "TERNARY", "CMP", "SELECT"})
VISIBILITIES = frozenset({"private", "public", "nested"})
MEMSPACE_KWS = frozenset({"#ktdp.memory_space", "#ktdp.spyre_memory_space"})
# ACCESS_TILE_KW, FUTURE_KW, RUNTIME_ARG_KW: the `!x.y` words that are no dialect type
TYPE_KWS = frozenset({"!ktdp.access_tile", "!ktdp.tile", "!ktdp.tile_future", "!ktdp.runtime_arg"})



class Fallback(Exception):
    """This text is wrong: the grammar reports how."""


def parse_fast(text: str, builder: Any) -> Any:
    """The Module for `text`, built through `builder`'s callbacks; Fallback if this path
    cannot take it. `builder` must be freshly reset; comments go to builder.comments."""
    # where each line starts: 0, then one past each newline (summed in C, not per line)
    starts = list(accumulate(map(add, map(len, text.split("\n")), repeat(1)), initial=0))
    starts.pop()
    tokens = _Tokens(text, 0, starts)
    # every table the parse fills belongs to this parse: nothing one text defines or
    # spells can reach the parse of another (no module-level mutable state)
    module = _Parser(tokens, builder, {}, {}, {}).module()
    for pos, comment in tokens.comments:
        builder.comments.append((*_line_column(starts, pos), comment))
    _age_new_objects()
    return module


def _line_column(starts: list[int], pos: int) -> tuple[int, int]:
    """The 1-based line and column of offset `pos`, `starts` being where each line starts."""
    line = bisect_right(starts, pos)
    return line, pos - starts[line - 1] + 1


def _age_new_objects() -> None:
    """Move every object the collector tracks to its oldest generation, without a pass.

    The parse runs with the collector off (ktir.syntax.parser.parse); the tree it made is
    all young, so the first allocation after it would have the collector walk the whole
    tree (15% of a large parse) only to find it alive. freeze + unfreeze re-links the
    generations in O(1) and clears the young count: the tree is looked at again only by
    full collections, like any long-lived data. Skipped if the program froze objects
    itself (unfreeze would release them). The caller's young garbage was collected before
    the parse (ktir.syntax.parser.parse): aged with the tree, only a full collection would
    find it (tests/syntax/test_parse_gc.py)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


class _Tokens:
    """The text's tokens as parallel lists: kinds (None for punctuation), texts, and the
    length of the whitespace before each; positions are summed up only when asked."""

    def __init__(self, text: str, base: int, starts: list[int]) -> None:
        """`starts`: where each line of the whole text starts; `base`: where `text` starts in it."""
        # findall skips what no token matches (a character the grammar has no token for);
        # a sentinel `,` after the text makes every skipped character show in the lengths
        # (the tail check below misses one when the text ends in a comment with blanks)
        found = _SCAN.findall(text + "\n,")
        if sum(map(len, found)) != len(text) + 2:
            raise Fallback
        found.pop()
        values = list(map(str.lstrip, found))
        kinds: list[str | None] = list(map(_KIND.get, map(_FIRST, values)))
        for i in compress(count(), map(_LONE.__contains__, values)):
            kinds[i] = "other"
        for i in compress(count(), map(contains, values, repeat("<"))):
            value = values[i]
            if len(value) > 2 and value[-1] == ">" and kinds[i] != "comment":
                kinds[i] = "type"
        # ends[i + 1]: where token i ends
        ends = list(accumulate(map(len, found), initial=base))
        # findall skips what no token matches: a character the grammar has no token for
        # (a comment ending the text keeps the blanks after it)
        if text[ends[-1] - base :].strip(" \t\r\n"):
            raise Fallback
        self.comments: list[tuple[int, str]] = []
        # comments are moved out of the token lists (their positions stay in `ends`); they
        # are few, so they are deleted one by one, last first
        gone = []
        if "comment" in kinds:
            i = kinds.index("comment")
            with suppress(ValueError):
                while True:
                    gone.append(i)
                    i = kinds.index("comment", i + 1)
        for i in gone:
            self.comments.append((ends[i + 1] - len(values[i]), values[i]))
        for i in reversed(gone):
            del kinds[i], values[i], ends[i + 1]
        kinds.append("end")
        values.append("")
        ends.append(ends[-1])
        self.text = text
        self.base = base
        self.kinds = kinds
        self.values = values
        self.starts = starts
        self.ends = ends

    def position(self, i: int) -> int:
        """Where token `i` starts."""
        return self.ends[i + 1] - len(self.values[i])


class _LazyTok(Tok):
    """A token whose line and column are found only if a callback asks (most never do)."""

    __slots__ = ("_tokens", "_index")

    def __init__(self, type_: str, value: str, tokens: _Tokens, index: int) -> None:  # noqa: D107
        self.type = type_
        self.value = value
        self._tokens = tokens
        self._index = index

    @property
    def start_pos(self) -> int:  # type: ignore[override]
        return self._tokens.position(self._index)

    @property
    def line(self) -> int:  # type: ignore[override]
        return self.location().line

    @property
    def column(self) -> int:  # type: ignore[override]
        return self.location().column

    def location(self) -> Location:
        tokens = self._tokens
        return new_location(*_line_column(tokens.starts, tokens.position(self._index)))


class _Parser:
    def __init__(
        self,
        tokens: _Tokens,
        builder: Any,
        types: dict[str, Any],
        scalars: dict[str, Any],
        affine: dict[tuple[str, ...], Any],
    ) -> None:
        self.tokens = tokens
        self.K = tokens.kinds
        self.V = tokens.values
        self.i = 0
        self.starts = tokens.starts  # where each line of the whole text starts
        self.b = builder
        self.types = types  # type text -> Type, for texts that parsed without warnings
        self.scalars = scalars  # `index`, `f32`, ... -> Type
        self.affine = affine  # an affine map/set's tokens -> the map or set; see kept_affine
        self.whole_comments: tuple[int, int] | None = None  # see raw_bracketed

    # ------------------------------------------------------------ tokens

    def tok(self, kind: str) -> Tok:
        """The current token as a `kind` terminal, consumed."""
        i = self.i
        self.i = i + 1
        return _LazyTok(kind, self.V[i], self.tokens, i)

    def expect(self, text: str) -> None:
        if self.V[self.i] != text:
            raise Fallback
        self.i += 1

    def expect_all(self, *texts: str) -> None:
        for text in texts:
            self.expect(text)

    def value(self) -> Tok:
        i = self.i
        if self.K[i] != "value":
            raise Fallback
        self.i = i + 1
        return _LazyTok("VALUE_ID", self.V[i], self.tokens, i)

    def comma_list(self, item: Callable[[], Any]) -> list[Any]:
        """item ("," item)*"""
        items = [item()]
        V = self.V
        while V[self.i] == ",":
            self.i += 1
            items.append(item())
        return items

    def enclosed(self, open_: str, item: Callable[[], Any], close: str) -> list[Any]:
        """open_ (item ("," item)*)? close (its own token checks: attribute dicts are hot)"""
        V = self.V
        if V[self.i] != open_:
            raise Fallback
        self.i += 1
        if V[self.i] == close:
            self.i += 1
            return []
        items = self.comma_list(item)
        if V[self.i] != close:
            raise Fallback
        self.i += 1
        return items

    def value_list(self) -> Any:
        """value ("," value)*"""
        return self.b.value_list(self.comma_list(self.value))

    def word(self, kind: str = "BARE_ID") -> Tok:
        if self.K[self.i] != "word":
            raise Fallback
        return self.tok(kind)

    def int_tok(self) -> Tok:
        i = self.i
        if self.K[i] != "number" or not self.V[i].isdigit():
            raise Fallback
        return self.tok("INT")

    def signed_int(self) -> int:
        if self.V[self.i] == "-":
            self.i += 1
            return self.b.neg_int([self.int_tok()])  # type: ignore[no-any-return]
        return self.b.pos_int([self.int_tok()])  # type: ignore[no-any-return]

    def attr_dict_opt(self, children: list[Any]) -> None:
        if self.V[self.i] == "{":
            children.append(self.attr_dict())

    # ------------------------------------------------------------ top level

    def module(self) -> Any:
        K, V = self.K, self.V
        items = []
        while True:
            kind = K[self.i]
            if kind == "end":
                break
            if kind == "hash":
                if V[self.i] in MEMSPACE_KWS or V[self.i + 1] != "=":
                    raise Fallback
                name = self.tok("ATTR_ALIAS")
                self.expect("=")
                items.append(self.b.attr_alias_def([name, self.attribute()]))
            elif kind == "bang":
                if V[self.i] in TYPE_KWS or V[self.i + 1] != "=":
                    raise Fallback
                name = self.tok("TYPE_ALIAS")
                self.expect("=")
                items.append(self.b.type_alias_def([name, self.type()]))
            else:
                items.append(self.operation())
        return self.b.start(items)

    def operation(self) -> Any:
        results = self.op_results() if self.K[self.i] == "value" else None
        i = self.i
        if self.K[i] != "word":
            if self.K[i] == "string":
                return self.b.operation([self.generic_op()] if results is None else [results, self.generic_op()])
            raise Fallback
        opdef = SPELLINGS.get(self.V[i])
        if opdef is None:
            raise Fallback
        handler = _HANDLERS.get(opdef.format)
        if handler is None:
            raise Fallback
        op = handler(self, self.tok("OP_" + opdef.format))
        return self.b.operation([op] if results is None else [results, op])

    def op_results(self) -> Any:
        """result_def ("," result_def)* "=" """
        defs = self.comma_list(self.result_def)
        self.expect("=")
        return self.b.op_results(defs)

    def result_def(self) -> Any:
        c = [self.value()]
        if self.V[self.i] == ":":
            self.i += 1
            c.append(self.int_tok())
        return self.b.result_def(c)

    def region(self) -> Any:
        """"{" operation* block* "}" """
        self.expect("{")
        items = []
        K, V = self.K, self.V
        while V[self.i] != "}":
            kind = K[self.i]
            if kind == "block":
                break
            if kind == "end":
                raise Fallback
            items.append(self.operation())
        while K[self.i] == "block":
            items.append(self.block())
        self.expect("}")
        return self.b.region(items)

    def block(self) -> Any:
        """BLOCK_ID block_param_list? ":" operation*"""
        b = self.b
        c: list[Any] = [self.tok("BLOCK_ID")]
        if self.V[self.i] == "(":
            c.append(b.block_param_list(self.block_params(b.block_params)))
        self.expect(":")
        K, V = self.K, self.V
        while V[self.i] != "}" and K[self.i] != "block":
            if K[self.i] == "end":
                raise Fallback
            c.append(self.operation())
        return b.block(c)

    def block_params(self, rule: Any) -> list[Any]:
        """"(" (block_param ("," block_param)*)? ")", the params given to `rule`"""
        self.expect("(")
        c = []
        if self.V[self.i] != ")":
            c.append(rule(self.comma_list(self.block_param)))
        self.expect(")")
        return c

    def block_param(self) -> Any:
        name = self.value()
        self.expect(":")
        return self.b.block_param([name, self.type()])

    # ------------------------------------------------------------ types

    def type(self) -> Any:
        i = self.i
        kind = self.K[i]
        text = self.V[i]
        if kind == "type":
            self.i = i + 1
            found = self.types.get(text)
            if found is None:
                found = self.type_token(text, self.tokens.position(i))
            return found
        if kind == "word":
            found = self.scalars.get(text)
            if found is None:
                if text in _SPELLED_TYPES and self.V[i + 1][:1] == "<" and self.K[i + 1] == "type":
                    return self.spelled_type()  # `tensor <4xindex>`: a blank before the shape token
                if self.V[i + 1] == "<":
                    if text in _SPELLED_TYPES:
                        return self.spelled_type()
                    if text == "complex" or text == "tuple":
                        return self.composite_type(text)
                found = self.scalar_type(text)
            self.i = i + 1
            return found
        if text == "<":
            return self.short_tile_future() if self.V[i + 1] == "(" else self.short_runtime_arg()
        if kind == "bang":
            glued = self.glued_body(i)
            if "." not in text or (text not in TYPE_KWS and self.V[i + 1] != "<" and not glued):
                return self.b.type_alias_ref([self.tok("TYPE_ALIAS")])
            if glued and text not in TYPE_KWS:
                self.i = i + 2
                return self.b.dialect_type([_LazyTok("DIALECT_TYPE", text + self.V[i + 1], self.tokens, i)])
            if (text == "!ktdp.access_tile" or text == "!ktdp.tile") and self.V[i + 1][:1] == "<":
                return self.spelled_type()  # `!ktdp.access_tile <4xindex>`: a blank before the shape token
            if self.V[i + 1] == "<":
                if text == "!ktdp.tile_future":
                    return self.tile_future()
                if text == "!ktdp.runtime_arg":
                    return self.runtime_arg()
                if text not in TYPE_KWS:
                    return self.b.dialect_type([self.dialect("DIALECT_TYPE")])
        raise Fallback

    def glued_body(self, i: int) -> bool:
        """Token i + 1 is a whole `<4xindex>` (one token: the access-tile shape's) right after
        token i: glued to an unknown `!x.y` or `#x.y`, the body of a dialect type or
        attribute, which the LALR lexer reads with it as one token."""
        after = self.V[i + 1]
        return after[:1] == "<" and after != "<" and self.K[i + 1] == "type" and \
            self.tokens.ends[i + 1] == self.tokens.position(i + 1)

    def composite_type(self, text: str) -> Any:
        """"complex" "<" type ">" | "tuple" "<" type_list? ">" """
        self.i += 2
        if text == "complex":
            found = self.b.complex_type([self.type()])
        else:
            found = self.b.tuple_type([self.type_list()] if self.V[self.i] != ">" else [])
        self.expect(">")
        return found

    def dialect(self, kind: str) -> Tok:
        """DIALECT_ATTR or DIALECT_TYPE: `#dialect.name<...>` or `!dialect.name<...>` of a
        dialect KTIR does not model, its text whole, as the LALR lexer takes it."""
        start = self.i
        tok = _LazyTok(kind, self.raw_bracketed(), self.tokens, start)
        self.drop_whole_comments()  # the lexer's token holds them
        return tok

    def drop_whole_comments(self) -> None:
        """Forget the comments inside the text raw_bracketed just read, which the LALR
        lexer took as one token."""
        if self.whole_comments is not None:
            del self.tokens.comments[slice(*self.whole_comments)]

    def raw_bracketed(self, adjacent: bool = True, word: bool = True, le_opens: bool = True) -> str:
        """The text from the current token, a word followed by `<` (at once if `adjacent`,
        as the LALR lexer needs it for a dialect attribute or type) or not `word` the `<`
        itself, to the matching `>`,
        whitespace, lines and all, as the LALR lexer takes it (ktir.syntax.lexer.
        _balanced_end counts the `<` of `<=` but not the `>` of `->` or `>=`, and skips
        strings); consumed. A comment in a text the lexer may read whole, which it keeps
        only if it reads the text token by token after all, is left to the caller
        (`whole_comments`: its index range in tokens.comments). Not `le_opens`: to the `>`
        matching token by token, where `<=` opens nothing."""
        tokens = self.tokens
        V = self.V
        start = self.i
        pos = tokens.position(start)
        whole = word and tokens.ends[start + 1] == tokens.position(start + 1)  # `memref<`, not `memref <`
        if adjacent and not whole:  # `#x.y <`: not one token
            raise Fallback
        depth = 0
        close = start + 1 if word else start  # not `word`: the current token is the `<`
        while True:
            text = V[close]
            if depth == 0 and text[:1] == "<" and text != "<" and self.K[close] == "type":
                break  # the whole `<4x8xindex>`, one token (the access-tile shape's)
            if text == "<" or (text == "<=" and le_opens):
                depth += 1
            elif text == ">":
                depth -= 1
                if depth == 0:
                    break
            elif self.K[close] == "end" or text == '"':  # a lone `"` opens a string the text never ends
                raise Fallback
            close += 1
        end = tokens.ends[close + 1]
        comments = tokens.comments
        k = bisect_left(comments, (pos,))
        inside = bisect_left(comments, (end,), k) - k
        self.whole_comments = None
        if whole and inside:
            # the lexer finds the `>` counting brackets in comments too: if that is another
            # `>`, its one token is no dialect attribute or type (Fallback), and a type is
            # read token by token (the text up to it is none: it ends in the comment)
            if _balanced_end(tokens.text, tokens.position(start + 1) - tokens.base) + tokens.base == end:
                self.whole_comments = (k, k + inside)
            elif adjacent:
                raise Fallback
        self.i = close + 1
        return tokens.text[pos - tokens.base : end - tokens.base]

    def tile_future(self) -> Any:
        """FUTURE_KW "<" ("(" type_list ")" "," "groups" "=" set_ref | type ("," "groups" "=" set_ref)?) ">" """
        b = self.b
        keyword = self.tok("FUTURE_KW")
        self.expect("<")
        if self.V[self.i] == "(":
            self.i += 1
            c = [self.type_list()]
            self.expect(")")
            rule = b.future_body
        else:
            c = [self.type()]
            if self.V[self.i] == ">":  # legacy: the groups are the op's `groups = S`
                self.i += 1
                return b.tile_future_type([keyword, b.groupless_future_body(c)])
            rule = b.legacy_future_body
        self.expect_all(",", "groups", "=")
        c.append(self.set_ref())
        self.expect(">")
        return b.tile_future_type([keyword, rule(c)])

    def runtime_arg(self) -> Any:
        """RUNTIME_ARG_KW "<" type ("," BARE_ID "=" INT)* ">" """
        c = [self.tok("RUNTIME_ARG_KW")]
        self.expect("<")
        c.append(self.type())
        self.runtime_arg_params(c)
        self.expect(">")
        return self.b.runtime_arg_type(c)

    def runtime_arg_params(self, c: list[Any]) -> None:
        """runtime_arg_param*: ("," BARE_ID "=" INT)*"""
        while self.V[self.i] == ",":
            self.i += 1
            name = self.word()
            self.expect("=")
            c.append(self.b.runtime_arg_param([name, self.int_tok()]))

    def short_tile_future(self) -> Any:
        """"<" "(" type_list ")" "," "groups" "=" set_ref ">", upstream's short future (it warns);
        a `!` rule: the callback gets the punctuation too"""
        c: list[Any] = [self.kept("<"), self.kept("("), self.type_list(), self.kept(")"), self.kept(",")]
        c += [self.kept("groups"), self.kept("="), self.set_ref(), self.kept(">")]
        return self.b.short_tile_future(c)

    def kept(self, text: str) -> Tok:
        """The current token, which must be `text`, consumed (for `!` rules, which keep it)."""
        if self.V[self.i] != text:
            raise Fallback
        return self.tok(text)

    def short_runtime_arg(self) -> Any:
        """"<" type runtime_arg_param+ ">", upstream's short `<index, granularity=4>`, or
        "<" shape_prefix? type ">", a short access tile (both warn)"""
        if self.K[self.i + 1] == "number" or self.V[self.i + 1] in ("?", "*"):
            # with blanks the scan's one token has not: its text read again, as the LALR
            # lexer reads it (token by token, the shape as one DIMS token)
            pos = self.tokens.position(self.i)
            return self.short_access_tile(self.raw_bracketed(adjacent=False, word=False), pos)
        c = [self.tok("LESSTHAN"), self.type()]
        if self.V[self.i] == ">":  # `<T>`: a short access tile without a shape
            c.append(self.tok("MORETHAN"))
            return self.b.short_access_tile(c)
        self.runtime_arg_params(c)
        if self.V[self.i] != ">":
            raise Fallback
        c.append(self.tok("MORETHAN"))
        return self.b.short_runtime_arg(c)

    def set_ref(self) -> Any:
        """affine_set_attr | attr_alias_ref"""
        if self.V[self.i] == "affine_set":
            return self.affine_set()
        if self.K[self.i] == "hash":
            return self.attr_alias_ref()
        raise Fallback

    def attr_alias_ref(self) -> Any:
        """ATTR_ALIAS at the `#name` token: a dotted name is one as the LALR lexer takes it
        there only when it is no keyword and no `<` follows (else a dialect attribute)."""
        text = self.V[self.i]
        if "." in text and (text in MEMSPACE_KWS or self.V[self.i + 1] == "<"):
            raise Fallback
        return self.b.attr_alias_ref([self.tok("ATTR_ALIAS")])

    def scalar_type(self, text: str) -> Any:
        if text == "index":
            found = self.b.index_type([self.tok("INDEX")])
        elif INTEGER_TYPE.fullmatch(text):
            found = self.b.integer_type([self.tok("INTEGER_TYPE")])
        elif text in FLOAT_TYPES:
            found = self.b.float_type([self.tok("FLOAT_TYPE")])
        elif text == "none":
            self.i += 1
            found = self.b.none_type([])
        else:
            raise Fallback
        self.i -= 1  # the caller consumes the word
        self.scalars[text] = found
        return found

    def type_list(self) -> Any:
        """type ("," type)*"""
        return self.b.type_list(self.comma_list(self.type))

    def type_token(self, text: str, pos: int) -> Any:
        """`tensor<...>`, `memref<...>`, `vector<...>`, `!ktdp.access_tile<...>` or its legacy
        `!ktdp.tile<...>`, whole; or upstream's short access tile `<4x8xindex>`."""
        b = self.b
        keyword = "" if text[0] == "<" else _WORD.match(text).group()  # type: ignore[union-attr]
        open_at = _BLANKS.match(text, len(keyword)).end()  # type: ignore[union-attr]  # the `<`
        if not keyword:
            return self.short_access_tile(text, pos)
        p = _BLANKS.match(text, open_at + 1).end()  # type: ignore[union-attr]
        children: list[Any] = []
        if keyword == "!ktdp.access_tile" or keyword == "!ktdp.tile":
            children.append(self.located("ACCESS_TILE_KW", keyword, pos))
        if text[p] in "0123456789?*":
            dims = _DIMS.match(text, p)
            if dims is None:
                raise Fallback
            children.append(b.shape_prefix([self.located("DIMS", dims.group(), pos + p)]))
            p = dims.end()
        elif keyword == "vector":
            raise Fallback
        n_warnings = len(b.warnings)
        element = self.scalars.get(text[p:-1])  # the common body: a scalar type seen before, alone
        if element is not None:
            children.append(element)
        else:
            inner = self.inner(text[p:], pos + p)
            children.append(inner.type())
            if keyword in ("tensor", "memref") and inner.V[inner.i] == ",":
                inner.i += 1
                extras = [inner.attribute()]
                if keyword == "memref" and inner.V[inner.i] == ",":
                    inner.i += 1
                    extras.append(inner.attribute())
                children.append(b.encoding(extras) if keyword == "tensor" else b.memref_extras(extras))
            inner.expect(">")
            if inner.K[inner.i] != "end":
                raise Fallback
        rule = b.access_tile_type if keyword[0] == "!" else getattr(b, f"{keyword}_type")  # tensor_type, ...
        found = rule(children)
        if len(b.warnings) == n_warnings:  # a type that warns is read again where it recurs
            self.types[text] = found
        return found

    def spelled_type(self) -> Any:
        """`tensor<...>`, `memref<...>`, `vector<...>` or an access tile that the scan did
        not take as one token (a string in it, brackets nested deeper, lines, or blanks
        before the `<`), read whole by type_token: the LALR lexer reads it as one token
        (PARSED_TYPE) or token by token, to the same type (types have no location; a
        warning's is the same either way)."""
        start = self.i
        pos = self.tokens.position(start)
        n_warnings = len(self.b.warnings)
        try:
            text = self.raw_bracketed(adjacent=False)
            found = self.types.get(text)
            if found is None:
                found = self.type_token(text, pos)
        except Fallback:
            # the lexer's scan counts the `<` of `<=` (`affine_set<... d0 <= 3>`): where it
            # finds no type, the lexer reads the type token by token, comments and all
            del self.b.warnings[n_warnings:]
            self.i = start
            return self.type_token(self.raw_bracketed(adjacent=False, le_opens=False), pos)
        if len(self.b.warnings) != n_warnings or self.V[start][0] == "!":
            return found  # read token by token by the lexer (a `!ktdp.` one always is): comments stay
        self.drop_whole_comments()  # read whole by the lexer (PARSED_TYPE)
        return found

    def short_access_tile(self, text: str, pos: int) -> Any:
        """"<" shape_prefix type ">" from its text at `pos` (it warns, so is not kept)."""
        p = _BLANKS.match(text, 1).end()  # type: ignore[union-attr]
        dims = _DIMS.match(text, p)
        if dims is None:
            raise Fallback
        inner = self.inner(text[dims.end() :], pos + dims.end())
        element = inner.type()
        inner.expect(">")
        if inner.K[inner.i] != "end":
            raise Fallback
        return self.b.short_access_tile(
            [
                self.located("LESSTHAN", "<", pos),
                self.b.shape_prefix([self.located("DIMS", dims.group(), pos + p)]),
                element,
                self.located("MORETHAN", ">", pos + len(text) - 1),
            ]
        )

    def inner(self, text: str, pos: int) -> _Parser:
        """A parser of `text`, at `pos` of the whole text, sharing this parse's tables."""
        return _Parser(_Tokens(text, pos, self.starts), self.b, self.types, self.scalars, self.affine)

    def located(self, kind: str, value: str, pos: int) -> Tok:
        """A `kind` token at `pos` of the text."""
        return Tok(kind, value, pos, *_line_column(self.starts, pos))

    def result_type_list(self) -> Any:
        """type -> single_result_type | "(" (result_type ("," result_type)*)? ")" """
        if self.V[self.i] != "(":
            return self.b.single_result_type([self.type()])
        return self.b.paren_result_types(self.enclosed("(", self.result_type, ")"))

    def result_type(self) -> Any:
        c = [self.type()]
        self.attr_dict_opt(c)
        return self.b.result_type(c)

    def function_type(self) -> Any:
        """"(" type_list? ")" "->" result_type_list"""
        self.expect("(")
        c = []
        if self.V[self.i] != ")":
            c.append(self.type_list())
        self.expect_all(")", "->")
        c.append(self.result_type_list())
        return self.b.function_type(c)

    # ------------------------------------------------------------ attributes

    def attr_dict(self) -> Any:
        """"{" (attr_entry ("," attr_entry)*)? "}" """
        return self.b.attr_dict(self.enclosed("{", self.attr_entry, "}"))

    def attr_entry(self) -> Any:
        kind = self.K[self.i]
        if kind == "word":
            name = self.tok("BARE_ID")
        elif kind == "string":
            name = self.tok("STRING")
        else:
            raise Fallback
        if self.V[self.i] == "=":
            self.i += 1
            return self.b.attr_entry([name, self.attribute()])
        return self.b.unit_entry([name])

    def attribute(self) -> Any:
        b = self.b
        i = self.i
        kind = self.K[i]
        text = self.V[i]
        if kind == "number" or text == "-":
            return self.number_attr()
        if kind == "word":
            if text in ("true", "false"):
                return b.bool_attr([self.tok("BOOL")])
            if text == "unit":
                self.i += 1
                return b.unit_attr([])
            if text == "affine_map":
                return self.affine_map()
            if text == "affine_set":
                return self.affine_set()
            if text == "dense":
                return self.dense()
            if text == "strided" and self.V[i + 1] == "<":
                return self.strided()
            if text == "array" and self.V[i + 1] == "<":
                return self.dense_array()
            if text == "dense_resource" and self.V[i + 1] == "<":
                return self.dense_resource()
            return b.type_attr([self.type()])  # a scalar type, or Fallback
        if kind == "hash":
            if "." in text and text not in MEMSPACE_KWS and self.glued_body(i):
                self.i = i + 2
                return b.dialect_attr([_LazyTok("DIALECT_ATTR", text + self.V[i + 1], self.tokens, i)])
            if "." in text and self.V[i + 1] == "<":
                if text in MEMSPACE_KWS:
                    return self.kept_affine(self.memory_space_body)
                return b.dialect_attr([self.dialect("DIALECT_ATTR")])
            return self.attr_alias_ref()
        if kind == "string":
            c: list[Any] = [self.tok("STRING")]
            self.typed_suffix(c)
            return b.string_attr(c)
        if text == "[":
            return b.array_attr(self.enclosed("[", self.attribute, "]"))
        if text == "{":
            return b.dict_attr([self.attr_dict()])
        if kind == "symbol":
            names = [self.tok("SYMBOL_REF")]
            while self.V[self.i] == "::":
                self.i += 1
                if self.K[self.i] != "symbol":
                    raise Fallback
                names.append(self.tok("SYMBOL_REF"))
            return b.symbol_ref_attr(names)
        if kind == "type" or kind == "bang" or text == "<":  # `<...>`: upstream's short ktdp types
            return b.type_attr([self.type()])
        if text == "(":
            return b.type_attr([self.function_type()])
        raise Fallback

    def typed_suffix(self, c: list[Any]) -> None:
        if self.V[self.i] == ":":
            self.i += 1
            c.append(self.type())

    def number_attr(self) -> Any:
        """int_attr | float_attr | hex_attr, each with an optional `: type`"""
        b = self.b
        negative = self.V[self.i] == "-"
        if negative:
            self.i += 1
        if self.K[self.i] != "number":
            raise Fallback
        text = self.V[self.i]
        c: list[Any]
        if text.isdigit():
            tok = self.tok("INT")
            c = [b.neg_int([tok]) if negative else b.pos_int([tok])]
            self.typed_suffix(c)
            return b.int_attr(c)
        if text.startswith("0x"):
            if negative:
                raise Fallback
            c = [self.tok("HEX_INT")]
            self.typed_suffix(c)
            return b.hex_attr(c)
        tok = self.tok("FLOAT")
        c = [b.neg_float([tok]) if negative else b.pos_float([tok])]
        self.typed_suffix(c)
        return b.float_attr(c)

    def strided(self) -> Any:
        """"strided" "<" "[" (stride_entry ("," stride_entry)*)? "]" ("," "offset" ":" stride_entry)? ">" """
        b = self.b
        self.i += 2
        c = [b.stride_list(self.enclosed("[", self.stride_entry, "]"))]
        if self.V[self.i] == ",":
            self.expect_all(",", "offset", ":")
            c.append(b.strided_offset([self.stride_entry()]))
        self.expect(">")
        return b.strided_attr(c)

    def stride_entry(self) -> Any:
        """signed_int | "?" -> dynamic_stride"""
        if self.V[self.i] == "?":
            self.i += 1
            return self.b.dynamic_stride([])
        return self.signed_int()

    def memory_space_body(self) -> Any:
        """MEMSPACE_KW "<" BARE_ID ("," BARE_ID "=" INT)? ">" """
        c = [self.tok("MEMSPACE_KW")]
        self.expect("<")
        c.append(self.word())
        if self.V[self.i] == ",":
            self.i += 1
            c.append(self.word())
            self.expect("=")
            c.append(self.int_tok())
        self.expect(">")
        return self.b.memory_space_attr(c)

    def dense(self) -> Any:
        """"dense" "<" dense_body? ">" ":" type"""
        b = self.b
        self.expect_all("dense", "<")
        c = []
        if self.V[self.i] != ">":
            if self.K[self.i] == "string":
                c.append(b.dense_hex([self.tok("STRING")]))
            else:
                c.append(b.dense_body([self.dense_element()]))
        self.expect_all(">", ":")
        c.append(self.type())
        return b.dense_attr(c)

    def dense_element(self) -> Any:
        if self.V[self.i] == "[":
            return self.b.dense_list(self.enclosed("[", self.dense_element, "]"))
        return self.dense_scalar(hex_ok=True)

    def dense_scalar(self, hex_ok: bool) -> Any:
        """BOOL, a signed INT or FLOAT, or (`hex_ok`, in `dense<...>`) an unsigned HEX_INT"""
        b = self.b
        text = self.V[self.i]
        if text in ("true", "false"):
            return b.dense_bool([self.tok("BOOL")])
        negative = text == "-"
        if negative:
            self.i += 1
            text = self.V[self.i]
        if self.K[self.i] != "number":
            raise Fallback
        if text.isdigit():
            tok = self.tok("INT")
            return b.neg_int([tok]) if negative else b.pos_int([tok])
        if text.startswith("0x"):
            if negative or not hex_ok:
                raise Fallback
            return b.dense_hex_int([self.tok("HEX_INT")])
        tok = self.tok("FLOAT")
        return b.neg_float([tok]) if negative else b.pos_float([tok])

    def dense_array(self) -> Any:
        """"array" "<" type (":" dense_array_value ("," dense_array_value)*)? ">" """
        self.i += 2
        c = [self.type()]
        if self.V[self.i] == ":":
            self.i += 1
            c.append(self.b.dense_array_values(self.comma_list(lambda: self.dense_scalar(hex_ok=False))))
        self.expect(">")
        return self.b.dense_array_attr(c)

    def dense_resource(self) -> Any:
        """"dense_resource" "<" BARE_ID ">" ":" type"""
        self.i += 2
        c = [self.word()]
        self.expect_all(">", ":")
        c.append(self.type())
        return self.b.dense_resource_attr(c)

    # ------------------------------------------------------------ affine

    def aff_params(self) -> Any:
        """aff_dims aff_syms?"""
        b = self.b
        c = [b.aff_dims(self.enclosed("(", self.word, ")"))]
        if self.V[self.i] == "[":
            c.append(b.aff_syms(self.enclosed("[", self.word, "]")))
        return b.aff_params(c)

    def affine_map(self) -> Any:
        return self.kept_affine(self.affine_map_body)

    def affine_set(self) -> Any:
        return self.kept_affine(self.affine_set_body)

    def kept_affine(self, parse: Callable[[], Any]) -> Any:
        """An affine map or set, or a memory space, taken from those read before (in this
        text) with the same tokens. Its tokens end at the first `>` (`>=` is a token of its
        own, and `<` and `>` occur nowhere else in it); what it is depends on them alone,
        unless it names an SSA value or warns (such ones are not kept)."""
        i = self.i
        V = self.V
        try:
            end = V.index(">", i) + 1
        except ValueError:
            raise Fallback from None
        key = tuple(V[i:end])
        found = self.affine.get(key)
        if found is not None:
            self.i = end
            return found
        n_warnings = len(self.b.warnings)
        found = parse()
        if self.i == end and len(self.b.warnings) == n_warnings and not any(v[0] == "%" for v in key):
            self.affine[key] = found
        return found

    def affine_map_body(self) -> Any:
        """"affine_map" "<" aff_params "->" "(" (aff_expr ("," aff_expr)*)? ")" ">" """
        self.expect_all("affine_map", "<")
        c = [self.aff_params()]
        self.expect("->")
        c += self.enclosed("(", self.aff_expr, ")")
        self.expect(">")
        return self.b.affine_map_attr(c)

    def affine_set_body(self) -> Any:
        """"affine_set" "<" aff_params ":" "(" (aff_constraint ("," aff_constraint)*)? ")" ">" """
        self.expect_all("affine_set", "<")
        c = [self.aff_params()]
        self.expect(":")
        c += self.enclosed("(", self.aff_constraint, ")")
        self.expect(">")
        return self.b.affine_set_attr(c)

    def aff_constraint(self) -> Any:
        lhs = self.aff_expr()
        if self.V[self.i] not in CMP_OPS:
            raise Fallback
        op = self.tok("CMP_OP")
        return self.b.aff_constraint([lhs, op, self.aff_expr()])

    def aff_expr(self) -> Any:
        """aff_term (("+" | "-") aff_term)*, left-associative"""
        b = self.b
        expr = self.aff_term()
        while True:
            text = self.V[self.i]
            if text == "+":
                self.i += 1
                expr = b.aff_add([expr, self.aff_term()])
            elif text == "-":
                self.i += 1
                expr = b.aff_sub([expr, self.aff_term()])
            else:
                return expr

    def aff_term(self) -> Any:
        """aff_unary (("*" | AFF_DIV_OP) aff_unary)*, left-associative"""
        b = self.b
        expr = self.aff_unary()
        while True:
            text = self.V[self.i]
            if text == "*":
                self.i += 1
                expr = b.aff_mul([expr, self.aff_unary()])
            elif text in AFF_DIV_OPS and self.K[self.i] == "word":
                op = self.tok("AFF_DIV_OP")
                expr = b.aff_div([expr, op, self.aff_unary()])
            else:
                return expr

    def aff_unary(self) -> Any:
        if self.V[self.i] == "-":
            self.i += 1
            return self.b.aff_neg([self.aff_unary()])
        return self.aff_atom()

    def aff_atom(self) -> Any:
        b = self.b
        kind = self.K[self.i]
        text = self.V[self.i]
        if kind == "value":
            return b.aff_name([self.tok("VALUE_ID")])
        if kind == "word":
            if text == "symbol":
                self.expect_all("symbol", "(")
                name = self.value()
                self.expect(")")
                return b.aff_symbol([name])
            return b.aff_name([self.tok("BARE_ID")])
        if kind == "number":
            return b.aff_const([self.int_tok()])
        if text == "(":
            self.i += 1
            expr = self.aff_expr()
            self.expect(")")
            return expr
        raise Fallback

    # ------------------------------------------------------------ shared clauses

    def mixed_list(self) -> Any:
        """"[" (mixed_entry ("," mixed_entry)*)? "]" """
        return self.b.mixed_list(self.enclosed("[", self.mixed_entry, "]"))

    def mixed_entry(self) -> Any:
        if self.K[self.i] == "value":
            return self.tok("VALUE_ID")
        return self.signed_int()

    def values_types(self, rule: Any) -> Any:
        """"(" (value_list ":" type_list)? ")" (ins, outs, identity)"""
        self.expect("(")
        c = []
        if self.V[self.i] != ")":
            c.append(self.value_list())
            self.expect(":")
            c.append(self.type_list())
        self.expect(")")
        return rule(c)

    # ------------------------------------------------------------ declarative formats

    def op_flags(self, c: list[Any]) -> None:
        """op_flags*"""
        while self.V[self.i] in FLAG_KINDS and self.K[self.i] == "word":
            flags = [self.tok("FLAG_KIND")]
            self.expect("<")
            flags += self.comma_list(self.word)
            self.expect(">")
            c.append(self.b.op_flags(flags))

    # ------------------------------------------------------------ operations, by format

    def func_op(self, tok: Tok) -> Any:
        b = self.b
        c: list[Any] = [tok]
        if self.V[self.i] in VISIBILITIES and self.K[self.i] == "word":
            c.append(b.visibility([self.tok("VISIBILITY")]))
        if self.K[self.i] != "symbol":
            raise Fallback
        c.append(self.tok("SYMBOL_REF"))
        self.expect("(")
        if self.V[self.i] != ")":
            c.append(b.func_params(self.comma_list(self.func_param)))
        self.expect(")")
        if self.V[self.i] == "->":
            self.i += 1
            c.append(b.func_results([self.result_type_list()]))
        if self.V[self.i] == "attributes":
            self.i += 1
            c.append(b.func_attrs([self.attr_dict()]))
        if self.V[self.i] == "{":
            c.append(self.region())
        return b.func_op(c)

    def func_param(self) -> Any:
        if self.K[self.i] == "value":
            c: list[Any] = [self.tok("VALUE_ID")]
            self.expect(":")
            c.append(self.type())
            self.attr_dict_opt(c)
            return self.b.named_param(c)
        c = [self.type()]
        self.attr_dict_opt(c)
        return self.b.anonymous_param(c)

    def module_op(self, tok: Tok) -> Any:
        c: list[Any] = [tok]
        if self.K[self.i] == "symbol":
            c.append(self.tok("SYMBOL_REF"))
        if self.V[self.i] == "attributes":
            self.i += 1
            c.append(self.b.module_attrs([self.attr_dict()]))
        c.append(self.region())
        return self.b.module_op(c)

    def terminator_op(self, tok: Tok) -> Any:
        """OP_TERMINATOR attr_dict? (value_list ":" type_list trailing_attrs?)?"""
        c: list[Any] = [tok]
        self.attr_dict_opt(c)
        if self.K[self.i] == "value":
            c.append(self.value_list())
            self.expect(":")
            c.append(self.type_list())
            if self.V[self.i] == "{":
                c.append(self.b.trailing_attrs([self.attr_dict()]))
        return self.b.terminator_op(c)

    def constant_op(self, tok: Tok) -> Any:
        """OP_CONSTANT attr_dict? constant_value"""
        c: list[Any] = [tok]
        self.attr_dict_opt(c)
        kind = self.K[self.i]
        text = self.V[self.i]
        if kind == "number" or text == "-":
            c.append(self.number_attr())
        elif text in ("true", "false"):
            c.append(self.b.bool_attr([self.tok("BOOL")]))
        elif text == "dense":
            c.append(self.dense())
        elif kind == "string":
            s: list[Any] = [self.tok("STRING")]
            self.typed_suffix(s)
            c.append(self.b.string_attr(s))
        else:
            raise Fallback
        return self.b.constant_op(c)

    def access_tile_op(self, tok: Tok) -> Any:
        """OP_ACCESS_TILE value "[" subscripts? "]" symbols_clause? attr_dict? ":" type "->" type"""
        c: list[Any] = [tok, self.value()]
        self.expect("[")
        if self.V[self.i] != "]":
            c.append(self.b.subscripts(self.comma_list(self.aff_expr)))
        self.expect("]")
        self.symbols_clause_opt(c)
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type())
        self.expect("->")
        c.append(self.type())
        return self.b.access_tile_op(c)

    def for_op(self, tok: Tok) -> Any:
        """OP_FOR value "=" value "to" value "step" value iter_args? iv_type? region attr_dict?"""
        b = self.b
        c: list[Any] = [tok, self.value()]
        self.expect("=")
        c.append(self.value())
        self.expect("to")
        c.append(self.value())
        self.expect("step")
        c.append(self.value())
        if self.V[self.i] == "iter_args":
            self.i += 1
            args = self.enclosed("(", self.binding, ")")
            self.expect("->")
            args.append(self.result_type_list())
            c.append(b.iter_args(args))
        if self.V[self.i] == ":":
            self.i += 1
            c.append(b.iv_type([self.type()]))
        c.append(self.region())
        self.attr_dict_opt(c)
        return b.for_op(c)

    def symbols_clause_opt(self, c: list[Any]) -> None:
        """("symbols" "(" value_list? ")")?"""
        if self.V[self.i] == "symbols":
            self.expect_all("symbols", "(")
            c.append(self.b.symbols_clause([self.value_list()] if self.V[self.i] != ")" else []))
            self.expect(")")

    def binding(self) -> Any:
        first = self.value()
        self.expect("=")
        return self.b.binding([first, self.value()])

    def if_op(self, tok: Tok) -> Any:
        """OP_IF value results_arrow? region else_region? attr_dict?"""
        c: list[Any] = [tok, self.value()]
        self.results_arrow_opt(c)
        c.append(self.region())
        if self.V[self.i] == "else":
            self.i += 1
            c.append(self.b.else_region([self.region()]))
        self.attr_dict_opt(c)
        return self.b.if_op(c)

    def linalg_named_op(self, tok: Tok) -> Any:
        """OP_LINALG_NAMED indexing_maps? attr_dict? ins_clause outs_clause results_types?"""
        c: list[Any] = [tok]
        if self.V[self.i] == "indexing_maps":
            self.expect_all("indexing_maps", "=")
            if self.V[self.i] != "[":
                raise Fallback
            c.append(self.b.indexing_maps([self.attribute()]))
        self.attr_dict_opt(c)
        self.ins_outs(c)
        self.results_types_opt(c)
        return self.b.linalg_named_op(c)

    def affine_apply_op(self, tok: Tok) -> Any:
        """OP_AFFINE_APPLY map_ref "(" value_list? ")" affine_symbols? attr_dict?"""
        c: list[Any] = [tok]
        text = self.V[self.i]
        if text == "affine_map":
            c.append(self.affine_map())
        elif self.K[self.i] == "hash":
            c.append(self.attr_alias_ref())
        else:
            raise Fallback
        self.expect("(")
        if self.V[self.i] != ")":
            c.append(self.value_list())
        self.expect(")")
        if self.V[self.i] == "[":
            self.i += 1
            c.append(self.b.affine_symbols([self.value_list()] if self.V[self.i] != "]" else []))
            self.expect("]")
        self.attr_dict_opt(c)
        return self.b.affine_apply_op(c)

    def linalg_generic_op(self, tok: Tok) -> Any:
        """OP_LINALG_GENERIC attr_dict ins_clause? outs_clause extra_attrs? region results_types?"""
        b = self.b
        c: list[Any] = [tok, self.attr_dict()]
        if self.V[self.i] == "ins":
            self.i += 1
            c.append(self.values_types(b.ins_clause))
        self.expect("outs")
        c.append(self.values_types(b.outs_clause))
        if self.V[self.i] == "attrs":
            self.expect_all("attrs", "=")
            c.append(b.extra_attrs([self.attr_dict()]))
        c.append(self.region())
        self.results_types_opt(c)
        return b.linalg_generic_op(c)

    def results_types_opt(self, c: list[Any]) -> None:
        """("->" type | "->" "(" type_list ")")?"""
        if self.V[self.i] != "->":
            return
        self.i += 1
        if self.V[self.i] == "(":
            self.i += 1
            types = self.type_list()
            self.expect(")")
        else:
            types = self.type()
        c.append(self.b.results_types([types]))

    def short_body_opt(self, c: list[Any]) -> None:
        """("{" (OP_BINARY | OP_UNARY | OP_TERNARY | OP_CMP | OP_SELECT) attr_dict? "}")?"""
        if self.V[self.i] != "{":
            return
        self.i += 1
        opdef = SPELLINGS.get(self.V[self.i]) if self.K[self.i] == "word" else None
        if opdef is None or opdef.format not in SHORT_BODY_FORMATS:
            raise Fallback
        inner: list[Any] = [self.tok("OP_" + opdef.format)]
        self.attr_dict_opt(inner)  # MLIR 22: `{ arith.addi {overflowFlags = #arith.overflow<none>} }`
        c.append(self.b.short_body(inner))
        self.expect("}")

    def explicit_body_opt(self, c: list[Any]) -> None:
        """("(" block_params? ")" region)?"""
        if self.V[self.i] != "(":
            return
        params = self.block_params(self.b.block_params)
        c.append(self.b.explicit_body([*params, self.region()]))

    def ins_outs(self, c: list[Any]) -> None:
        self.expect("ins")
        c.append(self.values_types(self.b.ins_clause))
        self.expect("outs")
        c.append(self.values_types(self.b.outs_clause))

    def int_list(self) -> Any:
        """"[" (signed_int ("," signed_int)*)? "]" """
        return self.b.int_list(self.enclosed("[", self.signed_int, "]"))

    def linalg_map_op(self, tok: Tok) -> Any:
        """OP_LINALG_MAP short_body? ins_clause outs_clause attr_dict? explicit_body?, and
        OP_LINALG_REDUCE, the same with "dimensions" "=" int_list after outs_clause"""
        c: list[Any] = [tok]
        self.short_body_opt(c)
        self.ins_outs(c)
        reduce = tok.type == "OP_LINALG_REDUCE"
        if reduce:
            self.expect_all("dimensions", "=")
            c.append(self.int_list())
        self.attr_dict_opt(c)
        self.explicit_body_opt(c)
        return self.b.linalg_reduce_op(c) if reduce else self.b.linalg_map_op(c)

    linalg_reduce_op = linalg_map_op

    def linalg_dims_op(self, tok: Tok) -> Any:
        """OP_LINALG_DIMS ins_clause outs_clause dims_key "=" int_list attr_dict?"""
        c: list[Any] = [tok]
        self.ins_outs(c)
        key = self.V[self.i]
        if key not in _DIMS_KEYS or self.K[self.i] != "word":
            raise Fallback
        c.append(self.b.dims_key([self.tok(key.upper())]))
        self.expect("=")
        c.append(self.int_list())
        self.attr_dict_opt(c)
        return self.b.linalg_dims_op(c)

    def indirect_tile_op(self, tok: Tok) -> Any:
        """OP_INDIRECT_TILE intermediate_vars value "[" indirect_subscript ("," indirect_subscript)* "]"
        symbols_clause? attr_dict? ":" type_list "->" type"""
        c: list[Any] = [tok]
        self.expect_all("intermediate_variables", "(")
        c.append(self.b.intermediate_vars([self.value_list()] if self.V[self.i] != ")" else []))
        self.expect(")")
        c.append(self.value())
        self.expect("[")
        c += self.comma_list(self.indirect_subscript)
        self.expect("]")
        self.symbols_clause_opt(c)
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type_list())
        self.expect("->")
        c.append(self.type())
        return self.b.indirect_tile_op(c)

    def indirect_subscript(self) -> Any:
        """"ind" "(" value "[" subscripts? "]" ")" -> indirect_dim | "(" aff_expr ")" -> direct_dim"""
        b = self.b
        if self.V[self.i] == "(":
            self.i += 1
            expr = self.aff_expr()
            self.expect(")")
            return b.direct_dim([expr])
        self.expect_all("ind", "(")
        c: list[Any] = [self.value()]
        self.expect("[")
        if self.V[self.i] != "]":
            c.append(b.subscripts(self.comma_list(self.aff_expr)))
        self.expect_all("]", ")")
        return b.indirect_dim(c)

    def runtime_arg_extract_op(self, tok: Tok) -> Any:
        """OP_RUNTIME_ARG_EXTRACT BARE_ID "from" value ":" type attr_dict? "->" type"""
        c: list[Any] = [tok, self.word()]
        self.expect("from")
        c.append(self.value())
        self.expect(":")
        c.append(self.type())
        self.attr_dict_opt(c)
        self.expect("->")
        c.append(self.type())
        return self.b.runtime_arg_extract_op(c)

    def produce_op(self, tok: Tok) -> Any:
        """OP_PRODUCE "producer_tiles_per_group" "=" set_ref legacy_groups? attr_dict? produce_result region"""
        b = self.b
        self.expect_all("producer_tiles_per_group", "=")
        c: list[Any] = [tok, self.set_ref()]
        self.legacy_groups_opt(c)
        self.attr_dict_opt(c)
        if self.V[self.i] == "->":
            self.i += 1
            c.append(b.future_type([self.type()]))
        else:
            self.expect(":")
            first = self.type()
            self.expect("->")
            c.append(b.legacy_future_type([first, self.type()]))
        c.append(self.region())
        return b.produce_op(c)

    def legacy_groups_opt(self, c: list[Any]) -> None:
        """legacy_groups?: "," "groups" "=" set_ref"""
        if self.V[self.i] == "," and self.V[self.i + 1] == "groups":
            self.i += 2
            self.expect("=")
            c.append(self.b.legacy_groups([self.set_ref()]))

    def consumer_head(self, tok: Tok, legacy: bool = True) -> list[Any]:
        """"(" value ")" "consumer_tiles_per_group" "=" set_ref legacy_groups? dependency?
        (a collective has no legacy_groups)"""
        self.expect("(")
        c: list[Any] = [tok, self.value()]
        self.expect_all(")", "consumer_tiles_per_group", "=")
        c.append(self.set_ref())
        if legacy:
            self.legacy_groups_opt(c)
        if self.V[self.i] == "," and self.V[self.i + 1] == "producer_dependency_per_consumer":
            self.i += 2
            self.expect("=")
            c.append(self.b.dependency([self.set_ref()]))
        return c

    def consume_op(self, tok: Tok) -> Any:
        """OP_CONSUME consumer head attr_dict? ":" type "->" type_list"""
        c = self.consumer_head(tok)
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type())
        self.expect("->")
        c.append(self.type_list())
        return self.b.consume_op(c)

    def reduce_op(self, tok: Tok) -> Any:
        """OP_REDUCE consumer head "," identity_clause attr_dict? ":" type "->" type_list region"""
        c = self.consumer_head(tok)
        self.expect(",")
        c.append(self.identity_clause())
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type())
        self.expect("->")
        c.append(self.type_list())
        c.append(self.region())
        return self.b.reduce_op(c)

    # ------------------------------------------------------------ irregular formats with regions

    def generic_op(self) -> Any:
        """STRING "(" value_list? ")" successors? properties? generic_regions? attr_dict? ":" function_type"""
        b = self.b
        c: list[Any] = [self.tok("STRING")]
        self.expect("(")
        if self.V[self.i] != ")":
            c.append(self.value_list())
        self.expect(")")
        if self.V[self.i] == "[":
            self.i += 1
            blocks = self.comma_list(self.block_id)
            self.expect("]")
            c.append(b.successors(blocks))
        if self.V[self.i] == "<":
            self.i += 1
            props = self.attr_dict()
            self.expect(">")
            c.append(b.properties([props]))
        if self.V[self.i] == "(":
            c.append(b.generic_regions(self.parens(self.region)))
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.function_type())
        return b.generic_op(c)

    def block_id(self) -> Tok:
        if self.K[self.i] != "block":
            raise Fallback
        return self.tok("BLOCK_ID")

    def results_arrow_opt(self, c: list[Any]) -> None:
        """("->" result_type_list)?"""
        if self.V[self.i] == "->":
            self.i += 1
            c.append(self.b.results_arrow([self.result_type_list()]))

    def parens(self, item: Callable[[], Any]) -> list[Any]:
        """"(" item ("," item)* ")" """
        self.expect("(")
        items = self.comma_list(item)
        self.expect(")")
        return items

    def while_op(self, tok: Tok) -> Any:
        """OP_WHILE "(" (binding ("," binding)*)? ")" ":" function_type region "do" region attr_dict?"""
        c: list[Any] = [tok, *self.enclosed("(", self.binding, ")")]
        self.expect(":")
        c.append(self.function_type())
        c.append(self.region())
        self.expect("do")
        c.append(self.region())
        self.attr_dict_opt(c)
        return self.b.while_op(c)

    def parallel_op(self, tok: Tok) -> Any:
        """OP_PARALLEL "(" value_list ")" "=" "(" value_list ")" "to" "(" value_list ")" "step" "(" value_list ")"
        init_clause? results_arrow? region attr_dict?"""
        b = self.b
        c: list[Any] = [tok, b.value_list(self.parens(self.value))]
        for keyword in ("=", "to", "step"):
            self.expect(keyword)
            c.append(b.value_list(self.parens(self.value)))
        if self.V[self.i] == "init":
            self.expect_all("init", "(")
            c.append(b.init_clause([self.value_list()]))
            self.expect(")")
        self.results_arrow_opt(c)
        c.append(self.region())
        self.attr_dict_opt(c)
        return b.parallel_op(c)

    def scf_reduce_op(self, tok: Tok) -> Any:
        """OP_SCF_REDUCE ("(" value_list ":" type_list ")" region ("," region)*)? attr_dict?"""
        c: list[Any] = [tok]
        if self.V[self.i] == "(":
            self.i += 1
            operands = [self.value_list()]
            self.expect(":")
            operands.append(self.type_list())
            self.expect(")")
            operands += self.comma_list(self.region)
            c.append(self.b.reduce_operands(operands))
        self.attr_dict_opt(c)
        return self.b.scf_reduce_op(c)

    def forall_op(self, tok: Tok) -> Any:
        """OP_FORALL "(" value_list ")" forall_bounds shared_outs? results_arrow? region attr_dict?"""
        b = self.b
        c: list[Any] = [tok, b.value_list(self.parens(self.value))]
        if self.V[self.i] == "in":
            self.i += 1
            c.append(b.forall_in(self.parens(self.mixed_entry)))
        else:
            self.expect("=")
            lower = b.mixed_parens(self.parens(self.mixed_entry))
            self.expect("to")
            upper = b.mixed_parens(self.parens(self.mixed_entry))
            self.expect("step")
            c.append(b.forall_range([lower, upper, b.mixed_parens(self.parens(self.mixed_entry))]))
        if self.V[self.i] == "shared_outs":
            self.i += 1
            c.append(b.shared_outs(self.enclosed("(", self.binding, ")")))
        self.results_arrow_opt(c)
        c.append(self.region())
        self.attr_dict_opt(c)
        return b.forall_op(c)

    def execute_region_op(self, tok: Tok) -> Any:
        """OP_EXECUTE_REGION results_arrow? region attr_dict?, and OP_IN_PARALLEL region attr_dict?"""
        c: list[Any] = [tok]
        if tok.type == "OP_EXECUTE_REGION":
            self.results_arrow_opt(c)
        c.append(self.region())
        self.attr_dict_opt(c)
        return self.b.execute_region_op(c)

    in_parallel_op = execute_region_op

    def generate_op(self, tok: Tok) -> Any:
        """OP_GENERATE value_list? region attr_dict? ":" type"""
        c: list[Any] = [tok]
        if self.K[self.i] == "value":
            c.append(self.value_list())
        c.append(self.region())
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type())
        return self.b.generate_op(c)

    def pad_op(self, tok: Tok) -> Any:
        """OP_PAD value NOFOLD? "low" mixed_list "high" mixed_list region attr_dict? ":" type "to" type"""
        c: list[Any] = [tok, self.value()]
        if self.V[self.i] == "nofold" and self.K[self.i] == "word":
            c.append(self.tok("NOFOLD"))
        self.expect("low")
        c.append(self.mixed_list())
        self.expect("high")
        c.append(self.mixed_list())
        c.append(self.region())
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type())
        self.expect("to")
        c.append(self.type())
        return self.b.pad_op(c)

    def collective_op(self, tok: Tok) -> Any:
        """OP_COLLECTIVE consumer head collective_dims* ("," identity_clause)? attr_dict? ":" type "->" type_list region?"""
        b = self.b
        c = self.consumer_head(tok, legacy=False)
        V = self.V
        while V[self.i] == "," and V[self.i + 1] in _DIMS_KEYS and self.K[self.i + 1] == "word":
            self.i += 1
            key = b.dims_key([self.tok(V[self.i].upper())])
            self.expect("=")
            c.append(b.collective_dims([key, self.int_list()]))
        if V[self.i] == "," and V[self.i + 1] == "identity":
            self.i += 1
            c.append(self.identity_clause())
        self.attr_dict_opt(c)
        self.expect(":")
        c.append(self.type())
        self.expect("->")
        c.append(self.type_list())
        if V[self.i] == "{":
            c.append(self.region())
        return b.collective_op(c)

    def identity_clause(self) -> Any:
        """"identity" "(" (value_list ":" type_list)? ")" """
        self.expect("identity")
        return self.values_types(self.b.identity_clause)


# Type keywords whose `<...>` body the scan may leave in pieces (see _Parser.spelled_type).
_SPELLED_TYPES = frozenset({"tensor", "memref", "vector"})

_DIMS_KEYS = frozenset(
    {"dimensions", "permutation", "gather_dimensions", "scatter_dimensions", "split_dimensions", "concat_dimensions"}
)
# The reader of each format: hand-written for the irregular ones (ktir.syntax.assembly.
# HAND_WRITTEN), as the method named after the format's grammar rule; generated from the
# description for the declarative ones (see below).
_HANDLERS: dict[str, Callable[[_Parser, Tok], Any]] = {
    name: getattr(_Parser, f"{name.lower()}_op") for name in asm.HAND_WRITTEN
}


# ---------------------------------------------------------------- generated readers

# The reader of a custom directive's children, as the grammar rule of _CUSTOM_RULES
# (ktir.syntax.assembly) reads them.
_CUSTOM_READS = {
    "DynamicIndexList": ["c.append(self.mixed_list())"],
    "Reassociation": ["c.append(self.b.reassociation(self.enclosed('[', self.int_list, ']')))"],
    "ArithFlags": ["self.op_flags(c)"],
    "SelectTypes": ["c.append(self.type())", "if V[self.i] == ',':", "    self.i += 1", "    c.append(self.type())"],
}


def _reads(elements: tuple[asm.Element, ...], indent: str) -> list[str]:
    """Lines reading `elements` into the children list `c`, as the rule that
    ktir.syntax.assembly.grammar_rule writes for them: each optional part decided by its
    first token, as the LALR parser decides it."""
    out: list[str] = []
    for e in elements:
        if isinstance(e, asm.Literal):
            if e.text:
                out += [f"if V[self.i] != {e.text!r}:", "    raise Fallback", "self.i += 1"]
        elif isinstance(e, asm.OperandRef):
            if not e.variadic:
                out.append("c.append(self.value())")
            elif e.nonempty:
                out.append("c.append(self.value_list())")
            else:
                out += ["if K[self.i] == 'value':", "    c.append(self.value_list())"]
        elif isinstance(e, asm.TypeRef):
            if e.variadic and not e.nonempty:
                out.append("raise Fallback  # `type_list?`: no declarative format writes it")
            else:
                out.append("c.append(self.type_list())" if e.variadic else "c.append(self.type())")
        elif isinstance(e, asm.AttrDict):
            out += ["if V[self.i] == '{':", "    c.append(self.attr_dict())"]
        elif isinstance(e, asm.AttrRef):
            if e.kind == "int":
                out.append("c.append(self.int_tok())")
            elif e.kind == "symbol":
                out += ["if K[self.i] != 'symbol':", "    raise Fallback", "c.append(self.tok('SYMBOL_REF'))"]
            else:
                out.append("c.append(self.word())")
        elif isinstance(e, asm.FunctionalType):
            out.append("c.append(self.function_type())")
        elif isinstance(e, asm.Custom):
            out += _CUSTOM_READS[e.name]
        else:
            first = e.elements[0]
            if isinstance(first, asm.Literal) and first.text:
                out.append(f"if V[self.i] == {first.text!r}:")
            elif isinstance(first, asm.OperandRef):
                out.append("if K[self.i] == 'value':")
            else:
                raise asm.FormatError(f"an optional group opening with {first} has no reader")
            out += ["    " + line for line in _reads(e.elements, "")]
    return [indent + line for line in out]


def reader_source(name: str) -> str:
    """The generated reader of the declarative format `name` (for reading)."""
    fmt = asm.formats()[name]
    lines = [
        f"def read_{name}(self, tok):",
        f'    """{asm.grammar_rule(fmt)}"""',
        "    K, V = self.K, self.V",
        "    c = [tok]",
        *_reads(fmt.elements, "    "),
        f"    return self.b.{fmt.rule}(c)",
    ]
    return "\n".join(lines) + "\n"


for _name in asm.formats():
    _HANDLERS[_name] = asm.load_generated(reader_source(_name), "fast reader", _name, globals())[f"read_{_name}"]
