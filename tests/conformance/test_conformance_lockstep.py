"""Every executing case of the conformance suite gives, in lockstep, exactly what the per-tile
run gives (bytes of every output, statistics, or the same error): the suite's programs were
written for conformance, not for lockstep, and cover every op of the inventory."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import ktir
import reference_interp as ri
from conformance.model import SUITE_ROOT, load_suite
from conformance.values import case_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from lockstep_campaign import difference  # noqa: E402


def _outcome(module: ktir.Module, function: str | None, inputs: dict[str, object], lockstep: bool | str):  # type: ignore[no-untyped-def]
    try:
        return ri.run(module, function, args={k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()},
                      lockstep=lockstep)
    except ri.KtirRuntimeError as e:
        return e.kind, str(e)


def test_every_run_case_is_the_same_in_lockstep() -> None:
    cases = [c for c in load_suite() if c.expect == "run"]
    locked_runs = 0
    differ = []
    for case in cases:
        module = ktir.parse((SUITE_ROOT / case.file).read_text(), case.file)
        inputs = dict(case_inputs(case, SUITE_ROOT))
        locked = _outcome(module, case.function, inputs, "always")
        locked_runs += isinstance(locked, ri.RunResult) and locked.lockstep
        why = difference(_outcome(module, case.function, inputs, False), locked)
        if why is not None:
            differ.append(f"{case.id}: {why}")
    assert not differ, "\n".join(differ)
    assert len(cases) > 900 and locked_runs > 0.9 * len(cases)  # lockstep ran, not gave up throughout
