"""Emit the ring matmul: A's row blocks passed from tile to neighbour tile around groups of the ring.

Grid [g, gm] (tile coordinates (j, i); dimension 0 varies fastest in the linear tile id): the g
tiles of row group i (linear ids i g .. i g + g - 1, consecutive on the ring) share A's rows [i bm, (i+1) bm) (bm = M / gm); tile j of the group owns C's columns
[j Nt, (j+1) Nt) (Nt = N / g) and computes them in blocks of bn columns, each in an f32
accumulator of bm x bn.

K is cut into g q chunks of kp columns of A (rows of B): sub-ring r holds chunks r g .. r g + g - 1.
For one block of columns, for each sub-ring r, tile j loads chunk r g + j of A (bm x kp) from
global memory, then for g steps multiplies the chunk it holds by the matching kp x bn block of B
(loaded from global memory one step ahead: `emit_shared.ring_k_loop` double buffers B in the
program) and, except at the last step, passes the chunk to its right
neighbour (`inter_tile_produce`) while receiving its left neighbour's
(`inter_tile_consume`, producer = (j - 1) mod g in the group): at step s tile j holds chunk
r g + (j - s) mod g. So each element of A crosses the memory channel once per block of columns
and every other transfer of A is one hop on the ring. The accumulator is rounded to C's
type and stored in row chunks, so no second full-size buffer is needed.

The K reduction runs in a rotated chunk order on each tile: a reassociation of the f32 sum,
which the matmul class's legality check (K reduced by the matmul only) allows.
"""

from __future__ import annotations

from ktir.builder import Builder, Value, located
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .emit_shared import arguments, block_loader, prologue, ring_chunk_k, ring_k_loop, ring_pass_on
from .kernels import MatmulKernel
from .sets import box, group_tiles, projection, scalar
from .space_ring import chunk_rows


def left_neighbour(size: int) -> af.IntegerSet:
    """(p)[c, g]: the producer p of group g that consumer c receives from, (c - 1) mod size in the group."""
    d0, c, g = af.dim(0), af.sym(0), af.sym(1)
    return af.IntegerSet(num_dims=1, num_symbols=2, constraints=(
        af.Constraint(expr=(d0 - c + 1).mod(size), is_equality=True),
        af.Constraint(expr=d0 - g * size, is_equality=False),
        af.Constraint(expr=-d0 + g * size + (size - 1), is_equality=False)))


def store_rows(b: Builder, A: dict[str, at.AttrAliasRef], c: Value, acc: Value, m: Value, n: Value, tc: ty.Type,
               rc: int, consts: dict[str, Value], tag: str) -> None:
    """Store the f32 accumulator `acc` (bm x w) into C at (`m`, `n`) in chunks of `rc` rows,
    each rounded to C's type `tc` just before its store."""
    bm, w = acc.type.shape  # type: ignore[attr-defined]
    with b.for_(consts["0"], consts["bm"], consts[f"rc{tag}"], names=[f"sc_ci{tag}"]) as (ci,):
        part = b.extract_slice(acc, [ci, 0], [rc, w], name=f"sc_cpart{tag}")
        if tc != ty.F32:
            part = b.arith.truncf(part, result_types=[ty.tensor((rc, w), tc)], name=f"sc_cres{tag}")
        row = b.arith.addi(m, ci, name=f"sc_crow{tag}")
        b.store(part, b.access_tile(c, [row, n], A[f"cchunk{tag}"], [rc, w], A["id2"], name=f"sc_tc{tag}"))


def emit_ring(k: MatmulKernel, fn: Operation, p: dict[str, int]) -> Module:
    gm, g, bm, bn, kp = p["gm"], p["gn"], p["bm"], p["bn"], p["bk"]
    M, N, K = k.M, k.N, k.K
    nt, q = N // g, K // (g * kp)
    rest = nt % bn  # a last, narrower block of columns when bn does not divide the tile's columns
    widths = {"": bn, **({"r": rest} if rest else {})}
    rcs = {tag: chunk_rows(bm, w, k.c.itemsize) for tag, w in widths.items()}
    ta, tb, tc = scalar(k.a.dtype), scalar(k.b.dtype), scalar(k.c.dtype)
    b = Builder()
    b.note("scheduled by ktir schedule: A's row blocks passed around ring groups of tiles (see the report)")
    sets = {"a": box(M, K), "b": box(K, N), "c": box(M, N), "ablk": box(bm, kp),
            **{f"bblk{tag}": box(kp, w) for tag, w in widths.items()},
            **{f"cchunk{tag}": box(rcs[tag], w) for tag, w in widths.items()},
            "id2": projection(2), "group": group_tiles(g), "groups": box(gm), "left": left_neighbour(g)}
    A = {n: b.alias(f"sched_{n}", v) for n, v in sets.items()}
    part_t = ty.tensor((bm, kp), ta)
    fut_t = ty.TileFutureType(partial_types=(part_t,), groups=A["groups"])
    # grid [g, gm]: the g tiles of a ring group differ in dimension 0, so their linear ids are consecutive
    with b.func(k.name, arguments(b, fn), grid=[g, gm]) as params:
        c, zero, tj, ti, views = prologue(b, A, k, params, (
            ("0", 0), ("1", 1), ("g", g), ("gl", g - 1), ("q", q), ("ql", q - 1), ("kp", kp), ("bn", bn), ("bm", bm),
            *((f"rc{tag}", rc) for tag, rc in rcs.items()), ("nt", nt), ("nfull", nt - rest)))
        m = b.arith.muli(ti, c["bm"], name="sc_m")
        n0 = b.arith.muli(tj, c["nt"], name="sc_n0")
        n1 = b.arith.addi(n0, c["nfull"], name="sc_n1")

        load = block_loader(b, A, views)

        def chunk_k(r: Value, s: Value, tag: str) -> Value:
            return ring_chunk_k(b, c, tj, r, s, f"sc_{tag}")

        def column_block(n: Value, w: int, wt: str) -> None:
            """The columns [n, n + w) of the tile's rows: the ring over K, then the rounded stores."""

            def own_chunk(r: Value, tag: str) -> Value:
                own_k = b.arith.muli(b.arith.addi(b.arith.muli(r, c["g"], name=f"sc_rg0{tag}{wt}"), tj,
                                                  name=f"sc_own{tag}{wt}"), c["kp"], name=f"sc_ownk{tag}{wt}")
                return load(f"sc_mine{tag}{wt}", "a", m, own_k, (bm, kp), ta, "ablk")

            def load_b(r: Value, s: Value, tag: str) -> Value:
                return load(f"sc_{tag}bblk{wt}", "b", chunk_k(r, s, f"{tag}{wt}"), n, (kp, w), tb, f"bblk{wt}")

            init = b.fill(zero, b.empty(ty.tensor((bm, w), ty.F32), f"sc_e{wt}"), f"sc_init{wt}")
            pass_on = ring_pass_on(b, A, "group", fut_t, part_t, "sc_", wt)
            acc = ring_k_loop(b, c, q, init, own_chunk, pass_on, load_b, f"sc{wt}_")
            store_rows(b, A, views["c"], acc, m, n, tc, rcs[wt], c, wt)

        with b.for_(n0, n1, c["bn"], names=["sc_n"]) as (n,):
            column_block(n, bn, "")
        if rest:  # the tile's last columns, narrower than bn
            column_block(n1, rest, "r")
        b.func_return()
    return located(b.module, f"{k.name}.scheduled.ktir")
