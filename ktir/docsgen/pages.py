"""Markdown pages generated from the op registry and the hand-written semantics.

Paths are site paths (relative to the site's root): `spec/ops/index.md`,
`spec/ops/<dialect>/index.md` (a dialect), `spec/ops/<op name>.md` (an op) and `status.md`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ktir.dialects.base import OpDef
from ktir.dialects.registry import OPS
from ktir.docsgen import ebnf, status
from ktir.docsgen import examples as run_examples
from ktir.docsgen.semantics import DialectText, load_semantics

# Order of dialects on the site: ktdp first, then the MLIR dialects it composes with.
DIALECT_ORDER = ("ktdp", "arith", "math", "linalg", "tensor", "memref", "scf", "affine", "func", "builtin")

ACCURACY_ANCHORS = {
    "exact": "exact",
    "correctly-rounded": "correctly-rounded",
    "reduction": "reduction",
    "matmul": "matmul",
}


SEARCH_BOOST = 4


def dialects() -> list[str]:
    present = {op.dialect for op in OPS.values()}
    ordered = [d for d in DIALECT_ORDER if d in present]
    return ordered + sorted(present - set(ordered))


def ops_of(dialect: str) -> list[OpDef]:
    return [op for op in OPS.values() if op.dialect == dialect]


def op_page_path(op_name: str) -> str:
    """`spec/ops/<op name>.md`: beside the semantics files, so their links work unchanged."""
    return f"spec/ops/{OPS[op_name].name}.md"


def dialect_page_path(dialect: str) -> str:
    return f"spec/ops/{dialect}/index.md"


_LINK = re.compile(r"(\]\()(?!https?:|mailto:|#|/)([^)\s]+)(\))")
_REF_DEF = re.compile(r"^(\s*\[[^\]]+\]:\s*)(?!https?:|mailto:|#|/)(\S+)", re.MULTILINE)


def relocate_links(markdown: str, levels: int = 1) -> str:
    """Rewrite relative links for a page `levels` directories below the text's own file."""
    prefix = "../" * levels
    markdown = _LINK.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}{m.group(3)}", markdown)
    return _REF_DEF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", markdown)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _accuracy_link(accuracy: str, to_spec: str) -> str:
    anchor = ACCURACY_ANCHORS.get(accuracy, "n-ulp" if accuracy.endswith("ulp") else "")
    return f"[{accuracy}]({to_spec}conformance.md#{anchor})" if anchor else accuracy


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    """A Markdown table; a last "Description" column that is empty in every row is left out."""
    head = list(header)
    body = [list(r) for r in rows]
    if head[-1] == "Description" and not any(r[-1] for r in body):
        head, body = head[:-1], [r[:-1] for r in body]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in body]
    return lines


def op_page(op: OpDef, semantics: str | None, example: run_examples.Example | None = None) -> str:
    """One op's page: syntax, operands, results, attributes, regions, semantics, constraints."""
    to_spec = "../"
    # front matter: op pages rank first when a search matches their name (mkdocs-material)
    out = ["---", "search:", f"  boost: {SEARCH_BOOST}", "---", "", f"# {op.name}", "", op.summary, ""]
    facts = [
        f"**Dialect:** [{op.dialect}]({op.dialect}/index.md)",
        f"**Accuracy class:** {_accuracy_link(op.accuracy, to_spec)}",
    ]
    if op.cost is not None:
        facts.append(f"**Cost class:** `{op.cost.value}`")
    if op.traits:
        facts.append("**Traits:** " + ", ".join(f"`{t}`" for t in sorted(op.traits)))
    if op.aliases:
        facts.append("**Also spelled:** " + ", ".join(f"`{a}`" for a in op.aliases))
    out += [" · ".join(facts), ""]
    if op.description:
        out += [op.description, ""]

    out += ["## Syntax", "", "```text", *ebnf.op_syntax(op.name), "```", ""]
    out += [
        f"Productions are those of the [grammar]({to_spec}syntax.md#grammar-as-ebnf). Like every op,"
        f" `{op.name}` may also be written in MLIR's [generic form]({to_spec}syntax.md#generic-operation-form).",
        "",
    ]

    if op.operands:
        out += ["## Operands", ""]
        out += _table(
            ["Operand", "Type", "Arity", "Description"],
            [
                [f"`{o.name}`", o.type.describe(), "variadic" if o.variadic else ("optional" if o.optional else "one"), o.doc]
                for o in op.operands
            ],
        )
        out.append("")
    if op.results:
        out += ["## Results", ""]
        out += _table(
            ["Result", "Type", "Arity", "Description"],
            [[f"`{r.name}`", r.type.describe(), "variadic" if r.variadic else "one", r.doc] for r in op.results],
        )
        out.append("")
    if op.attributes:
        out += ["## Attributes", ""]
        out += _table(
            ["Attribute", "Kind", "Required", "Description"],
            [[f"`{a.name}`", a.type.describe(), "no" if a.optional else "yes", a.doc] for a in op.attributes],
        )
        out.append("")
    if op.regions:
        out += ["## Regions", ""]
        out += _table(
            ["Region", "Entry block arguments", "Terminator", "Description"],
            [
                [f"`{g.name}`", g.arguments or "none", f"`{g.terminator}`" if g.terminator else "—", g.doc]
                for g in op.regions
            ],
        )
        out.append("")

    out += ["## Semantics", ""]
    out += [semantics.rstrip() if semantics else "*No semantics text yet.*", ""]

    out += ["## Constraints", ""]
    if op.constraints:
        out += [
            "A program that breaks one of these rules is invalid; a conforming verifier reports it with"
            f" the rule's ID ([conformance]({to_spec}conformance.md#diagnostics)).",
            "",
        ]
        out += _table(
            ["ID", "Rule"],
            [
                [f'<a id="{cid}"></a>`{cid}`', c.text]
                for cid, c in zip(op.constraint_ids(), op.constraints, strict=True)
            ],
        )
    else:
        out.append("No constraints beyond the op's syntax and the [type rules](" + to_spec + "types.md).")
    out.append("")

    if op.examples or example is not None:
        out += ["## Examples", ""]
        for text in op.examples:
            out += ["```ktir", text.rstrip(), "```", ""]
    if example is not None:
        out += ["### Executed example", "", example.markdown()]
    out += [f"Implementation status: [status table](../../status.md#{_status_anchor(op.name)}).", ""]
    return "\n".join(out)


def _status_anchor(op_name: str) -> str:
    return "op-" + op_name.replace(".", "-")


def dialect_page(dialect: str, text: DialectText | None) -> str:
    title = text.title if text else f"The {dialect} dialect"
    out = [f"# {title}", ""]
    if text and text.intro.strip():
        out += [relocate_links(text.intro).rstrip(), ""]
    out += ["## Operations", ""]
    out += _table(
        ["Op", "Summary", "Accuracy"],
        [[f"[`{op.name}`](../{op.name}.md)", op.summary, op.accuracy] for op in ops_of(dialect)],
    )
    out.append("")
    return "\n".join(out)


def ops_index_page(texts: dict[str, DialectText]) -> str:
    out = [
        "# Operations",
        "",
        "Every operation KTIR defines has a page here. The page is generated from the op's",
        "definition in the op registry (`ktir/dialects/`: operands, results, attributes, regions,",
        "traits, constraints with their IDs, accuracy class, examples) and from the hand-written",
        "semantics in `spec/ops/<dialect>.md`. Both are normative.",
        "",
        "An op outside this list may still appear in a KTIR program in MLIR's",
        "[generic form](../syntax.md#generic-operation-form); its semantics are not defined by this",
        "specification (see [conformance](../conformance.md#unregistered-operations)).",
        "",
    ]
    out += _table(
        ["Dialect", "Ops", "What it is for"],
        [
            [
                f"[`{d}`]({d}/index.md)",
                str(len(ops_of(d))),
                _first_sentence(texts[d].intro) if d in texts else "",
            ]
            for d in dialects()
        ],
    )
    out.append("")
    return "\n".join(out)


def _first_sentence(text: str) -> str:
    plain = " ".join(line.strip() for line in text.strip().split("\n\n")[0].split("\n"))
    plain = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", plain)
    end = plain.find(". ")
    return plain if end < 0 else plain[: end + 1]


def status_page(texts: dict[str, DialectText], coverage: status.Coverage | None = None,
                examples: dict[str, run_examples.Example] | None = None) -> str:
    coverage = coverage if coverage is not None else status.collect()
    examples = examples if examples is not None else {}
    sections = {name for t in texts.values() for name in t.sections}
    out = [
        "---",
        "hide:",
        "  - navigation",
        "---",
        "",
        "# Implementation status",
        "",
        "One row per op of the registry. *spec*: the op has hand-written semantics (and how many",
        "numbered constraints its page lists). *verifier*: constraints the verifier checks, of all",
        "the op's constraints. *interpreter*: the reference interpreter executes the op.",
        "*conformance*: number of conformance cases that use it. *executed example*: the conformance",
        "case whose inputs and outputs the op's page shows, run again by the docs test",
        f"({len(examples)}/{len(OPS)} ops). *schedulers*: the built-in",
        f'schedulers that accept it. "{status.NOT_YET}" means the component does not exist yet or',
        "does not report its coverage yet.",
        "",
        "This table is generated when the site is built, from what each component reports",
        "(`ktir.docsgen.status`).",
        "",
    ]
    # a summary per dialect first (166 rows in one table are a wall to scroll), then one
    # table per dialect under its own heading
    summary = []
    per_dialect: dict[str, list[list[str]]] = {}
    for dialect in dialects():
        rows = []
        counts = {"semantics": 0, "checked": 0, "constraints": 0, "run": 0, "cases": 0, "example": 0, "scheduled": 0}
        for op in ops_of(dialect):
            cells = status.row(op, op.name in sections, coverage)
            link = f'<a id="{_status_anchor(op.name)}"></a>[`{op.name}`]({op_page_path(op.name)})'
            example = examples.get(op.name)
            shown = f"[{example.case_id}]({op_page_path(op.name)}#executed-example)" if example else "none"
            rows.append([link, cells["spec"], cells["verifier"], cells["interpreter"], cells["conformance"], shown,
                         cells["schedulers"]])
            counts["semantics"] += op.name in sections
            ids = op.constraint_ids()
            counts["constraints"] += len(ids)
            counts["checked"] += sum(i in coverage.verifier for i in ids) if coverage.verifier is not None else 0
            counts["run"] += coverage.interpreter is not None and op.name in coverage.interpreter
            counts["cases"] += int(cells["conformance"]) if cells["conformance"].isdigit() else 0
            counts["example"] += example is not None
            counts["scheduled"] += cells["schedulers"] not in ("none", status.NOT_YET)
        per_dialect[dialect] = rows
        n = len(rows)
        summary.append([f"[{dialect}](#{dialect})", str(n), f"{counts['semantics']}/{n}",
                        f"{counts['checked']}/{counts['constraints']}", f"{counts['run']}/{n}", str(counts["cases"]),
                        f"{counts['example']}/{n}", f"{counts['scheduled']}/{n}"])
    out += ["## By dialect", ""]
    out += _table(["Dialect", "Ops", "With semantics", "Constraints checked", "Interpreted", "Uses in conformance cases",
                   "Executed examples", "Scheduled by some scheduler"], summary)
    out.append("")
    for dialect, rows in per_dialect.items():
        out += [f"## {dialect}", ""]
        out += _table(["Op", "Spec", "Verifier", "Interpreter", "Conformance cases", "Executed example", "Schedulers"],
                      rows)
        out.append("")
    return "\n".join(out)


def generate(spec_dir: Path) -> dict[str, str]:
    """Every generated page, by site path."""
    texts = load_semantics(spec_dir)
    executed = run_examples.collect()
    pages: dict[str, str] = {"spec/ops/index.md": ops_index_page(texts)}
    for dialect in dialects():
        text = texts.get(dialect)
        pages[dialect_page_path(dialect)] = dialect_page(dialect, text)
        for op in ops_of(dialect):
            semantics = text.sections.get(op.name) if text else None
            pages[op_page_path(op.name)] = op_page(op, semantics, executed.get(op.name))
    pages["status.md"] = status_page(texts, examples=executed)
    return pages


def nav() -> list[object]:
    """The nav entries of the Operations section, for mkdocs."""
    entries: list[object] = ["spec/ops/index.md"]
    for dialect in dialects():
        children: list[object] = [dialect_page_path(dialect)]
        children += [{op.name: op_page_path(op.name)} for op in ops_of(dialect)]
        entries.append({dialect: children})
    return entries


def accuracy_table() -> str:
    """The ops of each accuracy class (for the conformance chapter)."""
    classes: dict[str, list[str]] = {}
    for op in OPS.values():
        classes.setdefault(op.accuracy, []).append(op.name)
    order = ["exact", "correctly-rounded"] + sorted(c for c in classes if c.endswith("ulp")) + ["reduction", "matmul"]
    order += sorted(set(classes) - set(order))
    rows = []
    for name in order:
        if name not in classes:
            continue
        links = ", ".join(f"[`{n}`]({op_page_path(n).removeprefix('spec/')})" for n in classes[name])
        rows.append([name, str(len(classes[name])), links])
    return "\n".join(_table(["Class", "Ops", "Which"], rows)) + "\n"


def _directive_grammar() -> str:
    return "```text\n" + ebnf.grammar_text().rstrip("\n") + "\n```\n"


def structural_rules() -> str:
    """The verifier's structural rules and their IDs."""
    from ktir.verify import STRUCTURAL_RULES as rules
    return "\n".join(_table(["ID", "Rule"], [[f'<a id="{k}"></a>`{k}`', v] for k, v in rules.items()])) + "\n"


def warnings_table() -> str:
    """The verifier's warnings and their IDs."""
    from ktir.verify import WARNINGS as found
    return "\n".join(_table(["ID", "Meaning"], [[f'<a id="{k}"></a>`{k}`', v] for k, v in found.items()])) + "\n"


def runtime_kinds() -> str:
    """The reference interpreter's runtime diagnostic IDs, with where the spec defines each."""
    from reference_interp.errors import KINDS as kinds
    limits = {"step-limit", "memory-limit", "unsupported", "internal"}
    rows = []
    for kind in kinds:
        where = "execution.md#limits-of-an-implementation" if kind in limits else "execution.md#dynamic-errors"
        what = "implementation limit" if kind in limits else "dynamic error"
        rows.append([f"`runtime.{kind}`", f"[{what}]({where})"])
    return "\n".join(_table(["ID", "Defined in"], rows)) + "\n"


DIRECTIVES = {
    "warnings": warnings_table,
    "runtime-kinds": runtime_kinds,
    "structural-rules": structural_rules,
    "grammar": _directive_grammar,
    "ebnf": ebnf.ebnf_markdown,
    "accuracy-table": accuracy_table,
}

_DIRECTIVE = re.compile(r"^<!--\s*ktir:([a-z-]+)\s*-->\s*$", re.MULTILINE)


def expand_directives(markdown: str) -> str:
    """Replace `<!-- ktir:NAME -->` lines of hand-written spec pages by generated text.

    Generated text is written for pages directly under `spec/` (links are relative to it).
    """

    def replace(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in DIRECTIVES:
            raise ValueError(f"unknown docs directive <!-- ktir:{name} -->")
        return DIRECTIVES[name]()

    return _DIRECTIVE.sub(replace, markdown)
