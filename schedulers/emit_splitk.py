"""Split-K matmul: the reduction divided over tiles, partial sums combined with `ktdp.inter_tile_reduce`.

When the output has too few blocks to occupy the tiles (decode matmuls, M = 1), or each
output block needs a long K loop, the K dimension is split `sk` ways. Grid `[gn * sk]`:
tile t is split s = t mod sk of column group j = t / sk. For each of its output blocks
(rows m, columns n; the column blocks of group j are n = j bn, j bn + gn bn, ...) the tile
runs the K loop over its share [s K/sk, (s + 1) K/sk) into an f32 accumulator, optionally
double-buffered (the next A and B blocks carried as iter_args), then the sk tiles of the
group produce their partials and `ktdp.inter_tile_reduce` adds them on the group's first
tile (reduce-to-one), which rounds and stores the block. Every tile of a group runs the
same loops, so each iteration's future has all its producers.

`SplitKSpace` adds these schedules (column `sk` > 1) to the matmul space under the same cost
model: the K loop as in the matmul space, plus, per output block, the first tile's receipt of the
other partials (at the timeline's fixed share of the links each crosses in its default sharing
mode, `space_ring.link_shares`) and their sum, and the partial-sum buffers in the scratchpad.
"""

from __future__ import annotations

import math

import numpy as np

from ktir.builder import Builder, Value, located
from ktir.dialects.names import Arith, Linalg
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from . import space_ringsplit
from .cost import Figures
from .emit_ringsplit import emit_ringsplit
from .emit_shared import arguments, sum_on_first_tile
from .kernels import MatmulKernel, Operand
from .report import Placement, Schedule
from .sets import box, group_first, group_tiles, projection, scalar
from .space_ring import RING, link_shares
from .spaces import Columns, Evaluated, MatmulSpace, moved, stream_buffers, take
from .spaces import product as _product

SPLITS = (2, 4, 8, 16, 32, 64)


def _plain(o: Operand) -> bool:
    """A row-major view at the argument's address (what the split-K rewrite emits)."""
    strides = getattr(o, "strides", ())
    row_major = tuple(math.prod(o.shape[i + 1:]) for i in range(len(o.shape)))
    return not getattr(o, "offset", 0) and strides in ((), row_major)


def _partial_rate(fig: Figures, groups: int, sk: int) -> float:
    """Bytes per cycle of the slowest partial sent to a group's first tile (grid [groups * sk])."""
    flows = tuple((q * sk + s, q * sk) for q in range(groups) for s in range(1, sk))
    return min(link_shares(fig.machine, groups * sk, flows)[1])


class SplitKSpace(MatmulSpace):
    """The matmul space plus split-K schedules (`sk` > 1, grid [gn * sk], M not split)."""

    def _split_candidates(self) -> Columns:
        k, tiles = self.k, self.fig.tiles
        if not all(_plain(o) for o in (k.a, k.b, k.c)) or k.init != 0.0:
            return {}  # (partials start from 0: a non-zero start of C would be added once per split)
        sks = [s for s in SPLITS if s <= tiles and k.K % s == 0]
        if not sks:
            return {}
        cols = _product(sk=sks, gn=list(range(1, tiles // 2 + 1)), bm=self.bm_all, bn=self.bn_all,
                        bk=self.bk_all, db=[0, 1])
        keep = (cols["gn"] * cols["sk"] <= tiles) & ((k.K // cols["sk"]) % cols["bk"] == 0)
        keep &= (cols["gn"] == 1) | (cols["gn"] * cols["bn"] <= k.N)  # no group without a column block
        cols = take(cols, np.nonzero(keep)[0])
        n = cols["sk"].size
        cols.update(gm=np.ones(n, np.int64), order=np.zeros(n, np.int64), pp=np.zeros(n, np.int64))
        return cols

    def candidates(self) -> Columns:
        base = super().candidates()
        base["sk"] = np.ones_like(base["bm"])
        base["rs"] = np.zeros_like(base["bm"])  # split ring: partials reduce-scattered (space_ringsplit)
        split = self._split_candidates()
        rings = space_ringsplit.candidates(self.k, self.fig, *self._ring_blocks())
        for extra in (split, rings):
            if extra and extra["sk"].size:
                # a column the matmul space adds later is off (0) in the split rows, which do not read it
                n = extra["sk"].size
                base = {c: np.concatenate([base[c], extra.get(c, np.zeros(n, np.int64))]) for c in base}
        return base

    def _evaluate_split(self, c: Columns) -> Evaluated:
        k, f = self.k, self.fig
        m = f.machine
        bm, bn, bk, sk, gn = (c[n].astype(np.float64) for n in ("bm", "bn", "bk", "sk", "gn"))
        db = c["db"].astype(bool)
        ea, eb, ec = k.a.itemsize, k.b.itemsize, k.c.itemsize
        mb, nb = k.M / bm, k.N / bn
        nt = np.ceil(nb / gn)
        groups = np.minimum(gn, nb)
        active = groups * sk
        steps = k.K / sk / bk
        load = f.load_step([bm * bk * ea, bk * bn * eb], active)
        compute = bm * bn * bk / f.mac_rate(k.a.dtype) + f.matrix_startup
        kloop = np.where(db, load + steps * np.maximum(compute, load), steps * (compute + load))
        vrate = f.vector_rate("f32")
        # the group's first tile receives the other sk - 1 partials in one data phase (each over its
        # own route, at the timeline's fixed share of the links it crosses), then adds them
        pairs, where = np.unique(np.stack([groups, sk]), axis=1, return_inverse=True)
        rate = np.array([_partial_rate(f, int(a), int(b)) for a, b in pairs.T])[where.reshape(-1)]
        combine = (m.dma_setup + m.topology.hop_latency * (sk - 1) + bm * bn * 4 / rate
                   + (sk - 1) * (bm * bn / vrate + f.vector_startup))
        epilogue = 2 * (bm * bn / vrate + f.vector_startup) + f.load_step([bm * bn * ec], groups)
        cycles = mb * nt * (kloop + combine + epilogue)
        buffers = stream_buffers(db)
        scratch = 3 * bm * bn * 4 + bm * bn * ec + buffers * (bm * bk * ea + bk * bn * eb)
        extra = np.where(db, mb * nb * sk, 0.0)  # each K loop's last prefetch is redundant
        gbytes = (k.M * k.K * ea * nb + k.K * k.N * eb * mb + k.M * k.N * ec
                  + extra * (bm * bk * ea + bk * bn * eb))
        local = gbytes + 2 * (sk - 1) * k.M * k.N * 4
        return Evaluated(cycles, scratch, gbytes, local)

    def evaluate(self, c: Columns) -> Evaluated:
        sk = c.get("sk")
        plain = {n: v for n, v in c.items() if n != "sk"}
        if sk is None or not (sk > 1).any():
            return super().evaluate(plain)
        ring = (sk > 1) & (c["order"] == RING)
        split, rest = np.nonzero((sk > 1) & ~ring)[0], np.nonzero(sk <= 1)[0]
        out = Evaluated(*(np.zeros(sk.size) for _ in range(4)))
        parts = [(split, self._evaluate_split(take(c, split)))] if split.size else []
        if ring.any():
            idx = np.nonzero(ring)[0]
            f = self.fig
            parts.append((idx, Evaluated(*space_ringsplit.cost(self.k, f, take(c, idx),
                                                                 lambda o, blk: moved(o, blk, f.granularity)))))
        if rest.size:
            parts.append((rest, super().evaluate(take(plain, rest))))
        for idx, part in parts:
            for name in ("cycles", "scratch", "global_bytes", "local_bytes"):
                getattr(out, name)[idx] = getattr(part, name)
        return out

    def baseline(self) -> dict[str, int]:
        return {**super().baseline(), "sk": 1, "rs": 0}

    def describe(self, p: dict[str, int]) -> Schedule:
        if p.get("sk", 1) <= 1:
            return super().describe({n: v for n, v in p.items() if n != "sk"})
        k = self.k
        if p.get("order") == RING:
            return Schedule(
                grid=[p["sk"], p["gn"]], splits={"M": 1, "N": p["gn"], "K": p["sk"]},
                tile_sizes={"M": p["bm"], "N": p["bn"], "K": p["bk"]},
                loop_order=(f"ring with K split {p['sk']} ways: tile (s, j) owns C's columns [j*{k.N // p['gn']}, "
                            f"+{k.N // p['gn']}) and K's share [s*{k.K // p['sk']}, +{k.K // p['sk']}); for each block of "
                            f"{p['bn']} columns, A's chunks ({p['bm']}x{p['bk']}) go round the {p['gn']} tiles of split s "
                            f"while each streams its B blocks ({p['bk']}x{p['bn']}) from memory, then the {p['sk']} "
                            + ("partials are reduce-scattered (inter_tile_reduce): tile s adds and stores every "
                               f"{p['sk']}th chunk of rows" if space_ringsplit.scatters(k, {n: np.array([v]) for n, v in p.items()})[0]
                               else "partials are added by inter_tile_reduce on the split-0 tile, which stores the block")),
                double_buffered=False,
                placements=[Placement(tensor=k.a.arg, memory="ct_local", mode="streamed", block=[p["bm"], p["bk"]]),
                            Placement(tensor=k.b.arg, memory="ct_local", mode="streamed", block=[p["bk"], p["bn"]]),
                            Placement(tensor=k.c.arg, memory="global", mode="output", block=[p["bm"], p["bn"]])])
        mode = "double-buffered" if p["db"] else "streamed"
        return Schedule(
            grid=[p["gn"] * p["sk"]], splits={"M": 1, "N": p["gn"], "K": p["sk"]},
            tile_sizes={"M": p["bm"], "N": p["bn"], "K": p["bk"]},
            loop_order=f"m,n,k with K split {p['sk']} ways, partials added by inter_tile_reduce on the group's first tile",
            double_buffered=bool(p["db"]),
            placements=[Placement(tensor=k.a.arg, memory="ct_local", mode=mode, block=[p["bm"], p["bk"]]),
                        Placement(tensor=k.b.arg, memory="ct_local", mode=mode, block=[p["bk"], p["bn"]]),
                        Placement(tensor=k.c.arg, memory="global", mode="output", block=[p["bm"], p["bn"]])])


def emit_splitk(k: MatmulKernel, fn: Operation, p: dict[str, int]) -> Module:
    if p.get("order") == RING:
        return emit_ringsplit(k, fn, p)
    gn, sk, bm, bn, bk, db = (p[n] for n in ("gn", "sk", "bm", "bn", "bk", "db"))
    M, N, K = k.M, k.N, k.K
    ks = K // sk
    ta, tb, tc = scalar(k.a.dtype), scalar(k.b.dtype), scalar(k.c.dtype)
    acc_t = ty.tensor((bm, bn), ty.F32)
    b = Builder()
    b.note("scheduled by ktir schedule: K split over tiles, partial sums added by inter_tile_reduce (see the report)")
    sets = {"a": box(M, K), "b": box(K, N), "c": box(M, N), "ablk": box(bm, bk), "bblk": box(bk, bn),
            "cblk": box(bm, bn), "id2": projection(2), "group": group_tiles(sk), "first": group_first(sk),
            "groups": box(gn)}
    A = {n: b.alias(f"sk_{n}", v) for n, v in sets.items()}
    with b.func(k.name, arguments(b, fn), grid=[gn * sk]) as params:
        arg = {a.name[1:]: a for a in params}
        c = {n: b.index(v, f"sk_{n}") for n, v in
             (("c0", 0), ("sk", sk), ("bm", bm), ("bn", bn), ("bk", bk), ("ks", ks), ("M", M), ("N", N),
              ("nstep", gn * bn))}
        zero = b.constant(at.FloatAttr(value=0.0, type=ty.F32), name="sk_zero")
        (tid,) = b.tile_id(1, ["sk_tid"])
        j = b.arith.divui(tid, c["sk"], name="sk_j")
        s = b.arith.remui(tid, c["sk"], name="sk_s")
        k0 = b.arith.muli(s, c["ks"], name="sk_k0")
        kend = b.arith.addi(k0, c["ks"], name="sk_kend")
        klast = b.arith.subi(kend, c["bk"], name="sk_klast")
        n0 = b.arith.muli(j, c["bn"], name="sk_n0")
        first = b.cmp(Arith.cmpi, "eq", s, c["c0"], name="sk_first")
        views = {v: b.memory_view(arg[o.arg], [r, cols], [cols, 1], t, at.MemorySpaceAttr(kind="global"), A[v],
                                  name=f"sk_{v}")
                 for v, o, (r, cols), t in (("a", k.a, (M, K), ta), ("b", k.b, (K, N), tb), ("c", k.c, (M, N), tc))}
        init = b.fill(zero, b.empty(acc_t, "sk_e"), "sk_init")
        with b.for_(c["c0"], c["M"], c["bm"], names=["sk_m"]) as (m,), \
                b.for_(n0, c["N"], c["nstep"], names=["sk_n"]) as (n,):

            def load(dst: str, v: str, i: Value, jj: Value, rows: int, cols: int, t: ty.Type) -> Value:
                tile = b.access_tile(views[v], [i, jj], A[f"{v}blk"], [rows, cols], A["id2"], name=f"{dst}_t")
                return b.load(tile, t, name=dst)

            def blocks(suffix: str, kv: Value) -> list[Value]:
                return [load(f"sk_a{suffix}", "a", m, kv, bm, bk, ta), load(f"sk_b{suffix}", "b", kv, n, bk, bn, tb)]

            if db:
                loop = b.for_(k0, kend, c["bk"], [init, *blocks("0", k0)], names=["sk_k", "sk_sum", "sk_acur", "sk_bcur"],
                              results=["sk_part", "sk_al", "sk_bl"])
            else:
                loop = b.for_(k0, kend, c["bk"], [init], names=["sk_k", "sk_sum"], results=["sk_part"])
            with loop as (kv, acc, *cur):
                if db:
                    kc = b.arith.minsi(b.arith.addi(kv, c["bk"], name="sk_kn"), klast, name="sk_kc")
                    nxt = blocks("next", kc)
                    ab = cur
                else:
                    nxt, ab = [], blocks("blk", kv)
                b.yield_(b.dps(Linalg.matmul, ab, [acc], name="sk_prod"), *nxt)
            part = b.last_results[0]
            fut = ty.TileFutureType(partial_types=(acc_t,), groups=A["groups"])
            sum_on_first_tile(b, A, part, fut, init, first, views["c"], m, n, tc, "cblk", "sk")
        b.func_return()
    return located(b.module, f"{k.name}.scheduled.ktir")
