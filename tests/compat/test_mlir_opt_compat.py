"""Standard-dialect MLIR as a user writes it, checked against stock MLIR 22 (`mlir-opt-22`).

For every program in tests/compat/mlir (written by hand in MLIR's custom form, the way MLIR's
own docs and tests write it):

1. `mlir-opt-22` accepts it (so the file really is MLIR);
2. `ktir validate` accepts what MLIR prints of it, in the custom and in the generic form;
3. `ktir fmt`'s output and `ktir fmt --generic`'s are accepted by MLIR, and MLIR prints each
   of them exactly as it prints the original (the same program);
4. `ktir fmt` is a fixpoint.

Skipped when no MLIR 22 `mlir-opt` is installed (CI installs Debian's mlir-22-tools).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import ktir
from ktir.syntax.generic_printer import print_generic
from ktir.verify import validate_text
from tests.interop.mlir_opt import Outcome, find_mlir_opt, run_batch

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted((HERE / "mlir").glob("*.mlir"))


@cache
def _mlir(kind: str) -> dict[str, Outcome]:
    """MLIR's print (custom, or generic with `kind == "generic"`) of every program, or of
    ktir's print of it (`fmt`, `fmt-generic`)."""
    binary = find_mlir_opt()
    assert binary is not None
    texts = []
    for path in PROGRAMS:
        source = path.read_text()
        if kind.startswith("fmt"):
            module = ktir.parse(source, str(path))
            source = print_generic(module, None) if kind == "fmt-generic" else ktir.print_module(module)
        texts.append(source)
    flags = ("--mlir-print-op-generic",) if kind == "generic" else ()
    return dict(zip((p.name for p in PROGRAMS), run_batch(binary, texts, flags), strict=True))


@pytest.fixture(scope="module")
def mlir_opt() -> None:
    if find_mlir_opt() is None:
        pytest.skip("no MLIR 22 mlir-opt on PATH (Debian: apt-get install mlir-22-tools)")


def test_there_are_programs() -> None:
    assert len(PROGRAMS) >= 40


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_ktir_reads_what_mlir_prints(mlir_opt: None, path: Path) -> None:
    for kind in ("custom", "generic"):
        printed = _mlir(kind)[path.name]
        assert printed.output is not None, f"MLIR rejects the program: {printed.error}"
        module, diagnostics = validate_text(printed.output, f"{path.name} ({kind} print of MLIR)")
        errors = [f"{d.line}:{d.column} {d.id} {d.message}" for d in diagnostics if d.severity == "error"]
        assert module is not None and not errors, (kind, errors)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_mlir_reads_what_ktir_prints(mlir_opt: None, path: Path) -> None:
    original = _mlir("custom")[path.name].output
    for kind in ("fmt", "fmt-generic"):
        printed = _mlir(kind)[path.name]
        assert printed.error is None, f"MLIR rejects `ktir {kind}`: {printed.error}"
        assert printed.output == original, f"MLIR reads a different program from `ktir {kind}`"


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_fmt_is_a_fixpoint(path: Path) -> None:
    once = ktir.print_module(ktir.parse(path.read_text(), str(path)))
    assert ktir.print_module(ktir.parse(once)) == once


def test_linalg_without_inputs_prints_no_empty_ins() -> None:
    """MLIR prints no `ins(...)` for a linalg op without inputs, and cannot read `ins()`."""
    module = ktir.parse((HERE / "mlir" / "linalg_index.mlir").read_text())
    text = ktir.print_module(module)
    assert "ins(" not in text and " outs(%a : tensor<4xindex>) {" in text
    assert ktir.print_module(ktir.parse(text)) == text


def test_mlir_hex_constants_run_like_the_written_lists(mlir_opt: None) -> None:
    """MLIR prints constants of more than 100 elements as hex blobs (i1 one bit per element):
    the interpreter reads them as the lists they were written as."""
    import numpy as np

    import reference_interp as ri

    printed = _mlir("custom")["large_constants.mlir"].output
    assert printed is not None and printed.count('dense<"0x') == 3
    written = ri.run(ktir.parse((HERE / "mlir" / "large_constants.mlir").read_text())).returns[0]
    read = ri.run(ktir.parse(printed)).returns[0]
    for a, b in zip(written, read, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
