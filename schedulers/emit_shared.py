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

from collections.abc import Callable, Iterable

from ktir.builder import Builder, Value, located
from ktir.dialects.names import Arith, Ktdp, Linalg
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .kernels import MatmulKernel, Operand
from .sets import band, box, group_tiles, projection, scalar
from .spaces import SHARED_STREAM

Aliases = dict[str, at.AttrAliasRef]
GLOBAL = at.MemorySpaceAttr(kind="global")


def store_c_block(b: Builder, A: Aliases, c: Value, acc: Value, m: Value, n: Value, tc: ty.Type,
                  blk: str = "cblk", prefix: str = "sc") -> None:
    """Store the f32 accumulator `acc` as the block of C at (`m`, `n`) (alias `#sched_<blk>`),
    rounded to C's element type `tc` first when that is narrower."""
    shape = acc.type.shape  # type: ignore[attr-defined]
    out = acc
    if tc != ty.F32:
        out = b.arith.truncf(acc, result_types=[ty.tensor(shape, tc)], name=f"{prefix}_res")
    tile = b.access_tile(c, [m, n], A[blk], list(shape), A["id2"], name=f"{prefix}_tc")
    b.store(out, tile)


def sum_on_first_tile(b: Builder, A: Aliases, part: Value, fut: ty.TileFutureType, init: Value, first: Value, c: Value,
                      m: Value, n: Value, tc: ty.Type, blk: str, prefix: str) -> None:
    """Every tile of its group (`#sched_group`) yields its partial `part`; the group's first tile
    (`#sched_first`, `first` true there) adds them from `init` and stores the sum as the block
    of C at (`m`, `n`) (see store_c_block). SSA names start with `prefix`."""
    with b.produce(A["group"], fut, f"{prefix}_gid", f"{prefix}_f"):
        b.yield_(part, op=Ktdp.yield_partial)
    (f,) = b.last_results
    with b.reduce_tiles(f, A["first"], [init], [f"{prefix}_l", f"{prefix}_r"], [f"{prefix}_total"]) as (lhs, rhs):
        b.yield_(b.dps(Linalg.add, [lhs, rhs], [lhs], name=f"{prefix}_add"), op=Ktdp.yield_reduced)
    (total,) = b.last_results
    with b.if_(first):
        store_c_block(b, A, c, total, m, n, tc, blk, prefix)


def global_view(b: Builder, A: Aliases, arg: Value, v: str, operand: Operand, rows: int, cols: int) -> Value:
    """The global view `%sc_{v}` of an operand, with the input view's strides and offset."""
    ptr = arg
    if operand.offset:
        ptr = b.arith.addi(arg, b.index(operand.offset, f"sc_{v}off"), name=f"sc_{v}ptr")
    return b.memory_view(ptr, [rows, cols], list(operand.layout), scalar(operand.dtype), GLOBAL, A[v], name=f"sc_{v}")


def prologue(b: Builder, A: Aliases, k: MatmulKernel, params: Iterable[Value],
             consts: Iterable[tuple[str, int]]) -> tuple[dict[str, Value], Value, Value, Value, dict[str, Value]]:
    """What every matmul rewrite starts its body with: the index constants `%sc_<name>`, the
    f32 zero, the 2-D tile id (`%sc_ti`, `%sc_tj`) and the global views of A, B and C."""
    arg = {a.name[1:]: a for a in params}
    c = {n: b.index(v, f"sc_{n}") for n, v in consts}
    zero = b.constant(at.FloatAttr(value=k.init, type=ty.F32), name="sc_zero")  # what C starts from
    ti, tj = b.tile_id(2, ["sc_ti", "sc_tj"])
    views = {v: global_view(b, A, arg[o.arg], v, o, r, cols) for v, o, (r, cols) in
             (("a", k.a, (k.M, k.K)), ("b", k.b, (k.K, k.N)), ("c", k.c, (k.M, k.N)))}
    return c, zero, ti, tj, views


def block_loader(b: Builder, A: Aliases, views: dict[str, Value]) -> Callable[..., Value]:
    """`load(dst, view, i, j, shape, el, blk)`: the block `shape` of global view `views[view]` at
    (`i`, `j`) (alias `#..._<blk>`), loaded as element type `el` into `%<dst>`."""

    def load(dst: str, view: str, i: Value, j: Value, shape: tuple[int, int], el: ty.Type, blk: str) -> Value:
        tile = b.access_tile(views[view], [i, j], A[blk], list(shape), A["id2"], name=f"{dst}_t")
        return b.load(tile, el, name=dst)

    return load


def ring_chunk_k(b: Builder, c: dict[str, Value], tj: Value, r: Value, s: Value, prefix: str,
                 k0: Value | None = None) -> Value:
    """K offset of the chunk ring position `tj` holds at step `s` of sub-ring `r` (the ring matmuls,
    `emit_ring` and `emit_ringsplit`): `k0 + (r g + (tj - s) mod g) kp` (`k0` 0 when None), from the
    index constants `c["g"]` and `c["kp"]`; SSA names start with `prefix`."""
    held = b.arith.remui(b.arith.subi(b.arith.addi(tj, c["g"], name=f"{prefix}jg"), s, name=f"{prefix}js"),
                         c["g"], name=f"{prefix}held")
    idx = b.arith.addi(b.arith.muli(r, c["g"], name=f"{prefix}rg"), held, name=f"{prefix}chunk")
    if k0 is None:
        return b.arith.muli(idx, c["kp"], name=f"{prefix}k")
    return b.arith.addi(k0, b.arith.muli(idx, c["kp"], name=f"{prefix}kk"), name=f"{prefix}k")


def ring_pass_on(b: Builder, A: Aliases, group: str, fut_t: ty.TileFutureType, part_t: ty.Type, prefix: str,
                 suffix: str = "") -> Callable[[Value, str], Value]:
    """`pass_on` of ring_k_loop (`emit_ring`, `emit_ringsplit`): post the chunk held to the tile's
    ring (the alias `A[group]`) and receive the left neighbour's (`A["left"]`). SSA names are
    `{prefix}<name>{tag}{suffix}`."""

    def pass_on(cur: Value, tag: str) -> Value:
        with b.produce(A[group], fut_t, f"{prefix}gid{tag}{suffix}", f"{prefix}fut{tag}{suffix}"):
            b.yield_(cur, op=Ktdp.yield_partial)
        (fut,) = b.last_results
        (nxt,) = b.create(Ktdp.inter_tile_consume, [fut], [part_t],
                          {"consumer_tiles_per_group": A[group], "producer_dependency_per_consumer": A["left"]},
                          result_names=[f"{prefix}next{tag}{suffix}"])
        return nxt

    return pass_on


def arguments(b: Builder, fn: Operation) -> list[tuple[str, ty.Type]]:
    """The input function's parameters, for `Builder.func`."""
    return [(a.name, a.type) for a in fn.regions[0].blocks[0].arguments]


def _barrier(b: Builder, A: Aliases, tag: str, token: Value) -> None:
    fut = ty.TileFutureType(partial_types=(token.type,), groups=A["one"])
    with b.produce(A["all"], fut, f"sc_{tag}g", f"sc_{tag}f"):
        b.yield_(token, op=Ktdp.yield_partial)
    (f,) = b.last_results
    with b.reduce_tiles(f, A["all"], [token], [f"sc_{tag}x", f"sc_{tag}y"], [f"sc_{tag}done"]) as (x, _):
        b.yield_(x, op=Ktdp.yield_reduced)


def emit_shared(k: MatmulKernel, fn: Operation, p: dict[str, int]) -> Module:
    t, bm, bn, kp, db = p["gm"], p["bm"], p["bn"], p["bk"], bool(p["db"])
    pp = bool(p.get("pp", p["db"]))  # prefetch the next panel's part during the K loop
    stream = p["order"] == SHARED_STREAM  # A blocks streamed from memory instead of resident
    M, N, K = k.M, k.N, k.K
    ta, tb, tc = scalar(k.a.dtype), scalar(k.b.dtype), scalar(k.c.dtype)
    acc_t = ty.tensor((bm, bn), ty.F32)
    b = Builder()
    b.note("scheduled by ktir schedule: B panels shared through the tiles' scratchpads (see the report)")
    sets = {"a": band(0, M, K), "b": band(0, K, N), "c": band(0, M, N), "ares": band(0, bm, K),
            "ablk": band(0, bm, kp), "part": band(0, kp, bn), "cblk": band(0, bm, bn),
            **{f"p{r}": band(r * kp, (r + 1) * kp, bn) for r in range(t)},
            "id2": projection(2), "all": group_tiles(t), "one": box(1, fixed=(0,))}
    A = {n: b.alias(f"sched_{n}", v) for n, v in sets.items()}
    with b.func(k.name, arguments(b, fn), grid=[t, 1]) as params:
        c, zero, ti, _, views = prologue(b, A, k, params, (("0", 0), ("bm", bm), ("bn", bn), ("kp", kp), ("N", N),
                                                          ("K", K), ("nlast", N - bn), ("klast", K - kp)))
        c0 = c["0"]
        mine = b.memory_view(c0, [kp, bn], [bn, 1], tb, at.MemorySpaceAttr(kind="ct_local"), A["part"], name="sc_mine")
        parts = [b.memory_view(c0, [kp, bn], [bn, 1], tb, at.MemorySpaceAttr(kind="ct_local", ct_id=r), A[f"p{r}"],
                               name=f"sc_p{r}") for r in range(t)]
        panel = b.distributed_view(parts, [K, bn], name="sc_panel")
        token = b.fill(zero, b.empty(ty.tensor((1,), ty.F32), "sc_te"), "sc_token")
        m = b.arith.muli(ti, c["bm"], name="sc_m")
        r0 = b.arith.muli(ti, c["kp"], name="sc_r0")

        def load(dst: str, view: Value, i: Value, j: Value, rows: int, cols: int, el: ty.Type, blk: str) -> Value:
            tile = b.access_tile(view, [i, j], A[blk], [rows, cols], A["id2"], name=f"{dst}_t")
            return b.load(tile, el, name=dst)

        ares = None if stream else load("sc_ares", views["a"], m, c0, bm, K, ta, "ares")
        if pp:
            own0 = load("sc_own0", views["b"], r0, c0, kp, bn, tb, "part")
            panels = b.for_(c0, c["N"], c["bn"], [own0], names=["sc_n", "sc_own"], results=["sc_ownlast"])
        else:
            panels = b.for_(c0, c["N"], c["bn"], names=["sc_n"])
        with panels as (n, *own_):
            own = own_[0] if pp else load("sc_own", views["b"], r0, n, kp, bn, tb, "part")
            b.store(own, b.access_tile(mine, [c0, c0], A["part"], [kp, bn], A["id2"], name="sc_mt"))
            _barrier(b, A, "in", token)
            if pp:  # the next panel's part, in flight during this panel's K loop
                nc = b.arith.minsi(b.arith.addi(n, c["bn"], name="sc_nn"), c["nlast"], name="sc_nc")
                ownnext = load("sc_ownnext", views["b"], r0, nc, kp, bn, tb, "part")
            init = b.fill(zero, b.empty(acc_t, "sc_e"), "sc_init")
            inits, names, results = [init], ["sc_k", "sc_sum"], ["sc_acc"]
            if db:
                inits.append(load("sc_b0", panel, c0, c0, kp, bn, tb, "part"))
                names.append("sc_bcur")
                results.append("sc_blast")
                if stream:
                    inits.append(load("sc_a0", views["a"], m, c0, bm, kp, ta, "ablk"))
                    names.append("sc_acur")
                    results.append("sc_alast")
            with b.for_(c0, c["K"], c["kp"], inits, names=names, results=results) as (kv, acc, *cur):
                nxt = []
                if db:
                    kc = b.arith.minsi(b.arith.addi(kv, c["kp"], name="sc_kn"), c["klast"], name="sc_kc")
                    nxt.append(load("sc_bnext", panel, kc, c0, kp, bn, tb, "part"))
                    if stream:
                        nxt.append(load("sc_anext", views["a"], m, kc, bm, kp, ta, "ablk"))
                    b_now, a_now = cur[0], (cur[1] if stream else None)
                else:
                    b_now = load("sc_bblk", panel, kv, c0, kp, bn, tb, "part")
                    a_now = load("sc_ablk", views["a"], m, kv, bm, kp, ta, "ablk") if stream else None
                if a_now is None:  # A's rows are resident: its block is a slice
                    assert ares is not None
                    a_now = b.extract_slice(ares, [0, kv], [bm, kp], name="sc_ablk")
                prod = b.dps(Linalg.matmul, [a_now, b_now], [acc], name="sc_prod")
                b.yield_(prod, *nxt)
            store_c_block(b, A, views["c"], b.last_results[0], m, n, tc)
            _barrier(b, A, "out", token)
            if pp:
                b.yield_(ownnext)
        b.func_return()
    return located(b.module, f"{k.name}.scheduled.ktir")


def ring_k_loop(b: Builder, c: dict[str, Value], q: int, init: Value, own_chunk: Callable[[Value, str], Value],
                pass_on: Callable[[Value, str], Value], load_b: Callable[[Value, Value, str], Value],
                prefix: str) -> Value:
    """The K reduction of a ring matmul (`emit_ring`, `emit_ringsplit`): `q` sub-rings of g steps
    (`c["g"]`, `c["gl"]` = g - 1, `c["ql"]` = q - 1), returning the accumulator that starts as `init`.

    Sub-ring r starts from `own_chunk(r, tag)`; at each step but the last the chunk held is
    passed on (`pass_on(chunk, tag)` returns the neighbour's), and it is multiplied by the B
    block `load_b(r, s, tag)` of step s. B is double buffered in the program: each step loads
    the next step's block (the last step of a sub-ring the next sub-ring's first) and multiplies
    the one loaded a step earlier, carried in the loops' iter_args, so the block in use and the
    one arriving are two buffers of one load and the transfer overlaps the product without
    running further ahead (`ktir.targets.timeline`: an op owns the buffers its program order
    holds at once, at least two). The last sub-ring has no next one to look ahead to: its
    look-ahead load is under `scf.if` (the else branch yields the block at hand), so no B block
    is loaded twice and no op is duplicated (a peeled copy would own buffers of its own).
    SSA names start with `prefix`."""
    first = load_b(c["0"], c["0"], "first")
    with b.for_(c["0"], c["q"], c["1"], [init, first], names=[f"{prefix}r", f"{prefix}racc", f"{prefix}rb"],
                results=[f"{prefix}acc_r", f"{prefix}b_r"]) as (r, racc, rb):
        own = own_chunk(r, "")
        with b.for_(c["0"], c["gl"], c["1"], [racc, own, rb],
                    names=[f"{prefix}s", f"{prefix}sum", f"{prefix}cur", f"{prefix}bcur"],
                    results=[f"{prefix}ringacc", f"{prefix}last", f"{prefix}blast"]) as (s, sacc, cur, bc):
            nxt = pass_on(cur, "")
            s1 = b.arith.addi(s, c["1"], name=f"{prefix}s1")
            bnext = load_b(r, s1, "")
            b.yield_(b.dps(Linalg.matmul, [cur, bc], [sacc], name=f"{prefix}prod"), nxt, bnext)
        ring_acc, last, blast = b.last_results
        following = b.arith.addi(r, c["1"], name=f"{prefix}r1")
        more = b.cmp(Arith.cmpi, "slt", r, c["ql"], name=f"{prefix}more")
        (ahead,) = b.if_values(more, lambda: [load_b(following, c["0"], "next")], [blast], [f"{prefix}ahead"])
        b.yield_(b.dps(Linalg.matmul, [last, blast], [ring_acc], name=f"{prefix}lastprod"), ahead)
    return b.last_results[0]
