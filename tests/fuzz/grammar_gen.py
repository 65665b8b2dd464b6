"""KTIR text generated from the grammar itself (issue 33).

The rules and terminals come from `ktir/syntax/ktir.lark` as the parser compiles it (the
cached LALR tables keep every rule's symbols), so a new rule, op format or attribute kind
is generated without a change here. A random derivation from `start` is expanded with
knobs for its depth (a rule deeper than the budget takes its shallowest alternative), its
size (a token budget; repetitions end once it is spent) and the size of its numbers.
Terminals with a regular expression get a string matching it (Python's own regex parser
reads the pattern); a few get values that meet: SSA names from a small pool (so uses find
definitions), op names of the right assembly format from the registry, shapes, widths and
integers near the bounds of ktir.syntax.limits and of int64.

    knobs = Knobs(max_depth=12, max_tokens=300)
    text = generate_text(random.Random(7), knobs)
"""

from __future__ import annotations

import functools
import random

# the regex parser of Python 3.11+ (the project's floor, pyproject.toml)
import re._parser as sre_parse  # type: ignore[import-not-found]
from dataclasses import dataclass
from re._constants import (  # type: ignore[import-not-found]
    ANY,
    AT,
    BRANCH,
    CATEGORY,
    IN,
    LITERAL,
    MAX_REPEAT,
    MIN_REPEAT,
    NEGATE,
    NOT_LITERAL,
    POSSESSIVE_REPEAT,
    RANGE,
    SUBPATTERN,
)
from typing import Any


@dataclass(frozen=True)
class Knobs:
    max_depth: int = 12  # rule nesting before derivations take their shallowest alternative
    max_tokens: int = 300  # repetitions stop growing once this many tokens are out
    repeat: int = 3  # most repetitions of a `*`/`+` item, and of a regex repeat
    huge_numbers: float = 0.01  # chance that an integer is near a bound (digits, int64, width)


# ---------------------------------------------------------------- the grammar


@dataclass
class Grammar:
    rules: dict[str, list[list[str]]]  # nonterminal -> alternatives (symbol lists)
    terminals: dict[str, tuple[str, str]]  # name -> (kind "str"/"re", value or regexp)
    min_depth: dict[str, int]  # nonterminal -> depth of its shallowest derivation
    op_names: dict[str, list[str]]  # OP_<format> -> op names of that format


@functools.cache
def grammar() -> Grammar:
    from ktir.dialects.registry import SPELLINGS
    from ktir.syntax.lalr import load_tables
    from ktir.syntax.parser import GRAMMAR_STARTS, _grammar_text

    tables = load_tables(_grammar_text(), GRAMMAR_STARTS)
    rules: dict[str, list[list[str]]] = {}
    for (origin, *_), expansion in zip(tables["rules"], tables["expansions"], strict=True):
        # PARSED_TYPE is the lexer's shortcut for a type it has seen: the text is the type
        if "PARSED_TYPE" not in expansion:
            rules.setdefault(origin, []).append(list(expansion))
    terminals = {name: (kind, value) for name, kind, value in tables["terminals"]}
    op_names: dict[str, list[str]] = {}
    for name, opdef in sorted(SPELLINGS.items()):
        op_names.setdefault("OP_" + opdef.format, []).append(name)
    return Grammar(rules, terminals, _min_depths(rules), op_names)


def _min_depths(rules: dict[str, list[list[str]]]) -> dict[str, int]:
    depth = {name: 10**9 for name in rules}
    changed = True
    while changed:
        changed = False
        for name, alternatives in rules.items():
            for alt in alternatives:
                d = 1 + max((depth[s] for s in alt if s in rules), default=0)
                if d < depth[name]:
                    depth[name] = d
                    changed = True
    return depth


# ---------------------------------------------------------------- derivation


class _Derivation:
    def __init__(self, rng: random.Random, knobs: Knobs) -> None:
        self.rng = rng
        self.knobs = knobs
        self.g = grammar()
        self.tokens: list[str] = []
        self.used: set[tuple[str, int]] = set()  # (rule, alternative) expanded, for coverage tests
        self.values = ["%0", "%1", "%a", "%arg0", "%c0", "%x", "%t", "%2"]

    def expand(self, start: str) -> None:
        # an explicit stack: derivations may be deep (the point of the depth knob)
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            symbol, depth = stack.pop()
            if symbol in self.g.rules:
                alt = self.choose(symbol, depth)
                self.used.add((symbol, self.g.rules[symbol].index(alt)))
                stack.extend((s, depth + 1) for s in reversed(alt))
            else:
                self.tokens.append(self.terminal(symbol))

    def choose(self, symbol: str, depth: int) -> list[str]:
        alternatives = self.g.rules[symbol]
        over = depth >= self.knobs.max_depth or len(self.tokens) >= self.knobs.max_tokens
        if over:
            # the shallowest way out, so the text still ends
            best = min(self._alt_depth(a) for a in alternatives)
            alternatives = [a for a in alternatives if self._alt_depth(a) == best]
        elif symbol.startswith("__") and "star" in symbol or "plus" in symbol:
            # lark's helpers for `x*` / `x+`: grow the list with a decreasing chance
            longer = [a for a in alternatives if any(s == symbol for s in a)]
            if longer and self.rng.random() < 1 - 1 / max(self.knobs.repeat, 1):
                return self.rng.choice(longer)
            shorter = [a for a in alternatives if a not in longer]
            return self.rng.choice(shorter or alternatives)
        if symbol in _WEIGHTED:
            weights = [_WEIGHTS.get((symbol, a[0] if a else ""), 1) for a in alternatives]
            return self.rng.choices(alternatives, weights)[0]
        return self.rng.choice(alternatives)

    def _alt_depth(self, alt: list[str]) -> int:
        return max((self.g.min_depth[s] for s in alt if s in self.g.rules), default=0)

    def terminal(self, name: str) -> str:
        special = _SPECIAL.get(name)
        if special is not None:
            return special(self)
        if name.startswith("OP_"):
            return self.rng.choice(self.g.op_names.get(name) or ["foo.bar"])
        kind, value = self.g.terminals.get(name, ("str", name))
        if kind == "str":
            return value
        return _from_regex(self.rng, value, self.knobs.repeat)

    def integer(self) -> str:
        r = self.rng.random()
        if r < self.knobs.huge_numbers:
            return self.rng.choice(_HUGE_INTS)
        if r < 0.15:
            return str(self.rng.choice(_INTERESTING))
        return str(self.rng.randrange(0, 9))


# Programs are mostly operations: the alternative starting with the symbol named gets this
# weight (the others 1).
_WEIGHTS = {("toplevel", "operation"): 12, ("start", "__start_star_0"): 20, ("op_body", "func_op"): 6,
            ("op_body", "generic_op"): 4, ("op_body", "module_op"): 2}
_WEIGHTED = frozenset(symbol for symbol, _ in _WEIGHTS)

_INTERESTING = [0, 1, 2, 3, 4, 7, 8, 16, 32, 63, 64, 65, 255, 256, 1023, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64]
# near the bounds of ktir.syntax.limits (3000 literal digits; Python's 4300-digit limit)
_HUGE_INTS = ["9" * 2999, "9" * 3000, "9" * 3001, "1" + "0" * 4300, "7" * 5000, str(2**63), str(2**64 + 1)]


def _value_id(d: _Derivation) -> str:
    r = d.rng.random()
    if r < 0.85:
        return d.rng.choice(d.values)
    if r < 0.88:
        return "%r#" + str(d.rng.randrange(3))  # a result of a group: a use, not a definition
    return "%" + d.rng.choice(["v", "x", "arg", "0", "_", "a.b", "$z"]) + str(d.rng.randrange(100))


def _bare_id(d: _Derivation) -> str:
    return d.rng.choice(["d0", "d1", "s0", "x", "grid", "to", "step", "ins", "outs", "parallel", "global", "ct_local",
                         "HBM", "LX", "unspecified", "core", "ct_id", "granularity", "upperbound", "value", "eq", "slt",
                         "oeq", "nsw", "fast", "none", "contract", "a", "b", "d2", "s1"])


def _dims(d: _Derivation) -> str:
    r = d.rng.random()
    if r < 0.03:
        return "*x"
    if r < 0.05:
        return "1x" * d.rng.choice([63, 64, 65])
    if r < 0.06:
        return d.rng.choice(_HUGE_INTS) + "x"
    rank = d.rng.choice([1, 1, 2, 2, 3, 4])
    return "".join(d.rng.choice(["1", "2", "4", "8", "16", "?", "0", "3"]) + "x" for _ in range(rank))


def _integer_type(d: _Derivation) -> str:
    if d.rng.random() < d.knobs.huge_numbers:
        return d.rng.choice(["i99999999999", "i16777215", "i16777216", "si" + "9" * 40])
    return d.rng.choice(["i1", "i8", "i16", "i32", "i64", "si8", "ui32", "i4", "i128"])


def _float(d: _Derivation) -> str:
    return d.rng.choice(["0.0", "1.0", "2.5", "1.0e10", "3.40282347e38", "1.0e309", "0.5", "1.", "1.5e-45"])


def _hex(d: _Derivation) -> str:
    return d.rng.choice(["0x7FC00000", "0xFF800000", "0x7C00", "0xFFFF", "0x0", "0x1", "0xDEADBEEF", "0x" + "F" * 3001])


def _string(d: _Derivation) -> str:
    return d.rng.choice(['"s"', '""', '"a\\"b"', '"\\n"', '"0x00FF"', '"#ktdp.memory_space<global>"', '"arith.addf"',
                         '"scf.yield"', '"\\ff"', '"é"', '"func.return"'])


def _block_id(d: _Derivation) -> str:
    return d.rng.choice(["^bb0", "^bb1", "^x"])


def _symbol(d: _Derivation) -> str:
    return d.rng.choice(["@f", "@g", "@main", '@"s p"', "@a.b"])


def _attr_alias(d: _Derivation) -> str:
    return d.rng.choice(["#map", "#set", "#a", "#g"])


def _type_alias(d: _Derivation) -> str:
    return d.rng.choice(["!t", "!u"])


def _dialect_attr(d: _Derivation) -> str:
    return d.rng.choice(["#arith.fastmath<fast>", "#linalg.iterator_type<parallel>", "#foo.bar<1, [2]>",
                         "#arith.overflow<nsw, nuw>", "#gpu.x<\"s\">"])


def _dialect_type(d: _Derivation) -> str:
    return d.rng.choice(["!foo.bar<1>", "!llvm.ptr<>", "!x.y<tensor<4xf32>>"])


_SPECIAL: dict[str, Any] = {
    "VALUE_ID": _value_id,
    "BARE_ID": _bare_id,
    "INT": lambda d: d.integer(),
    "DIMS": _dims,
    "INTEGER_TYPE": _integer_type,
    "FLOAT": _float,
    "HEX_INT": _hex,
    "STRING": _string,
    "BLOCK_ID": _block_id,
    "SYMBOL_REF": _symbol,
    "ATTR_ALIAS": _attr_alias,
    "TYPE_ALIAS": _type_alias,
    "DIALECT_ATTR": _dialect_attr,
    "DIALECT_TYPE": _dialect_type,
}


# ---------------------------------------------------------------- strings from regexes


@functools.cache
def _parsed(pattern: str) -> Any:
    return sre_parse.parse(pattern)


def _from_regex(rng: random.Random, pattern: str, repeat: int) -> str:
    out: list[str] = []
    _emit(rng, _parsed(pattern), out, repeat)
    return "".join(out)


_PRINTABLE = [chr(c) for c in range(32, 127)]


def _emit(rng: random.Random, items: Any, out: list[str], repeat: int) -> None:
    for op, arg in items:
        if op is LITERAL:
            out.append(chr(arg))
        elif op is NOT_LITERAL:
            out.append(rng.choice([c for c in _PRINTABLE if ord(c) != arg]))
        elif op is ANY:
            out.append(rng.choice(_PRINTABLE))
        elif op is IN:
            out.append(_in_class(rng, arg))
        elif op is BRANCH:
            _emit(rng, rng.choice(arg[1]), out, repeat)
        elif op is SUBPATTERN:
            _emit(rng, arg[-1], out, repeat)
        elif op in (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT):
            low, high, item = arg
            n = rng.randint(low, max(low, min(high, low + repeat)))
            for _ in range(n):
                _emit(rng, item, out, repeat)
        elif op is AT:
            continue
        elif op is CATEGORY:
            out.append(rng.choice("az09_"))


def _in_class(rng: random.Random, items: Any) -> str:
    negate = any(op is NEGATE for op, _ in items)
    chars: set[str] = set()
    for op, arg in items:
        if op is LITERAL:
            chars.add(chr(arg))
        elif op is RANGE:
            chars.update(chr(c) for c in range(arg[0], min(arg[1], arg[0] + 200) + 1))
        elif op is CATEGORY:
            chars.update("az09_")
    if negate:
        pool = [c for c in _PRINTABLE if c not in chars] or ["a"]
        return rng.choice(pool)
    return rng.choice(sorted(chars)) if chars else "a"


# ---------------------------------------------------------------- text


# Definitions of the aliases the terminals above name, written first in most programs (an
# alias must be defined before it is used).
PRELUDE = [
    "#map = affine_map<(d0) -> (d0)>", "#set = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>", "#a = 1",
    "#g = affine_set<(d0)[s0] : (d0 - s0 == 0)>", "!t = f32", "!u = tensor<4xf32>",
]


def generate_text(rng: random.Random, knobs: Knobs | None = None, start: str = "start",
                  used: set[tuple[str, int]] | None = None) -> str:
    """A random derivation of `start` as text: tokens joined by a space or a newline, after
    the alias definitions (most times). `used` collects the (rule, alternative) pairs expanded."""
    knobs = knobs or random_knobs(rng)
    d = _Derivation(rng, knobs)
    d.expand(start)
    if used is not None:
        used |= d.used
    out: list[str] = [line + "\n" for line in PRELUDE] if start == "start" and rng.random() < 0.8 else []
    for tok in d.tokens:
        out.append(tok)
        out.append("\n" if tok in ("{", "}") or rng.random() < 0.05 else " ")
    return "".join(out)


def random_knobs(rng: random.Random) -> Knobs:
    """Mostly small programs; now and then deep, long, or with numbers near the bounds."""
    return Knobs(
        max_depth=rng.choice([4, 8, 12, 12, 16, 24, 40, 80]),
        max_tokens=rng.choice([40, 120, 300, 300, 800]),
        repeat=rng.choice([1, 2, 3, 3, 5]),
        huge_numbers=rng.choice([0.0, 0.005, 0.02, 0.1]),
    )


