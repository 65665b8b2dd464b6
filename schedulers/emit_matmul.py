"""Emit a scheduled matmul: grid split of C, block loops, a K loop with iter_args, resident
operands sliced from the scratchpad, and double-buffered (prefetched) streaming loads.

The function keeps its name and signature; views get the problem's static sizes and keep the
input views' strides and offsets (a transposed B stays transposed). With
double buffering the K loop carries the next step's blocks: step k loads the blocks of
step k + 1 (the last step reloads its own, clamped with `arith.minsi`, so no access ever
leaves the view) while the matmul consumes the blocks loaded one step earlier.
"""

from __future__ import annotations

from ktir.ir.operation import Module, Operation
from ktir.syntax.parser import parse
from ktir.syntax.printer import type_text

from .emit_shared import emit_shared, global_view, store_c_block
from .kernels import MatmulKernel
from .spaces import SHARED
from .text import box


def emit_matmul(k: MatmulKernel, fn: Operation, p: dict[str, int]) -> Module:
    if p["order"] >= SHARED:
        return emit_shared(k, fn, p)
    gm, gn, bm, bn, bk, order, db = (p[n] for n in ("gm", "gn", "bm", "bn", "bk", "order", "db"))
    M, N, K = k.M, k.N, k.K
    ta, tb, tc = k.a.dtype, k.b.dtype, k.c.dtype
    a_res, b_res = order == 1, order == 2
    acc = f"tensor<{bm}x{bn}xf32>"
    a_blk, b_blk = f"tensor<{bm}x{bk}x{ta}>", f"tensor<{bk}x{bn}x{tb}>"
    args = ", ".join(f"{a.name}: {type_text(a.type)}" for a in fn.regions[0].blocks[0].arguments)
    lines = [
        "// scheduled by ktir schedule: see the report for the schedule and its cost",
        box("sched_a", M, K), box("sched_b", K, N), box("sched_c", M, N),
        box("sched_ablk", bm, bk), box("sched_bblk", bk, bn), box("sched_cblk", bm, bn),
        *([box("sched_ares", bm, K)] if a_res else []), *([box("sched_bres", K, bn)] if b_res else []),
        "#sched_id2 = affine_map<(d0, d1) -> (d0, d1)>",
        f"func.func @{k.name}({args}) attributes {{grid = [{gm}, {gn}]}} {{",
    ]
    body: list[str] = []
    const = {"0": 0, "bm": bm, "bn": bn, "bk": bk, "M": M, "N": N, "K": K, "mstep": gm * bm, "nstep": gn * bn,
             "klast": K - bk}
    for name, value in const.items():
        body.append(f"%sc_{name} = arith.constant {value} : index")
    body.append("%sc_zero = arith.constant 0.0 : f32")
    body.append("%sc_ti, %sc_tj = ktdp.get_compute_tile_id : index, index")
    for v, operand, (r, c) in (("a", k.a, (M, K)), ("b", k.b, (K, N)), ("c", k.c, (M, N))):
        body += global_view(v, operand, r, c)
    body.append("%sc_m0 = arith.muli %sc_ti, %sc_bm : index")
    body.append("%sc_n0 = arith.muli %sc_tj, %sc_bn : index")

    def tile(dst: str, view: str, i: str, j: str, rows: int, cols: int, t: str, blk: str) -> list[str]:
        return [f"%{dst}_t = ktdp.construct_access_tile %sc_{view}[{i}, {j}] {{access_tile_order = #sched_id2, "
                f"access_tile_set = #{blk}}} : memref<{'x'.join(map(str, _view_shape(view, M, N, K)))}x{t}> "
                f"-> !ktdp.access_tile<{rows}x{cols}xindex>",
                f"%{dst} = ktdp.load %{dst}_t : !ktdp.access_tile<{rows}x{cols}xindex> -> tensor<{rows}x{cols}x{t}>"]

    def get_a(dst: str, kv: str) -> list[str]:
        if a_res:
            return [f"%{dst} = tensor.extract_slice %sc_ares[0, {kv}] [{bm}, {bk}] [1, 1] : tensor<{bm}x{K}x{ta}> to {a_blk}"]
        return tile(dst, "a", "%sc_m", kv, bm, bk, ta, "sched_ablk")

    def get_b(dst: str, kv: str) -> list[str]:
        if b_res:
            return [f"%{dst} = tensor.extract_slice %sc_bres[{kv}, 0] [{bk}, {bn}] [1, 1] : tensor<{K}x{bn}x{tb}> to {b_blk}"]
        return tile(dst, "b", kv, "%sc_n", bk, bn, tb, "sched_bblk")

    block: list[str] = [f"%sc_e = tensor.empty() : {acc}",
                        f"%sc_init = linalg.fill ins(%sc_zero : f32) outs(%sc_e : {acc}) -> {acc}"]
    carried = [("a", a_blk)] if db and not a_res else []
    carried += [("b", b_blk)] if db and not b_res else []
    for v, _ in carried:
        block += (get_a if v == "a" else get_b)(f"sc_{v}0", "%sc_0")
    inits = ", ".join(["%sc_sum = %sc_init"] + [f"%sc_{v}cur = %sc_{v}0" for v, _ in carried])
    results = ", ".join(["%sc_acc"] + [f"%sc_{v}last" for v, _ in carried])
    types = ", ".join([acc] + [t for _, t in carried])
    block.append(f"{results} = scf.for %sc_k = %sc_0 to %sc_K step %sc_bk iter_args({inits}) -> ({types}) {{")
    kbody: list[str] = []
    if carried:
        kbody += ["%sc_kn = arith.addi %sc_k, %sc_bk : index", "%sc_kc = arith.minsi %sc_kn, %sc_klast : index"]
    operands = {}
    for v, getter in (("a", get_a), ("b", get_b)):
        if any(v == c for c, _ in carried):
            kbody += getter(f"sc_{v}next", "%sc_kc")
            operands[v] = f"%sc_{v}cur"
        else:
            kbody += getter(f"sc_{v}blk", "%sc_k")
            operands[v] = f"%sc_{v}blk"
    kbody.append(f"%sc_prod = linalg.matmul ins({operands['a']}, {operands['b']} : {a_blk}, {b_blk}) "
                 f"outs(%sc_sum : {acc}) -> {acc}")
    yields = ", ".join(["%sc_prod"] + [f"%sc_{v}next" for v, _ in carried])
    kbody.append(f"scf.yield {yields} : {types}")
    block += ["  " + s for s in kbody] + ["}"]
    block += store_c_block(acc, bm, bn, tc, M, N)

    m_loop = "scf.for %sc_m = %sc_m0 to %sc_M step %sc_mstep {"
    n_loop = "scf.for %sc_n = %sc_n0 to %sc_N step %sc_nstep {"
    if b_res:
        outer, inner = n_loop, m_loop
        hoist = tile("sc_bres", "b", "%sc_0", "%sc_n", K, bn, tb, "sched_bres")
    else:
        outer, inner = m_loop, n_loop
        hoist = tile("sc_ares", "a", "%sc_m", "%sc_0", bm, K, ta, "sched_ares") if a_res else []
    body.append(outer)
    body += ["  " + s for s in hoist]
    body.append("  " + inner)
    body += ["    " + s for s in block]
    body += ["  }", "}", "func.return"]
    lines += ["  " + s for s in body] + ["}", ""]
    text = "\n".join(lines)
    return parse(text, f"{k.name}.scheduled.ktir")


def _view_shape(view: str, M: int, N: int, K: int) -> tuple[int, int]:
    return {"a": (M, K), "b": (K, N), "c": (M, N)}[view]
