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
model: the K loop as in the matmul space, plus a reduction tree of log2(sk) rounds over the
interconnect per output block, and the partial-sum buffers in the scratchpad.
"""

from __future__ import annotations

import math

import numpy as np

from ktir.ir.operation import Module, Operation
from ktir.syntax.parser import parse
from ktir.syntax.printer import type_text

from .kernels import MatmulKernel, Operand
from .report import Placement, Schedule
from .spaces import Columns, Evaluated, MatmulSpace, take
from .spaces import product as _product
from .text import box

SPLITS = (2, 4, 8, 16, 32, 64)


def _plain(o: Operand) -> bool:
    """A row-major view at the argument's address (what the split-K rewrite emits)."""
    strides = getattr(o, "strides", ())
    row_major = tuple(math.prod(o.shape[i + 1:]) for i in range(len(o.shape)))
    return not getattr(o, "offset", 0) and strides in ((), row_major)


class SplitKSpace(MatmulSpace):
    """The matmul space plus split-K schedules (`sk` > 1, grid [gn * sk], M not split)."""

    def _split_candidates(self) -> Columns:
        k, tiles = self.k, self.fig.tiles
        if not all(_plain(o) for o in (k.a, k.b, k.c)):
            return {}
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
        split = self._split_candidates()
        if not split or not split["sk"].size:
            return base
        # a column the matmul space adds later is off (0) in the split rows, which do not read it
        n = split["sk"].size
        return {c: np.concatenate([base[c], split.get(c, np.zeros(n, np.int64))]) for c in base}

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
        link = min(m.topology.capacity.values()) if m.topology.capacity else f.dma_bw
        vrate = f.vector_rate("f32")
        # a tree over the group: each round moves one partial a hop or more and adds it
        rounds = np.ceil(np.log2(sk))
        combine = rounds * (m.dma_setup + m.topology.hop_latency * sk / 4 + bm * bn * 4 / link
                            + bm * bn / vrate + f.vector_startup)
        epilogue = 2 * (bm * bn / vrate + f.vector_startup) + f.load_step([bm * bn * ec], groups)
        cycles = mb * nt * (kloop + combine + epilogue)
        buffers = np.where(db, 2.0, 1.0)
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
        split, rest = np.nonzero(sk > 1)[0], np.nonzero(sk <= 1)[0]
        out = Evaluated(*(np.zeros(sk.size) for _ in range(4)))
        parts = [(split, self._evaluate_split(take(c, split)))]
        if rest.size:
            parts.append((rest, super().evaluate(take(plain, rest))))
        for idx, part in parts:
            for name in ("cycles", "scratch", "global_bytes", "local_bytes"):
                getattr(out, name)[idx] = getattr(part, name)
        return out

    def baseline(self) -> dict[str, int]:
        return {**super().baseline(), "sk": 1}

    def describe(self, p: dict[str, int]) -> Schedule:
        if p.get("sk", 1) <= 1:
            return super().describe({n: v for n, v in p.items() if n != "sk"})
        k = self.k
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
    gn, sk, bm, bn, bk, db = (p[n] for n in ("gn", "sk", "bm", "bn", "bk", "db"))
    M, N, K = k.M, k.N, k.K
    ks = K // sk
    ta, tb, tc = k.a.dtype, k.b.dtype, k.c.dtype
    acc = f"tensor<{bm}x{bn}xf32>"
    a_blk, b_blk = f"tensor<{bm}x{bk}x{ta}>", f"tensor<{bk}x{bn}x{tb}>"
    fut = f"!ktdp.tile_future<({acc}), groups = #sk_groups>"
    args = ", ".join(f"{a.name}: {type_text(a.type)}" for a in fn.regions[0].blocks[0].arguments)
    lines = [
        "// scheduled by ktir schedule: K split over tiles, partial sums added by inter_tile_reduce (see the report)",
        box("sk_a", M, K), box("sk_b", K, N), box("sk_c", M, N),
        box("sk_ablk", bm, bk), box("sk_bblk", bk, bn), box("sk_cblk", bm, bn),
        "#sk_id2 = affine_map<(d0, d1) -> (d0, d1)>",
        f"#sk_group = affine_set<(d0)[s0] : (d0 - s0 * {sk} >= 0, -d0 + s0 * {sk} + {sk - 1} >= 0)>",
        f"#sk_first = affine_set<(d0)[s0] : (d0 - s0 * {sk} == 0)>",
        f"#sk_groups = affine_set<(d0) : (d0 >= 0, -d0 + {gn - 1} >= 0)>",
        f"func.func @{k.name}({args}) attributes {{grid = [{gn * sk}]}} {{",
    ]
    body = [f"%sk_{n} = arith.constant {v} : index" for n, v in
            (("c0", 0), ("sk", sk), ("bm", bm), ("bn", bn), ("bk", bk), ("ks", ks), ("M", M), ("N", N),
             ("nstep", gn * bn))]
    body += ["%sk_zero = arith.constant 0.0 : f32", "%sk_tid = ktdp.get_compute_tile_id : index",
             "%sk_j = arith.divui %sk_tid, %sk_sk : index", "%sk_s = arith.remui %sk_tid, %sk_sk : index",
             "%sk_k0 = arith.muli %sk_s, %sk_ks : index", "%sk_kend = arith.addi %sk_k0, %sk_ks : index",
             "%sk_klast = arith.subi %sk_kend, %sk_bk : index", "%sk_n0 = arith.muli %sk_j, %sk_bn : index",
             "%sk_first = arith.cmpi eq, %sk_s, %sk_c0 : index"]
    for v, o, (r, c), t in (("a", k.a, (M, K), ta), ("b", k.b, (K, N), tb), ("c", k.c, (M, N), tc)):
        body.append(f"%sk_{v} = ktdp.construct_memory_view %{o.arg}, sizes: [{r}, {c}], strides: [{c}, 1] "
                    f"{{coordinate_set = #sk_{v}, memory_space = #ktdp.memory_space<global>}} : memref<{r}x{c}x{t}>")
    body += [f"%sk_e = tensor.empty() : {acc}",
             f"%sk_init = linalg.fill ins(%sk_zero : f32) outs(%sk_e : {acc}) -> {acc}"]

    def load(dst: str, v: str, i: str, j: str, rows: int, cols: int, t: str, shape: tuple[int, int]) -> list[str]:
        return [f"%{dst}_t = ktdp.construct_access_tile %sk_{v}[{i}, {j}] {{access_tile_order = #sk_id2, "
                f"access_tile_set = #sk_{v}blk}} : memref<{shape[0]}x{shape[1]}x{t}> -> !ktdp.access_tile<{rows}x{cols}xindex>",
                f"%{dst} = ktdp.load %{dst}_t : !ktdp.access_tile<{rows}x{cols}xindex> -> tensor<{rows}x{cols}x{t}>"]

    def blocks(suffix: str, kv: str) -> list[str]:
        return (load(f"sk_a{suffix}", "a", "%sk_m", kv, bm, bk, ta, (M, K))
                + load(f"sk_b{suffix}", "b", kv, "%sk_n", bk, bn, tb, (K, N)))

    block: list[str] = []
    if db:
        block += blocks("0", "%sk_k0")
        block.append(f"%sk_part, %sk_al, %sk_bl = scf.for %sk_k = %sk_k0 to %sk_kend step %sk_bk iter_args(%sk_sum = "
                     f"%sk_init, %sk_acur = %sk_a0, %sk_bcur = %sk_b0) -> ({acc}, {a_blk}, {b_blk}) {{")
        kbody = ["%sk_kn = arith.addi %sk_k, %sk_bk : index", "%sk_kc = arith.minsi %sk_kn, %sk_klast : index"]
        kbody += blocks("next", "%sk_kc")
        kbody.append(f"%sk_prod = linalg.matmul ins(%sk_acur, %sk_bcur : {a_blk}, {b_blk}) outs(%sk_sum : {acc}) -> {acc}")
        kbody.append(f"scf.yield %sk_prod, %sk_anext, %sk_bnext : {acc}, {a_blk}, {b_blk}")
    else:
        block.append(f"%sk_part = scf.for %sk_k = %sk_k0 to %sk_kend step %sk_bk iter_args(%sk_sum = %sk_init) -> ({acc}) {{")
        kbody = blocks("blk", "%sk_k")
        kbody.append(f"%sk_prod = linalg.matmul ins(%sk_ablk, %sk_bblk : {a_blk}, {b_blk}) outs(%sk_sum : {acc}) -> {acc}")
        kbody.append(f"scf.yield %sk_prod : {acc}")
    block += ["  " + s for s in kbody] + ["}"]
    block += [
        f"%sk_f = ktdp.inter_tile_produce producer_tiles_per_group = #sk_group -> {fut} {{",
        "^bb0(%sk_gid: index):",
        f"  ktdp.yield_partial %sk_part : {acc}",
        "}",
        f"%sk_total = ktdp.inter_tile_reduce(%sk_f) consumer_tiles_per_group = #sk_first, identity(%sk_init : {acc}) "
        f": {fut} -> {acc} {{",
        f"^bb0(%sk_l: {acc}, %sk_r: {acc}):",
        f"  %sk_add = linalg.add ins(%sk_l, %sk_r : {acc}, {acc}) outs(%sk_l : {acc}) -> {acc}",
        f"  ktdp.yield_reduced %sk_add : {acc}",
        "}",
        "scf.if %sk_first {",
    ]
    store: list[str] = []
    out = "%sk_total"
    if tc != "f32":
        store.append(f"%sk_res = arith.truncf %sk_total : {acc} to tensor<{bm}x{bn}x{tc}>")
        out = "%sk_res"
    store += [f"%sk_tc = ktdp.construct_access_tile %sk_c[%sk_m, %sk_n] {{access_tile_order = #sk_id2, "
              f"access_tile_set = #sk_cblk}} : memref<{M}x{N}x{tc}> -> !ktdp.access_tile<{bm}x{bn}xindex>",
              f"ktdp.store {out}, %sk_tc : tensor<{bm}x{bn}x{tc}>, !ktdp.access_tile<{bm}x{bn}xindex>"]
    block += ["  " + s for s in store] + ["}"]
    body.append("scf.for %sk_m = %sk_c0 to %sk_M step %sk_bm {")
    body.append("  scf.for %sk_n = %sk_n0 to %sk_N step %sk_nstep {")
    body += ["    " + s for s in block] + ["  }", "}", "func.return"]
    lines += ["  " + s for s in body] + ["}", ""]
    return parse("\n".join(lines), f"{k.name}.scheduled.ktir")
