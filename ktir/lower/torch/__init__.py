"""PyTorch -> KTIR: `from_torch(module, example_inputs)` lowers a module through torch.export.

    from ktir.lower.torch import from_torch
    program = from_torch(model, (x,), runner=reference_interp.run)
    print(program.text)              # the KTIR module: one kernel per op or fused chain
    program.manifest.kernels         # kernels in order, with the buffers they read and write
    y = program.run(x)               # every kernel in the reference interpreter -> numpy

Needs the `torch` extra. See docs/guides/lower-from-pytorch.md.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ktir.lazy import lazy_exports

if TYPE_CHECKING:
    from ktir.lower.torch.errors import TorchLoweringError
    from ktir.lower.torch.manifest import Manifest
    from ktir.lower.torch.program import KernelRunner, Program, ProgramError

# loaded on first use (ktir.lazy): importing a submodule such as the CLI's stays cheap
__getattr__ = lazy_exports(
    __name__,
    {
        "TorchLoweringError": "ktir.lower.torch.errors",
        "Manifest": "ktir.lower.torch.manifest",
        "KernelRunner": "ktir.lower.torch.program",
        "Program": "ktir.lower.torch.program",
        "ProgramError": "ktir.lower.torch.program",
    },
)


def from_torch(
    module: Any, example_inputs: Any, *, target: str = "spyre", verify: bool = True, name: str | None = None,
    runner: KernelRunner | None = None, scheduler: str | None = "exact", schedule_budget: float = 0.5,
) -> Program:
    """Lower `module` (an nn.Module) traced on `example_inputs` (a tuple) to a KTIR program;
    `runner` (e.g. `reference_interp.run`) is what `program.run` executes its kernels with.
    Every kernel is then scheduled for `target` with `scheduler` (None: kept as lowered), each
    schedule kept only when the scheduler's check passes and it fits the target's scratchpad
    (scheduling.py); `program.schedules` says what happened to each kernel."""
    from ktir.lower.torch.export import export

    start = time.perf_counter()
    ep = export(module, tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,))
    exported = time.perf_counter()
    program = from_exported(ep, target=target, verify=verify, name=name or type(module).__name__, runner=runner)
    program.timings = {"export": exported - start, **program.timings}
    if scheduler is not None:
        _schedule(program, target, scheduler, schedule_budget)
    return program


def _schedule(program: Program, target: str, scheduler: str, budget: float) -> None:
    from ktir.lower.torch.scheduling import GROUP, KernelSchedule, kernel_scheduler, schedule_program

    start = time.perf_counter()
    fn = kernel_scheduler()
    if fn is None:
        why = f"no kernel scheduler is installed (entry-point group {GROUP}; reinstall ktir: `pip install -e .`)"
        program.schedules = [KernelSchedule(k, False, why) for k in program.kernel_names]
        return
    program.schedules = schedule_program(program, target, scheduler, budget, fn)
    program.timings = {**program.timings, "schedule": time.perf_counter() - start}


def from_exported(
    ep: Any, *, target: str = "spyre", verify: bool = True, name: str = "program", decomposed: bool = True,
    runner: KernelRunner | None = None,
) -> Program:
    """Lower an ExportedProgram (already decomposed unless `decomposed=False`); `runner` as for from_torch."""
    from ktir.lower.torch.emit import emit_program
    from ktir.lower.torch.export import decompose

    start = time.perf_counter()
    if not decomposed:
        ep = decompose(ep)
    decomposing = time.perf_counter() - start
    program = emit_program(ep, target=target, verify=verify, name=name)
    program.runner = runner
    if not decomposed:
        program.timings = {"decompose": decomposing, **program.timings}
    return program


__all__ = ["KernelRunner", "Manifest", "Program", "ProgramError", "TorchLoweringError", "from_exported", "from_torch"]
