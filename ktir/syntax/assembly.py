"""Declarative assembly formats: the reader of `ktir.dialects.formats` and the grammar it yields.

Each op definition names one of 54 assembly formats. A format is *regular* when its
syntax is a sequence of operands, attributes, keywords and punctuation, an optional
attribute dictionary, written types (`:` type lists, `->`, `to`, `into`, functional
types) and optional groups: what MLIR's ODS `assemblyFormat` expresses. Those are
described once, in `ktir.dialects.formats`; from each description come its grammar rule
(the generated section of `ktir.lark`, `python -m ktir.syntax.assembly --write-grammar`;
a test checks the file agrees), its reader in the production parser
(`ktir.syntax.fastparse`), its parse-tree -> Operation conversion (`ktir.syntax.parser`)
and its printer (`ktir.syntax.printer`).

Declarative (27): the keys of `ktir.dialects.formats.FORMATS` (listed in ktir.lark's generated section).

Irregular, written by hand (27), and why:

- MODULE: optional symbol name, `attributes {...}` keyword, a region.
- FUNC: the signature names the entry block's arguments; per-argument and per-result
  attribute dictionaries; optional body (declarations).
- TERMINATOR: the attribute dictionary comes before or after the values, per op
  (`attr_dict_last`), and empty terminators are elided from their regions.
- CONSTANT: the literal's type is the result type (untyped literals default to i64/f64).
- ACCESS_TILE, INDIRECT_TILE: subscripts are affine expressions over SSA values, turned
  into maps; indirect tiles bind intermediate variables in a region.
- RUNTIME_ARG_EXTRACT: upstream's stripped `<index>` spelling of the argument type reads
  as `!ktdp.runtime_arg<index>`.
- PRODUCE, CONSUME, REDUCE, COLLECTIVE: integer-set clauses shared across the inter-tile
  family, identity clauses and regions.
- FOR, IF, WHILE, PARALLEL, FORALL, SCF_REDUCE, IN_PARALLEL, EXECUTE_REGION: regions whose
  entry arguments the header binds, implicit terminators.
- AFFINE_APPLY: an affine map whose dimension and symbol operands follow it.
- LINALG_NAMED, LINALG_GENERIC, LINALG_MAP, LINALG_REDUCE, LINALG_DIMS: `ins`/`outs`
  clauses with results implied by the outputs, `{ op }` short bodies, regions, and a
  keyword that depends on the op (`dimensions` / `permutation`).
- PAD, GENERATE: regions.
"""

from __future__ import annotations

import argparse
import functools
import linecache
import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ktir.dialects.formats import FORMATS, AssemblyFormat

# The irregular formats (see above), parsed and printed by hand-written code.
HAND_WRITTEN = (
    "MODULE", "FUNC", "TERMINATOR", "CONSTANT", "ACCESS_TILE", "INDIRECT_TILE", "RUNTIME_ARG_EXTRACT",
    "PRODUCE", "CONSUME", "REDUCE", "COLLECTIVE", "FOR", "IF", "WHILE", "PARALLEL", "FORALL", "SCF_REDUCE",
    "IN_PARALLEL", "EXECUTE_REGION", "AFFINE_APPLY", "LINALG_NAMED", "LINALG_GENERIC", "LINALG_MAP",
    "LINALG_REDUCE", "LINALG_DIMS", "PAD", "GENERATE",
)  # fmt: skip

# ---------------------------------------------------------------- elements


@dataclass(frozen=True)
class Literal:
    text: str  # "" is ODS's ``: no space before the next element


@dataclass(frozen=True)
class OperandRef:
    name: str
    variadic: bool
    nonempty: bool  # `+`, or anchored in an optional group


@dataclass(frozen=True)
class AttrRef:
    name: str
    kind: str  # predicate | int | symbol


@dataclass(frozen=True)
class TypeRef:
    name: str
    variadic: bool
    nonempty: bool


@dataclass(frozen=True)
class FunctionalType:
    pass


@dataclass(frozen=True)
class AttrDict:
    pass


@dataclass(frozen=True)
class Custom:
    name: str
    args: tuple[str, ...]  # operand, attribute or type names, in the directive's order


@dataclass(frozen=True)
class Group:
    elements: tuple[Element, ...]
    anchor: str


Element = Literal | OperandRef | AttrRef | TypeRef | FunctionalType | AttrDict | Custom | Group

CUSTOM_DIRECTIVES = ("ArithFlags", "DynamicIndexList", "Reassociation", "SelectTypes")
TYPE_RULES = re.compile(r"\$(\w+)|index|i1|i1_like\(\$(\w+)\)|element_type\(\$(\w+)\)")


@dataclass(frozen=True)
class Format:
    """A format description, read and checked."""

    name: str
    rule: str
    elements: tuple[Element, ...]
    operands: tuple[tuple[str, str], ...]  # (name, "" | "*" | "+")
    results: tuple[tuple[str, str], ...]  # (name, "" | "*" | "+" | "?")
    types: dict[str, str]
    attributes: dict[str, str]
    segments: bool
    # attributes the syntax spells, elided from the attribute dictionary
    spelled: tuple[str, ...]

    def is_variadic(self, name: str) -> bool:
        return any(n == name and m in ("*", "+") for n, m in self.operands)

    @functools.cached_property
    def has_flags(self) -> bool:
        return any(isinstance(e, Custom) and e.name == "ArithFlags" for e in _walk(self.elements))

    @functools.cached_property
    def type_rules(self) -> dict[str, TypeRule]:
        return {name: _type_rule(rule) for name, rule in self.types.items()}


TypeRule = tuple[str, str]


def _type_rule(rule: str) -> TypeRule:
    """`$x` -> ("same", "x"); `index`, `i1` -> (rule, ""); `f($x)` -> ("f", "x")."""
    if rule.startswith("$"):
        return "same", rule[1:]
    head, _, ref = rule.partition("($")
    return head, ref.rstrip(")")


_DERIVED_CODE = {"index": "ty.INDEX", "i1": "ty.I1", "same": "{}", "i1_like": "i1_like({})", "element_type": "ty.element_type({})"}


def derived_code(rule: TypeRule, ref_code: str) -> str:
    """Python code for the type a format does not write, `ref_code` being the code of the
    written type it derives from (for the generated parser callbacks and printers)."""
    return _DERIVED_CODE[rule[0]].format(ref_code)


class FormatError(ValueError):
    pass


_TOKEN = re.compile(
    r"\s*(?:(?P<lit>`[^`]*`)|(?P<open>\()|(?P<close>\)\??)|(?P<attrdict>attr-dict)"
    r"|(?P<ftype>functional-type\(\s*operands\s*,\s*results\s*\))"
    r"|(?P<type>type\(\s*\$(?P<tname>\w+)\s*\))|(?P<custom>custom<(?P<cname>\w+)>\((?P<cargs>(?:[^()]|\([^()]*\))*)\))"
    r"|(?P<ref>\$(?P<rname>\w+)(?P<anchor>\^)?))"
)


def _tokens(syntax: str) -> list[re.Match[str]]:
    out = []
    pos = 0
    while pos < len(syntax):
        if syntax[pos:].strip() == "":
            break
        m = _TOKEN.match(syntax, pos)
        if m is None or m.end() == pos:
            raise FormatError(f"cannot read the format at {syntax[pos : pos + 20]!r}")
        out.append(m)
        pos = m.end()
    return out


def _split_names(specs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((s.rstrip("*+?"), s[len(s.rstrip("*+?")) :]) for s in specs)


def read(name: str, spec: AssemblyFormat) -> Format:
    """Read one description and check that it says everything a parser and printer need."""
    operands = _split_names(spec.operands)
    results = _split_names(spec.results)
    mult = dict(operands + results)
    attributes = dict(spec.attributes)
    spelled: list[str] = []
    written: set[str] = set()
    functional = False

    def element(m: re.Match[str], anchored: bool) -> tuple[Element, str | None]:
        nonlocal functional
        if m.group("lit") is not None:
            return Literal(m.group("lit")[1:-1]), None
        if m.group("attrdict"):
            return AttrDict(), None
        if m.group("ftype"):
            functional = True
            return FunctionalType(), None
        if m.group("type"):
            tname = m.group("tname")
            if tname not in mult:
                raise FormatError(f"{name}: type(${tname}) names no operand or result")
            written.add(tname)
            variadic = mult[tname] in ("*", "+")
            return TypeRef(tname, variadic, anchored or mult[tname] == "+"), None
        if m.group("custom"):
            cname = m.group("cname")
            if cname not in CUSTOM_DIRECTIVES:
                raise FormatError(f"{name}: unknown directive custom<{cname}>")
            args = tuple(
                a.strip().removeprefix("type(").removesuffix(")").lstrip("$")
                for a in m.group("cargs").split(",")
                if a.strip()
            )
            if cname == "DynamicIndexList":
                spelled.append(args[1])
            elif cname == "Reassociation":
                spelled.append(args[0])
            elif cname == "SelectTypes":
                written.update(args)
            return Custom(cname, args), None
        rname = m.group("rname")
        anchor = rname if m.group("anchor") else None
        if rname in attributes:
            spelled.append(rname)
            return AttrRef(rname, attributes[rname]), anchor
        if rname not in mult:
            raise FormatError(f"{name}: ${rname} names no operand or attribute")
        variadic = mult[rname] in ("*", "+")
        return OperandRef(rname, variadic, anchored or mult[rname] == "+"), anchor

    def sequence(tokens: list[re.Match[str]], pos: int, depth: int) -> tuple[tuple[Element, ...], int, str | None]:
        out: list[Element] = []
        anchor: str | None = None
        while pos < len(tokens):
            m = tokens[pos]
            if m.group("open"):
                inner, pos, inner_anchor = sequence(tokens, pos + 1, depth + 1)
                if inner_anchor is None:
                    raise FormatError(f"{name}: an optional group needs an anchor (`^`)")
                out.append(Group(inner, inner_anchor))
                continue
            if m.group("close"):
                if depth == 0 or m.group("close") != ")?":
                    raise FormatError(f"{name}: unbalanced or non-optional group")
                return tuple(out), pos + 1, anchor
            found, found_anchor = element(m, depth > 0)
            anchor = anchor or found_anchor
            out.append(found)
            pos += 1
        if depth:
            raise FormatError(f"{name}: unclosed group")
        return tuple(out), pos, anchor

    elements, _, _ = sequence(_tokens(spec.syntax), 0, 0)
    types = dict(spec.types)
    for tname, rule in types.items():
        if tname not in mult:
            raise FormatError(f"{name}: a type rule names ${tname}, which is no operand or result")
        if not TYPE_RULES.fullmatch(rule):
            raise FormatError(f"{name}: cannot read the type rule {rule!r}")
    for vname, _ in (*operands, *results):
        if vname not in written and vname not in types and not functional:
            raise FormatError(f"{name}: the type of ${vname} is neither written nor derived")
    if len(results) > 1:
        raise FormatError(f"{name}: at most one result group (a single result or a variadic one)")
    variadic_groups = sum(1 for _, m in operands if m in ("*", "+"))
    if variadic_groups > 1 and not spec.segments:
        raise FormatError(f"{name}: several variadic operand groups need `segments`")
    return Format(
        name=name,
        rule=spec.rule or f"{name.lower()}_op",
        elements=elements,
        operands=operands,
        results=results,
        types=types,
        attributes=attributes,
        segments=spec.segments,
        spelled=tuple(spelled),
    )


def _walk(elements: tuple[Element, ...]) -> list[Element]:
    out: list[Element] = []
    for e in elements:
        out.append(e)
        if isinstance(e, Group):
            out.extend(_walk(e.elements))
    return out


@functools.cache
def formats() -> dict[str, Format]:
    """Every declarative format, read from `ktir.dialects.formats`."""
    return {name: read(name, spec) for name, spec in FORMATS.items()}


# ---------------------------------------------------------------- grammar

_ATTR_TERMINALS = {"predicate": "BARE_ID", "int": "INT", "symbol": "SYMBOL_REF"}
_CUSTOM_RULES = {
    "ArithFlags": "op_flags*",
    "DynamicIndexList": "mixed_list",
    "Reassociation": "reassociation",
    "SelectTypes": 'type ("," type)?',
}


def _symbols(elements: tuple[Element, ...]) -> list[str]:
    out: list[str] = []
    for e in elements:
        if isinstance(e, Literal):
            if e.text:
                out.append(f'"{e.text}"')
        elif isinstance(e, OperandRef):
            out.append("value" if not e.variadic else "value_list" if e.nonempty else "value_list?")
        elif isinstance(e, TypeRef):
            out.append("type" if not e.variadic else "type_list" if e.nonempty else "type_list?")
        elif isinstance(e, AttrRef):
            out.append(_ATTR_TERMINALS[e.kind])
        elif isinstance(e, FunctionalType):
            out.append("function_type")
        elif isinstance(e, AttrDict):
            out.append("attr_dict?")
        elif isinstance(e, Custom):
            out.append(_CUSTOM_RULES[e.name])
        else:
            out.append("(" + " ".join(_symbols(e.elements)) + ")?")
    return out


def grammar_rule(fmt: Format) -> str:
    return f"{fmt.rule}: OP_{fmt.name} " + " ".join(_symbols(fmt.elements))


BEGIN = "// BEGIN GENERATED: regular op formats"
END = "// END GENERATED"


def generated_section() -> str:
    """The lark rules of the declarative formats, as they stand in ktir.lark."""
    lines = [
        BEGIN,
        "// From ktir/dialects/formats.py by `python -m ktir.syntax.assembly --write-grammar`;",
        "// edit the descriptions, not these rules (tests/syntax/test_assembly_format.py checks them).",
    ]
    for name, spec in FORMATS.items():
        lines.append(f"// {name}: {spec.syntax}")
        lines.append(grammar_rule(formats()[name]))
    lines.append(END)
    return "\n".join(lines)


def grammar_path() -> Path:
    return Path(str(resources.files("ktir.syntax").joinpath("ktir.lark")))


def with_generated_section(grammar: str) -> str:
    """`grammar` with its generated section replaced by what the descriptions give."""
    start = grammar.index(BEGIN)
    end = grammar.index(END, start) + len(END)
    return grammar[:start] + generated_section() + grammar[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ktir.syntax.assembly", description=__doc__.split("\n")[0])
    parser.add_argument("--write-grammar", action="store_true", help="rewrite the generated section of ktir.lark")
    parser.add_argument("--check", action="store_true", help="exit 1 if ktir.lark's generated section is stale")
    args = parser.parse_args(argv)
    if not (args.write_grammar or args.check):
        print(generated_section())
        return 0
    path = grammar_path()
    current = path.read_text(encoding="utf-8")
    wanted = with_generated_section(current)
    if args.write_grammar:
        if wanted != current:
            from ktir.fileio import write_atomic

            write_atomic(path, wanted)
            print(f"rewrote the generated section of {path}")
        return 0
    if args.check and wanted != current:
        print(
            f"{path}: the generated section is stale; run python -m ktir.syntax.assembly --write-grammar",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


class Source:
    """Lines of generated Python, each indented by `depth` levels as it is added."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1

    def add(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)


def load_generated(source: str, kind: str, fmt_name: str, env: dict[str, Any]) -> dict[str, Any]:
    """Run generated `source` (a `kind` of the declarative format `fmt_name`) and return the
    names it defines. Its text is registered with linecache under the file name the code
    carries, so tracebacks and pdb show the generated lines (`kind_source(name)` prints
    the same text); entries without a modification time are never evicted by checkcache."""
    filename = f"<ktir generated {kind} of assembly format {fmt_name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), env, namespace)  # noqa: S102
    return namespace
