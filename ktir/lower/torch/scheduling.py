"""Scheduling a lowered program's kernels for its target (what `from_torch` does by default).

`ktir.lower` imports no scheduler (tests/architecture/test_import_graph.py), so the function
that schedules one kernel is found the way the kernel runner is (runners.py): in the
entry-point group `ktir.kernel_schedulers`, where this distribution registers
`ktir.torch_backend.scheduling:schedule_kernel` as `default`. A schedule is kept only when
the scheduler's own check passed (the kernel and its rewrite run in the interpreter on the
same random inputs and agree, and the rewrite is proven legal) and the rewrite still fits a
tile's scratchpad (fit.py); otherwise the kernel runs as lowered, and the reason is noted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ktir.lower.torch.program import Program

GROUP = "ktir.kernel_schedulers"
DEFAULT = "default"

# schedule_kernel(module, target, func, scheduler, budget) -> (KTIR text of a module defining
# the scheduled @func, "") or (None, why it was not scheduled); it raises nothing for a kernel
# its scheduler declines or whose check fails.
ScheduleKernel = Callable[[Any, str, str, str, float], tuple[str | None, str]]


@dataclass(frozen=True)
class KernelSchedule:
    """What scheduling did to one kernel."""

    name: str
    scheduled: bool
    note: str = ""  # why not, when not


def kernel_scheduler() -> ScheduleKernel | None:
    """The function named by $KTIR_KERNEL_SCHEDULER (default `default`) in `ktir.kernel_schedulers`,
    or None when none is installed or it does not load."""
    name = os.environ.get("KTIR_KERNEL_SCHEDULER") or DEFAULT
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    if name not in found:
        return None
    try:
        fn: ScheduleKernel = found[name].load()
    except Exception:  # noqa: BLE001 - a broken plugin means no scheduling, noted by the caller
        return None
    return fn


def schedule_program(program: Program, target: str, scheduler: str, budget: float,
                     schedule_kernel: ScheduleKernel) -> list[KernelSchedule]:
    """Schedule every kernel of `program` for `target` in place (Program.replace_kernel);
    a rewrite that needs more scratchpad per tile than `target` has is dropped."""
    from ktir.targets import scratchpad_bytes

    capacity = scratchpad_bytes(target)
    out = []
    for name in program.kernel_names:
        text, note = schedule_kernel(program.module, target, name, scheduler, budget)
        if text is None:
            out.append(KernelSchedule(name, False, note))
            continue
        before = program.overrides.get(name)
        program.replace_kernel(name, text, f"{name}.scheduled.ktir")
        need = program.footprints()[name].peak_bytes
        if need > capacity:
            if before is None:
                del program.overrides[name]
            else:
                program.overrides[name] = before
            out.append(KernelSchedule(name, False, f"the schedule needs {need} bytes of scratchpad per tile, more than the "
                                                   f"{capacity} a {target} tile has"))
            continue
        out.append(KernelSchedule(name, True))
    return out
