"""Op names in code come from the definitions: `ktir/dialects/names.py` (generated from the
registry by `python -m ktir.dialects.namegen`) is current, and code outside `ktir/dialects`
spells few op names as string literals (`tools/op_names_codemod.py` replaces them).

The count is the one the issue used: a quoted string, anywhere in the text (code, comments,
docstrings), that is exactly a registered op name. What stays is text for a reader (docstring
examples, the lowering bundle's own grammar), `Literal[...]` types, and the ir layer, which
may not import `ktir.dialects` (tests/architecture/test_import_graph.py)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from ktir.dialects import namegen, names
from ktir.dialects.registry import OPS

ROOT = Path(__file__).resolve().parents[2]
TREES = ("ktir", "reference_interp", "schedulers", "conformance")
# 1,689 before names.py; the count was 1,286, so at least an 80% fall is <= 257.
# tools/op_names_codemod.py over all four trees leaves 22 (98.7% fewer).
BOUND = 22
QUOTED = re.compile(r"""(["'])([a-z_]+\.[a-z_0-9.]+)\1""")


def literal_counts() -> dict[str, int]:
    counts = {}
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("ktir/dialects/"):
                continue
            n = sum(1 for m in QUOTED.finditer(path.read_text(encoding="utf-8")) if m.group(2) in OPS)
            if n:
                counts[rel] = n
    return counts


def test_op_name_literals_outside_the_dialects_are_bounded() -> None:
    counts = literal_counts()
    worst = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    assert sum(counts.values()) <= BOUND, f"op names as string literals: {sum(counts.values())} > {BOUND}; " \
        f"most in {worst}; run python tools/op_names_codemod.py FILE"


def test_the_bound_is_tight() -> None:
    # lower BOUND when literals go away, so that they cannot come back unnoticed
    assert sum(literal_counts().values()) == BOUND


def test_names_module_is_current() -> None:
    assert namegen.main(["--check"]) == 0, "run python -m ktir.dialects.namegen --write"


def test_every_op_has_its_name_and_nothing_else_is_there() -> None:
    spelled = {
        getattr(cls, attr)
        for cls in vars(names).values()
        if isinstance(cls, type) and cls.__module__ == names.__name__
        for attr in vars(cls)
        if not attr.startswith("__")
    }
    assert spelled == set(OPS)
    for name in OPS:
        cls, attr = namegen.attribute(name)
        assert getattr(getattr(names, cls), attr) == name
    assert namegen.attribute("scf.for") == ("Scf", "for_")
    assert namegen.attribute("scf.reduce.return") == ("Scf", "reduce_return")


def test_a_stale_names_module_is_reported(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    stale = namegen.render().replace('"scf.for"', '"scf.fro"')
    path = tmp_path / "names.py"
    path.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(namegen, "names_path", lambda: path)
    assert namegen.main(["--check"]) == 1
    assert namegen.main(["--write"]) == 0
    assert path.read_text(encoding="utf-8") == namegen.render()


@pytest.fixture(scope="module")
def codemod():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("op_names_codemod", ROOT / "tools" / "op_names_codemod.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BEFORE = '''\
"""Mentions "scf.for" to a reader."""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal["scf.for", "scf.if"]
PAIR = ("arith.addf" "x", 'arith.mulf')


def f(name: str) -> str:
    """"math.exp" here stays."""
    match name:
        case "scf.for" | "func.return":
            return f"{name} is 'scf.if'"
        case {"op": "linalg.yield"}:
            return "not.an.op"
    return "arith.addi" if re.match("x", name) else "the scf.for op"
'''

AFTER = '''\
"""Mentions "scf.for" to a reader."""

from __future__ import annotations

import re
from typing import Literal

from ktir.dialects.names import Arith, Func, Linalg, Scf

Kind = Literal["scf.for", "scf.if"]
PAIR = ("arith.addf" "x", Arith.mulf)


def f(name: str) -> str:
    """"math.exp" here stays."""
    match name:
        case Scf.for_ | Func.return_:
            return f"{name} is 'scf.if'"
        case {"op": Linalg.yield_}:
            return "not.an.op"
    return Arith.addi if re.match("x", name) else "the scf.for op"
'''


def test_the_codemod_replaces_exactly_the_op_name_literals_and_is_idempotent(codemod) -> None:  # type: ignore[no-untyped-def]
    after, used = codemod.rewrite(BEFORE)
    assert after == AFTER
    assert used == {"Arith", "Func", "Linalg", "Scf"}
    assert codemod.rewrite(after)[0] == after
    # an import that is there is extended, not repeated
    again, _ = codemod.rewrite(after + 'X = "math.exp"\n')
    assert again.count("from ktir.dialects.names import") == 1
    assert "import Arith, Func, Linalg, Math, Scf\n" in again


def test_the_codemod_leaves_a_module_that_binds_a_class_name_alone(codemod) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(codemod.NameClash, match="Scf"):
        codemod.rewrite('Scf = 1\nX = "scf.for"\n')
    assert "X = Arith.addf\n" in codemod.rewrite('Scf = 1\nX = "arith.addf"\n')[0]  # no clash with Arith
