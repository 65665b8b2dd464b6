"""`#ktdp.memory_space` inside memref types: the attribute's own rule, wherever the type is used.

`construct_memory_view` checks its `memory_space` attribute (C6); this checks the memory
space written in the type of every value, so a function argument typed
`memref<..., #ktdp.memory_space<global, ct_id = 2>>` is rejected too.
"""

from __future__ import annotations

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.ir.operation import Location
from ktir.verify.engine import VALUE_RULES, Verifier


def check_memory_space(v: Verifier, value_type: Type, loc: Location | None) -> None:
    t = v.rtype(value_type)
    if not isinstance(t, ty.MemRefType | ty.UnrankedMemRefType) or t.memory_space is None:
        return
    space = v.rattr(t.memory_space)
    if not isinstance(space, at.MemorySpaceAttr) or space.ct_id is None:
        return
    if space.kind != "ct_local":
        v.error("type.memory_space", f"ct_id = {space.ct_id} is given with {space.kind}: only ct_local memory belongs to a tile", loc)
    elif space.ct_id < 0:
        v.error("type.memory_space", f"ct_id must be non-negative, found {space.ct_id}", loc)


VALUE_RULES.append(check_memory_space)
