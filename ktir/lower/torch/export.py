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
    """Hugging Face mixture-of-experts models default to `experts_implementation="grouped_mm"`,
    whose sort / histogram / opaque grouped-matmul graph has data-dependent group sizes.
    `"batched_mm"` computes the same function as a gather of each token's expert weights and
    a batched matmul, which lowers; switch to it for the export and return the undo."""
    switched = []
    for sub in module.modules():
        config = getattr(sub, "config", None)
        if hasattr(sub, "set_experts_implementation") and getattr(config, "_experts_implementation", None) == "grouped_mm":
            switched.append((sub, sub.get_experts_implementation()))
    for sub, _ in switched:
        sub.set_experts_implementation("batched_mm")

    def restore() -> None:
        for sub, before in reversed(switched):
            sub.set_experts_implementation(before)

    return restore


def decompose(ep: Any) -> Any:
    return ep.run_decompositions(decomposition_table())
