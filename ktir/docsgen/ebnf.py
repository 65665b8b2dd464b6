"""The normative lark grammar, rendered as EBNF (W3C XML notation: `::=`, `?`, `*`, `+`, `|`).

The lark file stays the single source: this module reads its rule definitions with lark's
own grammar loader and prints each rule as one EBNF production. What lark needs but the
language does not (tree-shaping `?`/`!` prefixes, `-> alias` names, the `type_only` entry
point and the lexer's `PARSED_TYPE` shortcut) is left out. The op-name terminals, which
the lexer takes from the op registry, are listed with the names they stand for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from lark import Token, Tree
from lark.grammar import NonTerminal, Terminal
from lark.load_grammar import GrammarBuilder

from ktir.dialects.registry import OPS

# Present for the implementation only; not part of the language.
IMPLEMENTATION_ONLY = frozenset({"type_only", "PARSED_TYPE"})

DECLARED_TERMINALS = {
    "DIALECT_ATTR": "`#dialect.name<...>` of a dialect KTIR does not model: the text up to the matching `>`, "
    "with nested brackets balanced and strings skipped.",
    "DIALECT_TYPE": "`!dialect.name<...>` of a dialect KTIR does not model, delimited like DIALECT_ATTR.",
}


@dataclass(frozen=True)
class Production:
    name: str
    body: str  # the right-hand side, alternatives joined by " | "
    section: str
    is_terminal: bool

    def text(self, width: int = 0) -> str:
        return f"{self.name.ljust(width)} ::= {self.body}"


def grammar_text() -> str:
    """The normative grammar file, verbatim."""
    return resources.files("ktir.syntax").joinpath("ktir.lark").read_text(encoding="utf-8")


def _sections(text: str) -> dict[str, str]:
    """Rule name -> the `// ---- name` section it is defined under."""
    section = "structure"
    found: dict[str, str] = {}
    for line in text.split("\n"):
        header = re.match(r"^//\s*-{4,}\s*(.+?)\s*$", line)
        if header:
            section = header.group(1)
            continue
        rule = re.match(r"^[?!]?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\.\d+)?\s*:", line)
        if rule:
            found.setdefault(rule.group(1), section)
        declared = re.match(r"^%declare\s+(.*)$", line)
        if declared:
            for name in declared.group(1).split():
                found.setdefault(name, section)
    return found


def _is_group(node: Any) -> bool:
    """True when `node` needs parentheses before a postfix operator or inside a sequence."""
    if isinstance(node, Tree) and node.data == "expansions":
        return len(node.children) > 1 or _is_group(node.children[0])
    if isinstance(node, Tree) and node.data in ("expansion", "alias"):
        inner = node.children[0] if node.data == "alias" else node
        return len(inner.children) > 1
    return False


def _render(node: Any) -> str:
    if isinstance(node, Terminal | NonTerminal):
        return node.name
    if isinstance(node, Token):
        return str(node)
    data = node.data
    if data == "value":
        return _render(node.children[0])
    if data == "literal":
        token = node.children[0]
        return str(token)
    if data == "expansions":
        alternatives = [_render(c) for c in node.children if not _only_implementation(c)]
        return " | ".join(alternatives)
    if data == "alias":
        return _render(node.children[0])
    if data == "expansion":
        items = [_render_item(c) for c in node.children]
        return " ".join(items) if items else "/* empty */"
    if data == "expr":
        inner, op = node.children[0], node.children[1]
        if str(op) == "~":
            return f"{_render_item(inner)}{{{', '.join(str(c) for c in node.children[2:])}}}"
        return f"{_render_item(inner, postfix=True)}{op}"
    raise ValueError(f"unexpected grammar node {data}")


def _render_item(node: Any, postfix: bool = False) -> str:
    target = node.children[0] if isinstance(node, Tree) and node.data == "value" else node
    text = _render(target)
    if isinstance(target, Tree) and target.data == "expansions":
        grouped = len(target.children) > 1 or (postfix and _is_group(target))
        return f"( {text} )" if grouped else text
    return text


def _only_implementation(alternative: Any) -> bool:
    if isinstance(alternative, Tree) and alternative.data == "alias":
        alternative = alternative.children[0]  # the `-> name` is not part of the language
    names = {leaf.name for leaf in _symbols(alternative)}
    return bool(names) and names <= IMPLEMENTATION_ONLY


def _symbols(node: Any) -> Iterable[Terminal | NonTerminal]:
    if isinstance(node, Terminal | NonTerminal):
        yield node
    elif isinstance(node, Tree):
        for child in node.children:
            yield from _symbols(child)


@cache
def _definitions() -> dict[str, Any]:
    builder = GrammarBuilder()
    builder.load_grammar(grammar_text(), "ktir.lark")
    return dict(builder._definitions)  # noqa: SLF001 - lark's loader keeps them here, in file order


def op_name_terminals() -> dict[str, list[str]]:
    """`OP_<format>` -> every op spelling the lexer turns into that terminal."""
    spellings: dict[str, list[str]] = {}
    for op in OPS.values():
        spellings.setdefault(f"OP_{op.format}", []).extend([op.name, *op.aliases])
    return {k: sorted(v) for k, v in sorted(spellings.items())}


def productions() -> list[Production]:
    """Every production of the grammar, in file order, as EBNF."""
    sections = _sections(grammar_text())
    op_terminals = op_name_terminals()
    result: list[Production] = []
    for name, definition in _definitions().items():
        if name in IMPLEMENTATION_ONLY:
            continue
        section = sections.get(name, "terminals")
        if definition.tree is None:
            if name in op_terminals:
                body = " | ".join(f'"{s}"' for s in op_terminals[name])
            elif name in DECLARED_TERMINALS:
                body = f"/* {DECLARED_TERMINALS[name]} */"
            else:
                continue
            result.append(Production(name, body, section, True))
            continue
        result.append(Production(name, _render(definition.tree), section, definition.is_term))
    return result


def op_syntax(op_name: str) -> list[str]:
    """The EBNF productions that spell `op_name`, with its op-name terminal written out."""
    op = OPS[op_name]
    terminal = f"OP_{op.format}"
    lines = []
    for name, definition in _definitions().items():
        if definition.tree is None or not name.endswith("_op"):
            continue
        if terminal not in {s.name for s in _symbols(definition.tree)}:
            continue
        body = _render(definition.tree)
        spelled = " | ".join(f'"{s}"' for s in [op.name, *op.aliases])
        if op.aliases:
            spelled = f"( {spelled} )"
        lines.append(_wrap(f"{name} ::= {_replace_word(body, terminal, spelled)}", len(name)))
    return lines


def _replace_word(text: str, word: str, replacement: str) -> str:
    return re.sub(rf"\b{re.escape(word)}\b", lambda _match: replacement, text)


def ebnf_markdown() -> str:
    """The whole grammar as EBNF, one fenced block per section of the lark file."""
    out: list[str] = []
    current: str | None = None
    block: list[Production] = []

    def flush() -> None:
        if not block:
            return
        width = min(max(len(p.name) for p in block), 24)
        out.append(f"### {current}\n")
        out.append("```text")
        for p in block:
            out.append(_wrap(p.text(width), width))
        out.append("```\n")

    for production in productions():
        if production.section != current:
            flush()
            current, block = production.section, []
        block.append(production)
    flush()
    return "\n".join(out)


def _wrap(line: str, width: int, limit: int = 100) -> str:
    """Break long alternatives onto continuation lines aligned under `::=`, packed greedily."""
    if len(line) <= limit or " | " not in line:
        return line
    head, body = line.split(" ::= ", 1)
    pad = " " * (len(head) + 1)
    lines: list[str] = []
    current = f"{head} ::="
    for i, alternative in enumerate(_split_top_level(body)):
        piece = f" {alternative}" if i == 0 else f" | {alternative}"
        if i > 0 and len(current) + len(piece) > limit:
            lines.append(current)
            current = f"{pad}|{piece[2:]}"
        else:
            current += piece
    lines.append(current)
    return "\n".join(lines)


def _split_top_level(body: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    in_string: str | None = None
    while i < len(body):
        ch = body[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == in_string:
                in_string = None
        elif ch in '"/' and (i == 0 or body[i - 1] == " "):
            in_string = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and body.startswith(" | ", i):
            parts.append(body[start:i])
            start = i + 3
            i += 3
            continue
        i += 1
    parts.append(body[start:])
    return parts
