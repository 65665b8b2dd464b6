"""How much of a tile's scratchpad a kernel needs, read statically from its KTIR.

The rule (the one the cost model's `ScratchpadUse.peak_bytes` applies to a run's trace):
a tile's `ct_local` scratchpad holds

- its scratchpad buffers (`ct_local` memory views and allocations of its own tile) for the
  whole kernel, up to the highest byte they reach, and
- every tensor value an op computes, from that op until the last op that uses it has run: a
  loaded tile, a `linalg.fill`, each linalg result, a copy or pad, a loop's carried
  accumulator. At an op, its operands and its results are live together. A value made
  before a loop and used inside it stays live until the loop ends (the next iteration reads
  it again); a value made inside a loop body lives within its iteration. Ops of cost class
  `free` compute nothing and hold nothing: a `tensor.empty` is only a shape (the op that
  fills it makes the value), and a reshape (`tensor.collapse_shape`) is its operand under
  another shape, so a use of it is a use of its operand. So are ops on scalars and indices
  (a row count extracted from a loaded tensor keeps that tensor live while it is used).

The peak is the largest sum over the ops of the kernel in program order; it must not exceed
the target's capacity (`ktir.targets.scratchpad_bytes`). `prefetch_bytes` is what one more
iteration of a loop loads (the largest total of `ktdp.load` results in one loop body): the
second buffer of a double-buffered stream, the headroom the lowering leaves when it chooses
its blocks (`peak_bytes + prefetch_bytes <= capacity`).

The cost model's timeline counts the same values, but in simulated time: a transfer the
program issued ahead of compute occupies memory from when it starts, so its peak can exceed
this sequential one by the transfers in flight.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ktir.dialects.cost import CostClass
from ktir.dialects.names import Arith, Ktdp, Memref, Scf
from ktir.dialects.registry import cost_class
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.ir.operation import Module, Operation

LOOPS = frozenset({Scf.for_, Scf.while_, Scf.parallel, Scf.forall})
# ops whose results exist once their regions have run (other ops with regions, such as
# linalg.generic, make their result while their operands are still held)
CONTROL = LOOPS | {Scf.if_, Scf.execute_region, "scf.index_switch"}


@dataclass(frozen=True)
class LiveValue:
    name: str
    type: str  # e.g. tensor<4096x448xf16>
    nbytes: int


@dataclass(frozen=True)
class Footprint:
    """A kernel's scratchpad need per tile."""

    peak_bytes: int  # resident buffers plus the live tensor values at the worst op
    resident_bytes: int  # ct_local buffers (held for the whole kernel)
    prefetch_bytes: int  # loads of one loop iteration (what double buffering adds)
    at_op: str  # the op at the peak (name, result) and its line when known
    live: tuple[LiveValue, ...] = field(default=())  # the values live there, largest first

    def fits(self, capacity: int, headroom: bool = False) -> bool:
        return self.peak_bytes + (self.prefetch_bytes if headroom else 0) <= capacity

    def describe(self, limit: int = 3) -> str:
        """The largest live values at the peak, for an error message."""
        parts = [f"{v.name}: {v.type} ({_mb(v.nbytes)})" for v in self.live[:limit]]
        more = len(self.live) - limit
        if more > 0:
            parts.append(f"{more} more")
        if self.resident_bytes:
            parts.insert(0, f"ct_local buffers {_mb(self.resident_bytes)}")
        return "; ".join(parts)


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 10_000 else f"{n} B"


class _Walk:
    def __init__(self, aliases: Mapping[str, Type]) -> None:
        self.aliases = aliases
        self.pos = 0
        self.ops: list[Operation] = []  # by position (a region op also takes an end position)
        self.defs: dict[str, tuple[int, int, Type]] = {}  # value -> (position, loop depth id, type)
        self.uses: dict[str, list[tuple[int, tuple[int, ...]]]] = {}  # value -> (position, enclosing loops)
        self.loop_end: dict[int, int] = {}  # loop start position -> its end position
        self.loads: dict[int, int] = {}  # loop start -> bytes loaded by one iteration (its own body only)
        self.constants: dict[str, int] = {}
        self.resident = 0
        self.same: dict[str, list[str]] = {}  # the result of a free op -> the tensors it is made of

    def _underlying(self, names: list[str]) -> list[str]:
        out: list[str] = []
        for name in names:
            out.extend(self.same.get(name, [name]))
        return out

    def _tensors(self, op: Operation) -> bool:
        return any(isinstance(self.type(t), ty.TensorType) for t in [*op.operand_types, *op.result_types])

    def type(self, t: Type) -> Type:
        return ty.unaliased(t, self.aliases)

    def block(self, ops: list[Operation], loops: tuple[int, ...]) -> None:
        for op in ops:
            self.op(op, loops)

    def op(self, op: Operation, loops: tuple[int, ...]) -> None:
        start = self.pos
        self.pos += 1
        self.ops.append(op)
        for name in self._underlying(op.operands):
            self.uses.setdefault(name, []).append((start, loops))
        if op.name == Arith.constant and op.results:
            value = op.attributes.get("value")
            if isinstance(value, at.IntegerAttr):
                self.constants[op.results[0]] = int(value.value)
        if op.name in (Ktdp.construct_memory_view, Memref.alloc, Memref.alloca):
            self.resident = max(self.resident, self._local_extent(op))
        if not op.regions and (cost_class(op.name) is CostClass.FREE or not self._tensors(op)):
            made_of = self._underlying(op.operands)
            for name in op.results:
                self.same[name] = made_of
            return
        if op.name == Ktdp.load and loops:
            self.loads[loops[-1]] = self.loads.get(loops[-1], 0) + sum(self.nbytes(t) for t in op.result_types)
        if not op.regions or op.name not in CONTROL:
            for name, t in zip(op.results, op.result_types, strict=False):
                self.defs[name] = (start, len(loops), t)
        if not op.regions:
            return
        inner = (*loops, start) if op.name in LOOPS else loops
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    self.defs[arg.name] = (start, len(inner), arg.type)
                self.block(block.operations, inner)
        end = self.pos
        self.pos += 1
        self.ops.append(op)
        if op.name in LOOPS:
            self.loop_end[start] = end
        if op.name in CONTROL:
            for name, t in zip(op.results, op.result_types, strict=False):
                self.defs[name] = (end, len(loops), t)

    def nbytes(self, t: Type) -> int:
        t = self.type(t)
        if not isinstance(t, ty.TensorType) or any(d is None for d in t.shape):
            return 0
        return -(-math.prod(int(d) for d in t.shape if d is not None) * ty.storage_bits(ty.element_type(t)) // 8)

    def _local_extent(self, op: Operation) -> int:
        """Bytes [0, end) of this tile's scratchpad an allocation or ct_local view reaches."""
        t = self.type(op.result_types[0]) if op.result_types else None
        if not isinstance(t, ty.MemRefType):
            return 0
        space = op.attributes.get("memory_space", t.memory_space)
        if not isinstance(space, at.MemorySpaceAttr) or space.kind != "ct_local" or space.ct_id is not None:
            return 0
        if any(d is None for d in t.shape):
            return 0
        width = ty.storage_bits(t.element_type)
        if op.name != Ktdp.construct_memory_view:
            return -(-math.prod(int(d) for d in t.shape if d is not None) * width // 8)
        strides = op.attributes.get("static_strides")
        values = [int(v) for v in getattr(strides, "values", ())] or [1] * len(t.shape)
        span = 1 + sum((int(n) - 1) * abs(s) for n, s in zip(t.shape, values, strict=False) if n is not None)
        base = self.constants.get(op.operands[0], 0) if op.operands else 0
        return -(-(base + span) * width // 8)


def footprint(fn: Operation, aliases: Mapping[str, Type] | None = None) -> Footprint:
    """The scratchpad need of kernel `fn` (a func.func) per tile; `aliases`: the module's type aliases."""
    walk = _Walk(aliases or {})
    walk.block(fn.regions[0].blocks[0].operations, ())
    delta = [0] * (walk.pos + 1)
    intervals: list[tuple[int, int, str, Type, int]] = []
    for name, (start, _, t) in walk.defs.items():
        nbytes = walk.nbytes(t)
        if not nbytes:
            continue
        last = start
        for pos, loops in walk.uses.get(name, ()):
            # used inside a loop the value was made outside of: live until that loop ends
            outer = next((lp for lp in loops if lp > start), None)
            last = max(last, walk.loop_end[outer] if outer is not None else pos)
        intervals.append((start, last, name, t, nbytes))
        delta[start] += nbytes
        delta[last + 1] -= nbytes
    peak, at_pos, live = 0, 0, 0
    for pos in range(walk.pos):
        live += delta[pos]
        if live > peak:
            peak, at_pos = live, pos
    values = sorted((LiveValue(n, _type_text(walk.type(t)), b) for s, e, n, t, b in intervals if s <= at_pos <= e),
                    key=lambda v: -v.nbytes)
    return Footprint(peak + walk.resident, walk.resident, max(walk.loads.values(), default=0),
                     _op_text(walk.ops[at_pos]) if walk.ops else "", tuple(values))


def _type_text(t: Type) -> str:
    if isinstance(t, ty.TensorType):
        e = t.element_type
        et = e.kind if isinstance(e, ty.FloatType) else f"i{e.width}" if isinstance(e, ty.IntegerType) else "index"
        return f"tensor<{'x'.join(str(d) for d in t.shape)}x{et}>"
    return type(t).__name__


def _op_text(op: Operation) -> str:
    where = f" (line {op.loc.line})" if op.loc is not None else ""
    result = f"{op.results[0]} = " if op.results else ""
    return f"{result}{op.name}{where}"


def module_footprints(module: Module) -> dict[str, Footprint]:
    """Every function's footprint, by name."""
    out = {}
    for fn in module.functions():
        sym = fn.attributes.get("sym_name")
        out[str(getattr(sym, "value", ""))] = footprint(fn, module.type_aliases)
    return out


class DoesNotFit(Exception):
    """A kernel whose tile needs more scratchpad than the target has (one-line message)."""


def check(name: str, fp: Footprint, capacity: int, target: str) -> None:
    """Raise DoesNotFit when `fp` exceeds `capacity` bytes."""
    if fp.peak_bytes > capacity:
        raise DoesNotFit(f"kernel {name} does not fit the {capacity}-byte scratchpad of a {target} tile: it needs "
                         f"{fp.peak_bytes} bytes at {fp.at_op}: {fp.describe()}")
