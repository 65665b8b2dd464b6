"""`#ktdp.memory_space` inside memref types: the attribute's own rule, wherever the type is used.

`construct_memory_view` checks its `memory_space` attribute (C6); this checks the memory
space written in the type of every value, so a function argument typed
`memref<..., #ktdp.memory_space<global, ct_id = 2>>` is rejected too.

The same memory space may be written as a string, `"#ktdp.memory_space<global>"`, the spelling
stock MLIR reads (`ktir fmt --string-memory-spaces`). The parser turns the canonical string
into the attribute; a string that names `#ktdp.memory_space` in any other way (another
spacing, a negative `ct_id`, an unknown kind) is read here and judged by the same rule, so
that no spelling escapes it.
"""

from __future__ import annotations

import re

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Location
from ktir.ir.types import INT64_MAX
from ktir.verify.engine import VALUE_RULES, Verifier

_SPELLED = re.compile(r"\s*#ktdp\.memory_space\s*<\s*([A-Za-z_][\w]*)\s*(?:,\s*ct_id\s*=\s*([+-]?\d+)\s*)?>\s*\Z")


def _spelled_space(v: Verifier, space: at.StringAttr, loc: Location | None) -> at.MemorySpaceAttr | None:
    """The memory space a string spells, or None after reporting why it spells none."""
    if not space.value.lstrip().startswith("#ktdp."):
        return None  # not a KTDP attribute's spelling: another dialect's business
    m = _SPELLED.match(space.value)
    if m is None:
        v.error("type.memory_space", f"the string memory space {space.value!r} is not a #ktdp.memory_space<...>", loc)
        return None
    if m.group(1) not in ("global", "ct_local"):
        v.error("type.memory_space", f"the string memory space {space.value!r} names the unknown memory space "
                f"{m.group(1)!r} (expected global or ct_local)", loc)
        return None
    digits = m.group(2)
    if digits is not None and (len(digits.lstrip("+-").lstrip("0")) > 19 or abs(int(digits)) > INT64_MAX):
        v.error("type.memory_space", f"the string memory space {space.value[:80]!r} has a ct_id that does not fit "
                f"in 64 bits (at most {INT64_MAX})", loc)
        return None
    return at.MemorySpaceAttr(kind=m.group(1), ct_id=int(digits) if digits is not None else None)  # type: ignore[arg-type]


def check_memory_space(v: Verifier, value_type: Type, loc: Location | None) -> None:
    t = v.rtype(value_type)
    if not isinstance(t, ty.MemRefType | ty.UnrankedMemRefType) or t.memory_space is None:
        return
    space: Attribute | None = v.rattr(t.memory_space)
    if isinstance(space, at.StringAttr) and space.type is None:
        space = _spelled_space(v, space, loc)
    if not isinstance(space, at.MemorySpaceAttr) or space.ct_id is None:
        return
    if space.kind != "ct_local":
        v.error("type.memory_space", f"ct_id = {space.ct_id} is given with {space.kind}: only ct_local memory belongs to a tile", loc)
    elif space.ct_id < 0:
        v.error("type.memory_space", f"ct_id must be non-negative, found {space.ct_id}", loc)


VALUE_RULES.append(check_memory_space)
