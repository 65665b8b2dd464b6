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
from collections.abc import Callable
from typing import Any, cast

from ktir.dialects.access import named
from ktir.dialects.names import Arith, Func, Ktdp, Scf, Tensor
from ktir.ir import types as ty
from ktir.ir.operation import Operation
from ktir.targets.from_interp import TRANSCENDENTAL
from ktir.targets.records import GLOBAL, KernelTrace, Kind, OpRecord

from .dependence import CONTRACTIONS, shape
from .emit_natural import owner_axes, prefetched
from .kernels import dtype_name, itemsize
from .natural import Chunk, loop_classes
from .space_natural import NaturalSpace

_FREE = frozenset({Arith.constant, Ktdp.construct_memory_view, Ktdp.construct_access_tile, Tensor.empty,
                   Ktdp.get_compute_tile_id, Func.return_, Arith.addi, Arith.muli, Arith.subi})
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
    empties = {r for op in body if op.name == Tensor.empty for r in op.results}
    deps: dict[str, set[int]] = {}
    deps_of: dict[int, set[int]] = {}
    placed: list[tuple[Operation, int]] = []
    empties = {r for top in body for op in top.walk() if op.name == Tensor.empty for r in op.results}
    for op in body:
        d: set[int] = set()
        for v in [*op.operands, *op.results]:
            d |= deps.get(v, set())
            if v not in empties and shape(g.types.get(v)):
                d |= set(g.classes(v))
        if id(op) in k.loops:  # placed, whole, by everything in it
            d |= set(loop_classes(g, op, empties))
            for x in op.walk():
                for v in x.operands:
                    d |= deps.get(v, set()) | set(k.deps.get(v, frozenset()))
        for r in op.results:
            deps[r] = set(k.result_deps(op, frozenset(d)))
        if id(op) in k.loops or recorded(op):
            placed.append((op, max((looped.index(c) for c in d if c in looped), default=-1)))
            deps_of[id(op)] = d
    if split is not None:
        return _split_trace(space, p, split, placed, blk, max_records)
    trips = []
    for c in looped:
        gg, bb = grid_of[c], blk[c]
        trips.append(math.ceil(k.extent[c] / (gg * bb)))
    n_tiles = math.prod(grid)
    if n_tiles * sum(math.prod(trips[:lv + 1]) * _count(k, op) for op, lv in placed) > max_records:
        return None
    def works(part: frozenset[tuple[int, int]]) -> dict[int, dict[str, object]]:
        """The work of every op when the classes in `part` are in a partial block of the given size."""
        found = cache.get(part)
        if found is not None:
            return found
        sizes = {**blk, **dict(part)}
        work = cache[part] = _works(space, placed, sizes)
        for key, w in work.items():  # each access's box moves along its looped classes, by g x b per iteration
            if "@box" in w:
                view, dims = cast(tuple[str, list[tuple[int, int, int]]], w["@box"])
                a = next(x for x in k.accesses if id(x.op) == key)
                w["@box"] = (view, tuple(
                    (lo, n, ("seq", a.loop.iv), a.loop.step) if a.loop is not None and a.seq[d]
                    else (lo, n, looped.index(c), grid_of[c] * blk[c]) if c in looped else (lo, n, None, 0)
                    for d, (lo, n, c) in enumerate(dims)))
        return work

    cache: dict[frozenset[tuple[int, int]], dict[int, dict[str, object]]] = {}
    records: list[OpRecord] = []
    early = prefetched(space, p, placed)  # loads double buffered by the innermost block loop
    owned = {id(op): owner_axes(space, p, op, frozenset(c for c in deps_of[id(op)])) for op, _ in placed}
    for tile in range(n_tiles):
        coords = _coords(tile, grid)
        counts = [_tile_trips(k.extent[c], grid_of[c], blk[c], coords[axes.index(c)] if c in axes else 0)
                  for c in looped]
        kloop: tuple[int, Operation | Chunk, int] | None = None
        if space.kclass is not None and space.kclass in looped and k.kloop is not None:
            kloop = (looped.index(space.kclass), k.kloop[1], counts.pop())
        elif space.kclass is not None and space.kclass in looped and k.chunk is not None:
            kloop = (looped.index(space.kclass), k.chunk, counts.pop())
        # a store not varying along a grid axis runs on the tiles at 0 on it (`emit_natural.owner_axes`)
        mine = [(op, lv) for op, lv in placed
                if all(coords[axes.index(c)] == 0 for c in owned.get(id(op), []))]
        blocks = [(c, k.extent[c], grid_of[c], blk[c], coords[axes.index(c)] if c in axes else 0) for c in looped]
        # the tile's first coordinate along each looped class: the boxes' addresses (`_global_box`)
        shift = {lv: coord * b for lv, (_, _, _, b, coord) in enumerate(blocks)}
        _nest(-1, mine, counts, works, tile, [0], {"@shift": shift}, records, kloop, {}, blocks, frozenset(), early)
    return KernelTrace(records, grid=tuple(grid), name=k.name)


def _nest(level: int, ops: list[tuple[Operation, int]], counts: list[int],
          works: Callable[[frozenset[tuple[int, int]]], dict[int, dict[str, object]]],
          tile: int, seq: list[int], made: dict[str, Any], records: list[OpRecord],
          kloop: tuple[int, Operation | Chunk, int] | None = None, it: dict[Any, int] | None = None,
          blocks: list[tuple[int, int, int, int, int]] | None = None,
          part: frozenset[tuple[int, int]] = frozenset(), early: set[int] | None = None) -> None:
    """The records of one loop level's ops, then `counts[level + 1]` iterations of the next level.

    `kloop` = (its level, the contraction, trips): the contraction's K loop, run where the
    contraction is, its ops in program order, each step's product accumulated into the next.
    `it`: the iteration of each enclosing loop level; `blocks`: per level (class, extent, tiles,
    block, this tile's coordinate); `part`: the classes in a partial last block, and its size;
    `early`: the loads the innermost block loop issues one iteration ahead (`emit_natural.prefetched`)."""
    it = {} if it is None else it
    work = works(part)
    if kloop is not None and level + 1 == kloop[0] and isinstance(kloop[1], Chunk):
        _phase_records(level, ops, kloop[1], kloop[2], work, tile, seq, made, records, it)
        return
    if kloop is not None and level + 1 == kloop[0]:
        klevel, mm, trips = kloop
        assert isinstance(mm, Operation)
        for op, lv in ops:
            if lv == level:
                _record(op, work[id(op)], tile, seq, made, records, it)
            elif op is mm:
                for step in range(trips):
                    inner_it = {**it, klevel: step}
                    for inner, ilv in ops:
                        if ilv == klevel and inner is not mm:
                            _record(inner, work[id(inner)], tile, seq, made, records, inner_it)
                    _record(mm, work[id(mm)], tile, seq, made, records, inner_it)
                    mv = named(mm)
                    made[mv.operands("outputs")[-1]] = made[mv.results("results")[0]]  # the carried accumulator
        return
    for op, lv in ops:
        if lv == level:
            _record(op, work[id(op)], tile, seq, made, records, it)
    if level + 1 >= len(counts):
        return
    if early and blocks is not None and level + 2 == len(counts):
        _ahead(level + 1, ops, counts[level + 1], works, tile, seq, made, records, it, blocks, part, early)
        return
    for i in range(counts[level + 1]):
        now = part
        if blocks is not None:
            c, E, g, b, coord = blocks[level + 1]
            start = coord * b + i * g * b
            if start + b > E:
                now = part | {(c, E - start)}
        _nest(level + 1, ops, counts, works, tile, seq, made, records, kloop, {**it, level + 1: i}, blocks, now, early)


def _ahead(level: int, ops: list[tuple[Operation, int]], count: int,
           works: Callable[[frozenset[tuple[int, int]]], dict[int, dict[str, object]]],
           tile: int, seq: list[int], made: dict[str, Any], records: list[OpRecord], it: dict[Any, int],
           blocks: list[tuple[int, int, int, int, int]], part: frozenset[tuple[int, int]], early: set[int]) -> None:
    """The innermost block loop as `emit_natural` double buffers it: the `early` loads of its first
    block before the loop, each full block's iteration loading the next full block's first, then its
    other ops on the blocks loaded an iteration before; a partial last block after, as written."""
    c, E, g, b, coord = blocks[level]
    fulls = sum(1 for i in range(count) if coord * b + i * g * b + b <= E)
    ahead = [(op, lv) for op, lv in ops if lv == level and id(op) in early]
    rest = [(op, lv) for op, lv in ops if not (lv == level and id(op) in early)]
    work = works(part)
    if fulls and ahead:
        for op, _ in ahead:
            _record(op, work[id(op)], tile, seq, made, records, {**it, level: 0})
    for i in range(fulls):
        if not ahead:
            break
        current = {r: made[r] for op, _ in ahead for r in op.results}
        if i + 1 < fulls:
            for op, _ in ahead:
                _record(op, work[id(op)], tile, seq, made, records, {**it, level: i + 1})
        following = {r: made[r] for op, _ in ahead for r in op.results}
        made.update(current)
        _nest(level, rest, [0] * (level + 1), works, tile, seq, made, records, None, {**it, level: i}, blocks, part)
        made.update(following)
    for i in range(count):
        if ahead and i < fulls:
            continue
        start = coord * b + i * g * b
        now = part | {(c, E - start)} if start + b > E else part
        _nest(level, ops, [0] * (level + 1), works, tile, seq, made, records, None, {**it, level: i}, blocks, now)


_PHASES = 1 << 10  # more phase loops than any chunked dimension has (a stream id per op and phase)


def _phase_records(level: int, ops: list[tuple[Operation, int]], chunk: Chunk, trips: int,
                   work: dict[int, dict[str, object]], tile: int, seq: list[int], made: dict[str, Any],
                   records: list[OpRecord], it: dict[Any, int]) -> None:
    """A chunked dimension's phase loops, in the order `emit_natural._phase_loops` emits them."""
    done: set[int] = set()

    def before(upto: int | None) -> None:
        for op, lv in ops:
            if lv == level and id(op) not in done and (upto is None or chunk.phase[id(op)] <= upto):
                done.add(id(op))
                _record(op, work[id(op)], tile, seq, made, records, it)

    for n, (ph, needed) in enumerate(zip(chunk.loop_phases, chunk.needed, strict=True)):
        before(ph)
        # each phase loop runs its own copy of the ops (`emit_natural._phase_loops`): other ops, so
        # other streams of buffers on the timeline than the same op's in another phase
        made["@phase"] = n
        for i in range(trips):
            for op, lv in ops:
                if lv == level + 1 and id(op) in needed:
                    _record(op, work[id(op)], tile, seq, made, records, {**it, level + 1: i})
                    if id(op) in chunk.reductions:  # the carried partial: the next block adds into it
                        made[op.operands[-1]] = made[op.results[0]]
        del made["@phase"]
    before(None)


def _works(space: NaturalSpace, placed: list[tuple[Operation, int]], blk: dict[int, int]) -> dict[int, dict[str, object]]:
    """The work of every recorded op; a sequential loop's entry runs its body's."""
    k = space.k
    work = {id(op): _work(op, space, blk) for top, _ in placed for op in _inner(k, top) if id(op) not in k.loops}
    for top, _ in placed:
        if id(top) in k.loops:
            work[id(top)] = {"@loop": k, "@work": work}
    return work


def recorded(op: Operation) -> bool:
    """Whether from_interp records the op: a transfer, or compute on tensors (not index arithmetic)."""
    if op.name in _FREE or op.name.startswith("scf."):
        return False
    if op.name in (Ktdp.load, Ktdp.store):
        return True
    return any(isinstance(t, ty.TensorType) for t in [*op.operand_types, *op.result_types])


def _inner(k: object, op: Operation) -> list[Operation]:
    """The ops a placed op records: itself, or the recorded ops of a sequential loop's body."""
    from .natural import NaturalKernel

    assert isinstance(k, NaturalKernel)
    if id(op) not in k.loops:
        return [op]
    return [x for x in op.regions[0].blocks[0].operations if recorded(x)]


def _count(k: object, op: Operation) -> int:
    from .natural import NaturalKernel

    assert isinstance(k, NaturalKernel)
    lp = k.loops.get(id(op))
    return 1 if lp is None else lp.trips * len(_inner(k, op))


def _record_loop(k: object, op: Operation, work: dict[int, dict[str, object]], tile: int, seq: list[int],
                 made: dict[str, Any], records: list[OpRecord], it: dict[Any, int]) -> None:
    """A sequential loop's iterations in order: its carried values flow from the inits through
    each iteration's yielded values to the loop's results."""
    from .natural import NaturalKernel

    assert isinstance(k, NaturalKernel)
    lp = k.loops[id(op)]
    body = op.regions[0].blocks[0]
    term = body.operations[-1] if body.operations and body.operations[-1].name == Scf.yield_ else None
    for a, init in zip(body.arguments[1:], op.operands[3:], strict=False):
        if init in made:
            made[a.name] = made[init]
    inner = _inner(k, op)
    for i in range(lp.trips):
        for x in inner:
            _record(x, work[id(x)], tile, seq, made, records, {**it, ("seq", lp.iv): i})
        if term is not None:
            for a, v in zip(body.arguments[1:], term.operands, strict=False):
                if v in made:
                    made[a.name] = made[v]
    if term is not None:
        for r, v in zip(op.results, term.operands, strict=False):
            if v in made:
                made[r] = made[v]


def _coords(tile: int, grid: list[int]) -> list[int]:
    """The coordinates of linear tile id `tile`, dimension 0 fastest (as the interpreter numbers tiles)."""
    out = []
    for g in grid:
        out.append(tile % g)
        tile //= g
    return out


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
        classes = tuple(g.classes(access.value))
        box = (access.view, [(lo, blk.get(c, g.size(c)), c) for lo, c in zip(access.starts, classes, strict=True)])
        o = access.operand
        # a gather's elements are no box: from_interp charges them as one run
        layout = {} if access.gather is not None else {"@layout": (o.itemsize, o.layout, o.offset)}
        if access.stored:
            return {"kind": Kind.TRANSFER, "bytes_written": {GLOBAL: n}, "@write": o.arg, "@box": box, **layout}
        found: dict[str, object] = {"kind": Kind.TRANSFER, "bytes_read": {GLOBAL: n}, "result_bytes": n,
                                    "@read": o.arg, "@box": box, **layout}
        if access.gather is not None:  # the indirect tile reads its indices first, a transfer of its own
            found["@indices"] = sum(math.prod(blk.get(classes[d], g.size(classes[d])) for d in along) * isz
                                    for along, isz in access.gather.index_bytes)
        return found
    empties = {r for x in k.fn.regions[0].blocks[0].operations if x.name == Tensor.empty for r in x.results}
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


def _record(op: Operation, work: dict[str, object], tile: int, seq: list[int], made: dict[str, Any],
            records: list[OpRecord], it: dict[Any, int] | None = None) -> None:
    """Append one record; dependencies through values, and through memory as from_interp orders it:
    an access waits for the earlier writes of its array that may touch a byte it touches, a write
    also for such reads. `it` holds the iteration of each enclosing block loop (by loop level);
    work["@classes"] lists the levels whose dimension the access is blocked on: the blocks of two
    iterations of such a level are disjoint (as the interpreter's access spans show from_interp)."""
    if "@loop" in work:
        _record_loop(work["@loop"], op, cast(dict[int, dict[str, object]], work["@work"]), tile, seq, made, records,
                     it or {})
        return
    deps = {made[v] for v in op.operands if v in made and not v.startswith("@")}
    if isinstance(work.get("@indices"), int):  # a gather: its index read, then the gathered elements
        records.append(OpRecord(tile=tile, seq=seq[0], op=Ktdp.construct_indirect_access_tile, kind=Kind.TRANSFER,
                                deps=(), line=0, bytes_read={GLOBAL: int(cast(int, work["@indices"]))}))
        deps.add(seq[0])
        seq[0] += 1
    arg = work.get("@write") or work.get("@read")
    fields = {n: v for n, v in work.items() if n != "kind" and not n.startswith("@")}
    if isinstance(arg, str) and "@layout" in work:
        fields["global_box"] = _global_box(work, made.get("@shift", {}), it or {})
    if isinstance(arg, str):
        write = "@write" in work
        view, dims = cast(tuple[str, tuple[tuple[int, int, int | None, int], ...]], work["@box"])
        # the box this execution touches: per view dimension its first coordinate and extent,
        # shifted along a looped class by the iteration (one tile's blocks never overlap)
        box = tuple((lo + (it or {}).get(lv, 0) * step if lv is not None else lo, n)
                    for lo, n, lv, step in dims)
        # per (view, box): its last write and the reads since (earlier accesses of a box are
        # ordered before its write, so they need not be kept); one entry per box keeps this
        # linear in the accesses when the same blocks are read again and again
        boxes: dict[tuple[str, tuple[tuple[int, int], ...]], tuple[int | None, list[int]]] = \
            made.setdefault(f"@mem:{arg}", {})
        for (v, b), (last, reads) in boxes.items():
            if v != view or all(a < c + m and c < a + k for (a, k), (c, m) in zip(box, b, strict=True)):
                if last is not None:
                    deps.add(last)
                if write:
                    deps.update(reads)
        if write:
            boxes[(view, box)] = (seq[0], [])
        else:
            boxes.setdefault((view, box), (None, []))[1].append(seq[0])
    line = op.loc.line if op.loc else 0
    phase = made.get("@phase")
    stream = line * _PHASES + phase if phase is not None and line else -1  # one op of one phase loop
    records.append(OpRecord(tile=tile, seq=seq[0], op=op.name, kind=work["kind"], deps=tuple(sorted(deps)),  # type: ignore[arg-type]
                            line=line, stream=stream, **fields))  # type: ignore[arg-type]
    for r in op.results:
        made[r] = seq[0]
    seq[0] += 1


def _global_box(work: dict[str, object], shift: dict[Any, int], it: dict[Any, int]) -> tuple[int, int, tuple[tuple[int, int], ...]]:
    """`OpRecord.global_box` of one execution of an access, as `from_interp` derives it from the
    interpreter's span: the box's lowest byte address, element bytes, (byte stride, extent) per
    view dimension. Addresses count from the array's start; the interpreter places arrays at
    multiples of 128 bytes, so the granules counted are the interpreter's for any granularity
    dividing 128."""
    _, dims = cast(tuple[str, tuple[tuple[int, int, Any, int], ...]], work["@box"])
    isz, strides, offset = cast(tuple[int, tuple[int, ...], int], work["@layout"])
    low = offset
    for (lo, n, lv, step), s in zip(dims, strides, strict=True):
        first = lo + shift.get(lv, 0) + it.get(lv, 0) * step if lv is not None else lo
        low += first * s + min(0, (n - 1) * s)
    return low * isz, isz, tuple((abs(s) * isz, n) for (_, n, _, _), s in zip(dims, strides, strict=True))


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
    tail = [op for op, _ in placed if (set(op.operands) & later or op.name == Ktdp.store) and op not in loop]
    top = [op for op, _ in placed if op not in loop and op not in tail]
    trips = math.ceil(k.extent[c] / (gg * bb))
    if gg * (len(top) + trips * len(loop)) + len(tail) > max_records:
        return None
    work = _works(space, placed, blk)
    for w in work.values():  # one block loop (level 0), along the split class
        if "@box" in w:
            view, dims = cast(tuple[str, list[tuple[int, int, int]]], w["@box"])
            w["@box"] = (view, tuple((lo, n, 0, gg * bb) if cls == c else (lo, n, None, 0) for lo, n, cls in dims))
    records: list[OpRecord] = []
    acc_t = named(split.op).result_types("results")[0]
    acc_bytes = math.prod(int(d or 0) for d in acc_t.shape) * 4 if isinstance(acc_t, ty.TensorType) else 4
    if split.everyone:
        return _all_reduce_trace(k, split, placed, tail, work, gg, bb, acc_bytes)
    init = split.init
    for tile in range(gg):
        made: dict[str, Any] = {"@shift": {0: tile * bb}}
        seq = [0]
        for op in top:
            _record(op, work[id(op)], tile, seq, made, records)
        given = made.get(init)
        if not split.identity:  # the partial starts from a fill of the identity (`emit_reduction._identity_init`)
            _synthetic(records, tile, seq, made, init, (), acc_bytes)
        for i in range(_tile_trips(k.extent[c], gg, bb, tile)):
            for op in loop:
                _record(op, work[id(op)], tile, seq, made, records, {0: i})
        result = named(split.op).results("results")[0]
        part = made.get(result)
        records.append(OpRecord(tile=tile, seq=seq[0], op=Ktdp.inter_tile_produce, kind=Kind.POST,
                                deps=(part,) if part is not None else (), sync="f0:0"))
        seq[0] += 1
        if tile:
            continue
        recv = seq[0]
        records.append(OpRecord(tile=0, seq=recv, op=Ktdp.inter_tile_reduce, kind=Kind.RECEIVE,
                                sync="f0:0", sources=tuple((t, acc_bytes) for t in range(gg))))
        records.append(OpRecord(tile=0, seq=recv + 1, op=Ktdp.inter_tile_reduce, kind=Kind.VECTOR, deps=(recv,),
                                elements=acc_bytes // 4 * gg, dtype="f32", result_bytes=acc_bytes))
        seq[0] += 2
        made[result] = recv + 1
        if not split.identity:  # the init applied once to the total
            _synthetic(records, 0, seq, made, result, (recv + 1, *(() if given is None else (given,))), acc_bytes)
        for op in tail:
            _record(op, work[id(op)], 0, seq, made, records)
    return KernelTrace(records, grid=(gg,), name=k.name)


def _synthetic(records: list[OpRecord], tile: int, seq: list[int], made: dict[str, Any], value: str,
               deps: tuple[int, ...], nbytes: int) -> None:
    """A vector op over an f32 accumulator the rewrite adds (a fill of the identity, the init's
    combine), recorded as from_interp records it; `value` is then made by it."""
    records.append(OpRecord(tile=tile, seq=seq[0], op="linalg.vector", kind=Kind.VECTOR, deps=tuple(sorted(deps)),
                            elements=nbytes // 4, dtype="f32", result_bytes=nbytes))
    made[value] = seq[0]
    seq[0] += 1


def _all_reduce_trace(k: object, split: object, placed: list[tuple[Operation, int]], tail: list[Operation],
                      work: dict[int, dict[str, object]], tiles: int, block: int, acc_bytes: int) -> KernelTrace:
    """An all-reduced split (`emit_reduction._emit_all_reduce`): each tile runs the ops before the
    reduction on its block in program order, posts its partial, receives and combines every
    tile's, and runs what follows on its block (a store of a value without the split dimension
    on tile 0 only, `emit_reduction.owner_stores`)."""
    from .emit_reduction import ReductionPlan, owner_stores
    from .natural import NaturalKernel

    assert isinstance(split, ReductionPlan) and isinstance(k, NaturalKernel)
    result = named(split.op).results("results")[0]
    from .emit_reduction import feeders

    records: list[OpRecord] = []
    owned = owner_stores(k, split.cls)
    after = {id(op) for op in tail}
    first = feeders(split.op, k.fn.regions[0].blocks[0].operations)
    before = [op for op, _ in placed if id(op) not in after]
    for tile in range(tiles):
        made: dict[str, Any] = {"@shift": {0: tile * block}}
        seq = [0]
        given: int | None = None
        if not split.identity:  # the partial starts from a fill of the identity, made first
            _synthetic(records, tile, seq, made, "@identity", (), acc_bytes)
        for op in [o for o in before if id(o) in first] + [o for o in before if id(o) not in first]:
            if op is split.op and not split.identity:
                given, made[split.init] = made.get(split.init), made["@identity"]
            _record(op, work[id(op)], tile, seq, made, records, {0: 0})
            if op is split.op and not split.identity and given is not None:
                made[split.init] = given
        part = made.get(result)
        records.append(OpRecord(tile=tile, seq=seq[0], op=Ktdp.inter_tile_produce, kind=Kind.POST,
                                deps=(part,) if part is not None else (), sync="f0:0"))
        recv = seq[0] + 1
        records.append(OpRecord(tile=tile, seq=recv, op=Ktdp.inter_tile_reduce, kind=Kind.RECEIVE,
                                sync="f0:0", sources=tuple((t, acc_bytes) for t in range(tiles))))
        records.append(OpRecord(tile=tile, seq=recv + 1, op=Ktdp.inter_tile_reduce, kind=Kind.VECTOR, deps=(recv,),
                                elements=acc_bytes // 4 * tiles, dtype="f32", result_bytes=acc_bytes))
        seq[0] += 3
        made[result] = recv + 1
        if not split.identity:
            _synthetic(records, tile, seq, made, result, (recv + 1, *(() if given is None else (given,))), acc_bytes)
        for op in tail:
            if tile and id(op) in owned:
                continue
            _record(op, work[id(op)], tile, seq, made, records, {0: 0})
    return KernelTrace(records, grid=(tiles,), name=k.name)


__all__ = ["MAX_RECORDS", "natural_trace"]

