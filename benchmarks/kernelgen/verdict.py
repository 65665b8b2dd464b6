"""Running generated kernels in the reference interpreter and judging the results.

`check_generator` checks the generator itself: the unscheduled kernel, run by the interpreter,
must agree with the numpy oracle within each output's `atol`. `judge` checks a schedule: the
scheduled module, run on the same inputs, must agree with the unscheduled kernel's outputs
within the same `atol` (each is within half of it of the exact value), must not race and
must run, and must leave the arrays the kernel only reads as they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ktir.ir.operation import Module

from .ir import Generated

RACE_KINDS = frozenset({"race", "store-conflict"})  # two tiles (or one store) writing one element


class GeneratorMismatch(AssertionError):
    """The unscheduled kernel disagrees with its numpy oracle: a bug of the generator (or the interpreter)."""


@dataclass(frozen=True)
class Verdict:
    status: str  # ok, wrong (differs, stops in the interpreter, or does not verify), racy
    message: str


def run_kernel(module: Module, kernel: Generated, everything: bool = False) -> dict[str, np.ndarray]:
    """The kernel's output arrays (with `everything`, every array argument) after running `module`
    in the interpreter on the kernel's inputs."""
    import reference_interp as ri

    result = ri.run(module, None, kernel.args())
    names = kernel.inputs if everything else kernel.outputs
    return {name: np.asarray(result.outputs[name]) for name in names if name in result.outputs}


def clobbered(got: dict[str, np.ndarray], kernel: Generated) -> str | None:
    """The first array the kernel only reads that a run changed (a schedule must not write its inputs)."""
    for name, before in kernel.inputs.items():
        if name in kernel.outputs or name not in got:
            continue
        after = np.asarray(got[name])
        if after.shape != before.shape or not np.array_equal(after, before, equal_nan=before.dtype.kind == "f"):
            changed = int(np.sum(after != before)) if after.shape == before.shape else after.size
            return f"{name}: an input of the kernel was written ({changed} of {before.size} elements changed)"
    return None


def compare(got: dict[str, Any], kernel: Generated, want: dict[str, Any] | None = None) -> str | None:
    """The first output of `got` that differs from `want` (default: the oracle) by more than its atol."""
    for name, out in kernel.outputs.items():
        have = np.asarray(got[name], dtype=np.float64)
        expected = np.asarray(want[name] if want is not None else out.expected, dtype=np.float64)
        if have.shape != expected.shape:
            return f"{name}: shape {have.shape}, expected {expected.shape}"
        close = np.abs(have - expected) <= out.atol  # NaN (an element never written) is never close
        if not close.all():
            bad = np.argwhere(~close)
            at = tuple(int(i) for i in bad[0])
            return (f"{name}: {len(bad)} of {have.size} elements differ by more than {out.atol:.3g}; element "
                    f"{list(at)} is {float(have[at])!r}, expected {float(expected[at])!r}")
    return None


def check_generator(kernel: Generated) -> dict[str, np.ndarray]:
    """Run the unscheduled kernel; raise GeneratorMismatch unless it matches the oracle. Returns its outputs."""
    got = run_kernel(kernel.module, kernel)
    problem = compare(got, kernel)
    if problem is not None:
        raise GeneratorMismatch(f"{kernel.kind} kernel (seed {kernel.seed}): the interpreter disagrees with the "
                                f"numpy oracle: {problem}")
    return got


def judge(kernel: Generated, scheduled: Module, reference: dict[str, np.ndarray]) -> Verdict:
    """Whether `scheduled` computes what the unscheduled kernel computed (`reference`), without races."""
    import reference_interp as ri
    from ktir.syntax.printer import print_module
    from ktir.verify import validate_text

    _, diagnostics = validate_text(print_module(scheduled), "scheduled.ktir")
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        return Verdict("wrong", f"the scheduled module does not verify: {errors[0].message}")
    try:
        got = run_kernel(scheduled, kernel, everything=True)
    except ri.KtirRuntimeError as e:
        status = "racy" if e.kind in RACE_KINDS else "wrong"
        return Verdict(status, f"the interpreter stopped on the scheduled module ({e.kind}): {e.message}")
    problem = compare(got, kernel, reference) or clobbered(got, kernel)
    return Verdict("ok", "") if problem is None else Verdict("wrong", problem)
