"""Tile schedulers for KTIR: the plugin API, the shared passes and the built-in schedulers.

    >>> import ktir, schedulers
    >>> from ktir.targets import load_target
    >>> m = ktir.parse(open("examples/softmax.ktir").read(), "softmax.ktir")
    >>> r = schedulers.schedule(m, load_target("spyre"), "exact", schedulers.ScheduleOptions(sizes={"R": 1024}))
    >>> r.report.kernel_class, r.report.applied
    ('rowwise', True)

- `api`: the `Scheduler` protocol, `ScheduleOptions`, `ScheduleResult`, errors.
- `registry`: discovery through the entry-point group `ktir.schedulers`.
- `kernels`: recognising kernel classes (matmul, row loops) and their sizes.
- `cost`, `spaces`: the analytic cost model, the roofline bound and the schedule spaces.
- `emit_matmul`, `emit_shared`, `rowloop`: the matmul and row-loop rewrites (work division,
  tiling, placement, double buffering); `emit_attention`: flash-style attention over
  (batch x heads x query blocks), with an optional KV split; `emit_splitk`: K split over
  tiles with an inter-tile reduce; `footprint`: what a matmul kernel provably computes.
- `builtin`: `baseline`, `exact`, `search`; `check`: input/output equivalence in the interpreter
  (`ScheduleOptions(check=True)` raises `CheckFailed` when they differ).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ktir.lazy import lazy_exports

if TYPE_CHECKING:
    from ktir.ir.operation import Module
    from ktir.targets.schema import Target

    from .api import NoLegalSchedule, ScheduleError, ScheduleOptions, Scheduler, ScheduleResult
    from .api import scheduler_ops as scheduler_ops
    from .check import CheckFailed, CheckResult, check_schedule
    from .registry import GROUP, SchedulerClash, discover
    from .report import Placement, Schedule, ScheduleReport

# loaded on first use (ktir.lazy): importing a submodule such as the CLI's stays cheap
__getattr__ = lazy_exports(
    __name__,
    {
        "NoLegalSchedule": "schedulers.api",
        "ScheduleError": "schedulers.api",
        "ScheduleOptions": "schedulers.api",
        "Scheduler": "schedulers.api",
        "ScheduleResult": "schedulers.api",
        "scheduler_ops": "schedulers.api",
        "CheckFailed": "schedulers.check",
        "CheckResult": "schedulers.check",
        "check_schedule": "schedulers.check",
        "GROUP": "schedulers.registry",
        "SchedulerClash": "schedulers.registry",
        "discover": "schedulers.registry",
        "Placement": "schedulers.report",
        "Schedule": "schedulers.report",
        "ScheduleReport": "schedulers.report",
    },
)


def schedule(module: Module, target: Target, scheduler: str = "exact", options: ScheduleOptions | None = None) -> ScheduleResult:
    """Schedule `module` for `target` with the named scheduler.

    With `options.check` the result is run against the input in the reference interpreter
    and `CheckFailed` is raised when they differ (the verdict is in `result.check`). Results
    of the built-in schedulers are cached (`schedulers.cache`: a second call is instant)."""
    import time

    from . import cache
    from .api import ScheduleOptions
    from .registry import builtin_schedulers, get

    start = time.perf_counter()
    opts = options or ScheduleOptions()
    chosen = get(scheduler)
    cacheable = builtin_schedulers().get(scheduler) is not None and type(chosen) is type(builtin_schedulers()[scheduler])
    key = cache.key(module, target, scheduler, opts) if cacheable else None
    result = cache.load(key) if key is not None else None
    if result is not None:
        result.report.notes.append(f"from the schedule cache ({cache.cache_dir()}); first scheduled in "
                                   f"{result.report.schedule_seconds:.3f} s")
        result.report.schedule_seconds = time.perf_counter() - start
    else:
        result = proven(module, chosen.schedule(module, target, opts), opts)
        if key is not None:
            cache.store(key, result)
    if opts.check:  # the interpreter is imported only when asked for
        from .check import check_schedule

        check_schedule(module, result, opts)
    return result


def proven(module: Module, result: ScheduleResult, options: ScheduleOptions) -> ScheduleResult:
    """`result` if its rewrite is proven legal (`schedulers.proof`), else the input unchanged with the reason.

    Every scheduler's output goes through the same proof, a plugin's as well as a built-in's:
    a schedule that races or loses an output element is never returned."""
    from .api import ScheduleResult
    from .proof import prove

    report = result.report
    if not report.applied:
        return result
    why = malformed(result.module, module) or prove(module, result.module, options.sizes, options.func)
    if why is None:
        report.notes.append("legality proven exactly (isl): each output element is written by one tile, no tile "
                            "reads what another writes, and the input's outputs are all written")
        return result
    report.applied = False
    report.reason = f"the schedule could not be proven legal, so the input is returned unchanged: {why}"
    return ScheduleResult(module, report)


def malformed(module: Module, given: Module | None = None) -> str | None:
    """The first error of the verifier on a rewritten module (a value used before it is defined,
    a type that does not match) that the module it was rewritten from (`given`) does not have:
    the proof reads the module's memory effects, which mean nothing in a module that does not
    verify. (The schedulers do not verify their input: its own errors are not the rewrite's.)"""
    from ktir.verify import verify

    errors = [d for d in verify(module) if d.severity == "error"]
    if errors and given is not None:
        known = {(d.id, d.message) for d in verify(given) if d.severity == "error"}
        errors = [d for d in errors if (d.id, d.message) not in known]
    if not errors:
        return None
    where = f" (line {errors[0].line})" if errors[0].line else ""
    return f"the rewritten module does not verify{where}: {errors[0].message} [{errors[0].id}]"


def supported_ops() -> Mapping[str, Iterable[str]]:
    """Built-in scheduler name -> the op names it accepts (read by the docs' status table).

    Plugins installed beside KTIR are left out: the site documents this project, and must
    not change with what else happens to be installed where it is built."""
    from .api import scheduler_ops
    from .registry import builtin_schedulers

    return {name: scheduler_ops(s) for name, s in builtin_schedulers().items()}


__all__ = [
    "GROUP",
    "CheckFailed",
    "CheckResult",
    "NoLegalSchedule",
    "Placement",
    "Schedule",
    "ScheduleError",
    "ScheduleOptions",
    "ScheduleReport",
    "ScheduleResult",
    "Scheduler",
    "SchedulerClash",
    "check_schedule",
    "discover",
    "schedule",
    "supported_ops",
]
