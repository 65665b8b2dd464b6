"""The scheduler plugin API: what a scheduler is given and what it must return.

A scheduler is any object with a `name` and a `schedule(module, target, options)` method
returning a `ScheduleResult`. Schedulers are found through the entry-point group
`ktir.schedulers` (see `schedulers.registry`); the built-in ones are `baseline`, `exact`
and `search`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ktir.ir.operation import Module
from ktir.targets.schema import Target

from .report import ScheduleReport


class ScheduleError(Exception):
    """A kernel the scheduler cannot handle: bad input, or no legal schedule."""


class NoLegalSchedule(ScheduleError):
    """No point of the schedule space fits the target; the message names what does not fit where."""


@dataclass(frozen=True)
class ScheduleOptions:
    """What the caller asks for, beyond the module and the target."""

    # values of index arguments that size tensors (e.g. {"M": 2048}); needed when views have `?` sizes
    sizes: Mapping[str, int] = field(default_factory=dict)
    time_budget: float = 1.5  # seconds a randomized search may spend
    seed: int = 0  # randomized schedulers are deterministic for a given seed
    func: str | None = None  # the function to schedule when the module has several
    # run input and output in the reference interpreter; `schedulers.schedule` raises CheckFailed if they differ
    check: bool = False


@dataclass
class CheckResult:
    """The verdict of `schedulers.check.check_equivalent`: falsy when the outputs differ."""

    ok: bool
    message: str
    max_abs_error: float

    def __bool__(self) -> bool:
        # `if check_equivalent(...):` must mean "the outputs match", not "a result came back"
        return self.ok


@dataclass
class ScheduleResult:
    """The scheduled module (valid KTIR, same signature and results as the input) and its report."""

    module: Module
    report: ScheduleReport
    check: CheckResult | None = None  # the verdict of `schedulers.check.check_schedule`, once run


@runtime_checkable
class Scheduler(Protocol):
    """A tile scheduler. `supported_ops` names the ops it can transform (others pass through)."""

    name: str

    def schedule(self, module: Module, target: Target, options: ScheduleOptions) -> ScheduleResult: ...


def scheduler_ops(scheduler: object) -> Iterable[str]:
    """The op names a scheduler declares it accepts (an optional `supported_ops` attribute)."""
    ops = getattr(scheduler, "supported_ops", ())
    return tuple(ops() if callable(ops) else ops)
