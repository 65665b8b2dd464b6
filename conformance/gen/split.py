"""Split a negative test holding several violations into programs holding one each.

A negative test (a `// -----` block of tests/verify/invalid/*.ktir) marks each violation with
`// expected-error@+N {{[ID] fragment}}`, N lines above the op that commits it. For each mark,
`split()` deletes the ops the *other* marks point at (a terminator is deleted with the function
around it), with the comment lines right above them, and then whatever the deletion leaves
dangling: ops that use a value a deleted op defined, and ops whose every use was in deleted
ops (a producer nobody consumes any more). Uses are resolved on the parsed program, with
MLIR's scoping (a function does not see another's values). What remains is a program whose
one violation is the kept mark's, at a known line.

This module only edits text; whether the result really holds one violation, reported at that
line, is decided by the caller with a verifier (`conformance.gen.validation`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ktir.dialects.names import Func
from ktir.dialects.registry import OPS
from ktir.dialects.traits import ISOLATED_FROM_ABOVE, TERMINATOR
from ktir.ir.operation import Operation

_SPLIT = re.compile(r"^// -----\s*$")
_EXPECT = re.compile(r"//\s*expected-(error|warning|note)(?:@([+-]\d+))?\s*\{\{\[([^\]]+)\]\s*(.*?)\}\}")


@dataclass(frozen=True)
class Mark:
    """One `expected-<severity>` comment: what is expected where (0-based lines of the block)."""

    severity: str
    id: str
    fragment: str
    comment: int  # the line of the comment
    target: int  # the line it points at


@dataclass(frozen=True)
class Block:
    """One `// -----` block of a file: its lines and where it starts in the file (1-based)."""

    start: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def marks(self) -> list[Mark]:
        out = []
        for n, line in enumerate(self.lines):
            m = _EXPECT.search(line)
            if m:
                out.append(Mark(m.group(1), m.group(3), m.group(4).strip(), n, n + int(m.group(2) or 0)))
        return out


def blocks(source: str) -> Iterator[Block]:
    """The blocks of a file that hold code (not only comments)."""
    lines = source.split("\n")
    bounds = [0] + [i + 1 for i, line in enumerate(lines) if _SPLIT.match(line)] + [len(lines) + 1]
    for start, end in zip(bounds, bounds[1:], strict=False):
        kept = tuple(lines[start:end - 1])
        if any(_code(line).strip() for line in kept):
            yield Block(start + 1, kept)


def _code(line: str) -> str:
    """The line without its `//` comment (no KTIR string in these files holds `//`)."""
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def extent(lines: tuple[str, ...], first: int) -> int:
    """The last line of the op starting on line `first` (0-based): the op runs while its
    braces are open, and over following lines indented deeper than it until it opens a region
    (an op written over several lines)."""
    code = [_code(line) for line in lines]
    last, depth = first, 0
    while True:
        depth += code[last].count("{") - code[last].count("}")
        nxt = next((k for k in range(last + 1, len(code)) if code[k].strip()), None)
        if nxt is None:
            return last
        if depth > 0 or (_indent(code[nxt]) > _indent(code[first]) and not code[nxt].lstrip().startswith("}")):
            last = nxt
            continue
        return last


@dataclass
class _Node:
    """One op of the parsed block, with what it uses (ops defining its operands, resolved in scope)."""

    op: Operation
    line: int  # 0-based line where the op starts
    parent: int | None  # index of the enclosing op's node
    deps: set[int] = field(default_factory=set)
    children: list[int] = field(default_factory=list)


def _graph(ops: list[Operation]) -> list[_Node]:
    nodes: list[_Node] = []

    def walk(block_ops: list[Operation], scope: dict[str, int], parent: int | None) -> None:
        local = dict(scope)
        for op in block_ops:
            if op.loc is None:
                continue
            k = len(nodes)
            node = _Node(op, op.loc.line - 1, parent)
            nodes.append(node)
            if parent is not None:
                nodes[parent].children.append(k)
            node.deps = {local[name] for name in op.operands if name in local}
            definition = OPS.get(op.name)
            isolated = definition is not None and ISOLATED_FROM_ABOVE in definition.traits
            for region in op.regions:
                for block in region.blocks:
                    inner = {} if isolated else dict(local)
                    inner.update({a.name: k for a in block.arguments})
                    walk(block.operations, inner, k)
            for name in op.results:
                local[name] = k
                local[name.split("#")[0]] = k

    for top in ops:
        walk([top], {}, None)
    return nodes


def _is_terminator(op: Operation) -> bool:
    definition = OPS.get(op.name)
    return definition is not None and TERMINATOR in definition.traits


@dataclass(frozen=True)
class Split:
    """One single-violation program cut out of a block."""

    mark: Mark
    text: str
    line: int  # 1-based line of the violation in `text`
    function: str | None  # the function holding it


def split(block: Block, mark: Mark) -> Split | str:
    """The block with every other error mark's op deleted, or why that cannot be done."""
    from ktir.syntax.diagnostics import KtirError
    from ktir.syntax.parser import parse

    try:
        module = parse(block.text, "block.ktir")
    except KtirError as e:
        return f"the block does not parse: {e}"
    nodes = _graph(module.operations)

    def innermost(line: int) -> int | None:
        found = [k for k, n in enumerate(nodes) if n.line == line]
        return found[-1] if found else None

    def ancestors(k: int) -> set[int]:
        out, p = set(), nodes[k].parent
        while p is not None:
            out.add(p)
            p = nodes[p].parent
        return out

    def subtree(k: int) -> set[int]:
        out = {k}
        for c in nodes[k].children:
            out |= subtree(c)
        return out

    target = innermost(mark.target)
    if target is None:
        return f"no op starts at the marked line {mark.target + 1}"
    keep = {target} | ancestors(target)
    gone: set[int] = set()
    removed: set[int] = set()  # lines
    for other in block.marks():
        if other.severity != "error" or other == mark:
            continue
        removed.add(other.comment)
        if other.target == mark.target:
            return f"the same op also commits {other.id}: deleting ops cannot separate them"
        k = innermost(other.target)
        if k is None:
            return f"no op starts at line {other.target + 1} (marked {other.id})"
        if _is_terminator(nodes[k].op):  # a block cannot lose its terminator: the function goes
            funcs = [a for a in ancestors(k) if nodes[a].op.name == Func.func]
            if not funcs:
                return f"the op marked {other.id} is a terminator outside a function"
            k = max(funcs)  # the innermost function (nodes are in pre-order)
        if k in keep:
            return f"deleting the op marked {other.id} deletes the kept violation with it"
        gone |= subtree(k)
    users: dict[int, set[int]] = {k: set() for k in range(len(nodes))}
    for k, n in enumerate(nodes):
        for d in n.deps:
            users[d].add(k)
    while True:
        fresh = {k for k, n in enumerate(nodes) if k not in gone and n.deps & gone}
        # producers whose every user went (the kept op may lose its users: it stays)
        fresh |= {k for k, n in enumerate(nodes) if k not in gone and k not in keep and n.op.results and users[k]
                  and users[k] <= gone}
        if not fresh:
            break
        for k in fresh:
            if k in keep:
                return f"the kept violation uses a value the deleted ops define (line {nodes[k].line + 1})"
            if _is_terminator(nodes[k].op):
                return f"a terminator (line {nodes[k].line + 1}) uses a value the deleted ops define"
            gone |= subtree(k)
    for k in gone:
        first = nodes[k].line
        removed |= set(range(first, extent(block.lines, first) + 1))
        above = first - 1  # the comment lines right above a deleted op describe it
        while above >= 0 and block.lines[above].strip().startswith("//"):
            removed.add(above)
            above -= 1
    if mark.comment in removed or mark.target in removed:
        return "the kept violation's own lines would be deleted"
    kept = [n for n in range(len(block.lines)) if n not in removed]
    while kept and not block.lines[kept[0]].strip():
        kept.pop(0)
    while kept and not block.lines[kept[-1]].strip():
        kept.pop()
    text = "\n".join(block.lines[n] for n in kept) + "\n"
    return Split(mark, text, kept.index(mark.target) + 1, _function([nodes[k].op for k in sorted(keep)]))


def _function(chain: list[Operation]) -> str | None:
    """The name of the innermost function among `chain` (the kept op and its ancestors)."""
    for op in reversed(chain):
        if op.name == Func.func:
            name = op.attr("sym_name")
            return str(getattr(name, "value", name)) if name is not None else None
    return None
