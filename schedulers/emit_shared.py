"""Emit the shared-panel matmul: B's column panels spread over the tiles' scratchpads.

Grid [T, 1]. Tile t keeps its rows [t bm, (t+1) bm) of A resident (bm = M / T) and, for each
column panel of B (K x bn), holds rows [t kp, (t+1) kp) of the panel (kp = K / T) in its
own `ct_local` memory. After a barrier (an `inter_tile_produce`/`inter_tile_reduce` of a
token over all tiles) the T parts form one distributed view of the whole panel, and every
tile's K loop reads one part per step from it, over the interconnect, instead of from
global memory: B is read from memory once in total. A second barrier orders the last read
of a panel before the next panel overwrites the parts. With double buffering the next
panel's part is loaded from global memory during the K loop, and each K step prefetches the
next part of the distributed view.
"""

from __future__ import annotations

from ktir.ir.operation import Module, Operation
from ktir.syntax.parser import parse
from ktir.syntax.printer import type_text

from .kernels import MatmulKernel, Operand
from .spaces import SHARED_STREAM


def _set(name: str, r0: int, r1: int, cols: int) -> str:
    low = f"d0 - {r0} >= 0" if r0 else "d0 >= 0"
    return f"#{name} = affine_set<(d0, d1) : ({low}, -d0 + {r1 - 1} >= 0, d1 >= 0, -d1 + {cols - 1} >= 0)>"


def store_c_block(acc: str, bm: int, bn: int, tc: str, M: int, N: int) -> list[str]:
    """Lines storing the f32 accumulator `%sc_acc` (type `acc`) as the bm x bn block of C at
    (`%sc_m`, `%sc_n`), rounded to C's element type `tc` first when that is narrower."""
    lines, out = [], "%sc_acc"
    if tc != "f32":
        lines.append(f"%sc_res = arith.truncf %sc_acc : {acc} to tensor<{bm}x{bn}x{tc}>")
        out = "%sc_res"
    lines.append(f"%sc_tc = ktdp.construct_access_tile %sc_c[%sc_m, %sc_n] {{access_tile_order = #sched_id2, "
                 f"access_tile_set = #sched_cblk}} : memref<{M}x{N}x{tc}> -> !ktdp.access_tile<{bm}x{bn}xindex>")
    lines.append(f"ktdp.store {out}, %sc_tc : tensor<{bm}x{bn}x{tc}>, !ktdp.access_tile<{bm}x{bn}xindex>")
    return lines


def global_view(v: str, operand: Operand, rows: int, cols: int) -> list[str]:
    """The global view `%sc_{v}` of an operand, with the input view's strides and offset."""
    ptr = f"%{operand.arg}"
    lines = []
    if operand.offset:
        lines = [f"%sc_{v}off = arith.constant {operand.offset} : index",
                 f"%sc_{v}ptr = arith.addi %{operand.arg}, %sc_{v}off : index"]
        ptr = f"%sc_{v}ptr"
    strides = ", ".join(map(str, operand.layout))
    return lines + [f"%sc_{v} = ktdp.construct_memory_view {ptr}, sizes: [{rows}, {cols}], strides: [{strides}] "
                    f"{{coordinate_set = #sched_{v}, memory_space = #ktdp.memory_space<global>}} : "
                    f"memref<{rows}x{cols}x{operand.dtype}>"]


def _barrier(tag: str) -> list[str]:
    fut = "!ktdp.tile_future<(tensor<1xf32>), groups = #sched_one>"
    return [
        f"%sc_{tag}f = ktdp.inter_tile_produce producer_tiles_per_group = #sched_all -> {fut} {{",
        f"^bb0(%sc_{tag}g: index):",
        "  ktdp.yield_partial %sc_token : tensor<1xf32>",
        "}",
        f"%sc_{tag}done = ktdp.inter_tile_reduce(%sc_{tag}f) consumer_tiles_per_group = #sched_all, "
        f"identity(%sc_token : tensor<1xf32>) : {fut} -> tensor<1xf32> {{",
        f"^bb0(%sc_{tag}x: tensor<1xf32>, %sc_{tag}y: tensor<1xf32>):",
        f"  ktdp.yield_reduced %sc_{tag}x : tensor<1xf32>",
        "}",
    ]


def emit_shared(k: MatmulKernel, fn: Operation, p: dict[str, int]) -> Module:
    t, bm, bn, kp, db = p["gm"], p["bm"], p["bn"], p["bk"], bool(p["db"])
    pp = bool(p.get("pp", p["db"]))  # prefetch the next panel's part during the K loop
    stream = p["order"] == SHARED_STREAM  # A blocks streamed from memory instead of resident
    M, N, K = k.M, k.N, k.K
    ta, tb, tc = k.a.dtype, k.b.dtype, k.c.dtype
    acc = f"tensor<{bm}x{bn}xf32>"
    part_t = f"tensor<{kp}x{bn}x{tb}>"
    local = "#ktdp.memory_space<ct_local>"
    args = ", ".join(f"{a.name}: {type_text(a.type)}" for a in fn.regions[0].blocks[0].arguments)
    lines = [
        "// scheduled by ktir schedule: B panels shared through the tiles' scratchpads (see the report)",
        _set("sched_a", 0, M, K), _set("sched_b", 0, K, N), _set("sched_c", 0, M, N),
        _set("sched_ares", 0, bm, K), _set("sched_ablk", 0, bm, kp), _set("sched_part", 0, kp, bn), _set("sched_cblk", 0, bm, bn),
        *[_set(f"sched_p{r}", r * kp, (r + 1) * kp, bn) for r in range(t)],
        "#sched_id2 = affine_map<(d0, d1) -> (d0, d1)>",
        f"#sched_all = affine_set<(d0)[s0] : (d0 - s0 * {t} >= 0, -d0 + s0 * {t} + {t - 1} >= 0)>",
        "#sched_one = affine_set<(d0) : (d0 == 0)>",
        f"func.func @{k.name}({args}) attributes {{grid = [{t}, 1]}} {{",
    ]
    body = [f"%sc_{n} = arith.constant {v} : index" for n, v in
            (("0", 0), ("bm", bm), ("bn", bn), ("kp", kp), ("N", N), ("K", K), ("nlast", N - bn), ("klast", K - kp))]
    body += ["%sc_zero = arith.constant 0.0 : f32", "%sc_ti, %sc_tj = ktdp.get_compute_tile_id : index, index"]
    for v, operand, (r, c) in (("a", k.a, (M, K)), ("b", k.b, (K, N)), ("c", k.c, (M, N))):
        body += global_view(v, operand, r, c)
    mine_t = f"memref<{kp}x{bn}x{tb}, {local}>"
    body.append(f"%sc_mine = ktdp.construct_memory_view %sc_0, sizes: [{kp}, {bn}], strides: [{bn}, 1] "
                f"{{coordinate_set = #sched_part, memory_space = {local}}} : {mine_t}")
    parts, part_types = [], []
    for r in range(t):
        space = f"#ktdp.memory_space<ct_local, ct_id = {r}>"
        pt = f"memref<{kp}x{bn}x{tb}, {space}>"
        body.append(f"%sc_p{r} = ktdp.construct_memory_view %sc_0, sizes: [{kp}, {bn}], strides: [{bn}, 1] "
                    f"{{coordinate_set = #sched_p{r}, memory_space = {space}}} : {pt}")
        parts.append(f"%sc_p{r}")
        part_types.append(pt)
    body.append(f"%sc_panel = ktdp.construct_distributed_memory_view({', '.join(parts)} : {', '.join(part_types)}) "
                f": memref<{K}x{bn}x{tb}>")
    body += ["%sc_te = tensor.empty() : tensor<1xf32>",
             "%sc_token = linalg.fill ins(%sc_zero : f32) outs(%sc_te : tensor<1xf32>) -> tensor<1xf32>",
             "%sc_m = arith.muli %sc_ti, %sc_bm : index",
             "%sc_r0 = arith.muli %sc_ti, %sc_kp : index"]

    def load(dst: str, view: str, i: str, j: str, rows: int, cols: int, el: str, blk: str, vt: str) -> list[str]:
        return [f"%{dst}_t = ktdp.construct_access_tile %{view}[{i}, {j}] {{access_tile_order = #sched_id2, "
                f"access_tile_set = #{blk}}} : {vt} -> !ktdp.access_tile<{rows}x{cols}xindex>",
                f"%{dst} = ktdp.load %{dst}_t : !ktdp.access_tile<{rows}x{cols}xindex> -> tensor<{rows}x{cols}x{el}>"]

    b_view = f"memref<{K}x{N}x{tb}>"
    panel_view = f"memref<{K}x{bn}x{tb}>"
    a_view = f"memref<{M}x{K}x{ta}>"
    a_blk = f"tensor<{bm}x{kp}x{ta}>"
    if not stream:
        body += load("sc_ares", "sc_a", "%sc_m", "%sc_0", bm, K, ta, "sched_ares", a_view)
    if pp:
        body += load("sc_own0", "sc_b", "%sc_r0", "%sc_0", kp, bn, tb, "sched_part", b_view)
        body.append(f"%sc_ownlast = scf.for %sc_n = %sc_0 to %sc_N step %sc_bn iter_args(%sc_own = %sc_own0) -> ({part_t}) {{")
    else:
        body.append("scf.for %sc_n = %sc_0 to %sc_N step %sc_bn {")
    panel: list[str] = []
    if not pp:
        panel += load("sc_own", "sc_b", "%sc_r0", "%sc_n", kp, bn, tb, "sched_part", b_view)
    panel += [f"%sc_mt = ktdp.construct_access_tile %sc_mine[%sc_0, %sc_0] {{access_tile_order = #sched_id2, "
              f"access_tile_set = #sched_part}} : {mine_t} -> !ktdp.access_tile<{kp}x{bn}xindex>",
              f"ktdp.store %sc_own, %sc_mt : {part_t}, !ktdp.access_tile<{kp}x{bn}xindex>"]
    panel += _barrier("in")
    if pp:  # the next panel's part, in flight during this panel's K loop
        panel += ["%sc_nn = arith.addi %sc_n, %sc_bn : index", "%sc_nc = arith.minsi %sc_nn, %sc_nlast : index"]
        panel += load("sc_ownnext", "sc_b", "%sc_r0", "%sc_nc", kp, bn, tb, "sched_part", b_view)
    panel += [f"%sc_e = tensor.empty() : {acc}",
              f"%sc_init = linalg.fill ins(%sc_zero : f32) outs(%sc_e : {acc}) -> {acc}"]
    kbody: list[str] = []
    carried = [("b", part_t)] + ([("a", a_blk)] if stream else []) if db else []
    if db:
        panel += load("sc_b0", "sc_panel", "%sc_0", "%sc_0", kp, bn, tb, "sched_part", panel_view)
        if stream:
            panel += load("sc_a0", "sc_a", "%sc_m", "%sc_0", bm, kp, ta, "sched_ablk", a_view)
        inits = "".join(f", %sc_{v}cur = %sc_{v}0" for v, _ in carried)
        results = "".join(f", %sc_{v}last" for v, _ in carried)
        types = "".join(f", {ty}" for _, ty in carried)
        panel.append(f"%sc_acc{results} = scf.for %sc_k = %sc_0 to %sc_K step %sc_kp iter_args(%sc_sum = %sc_init"
                     f"{inits}) -> ({acc}{types}) {{")
        kbody += ["%sc_kn = arith.addi %sc_k, %sc_kp : index", "%sc_kc = arith.minsi %sc_kn, %sc_klast : index"]
        kbody += load("sc_bnext", "sc_panel", "%sc_kc", "%sc_0", kp, bn, tb, "sched_part", panel_view)
        if stream:
            kbody += load("sc_anext", "sc_a", "%sc_m", "%sc_kc", bm, kp, ta, "sched_ablk", a_view)
        b_now, a_now = "%sc_bcur", "%sc_acur"
    else:
        panel.append(f"%sc_acc = scf.for %sc_k = %sc_0 to %sc_K step %sc_kp iter_args(%sc_sum = %sc_init) -> ({acc}) {{")
        kbody += load("sc_bblk", "sc_panel", "%sc_k", "%sc_0", kp, bn, tb, "sched_part", panel_view)
        if stream:
            kbody += load("sc_ablk", "sc_a", "%sc_m", "%sc_k", bm, kp, ta, "sched_ablk", a_view)
        b_now, a_now = "%sc_bblk", "%sc_ablk"
    if not stream:
        kbody.append(f"%sc_ablk = tensor.extract_slice %sc_ares[0, %sc_k] [{bm}, {kp}] [1, 1] : tensor<{bm}x{K}x{ta}> "
                     f"to {a_blk}")
        a_now = "%sc_ablk"
    kbody.append(f"%sc_prod = linalg.matmul ins({a_now}, {b_now} : {a_blk}, {part_t}) outs(%sc_sum : {acc}) -> {acc}")
    yields = "".join(f", %sc_{v}next" for v, _ in carried)
    ytypes = "".join(f", {ty}" for _, ty in carried)
    kbody.append(f"scf.yield %sc_prod{yields} : {acc}{ytypes}")
    panel += ["  " + s for s in kbody] + ["}"]
    panel += store_c_block(acc, bm, bn, tc, M, N)
    panel += _barrier("out")
    if pp:
        panel.append(f"scf.yield %sc_ownnext : {part_t}")
    body += ["  " + s for s in panel] + ["}", "func.return"]
    lines += ["  " + s for s in body] + ["}", ""]
    return parse("\n".join(lines), f"{k.name}.scheduled.ktir")
