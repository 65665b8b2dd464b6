"""Emit a scheduled matmul: grid split of C, block loops, a K loop with iter_args, resident
operands sliced from the scratchpad, and double-buffered (prefetched) streaming loads.

The function keeps its name and signature; views get the problem's static sizes and keep the
input views' strides and offsets (a transposed B stays transposed). With
double buffering the K loop carries the next step's blocks: step k loads the blocks of
step k + 1 (the last step reloads its own, clamped with `arith.minsi`, so no access ever
leaves the view) while the matmul consumes the blocks loaded one step earlier.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from ktir.builder import Builder, Value, located
from ktir.dialects.names import Linalg
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .emit_ring import emit_ring
from .emit_shared import arguments, emit_shared, prologue, store_c_block
from .kernels import MatmulKernel
from .sets import box, projection, scalar
from .space_ring import RING
from .spaces import SHARED


def emit_matmul(k: MatmulKernel, fn: Operation, p: dict[str, int]) -> Module:
    if p["order"] == RING:
        return emit_ring(k, fn, p)
    if p["order"] >= SHARED:
        return emit_shared(k, fn, p)
    gm, gn, bm, bn, bk, order, db = (p[n] for n in ("gm", "gn", "bm", "bn", "bk", "order", "db"))
    M, N, K = k.M, k.N, k.K
    ta, tb, tc = scalar(k.a.dtype), scalar(k.b.dtype), scalar(k.c.dtype)
    a_res, b_res = order == 1, order == 2
    acc_t = ty.tensor((bm, bn), ty.F32)
    b = Builder()
    b.note("scheduled by ktir schedule: see the report for the schedule and its cost")
    sets = {"a": box(M, K), "b": box(K, N), "c": box(M, N), "ablk": box(bm, bk), "bblk": box(bk, bn),
            "cblk": box(bm, bn), **({"ares": box(bm, K)} if a_res else {}), **({"bres": box(K, bn)} if b_res else {}),
            "id2": projection(2)}
    A = {n: b.alias(f"sched_{n}", v) for n, v in sets.items()}
    with b.func(k.name, arguments(b, fn), grid=[gm, gn]) as params:
        c, zero, ti, tj, views = prologue(b, A, k, params, {
            "0": 0, "bm": bm, "bn": bn, "bk": bk, "M": M, "N": N, "K": K, "mstep": gm * bm, "nstep": gn * bn,
            "klast": K - bk}.items())
        m0 = b.arith.muli(ti, c["bm"], name="sc_m0")
        n0 = b.arith.muli(tj, c["bn"], name="sc_n0")

        def tile(dst: str, view: str, i: Value, j: Value, rows: int, cols: int, t: ty.Type, blk: str) -> Value:
            at_ = b.access_tile(views[view], [i, j], A[blk], [rows, cols], A["id2"], name=f"{dst}_t")
            return b.load(at_, t, name=dst)

        def m_loop() -> AbstractContextManager[tuple[Value, ...]]:
            return b.for_(m0, c["M"], c["mstep"], names=["sc_m"])

        def n_loop() -> AbstractContextManager[tuple[Value, ...]]:
            return b.for_(n0, c["N"], c["nstep"], names=["sc_n"])

        with (n_loop() if b_res else m_loop()) as (outer,):
            resident = None
            if b_res:
                resident = tile("sc_bres", "b", c["0"], outer, K, bn, tb, "bres")
            elif a_res:
                resident = tile("sc_ares", "a", outer, c["0"], bm, K, ta, "ares")
            with (m_loop() if b_res else n_loop()) as (inner,):
                m, n = (inner, outer) if b_res else (outer, inner)
                _block(b, A, c, tile, resident, m, n, zero, acc_t, (a_res, b_res, bool(db)), (bm, bn, bk), (ta, tb))
                store_c_block(b, A, views["c"], b.last_results[0], m, n, tc)
        b.func_return()
    return located(b.module, f"{k.name}.scheduled.ktir")


def _block(b: Builder, A: dict[str, at.AttrAliasRef], c: dict[str, Value], tile: Callable[..., Value],
           resident: Value | None, m: Value, n: Value, zero: Value, acc_t: ty.TensorType,
           flags: tuple[bool, bool, bool], blocks: tuple[int, int, int], types: tuple[ty.Type, ty.Type]) -> None:
    """One output block: the K loop (carrying the prefetched blocks with double buffering)."""
    a_res, b_res, db = flags
    bm, bn, bk = blocks
    ta, tb = types

    def get_a(dst: str, kv: Value) -> Value:
        if a_res:
            assert resident is not None
            return b.extract_slice(resident, [0, kv], [bm, bk], name=dst)
        return tile(dst, "a", m, kv, bm, bk, ta, "ablk")

    def get_b(dst: str, kv: Value) -> Value:
        if b_res:
            assert resident is not None
            return b.extract_slice(resident, [kv, 0], [bk, bn], name=dst)
        return tile(dst, "b", kv, n, bk, bn, tb, "bblk")

    getters = {"a": get_a, "b": get_b}
    init = b.fill(zero, b.empty(acc_t, "sc_e"), "sc_init")
    carried = [v for v, res in (("a", a_res), ("b", b_res)) if db and not res]
    inits = [init] + [getters[v](f"sc_{v}0", c["0"]) for v in carried]
    with b.for_(c["0"], c["K"], c["bk"], inits, names=["sc_k", "sc_sum"] + [f"sc_{v}cur" for v in carried],
                results=["sc_acc"] + [f"sc_{v}last" for v in carried]) as (kv, acc, *cur):
        if carried:
            kc = b.arith.minsi(b.arith.addi(kv, c["bk"], name="sc_kn"), c["klast"], name="sc_kc")
        now, nxt = {}, []
        for v in ("a", "b"):
            if v in carried:
                nxt.append(getters[v](f"sc_{v}next", kc))
                now[v] = cur[carried.index(v)]
            else:
                now[v] = getters[v](f"sc_{v}blk", kv)
        prod = b.dps(Linalg.matmul, [now["a"], now["b"]], [acc], name="sc_prod")
        b.yield_(prod, *nxt)
