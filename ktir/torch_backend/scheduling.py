"""One kernel of a lowered program scheduled for a target, with the scheduler's check.

Registered as `default` in the entry-point group `ktir.kernel_schedulers`, which
`ktir.lower.torch.from_torch` reads (it may not import the schedulers itself); the backend
calls it directly. See ktir/lower/torch/scheduling.py for what is kept.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=8)
def _target(name: str) -> Any:
    from ktir.targets import load_target

    return load_target(name)


def schedule_kernel(module: Any, target: str, func: str, scheduler: str, budget: float) -> tuple[str | None, str]:
    """(the scheduled module's KTIR text, "") or (None, the reason it stays as lowered)."""
    import schedulers
    from ktir.syntax.printer import print_module

    opts = schedulers.ScheduleOptions(func=func, check=True, time_budget=budget)
    try:
        result = schedulers.schedule(module, _target(target), scheduler, opts)
    except schedulers.ScheduleError as e:  # declined, or its check failed: the kernel stays as lowered
        return None, _first_line(e)
    except Exception as e:  # noqa: BLE001 - e.g. the check's run on random inputs stopped: no verdict, no schedule
        return None, f"{type(e).__name__}: {_first_line(e)}"
    if not result.report.applied:
        return None, result.report.reason or "the scheduler left it unchanged"
    return print_module(result.module), ""


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0]
