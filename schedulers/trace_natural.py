"""The trace records of a scheduled natural-form kernel, without running it.

The timeline simulation (`ktir.targets.timeline`) reads one record per executed op per
tile. Running the interpreter at full size to get them takes seconds to minutes; a
natural-form schedule's execution is known in advance (loops of fixed trip counts over
blocks of fixed shapes), so its records are written here directly, the way
`ktir.targets.from_interp` writes them from an interpreter trace: a transfer per load and
store, a vector record per elementwise op or reduction (elements = the largest tensor
involved, transcendental if any payload op is), a matrix record per contraction (MACs),
dependencies through SSA values, a post per tile and a receive plus combine on tile 0 for a
split reduction. `tests/schedulers/test_sched_timeline.py` checks that the timeline of
these records equals the timeline of the interpreter's trace of the emitted module.
"""

from __future__ import annotations

import math

from ktir.dialects.access import named
from ktir.ir import types as ty
from ktir.ir.operation import Operation
from ktir.targets.from_interp import TRANSCENDENTAL
from ktir.targets.records import GLOBAL, KernelTrace, Kind, OpRecord

from .dependence import CONTRACTIONS, shape
from .kernels import dtype_name, itemsize
from .space_natural import NaturalSpace

_FREE = frozenset({"arith.constant", "ktdp.construct_memory_view", "ktdp.construct_access_tile", "tensor.empty",
                   "ktdp.get_compute_tile_id", "func.return", "arith.addi", "arith.muli", "arith.subi"})
MAX_RECORDS = 400_000  # beyond this a schedule is not simulated (the analytic figure stands)


def natural_trace(space: NaturalSpace, p: dict[str, int], split: object | None = None,
                  max_records: int = MAX_RECORDS) -> KernelTrace | None:
    """The records of the schedule `p` of `space` (None when there would be more than `max_records`)."""
    k = space.k
    g = k.graph
    loops = space.loops(p)
    looped = [space.cut[i] for i in loops]
    blk = {cls: p[f"b{i}"] for i, cls in enumerate(space.cut)}
    grid_of = {cls: p[f"g{i}"] for i, cls in enumerate(space.cut)}
    axes = [c for c in looped if grid_of[c] > 1]
    grid = [grid_of[c] for c in axes] or [1]
    body = k.fn.regions[0].blocks[0].operations
    empties = {r for op in body if op.name == "tensor.empty" for r in op.results}
    deps: dict[str, set[int]] = {}
    placed: list[tuple[Operation, int]] = []
    for op in body:
        d: set[int] = set()
        for v in [*op.operands, *op.results]:
            d |= deps.get(v, set())
            if v not in empties and shape(g.types.get(v)):
                d |= set(g.classes(v))
        for r in op.results:
            deps[r] = d - {k.kloop[0]} if k.kloop is not None and op is k.kloop[1] else d
        if op.name not in _FREE and not op.name.startswith("scf."):
            placed.append((op, max((looped.index(c) for c in d if c in looped), default=-1)))
    if split is not None:
        return _split_trace(space, p, split, placed, blk, max_records)
    trips = []
    for c in looped:
        gg, bb = grid_of[c], blk[c]
        trips.append(math.ceil(k.extent[c] / (gg * bb)))
    n_tiles = math.prod(grid)
    if n_tiles * sum(math.prod(trips[:lv + 1]) for _, lv in placed) > max_records:
        return None
    work = {id(op): _work(op, space, blk) for op, _ in placed}
    records: list[OpRecord] = []
    for tile in range(n_tiles):
        coords = _coords(tile, grid)
        counts = [_tile_trips(k.extent[c], grid_of[c], blk[c], coords[axes.index(c)] if c in axes else 0)
                  for c in looped]
        kloop = None
        if space.kclass is not None and space.kclass in looped and k.kloop is not None:
            kloop = (looped.index(space.kclass), k.kloop[1], counts.pop())
        _nest(-1, placed, counts, work, tile, [0], {}, records, kloop)
    return KernelTrace(records, grid=tuple(grid), name=k.name)


def _nest(level: int, ops: list[tuple[Operation, int]], counts: list[int], work: dict[int, dict[str, object]],
          tile: int, seq: list[int], made: dict[str, int], records: list[OpRecord],
          kloop: tuple[int, Operation, int] | None = None) -> None:
    """The records of one loop level's ops, then `counts[level + 1]` iterations of the next level.

    `kloop` = (its level, the contraction, trips): the contraction's K loop, run where the
    contraction is, its ops in program order, each step's product accumulated into the next."""
    if kloop is not None and level + 1 == kloop[0]:
        klevel, mm, trips = kloop
        for op, lv in ops:
            if lv == level:
                _record(op, work[id(op)], tile, seq, made, records)
            elif op is mm:
                for _ in range(trips):
                    for inner, ilv in ops:
                        if ilv == klevel and inner is not mm:
                            _record(inner, work[id(inner)], tile, seq, made, records)
                    _record(mm, work[id(mm)], tile, seq, made, records)
                    mv = named(mm)
                    made[mv.operands("outputs")[-1]] = made[mv.results("results")[0]]  # the carried accumulator
        return
    for op, lv in ops:
        if lv == level:
            _record(op, work[id(op)], tile, seq, made, records)
    if level + 1 >= len(counts):
        return
    for _ in range(counts[level + 1]):
        _nest(level + 1, ops, counts, work, tile, seq, made, records, kloop)


def _coords(tile: int, grid: list[int]) -> list[int]:
    out = []
    for g in reversed(grid):
        out.append(tile % g)
        tile //= g
    return list(reversed(out))


def _tile_trips(E: int, g: int, b: int, coord: int) -> int:
    """Iterations of `for i = coord * b to E step g * b`."""
    start = coord * b
    return 0 if start >= E else math.ceil((E - start) / (g * b))


def _work(op: Operation, space: NaturalSpace, blk: dict[int, int]) -> dict[str, object]:
    k, g = space.k, space.k.graph
    access = next((a for a in k.accesses if a.op is op), None)

    def size(v: str) -> int:
        return math.prod(blk.get(c, g.size(c)) for c in g.classes(v))

    def nbytes(v: str) -> int:
        t = g.types.get(v)
        return size(v) * (itemsize(ty.element_type(t)) if isinstance(t, ty.TensorType) else 4)

    if access is not None:
        n = nbytes(access.value)
        if access.stored:
            return {"kind": Kind.TRANSFER, "bytes_written": {GLOBAL: n}, "@write": access.operand.arg}
        return {"kind": Kind.TRANSFER, "bytes_read": {GLOBAL: n}, "result_bytes": n, "@read": access.operand.arg}
    empties = {r for x in k.fn.regions[0].blocks[0].operations if x.name == "tensor.empty" for r in x.results}
    tensors = [v for v in [*op.operands, *op.results] if shape(g.types.get(v)) and v not in empties]
    result_bytes = sum(nbytes(r) for r in op.results if shape(g.types.get(r)))
    first = g.types.get(tensors[0]) if tensors else None
    dt = dtype_name(ty.element_type(first)) if isinstance(first, ty.TensorType) else None
    if op.name in CONTRACTIONS:
        a, c = named(op).operands("inputs")[0], named(op).operands("outputs")[-1]
        macs = size(a) // max(1, _rows(op, g, blk, k)) * size(c)  # A's last dimension x C's elements
        return {"kind": Kind.MATRIX, "macs": macs, "dtype": dt, "result_bytes": result_bytes}
    elements = max((size(v) for v in tensors), default=0)
    trans = op.name in TRANSCENDENTAL or any(x.name in TRANSCENDENTAL for x in op.walk())
    return {"kind": Kind.VECTOR, "elements": elements, "dtype": dt, "transcendental": trans,
            "result_bytes": result_bytes}


def _rows(op: Operation, g: object, blk: dict[int, int], k: object) -> int:
    """from_interp counts a contraction's MACs as (A's last dimension) x (C's elements): A's other dims."""
    from .dependence import DimGraph
    from .natural import NaturalKernel

    assert isinstance(g, DimGraph) and isinstance(k, NaturalKernel)
    dims = g.classes(named(op).operands("inputs")[0])  # A
    return math.prod(blk.get(c, g.size(c)) for c in dims[:-1])


def _record(op: Operation, work: dict[str, object], tile: int, seq: list[int], made: dict[str, int],
            records: list[OpRecord]) -> None:
    """Append one record; dependencies through values, and through memory as from_interp orders it
    (an access waits for the last write of its array; a write also for the reads since)."""
    deps = {made[v] for v in op.operands if v in made}
    arg = work.get("@write") or work.get("@read")
    if isinstance(arg, str):
        if f"@w:{arg}" in made:
            deps.add(made[f"@w:{arg}"])
        if "@write" in work:
            deps |= {n for key, n in made.items() if key.startswith(f"@r:{arg}:")}
            for key in [key for key in made if key.startswith(f"@r:{arg}:")]:
                del made[key]
            made[f"@w:{arg}"] = seq[0]
        else:
            made[f"@r:{arg}:{seq[0]}"] = seq[0]
    fields = {n: v for n, v in work.items() if n != "kind" and not n.startswith("@")}
    records.append(OpRecord(tile=tile, seq=seq[0], op=op.name, kind=work["kind"], deps=tuple(sorted(deps)),  # type: ignore[arg-type]
                            line=op.loc.line if op.loc else 0, **fields))  # type: ignore[arg-type]
    for r in op.results:
        made[r] = seq[0]
    seq[0] += 1


def _split_trace(space: NaturalSpace, p: dict[str, int], split: object, placed: list[tuple[Operation, int]],
                 blk: dict[int, int], max_records: int) -> KernelTrace | None:
    """A split reduction: each tile loops over its blocks, posts its partial; tile 0 combines and finishes."""
    from .emit_reduction import ReductionPlan

    assert isinstance(split, ReductionPlan)
    k = space.k
    c = split.cls
    i = space.cut.index(c)
    gg, bb = p[f"g{i}"], p[f"b{i}"]
    body = k.fn.regions[0].blocks[0].operations
    later = set(split.op.results)
    for op in body[body.index(split.op) + 1:]:
        if any(v in later for v in op.operands):
            later |= set(op.results)
    loop = [op for op, lv in placed if lv >= 0 and not (set(op.operands) & later) or op is split.op]
    tail = [op for op, _ in placed if (set(op.operands) & later or op.name == "ktdp.store") and op not in loop]
    top = [op for op, _ in placed if op not in loop and op not in tail]
    trips = math.ceil(k.extent[c] / (gg * bb))
    if gg * (len(top) + trips * len(loop)) + len(tail) > max_records:
        return None
    work = {id(op): _work(op, space, blk) for op, _ in placed}
    records: list[OpRecord] = []
    acc_t = named(split.op).result_types("results")[0]
    acc_bytes = math.prod(int(d or 0) for d in acc_t.shape) * 4 if isinstance(acc_t, ty.TensorType) else 4
    for tile in range(gg):
        made: dict[str, int] = {}
        seq = [0]
        for op in top:
            _record(op, work[id(op)], tile, seq, made, records)
        for _ in range(_tile_trips(k.extent[c], gg, bb, tile)):
            for op in loop:
                _record(op, work[id(op)], tile, seq, made, records)
        result = named(split.op).results("results")[0]
        part = made.get(result)
        records.append(OpRecord(tile=tile, seq=seq[0], op="ktdp.inter_tile_produce", kind=Kind.POST,
                                deps=(part,) if part is not None else (), sync="f0:0"))
        seq[0] += 1
        if tile:
            continue
        recv = seq[0]
        records.append(OpRecord(tile=0, seq=recv, op="ktdp.inter_tile_reduce", kind=Kind.RECEIVE,
                                sync="f0:0", sources=tuple((t, acc_bytes) for t in range(gg))))
        records.append(OpRecord(tile=0, seq=recv + 1, op="ktdp.inter_tile_reduce", kind=Kind.VECTOR, deps=(recv,),
                                elements=acc_bytes // 4 * gg, dtype="f32", result_bytes=acc_bytes))
        seq[0] += 2
        made[result] = recv + 1
        for op in tail:
            _record(op, work[id(op)], 0, seq, made, records)
    return KernelTrace(records, grid=(gg,), name=k.name)


__all__ = ["MAX_RECORDS", "natural_trace"]

