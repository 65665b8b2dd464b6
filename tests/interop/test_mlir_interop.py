"""Interop lane: every valid KTIR program in the repository, read by stock MLIR 22.

For each program that `ktir validate` accepts (examples, test corpora, conformance cases):

1. printed with the ktdp ops in generic form (`ktir fmt --generic-ops ktdp ...`), it is
   accepted by `mlir-opt-22 --allow-unregistered-dialect --verify-each`;
2. MLIR's own generic re-print of it (`--mlir-print-op-generic`) reads back through
   `ktir validate` as valid, and is the same program (equal ASTs up to the value and alias
   names MLIR chooses, see tests/interop/canonical.py);
3. printed with every op generic (`ktir fmt --generic`), MLIR reads the same program as
   from (1): MLIR's prints of the two are identical.

Programs MLIR cannot read are listed in KNOWN_LIMITS with the reason; a listed program that
MLIR starts to accept fails the lane, so the list stays exact. The lane is skipped, saying
so, when no MLIR 22 `mlir-opt` is installed (Debian: `apt-get install mlir-22-tools`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import ktir
from ktir.ir.operation import Module
from ktir.syntax.generic_printer import print_generic
from ktir.syntax.printer import attr_text
from ktir.verify import validate_text
from tests.interop.canonical import same_program
from tests.interop.mlir_opt import Outcome, find_mlir_opt, run_batch

ROOT = Path(__file__).resolve().parents[2]
_SKIP_DIRS = {"site", "build", "node_modules", "ci-artifacts"}

# ops MLIR 22 no longer has: printed generic they become linalg.matmul / batch_matmul with
# the transposing indexing_maps (and a `ktir.named_op` attribute that brings the name back)
GENERIC_OPS = ["ktdp", "linalg.matmul_transpose_a", "linalg.matmul_transpose_b", "linalg.batch_matmul_transpose_b"]

_U3 = (
    "an inline affine set with '>=' inside !ktdp.tile_future<...>: without the ktdp dialect MLIR lexes "
    "the type's body as opaque text and takes the '>' of '>=' for its end (tests/corpus/README.md, U3)"
)
KNOWN_LIMITS: dict[str, str] = {
    "tests/corpus/legacy/tile_future_no_parens.ktir": _U3,
    "conformance/cases/syntax/accept.legacy.tile_future_no_parens.ktir": _U3,
}

# MLIR keeps an unregistered ktdp type as opaque text, but not the alias definitions that
# text names (an alias kept because its set holds '>=', see generic_printer): re-supplied.
ALIAS_IN_OPAQUE_TYPE = "an alias used only inside an opaque ktdp type (MLIR prints the type's text but drops the alias)"


def _programs() -> list[Path]:
    files = [p for ext in ("*.ktir", "*.mlir") for p in ROOT.rglob(ext)]
    keep = []
    for p in files:
        parts = p.relative_to(ROOT).parts
        if _SKIP_DIRS.intersection(parts) or any(x.startswith(".") for x in parts):
            continue
        if "invalid" in parts or "invalid_syntax" in parts:
            continue
        keep.append(p)
    return sorted(keep)


@dataclass
class Program:
    path: str
    module: Module
    ktdp_generic: str
    all_generic: str


@dataclass
class Lane:
    programs: list[Program]
    mlir: list[Outcome]  # MLIR's generic re-print of each ktdp_generic text
    mlir_all: list[Outcome]  # and of each all_generic text


@cache
def _lane() -> Lane | None:
    binary = find_mlir_opt()
    if binary is None:
        return None
    programs = []
    for path in _programs():
        source = path.read_text()
        module, diagnostics = validate_text(source, str(path))
        if module is None or any(d.severity == "error" for d in diagnostics):
            continue  # not a valid program (legacy spellings upstream rejects, ...)
        programs.append(Program(
            str(path.relative_to(ROOT)), module,
            print_generic(module, GENERIC_OPS, string_memory_spaces=True),
            print_generic(module, None, string_memory_spaces=True),
        ))
    flags = ("--mlir-print-op-generic", "--mlir-print-local-scope")
    mlir = run_batch(binary, [p.ktdp_generic for p in programs], flags)
    mlir_all = run_batch(binary, [p.all_generic for p in programs], flags)
    return Lane(programs, mlir, mlir_all)


@pytest.fixture(scope="module")
def lane() -> Lane:
    result = _lane()
    if result is None:
        pytest.skip("no MLIR 22 mlir-opt on PATH (Debian: apt-get install mlir-22-tools): the MLIR interop lane is skipped")
    return result


_ALIAS_USE = re.compile(r"#[A-Za-z_][A-Za-z0-9_$.]*")


def _with_missing_aliases(text: str, original: Module) -> tuple[str, bool]:
    """MLIR's print, with the original's definitions of aliases it names but no longer defines."""
    defined = set(re.findall(r"^(#[A-Za-z_][A-Za-z0-9_$.]*) =", text, re.M))
    missing = [n for n in dict.fromkeys(_ALIAS_USE.findall(text)) if n not in defined and n[1:] in original.attr_aliases]
    if not missing:
        return text, False
    return "".join(f"{n} = {attr_text(original.attr_aliases[n[1:]])}\n" for n in missing) + text, True


def test_known_limits_are_real_programs() -> None:
    paths = {str(p.relative_to(ROOT)) for p in _programs()}
    assert set(KNOWN_LIMITS) <= paths


def test_mlir_accepts_the_programs(lane: Lane) -> None:
    rejected = {p.path: o.error for p, o in zip(lane.programs, lane.mlir, strict=True) if o.output is None}
    unexpected = {k: v for k, v in rejected.items() if k not in KNOWN_LIMITS}
    assert not unexpected, f"mlir-opt-22 rejects {len(unexpected)} programs: {unexpected}"
    now_accepted = [k for k in KNOWN_LIMITS if k not in rejected]
    assert not now_accepted, f"listed as known limits but accepted by MLIR (remove them from KNOWN_LIMITS): {now_accepted}"
    accepted = len(lane.programs) - len(rejected)
    assert accepted >= 0.99 * len(lane.programs), f"{accepted} of {len(lane.programs)} accepted"
    print(f"\nmlir-opt-22 accepts {accepted} of {len(lane.programs)} valid programs; the rest: {rejected}")


def test_mlir_reprint_reads_back_valid_and_equal(lane: Lane) -> None:
    problems = []
    resupplied = []
    for program, outcome in zip(lane.programs, lane.mlir, strict=True):
        if outcome.output is None:
            continue
        text, added = _with_missing_aliases(outcome.output, program.module)
        if added:
            resupplied.append(program.path)
        back, diagnostics = validate_text(text, f"{program.path} (MLIR's print)")
        errors = [d for d in diagnostics if d.severity == "error"]
        if back is None or errors:
            problems.append(f"{program.path}: MLIR's print is not valid KTIR: {errors[:1]}")
        elif not same_program(program.module, back):
            problems.append(f"{program.path}: MLIR's print is a different program")
    assert not problems, f"{len(problems)} programs:\n" + "\n".join(problems[:20])
    print(f"\n{len(resupplied)} programs needed their aliases re-supplied ({ALIAS_IN_OPAQUE_TYPE}): {resupplied}")


def test_all_ops_generic_means_the_same_to_mlir(lane: Lane) -> None:
    differ = []
    for program, some, every in zip(lane.programs, lane.mlir, lane.mlir_all, strict=True):
        if some.output is None:
            continue
        if every.output is None:
            differ.append(f"{program.path}: rejected with every op generic: {every.error}")
        elif every.output != some.output:
            differ.append(f"{program.path}: MLIR reads a different program from the all-generic print")
    assert not differ, f"{len(differ)} programs:\n" + "\n".join(differ[:20])


def test_mlir_reads_ktir_fmt_generic_output(lane: Lane) -> None:
    """The plainest use: `ktir fmt --generic` of one example, piped into mlir-opt."""
    import subprocess

    binary = find_mlir_opt()
    assert binary is not None
    text = ktir.print_module(ktir.parse((ROOT / "examples" / "softmax.ktir").read_text()))
    module = ktir.parse(text)
    out = subprocess.run([binary, "--verify-each", "--allow-unregistered-dialect"], input=print_generic(module),
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_a_rejected_program_is_located_in_its_batch(lane: Lane) -> None:
    binary = find_mlir_opt()
    assert binary is not None
    good = "func.func @f() {\n  return\n}\n"
    bad = "func.func @g() {\n  %x = arith.constant 1 : i32\n  return %x : i32\n}\n"
    comment = "// a comment line with the marker // ----- inside\n" + good
    outcomes = run_batch(binary, [good, bad, comment, good])
    assert [o.output is None for o in outcomes] == [False, True, False, False]
    assert outcomes[1].error is not None and outcomes[1].error.startswith("3:")


@cache
def _custom_reprints() -> list[Outcome]:
    """MLIR 22's own custom-form print (no flags) of each program MLIR reads: the standard
    dialects in their custom forms, as a user's `mlir-opt` pipeline prints them."""
    lane = _lane()
    assert lane is not None
    binary = find_mlir_opt()
    assert binary is not None
    return run_batch(binary, [p.ktdp_generic for p in lane.programs])


def test_mlir_custom_reprint_reads_back(lane: Lane) -> None:
    """What MLIR 22 prints in its custom form (short `linalg.reduce { arith.addi
    {overflowFlags = #arith.overflow<none>} }` bodies, `return`, `%arg0`, `#map` aliases,
    `0.000000e+00`) reads back through `ktir validate`: 100% of what MLIR prints, and the
    same program."""
    problems = []
    read = 0
    for program, outcome in zip(lane.programs, _custom_reprints(), strict=True):
        if outcome.output is None:
            continue
        text, _ = _with_missing_aliases(outcome.output, program.module)
        back, diagnostics = validate_text(text, f"{program.path} (MLIR's custom print)")
        errors = [d for d in diagnostics if d.severity == "error"]
        if back is None or errors:
            problems.append(f"{program.path}: MLIR's custom print is not valid KTIR: {errors[:1]}")
        elif not same_program(program.module, back):
            problems.append(f"{program.path}: MLIR's custom print is a different program")
        else:
            read += 1
    assert not problems, f"{len(problems)} of {read + len(problems)} programs:\n" + "\n".join(problems[:20])
    print(f"\nMLIR's custom print of {read} programs reads back as the same programs")
