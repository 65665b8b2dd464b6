"""The static import graph of the project's packages, read from the source with `ast`.

Every `import` and `from ... import` counts, wherever it stands: at module level, inside a
function (a deferred import is still a dependency), and under `if TYPE_CHECKING:` (an
annotation-only import is not executed, but the code still names the other module's types,
so a layering break or a cycle hidden behind TYPE_CHECKING is still one). A call
`importlib.import_module("literal")` naming one of our modules counts too, and is also
reported as a load by string: write an import instead, so this graph (and the reader) sees it.

Edges go to the most specific module that exists: `from ktir.verify import sets` is an edge
to `ktir.verify.sets`, `from ktir.verify import verify` one to the package `ktir.verify`.
Importing `a.b.c` also runs the packages `a` and `a.b`; those implicit edges are left out
(Python's mechanics, not a choice the code makes).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ktir", "reference_interp", "schedulers", "conformance")
COMPUTED = "<computed>"  # the target of `importlib.import_module(name)` with a non-literal name


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    line: int
    names: tuple[str, ...]  # names taken from the target (`*` for `import target`)
    by_string: bool = False  # importlib.import_module("...")

    def where(self) -> str:
        return f"{self.source}:{self.line}"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the four packages."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _edges_of(module: str, path: Path, known: dict[str, Path]) -> Iterator[Edge]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, known)
                if target:
                    yield Edge(module, target, node.lineno, ("*",))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node)
            for alias in node.names:
                target = _resolve(f"{base}.{alias.name}", known) or _resolve(base, known)
                if target:
                    name = "*" if target == f"{base}.{alias.name}" else alias.name
                    yield Edge(module, target, node.lineno, (name,))
        elif isinstance(node, ast.Call) and _is_import_module(node.func):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                target = _resolve(arg.value, known)
                if target:
                    yield Edge(module, target, node.lineno, ("*",), by_string=True)
            else:  # a name computed at run time: which module it loads, no reader can tell
                yield Edge(module, COMPUTED, node.lineno, ("*",), by_string=True)


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def edges(root: Path = ROOT) -> list[Edge]:
    """Every import edge between our modules (self-edges left out)."""
    known = modules(root)
    return [e for m, p in known.items() for e in _edges_of(m, p, known) if e.target != e.source]


def graph(found: list[Edge]) -> dict[str, set[str]]:
    """Module -> the modules it imports (computed loads left out)."""
    out: dict[str, set[str]] = {}
    for e in found:
        if e.target != COMPUTED:
            out.setdefault(e.source, set()).add(e.target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found
