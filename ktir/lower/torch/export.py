"""torch.export and the decomposition table: core ATen, but linear, silu, gelu and
scaled_dot_product_attention stay whole (each maps to one KTIR kernel or scalar op)."""

from __future__ import annotations

import importlib
from typing import Any

# imported through importlib so that type-checking ktir does not walk all of torch
torch: Any = importlib.import_module("torch")

KEEP_WHOLE = ("linear", "silu", "gelu", "scaled_dot_product_attention")


def decomposition_table() -> dict[Any, Any]:
    """torch.export's default (core ATen) table without the ops KTIR keeps whole."""
    table = dict(torch.export.default_decompositions())
    aten = torch.ops.aten
    for name in KEEP_WHOLE:
        packet = getattr(aten, name)
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    return table


def export(module: Any, example_inputs: tuple[Any, ...]) -> Any:
    """torch.export.export then the decompositions: an ExportedProgram in (nearly) core ATen."""
    if not isinstance(example_inputs, tuple):
        example_inputs = tuple(example_inputs)
    training = module.training
    module.eval()  # inference semantics (dropout off, norms use running statistics)
    restore = _traceable_experts(module)
    try:
        with torch.no_grad():
            ep = torch.export.export(module, example_inputs)
    finally:
        restore()
        module.train(training)  # the caller's module is left as it was
    return decompose(ep)


def _traceable_experts(module: Any) -> Any:
    """Hugging Face mixture-of-experts layers pick their forward by `config._experts_implementation`:
    "grouped_mm" (the default: sort, histogram, an opaque grouped matmul over data-dependent group
    sizes) and "eager" (a Python loop over the experts hit) do not export to a static graph.
    "batched_mm" computes the same function as a gather of each token's expert weights and a
    batched matmul, which lowers; use it for the export and return the undo."""
    configs: dict[int, tuple[Any, Any]] = {}
    for sub in module.modules():
        config: Any = getattr(sub, "config", None)
        # the experts modules transformers' @use_experts_implementation decorates
        experts = hasattr(sub, "_is_expert_parallel") and hasattr(config, "_experts_implementation_internal")
        if experts and config._experts_implementation_internal in (None, "eager", "grouped_mm"):
            configs[id(config)] = (config, config._experts_implementation_internal)
    for config, _ in configs.values():
        config._experts_implementation_internal = "batched_mm"

    def restore() -> None:
        for config, before in configs.values():
            config._experts_implementation_internal = before

    return restore


def decompose(ep: Any) -> Any:
    return ep.run_decompositions(decomposition_table())
