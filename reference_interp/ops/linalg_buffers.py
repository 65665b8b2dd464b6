"""`linalg` ops in buffer form: memref operands, outputs written in place, no results.

spec/ops/linalg.md: "Ops on memrefs (buffer form) parse, write their outputs in place and
return nothing". Each op runs as its tensor form does: every memref input (and every output
the op reads: an accumulator, a body that uses its output argument) is read whole, the
tensor implementation computes one value per output, and each value is written over its
output memref. Reads and writes go through the memory checks (bounds, initialisation,
races) and the statistics, as `memref.load` / `memref.store` do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ktir.dialects.access import named
from ktir.ir import types as ty
from ktir.ir.operation import Operation

from ..access import gather, scatter
from ..compiler import BUFFER_FORM, SHAPE_ONLY, FuncCompiler, OpFn
from ..errors import CompileError, fail
from ..memory import DistributedView, MemoryView


def compile_buffer_form(c: FuncCompiler, op: Operation, factory: Any) -> OpFn | None:
    """Compile `op` through `factory`, the op's tensor-form implementation, when it is in
    buffer form; None when it is not."""
    if op.result_types or not any(isinstance(c.type(t), ty.MemRefType) for t in op.operand_types):
        return None
    *_, outs_group = (o.name for o in named(op).opdef.operands)
    outs = list(named(op).operand_positions(outs_group))
    types = [c.type(t) for t in op.operand_types]
    if not outs or not all(isinstance(types[p], ty.MemRefType) for p in outs):
        raise CompileError(f"{op.name}: mixed buffer and tensor outputs are not executed", op)
    as_tensor = [ty.TensorType(shape=t.shape, element_type=t.element_type) if isinstance(t, ty.MemRefType) else t
                 for t in types]
    tensor_op = op.model_copy(update={"operand_types": as_tensor, "results": [],
                                      "result_types": [as_tensor[p] for p in outs]})
    run_tensor = factory(c, tensor_op)
    results = c.result_slots(tensor_op)
    slots = c.operand_slots(op)
    shape_only = SHAPE_ONLY.get(op.name, lambda _op: set())(op) & set(outs)
    buffers = sorted({slots[p] for p, t in enumerate(types) if isinstance(t, ty.MemRefType)})
    # a buffer is read unless every position it fills is an output used only for its shape
    read = {s: any(slots[p] == s and p not in shape_only for p in range(len(types))) for s in buffers}
    out_slots = [slots[p] for p in outs]
    name = op.name

    def run(fr: list[Any]) -> None:
        views = {s: fr[s] for s in buffers}
        try:
            for s, view in views.items():
                coords, shape = _whole(view)
                fr[s] = gather(fr[0], view, coords, name) if read[s] else np.zeros(shape, view.dtype)
            run_tensor(fr)
            for s, r in zip(out_slots, results, strict=True):
                view = views[s]
                coords, _ = _whole(view)
                scatter(fr[0], view, coords, np.asarray(fr[r]).astype(view.dtype, copy=False), name)
        finally:
            for s, view in views.items():
                fr[s] = view

    return run


def _whole(view: Any) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """Open-grid coordinates of every element of a memref value, and its shape."""
    if isinstance(view, MemoryView):
        origin, shape = view.origin, view.sizes
    elif isinstance(view, DistributedView):
        origin, shape = (0,) * view.rank, view.shape
    else:
        raise fail("type", f"expected a memref view, found {type(view).__name__}")
    rank = len(shape)
    coords = [(o + np.arange(n, dtype=np.int64)).reshape([n if d == k else 1 for k in range(rank)])
              for d, (o, n) in enumerate(zip(origin, shape, strict=True))]
    return coords, tuple(shape)


BUFFER_FORM.append(compile_buffer_form)
