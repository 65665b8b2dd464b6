"""The schedule space of a natural-form kernel: which dimensions to cut, over how many tiles,
in blocks of what size, in which loop order.

A candidate gives each cuttable dimension class `c` a grid share `g_c` and a block `b_c`
(a divisor of its extent, a whole number of transfer granules when the class is the
contiguous dimension of a view, unless it is the whole extent); a class cut (`g_c > 1` or
`b_c` smaller than the extent) gets a loop `for i = tid_c * b_c to E_c step g_c * b_c`.
Every op is placed in the innermost loop whose class it depends on, so an operand that
does not depend on a loop is loaded once outside it (resident). The cost per tile is the
sum over ops of executions x cost per execution, transfers and compute overlapping (the DMA
queue runs ahead of the compute units) but for one iteration's share: transfers pay the
fixed latency and their bytes rounded per contiguous run (a strided block costs its runs),
sharing the global channel with the other active tiles; compute pays its elements at the
target's rate for its dtype plus the unit's startup.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ktir.dialects.names import Tensor

from .cost import Figures, Work
from .dependence import shape
from .natural import NaturalKernel, Step, loop_classes
from .report import Placement, Schedule
from .spaces import Columns, Evaluated, divisors

BUDGET = 60_000  # candidates per kernel (before loop orders)


class NaturalSpace:
    def __init__(self, k: NaturalKernel, fig: Figures) -> None:
        self.k, self.fig = k, fig
        cut = sorted(k.splittable(), key=lambda c: -k.extent[c])[:4]
        self.cut = [c for c in k.classes if c in cut]  # program order
        n = len(self.cut)
        self.perms = list(itertools.permutations(range(n))) if n <= 3 else [tuple(range(n)), tuple(reversed(range(n)))]
        # a contraction's reduced class, looped innermost in blocks (g = 1) with the accumulator carried;
        # or a reduced class chunked in phases (`natural.Chunk`), innermost too
        self.kclass = k.kloop[0] if k.kloop is not None and k.extent[k.kloop[0]] > 1 else None
        if self.kclass is None and k.chunk is not None:
            self.kclass = k.chunk.cls
        if self.kclass is not None:
            self.cut.append(self.kclass)
            self.perms = [(*p, n) for p in self.perms]
        self._live = _liveness(k)
        # loads `emit_natural.prefetched` double buffers when they are in the innermost block loop
        accesses = {id(a.op): a for a in k.accesses}
        written = {a.operand.arg for a in k.accesses if a.stored}
        early = {id(a.op) for a in k.accesses if not a.stored and a.gather is None and a.loop is None
                 and a.operand.arg not in written}
        self._early_steps = [s.kind == "load" and id(s.op) in early and s.repeat == 1 for s in k.steps]
        self._early_values = [any(id(op) in early and name in op.results for op in k.ops() if id(op) in accesses)
                              for name, _, _ in k.values]
        self._candidates: Columns | None = None
        self._evaluated: Evaluated | None = None
        per = max(2, int(BUDGET ** (1 / max(1, len(self.cut)))))
        self.options = [self._options(c, per) if c != self.kclass else [(1, b) for b in self._blocks(c)][-per:]
                        for c in self.cut]

    def _blocks(self, c: int) -> list[int]:
        E = self.k.extent[c]
        size = self.k.contiguous.get(c)
        step = max(1, self.fig.granularity // size) if size else 1
        aligned = [d for d in divisors(E) if d % step == 0 or d == E]
        # an extent with no whole-stick divisor (an odd size) may still be cut in shorter runs:
        # each transfer then moves whole sticks for fewer elements, which the model charges; so
        # may any extent into blocks of fewer than a stick, for when a stick's worth does not fit
        small = [d for d in divisors(E) if d < step][-3:]
        return sorted(set(small + aligned)) if len(aligned) > 1 else divisors(E)

    def _partial(self, c: int, grids: list[int]) -> list[tuple[int, int]]:
        """Blocks that do not divide the extent (the last one is partial, emitted apart): for g
        tiles, m blocks each, the whole-stick block that covers the extent in g x m blocks."""
        E = self.k.extent[c]
        size = self.k.contiguous.get(c)
        step = max(1, self.fig.granularity // size) if size else 1
        found = []
        for g in grids:
            for m in (1, 2, 3, 4, 6, 8, 12, 16, 32, 64):
                b = -(-E // (g * m))
                b = -(-b // step) * step
                if b < E and E % b and (g - 1) * b < E:  # every tile gets a block
                    found.append((g, b))
        return found

    def _options(self, c: int, limit: int) -> list[tuple[int, int]]:
        E, tiles = self.k.extent[c], self.fig.tiles
        # any number of tiles up to the grid (an extent of 3 blocks takes 3 tiles); a tile owns at least a block
        grids = list(range(1, tiles + 1))
        blocks = self._blocks(c)
        found = [(g, b) for g in grids for b in blocks if g * b <= E or (g == 1 and b == E)]
        if c == self.k.one_block:  # each tile keeps its block through an all-reduce: one block per tile
            found = [(g, b) for g, b in found if g * b == E]
        elif not self.k.whole_blocks:
            found = sorted(set(found) | set(self._partial(c, grids)), key=lambda o: (o[0], o[1]))
        if len(found) <= limit:
            return found
        # keep the largest blocks of each grid share (small blocks pay per-transfer latency), and
        # the smallest, for when nothing larger fits
        per_g = max(2, limit // len(grids))
        keep: list[tuple[int, int]] = []
        for g in grids:
            mine = [o for o in found if o[0] == g]
            keep += mine[:1] + mine[1:][-(per_g - 1):]
        return keep

    # ------------------------------------------------------------ the strategies' interface

    def candidates(self) -> Columns:
        """Every combination of the dimensions' (tiles, block) options whose grid fits the target,
        in every loop order (computed once; callers must not modify the columns)."""
        if self._candidates is not None:
            return self._candidates
        if not self.cut:
            self._candidates = {"perm": np.zeros(1, np.int64)}
            return self._candidates
        # the product built one dimension at a time, dropping grids larger than the target as it grows
        idx = np.zeros((1, 0), dtype=np.int64)
        grid = np.ones(1, dtype=np.int64)
        for opts in self.options:
            g = np.array([o[0] for o in opts], dtype=np.int64)
            n = len(opts)
            grid = np.repeat(grid, n) * np.tile(g, len(idx))
            idx = np.hstack([np.repeat(idx, n, axis=0), np.tile(np.arange(n, dtype=np.int64), len(idx))[:, None]])
            keep = grid <= self.fig.tiles
            idx, grid = idx[keep], grid[keep]
        cols: Columns = {}
        for i, opts in enumerate(self.options):
            arr = np.array(opts, dtype=np.int64)
            cols[f"g{i}"], cols[f"b{i}"] = arr[idx[:, i], 0], arr[idx[:, i], 1]
        n = len(idx)
        out: Columns = {name: np.tile(v, len(self.perms)) for name, v in cols.items()}
        out["perm"] = np.repeat(np.arange(len(self.perms), dtype=np.int64), n)
        self._candidates = out
        return out

    def _blk(self, c: Columns, cls: int) -> np.ndarray | float:
        if cls in self.cut:
            return c[f"b{self.cut.index(cls)}"].astype(np.float64)
        return float(self.k.extent[cls])

    def evaluate(self, c: Columns) -> Evaluated:
        if c is self._candidates:  # the whole table is costed once
            if self._evaluated is None:
                self._evaluated = self._evaluate(c)
            return self._evaluated
        return self._evaluate(c)

    def _evaluate(self, c: Columns) -> Evaluated:
        k = self.k
        size = len(c["perm"])
        n_cut = len(self.cut)
        E = [float(k.extent[cls]) for cls in self.cut]
        g = [c[f"g{i}"].astype(np.float64) for i in range(n_cut)]
        b = [c[f"b{i}"].astype(np.float64) for i in range(n_cut)]
        perms = np.array(self.perms, dtype=np.int64).reshape(len(self.perms), n_cut)
        pos = [perms[c["perm"], i] for i in range(n_cut)]
        cutm = [(g[i] > 1) | (b[i] < E[i]) for i in range(n_cut)]
        n_it = [np.ceil(E[i] / (g[i] * b[i])) for i in range(n_cut)]
        active = np.prod(g, axis=0) if g else np.ones(size)
        dma = np.zeros(size)  # transfer cycles per tile
        compute = np.zeros(size)  # matrix and vector cycles per tile
        gbytes = np.zeros(size)
        levels = []
        for deps in k.op_deps:
            lvl = np.full(size, -1, dtype=np.int64)
            for i, cls in enumerate(self.cut):
                if cls in deps:
                    lvl = np.maximum(lvl, np.where(cutm[i], pos[i], -1))
            levels.append(lvl)
        ahead = self._double_buffered(c, cutm, pos, levels, size)
        inner = self._innermost(cutm, pos, size)
        for step, lvl, early_step in zip(k.steps, levels, self._early_steps, strict=True):
            execs = np.full(size, float(step.repeat))
            if step.phases != 1 and self.kclass is not None:  # run again in each phase loop that needs it
                execs = execs * np.where(cutm[self.cut.index(self.kclass)], float(step.phases), 1.0)
            for i in range(n_cut):
                execs = execs * np.where(cutm[i] & (pos[i] <= lvl), n_it[i], 1.0)
            elems = np.ones(size)
            for cls in step.dims:
                elems = elems * self._blk(c, cls)
            early = ahead & (lvl == inner) if early_step else None
            cost, moved = self._step_cost(step, c, elems, active, early)
            if step.kind in ("load", "store"):
                dma += execs * cost
            else:
                compute += execs * cost
            gbytes += execs * moved * active
        # the DMA queue runs ahead of the compute units (a block's loads wait for nothing but
        # their queue), so one overlaps the other but for one iteration's share at the ends
        iters = np.ones(size)
        for i in range(n_cut):
            iters = iters * np.where(cutm[i], n_it[i], 1.0)
        cycles = np.maximum(dma + compute / iters, compute + dma / iters)
        # one block per tile (decode): nothing to overlap across iterations, but the tile's DMA
        # engines take its transfers' fixed latencies in rounds (loads, then the stores that wait
        # for the compute), where the sum above charges each transfer's latency in turn
        loads = sum(1 for s in k.steps if s.kind == "load")
        stores = sum(1 for s in k.steps if s.kind == "store")
        e = self.fig.engines
        rounds = math.ceil(loads / e) + math.ceil(stores / e)
        once = dma - (loads + stores - rounds) * self.fig.transfer_fixed + compute
        cycles = np.where(iters == 1, once, cycles)
        return Evaluated(cycles, self._scratch(c, cutm, pos), gbytes, gbytes.copy())

    def _level(self, deps: frozenset[int], cutm: list[np.ndarray], pos: list[np.ndarray], size: int) -> np.ndarray:
        """The loop (its position in the order; -1: none) an op depending on `deps` is placed in."""
        lvl = np.full(size, -1, dtype=np.int64)
        for i, cls in enumerate(self.cut):
            if cls in deps:
                lvl = np.maximum(lvl, np.where(cutm[i], pos[i], -1))
        return lvl

    def _scratch(self, c: Columns, cutm: list[np.ndarray], pos: list[np.ndarray]) -> np.ndarray:
        """Peak bytes of the tensors live at once on a tile, in the emitted order.

        A value is live from its op to its last use (a loop-carried accumulator and the
        product computed from it are both live at the contraction). An op placed in an outer
        loop than an op before it moves ahead of that loop when emitted, so its value counts
        as live from the start; the ops of a contraction's K loop are emitted inside that
        loop, where the contraction was, and move nothing ahead."""
        size = len(c["perm"])
        ops, values = self._live
        level = [self._level(deps, cutm, pos, size) for deps in ops]
        kloop = None
        if self.kclass is not None:  # the K loop's ops are emitted inside it, where the contraction is
            i = self.cut.index(self.kclass)
            kloop = (pos[i], cutm[i])
        before = [np.full(size, -1, dtype=np.int64)]
        for lvl in level[:-1]:
            seen = lvl if kloop is None else np.where(kloop[1] & (lvl == kloop[0]), -1, lvl)
            before.append(np.maximum(before[-1], seen))
        blocks = []
        for first, last, dims, isz, uses in values:
            blk = np.full(size, float(isz))
            for cls in dims:
                blk = blk * self._blk(c, cls)
            early = before[first] > level[first]  # emitted ahead of a deeper loop that precedes it
            # read in a deeper loop than its own: live for every iteration of it (to the end, conservatively)
            late = np.zeros(size, dtype=bool)
            for q, outer in uses:
                late |= (level[q] if outer is None else self._level(outer, cutm, pos, size)) > level[first]
            blocks.append((first, last, blk, early, late))
        peak = np.zeros(size)
        for p in range(len(ops)):
            live = np.zeros(size)
            for first, last, blk, early, late in blocks:
                live += np.where(((first <= p) | early) & ((p <= last) | late), blk, 0.0)
            peak = np.maximum(peak, live)
        # a double-buffered loop holds the next block of each load it issues ahead, throughout
        inner = self._innermost(cutm, pos, size)
        ahead = self._double_buffered(c, cutm, pos, [self._level(d, cutm, pos, size) for d in self.k.op_deps], size)
        for (first, _, blk, _, _), loaded in zip(blocks, self._early_values, strict=True):
            if loaded:
                peak = peak + np.where(ahead & (level[first] == inner), blk, 0.0)
        return peak

    def _innermost(self, cutm: list[np.ndarray], pos: list[np.ndarray], size: int) -> np.ndarray:
        """The position of the innermost loop (-1: none)."""
        inner = np.full(size, -1, dtype=np.int64)
        for i in range(len(self.cut)):
            inner = np.maximum(inner, np.where(cutm[i], pos[i], -1))
        return inner

    def _double_buffered(self, c: Columns, cutm: list[np.ndarray], pos: list[np.ndarray], levels: list[np.ndarray],
                         size: int) -> np.ndarray:
        """Per candidate, whether its innermost loop is a block loop that loads a block ahead
        (`emit_natural.prefetched`): a load it may prefetch is placed in it, and the loop has more
        than one block per tile (not a split reduction's one block per tile, emitted apart)."""
        inner = self._innermost(cutm, pos, size)
        out = np.zeros(size, dtype=bool)
        if self.k.one_block is not None or self.k.whole_blocks:
            # a split reduction's kernel (`emit_reduction.reduction_kernel`, the only one with whole
            # blocks): emitted by `emit_split_reduction`, which loads nothing ahead
            return out
        trips = np.ones(size)
        for i, cls in enumerate(self.cut):
            n = np.ceil(self.k.extent[cls] / (c[f"g{i}"].astype(np.float64) * c[f"b{i}"].astype(np.float64)))
            trips = np.where(cutm[i] & (pos[i] == inner), n, trips)
        for early, lvl in zip(self._early_steps, levels, strict=True):
            if early:
                out |= (lvl == inner) & (inner >= 0) & (trips > 1)
        if self.kclass is not None:
            i = self.cut.index(self.kclass)
            out &= ~(cutm[i] & (pos[i] == inner))
        return out

    def _step_cost(self, s: Step, c: Columns, elems: np.ndarray, active: np.ndarray,
                   ahead: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        f = self.fig
        if s.kind in ("load", "store"):
            run = self._run(s, c)
            runs = elems / run
            gran = float(f.granularity)
            rounded = runs * np.ceil(run * s.itemsize / gran) * gran
            queue = f.transfer_fixed + rounded / f.dma_bw
            channel = f.transfer_fixed + active * rounded / f.global_bw
            cost = np.maximum(queue, channel)
            if ahead is not None:
                # a load issued an iteration ahead: its fixed latency passes while the tile's other
                # engine moves the iteration's other transfers (one data phase at a time, the port);
                # a store still waits for its data, latency and all
                hidden = np.maximum(np.maximum(rounded / f.dma_bw, active * rounded / f.global_bw), queue / f.engines)
                cost = np.where(ahead, hidden, cost)
            return cost, elems * s.itemsize
        if s.kind == "matrix":
            return elems / f.mac_rate(s.dtype) + f.matrix_startup, np.zeros_like(elems)
        work = np.zeros_like(elems)
        if s.plain:
            work = work + elems * s.plain / _vrate(f, s.dtype, False)
        if s.transcendental:
            work = work + elems * s.transcendental / _vrate(f, s.dtype, True)
        return work + f.vector_startup, np.zeros_like(elems)

    def _run(self, s: Step, c: Columns) -> np.ndarray:
        """Elements per contiguous run of a block: the innermost dimensions while they are whole."""
        order = sorted(range(len(s.strides)), key=lambda d: s.strides[d])
        size = len(c["perm"])
        run = np.ones(size)
        going = np.ones(size, dtype=bool)
        expect = 1
        for d in order:
            if s.strides[d] != expect:
                break
            blk = self._blk(c, s.value_dims[d])
            run = np.where(going, run * blk, run)
            full = self.k.extent[s.value_dims[d]]
            going = going & (np.asarray(blk) == full)
            expect *= full
        return run

    def work(self) -> Work:
        vec: dict[str, float] = {}
        trans: dict[str, float] = {}
        macs, mdt, rd, wr = 0.0, "f16", 0.0, 0.0
        for s in self.k.steps:
            n = float(math.prod(self.k.extent[c] for c in s.dims)) * s.repeat
            if s.kind == "load":
                rd += n * s.itemsize
            elif s.kind == "store":
                wr += n * s.itemsize
            elif s.kind == "matrix":
                macs, mdt = macs + n, s.dtype
            else:
                if s.plain:
                    vec[s.dtype] = vec.get(s.dtype, 0.0) + n * s.plain
                if s.transcendental:
                    trans[s.dtype] = trans.get(s.dtype, 0.0) + n * s.transcendental
        return Work(macs=macs, mac_dtype=mdt, vector=vec, transcendental=trans, bytes_read=rd, bytes_written=wr)

    def baseline(self) -> dict[str, int]:
        """One cuttable dimension split evenly over as many tiles as it can use, the largest block that fits."""
        cols = self.candidates()
        if not self.cut:
            return {"perm": 0}
        ev = self.evaluate(cols)
        # the class that spreads over the most tiles (the largest when several do)
        big = max(range(len(self.cut)), key=lambda i: (max(g for g, _ in self.options[i]), self.k.extent[self.cut[i]]))
        fits = (cols["perm"] == 0) & (ev.scratch <= self.fig.local_capacity)
        mask = fits.copy()
        for i in range(len(self.cut)):
            if i != big:
                mask &= (cols[f"g{i}"] == 1) & (cols[f"b{i}"] == self.k.extent[self.cut[i]])
        if not mask.any():
            mask = fits
        if not mask.any():
            return {n: int(v[0]) for n, v in cols.items()}
        idx = np.nonzero(mask)[0]
        grid = np.prod([cols[f"g{i}"][idx] for i in range(len(self.cut))], axis=0)
        blocks = np.prod([cols[f"b{i}"][idx] for i in range(len(self.cut))], axis=0)
        best = idx[np.lexsort((-blocks, -grid))[0]]
        return {n: int(v[best]) for n, v in cols.items()}

    def tiles_used(self, p: dict[str, int]) -> int:
        """How many tiles the schedule's grid has."""
        return math.prod(p[f"g{i}"] for i in self.loops(p))

    def loops(self, p: dict[str, int]) -> list[int]:
        """Indices (into `cut`) of the classes that get a loop, outermost first."""
        if not self.cut:
            return []
        order = self.perms[p["perm"]]
        cut = [i for i in range(len(self.cut)) if p[f"g{i}"] > 1 or p[f"b{i}"] < self.k.extent[self.cut[i]]]
        return sorted(cut, key=lambda i: order[i])

    def describe(self, p: dict[str, int]) -> Schedule:
        k = self.k
        loops = self.loops(p)
        grid = [p[f"g{i}"] for i in loops if p[f"g{i}"] > 1] or [1]
        labels = {cls: f"{k.label(cls)}:{k.extent[cls]}" for cls in k.classes}
        looped = {self.cut[i] for i in loops}
        placements = []
        for a in k.accesses:
            dims = k.graph.classes(a.value)
            block = [p[f"b{self.cut.index(cl)}"] if cl in self.cut else k.extent[cl] for cl in dims]
            resident = not a.stored and not (k.deps.get(a.value, frozenset()) & looped)
            mode = "output" if a.stored else ("resident" if resident else "streamed")
            placements.append(Placement(tensor=a.operand.arg, memory="global" if a.stored else "ct_local", mode=mode,
                                        block=block))
        return Schedule(
            grid=grid, splits={labels[self.cut[i]]: p[f"g{i}"] for i in range(len(self.cut))},
            tile_sizes={labels[self.cut[i]]: p[f"b{i}"] for i in range(len(self.cut))},
            loop_order=", ".join(labels[self.cut[i]] for i in loops) or "none",
            double_buffered=self.double_buffered(p), placements=placements)

    def double_buffered(self, p: dict[str, int]) -> bool:
        """Whether the point's innermost loop loads its blocks an iteration ahead (`emit_natural.prefetched`)."""
        if not self.cut:
            return False
        c = {n: np.array([v], dtype=np.int64) for n, v in p.items()}
        E = [float(self.k.extent[cls]) for cls in self.cut]
        perms = np.array(self.perms, dtype=np.int64).reshape(len(self.perms), len(self.cut))
        pos = [perms[c["perm"], i] for i in range(len(self.cut))]
        cutm = [(c[f"g{i}"] > 1) | (c[f"b{i}"] < E[i]) for i in range(len(self.cut))]
        levels = [self._level(d, cutm, pos, 1) for d in self.k.op_deps]
        return bool(self._double_buffered(c, cutm, pos, levels, 1)[0])

    def fit_message(self) -> str:
        """What does not fit: at the blocking that needs the least scratchpad, the largest tensor,
        its block and its bytes, and why its whole dimensions cannot be cut."""
        k = self.k
        cols = self.candidates()
        ev = self.evaluate(cols)
        i = int(np.argmin(ev.scratch))
        p = {n: int(v[i]) for n, v in cols.items()}
        blk = {c: p[f"b{j}"] for j, c in enumerate(self.cut)}
        sized = sorted(((math.prod(blk.get(c, k.extent[c]) for c in dims) * isz, name, dims, isz)
                        for name, dims, isz in k.values), key=lambda x: -x[0])
        head = (f"no blocking fits the {self.fig.local_capacity}-byte ct_local scratchpad of a tile: the least "
                f"any needs is {int(ev.scratch[i])} bytes")
        if not sized:
            return head
        nbytes, name, dims, isz = sized[0]
        shape = "x".join(str(blk.get(c, k.extent[c])) for c in dims)
        whole = [c for c in dims if c not in blk and k.extent[c] > 1]
        why = "; ".join(f"{k.label(c)} ({k.extent[c]}) cannot be cut: {k.free[c][0]}" for c in whole if k.free[c])
        return f"{head}, of which {name} takes {nbytes} bytes (a {shape} block of {isz}-byte elements)" + \
            (f"; {why}" if why else "")


def _liveness(k: NaturalKernel) -> tuple[list[frozenset[int]], list[tuple[int, int, tuple[int, ...], int, list[tuple[int, frozenset[int] | None]]]]]:
    """Per op of the body, the classes it depends on (its placement); per tensor value, the
    positions of its op and of its last use, its classes, its itemsize and its uses
    (position, and for the init of the looped contraction the classes its loop depends on)."""
    body = k.ops()
    empties = {r for op in body if op.name == Tensor.empty for r in op.results}
    deps: dict[str, set[int]] = {}
    ops: list[frozenset[int]] = []
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    uses: dict[str, list[tuple[int, frozenset[int] | None]]] = {}
    within: dict[int, set[int]] = {}  # an op of a sequential loop -> where the loop is placed
    for i, op in enumerate(body):
        d: set[int] = set()
        for v in [*op.operands, *op.results]:
            d |= deps.get(v, set())
            if v not in empties and shape(k.graph.types.get(v)):
                d |= set(k.graph.classes(v))
        if id(op) in k.loops:
            d |= set(loop_classes(k.graph, op, empties))
            for x in op.regions[0].blocks[0].operations:
                within[id(x)] = d
        d = within.get(id(op), d)
        for r in op.results:
            deps[r] = set(k.result_deps(op, frozenset(d)))
            first[r] = i
        for v in op.operands:
            last[v] = i
            # the init of a looped contraction is read once, on entering its K loop (placed as its result)
            init = k.kloop is not None and op is k.kloop[1] and v == op.operands[-1]
            uses.setdefault(v, []).append((i, frozenset(deps[op.results[0]]) if init else None))
        ops.append(frozenset(d))
    values = [(first[name], max(last.get(name, first[name]), first[name]), dims, isz, uses.get(name, []))
              for name, dims, isz in k.values]
    return ops, values


def _vrate(f: Figures, dtype: str, transcendental: bool) -> float:
    try:
        return f.vector_rate(dtype, transcendental)
    except Exception:  # noqa: BLE001 - a dtype the target lists no rate for: cost it at f32
        return f.vector_rate("f32", transcendental)
