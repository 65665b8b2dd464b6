"""Turn the reference interpreter's event trace into cost-model records.

The interpreter records, per tile and executed op: its name and source line, its position in
program order (`start`, and `end` one past the ops nested in it), bytes read and written
per memory space, result elements and MACs, for inter-tile ops the future instance and
the peer tiles, and the op's identity (`op_id`, its position in the module's pre-order walk).
It does not record which values an op read, so this adapter recovers the dependencies from
the module: it maps each event to its op by identity (so the costs do not depend on source
locations; events without one fall back to (source line, op name)) and follows SSA def-use edges to the most recent execution of each defining op (which is what
a use sees in structured control flow). It also adds memory hazards between accesses whose
memory views may alias (same function argument at the root of their offsets, or unknown).

Event objects are read by attribute (`tile`, `op`, `start`, `end`, `line`, `bytes_read`,
`bytes_written`, `elements`, `macs`, `future`, `peers`, and `op_id` when present), so this module does not import
the interpreter.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ktir.dialects.access import AccessError, named
from ktir.dialects.cost import VECTOR_WORK, CostClass
from ktir.dialects.names import Arith, Func, Ktdp, Memref, Scf, Tensor
from ktir.dialects.registry import OpsOfCost, cost_class
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.ir.operation import Block, Module, Operation

from .records import CT_LOCAL, GLOBAL, KernelTrace, Kind, OpRecord

# Op classes come from each op's cost class in its definition (ktir.dialects.cost), not lists here.
# Ops whose nested events are ops of their own (their regions are control flow).
TRANSPARENT = OpsOfCost(CostClass.CONTROL, also=(Ktdp.inter_tile_produce,))
# Ops that cost nothing: views, index arithmetic, shape changes without data movement.
FREE_WITH_TENSORS = OpsOfCost(CostClass.FREE)
# Ops that copy tensor data inside the tile's local memory.
LOCAL_COPIES = OpsOfCost(CostClass.LOCAL_COPY)
MATMULS = OpsOfCost(CostClass.MATMUL)
TRANSCENDENTAL = OpsOfCost(CostClass.TRANSCENDENTAL)
# Inter-tile ops that deliver partial values (the producer's own cost is its body).
DELIVERY = OpsOfCost(CostClass.COMMUNICATION, but_not=(Ktdp.inter_tile_produce,))
COMBINING = frozenset({Ktdp.inter_tile_reduce, Ktdp.inter_tile_reduce_scatter})
SPLIT_BY_PRODUCER = frozenset({Ktdp.inter_tile_gather, Ktdp.inter_tile_all_to_all})
VIEW_OPS = frozenset({
    Ktdp.construct_access_tile, Ktdp.construct_memory_view, Ktdp.construct_indirect_access_tile,
    Memref.subview, Memref.cast, Memref.reinterpret_cast, "memref.expand_shape", "memref.collapse_shape",
    "memref.view", Arith.index_cast, Arith.index_castui,
})

ValueKey = tuple[int, str]  # (id of the enclosing func.func, SSA name)


@dataclass
class Conversion:
    """The records, plus what the adapter could not map exactly."""

    trace: KernelTrace
    warnings: list[str]


def from_interp(module: Module, result: Any, func: str | None = None, name: str | None = None) -> Conversion:
    """Records for the cost model from an interpreter `RunResult` run with `trace=True`."""
    if getattr(result, "trace", None) is None:
        raise ValueError("the run has no event trace: run the interpreter with trace=True")
    static = _Static(module)
    fn = _choose(module, func)
    warnings: list[str] = []
    records: list[OpRecord] = []
    syncs: dict[Any, str] = {}
    for events in result.trace:
        records.extend(_TileConverter(static, events, syncs, warnings).convert())
    resident = {int(s.tile): int(getattr(s, "scratchpad_peak", 0)) for s in getattr(result, "stats", []) if getattr(s, "scratchpad_peak", 0)}
    kernel = name or _func_name(fn) or "kernel"
    grid = tuple(int(g) for g in result.grid)
    return Conversion(KernelTrace(records, grid=grid, name=kernel, resident_local_bytes=resident), warnings)


def _remote(ev: Any) -> tuple[tuple[int, int], ...]:
    """Bytes the event moved between this tile and other tiles' scratchpads, by peer tile: they
    cross the interconnect (a write to a peer is charged on the route from the peer, the
    same number of links on a ring or mesh)."""
    moved: dict[int, int] = {}
    for table in (getattr(ev, "remote_read", None), getattr(ev, "remote_written", None)):
        for tile, n in (table or {}).items():
            moved[int(tile)] = moved.get(int(tile), 0) + int(n)
    return tuple(sorted((t, n) for t, n in moved.items() if n > 0))


def _choose(module: Module, func: str | None) -> Operation | None:
    if func is not None:
        try:
            return module.function(func)
        except KeyError:
            return None
    bodies = [f for f in module.functions() if f.regions and f.regions[0].blocks]
    return bodies[0] if len(bodies) == 1 else None


def _func_name(fn: Operation | None) -> str | None:
    if fn is None:
        return None
    sym = fn.attributes.get("sym_name")
    value = getattr(sym, "value", None)
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------- static facts


@dataclass(frozen=True)
class _Def:
    kind: str  # "result" or "arg"
    op: Operation  # the defining op, or the op owning the block (func.func for arguments)
    index: int  # result index, or argument index
    region: int = 0  # for "arg": which region of `op`


class _Static:
    """What the adapter needs from the module, computed once."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.by_line: dict[tuple[int, str], list[Operation]] = {}
        self.walked = list(module.walk())  # an event's op_id is its op's index here
        self.fn_of: dict[int, Operation] = {}
        self.defs: dict[ValueKey, _Def] = {}
        self.functions: dict[str, Operation] = {}
        self.calls: dict[str, list[Operation]] = {}
        for fn in module.functions():
            fid = id(fn)
            fname = _func_name(fn)
            if fname is not None:
                self.functions[fname] = fn
            for ri, region in enumerate(fn.regions):
                for block in region.blocks:
                    self._block_args(fid, fn, ri, block)
            for op in fn.walk():
                if op is fn:
                    continue
                self.fn_of[id(op)] = fn
                if op.loc is not None:
                    self.by_line.setdefault((op.loc.line, op.name), []).append(op)
                for i, r in enumerate(op.results):
                    self.defs[(fid, r)] = _Def("result", op, i)
                for ri, region in enumerate(op.regions):
                    for block in region.blocks:
                        self._block_args(fid, op, ri, block)
                if op.name == Func.call:
                    callee = op.attributes.get("callee")
                    if isinstance(callee, at.SymbolRefAttr):
                        self.calls.setdefault(callee.root, []).append(op)
        self._sources: dict[ValueKey, frozenset[ValueKey]] = {}
        self.dynamic: set[ValueKey] = set()  # scf.for results and iteration arguments
        self.position: dict[int, tuple[int, int]] = {}  # op -> (id of the op owning its block, index in it)
        for op in module.walk():
            for region in op.regions:
                for block in region.blocks:
                    for i, inner in enumerate(block.operations):
                        self.position[id(inner)] = (id(op), i)
        self._roots: dict[ValueKey, frozenset[str] | None] = {}
        self._outer: dict[int, list[str]] = {}

    def _block_args(self, fid: int, owner: Operation, region: int, block: Block) -> None:
        for i, arg in enumerate(block.arguments):
            self.defs[(fid, arg.name)] = _Def("arg", owner, i, region)

    def op_for(self, line: int, name: str, op_id: int = -1) -> tuple[Operation | None, bool]:
        """The event's op: by identity when the event carries it, else by (line, name)."""
        if 0 <= op_id < len(self.walked) and self.walked[op_id].name == name:
            return self.walked[op_id], False
        found = self.by_line.get((line, name))
        if not found:
            return None, False
        return found[0], len(found) > 1

    def type(self, t: Type) -> Type:
        return ty.unaliased(t, self.module.type_aliases)

    # SSA: which values a use may see ---------------------------------------------

    def sources(self, key: ValueKey) -> frozenset[ValueKey]:
        """The values that really define `key`, looking through loop-carried and branch results."""
        found = self._sources.get(key)
        if found is None:
            self._sources[key] = frozenset()  # cycle guard (a loop yielding its own argument)
            found = self._resolve(key)
            self._sources[key] = found
        return found

    def _resolve(self, key: ValueKey) -> frozenset[ValueKey]:
        fid, _ = key
        d = self.defs.get(key)
        if d is None:
            return frozenset()
        op = d.op
        out: set[ValueKey] = set()
        if op.name == Scf.for_ and (d.kind == "result" or d.index > 0):
            # loop-carried values: the converter binds them per iteration
            self.dynamic.add(key)
            return frozenset({key})
        if d.kind == "result":
            if op.name in (Scf.if_, Scf.execute_region, "scf.index_switch"):
                for ri in range(len(op.regions)):
                    out |= self._many(fid, _yielded(op, ri, d.index))
            elif op.name == Scf.while_:
                out |= self._many(fid, _yielded(op, 0, d.index + 1))
            elif op.name == Func.call:
                callee = self.functions.get(_callee(op) or "")
                if callee is not None:
                    out |= self._many(id(callee), _yielded(callee, 0, d.index))
            else:
                return frozenset({key})
            return frozenset(out)
        # a block argument
        if op.name == Func.func:
            for call in self.calls.get(_func_name(op) or "", []):
                caller = self.fn_of.get(id(call))
                if caller is not None and d.index < len(call.operands):
                    out |= self.sources((id(caller), call.operands[d.index]))
        elif op.name == Scf.while_:
            if d.region == 0:
                out |= self._many(fid, named(op).operands("inits")[d.index : d.index + 1])
                out |= self._many(fid, _yielded(op, 1, d.index))
            else:
                out |= self._many(fid, _yielded(op, 0, d.index + 1))
        return frozenset(out)

    def _many(self, fid: int, names: Iterable[str]) -> set[ValueKey]:
        out: set[ValueKey] = set()
        for n in names:
            out |= self.sources((fid, n))
        return out

    # memory: which buffer an access may touch -------------------------------------

    def roots(self, key: ValueKey) -> frozenset[str] | None:
        """Function arguments at the root of a view's address; None when unknown."""
        if key in self._roots:
            return self._roots[key]
        self._roots[key] = None
        found = self._find_roots(key)
        self._roots[key] = found
        return found

    def _find_roots(self, key: ValueKey) -> frozenset[str] | None:
        fid, name = key
        d = self.defs.get(key)
        if d is None:
            return None
        if d.kind == "arg":
            if d.op.name == Func.func:
                return frozenset({f"{_func_name(d.op)}:{name}"})
            return None
        op = d.op
        if op.name in (Memref.alloc, Memref.alloca):
            return frozenset({f"alloc:{id(op)}"})
        if op.name in VIEW_OPS and op.operands:
            return self.roots((fid, op.operands[0]))
        if op.name == Ktdp.construct_distributed_memory_view:
            return self._union(fid, op.operands)
        if op.name == Arith.addi:
            found = [self.roots((fid, o)) for o in op.operands]
            known = [f for f in found if f]
            return frozenset().union(*known) if known else None
        if op.name == Arith.subi and op.operands:
            return self.roots((fid, named(op).operand("lhs")))
        return None

    def _union(self, fid: int, names: Sequence[str]) -> frozenset[str] | None:
        out: set[str] = set()
        for n in names:
            r = self.roots((fid, n))
            if r is None:
                return None
            out |= r
        return frozenset(out)

    def outer_uses(self, op: Operation) -> list[str]:
        """Values used inside `op`'s regions but defined outside them."""
        found = self._outer.get(id(op))
        if found is not None:
            return found
        inner: set[str] = set()
        used: list[str] = []
        for nested in op.walk():
            if nested is not op:
                used.extend(nested.operands)
                inner.update(nested.results)
            for region in nested.regions:
                for block in region.blocks:
                    inner.update(a.name for a in block.arguments)
        found = [u for u in dict.fromkeys(used) if u not in inner]
        self._outer[id(op)] = found
        return found


@dataclass
class _Loop:
    """An scf.for being executed: where its event ends, the last body position seen."""

    op: Operation
    fid: int
    end: int
    last: int = -1
    iterations: int = 0


def _body_args(op: Operation) -> list[str]:
    """The iteration arguments of an scf.for body (after the induction variable)."""
    if not op.regions or not op.regions[0].blocks:
        return []
    return [a.name for a in op.regions[0].blocks[0].arguments[1:]]


def _yielded(op: Operation, region: int, index: int) -> list[str]:
    """Operand `index` of the terminator of `op`'s region (yield, condition, return)."""
    if region >= len(op.regions) or not op.regions[region].blocks:
        return []
    ops = op.regions[region].blocks[-1].operations
    if not ops:
        return []
    term = ops[-1]
    return term.operands[index : index + 1]


def _callee(op: Operation) -> str | None:
    callee = op.attributes.get("callee")
    return callee.root if isinstance(callee, at.SymbolRefAttr) else None


# ---------------------------------------------------------------------- per tile


# `reference_interp.trace.TraceEvent.span`: (memory, first byte, one past the last byte,
# (address of coordinate 0, byte strides, first coordinates, extents) of the access tile's box)
Span = tuple[str, int, int, tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]


def _overlap(a: Span | None, b: Span | None) -> bool:
    """Whether two accesses may touch a common byte (unknown spans always may). Boxes in views of
    the same origin and byte strides that share no coordinate along some dimension are disjoint
    even when their byte ranges interleave (the two column halves of a row-major block)."""
    if a is None or b is None:
        return True
    if a[0] != b[0] or a[2] <= b[1] or b[2] <= a[1]:
        return False
    (oa, sa, la, ea), (ob, sb, lb, eb) = a[3], b[3]
    if oa == ob and sa == sb and len(la) == len(lb):
        return all(x < y + m and y < x + n for x, n, y, m in zip(la, ea, lb, eb, strict=True))
    return True


def _within(a: Span | None, b: Span | None) -> bool:
    """Whether every byte access `a` may touch lies in span `b`'s byte range (so ordering after `b`
    implies ordering after `a`): only when `b` covers a whole byte range, i.e. its box is dense."""
    if b is None:
        return True
    if a is None or a[0] != b[0] or not (b[1] <= a[1] and a[2] <= b[2]):
        return False
    return _dense(b)


def _global_box(ev: Any, op: Operation | None, rd: dict[str, int], wr: dict[str, int]) -> tuple[int, int, tuple[tuple[int, int], ...]] | None:
    """`OpRecord.global_box` of a load or store of global memory: its box as (lowest byte address,
    element bytes, ((byte stride, extent), ...)), when the box is exactly the bytes the access moved
    (not for a masked tile, whose box is a superset); None otherwise."""
    span: Span | None = getattr(ev, "span", None)
    if op is None or op.name not in (Ktdp.load, Ktdp.store) or span is None or span[0] != GLOBAL:
        return None
    moved = rd.get(GLOBAL, 0) + wr.get(GLOBAL, 0)
    if (GLOBAL in rd) == (GLOBAL in wr) or moved <= 0:
        return None
    origin, strides, lo, ext = span[3]
    last = origin + sum(max(a * s, (a + n - 1) * s) for s, a, n in zip(strides, lo, ext, strict=True))
    itemsize = span[2] - last
    if itemsize <= 0 or math.prod(ext) * itemsize != moved:
        return None
    return span[1], itemsize, tuple((abs(s), n) for s, n in zip(strides, ext, strict=True))


def _dense(s: Span) -> bool:
    """Whether a span's box covers every byte of its byte range (a row-major run of whole rows)."""
    _, strides, _, ext = s[3]
    dims = sorted(((abs(st), n) for st, n in zip(strides, ext, strict=True) if n > 1))
    if not dims:
        return True
    for (st, n), (nxt, _) in zip(dims, dims[1:], strict=False):
        if nxt != st * n:
            return False
    return s[2] - s[1] == dims[0][0] * math.prod(n for _, n in dims)  # elements one item apart


class _Hazards:
    """Memory ordering between accesses of one tile that may touch the same buffer.

    Accesses are grouped by the buffer (root) they reach; within a buffer, two accesses are
    ordered (read after write, write after read or write) only when their byte spans overlap,
    so the stores of disjoint blocks of one output, or a load beside a store to another block,
    run concurrently. An access without a span conflicts with every access of its buffer.
    """

    ANY = "*"

    def __init__(self) -> None:
        self.writers: dict[str, list[tuple[int, Span | None]]] = {}
        self.readers: dict[str, list[tuple[int, Span | None]]] = {}

    def access(self, roots: frozenset[str] | None, write: bool, seq: int, span: Span | None = None) -> set[int]:
        if roots is None:  # an access of unknown buffers: ordered after everything, conflicts with all
            keys = set(self.writers) | set(self.readers) | {self.ANY}
            span = None
        else:
            keys = set(roots) | {self.ANY}
        deps: set[int] = set()
        for k in keys:
            deps.update(s for s, sp in self.writers.get(k, ()) if _overlap(sp, span))
            if write:
                deps.update(s for s, sp in self.readers.get(k, ()) if _overlap(sp, span))
        targets = [self.ANY] if roots is None else list(roots)
        for k in targets:
            if write:
                # an access inside this write's span is ordered before it; later ones need only this write
                self.writers[k] = [(s, sp) for s, sp in self.writers.get(k, ()) if not _within(sp, span)] + [(seq, span)]
                self.readers[k] = [(s, sp) for s, sp in self.readers.get(k, ()) if not _within(sp, span)]
            else:
                self.readers.setdefault(k, []).append((seq, span))
        if roots is None and write:
            for k in list(self.readers):
                self.readers[k] = []
            for k in list(self.writers):
                if k != self.ANY:
                    self.writers[k] = []
        return deps


class _TileConverter:
    def __init__(self, static: _Static, events: Sequence[Any], syncs: dict[Any, str], warnings: list[str]) -> None:
        self.s = static
        self.events = sorted(events, key=lambda e: e.start)
        self.syncs = syncs
        self.warnings = warnings
        self.records: list[OpRecord] = []
        self.latest: dict[ValueKey, tuple[int, ...]] = {}
        self.hazards = _Hazards()
        self.tile = int(self.events[0].tile) if self.events else 0
        self.bound: dict[ValueKey, tuple[int, ...]] = {}  # current values of loop-carried SSA values
        self.loops: list[_Loop] = []

    def convert(self) -> list[OpRecord]:
        pending: list[tuple[int, Any, Operation | None]] = []  # produce ops waiting for their body
        absorb_until = -1
        for ev in self.events:
            while pending and pending[-1][0] <= ev.start:
                end, pev, pop = pending.pop()
                self._post(pev, pop)
            self._leave_loops(ev.start)
            if ev.start < absorb_until:
                continue
            op, ambiguous = self.s.op_for(int(ev.line), ev.op, int(getattr(ev, "op_id", -1)))
            if ambiguous:
                self._warn(f"line {ev.line} has several {ev.op} ops; events were mapped to the first")
            if op is not None:
                self._next_iteration(op)
            else:
                self._warn("some events could not be mapped to an op (by identity or by (line, name)); each such record depends on the record before it")
            nested = ev.end > ev.start + 1
            if ev.op in TRANSPARENT:
                if ev.op == Scf.for_ and op is not None:
                    self._enter_loop(op, ev)
                if ev.op == Ktdp.inter_tile_produce:
                    if nested:
                        pending.append((ev.end, ev, op))
                    else:
                        self._post(ev, op)
                continue
            if nested:
                absorb_until = ev.end
            self._leaf(ev, op)
        self._leave_loops(None)
        while pending:
            _, pev, pop = pending.pop()
            self._post(pev, pop)
        return self.records

    # scf.for: bind the iteration arguments at each iteration, the results at the exit ----------

    def _enter_loop(self, op: Operation, ev: Any) -> None:
        fid = self._fid(op)
        loop = _Loop(op, fid, int(ev.end))
        inits = named(op).operands("init_args")
        for arg, init in zip(_body_args(op), inits, strict=False):
            self.bound[(fid, arg)] = self._value(fid, init)
        self.loops.append(loop)

    def _next_iteration(self, op: Operation) -> None:
        where = self.s.position.get(id(op))
        if where is None:
            return
        for loop in self.loops:
            if where[0] != id(loop.op):
                continue
            if where[1] <= loop.last:  # back at (or before) an op already run: a new iteration
                self._bind_yielded(loop, _body_args(loop.op))
            if loop.last == -1 or where[1] <= loop.last:
                loop.iterations += 1
            loop.last = where[1]

    def _leave_loops(self, start: int | None) -> None:
        while self.loops and (start is None or self.loops[-1].end <= start):
            loop = self.loops.pop()
            if loop.iterations:
                self._bind_yielded(loop, loop.op.results)
            else:
                for res, init in zip(loop.op.results, named(loop.op).operands("init_args"), strict=False):
                    self.bound[(loop.fid, res)] = self._value(loop.fid, init)

    def _bind_yielded(self, loop: _Loop, names: Sequence[str]) -> None:
        body = loop.op.regions[0].blocks[-1].operations if loop.op.regions and loop.op.regions[0].blocks else []
        yielded = body[-1].operands if body and body[-1].name == Scf.yield_ else []
        values = [self._value(loop.fid, y) for y in yielded]
        for name, value in zip(names, values, strict=False):
            self.bound[(loop.fid, name)] = value

    def _value(self, fid: int, name: str) -> tuple[int, ...]:
        """The records that produced the current value of `name` (empty for a free value)."""
        seen = []
        for src in self.s.sources((fid, name)):
            found = self.bound.get(src) if src in self.s.dynamic else self.latest.get(src)
            if found:
                seen.append(found)
        return max(seen, key=max) if seen else ()

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    # dependencies ---------------------------------------------------------------

    def _fid(self, op: Operation) -> int:
        fn = self.s.fn_of.get(id(op))
        return id(fn) if fn is not None else 0

    def _deps_of(self, op: Operation | None, names: Iterable[str] | None = None) -> set[int]:
        if op is None:
            return {self.records[-1].seq} if self.records else set()
        fid = self._fid(op)
        deps: set[int] = set()
        used = list(op.operands) if names is None else list(names)
        if names is None and op.regions:
            used += self.s.outer_uses(op)
        for n in used:
            # the use sees the most recently executed of its possible definitions
            deps.update(self._value(fid, n))
        return deps

    def _define(self, op: Operation | None, seqs: tuple[int, ...]) -> None:
        if op is None:
            return
        fid = self._fid(op)
        for r in op.results:
            self.latest[(fid, r)] = seqs

    # records --------------------------------------------------------------------

    def _emit(self, ev: Any, kind: Kind, deps: set[int], **fields: Any) -> int:
        seq = len(self.records)
        self.records.append(OpRecord(
            tile=self.tile, seq=seq, op=ev.op, kind=kind, deps=tuple(sorted(d for d in deps if d < seq)),
            line=int(ev.line), stream=int(getattr(ev, "op_id", -1)), **fields,
        ))
        return seq

    def _leaf(self, ev: Any, op: Operation | None) -> None:
        name = ev.op
        rd = _spaces(ev.bytes_read)
        wr = _spaces(ev.bytes_written)
        deps = self._deps_of(op)
        if name in DELIVERY:
            self._delivery(ev, op, deps)
            return
        compute = self._compute_kind(ev, op)
        moves = bool(rd or wr)
        if not moves and compute is None:
            if name in LOCAL_COPIES and op is not None:
                nbytes = self._copy_bytes(op)
                if nbytes:
                    seq = self._emit(ev, Kind.LOCAL, deps, bytes_read={CT_LOCAL: nbytes}, bytes_written={CT_LOCAL: nbytes},
                                     result_bytes=self._result_bytes(op, ev))
                    self._define(op, (seq,))
                    return
            # free: the results depend on whatever the operands depended on
            self._define(op, tuple(sorted(deps)))
            return
        last: int | None = None
        remote = _remote(ev)
        if moves and compute is None:
            kind = Kind.TRANSFER if GLOBAL in rd or GLOBAL in wr or remote else Kind.LOCAL
            deps |= self._memory_deps(op, ev, len(self.records))
            last = self._emit(ev, kind, deps, bytes_read=rd, bytes_written=wr, result_bytes=self._result_bytes(op, ev),
                              sources=remote, global_box=_global_box(ev, op, rd, wr))
            self._define(op, (last,))
            return
        assert compute is not None
        if rd:  # a compute op reading memory directly: the read comes first
            kind = Kind.TRANSFER if GLOBAL in rd or remote else Kind.LOCAL
            deps |= self._memory_deps(op, ev, len(self.records), reads_only=True)
            deps = {self._emit(ev, kind, deps, bytes_read=rd, sources=remote)}
        result = self._result_bytes(op, ev) if not wr else 0
        last = self._emit(ev, compute, deps, result_bytes=result, reuses=self._in_place(op, result),
                          **self._work(ev, op, compute))
        if wr:
            kind = Kind.TRANSFER if GLOBAL in wr else Kind.LOCAL
            wdeps = {last} | self._memory_deps(op, ev, len(self.records), writes_only=True)
            last = self._emit(ev, kind, wdeps, bytes_written=wr)
        self._define(op, (last,))

    def _compute_kind(self, ev: Any, op: Operation | None) -> Kind | None:
        name = ev.op
        if ev.macs or name in MATMULS:
            return Kind.MATRIX
        if name in FREE_WITH_TENSORS or name in LOCAL_COPIES:
            return None
        if op is not None:
            if not any(isinstance(self.s.type(t), ty.TensorType | ty.MemRefType) for t in [*op.result_types, *op.operand_types]):
                return None
        elif not ev.elements:
            return None
        if cost_class(name) in VECTOR_WORK:
            return Kind.VECTOR
        return None

    def _work(self, ev: Any, op: Operation | None, kind: Kind) -> dict[str, Any]:
        if kind is Kind.MATRIX:
            macs = int(ev.macs) or (self._static_macs(op) if op is not None else 0)
            dtype = self._dtype(op.operand_types[0]) if op is not None and op.operand_types else None
            return {"macs": macs, "dtype": dtype}
        elements = int(ev.elements)
        dtype = None
        transcendental = ev.op in TRANSCENDENTAL
        if op is not None:
            shaped = [self.s.type(t) for t in [*op.operand_types, *op.result_types]]
            sizes = [_count(t) for t in shaped if isinstance(t, ty.TensorType | ty.MemRefType)]
            known = [n for n in sizes if n is not None]
            if known:
                elements = max(known)
            first = next((t for t in shaped if isinstance(t, ty.TensorType | ty.MemRefType)), None)
            dtype = self._dtype(first) if first is not None else None
            if op.regions:
                transcendental = transcendental or any(o.name in TRANSCENDENTAL for o in op.walk())
        return {"elements": elements, "dtype": dtype, "transcendental": transcendental}

    def _static_macs(self, op: Operation) -> int:
        types = [self.s.type(t) for t in op.operand_types]
        if len(types) < 3 or not all(isinstance(t, ty.TensorType | ty.MemRefType) for t in types[:3]):
            return 0
        shape = getattr(types[0], "shape", ())
        k = shape[-1] if shape else 1
        n = _count(types[2])
        return int(k) * n if k is not None and n is not None else 0

    def _dtype(self, t: Type) -> str | None:
        e = ty.element_type(self.s.type(t))
        if isinstance(e, ty.FloatType):
            return e.kind
        if isinstance(e, ty.IntegerType):
            return f"i{e.width}"
        if isinstance(e, ty.IndexType):
            return "i64"
        return None

    def _result_bytes(self, op: Operation | None, ev: Any) -> int:
        if op is None:
            return 0
        total = 0
        for t in op.result_types:
            t = self.s.type(t)
            if isinstance(t, ty.TensorType):
                total += _nbytes(t, fallback_elements=int(ev.elements))
        return total

    def _in_place(self, op: Operation | None, result: int) -> int:
        """The record whose result `op`'s may overwrite (spec/ops/linalg.md, storage): the one that made the
        tensor in its `outs` when `op` is a destination-style op with one output and one result of that
        tensor's size; -1 otherwise. The timeline does it only where `op` is that tensor's last user."""
        if op is None or not result or not op.name.startswith("linalg.") or len(op.result_types) != 1:
            return -1
        try:
            *_, outs_group = (o.name for o in named(op).opdef.operands)
            outs = list(named(op).operands(outs_group))
        except (AccessError, ValueError):
            return -1
        if len(outs) != 1:
            return -1
        made = self._value(self._fid(op), outs[0])
        if len(made) != 1 or self.records[made[0]].result_bytes != result:
            return -1
        return made[0]

    def _copy_bytes(self, op: Operation) -> int:
        if op.name in (Tensor.insert_slice, Tensor.parallel_insert_slice) and op.operand_types:
            t = self.s.type(named(op).operand_type("source"))
            return _nbytes(t) if isinstance(t, ty.TensorType) else 0
        return sum(_nbytes(t) for t in map(self.s.type, op.result_types) if isinstance(t, ty.TensorType))

    def _memory_deps(self, op: Operation | None, ev: Any, seq: int, reads_only: bool = False, writes_only: bool = False) -> set[int]:
        deps: set[int] = set()
        for roots, write in self._accesses(op, ev):
            if (reads_only and write) or (writes_only and not write):
                continue
            span = getattr(ev, "span", None) if op is not None and op.name in (Ktdp.load, Ktdp.store) else None
            deps |= self.hazards.access(roots, write, seq, span)
        return deps

    def _accesses(self, op: Operation | None, ev: Any) -> list[tuple[frozenset[str] | None, bool]]:
        if op is None:
            return [(None, bool(ev.bytes_written))]
        fid = self._fid(op)
        name = op.name

        def root(i: int) -> frozenset[str] | None:
            return self.s.roots((fid, op.operands[i])) if i < len(op.operands) else None

        def root_of(operand: str) -> frozenset[str] | None:
            return self.s.roots((fid, named(op).operand(operand)))

        if name == Ktdp.load:
            return [(root_of("access_tile"), False)]
        if name == Memref.load:
            return [(root_of("memref"), False)]
        if name == Ktdp.store:
            return [(root_of("access_tile"), True)]
        if name == Memref.store:
            return [(root_of("memref"), True)]
        if name == "memref.copy":  # not a defined op: no operand names to go by
            return [(root(0), False), (root(1), True)]
        out: list[tuple[frozenset[str] | None, bool]] = []
        for i, t in enumerate(op.operand_types):
            if isinstance(self.s.type(t), ty.MemRefType | ty.AccessTileType):
                out.append((root(i), bool(ev.bytes_written)))
        return out or [(None, bool(ev.bytes_written))]

    # inter-tile ---------------------------------------------------------------------

    def _sync(self, future: Any) -> str:
        key, n = future[0], future[1]
        label = self.syncs.get(key)
        if label is None:
            label = self.syncs[key] = f"f{len(self.syncs)}"
        return f"{label}:{n}"

    def _post(self, ev: Any, op: Operation | None) -> None:
        if getattr(ev, "future", None) is None:  # not a producer: nothing leaves this tile
            return
        deps: set[int] = set()
        if op is not None:
            deps = self._deps_of(op, _yielded(op, 0, 0) + _yielded_rest(op))
        seq = self._emit(ev, Kind.POST, deps, sync=self._sync(ev.future))
        self._define(op, (seq,))

    def _delivery(self, ev: Any, op: Operation | None, deps: set[int]) -> None:
        if getattr(ev, "future", None) is None:  # not a consumer
            self._define(op, ())
            return
        peers = [int(p) for p in ev.peers]
        total = self._result_bytes(op, ev)
        if op is None or total == 0:
            total = int(ev.elements) * 2
        each = total // max(1, len(peers)) if ev.op in SPLIT_BY_PRODUCER else total
        seq = self._emit(ev, Kind.RECEIVE, deps, sync=self._sync(ev.future),
                         sources=tuple((p, each) for p in peers),
                         result_bytes=0 if ev.op in COMBINING else total)
        if ev.op in COMBINING and op is not None:
            work = self._work(ev, op, Kind.VECTOR)
            work["elements"] = int(work["elements"]) * max(1, len(peers))
            seq = self._emit(ev, Kind.VECTOR, {seq} | deps, result_bytes=total, **work)
        self._define(op, (seq,))


def _yielded_rest(op: Operation) -> list[str]:
    """Values after the first that the produce body's terminator (yield_partial of a tuple) yields."""
    if not op.regions or not op.regions[0].blocks or not op.regions[0].blocks[-1].operations:
        return []
    term = op.regions[0].blocks[-1].operations[-1]
    return named(term).operands("values")[1:] if term.name == Ktdp.yield_partial else term.operands[1:]


def _spaces(by_space: dict[str, int]) -> dict[str, int]:
    """Interpreter spaces -> record spaces: private allocations live in ct_local memory."""
    out: dict[str, int] = {}
    for space, n in by_space.items():
        if not n:
            continue
        key = GLOBAL if space == GLOBAL else CT_LOCAL
        out[key] = out.get(key, 0) + int(n)
    return out


def _count(t: Type) -> int | None:
    shape = getattr(t, "shape", None)
    if shape is None or any(d is None for d in shape):
        return None
    return math.prod(int(d) for d in shape)


def _nbytes(t: Type, fallback_elements: int = 0) -> int:
    n = _count(t)
    if n is None:
        n = fallback_elements
    return -(-n * ty.storage_bits(ty.element_type(t)) // 8)
