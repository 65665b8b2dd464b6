"""Emit the ring matmul with K split: `sk` rings, each over its own share of K, partials added at the end.

Grid [sk, g] (tile coordinates (s, j); linear id t = s + sk j, so the sk tiles of one ring
position are consecutive on the ring). Tile (s, j) owns C's columns [j Nt, (j+1) Nt)
(Nt = N / g) for all M rows, in blocks of bn columns, and computes their partial sum over
K's share [s Ks, (s+1) Ks) (Ks = K / sk): the ring form of `emit_ring` over that share,
among the g tiles of split s (tile t receives from t - sk, its left neighbour in the ring
of split s). Then the sk tiles of ring position j add their partials with
`ktdp.inter_tile_reduce`, in chunks of rows (so a tile holds one chunk of each other partial
at a time). When sk divides M and the point asks for it (`rs`, on by default) the chunks
are dealt round the sk tiles (a reduce-scatter):
chunk o of every sk consecutive chunks is added, rounded and stored by tile s = o, so each
tile receives (sk - 1) / sk of a block's partials and stores 1 / sk of its rows; every tile
posts its sk chunks before it receives its own, so no tile's receive waits on another's.
Otherwise every chunk is added and stored by the first tile (s = 0).

Against the ring over all of K on every tile (`emit_ring`, grid [1, sk g]), each tile passes
on 1 / sk of A instead of all of it, for one exchange of f32 partials per block of columns:
on Spyre's timeline the tiles' network ports, which carry both A's chunks and the tile's
memory traffic one transfer at a time, are what bounds a 512-token projection, and this is
the trade that relieves them (`space_ringsplit` prices it).
"""

from __future__ import annotations

from ktir.builder import Builder, Value, located
from ktir.dialects.names import Arith, Ktdp, Linalg
from ktir.ir import affine as af
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .emit_shared import (
    arguments,
    block_loader,
    prologue,
    ring_chunk_k,
    ring_k_loop,
    ring_pass_on,
    store_c_block,
    sum_on_first_tile,
)
from .kernels import MatmulKernel
from .sets import box, group_first, group_tiles, projection, scalar
from .space_ring import ROUNDED_CHUNK, chunk_rows
from .space_ringsplit import scattered


def split_ring(sk: int, tiles: int) -> af.IntegerSet:
    """(t)[s]: the tiles of split s, t = s + sk j for j in [0, tiles / sk)."""
    d0, s0 = af.dim(0), af.sym(0)
    return af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.Constraint(expr=(d0 - s0).mod(sk), is_equality=True),
        af.Constraint(expr=d0, is_equality=False),
        af.Constraint(expr=-d0 + (tiles - 1), is_equality=False)))


def split_left(sk: int, tiles: int) -> af.IntegerSet:
    """(p)[c, s]: the producer p consumer c of split s receives from, (c - sk) mod tiles."""
    d0, c = af.dim(0), af.sym(0)
    return af.IntegerSet(num_dims=1, num_symbols=2, constraints=(
        af.Constraint(expr=(d0 - c + sk).mod(tiles), is_equality=True),
        af.Constraint(expr=d0, is_equality=False),
        af.Constraint(expr=-d0 + (tiles - 1), is_equality=False)))


def group_member(size: int, o: int) -> af.IntegerSet:
    """Tile o of group s0 (groups of `size` consecutive tiles)."""
    d0, s0 = af.dim(0), af.sym(0)
    return af.IntegerSet(num_dims=1, num_symbols=1,
                         constraints=(af.Constraint(expr=d0 - s0 * size - o, is_equality=True),))


def emit_ringsplit(k: MatmulKernel, fn: Operation, p: dict[str, int], chunk: int = ROUNDED_CHUNK) -> Module:
    """The module for point `p` of the split ring; partials are added and stored in chunks of rows
    of at most `chunk` bytes of C."""
    sk, g, bn, kp = p["sk"], p["gn"], p["bn"], p["bk"]
    M, N, K = k.M, k.N, k.K
    tiles, nt, ks = sk * g, N // g, K // sk
    q = ks // (g * kp)
    assert nt % bn == 0 and ks % (g * kp) == 0 and k.init == 0.0, p
    bm = M
    scatter = scattered(M, sk) and bool(p.get("rs", 1))
    # scattered, a tile posts sk chunks at once: each 1 / sk of the limit
    rc = chunk_rows(bm // sk, bn, k.c.itemsize, chunk // sk) if scatter else chunk_rows(bm, bn, k.c.itemsize, chunk)
    ta, tb, tc = scalar(k.a.dtype), scalar(k.b.dtype), scalar(k.c.dtype)
    acc_t = ty.tensor((bm, bn), ty.F32)
    b = Builder()
    b.note("scheduled by ktir schedule: K split over rings of tiles, A's chunks passed around each ring, partial "
           "sums added by inter_tile_reduce (see the report)")
    sets = {"a": box(M, K), "b": box(K, N), "c": box(M, N), "ablk": box(bm, kp), "bblk": box(kp, bn),
            "cchunk": box(rc, bn), "id2": projection(2), "ring": split_ring(sk, tiles), "splits": box(sk),
            "left": split_left(sk, tiles), "group": group_tiles(sk), "first": group_first(sk), "positions": box(g),
            **({f"own{o}": group_member(sk, o) for o in range(sk)} if scatter else {})}
    A = {n: b.alias(f"rs_{n}", v) for n, v in sets.items()}
    part_t = ty.tensor((bm, kp), ta)
    chunk_fut = ty.TileFutureType(partial_types=(part_t,), groups=A["splits"])
    chunk_t = ty.tensor((rc, bn), ty.F32)
    acc_fut = ty.TileFutureType(partial_types=(chunk_t,), groups=A["positions"])
    with b.func(k.name, arguments(b, fn), grid=[sk, g]) as params:
        c, zero, ts, tj, views = prologue(b, A, k, params, (
            ("0", 0), ("1", 1), ("g", g), ("gl", g - 1), ("q", q), ("ql", q - 1), ("kp", kp), ("bn", bn), ("bm", bm), ("rc", rc),
            ("nt", nt), ("ks", ks), ("rcs", rc * sk), *((f"o{o}", o * rc) for o in range(1, sk)),
            *((f"s{o}", o) for o in range(2, sk))))
        k0 = b.arith.muli(ts, c["ks"], name="rs_k0")
        n0 = b.arith.muli(tj, c["nt"], name="rs_n0")
        n1 = b.arith.addi(n0, c["nt"], name="rs_n1")
        first = b.cmp(Arith.cmpi, "eq", ts, c["0"], name="rs_first")
        zchunk = b.fill(zero, b.empty(chunk_t, "rs_ze"), "rs_zchunk")

        load = block_loader(b, A, views)

        def chunk_k(r: Value, s: Value, tag: str) -> Value:
            return ring_chunk_k(b, c, tj, r, s, f"rs_{tag}", k0)

        with b.for_(n0, n1, c["bn"], names=["rs_n"]) as (n,):

            def own_chunk(r: Value, tag: str) -> Value:
                own_k = b.arith.addi(k0, b.arith.muli(b.arith.addi(b.arith.muli(r, c["g"], name=f"rs_rg0{tag}"), tj,
                                                                   name=f"rs_own{tag}"), c["kp"], name=f"rs_ownkk{tag}"),
                                     name=f"rs_ownk{tag}")
                return load(f"rs_mine{tag}", "a", c["0"], own_k, (bm, kp), ta, "ablk")

            def load_b(r: Value, s: Value, tag: str, n: Value = n) -> Value:
                return load(f"rs_{tag}bblk", "b", chunk_k(r, s, tag), n, (kp, bn), tb, "bblk")

            init = b.fill(zero, b.empty(acc_t, "rs_e"), "rs_init")
            acc = ring_k_loop(b, c, q, init, own_chunk, ring_pass_on(b, A, "ring", chunk_fut, part_t, "rs_"), load_b, "rs_")
            if scatter:
                # chunk o of every sk is added, rounded and stored by tile s = o; every tile posts
                # all sk of its chunks first, so no receive waits on another tile's receive
                with b.for_(c["0"], c["bm"], c["rcs"], names=["rs_ci"]) as (ci,):
                    rows = [ci] + [b.arith.addi(ci, c[f"o{o}"], name=f"rs_ci{o}") for o in range(1, sk)]
                    futs = []
                    for o in range(sk):
                        part = b.extract_slice(acc, [rows[o], c["0"]], [rc, bn], name=f"rs_part{o}")
                        with b.produce(A["group"], acc_fut, f"rs_p{o}_gid", f"rs_p{o}_f"):
                            b.yield_(part, op=Ktdp.yield_partial)
                        futs.append(b.last_results[0])
                    totals = []
                    for o in range(sk):
                        with b.reduce_tiles(futs[o], A[f"own{o}"], [zchunk], [f"rs_p{o}_l", f"rs_p{o}_r"],
                                            [f"rs_p{o}_total"]) as (lhs, rhs):
                            b.yield_(b.dps(Linalg.add, [lhs, rhs], [lhs], name=f"rs_p{o}_add"),
                                     op=Ktdp.yield_reduced)
                        totals.append(b.last_results[0])
                    for o in range(sk):
                        mine = first if o == 0 else b.cmp(Arith.cmpi, "eq", ts, c["1"] if o == 1 else c[f"s{o}"],
                                                          name=f"rs_is{o}")
                        with b.if_(mine):
                            store_c_block(b, A, views["c"], totals[o], rows[o], n, tc, "cchunk", f"rs_p{o}")
            else:
                # the partials added and stored in chunks of rc rows on the first tile: it holds one
                # chunk of each other split's partial at a time, not a whole block
                with b.for_(c["0"], c["bm"], c["rc"], names=["rs_ci"]) as (ci,):
                    part = b.extract_slice(acc, [ci, c["0"]], [rc, bn], name="rs_part")
                    sum_on_first_tile(b, A, part, acc_fut, zchunk, first, views["c"], ci, n, tc, "cchunk", "rs_p")
        b.func_return()
    return located(b.module, f"{k.name}.scheduled.ktir")
