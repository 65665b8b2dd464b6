"""`--check`: run the input and the scheduled module on the same random inputs and compare."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ktir.ir.operation import Module


@dataclass
class CheckResult:
    ok: bool
    message: str
    max_abs_error: float


def check_equivalent(before: Module, after: Module, sizes: Mapping[str, int] | None = None, func: str | None = None,
                     seed: int = 0, rtol: float = 1e-2, atol: float = 1e-2) -> CheckResult:
    """Run both modules in the reference interpreter on identical random inputs.

    Index arguments given in `sizes` are bound to those values; arrays are inferred as
    `ktir run --random-inputs` does. Outputs are compared with a tolerance because a
    schedule may change the order of floating-point reductions (a K loop split differently).
    """
    import reference_interp as ri
    from reference_interp.inputs import infer_args

    given: dict[str, Any] = {k.lstrip("%"): int(v) for k, v in (sizes or {}).items()}
    try:
        args = infer_args(before, func, given, seed, {})
        ref = ri.run(before, func, {k: _copy(v) for k, v in args.items()})
        got = ri.run(after, func, {k: _copy(v) for k, v in args.items()})
    except ri.KtirRuntimeError as e:
        return CheckResult(False, f"the interpreter stopped: {e.message}", float("inf"))
    worst = 0.0
    for name, want in ref.outputs.items():
        have = got.outputs.get(name)
        if isinstance(want, dict) or have is None:
            continue
        a, b = np.asarray(want, dtype=np.float64), np.asarray(have, dtype=np.float64)
        if a.shape != b.shape:
            return CheckResult(False, f"{name}: shape {b.shape} differs from {a.shape}", float("inf"))
        err = float(np.max(np.abs(a - b))) if a.size else 0.0
        worst = max(worst, err)
        if not np.allclose(b, a, rtol=rtol, atol=atol, equal_nan=True):
            bad = int(np.argmax(np.abs(a - b) - rtol * np.abs(a)))
            return CheckResult(False, f"{name}: element {np.unravel_index(bad, a.shape)} is {b.flat[bad]!r}, "
                               f"expected {a.flat[bad]!r}", worst)
    return CheckResult(True, f"outputs match (max abs error {worst:.3g})", worst)


def _copy(v: Any) -> Any:
    return v.copy() if isinstance(v, np.ndarray) else v
