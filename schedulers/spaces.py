"""Schedule spaces per kernel class: the candidates, their cost, and the baseline point.

Each space lists its candidates as numpy columns (one row per schedule), evaluates all of
them at once with `schedulers.cost`, and describes any row as a `Schedule`. Tile sizes are
divisors of the problem dimensions, and every block's contiguous (last) dimension is a
whole number of the target's transfer granules (128-byte sticks on Spyre) unless it is the
whole dimension.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ktir.targets.timeline import BUFFERS

from .cost import Figures, Work
from .kernels import AttentionKernel, MatmulKernel, Operand, RowKernel
from .report import Placement, Schedule
from .row_pipeline import row_cycles
from .space_ring import RING, describe_ring, even_widths, ring_candidates, ring_cost

Columns = dict[str, np.ndarray]


@dataclass
class Evaluated:
    cycles: np.ndarray
    scratch: np.ndarray  # peak scratchpad bytes per tile
    global_bytes: np.ndarray  # bytes read + written in global memory, all tiles
    local_bytes: np.ndarray  # bytes moved in/out of scratchpads (loads, stores, local copies), all tiles

    @property
    def size(self) -> int:
        return int(self.cycles.shape[0])


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def aligned_blocks(n: int, itemsize: int, granularity: int) -> list[int]:
    """Block sizes along a contiguous dimension: divisors of n that are whole granules, or n itself."""
    step = max(1, granularity // itemsize)
    found = [d for d in divisors(n) if d % step == 0]
    return found or [n]


def product(**cols: list[int]) -> Columns:
    """Every combination of the columns' values (the first column varies slowest)."""
    arrays = [np.asarray(v, dtype=np.int64) for v in cols.values()]
    mesh = np.meshgrid(*arrays, indexing="ij")
    return {k: m.reshape(-1) for k, m in zip(cols, mesh, strict=True)}


def take(c: Columns, idx: np.ndarray | list[int]) -> Columns:
    return {k: v[idx] for k, v in c.items()}


def row(c: Columns, i: int) -> dict[str, int]:
    return {k: int(v[i]) for k, v in c.items()}


def _grids(tiles: int, max_m: int, max_n: int) -> list[tuple[int, int]]:
    return [(gm, gn) for gm in range(1, tiles + 1) for gn in range(1, tiles // gm + 1) if gm <= max_m and gn <= max_n]


def stream_buffers(db: np.ndarray) -> np.ndarray:
    """Buffers of each streamed block: two where the schedule double buffers, and never fewer than
    the timeline gives every stream (`BUFFERS`: it double buffers them all)."""
    return np.maximum(np.where(db, 2.0, 1.0), BUFFERS)


def moved(operand: Operand, block: tuple[np.ndarray, ...], granularity: int) -> np.ndarray:
    """Bytes a transfer of a block of `operand` moves: the granules each contiguous run of it
    touches. A run is the block's extent along the stride-1 dimension, times the next
    dimensions' extents while the block covers whole dimensions (a row-major block of whole
    rows is one run; a block of a transposed operand is one short run per column). A run that
    does not start on a granule boundary may straddle one more granule: the runs' starts,
    modulo the granularity, are the multiples of the gcd of the steps between them (and of the
    view's offset), taken as equally frequent, as they are when the blocks tile the operand (the
    timeline counts each run's granules exactly, `ktir.targets.machine.granules`)."""
    strides = operand.layout
    order = sorted(range(len(strides)), key=lambda d: strides[d])
    blk = [np.asarray(b, dtype=np.float64) for b in block]
    elems = np.prod(blk, axis=0)
    isz = operand.itemsize
    g = max(1, granularity)
    run = np.ones_like(elems)
    going = np.ones_like(elems, dtype=bool)
    align = np.full(elems.shape, math.gcd(g, operand.offset * isz), dtype=np.int64)
    contiguous, expect = True, 1
    for d in order:
        contiguous = contiguous and strides[d] == expect
        in_run = going if contiguous else np.zeros_like(going)
        whole = blk[d] >= operand.shape[d]
        run = np.where(in_run, run * blk[d], run)
        # where a block extends the run, runs start a block apart along d (one block: no step);
        # elsewhere every coordinate of d starts a run
        step = np.where(in_run, np.where(whole, 0, blk[d] * strides[d] * isz), strides[d] * isz)
        align = np.gcd(align, step.astype(np.int64))
        going &= whole
        expect *= operand.shape[d]
    # a run of r bytes starting at offset o touches (o + r - 1) // g + 1 granules; over the offsets
    # o = 0, a, 2a, .. (a divides g) that sums to (g / a) * (1 + ((r - 1) // a) * a / g)
    per_run = 1 + np.floor((run * isz - 1) / align) * align / g
    return elems / run * per_run * g


# ---------------------------------------------------------------------- matmul

ORDERS = ("m,n,k streaming A and B", "m,n,k with A resident", "n,m,k with B resident",
          "n,k with A resident and B panels shared by all tiles", "n,k with B panels shared by all tiles",
          "ring: A chunks passed tile to neighbour tile")
SUB_STICK = 32  # the ring's chunks of K below a stick are multiples of this many elements
SHARED = 3  # the order whose B panels are spread over the tiles' scratchpads and read over the ring
SHARED_STREAM = 4  # the same, with A streamed from memory instead of resident


class MatmulSpace:
    """C = A B: splits gm x gn of the output over tiles, blocks bm x bn x bk, a loop order and
    placement (which operand stays resident), and double buffering of the K loop."""

    def __init__(self, k: MatmulKernel, fig: Figures) -> None:
        self.k, self.fig = k, fig
        g = fig.granularity
        self.bm_all = divisors(k.M)
        self.bn_all = aligned_blocks(k.N, max(k.b.itemsize, k.c.itemsize), g)
        self.bk_all = aligned_blocks(k.K, max(k.a.itemsize, k.b.itemsize), g)

    def work(self) -> Work:
        k = self.k
        return Work(macs=k.macs, mac_dtype=k.a.dtype, vector={"f32": 2.0 * k.M * k.N},
                    bytes_read=k.M * k.K * k.a.itemsize + k.K * k.N * k.b.itemsize, bytes_written=k.M * k.N * k.c.itemsize)

    def candidates(self) -> Columns:
        k = self.k
        grids = _grids(self.fig.tiles, k.M, len(self.bn_all) and k.N // self.bn_all[0])
        cols = product(grid=list(range(len(grids))), bm=self.bm_all, bn=self.bn_all, bk=self.bk_all,
                        order=[0, 1, 2], db=[0, 1])
        g = np.array(grids, dtype=np.int64)
        cols["gm"], cols["gn"] = g[cols["grid"], 0], g[cols["grid"], 1]
        del cols["grid"]
        # a tile never owns less than one block: larger splits leave tiles idle
        keep = (cols["bm"] * cols["gm"] <= max(k.M, 1) * 1) | (cols["gm"] == 1)
        keep &= (cols["bn"] * cols["gn"] <= k.N) | (cols["gn"] == 1)
        cols = take(cols, np.nonzero(keep)[0])
        cols["pp"] = np.zeros_like(cols["db"])  # panel prefetch: shared-panel orders only
        shared = self._shared_candidates()
        ring = ring_candidates(k, self.fig, *self._ring_blocks())
        return {n: np.concatenate([cols[n], shared[n], ring[n]]) for n in cols}

    def _ring_blocks(self) -> tuple[list[int], list[int]]:
        """Block sizes the ring form may use: the stick-aligned ones, and a ring group's whole
        share of N (a tile's columns, one block) or a divisor of its share of K (a chunk) when
        that share is not a whole number of sticks (N = 12800 over 32 tiles: 400 columns each),
        and the widths that cut a tile's columns into a few blocks as evenly as whole sticks allow
        (`space_ring.even_widths`: 896 columns in blocks of 320, 320 and 256, where the divisors
        of N give four blocks of 256, 256, 256 and 128, and each block passes A round the ring).
        An unaligned block's transfers are priced as the whole sticks they touch (`moved`)."""
        k = self.k
        shares = range(2, self.fig.tiles + 1)  # the ring groups' sizes (`space_ring.ring_candidates`)
        bn = set(self.bn_all) | {k.N // g for g in shares if k.N % g == 0}
        step = max(1, self.fig.granularity // max(k.b.itemsize, k.c.itemsize))
        for g in shares:
            if k.N % g == 0:
                bn |= even_widths(k.N // g, step)
        bk = set(self.bk_all)
        for g in shares:
            if k.K % g == 0 and not any((k.K // g) % d == 0 for d in self.bk_all):
                bk |= {d for d in divisors(k.K // g) if d % 8 == 0 and d >= 32}
        # chunks of less than a stick of K: smaller A chunks and B blocks in the ring's buffers leave
        # room for a larger accumulator (Granite's MLP at 2048 tokens: 1024 x 400 on grid [2, 16]
        # with chunks of 32, 1.115 of the bound on the timeline, against 1.209 for 512 x 576)
        a_step = max(1, self.fig.granularity // max(k.a.itemsize, k.b.itemsize))
        bk |= {d for d in divisors(k.K) if d % SUB_STICK == 0 and d < a_step}
        return sorted(bn), sorted(bk)

    def _shared_candidates(self) -> Columns:
        """Grid [T, 1]: tile t owns rows [t M/T, (t+1) M/T) of A (resident) and, for each column
        panel of B, rows [t K/T, (t+1) K/T) of the panel in its scratchpad; its K loop reads the
        panel's T parts through a distributed view, one part per step."""
        k = self.k
        ts = [t for t in divisors(self.fig.tiles) if t > 1 and k.M % t == 0 and k.K % t == 0 and k.K // t in self.bk_all]
        rows = [(t, k.M // t, k.K // t, bn, db, order, pp) for t in ts for bn in self.bn_all for db in (0, 1)
                for order in (SHARED, SHARED_STREAM) for pp in (0, 1)]
        arr = np.array(rows, dtype=np.int64).reshape(-1, 7)
        return {"bm": arr[:, 1], "bn": arr[:, 3], "bk": arr[:, 2], "order": arr[:, 5],
                "db": arr[:, 4], "gm": arr[:, 0], "gn": np.ones(len(rows), np.int64), "pp": arr[:, 6]}

    def _shared(self, c: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Cycles, scratchpad, global and ct_local bytes of the shared-panel schedule."""
        k, f = self.k, self.fig
        m = f.machine
        t = c["gm"].astype(np.float64)
        bm, bn, kp = c["bm"].astype(np.float64), c["bn"].astype(np.float64), c["bk"].astype(np.float64)
        db = c["db"].astype(bool)
        pp = c["pp"].astype(bool) if "pp" in c else db
        stream = c["order"] == SHARED_STREAM
        ea, eb, ec = k.a.itemsize, k.b.itemsize, k.c.itemsize
        n_blocks = k.N / bn
        a_blk = np.where(stream, bm * kp * ea, 0.0)
        part = kp * bn * eb
        hops = t / 4  # mean distance between two tiles of a contiguous run of t on a bidirectional ring
        link = min(m.topology.capacity.values()) if m.topology.capacity else f.dma_bw
        # every tile reads the t parts (one of them its own) of each panel; the ring carries the rest
        remote = m.dma_setup + hops * m.topology.hop_latency + part / f.dma_bw
        # the timeline gives each tile reading over a link an equal fixed share of it: a tile
        # reads its parts at link / (t - 1) on the busiest link of the run (static sharing)
        ring = part * np.maximum(t - 1, 1) / link
        a_load = f.transfer(a_blk)
        queue = np.maximum((remote + a_load) / f.engines, np.maximum(remote, a_load))
        channel = np.where(stream, f.transfer_fixed + t * f.rounded(a_blk) / f.global_bw, 0.0)
        fetch = np.maximum(np.maximum(queue, channel), ring)
        slice_copy = np.where(stream, 0.0, bm * kp * ea * 2 / f.local_bw)
        compute = bm * bn * kp / f.mac_rate(k.a.dtype) + f.matrix_startup + slice_copy
        kloop = np.where(db, fetch + t * np.maximum(compute, fetch), t * (compute + fetch))
        barrier = 2 * (m.dma_setup + m.topology.hop_latency * t / 2)  # a reduce then a broadcast over t tiles
        load_part = f.load_step([part], t)
        keep_part = m.local_latency + part / f.local_bw  # the loaded part, stored into the tile's scratchpad
        epilogue = 2 * (bm * bn / f.vector_rate("f32") + f.vector_startup) + f.load_step([bm * bn * ec], t)
        # double-buffered, the next panel's part is loaded from memory during this panel's K loop
        per_panel = np.where(pp, keep_part + np.maximum(kloop, load_part), load_part + keep_part + kloop)
        cycles = (np.where(stream, 0.0, f.load_step([bm * k.K * ea], t)) + np.where(pp, load_part, 0.0)
                  + n_blocks * (per_panel + epilogue + 2 * barrier))
        buffers = stream_buffers(db)
        a_mem = np.where(stream, buffers * bm * kp * ea, bm * k.K * ea + bm * kp * ea)
        scratch = a_mem + np.where(pp, 2.0, 1.0) * part + buffers * part + bm * bn * 4 + bm * bn * ec
        a_bytes = np.where(stream, k.M * k.K * ea * n_blocks + np.where(db, n_blocks * t * bm * kp * ea, 0.0),
                           k.M * k.K * ea)
        gbytes = a_bytes + k.K * k.N * eb + k.M * k.N * ec + np.where(pp, t * part, 0.0)  # + the unused prefetches
        local = gbytes + t * k.K * k.N * eb + np.where(stream, 0.0, 2 * k.M * k.N * k.K * ea / bn)
        return cycles, scratch, gbytes, local

    def evaluate(self, c: Columns) -> Evaluated:
        k, f = self.k, self.fig
        bm, bn, bk = (c[n].astype(np.float64) for n in ("bm", "bn", "bk"))
        gm, gn, order, db = c["gm"], c["gn"], c["order"], c["db"].astype(bool)
        ea, eb, ec = k.a.itemsize, k.b.itemsize, k.c.itemsize
        mb, nb = k.M / bm, k.N / bn
        mt, nt = np.ceil(mb / gm), np.ceil(nb / gn)
        active = np.minimum(gm, mb) * np.minimum(gn, nb)
        ks = k.K / bk
        a_res, b_res = order == 1, order == 2
        # bytes a block moves: whole granules per contiguous run (a transposed operand's block is many short runs)
        a_step = np.where(a_res, 0.0, moved(k.a, (bm, bk), f.granularity))
        b_step = np.where(b_res, 0.0, moved(k.b, (bk, bn), f.granularity))
        load = f.load_step([a_step, b_step], active)
        slice_copy = (np.where(a_res, bm * bk * ea, 0.0) + np.where(b_res, bk * bn * eb, 0.0)) * 2 / f.local_bw
        compute = bm * bn * bk / f.mac_rate(k.a.dtype) + f.matrix_startup + slice_copy
        kloop = np.where(db, load + ks * np.maximum(compute, load), ks * (compute + load))
        vrate = f.vector_rate("f32")
        epilogue = 2 * (bm * bn / vrate + f.vector_startup) + f.load_step([moved(k.c, (bm, bn), f.granularity)], active)
        resident = (np.where(a_res, mt * f.load_step([moved(k.a, (bm, np.full_like(bm, k.K)), f.granularity)], active), 0.0)
                    + np.where(b_res, nt * f.load_step([moved(k.b, (np.full_like(bn, k.K), bn), f.granularity)], active), 0.0))
        cycles = mt * nt * (kloop + epilogue) + resident
        buffers = stream_buffers(db)
        a_mem = np.where(a_res, bm * k.K * ea + bm * bk * ea, buffers * bm * bk * ea)
        b_mem = np.where(b_res, k.K * bn * eb + bk * bn * eb, buffers * bk * bn * eb)
        scratch = bm * bn * 4 + bm * bn * ec + a_mem + b_mem  # accumulator (updated in place), rounded result
        extra = np.where(db, mb * nb, 0.0)  # the last prefetch of each K loop is redundant
        a_bytes = np.where(a_res, k.M * k.K * ea * np.minimum(gn, nb), k.M * k.K * ea * nb + extra * bm * bk * ea)
        b_bytes = np.where(b_res, k.K * k.N * eb * np.minimum(gm, mb), k.K * k.N * eb * mb + extra * bk * bn * eb)
        gbytes = a_bytes + b_bytes + k.M * k.N * ec
        local = gbytes + np.where(order > 0, 2 * (k.M * k.N * k.K) * (ea / bn * a_res + eb / bm * b_res), 0.0)
        shared = (order >= SHARED) & (order != RING)
        # fresh arrays (computed above): filled in place, not copied
        cycles, scratch, gbytes, local = (np.asarray(v, dtype=np.float64) for v in (cycles, scratch, gbytes, local))
        if shared.any():
            idx = np.nonzero(shared)[0]
            cycles[idx], scratch[idx], gbytes[idx], local[idx] = self._shared(take(c, idx))
        ring = order == RING
        if ring.any():
            idx = np.nonzero(ring)[0]
            rc, rs, rg, rl = ring_cost(k, f, take(c, idx), lambda o, blk: moved(o, blk, f.granularity))
            cycles[idx], scratch[idx], gbytes[idx], local[idx] = rc, rs, rg, rl
        return Evaluated(cycles, scratch, gbytes, local)

    def baseline(self) -> dict[str, int]:
        """Even split over the tiles (columns first), whole blocks, halved greedily until they fit."""
        k, tiles = self.k, self.fig.tiles
        gn = max(d for d in divisors(tiles) if k.N // self.bn_all[0] >= d)
        gm = max(d for d in divisors(tiles // gn) if d <= k.M)
        pick = {"gm": gm, "gn": gn, "bm": _at_most(self.bm_all, -(-k.M // gm)), "bn": _at_most(self.bn_all, -(-k.N // gn)),
                "bk": self.bk_all[-1], "order": 0, "db": 0, "pp": 0}
        return _shrink(self, pick, ("bk", "bn", "bm"), {"bm": self.bm_all, "bn": self.bn_all, "bk": self.bk_all})

    def describe(self, p: dict[str, int]) -> Schedule:
        k = self.k
        a_mode = "resident" if p["order"] in (1, SHARED) else ("double-buffered" if p["db"] else "streamed")
        a_block = [p["bm"], k.K] if p["order"] in (1, SHARED) else [p["bm"], p["bk"]]
        b_mode = "resident" if p["order"] == 2 else ("double-buffered" if p["db"] else "streamed")
        if p["order"] == RING:
            return Schedule(
                grid=[p["gm"], p["gn"]], splits={"M": p["gm"], "N": p["gn"], "K": 1},
                tile_sizes={"M": p["bm"], "N": p["bn"], "K": p["bk"]}, loop_order=describe_ring(p, k),
                double_buffered=False,
                placements=[
                    Placement(tensor=k.a.arg, memory="ct_local", mode="streamed", block=[p["bm"], p["bk"]]),
                    Placement(tensor=k.b.arg, memory="ct_local", mode="streamed", block=[p["bk"], p["bn"]]),
                    Placement(tensor=k.c.arg, memory="global", mode="output", block=[p["bm"], p["bn"]]),
                ])
        if p["order"] >= SHARED:
            return Schedule(
                grid=[p["gm"], 1], splits={"M": p["gm"], "N": 1, "K": p["gm"]},
                tile_sizes={"M": p["bm"], "N": p["bn"], "K": p["bk"]},
                loop_order=ORDERS[p["order"]] + (", next panel prefetched" if p.get("pp") else ""),
                double_buffered=bool(p["db"]),
                placements=[
                    Placement(tensor=k.a.arg, memory="ct_local", mode=a_mode, block=a_block),
                    Placement(tensor=k.b.arg, memory="ct_local", mode="double-buffered" if p["db"] else "streamed",
                              block=[p["bk"], p["bn"]]),
                    Placement(tensor=k.c.arg, memory="global", mode="output", block=[p["bm"], p["bn"]]),
                ])
        return Schedule(
            grid=[p["gm"], p["gn"]], splits={"M": p["gm"], "N": p["gn"], "K": 1},
            tile_sizes={"M": p["bm"], "N": p["bn"], "K": p["bk"]}, loop_order=ORDERS[p["order"]],
            double_buffered=bool(p["db"]),
            placements=[
                Placement(tensor=k.a.arg, memory="ct_local", mode=a_mode,
                          block=[p["bm"], k.K if p["order"] == 1 else p["bk"]]),
                Placement(tensor=k.b.arg, memory="ct_local", mode=b_mode,
                          block=[k.K if p["order"] == 2 else p["bk"], p["bn"]]),
                Placement(tensor=k.c.arg, memory="global", mode="output", block=[p["bm"], p["bn"]]),
            ])

    def fit_message(self) -> str:
        k = self.k
        bm, bn, bk = self.bm_all[0], self.bn_all[0], self.bk_all[0]
        need = bm * bn * 4 + bm * bn * k.c.itemsize + bm * bk * k.a.itemsize + bk * bn * k.b.itemsize
        return (f"the smallest matmul blocks (f32 accumulator {bm}x{bn}, {k.a.arg} block {bm}x{bk}, {k.b.arg} block "
                f"{bk}x{bn}) need {need} bytes of ct_local scratchpad; a tile has {self.fig.local_capacity}")


def _at_most(options: list[int], limit: int) -> int:
    fitting = [o for o in options if o <= limit]
    return fitting[-1] if fitting else options[0]


def _shrink(space: MatmulSpace | RowSpace, pick: dict[str, int], order: tuple[str, ...],
            options: dict[str, list[int]]) -> dict[str, int]:
    """Halve (to the next smaller legal size) the dimensions in turn until the schedule fits."""
    cap = space.fig.local_capacity
    turn = 0
    while True:
        cols = {key: np.array([v]) for key, v in pick.items()}
        if space.evaluate(cols).scratch[0] <= cap:
            return pick
        for _ in order:
            key = order[turn % len(order)]
            turn += 1
            smaller = [o for o in options[key] if o <= pick[key] // 2]
            if smaller:
                pick[key] = smaller[-1]
                break
        else:
            return pick  # nothing left to shrink: the caller reports it does not fit


# ---------------------------------------------------------------------- rowwise


class RowSpace:
    """Row-block kernels: tiles g over the rows, rb rows per block, double buffering."""

    near_ties = 0.01  # the replay's error against the timeline: closer schedules are not told apart

    def tie_key(self, c: Columns) -> np.ndarray:
        """Blocks per tile: among near ties, the fewest (fewer ops to issue, a shorter program)."""
        return np.ceil(self.k.R / c["rb"] / c["g"])

    def __init__(self, k: RowKernel, fig: Figures) -> None:
        self.k, self.fig = k, fig
        self.rb_all = [k.block] if k.fixed_block else divisors(k.R)

    def _row_bytes(self, ops: list) -> float:  # type: ignore[type-arg]
        return float(sum(math.prod(o.shape) * o.itemsize for o in ops))

    def work(self) -> Work:
        k = self.k
        return Work(vector={d: e * k.R for d, e in k.vector_per_row.items()},
                    transcendental={d: e * k.R for d, e in k.transcendental_per_row.items()},
                    bytes_read=k.R * self._row_bytes(k.streamed) + sum(math.prod(o.shape) * o.itemsize for o in k.resident),
                    bytes_written=k.R * self._row_bytes(k.outputs))

    def records(self, p: dict[str, int]) -> int:
        """About how many records the rewrite of `p` traces: per block, its loads, stores and vector
        ops, and a few index computations; per tile, its resident loads."""
        k = self.k
        steps = -(-(k.R // p["rb"]) // p["g"])
        per_block = len(k.streamed) + len(k.outputs) + k.vector_ops + 8
        return int(p["g"] * (steps * per_block + len(k.resident) + 8))

    def candidates(self) -> Columns:
        cols = product(g=list(range(1, self.fig.tiles + 1)), rb=self.rb_all, db=[0, 1])
        keep = cols["g"] * cols["rb"] <= self.k.R
        return take(cols, np.nonzero(keep)[0])

    def evaluate(self, c: Columns) -> Evaluated:
        k, f = self.k, self.fig
        g, rb, db = c["g"].astype(np.float64), c["rb"].astype(np.float64), c["db"].astype(bool)
        blocks = k.R / rb
        steps = np.ceil(blocks / g)
        active = np.minimum(g, blocks)
        ins = [rb * math.prod(o.shape) * o.itemsize for o in k.streamed]
        outs = [rb * math.prod(o.shape) * o.itemsize for o in k.outputs]
        compute = k.vector_ops * f.vector_startup + sum(
            rb * e / f.vector_rate(d) for d, e in k.vector_per_row.items()) + sum(
            rb * e / f.vector_rate(d, True) for d, e in k.transcendental_per_row.items())
        # replayed on the timeline's rules: transfers hold DMA engines through their latency, and each
        # vector op is one pass over its largest tensor (`row_pipeline`)
        if k.passes:
            compute = sum(np.ceil(rb * e / f.machine.vector_rate(d, t)[0]) + f.vector_startup for d, t, e in k.passes)
        cycles = row_cycles(f, steps, active, ins, outs, [float(math.prod(o.shape) * o.itemsize) for o in k.resident],
                            np.asarray(compute, dtype=np.float64) + np.zeros_like(g), db)
        in_row = self._row_bytes(k.streamed)
        scratch = rb * k.live_bytes_per_row + np.where(db | (BUFFERS > 1), rb * in_row, 0.0) + k.resident_bytes
        res_bytes = sum(math.prod(o.shape) * o.itemsize for o in k.resident)
        gbytes = k.R * (in_row + self._row_bytes(k.outputs)) + active * res_bytes
        return Evaluated(cycles, scratch, gbytes, gbytes.copy())

    def baseline(self) -> dict[str, int]:
        k = self.k
        g = min(self.fig.tiles, k.R)
        pick = _shrink(self, {"g": g, "rb": _at_most(self.rb_all, -(-k.R // g)), "db": 0}, ("rb",), {"rb": self.rb_all})
        # a fixed block may leave fewer blocks than tiles: no more tiles than blocks (the table's rule)
        pick["g"] = max(1, min(pick["g"], k.R // pick["rb"]))
        return pick

    def describe(self, p: dict[str, int]) -> Schedule:
        k = self.k
        mode = "double-buffered" if p["db"] else "streamed"
        places = [Placement(tensor=o.arg, memory="ct_local", mode=mode, block=[p["rb"], *o.shape]) for o in k.streamed]
        places += [Placement(tensor=o.arg, memory="ct_local", mode="resident", block=list(o.shape)) for o in k.resident]
        places += [Placement(tensor=o.arg, memory="global", mode="output", block=[p["rb"], *o.shape]) for o in k.outputs]
        return Schedule(grid=[p["g"]], splits={"R": p["g"]}, tile_sizes={"R": p["rb"]}, loop_order="rows",
                        double_buffered=bool(p["db"]), placements=places)

    def fit_message(self) -> str:
        k = self.k
        parts = [f"a row of {o.arg} ({math.prod(o.shape) * o.itemsize} bytes)" for o in k.streamed + k.outputs]
        parts.append(f"the row loop's intermediate tensors ({k.live_bytes_per_row} bytes per row)")
        if k.resident:
            parts.append("the data loaded before the loop: " + ", ".join(
                f"{o.arg} ({math.prod(o.shape) * o.itemsize} bytes)" for o in k.resident))
        return (f"even a 1-row block does not fit the {self.fig.local_capacity}-byte ct_local scratchpad of a tile: "
                f"{k.live_bytes_per_row + k.resident_bytes} bytes are needed for " + "; ".join(parts))


# ---------------------------------------------------------------------- attention


class AttentionSpace:
    """Flash-style attention per KV head: query blocks bq, KV blocks bkv, KV split s (partial
    results combined over the ring), double buffering of the K/V stream.

    Causal: a query block runs the KV steps up to its last token's block (key blocks past it
    are skipped, the diagonal blocks are masked), so blocks late in the sequence cost more;
    the model counts each tile's steps with the rewrite's own assignment of blocks to tiles
    (`emit_attention.block_of`) and charges the busiest tile. The bound counts the unmasked
    pairs exactly: T (T + 1) / 2 per query head of T tokens.
    """

    def __init__(self, k: AttentionKernel, fig: Figures) -> None:
        self.k, self.fig = k, fig
        g = k.group if k.causal else 1  # a causal block holds the group's query heads at bq / g tokens
        self.bq_all = [g * t for t in divisors(k.rows // g)]
        self.bkv_all = aligned_blocks(k.kv_len, k.itemsize, fig.granularity)
        self._loads: dict[tuple[int, int, int], tuple[float, float, float]] = {}

    def _pairs(self) -> float:
        k = self.k
        if not k.causal:
            return float(k.kv_heads * k.rows * k.kv_len)
        t = k.tokens
        return float(k.kv_heads * k.group * t * (t + 1) // 2)

    def _tile_load(self, bq: int, bkv: int, s: int) -> tuple[float, float, float]:
        """(KV steps of the busiest tile, query blocks per tile, KV steps of all tiles) for one
        block shape, following the rewrite's assignment of query blocks and KV splits to tiles."""
        key = (bq, bkv, s)
        found = self._loads.get(key)
        if found is not None:
            return found
        from .emit_attention import attention_grid, dealt_in_snake

        k, tiles = self.k, self.fig.tiles
        blocks = k.rows // bq
        n = k.kv_heads * blocks
        stride = attention_grid(k, bq, s, tiles) // s
        u = np.arange(n)
        r, p = np.divmod(u, stride)
        if dealt_in_snake(k, bq, s, tiles):  # `emit_attention.block_of`
            v = r * stride + np.where(r % 2 == 1, stride - 1 - p, p)
            qb = blocks - 1 - v // k.kv_heads
        else:
            qb = u % blocks
        tb = bq // k.group if k.causal else bq
        L = k.kv_len
        end = np.minimum(-(-((qb + 1) * tb) // bkv) * bkv, L) if k.causal else np.full(n, L)
        part = L // s
        busiest, total = 0.0, 0.0
        for i in range(s):
            steps = np.maximum(0, np.minimum(end, (i + 1) * part) - i * part) // bkv
            per_group = np.bincount(p, weights=steps, minlength=stride)
            busiest, total = max(busiest, float(per_group.max())), total + float(steps.sum())
        found = self._loads[key] = (busiest, float(-(-n // stride)), total)
        return found

    def records(self, p: dict[str, int]) -> int:
        """About how many records the rewrite of `p` traces (to know whether its timeline can be
        simulated in the time left): per tile, a dozen per KV step and a few dozen per query block."""
        steps, per_tile, _ = self._tile_load(p["bq"], p["bkv"], p.get("s", 1))
        units = self.k.kv_heads * (self.k.rows // p["bq"]) * p.get("s", 1)
        return int(min(units, self.fig.tiles) * (14 * steps + 40 * per_tile))

    def work(self) -> Work:
        k = self.k
        pairs = self._pairs()
        e = k.itemsize
        return Work(macs=2 * pairs * k.head_dim, mac_dtype=k.dtype, vector={"f32": 4 * pairs},
                    transcendental={"f32": pairs},
                    bytes_read=k.kv_heads * (k.rows + 2 * k.kv_len) * k.head_dim * e,
                    bytes_written=k.kv_heads * k.rows * k.head_dim * e)

    def candidates(self) -> Columns:
        # a split's tiles form whole groups of the grid (`emit_attention.attention_grid`)
        splits = [s for s in (1, 2, 4, 8, 16, 32) if s <= min(self.fig.tiles, self.k.max_kv_split) and self.fig.tiles % s == 0]
        cols = product(bq=self.bq_all, bkv=self.bkv_all, s=splits, db=[0, 1])
        keep = (self.k.kv_len // cols["bkv"]) % cols["s"] == 0
        # with a KV split every tile joins each combine: each group of tiles runs as many query blocks
        units = self.k.kv_heads * (self.k.rows // cols["bq"])
        grid = np.where(units * cols["s"] <= self.fig.tiles, units * cols["s"], self.fig.tiles // cols["s"] * cols["s"])
        keep &= (cols["s"] == 1) | (units % np.maximum(grid // cols["s"], 1) == 0)
        return take(cols, np.nonzero(keep)[0])

    def evaluate(self, c: Columns) -> Evaluated:
        k, f = self.k, self.fig
        bq, bkv, s, db = c["bq"].astype(np.float64), c["bkv"].astype(np.float64), c["s"].astype(np.float64), c["db"].astype(bool)
        e, d = k.itemsize, k.head_dim
        units = k.kv_heads * (k.rows / bq) * s
        tiles = np.minimum(units, f.tiles)
        loads = np.array([self._tile_load(int(a), int(b_), int(c_))
                          for a, b_, c_ in zip(c["bq"], c["bkv"], c["s"], strict=True)]).reshape(-1, 3)
        steps, per_tile, all_steps = loads[:, 0], loads[:, 1], loads[:, 2]
        kv = f.load_step([bkv * d * e, bkv * d * e], tiles)
        mat = 2 * bq * bkv * d / f.mac_rate(k.dtype) + 2 * f.matrix_startup  # the two products of a step
        vec = (4 * bq * bkv / f.vector_rate("f32") + bq * bkv / f.vector_rate("f32", True)
               + 2 * bq * d / f.vector_rate("f32") + 6 * f.vector_startup)  # its softmax
        # double buffered, one KV split: the rewrite computes the next block's scores while this
        # block's softmax runs, so a step costs the busier unit, plus one exposed softmax per block
        pipelined = db & (s == 1)
        compute = np.where(pipelined, np.maximum(mat, vec), mat + vec)
        exposed = np.where(pipelined, per_tile * vec, 0.0)
        # the busiest tile. Without double buffering every transfer waits for the compute before
        # it and the other way round. With it, the next query block's Q and first K/V blocks (and,
        # with one KV split, the previous block's O) move while a block computes: the tile takes
        # the longer of its compute and its transfers, after the first block's loads.
        q_io = f.load_step([bq * d * e], tiles)  # one Q load or O store
        link = f.machine.topology.capacity and min(f.machine.topology.capacity.values()) or f.dma_bw
        combine = np.where(s > 1, np.log2(s) * (f.machine.dma_setup + bq * (d + 2) * 4 / link
                                                 + bq * d * 3 / f.vector_rate("f32")), 0.0)
        # without double buffering in the program, the timeline still gives each load two buffers
        # (`ktir.targets.timeline.BUFFERS`): the next step's K/V move during this step's compute. Each
        # query block's O store waits for its compute, and the next block's Q and first K/V queue
        # behind it on the tile's port; its first step's transfer and the last step's compute are not
        # overlapped
        serial = steps * np.maximum(compute, kv) + per_tile * (2 * q_io + np.minimum(compute, kv) + combine)
        # after the first block's Q and K/V loads, the tile's transfers (every K/V step, and the Q
        # loads and, one KV split, the O stores of the other blocks) move while it computes; the
        # last O store (with a KV split: every block's combine and store) follows
        background = (per_tile - 1) * np.where(s > 1, q_io, 2 * q_io)
        overlapped = q_io + kv + np.maximum(steps * compute + exposed, steps * kv + background) \
            + np.where(s > 1, per_tile * (q_io + combine), q_io)
        cycles = np.where(db, overlapped, serial)
        buffers = stream_buffers(db)
        # what the rewrite holds at once (its timeline peak, `test_sched_attention_timeline`): Q and the
        # next query block's (prefetched, or loaded ahead into the stream's second buffer), one O,
        # the accumulator and the product writing the next one, the scores of this key block and the
        # next (the softmax updates them in place) and the zero block filled ahead for a third, P
        # rounded, the m and l vectors; pipelined, the K/V stream `depth` blocks ahead (the loop
        # carries them, one more of each is loading, and the next query block's first two), else
        # a block of K and of V in each of the stream's buffers, and the next query block's first
        # ones. A KV split adds the partner's partial accumulator and the combined one.
        from .emit_attention import DEPTH

        kv_blocks = np.where(pipelined, 2 * DEPTH + 4, 2 * buffers + 2)
        scratch = (buffers * bq * d * e + bq * d * e + 2 * bq * d * 4 + 3 * bq * bkv * 4 + bq * bkv * e + 8 * bq * 4
                   + kv_blocks * bkv * d * e + np.where(s > 1, 2 * bq * d * 4, 0.0))
        gbytes = all_steps * 2 * bkv * d * e + k.kv_heads * k.rows * d * e * (1 + s)
        return Evaluated(cycles, scratch, gbytes, gbytes.copy())

    def baseline(self) -> dict[str, int]:
        k = self.k
        pick = {"bq": _at_most(self.bq_all, max(1, k.rows * k.kv_heads // self.fig.tiles)), "bkv": self.bkv_all[-1],
                "s": 1, "db": 0}
        return _shrink(self, pick, ("bkv", "bq"), {"bq": self.bq_all, "bkv": self.bkv_all})  # type: ignore[arg-type]

    def describe(self, p: dict[str, int]) -> Schedule:
        k = self.k
        units = k.kv_heads * (k.rows // p["bq"]) * p["s"]
        return Schedule(grid=[min(units, self.fig.tiles)], splits={"heads": k.kv_heads, "rows": k.rows // p["bq"], "kv": p["s"]},
                        tile_sizes={"rows": p["bq"], "kv": p["bkv"]}, loop_order="heads,rows,kv",
                        double_buffered=bool(p["db"]), placements=[
                            Placement(tensor="q", memory="ct_local", mode="resident", block=[p["bq"], k.head_dim]),
                            Placement(tensor="k", memory="ct_local", mode="double-buffered" if p["db"] else "streamed",
                                      block=[p["bkv"], k.head_dim]),
                            Placement(tensor="v", memory="ct_local", mode="double-buffered" if p["db"] else "streamed",
                                      block=[p["bkv"], k.head_dim]),
                            Placement(tensor="o", memory="global", mode="output", block=[p["bq"], k.head_dim])])

    def fit_message(self) -> str:
        return f"the smallest attention blocks do not fit the {self.fig.local_capacity}-byte scratchpad"


Space = MatmulSpace | RowSpace | AttentionSpace
