"""The named contractions' loop structure (einsum letters, operand maps) is declared once, on
the op definitions (`ktir/dialects`), and every other module reads it from there
(`ktir.dialects.registry.contractions()`): a module that spells it again fails here.

Exempt on purpose: the conformance generators (`conformance/gen`), whose numpy models are the
oracle the interpreter is certified against, and so must state what each op computes
independently of the definitions they check (a wrong letter in a definition would otherwise
move the interpreter and its oracle together); and tests, for the same reason."""

from __future__ import annotations

import ast
from pathlib import Path

from ktir.dialects.registry import OPS, contractions
from ktir.dialects.structure import einsum_loops

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ktir", "reference_interp", "schedulers", "conformance", "benchmarks")


def _spellings() -> tuple[set[str], set[tuple[str, ...]], set[tuple[tuple[int, ...], ...]]]:
    """Einsum strings, their operand-letter tuples (with the letters renamed too), and the
    loop-position tuples of every named contraction."""
    specs, parts, loops = set(), set(), set()
    for spec in contractions().values():
        specs.add(spec)
        parts.add(tuple(spec.replace("->", ",").split(",")))
        loops.add(einsum_loops(spec))
    return specs, parts, loops


def _constant(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _offenders(path: Path) -> list[str]:
    specs, parts, loops = _spellings()
    found = []
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        value = _constant(node) if isinstance(node, (ast.Constant, ast.Tuple)) else None
        if isinstance(value, str) and value in specs:
            found.append(f"{name}:{node.lineno}: einsum {value!r}")
        elif isinstance(value, tuple) and len(value) > 1 and _hashable(value) and (value in parts or value in loops):
            found.append(f"{name}:{node.lineno}: operand structure {value!r}")
    return found


def test_no_module_outside_the_definitions_spells_a_named_contraction() -> None:
    files = [
        f for pkg in PACKAGES for f in (ROOT / pkg).rglob("*.py")
        if "dialects" not in f.relative_to(ROOT).parts and f.relative_to(ROOT).parts[:2] != ("conformance", "gen")
    ]
    assert len(files) > 100
    offenders = [line for f in files for line in _offenders(f)]
    assert offenders == [], "read these from ktir.dialects.registry.contractions():\n" + "\n".join(offenders)


def test_the_check_finds_a_spelled_contraction(tmp_path: Path) -> None:
    """The scan is not vacuous: a copy of the matmul's letters or maps is found. (The copy is
    written outside the source tree: a file in it would race the scan above on another worker.)"""
    spec = contractions()["linalg.matmul_transpose_a"]
    sample = tmp_path / "_probe_contraction_copy.py"
    sample.write_text(
        f"SPEC = {spec!r}\nPARTS = {tuple(spec.replace('->', ',').split(','))!r}\n"
        f"MAPS = {einsum_loops(spec)!r}\n",
        encoding="utf-8",
    )
    assert len(_offenders(sample)) == 3


def test_the_readers_see_the_definitions() -> None:
    """The verifier, the interpreter and the MLIR generic form read the same table."""
    from ktir.syntax import mlir_generic
    from ktir.verify.rules import linalg as rules
    from reference_interp.ops import linalg as interp

    table = contractions()
    assert set(table) == {n for n, d in OPS.items() if d.structure is not None and d.structure.kind == "contraction"}
    assert table == interp._NAMED_SPECS
    assert {f"linalg.{m}" for m in rules._CONTRACTIONS} == set(table)
    for name, (_base, n_loops, maps) in mlir_generic._TRANSPOSED.items():
        assert maps == einsum_loops(table[name]) and n_loops == len(set(table[name]) - set(",->"))
