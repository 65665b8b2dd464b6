"""`--check`: run the input and the scheduled module on the same random inputs and compare.

A failed check must not go unnoticed: `CheckResult` is falsy when the outputs differ, and
`check_schedule` (what `ScheduleOptions(check=True)` runs) raises `CheckFailed`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ktir.ir.operation import Module

from .api import CheckResult as CheckResult  # defined with the result it is part of; re-exported
from .api import ScheduleError, ScheduleOptions, ScheduleResult


class CheckFailed(ScheduleError):
    """The scheduled module computes something else than its input (`.check` says where)."""

    def __init__(self, check: CheckResult) -> None:
        super().__init__(f"the scheduled module differs from its input: {check.message}")
        self.check = check


def check_schedule(before: Module, result: ScheduleResult, options: ScheduleOptions | None = None) -> CheckResult:
    """Check `result` against the module it was scheduled from; raise `CheckFailed` if they differ.

    The verdict is also kept in `result.check` and in the report's notes. An input the
    interpreter cannot bind (a missing size) raises `ktir.syntax.diagnostics.KtirError`. A
    result that is its input unchanged (`unchanged`: a kernel the schedulers declined) is not
    run: it computes what its input computes.
    """
    opts = options or ScheduleOptions()
    if unchanged(before, result.module):  # the same program: running it twice proves nothing
        verdict = CheckResult(True, "the scheduled module is its input, unchanged (the same printed text): not run", 0.0)
    else:
        verdict = check_equivalent(before, result.module, opts.sizes, opts.func, opts.seed)
    result.check = verdict
    result.report.notes.append(f"check: {verdict.message}")
    if not verdict.ok:
        raise CheckFailed(verdict)
    return verdict


def unchanged(before: Module, after: Module) -> bool:
    """`after` is `before`'s program: the same object, or the same printed text."""
    from ktir.syntax.printer import print_module

    return after is before or print_module(after) == print_module(before)


def check_equivalent(before: Module, after: Module, sizes: Mapping[str, int] | None = None, func: str | None = None,
                     seed: int = 0, rtol: float = 1e-2, atol: float = 1e-2) -> CheckResult:
    """Run both modules in the reference interpreter on identical random inputs.

    Index arguments given in `sizes` are bound to those values; arrays are inferred as
    `ktir run --random-inputs` does. An input that cannot run raises `ScheduleError`.

    Integer and boolean outputs must be equal: no schedule changes integer results. Float
    outputs are compared with a tolerance because a schedule may change the order of
    floating-point reductions (a K loop split differently): `rtol` (at least two ulps of the
    output's type, so a reordering may move a bf16 or f8 result by one ulp), and `atol`
    scaled down to the output's magnitude when that is below 1, so outputs whose values are
    all small (softmax rows of a thousand columns, about 1e-3 each) are not compared against
    an absolute slack larger than the values themselves.
    """
    import reference_interp as ri
    from reference_interp.inputs import infer_args

    given: dict[str, Any] = {k.lstrip("%"): int(v) for k, v in (sizes or {}).items()}
    try:
        args = infer_args(before, func, given, seed, {})
        ref = ri.run(before, func, {k: _copy(v) for k, v in args.items()})
    except ri.KtirRuntimeError as e:
        # the input itself cannot run: nothing is known about the schedule, so this is not a verdict
        # the interpreter's hint names `ktir run --arg`; `ktir schedule` binds arguments with --size
        hint = re.sub(r"--arg (\w+)=(\.\.\.|VALUE)", r"--size \1=INT", e.message)
        raise ScheduleError(f"--check cannot run the input in the interpreter: {hint}") from None
    try:
        got = ri.run(after, func, args)  # the last use of the inputs: no copy
    except ri.KtirRuntimeError as e:
        return CheckResult(False, f"the interpreter stopped on the scheduled module: {e.message}", float("inf"))
    worst = 0.0
    for name, want in ref.outputs.items():
        have = got.outputs.get(name)
        if isinstance(want, dict):
            continue  # per-tile scratchpads: a schedule may place data differently
        if have is None:
            return CheckResult(False, f"{name}: the scheduled module has no such output", float("inf"))
        if _identical(want, have):  # e.g. an input neither module writes: equal bits are equal values
            continue
        a, b = np.asarray(want, dtype=np.float64), np.asarray(have, dtype=np.float64)
        if a.shape != b.shape:
            return CheckResult(False, f"{name}: shape {b.shape} differs from {a.shape}", float("inf"))
        err = float(np.max(np.abs(a - b))) if a.size else 0.0
        worst = max(worst, err)
        r, t = _tolerance(np.asarray(want).dtype, a, rtol, atol)
        if not np.allclose(b, a, rtol=r, atol=t, equal_nan=True):
            bad = int(np.argmax(np.abs(a - b) - r * np.abs(a)))
            where = tuple(int(i) for i in np.unravel_index(bad, a.shape))
            count = int(np.count_nonzero(~np.isclose(b, a, rtol=r, atol=t, equal_nan=True)))
            return CheckResult(False, f"{name}: {count} of {a.size} elements differ; element {list(where)} is "
                               f"{float(b.flat[bad])!r}, expected {float(a.flat[bad])!r}", worst)
    return CheckResult(True, f"outputs match (max abs error {worst:.3g})", worst)


def _tolerance(dtype: np.dtype[Any], want: np.ndarray, rtol: float, atol: float) -> tuple[float, float]:
    """(rtol, atol) for one output of type `dtype` whose expected values (as float64) are `want`."""
    if dtype.kind in "iub":
        return 0.0, 0.0
    import ml_dtypes

    eps = float(ml_dtypes.finfo(dtype).eps)
    finite = np.abs(want[np.isfinite(want)])
    scale = float(finite.max()) if finite.size else 1.0
    return max(rtol, 2 * eps), atol * min(1.0, scale)


def _identical(want: Any, have: Any) -> bool:
    """Both are arrays of one type and shape with the same bytes (then every comparison below would
    pass with an error of 0; a weight of 4096 x 14336 took seconds to compare as float64)."""
    if not isinstance(want, np.ndarray) or not isinstance(have, np.ndarray):
        return False
    if want.dtype != have.dtype or want.shape != have.shape or want.dtype.hasobject:
        return False
    return bool(np.array_equal(np.ascontiguousarray(want).view(np.uint8), np.ascontiguousarray(have).view(np.uint8)))


def _copy(v: Any) -> Any:
    return v.copy() if isinstance(v, np.ndarray) else v
