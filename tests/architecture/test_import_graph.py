"""The import rules of the architecture ("Which part may use which"), checked on the code.

The graph is built statically (see import_graph.py: function-level and TYPE_CHECKING imports
count). Each module belongs to one layer; LAYERS below is the architecture as a table, and
MAY_USE says which layers each one may import. A few allowed edges are narrower than a whole
layer (THROUGH). Violations are listed one per line with the importing line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from .import_graph import COMPUTED, Edge, cycles, edges, graph, modules

# Module-name prefix -> layer; the longest matching prefix wins.
LAYERS: dict[str, str] = {
    # the ground floor: typed IR, and the op definitions over it. No text, no execution.
    "ktir.ir": "ir",
    "ktir.dialects": "dialects",
    # leaves every layer may use: the error/diagnostic types, atomic file writes, lazy package names
    "ktir.syntax.diagnostics": "diagnostics",
    "ktir.fileio": "fileio",
    "ktir.lazy": "lazy",
    # text <-> IR
    "ktir.syntax": "syntax",
    "ktir.highlight": "syntax",  # the Pygments lexer of KTIR text
    # building IR in code
    "ktir.builder": "builder",
    # checking IR
    "ktir.verify": "verify",
    # hardware descriptions, the cost model over trace records
    "ktir.targets": "targets",
    # executing IR
    "reference_interp": "interp",
    # SDSC and torch.export -> IR
    "ktir.lower": "lower",
    "schedulers": "schedulers",
    # torch.compile(backend="ktir"): lowers, schedules and runs each captured graph
    "ktir.torch_backend": "backend",
    "conformance": "conformance",
    # the docs site generator
    "ktir.docsgen": "docs",
    # `import ktir` and its lazily loaded names (ktir.parse, ktir.Module, ...)
    "ktir": "facade",
    # the command line and the stand-alone example adapters: the only code that sees everything
    "ktir.cli": "cli",
    "ktir.batch": "cli",
    "conformance.examples": "cli",
}

# A module named `cli`, `__main__` or `*_cli` is a command-line entry point, whatever its package.
CLI_NAMES = ("cli", "__main__")

GROUND = {"ir", "dialects"}
LEAVES = {"diagnostics", "fileio", "lazy"}

# layer -> the layers it may import (besides its own modules). Nothing may import `cli`.
MAY_USE: dict[str, set[str]] = {
    "ir": set(),
    "dialects": {"ir"},
    "diagnostics": set(),
    "fileio": set(),
    "lazy": set(),
    "syntax": GROUND | LEAVES,
    # the builder may print and re-read what it built (located: positions of the printed text)
    "builder": GROUND | LEAVES | {"syntax"},
    "verify": GROUND | LEAVES | {"syntax"},  # narrowed below: only `parse`
    "targets": GROUND | LEAVES,
    "interp": GROUND | LEAVES | {"targets"},
    "lower": GROUND | LEAVES | {"syntax", "builder", "verify", "targets"},
    "schedulers": GROUND | LEAVES | {"syntax", "builder", "verify", "targets", "interp"},
    "backend": GROUND | LEAVES | {"syntax", "builder", "verify", "targets", "interp", "lower", "schedulers"},
    "conformance": GROUND | LEAVES | {"syntax", "builder", "verify", "interp", "facade"},
    "docs": GROUND | LEAVES | {"syntax", "verify", "interp", "schedulers", "conformance", "facade"},
    "facade": GROUND | LEAVES | {"syntax", "verify"},
    "cli": set(LAYERS.values()) - {"cli"},  # everything
}


@dataclass(frozen=True)
class Through:
    """An allowed layer edge that is narrower than the whole layer."""

    why: str
    targets: frozenset[str] | None = None  # the only modules of the used layer that may be imported
    names: frozenset[str] | None = None  # the only names that may be taken from them
    sources: frozenset[str] | None = None  # the only modules of the using layer that may import it


THROUGH: dict[tuple[str, str], Through] = {
    ("verify", "syntax"): Through(
        "validate_text parses, then verifies; the verifier itself reads no text",
        targets=frozenset({"ktir.syntax.parser"}),
        names=frozenset({"parse"}),
        sources=frozenset({"ktir.verify.validate"}),
    ),
    ("conformance", "interp"): Through(
        "the suite runs the interpreter through its reference adapter; regen writes the goldens with it",
        sources=frozenset({"conformance.adapters", "conformance.regen"}),
    ),
    ("docs", "interp"): Through(
        "the docs read the interpreter's public API only",
        targets=frozenset({"reference_interp", "reference_interp.errors"}),
    ),
    ("docs", "schedulers"): Through("the docs read the schedulers' public API only", targets=frozenset({"schedulers"})),
    ("docs", "conformance"): Through("the docs read the suite's public API only", targets=frozenset({"conformance"})),
    ("docs", "verify"): Through("the docs read the verifier's public API only", targets=frozenset({"ktir.verify"})),
}

# Modules that load modules by a name computed at run time, and why that is right there.
DYNAMIC_LOADS: dict[str, str] = {
    "ktir": "the facade's lazy names (PEP 562); the same imports stand under TYPE_CHECKING for readers",
    "ktir.cli": "subcommands load on first use so `ktir --version` stays fast",
    "ktir.lazy": "packages name their lazily loaded attributes' modules; they import them under TYPE_CHECKING too",
    "conformance.adapters": "`--adapter python:pkg.mod:Class` loads the user's adapter, named on the command line",
    "ktir.lower.torch.program_cli": "a .pt2 names the classes of its outputs (a Hugging Face ModelOutput); "
                                    "torch.export.load can only rebuild them once their module is imported",
}

# Violations tolerated for now: (source module, target module) -> why it is still there. None left.
KNOWN: dict[tuple[str, str], str] = {}

# Import cycles still present (sorted members), each with why; empty is the goal.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def layer_of(module: str) -> str:
    last = module.rpartition(".")[2]
    if last in CLI_NAMES or last.endswith("_cli"):
        return "cli"
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def violation(edge: Edge) -> str | None:
    """Why `edge` breaks the rules, or None."""
    if edge.target == COMPUTED:
        return None if edge.source in DYNAMIC_LOADS else "loads a module by a computed name: write the imports"
    src, dst = layer_of(edge.source), layer_of(edge.target)
    if edge.by_string:
        return f"loads {edge.target} by a string: write an import"
    if src == dst:
        return None
    if dst not in MAY_USE[src]:
        return f"{src} may not use {dst}"
    if any(n.startswith("_") for n in edge.names):
        return f"takes private name(s) {', '.join(n for n in edge.names if n.startswith('_'))} across layers"
    through = THROUGH.get((src, dst))
    if through is None:
        return None
    if through.sources is not None and edge.source not in through.sources:
        return f"{src} uses {dst} only from {', '.join(sorted(through.sources))} ({through.why})"
    if through.targets is not None and edge.target not in through.targets:
        return f"{src} uses {dst} only through {', '.join(sorted(through.targets))} ({through.why})"
    if through.names is not None and not set(edge.names) <= through.names:
        return f"{src} takes only {', '.join(sorted(through.names))} from {edge.target} ({through.why})"
    return None


def _report(lines: Iterable[str]) -> str:
    return "\n".join(sorted(lines))


ALL = edges()


def test_every_module_has_a_layer_with_rules() -> None:
    for module in modules():
        assert layer_of(module) in MAY_USE, module


def test_the_ground_floor_imports_nothing_above_it() -> None:
    bad = [
        f"{e.where()}: imports {e.target}"
        for e in ALL
        if layer_of(e.source) in GROUND and (e.target == COMPUTED or layer_of(e.target) not in GROUND)
    ]
    assert not bad, "ktir/ir + ktir/dialects must import nothing above them:\n" + _report(bad)


def test_lowering_does_not_import_the_interpreter() -> None:
    bad = [
        f"{e.where()}: imports {e.target}"
        for e in ALL
        if e.target != COMPUTED
        and layer_of(e.source) == "lower"
        and layer_of(e.target) == "interp"
        and (e.source, e.target) not in KNOWN
    ]
    assert not bad, _report(bad)


def test_imports_follow_the_layer_table() -> None:
    found = {}
    for e in ALL:
        why = violation(e)
        if why is not None:
            found.setdefault((e.source, e.target), f"{e.where()}: imports {e.target}: {why}")
    new = [text for key, text in found.items() if key not in KNOWN]
    fixed = [f"{s} -> {t}" for s, t in KNOWN if (s, t) not in found]
    assert not new, "imports against the architecture's rules:\n" + _report(new)
    assert not fixed, "fixed, remove from KNOWN:\n" + _report(fixed)


def test_no_import_cycles() -> None:
    found = [c for c in cycles(graph(ALL)) if tuple(c) not in KNOWN_CYCLES]
    lines = []
    for component in found:
        members = set(component)
        inside = sorted({f"{e.where()} -> {e.target}" for e in ALL if e.source in members and e.target in members})
        lines.append("cycle: " + ", ".join(component) + "\n    " + "\n    ".join(inside))
    gone = [c for c in KNOWN_CYCLES if list(c) not in cycles(graph(ALL))]
    assert not gone, f"fixed, remove from KNOWN_CYCLES: {gone}"
    assert not found, "import cycles (TYPE_CHECKING and function-level imports count):\n" + "\n".join(lines)


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("ktir.ir.types", "ir"),
        ("ktir.syntax.diagnostics", "diagnostics"),
        ("ktir.syntax.printer", "syntax"),
        ("ktir.lower.torch.program_cli", "cli"),
        ("reference_interp.cli", "cli"),
        ("conformance.examples.ktir_serve", "cli"),
        ("ktir", "facade"),
        ("ktir.docsgen.pages", "docs"),
        ("schedulers.spaces", "schedulers"),
    ],
)
def test_layer_assignment(module: str, layer: str) -> None:
    assert layer_of(module) == layer


def test_the_checker_catches_a_break() -> None:
    """A rule that cannot fail is no rule: an edge from the IR up to the parser is caught."""
    assert violation(Edge("ktir.ir.types", "ktir.syntax.parser", 1, ("KDYNAMIC",))) == "ir may not use syntax"
    assert violation(Edge("ktir.lower.torch.program", "reference_interp", 1, ("*",))) == "lower may not use interp"
    assert violation(Edge("ktir.docsgen.status", "conformance", 1, ("*",), by_string=True)) is not None
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
