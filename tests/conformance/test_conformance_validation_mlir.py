"""Stock MLIR 22 as a second judge of the validation level.

Every validation case whose program uses only MLIR's own dialects (no `ktdp`) is given, its
`expected-*` comments blanked, to `mlir-opt-22 --allow-unregistered-dialect --verify-each`.
MLIR must reject it at the case's line, except for the rules MLIR does not have (KTIR_ONLY,
where MLIR accepts, and ACCEPTED: single programs where KTIR is stricter) and the few programs MLIR rejects from another line (ELSEWHERE); both lists
are exact, so a change either way fails the test. Programs with ktdp ops cannot be judged this
way: MLIR reads them only as an unregistered dialect, whose ops it does not verify.
The lane is skipped when no MLIR 22 `mlir-opt` is installed.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from conformance.model import SUITE_ROOT, load_suite
from tests.interop.mlir_opt import find_mlir_opt, run_batch

# rules of KTIR that MLIR 22's verifier does not check: MLIR accepts these programs
KTIR_ONLY = {
    "func.func.C2": "`grid` is KTIR's attribute; to MLIR it is a discardable attribute",
    "memref.load.C2": "KTIR checks constant indices against static shapes; in MLIR they are undefined behaviour at run time",
    "memref.store.C3": "as memref.load.C2",
    "memref.dim.C1": "a constant dimension index beyond the rank: undefined behaviour in MLIR, an error in KTIR",
    "tensor.extract.C2": "as memref.load.C2",
    "tensor.dim.C1": "as memref.dim.C1",
    "scf.for.C5": "KTIR requires a positive constant step; MLIR's verifier does not look at the step's value",
    "scf.parallel.C1": "MLIR 22 does not compare the numbers of lower bounds, upper bounds and steps of the generic form",
}
# single programs MLIR accepts under a rule it otherwise shares (KTIR is stricter there)
ACCEPTED = {
    "validation.tensor.rank_zero_reshape.tensor.collapse_shape.C2.3ae314":
        "MLIR 22 accepts any sizes beside a rank-0 side; KTIR needs 1s (spec/differences.md)",
    "validation.tensor.rank_zero_reshape.tensor.expand_shape.C2.bb4895": "as collapse_shape",
}
# MLIR rejects these programs, but reports the error on another line than the violating op's
ELSEWHERE = {
    "validation.arith_elementwise.constant_dense.arith.constant.C1.cd4657": "MLIR's parser reports the bad literal two lines on",
    "validation.linalg_named.elementwise_shapes.linalg.div.C2.3865de": "MLIR fails to build the op's region (a parse error)",
    "validation.linalg_named.elementwise_shapes.linalg.abs.C2.ac7a1b": "as linalg.div",
    "validation.linalg_named.contractions.linalg.matmul.C2.543c54": "as linalg.div",
    "validation.linalg_structured.generic_map_kind.linalg.generic.C1.0aadb8": "reported at the attribute, on the op's second line",
    "validation.linalg_structured.generic_yield.linalg.generic.C4.b24352": "reported at the body's linalg.yield",
    "validation.linalg_structured.map_body.linalg.map.C2.4fc7e0": "reported at the body's linalg.yield",
    "validation.scf.reduce.scf.reduce.C1.c06cf3": "reported at the enclosing scf.parallel",
}


def test_mlir_rejects_every_standard_dialect_case_at_its_line() -> None:
    binary = find_mlir_opt()
    if binary is None:
        pytest.skip("no MLIR 22 mlir-opt installed (apt-get install mlir-22-tools)")
    cases = [c for c in load_suite() if c.level == "validation"]
    standard = []
    for c in cases:
        text = (SUITE_ROOT / c.file).read_text(encoding="utf-8")
        if "ktdp" not in text:
            standard.append((c, re.sub(r"//\s*expected-[^\n]*", "//", text)))
    outcomes = run_batch(binary, [text for _, text in standard])
    verdicts: Counter[str] = Counter()
    wrong = []
    for (case, _), outcome in zip(standard, outcomes, strict=True):
        line = None if outcome.error is None else int(outcome.error.split(":")[0])
        kind = "accepts" if line is None else "same line" if line == case.line else "elsewhere"
        verdicts[kind] += 1
        expected = ("accepts" if case.diagnostic in KTIR_ONLY or case.id in ACCEPTED else "elsewhere" if case.id in ELSEWHERE else "same line")
        if kind != expected:
            wrong.append(f"{case.id}: MLIR {kind} ({outcome.error}), expected {expected}")
    assert wrong == []
    assert len(standard) >= 360 and verdicts["same line"] >= 340, verdicts
    print(f"{len(standard)} of {len(cases)} cases in MLIR's dialects: {dict(verdicts)}")
