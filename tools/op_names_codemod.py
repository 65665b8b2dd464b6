"""Replace op-name string literals in Python files by the constants of `ktir.dialects.names`.

    python tools/op_names_codemod.py PATH...     # files or directories; rewrites in place
    python tools/op_names_codemod.py --dry-run PATH...

A string literal is replaced when it is a whole literal (not part of an implicit concatenation,
not an f-string or bytes) whose value is the name of a registered op: `"scf.for"` becomes
`Scf.for_`, in expressions and in `case` patterns alike (a dotted name is a value pattern).
Left alone: docstrings, strings inside `Literal[...]`, and text that merely mentions an op
(`"expected arith.addf"`). The needed `from ktir.dialects.names import ...` is added (merged
into one that is there) and the imports are sorted with `ruff check --select I --fix`.
Re-running it changes nothing. Files of the layers that may not import `ktir.dialects`
(ktir/ir, the leaf modules) and ktir/dialects itself are skipped.
"""

from __future__ import annotations

import argparse
import ast
import io
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ktir.dialects.namegen import attribute  # noqa: E402
from ktir.dialects.registry import OPS  # noqa: E402

# modules that may not import ktir.dialects (tests/architecture/test_import_graph.py), and the
# definitions themselves
SKIPPED = ("ktir/ir/", "ktir/dialects/", "ktir/syntax/diagnostics.py", "ktir/fileio.py", "ktir/lazy.py")
MODULE = "ktir.dialects.names"
FIRST_PARTY = {"ktir", "reference_interp", "schedulers", "conformance", "benchmarks", "tests"}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _excluded(tree: ast.AST) -> set[int]:
    """ids of the nodes under an f-string or a `Literal[...]`, and docstrings."""
    out = _docstrings(tree)
    for node in ast.walk(tree):
        literal = isinstance(node, ast.Subscript) and (
            (isinstance(node.value, ast.Name) and node.value.id == "Literal")
            or (isinstance(node.value, ast.Attribute) and node.value.attr == "Literal")
        )
        if isinstance(node, ast.JoinedStr) or literal:
            out.update(id(n) for n in ast.walk(node))
    return out


def _targets(tree: ast.AST) -> dict[tuple[int, int, int, int], str]:
    """Span (line, col, end line, end col) of each replaceable literal -> the op name."""
    skip = _excluded(tree)
    spans = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in OPS
            and id(node) not in skip
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            spans[(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)] = node.value
    return spans


def _col(line: str, char_col: int) -> int:
    """The UTF-8 byte offset ast reports for a character column of `line`."""
    return len(line[:char_col].encode("utf-8"))


def _bound_elsewhere(tree: ast.AST) -> set[str]:
    """Names the module binds other than by importing them from ktir.dialects.names."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom) and getattr(node, "module", None) != MODULE:
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


class NameClash(Exception):
    pass


def rewrite(source: str) -> tuple[str, set[str]]:
    """`source` with its op-name literals replaced, and the classes it now uses. NameClash
    if the module binds one of those class names itself."""
    tree = ast.parse(source)
    spans = _targets(tree)
    if not spans:
        return source, set()
    clash = {attribute(name)[0] for name in spans.values()} & _bound_elsewhere(tree)
    if clash:
        raise NameClash(f"the module binds {', '.join(sorted(clash))} itself")
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    used: set[str] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING:
            continue
        (sl, sc), (el, ec) = tok.start, tok.end
        key = (sl, _col(lines[sl - 1], sc), el, _col(lines[el - 1], ec))
        name = spans.get(key)
        if name is None:
            continue  # part of an implicit concatenation, or not an op name
        cls, attr = attribute(name)
        used.add(cls)
        edits.append((sl, sc, el, ec, f"{cls}.{attr}"))
    for sl, sc, el, ec, text in sorted(edits, reverse=True):
        if sl == el:
            line = lines[sl - 1]
            lines[sl - 1] = line[:sc] + text + line[ec:]
        else:
            lines[sl - 1] = lines[sl - 1][:sc] + text + lines[el - 1][ec:]
            del lines[sl:el]
    out = "".join(lines)
    return _add_import(out, used), used


def _add_import(source: str, used: set[str]) -> str:
    if not used:
        return source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == MODULE and node.end_lineno is not None:
            have = {a.name for a in node.names}
            if used <= have:
                return source
            names = ", ".join(sorted(have | used))
            lines[node.lineno - 1 : node.end_lineno] = [f"from {MODULE} import {names}\n"]
            return "".join(lines)
    line = f"from {MODULE} import {', '.join(sorted(used))}\n"
    body = list(tree.body)
    start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    imports = []
    for node in body[start:]:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            break
        imports.append(node)
    head = [n for n in imports if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
    first_party = [
        n for n in head if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] in FIRST_PARTY
    ]
    after = [n for n in first_party if (n.module or "") > MODULE]
    if after:  # in order among the project's imports
        lines.insert(after[0].lineno - 1, line)
    elif first_party:
        lines.insert(first_party[-1].end_lineno or 0, line)
    elif relative := [n for n in head if isinstance(n, ast.ImportFrom) and n.level > 0]:
        lines.insert(relative[0].lineno - 1, line + "\n")
    else:  # a section of its own, after the other imports, the docstring or the __future__ import
        last = (imports[-1].end_lineno if imports else body[0].end_lineno if start else 0) or 0
        lines.insert(last, ("\n" if last else "") + line)
    return "".join(lines)


def python_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    out = []
    for f in files:
        rel = f.resolve().relative_to(ROOT).as_posix() if f.resolve().is_relative_to(ROOT) else f.as_posix()
        if not rel.startswith(SKIPPED):
            out.append(f)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="Python files or directories")
    parser.add_argument("--dry-run", action="store_true", help="list what would change, write nothing")
    args = parser.parse_args(argv)
    changed: list[Path] = []
    for path in python_files(args.paths):
        source = path.read_text(encoding="utf-8")
        try:
            new, used = rewrite(source)
        except NameClash as e:
            print(f"{path}: left alone: {e}", file=sys.stderr)
            continue
        if new != source:
            changed.append(path)
            print(f"{path}: {', '.join(sorted(used))}")
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")
    if changed and not args.dry_run:
        ruff = shutil.which("ruff")
        if ruff is None:
            print("ruff not found: check the imports of the files above are sorted", file=sys.stderr)
        else:
            subprocess.run([ruff, "check", "--quiet", "--select", "I", "--fix", *map(str, changed)], check=False)
    print(f"{len(changed)} file(s) {'would change' if args.dry_run else 'changed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
