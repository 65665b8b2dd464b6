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
    try:
        with torch.no_grad():
            ep = torch.export.export(module, example_inputs)
    finally:
        module.train(training)  # the caller's module is left as it was
    return decompose(ep)


def decompose(ep: Any) -> Any:
    return ep.run_decompositions(decomposition_table())
