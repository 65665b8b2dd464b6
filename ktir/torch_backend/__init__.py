"""`torch.compile(model, backend="ktir")`: PyTorch models through KTIR, with no accelerator.

Registered as the TorchDynamo backend `ktir` (entry-point group `torch_dynamo_backends`).
Each graph Dynamo captures is lowered to a KTIR program (ktir.lower.torch), every kernel is
scheduled for the target (checked by the scheduler in the interpreter), and the program runs
in the reference interpreter, returning torch tensors. A graph the lowering cannot express
runs eagerly, with one warning naming the op and why (an error with `strict`).

    compiled = torch.compile(model, backend="ktir", options={"target": "spyre", "dump_dir": "ktir-dump"})
    with torch.no_grad():
        y = compiled(x)
    for report in ktir.torch_backend.reports():
        print(report.to_text())      # kernels, scheduled or not, Spyre timeline estimate per kernel

Options: see BackendOptions (target, scheduler, schedule_budget, dtype, check, strict,
estimate, dump_dir, verbose). Needs the `torch` extra. Guide: docs/guides/torch-compile.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ktir.torch_backend.compiled import BackendError, CompiledGraph
from ktir.torch_backend.options import BackendOptions, OptionsError, parse_options
from ktir.torch_backend.report import GraphReport, KernelReport

_GRAPHS: list[CompiledGraph] = []


def ktir_backend(gm: Any, example_inputs: Sequence[Any], options: dict[str, Any] | None = None,
                 mode: str | None = None) -> CompiledGraph:
    """The Dynamo backend: returns the callable Dynamo runs in place of `gm`."""
    opts = parse_options(options)
    compiled = CompiledGraph(gm, example_inputs, opts, len(_GRAPHS))
    _GRAPHS.append(compiled)
    return compiled


def compiled_graphs() -> list[CompiledGraph]:
    """Every graph this process compiled with the backend, in order (since the last reset())."""
    return list(_GRAPHS)


def reports() -> list[GraphReport]:
    """The report of every compiled graph and signature that has run, in order."""
    return [r for g in _GRAPHS for r in g.reports]


def reset() -> None:
    """Forget the compiled graphs (torch._dynamo.reset() forgets Dynamo's side)."""
    _GRAPHS.clear()


__all__ = ["BackendError", "BackendOptions", "CompiledGraph", "GraphReport", "KernelReport", "OptionsError",
           "compiled_graphs", "ktir_backend", "reports", "reset"]
