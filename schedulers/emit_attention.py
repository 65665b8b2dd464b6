"""Recognise flash-style attention and emit it scheduled over the tiles.

Recognised: one function whose two `linalg.matmul` are S = Q K^T (K read transposed through
the indexing maps) and O += P V, with Q, K, V loaded from, and O stored to, four global
views of function arguments, Q and O `[S, D]` or `[H, S, D]` and K and V `[L, D]` or
`[H, L, D]` (H KV heads), or Q and O `[H G, T, D]` (G query heads per KV head, the same
memory as `[H, G T, D]`), f16 or bf16; an online softmax (`math.exp`, a `linalg.reduce` of
`arith.maximumf`); the scores scaled by an f32 constant (`arith.mulf` in a `linalg.generic`)
and, if that generic compares indices (`arith.cmpi` + `arith.select`), masked causally (key
position > query position gets -inf; the query position is the row, or the row modulo L when
the rows stack G query heads of L tokens). The compute ops must be exactly those of the
online-softmax step (`_COMPUTE`), so that an epilogue or a bias is never silently dropped;
the index arithmetic and loop structure are free. The rewrite emits the standard
online-softmax kernel for those numbers, and `--check` compares it with the input in the
interpreter.

The emitted kernel splits the H x (S / bq) query blocks over a grid of min(units, tiles)
tiles (causal: heaviest first in snake order, `block_of`); a causal block with grouped heads
holds the G heads at bq / G tokens. Per query block, the Q block stays resident in the
tile's scratchpad for the whole KV loop; the KV loop walks blocks of bkv keys (whole
128-byte sticks) up to the causal bound. With double buffering the next K and V blocks
(and the next query block's Q and first K/V blocks) are loaded ahead, each O is stored
during the next block, and with one KV split the next block's scores are computed while
this block's softmax runs and the K/V stream runs `DEPTH` key blocks ahead of its step;
prefetches are `scf.if`-guarded so no access leaves the view or loads what no step uses.
The softmax, the accumulator's rescale and the normalisation update their tensor in place
(outs: the tensor they read), and zero blocks are filled where they are used, so the tile
holds one buffer of each (what `spaces.AttentionSpace` reserves). Views of `[H, S, D]` arrays are read as `[H S, D]`: same memory,
row offset h S.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ktir.builder import Builder, Value, located
from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Math, Scf, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation
from ktir.syntax.printer import print_module

from .kernels import AttentionKernel, Operand, _operand, _Values, _view_of_load, func_name, function_of
from .sets import box, group_first, group_tiles, projection


@dataclass
class AttentionMatch:
    """A recognised attention kernel and what the rewrite needs beyond the cost model's numbers."""

    kernel: AttentionKernel
    q: Operand
    k: Operand
    v: Operand
    o: Operand
    scale: float


def _source_view(name: str, vals: _Values) -> Operand | None:
    """The global view a tensor was loaded from (through reshapes), or None."""
    op = vals.defs.get(name)
    while op is not None and op.name in (Tensor.collapse_shape, Tensor.cast):
        op = vals.defs.get(op.operands[0])
    if op is None or op.name != Ktdp.load:
        return None
    view = _view_of_load(op, vals)
    return _operand(view, vals) if view is not None else None


def _scale(ops: list[Operation], vals: _Values) -> float | None:
    """The f32 constant the scores are multiplied by inside a linalg.generic (1.0 if none)."""
    found = []
    for op in ops:
        if op.name != Linalg.generic:
            continue
        for inner in op.walk():
            if inner.name != Arith.mulf:
                continue
            for o in inner.operands:
                d = vals.defs.get(o)
                value = d.attributes.get("value") if d is not None and d.name == Arith.constant else None
                if isinstance(value, at.FloatAttr):
                    found.append(float(value.value))
    if len(set(found)) > 1:
        return None
    return found[0] if found else 1.0


# The online-softmax step, op for op: two exponentials (P and the rescale factor), the running
# max and sum (reductions of maximumf and addf), the rescale of l (linalg.mul) and of the
# accumulator, the final division, the two products and their roundings. A kernel with
# anything more (an epilogue, a bias) is not this form: its extra work would be dropped.
_COMPUTE = {Math.exp: 2, Arith.divf: 1, Arith.mulf: 2, Arith.subf: 2, Arith.addf: 1, Arith.maximumf: 1,
            Arith.truncf: 2, Linalg.reduce: 2, Linalg.generic: 5, Linalg.mul: 1, Linalg.matmul: 2}
_FREE = {Arith.constant, Arith.addi, Arith.subi, Arith.muli, Arith.divui, Arith.remui, Arith.ceildivsi,
         Arith.minsi, Linalg.fill, Linalg.yield_, Linalg.index, Tensor.empty, Tensor.collapse_shape,
         Tensor.expand_shape, Tensor.cast, Scf.for_, Scf.yield_, Func.return_, Ktdp.get_compute_tile_id,
         Ktdp.construct_memory_view, Ktdp.construct_access_tile, Ktdp.load, Ktdp.store}


def _is_online_softmax(ops: list[Operation]) -> bool:
    counts = Counter(op.name for op in ops)
    mask = counts.pop(Arith.cmpi, 0), counts.pop(Arith.select, 0)
    if mask not in ((0, 0), (1, 1)):
        return False
    return all(counts.get(n, 0) == c for n, c in _COMPUTE.items()) and set(counts) <= set(_COMPUTE) | _FREE


def _qk_maps(mm: Operation, aliases: Mapping[str, at.Attribute]) -> bool:
    """Whether the matmul's indexing maps are S[i, j] += Q[i, d] K[j, d] (K read transposed)."""
    maps = mm.attributes.get("indexing_maps")
    if not isinstance(maps, at.ArrayAttr) or len(maps.elements) != 3:
        return False
    found = []
    for m in maps.elements:
        if isinstance(m, at.AttrAliasRef):
            m = aliases.get(m.name) or aliases.get("#" + m.name)  # type: ignore[assignment]
        if not isinstance(m, at.AffineMapAttr) or m.value.num_dims != 3 or m.value.num_symbols:
            return False
        found.append(tuple(af.evaluate(e, (1, 2, 3)) for e in m.value.results))
    return found == [(1, 3), (2, 3), (1, 2)]


# arith.cmpi predicates: "key > query" as (key, query) with sgt/ugt, or (query, key) with slt/ult
_GREATER, _LESS = {4, 8}, {2, 6}


def _future_mask(ops: list[Operation], vals: _Values) -> int | None:
    """The mask's form when its comparison is key position > query position: 0 when the query
    position is the row (linalg.index 0 plus offsets), T when it is the row modulo a constant T
    (`arith.remui`: rows that stack several query heads of T tokens each); None otherwise."""
    cmp = next(op for op in ops if op.name == Arith.cmpi)

    def dims(name: str) -> set[int]:
        op = vals.defs.get(name)
        if op is None:
            return set()
        if op.name == Linalg.index:
            d = op.attributes.get("dim")
            return {int(d.value)} if isinstance(d, at.IntegerAttr) else set()
        if op.name in (Arith.addi, Arith.subi, Arith.muli):
            return set().union(*(dims(o) for o in op.operands))
        return set()

    def position(name: str) -> tuple[set[int], int | None]:
        """(dims, modulus): the linalg.index dims of a position and the constant it is taken modulo
        (0 for none, None for a modulus that is not a positive constant)."""
        op = vals.defs.get(name)
        if op is not None and op.name == Arith.remui:
            t = vals.const(op.operands[1])
            return dims(op.operands[0]), t if t is not None and t > 0 else None
        return dims(name), 0

    pred = cmp.attributes.get("predicate")
    p = int(pred.value) if isinstance(pred, at.IntegerAttr) else -1
    if p in _GREATER:
        key, query = position(cmp.operands[0]), position(cmp.operands[1])
    elif p in _LESS:
        query, key = position(cmp.operands[0]), position(cmp.operands[1])
    else:
        return None
    if key != ({1}, 0) or query[0] != {0}:
        return None
    return query[1]


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


def match_attention(module: Module, sizes: Mapping[str, int] | None = None,
                    func: str | None = None) -> AttentionMatch | None:
    """The attention kernel of the module's function (`func`, or its only one), or None when
    it is not of that form."""
    fn = function_of(module, func)
    vals = _Values(fn, sizes or {})
    ops = list(fn.walk())[1:]
    names = {op.name for op in ops}
    if any(n.startswith("ktdp.inter_tile") or n in (Ktdp.construct_indirect_access_tile,
                                                    Ktdp.construct_distributed_memory_view) for n in names):
        return None
    if not _is_online_softmax(ops):
        return None
    matmuls = [op for op in ops if op.name == Linalg.matmul]
    stores = [op for op in ops if op.name == Ktdp.store]
    if len(stores) != 1:
        return None
    qk, pv = (matmuls if "indexing_maps" in matmuls[0].attributes else matmuls[::-1])
    if not _qk_maps(qk, module.attr_aliases) or "indexing_maps" in pv.attributes:
        return None
    q, k = _source_view(qk.operands[0], vals), _source_view(qk.operands[1], vals)
    v = _source_view(pv.operands[1], vals)
    if _source_view(pv.operands[0], vals) is not None:
        return None  # P must be computed, not loaded
    store_view = _view_of_load(stores[0], vals)
    o = _operand(store_view, vals) if store_view is not None else None
    if q is None or k is None or v is None or o is None:
        return None
    loaded = [_source_view(op.results[0], vals) for op in ops if op.name == Ktdp.load]
    if any(x is None or x.arg not in (q.arg, k.arg, v.arg) for x in loaded):
        return None  # every load reads Q, K or V
    ops_views = (q, k, v, o)
    if len({x.arg for x in ops_views}) != 4 or q.shape != o.shape or k.shape != v.shape or len(q.shape) != len(k.shape):
        return None
    if q.shape[-1] != k.shape[-1] or (q.shape[:-2] != k.shape[:-2] and not (
            len(q.shape) == 3 and q.shape[0] % k.shape[0] == 0)):
        # one head dim; Q [KV heads, rows, D] (a row block may stack a group of query heads) or
        # [query heads, tokens, D] with a group of query heads per KV head (the same memory)
        return None
    if any(getattr(x, "offset", 0) or getattr(x, "strides", ()) not in ((), _row_major(x.shape)) for x in ops_views):
        return None  # the rewrite reads row-major views at the argument's address
    if len({x.dtype for x in ops_views}) != 1 or q.dtype not in ("f16", "bf16") or len(q.shape) not in (2, 3):
        return None
    scale = _scale(ops, vals)
    if scale is None:
        return None
    causal = any(op.name == Arith.cmpi for op in ops)
    H, D = (k.shape[0] if len(k.shape) == 3 else 1), q.shape[-1]
    S = math.prod(q.shape[:-1]) // H  # query rows per KV head
    L = k.shape[-2]
    group = 1
    if causal:
        # the mask compares query and key positions of one sequence: the rows are one query head
        # of L tokens (position = row), or `group` of them stacked (position = row mod L)
        modulus = _future_mask(ops, vals)
        if modulus is None or S % L or (modulus != L and not (modulus == 0 and S == L)):
            return None
        group = S // L
    kernel = AttentionKernel(kv_heads=H, rows=S, kv_len=L, head_dim=D, dtype=q.dtype, causal=causal,
                             name=func_name(fn), group=group)
    return AttentionMatch(kernel, q, k, v, o, scale)


def attention_grid(k: AttentionKernel, bq: int, split: int, tiles: int) -> int:
    """Tiles used: every (query block, KV split) pair, or as many whole groups of `split` tiles as fit."""
    units = k.kv_heads * (k.rows // bq) * split
    return units if units <= tiles else tiles // split * split


def dealt_in_snake(k: AttentionKernel, bq: int, split: int, tiles: int) -> bool:
    """Whether the rewrite deals the query blocks heaviest first in snake order (causal kernels
    whose blocks fill whole rounds of the tile groups): causal blocks late in the sequence see
    more keys, and dealing them round-robin in sequence order would give some tiles every
    late block. Round r gives block v = r G + p to group p, p reversed in odd rounds, and
    block v is head v mod H at token block (blocks - 1 - v // H). (One group: nothing to deal.)"""
    units, stride = k.kv_heads * (k.rows // bq), attention_grid(k, bq, split, tiles) // split
    return k.causal and stride > 1 and units % stride == 0


def block_of(k: AttentionKernel, bq: int, split: int, tiles: int, u: int) -> tuple[int, int]:
    """(KV head, query block within the head) of the loop's u-th query block, as the rewrite computes it."""
    blocks = k.rows // bq
    if not dealt_in_snake(k, bq, split, tiles):
        return u // blocks, u % blocks
    stride = attention_grid(k, bq, split, tiles) // split
    r, p = divmod(u, stride)
    v = r * stride + (stride - 1 - p if r % 2 else p)
    return v % k.kv_heads, blocks - 1 - v // k.kv_heads


def query_tokens(k: AttentionKernel, bq: int, qb: int) -> tuple[int, int]:
    """[first, last + 1) of the tokens of query block qb: a block holds the `group` query heads of a
    KV head at bq / group consecutive tokens when causal with a group, else bq consecutive rows."""
    if k.causal and k.group > 1:
        tb = bq // k.group
        return qb * tb, (qb + 1) * tb
    return qb * bq, (qb + 1) * bq


# -inf as MLIR prints it for f32
_NINF = at.FloatAttr(value=-math.inf, type=ty.F32, bits=0xFF800000)


def _aliases(b: Builder, H: int, S: int, L: int, D: int, bq: int, bkv: int, sk: int, grid: int,
             heads_dim: bool, group: int) -> dict[str, at.AttrAliasRef]:
    """The sets and maps of the kernel, as `#sa_*` aliases."""
    sets: dict[str, af.IntegerSet | af.AffineMap] = {"qall": box(H * S, D), "kall": box(H * L, D), "qblk": box(bq, D), "kvblk": box(bkv, D)}
    if group > 1:  # Q and O as [query heads, tokens, D]; a block is the group's heads at bq / group tokens
        sets |= {"qheads": box(H * group, S // group, D), "qblkg": box(group, bq // group, D), "id3": projection(3)}
    if heads_dim:
        sets |= {"qall3": box(H, S, D), "kall3": box(H, L, D), "qblk3": box(1, bq, D, fixed=(0,)),
                 "kvblk3": box(1, bkv, D, fixed=(0,)), "id3": projection(3)}
    sets |= {"id1": projection(1), "id2": projection(2), "row": projection(2, 0), "qk_q": projection(3, 0, 2),
             "qk_k": projection(3, 1, 2), "qk_s": projection(3, 0, 1)}
    if sk > 1:
        sets |= {"split_group": group_tiles(sk), "split_first": group_first(sk), "groups": box(grid // sk)}
    return {n: b.alias(f"sa_{n}", v) for n, v in sets.items()}


DEPTH = 8  # key blocks the pipelined K/V stream runs ahead of the step using them


def stream_depth(p: dict[str, int]) -> int:
    """How many key blocks ahead of its step the pipelined loop (double buffering, one KV split) loads
    K and V: one step's transfers take about 3/4 of its compute, so a stream only a block ahead
    leaves the DMA idle, then exposes each Q load and O store (a query block's 16 steps of K/V);
    `DEPTH` blocks ahead the stream absorbs them."""
    return int(p.get("depth", DEPTH))


def emit_attention(m: AttentionMatch, fn: Operation, p: dict[str, int], tiles: int, heads_dim: bool = False) -> Module:
    """The scheduled kernel; `heads_dim` reads `[H, S, D]` views (else flat `[H S, D]` ones)."""
    k = m.kernel
    H, S, L, D, dt = k.kv_heads, k.rows, k.kv_len, k.head_dim, ty.FloatType(kind=k.dtype)  # type: ignore[arg-type]
    bq, bkv, db, sk = p["bq"], p["bkv"], bool(p["db"]), p.get("s", 1)
    depth = stream_depth(p)
    units = H * (S // bq)
    grid = attention_grid(k, bq, sk, tiles)
    vec, mat, acc = ty.tensor((bq,), ty.F32), ty.tensor((bq, bkv), ty.F32), ty.tensor((bq, D), ty.F32)
    qt, pt = ty.tensor((bq, D), dt), ty.tensor((bq, bkv), dt)
    b = Builder()
    b.note("scheduled by ktir schedule: query blocks over the tiles, Q resident, K/V streamed (see the report)")
    G = k.group if k.causal else 1
    tb = bq // G  # tokens per query block
    if S % bq or bq % G or (S // G) % tb:
        raise ValueError(f"query block {bq} is not {G} query heads at a divisor of {S // G} tokens")
    if sk > 1 and units % (grid // sk):
        raise ValueError(f"{units} query blocks do not split evenly over {grid // sk} groups of tiles: the tiles "
                         "would join the KV splits' combines unequally often")
    snake = dealt_in_snake(k, bq, sk, tiles)
    A = _aliases(b, H, S, L, D, bq, bkv, sk, grid, heads_dim, G)
    params = fn.regions[0].blocks[0].arguments
    with b.func(k.name, [(a.name, a.type) for a in params], grid=[grid]) as args:
        arg = {a.name[1:]: a for a in args}
        c = {n: b.index(v, f"sa_{n}") for n, v in
             (("c0", 0), ("bq", bq), ("bkv", bkv), ("S", S), ("L", L), ("qblocks", S // bq), ("units", units),
              ("ulast", units - 1), ("kahead", (depth + 1) * bkv), ("vahead", depth * bkv),
              ("grid", grid))}
        if sk > 1:  # tile t works on KV split t mod sk of the query blocks of group t / sk
            c |= {n: b.index(v, f"sa_{n}") for n, v in (("sk", sk), ("splitlen", L // sk), ("groups", grid // sk))}
        if G > 1:
            c |= {n: b.index(v, f"sa_{n}") for n, v in (("G", G), ("tb", tb))}
        if snake:
            c |= {n: b.index(v, f"sa_{n}") for n, v in (("one", 1), ("two", 2), ("H", H), ("lastp", grid // sk - 1),
                                                         ("lastqb", S // bq - 1))}
        zero = b.constant(at.FloatAttr(value=0.0, type=ty.F32), name="sa_zero")
        ninf = b.constant(_NINF, name="sa_ninf")
        scale = b.constant(at.FloatAttr(value=m.scale, type=ty.F32), name="sa_scale")
        (tid,) = b.tile_id(1, ["sa_tid"])
        views = {}
        for v, operand in (("q", m.q), ("k", m.k), ("v", m.v), ("o", m.o)):
            rows, kind = (S, "q") if v in "qo" else (L, "k")
            sizes, strides, cset = ([H, rows, D], [rows * D, D, 1], f"{kind}all3") if heads_dim else (
                [H * rows, D], [D, 1], f"{kind}all")
            if G > 1 and v in "qo":  # the same memory as [query heads, tokens, D]
                sizes, strides, cset = [H * G, S // G, D], [S // G * D, D, 1], "qheads"
            views[v] = b.memory_view(arg[operand.arg], sizes, strides, dt, at.MemorySpaceAttr(kind="global"),
                                     A[cset], name=f"sa_{v}v")
        e_vec, e_mat, e_acc = b.empty(vec, "sa_vec"), b.empty(mat, "sa_mat"), b.empty(acc, "sa_am")
        minit, linit = b.fill(ninf, e_vec, "sa_minit"), b.fill(zero, e_vec, "sa_linit")
        # with a KV split the zero accumulator is also the combine's identity; otherwise each query
        # block fills its own, which the first step then rescales in place (no zero block held all along)
        azero = b.fill(zero, e_acc, "sa_azero") if sk > 1 else None
        if sk > 1:
            split = b.arith.remui(tid, c["sk"], name="sa_split")
            grp = b.arith.divui(tid, c["sk"], name="sa_grp")
            kstart = b.arith.muli(split, c["splitlen"], name="sa_kstart")
            kstop = b.arith.addi(kstart, c["splitlen"], name="sa_kstop")
            first = b.cmp(Arith.cmpi, "eq", split, c["c0"], name="sa_first")
            pos, stride = grp, c["groups"]
        else:
            kstart, kstop = c["c0"], c["L"]
            pos, stride = tid, c["grid"]
        def coords(u: Value, sfx: str) -> tuple[Value, Value, Value, Value]:
            """(KV head, row of the block in the head's rows, first token, first query head) of the u-th
            query block of the loop (`block_of`)."""
            if snake:  # round r, position p (reversed in odd rounds), heaviest blocks first
                rnd = b.arith.divui(u, stride, name=f"sa_round{sfx}")
                odd = b.cmp(Arith.cmpi, "eq", b.arith.remui(rnd, c["two"], name=f"sa_parity{sfx}"), c["one"],
                            name=f"sa_odd{sfx}")
                p_in = b.arith.remui(u, stride, name=f"sa_lane{sfx}")
                back = b.arith.subi(c["lastp"], p_in, name=f"sa_back{sfx}")
                p_ = b.arith.select(odd, back, p_in, name=f"sa_pos{sfx}")
                dealt = b.arith.addi(b.arith.muli(rnd, stride, name=f"sa_rstart{sfx}"), p_, name=f"sa_dealt{sfx}")
                h = b.arith.remui(dealt, c["H"], name=f"sa_h{sfx}")
                late = b.arith.divui(dealt, c["H"], name=f"sa_late{sfx}")
                qb = b.arith.subi(c["lastqb"], late, name=f"sa_qb{sfx}")
            else:
                h = b.arith.divui(u, c["qblocks"], name=f"sa_h{sfx}")
                qb = b.arith.remui(u, c["qblocks"], name=f"sa_qb{sfx}")
            q0 = b.arith.muli(qb, c["bq"], name=f"sa_q0{sfx}")
            if G == 1:
                return h, q0, q0, h
            t0 = b.arith.muli(qb, c["tb"], name=f"sa_t0{sfx}")
            return h, q0, t0, b.arith.muli(h, c["G"], name=f"sa_hq{sfx}")

        def load_q(at_: tuple[Value, Value, Value, Value], dst: str) -> Value:
            """The query block: bq rows of KV head h, or the group's G query heads (from hq) at tb tokens from t0."""
            h, q0, t0, hq = at_
            if G > 1:
                tq = b.access_tile(views["q"], [hq, t0, c["c0"]], A["qblkg"], [G, tb, D], A["id3"], name=f"{dst}_t")
                return b.collapse_shape(b.load(tq, dt, name=f"{dst}_3"), [[0, 1], [2]], qt, name=dst)
            if heads_dim:
                tq = b.access_tile(views["q"], [h, q0, c["c0"]], A["qblk3"], [1, bq, D], A["id3"], name=f"{dst}_t")
                return b.collapse_shape(b.load(tq, dt, name=f"{dst}_3"), [[0, 1], [2]], qt, name=dst)
            r = b.arith.addi(b.arith.muli(h, c["S"], name=f"{dst}_base"), q0, name=f"{dst}_r")
            return b.load(b.access_tile(views["q"], [r, c["c0"]], A["qblk"], [bq, D], A["id2"], name=f"{dst}_t"), dt,
                          name=dst)

        def load_kv(dst: str, v: str, head: Value, inrow: Value) -> Value:
            """The bkv rows of K or V of KV head `head` from row `inrow`."""
            if heads_dim:
                t = b.access_tile(views[v], [head, inrow, c["c0"]], A["kvblk3"], [1, bkv, D], A["id3"], name=f"{dst}_t")
                return b.collapse_shape(b.load(t, dt, name=f"{dst}_3"), [[0, 1], [2]], ty.tensor((bkv, D), dt),
                                        name=dst)
            r = b.arith.addi(b.arith.muli(head, c["L"], name=f"{dst}_base"), inrow, name=f"{dst}_r")
            return b.load(b.access_tile(views[v], [r, c["c0"]], A["kvblk"], [bkv, D], A["id2"], name=f"{dst}_t"), dt,
                          name=dst)

        # With double buffering and several query blocks per tile, the next block's Q and first K
        # and V blocks are loaded while this one computes, and (one KV split) its O is stored while
        # the next one computes:
        # every transfer after the KV loop is ready, so the tile's DMA queue never waits on compute.
        prefetch = db and units > grid // sk  # a tile has more than one query block
        pipelined = db and sk == 1
        defer = prefetch and sk == 1
        if prefetch:
            wf = coords(pos, "_f")
            carried = [load_q(wf, "sa_qf"), load_kv("sa_kf", "k", wf[0], kstart), load_kv("sa_vf", "v", wf[0], kstart)]
            cnames, cresults = ["sa_qcur", "sa_kfirst", "sa_vfirst"], ["sa_ql", "sa_kfl", "sa_vfl"]
            if defer:  # no O yet: the first iteration stores nothing
                carried.append(b.empty(qt, "sa_onone"))
                cnames.append("sa_oprev")
                cresults.append("sa_olast")
            units_loop = b.for_(pos, c["units"], stride, carried, names=["sa_u", *cnames], results=cresults)
        else:
            units_loop = b.for_(pos, c["units"], stride, names=["sa_u"])
        with units_loop as (u, *qcur):
            where = coords(u, "")
            h, q0, t0, hq = where
            kbase = b.arith.muli(h, c["L"], name="sa_kbase")

            def load(dst: str, v: str, inrow: Value, rows: int, blk: str) -> Value:
                """Load `rows` rows of KV head %sa_h from row `inrow` of the head."""
                if heads_dim:
                    t = b.access_tile(views[v], [h, inrow, c["c0"]], A[f"{blk}3"], [1, rows, D], A["id3"],
                                      name=f"{dst}_t")
                    x3 = b.load(t, dt, name=f"{dst}_3")
                    return b.collapse_shape(x3, [[0, 1], [2]], ty.tensor((rows, D), dt), name=dst)
                r = b.arith.addi(kbase, inrow, name=f"{dst}_r")
                t = b.access_tile(views[v], [r, c["c0"]], A[blk], [rows, D], A["id2"], name=f"{dst}_t")
                return b.load(t, dt, name=dst)

            q = qcur[0] if prefetch else load_q(where, "sa_q")  # resident for the whole KV loop
            kend = kstop
            if k.causal:  # key blocks up to the last one holding a key <= the block's last query
                qend = b.arith.addi(t0, c["tb" if G > 1 else "bq"], name="sa_qend")
                nkv = b.arith.ceildivsi(qend, c["bkv"], name="sa_nkv")
                kend = b.arith.muli(nkv, c["bkv"], name="sa_kcausal")
                if sk > 1:  # a split past the causal bound runs no step: its partial is the identity
                    kend = b.arith.minsi(kend, kstop, name="sa_kend")

            def qk(kblk: Value, name: str) -> Value:
                # the scores accumulate into a zero block filled for them (a fill shared by every step
                # would hold a bq x bkv buffer for the whole kernel)
                szero = b.fill(zero, e_mat, f"{name}_z")
                return b.dps(Linalg.matmul, [q, kblk], [szero], {"indexing_maps": [A["qk_q"], A["qk_k"], A["qk_s"]]},
                             name=name)

            def step(s_: Value, k0i: Value, m_: Value, l_: Value, acc_: Value, vblk: Value,
                     sfx: str) -> tuple[Value, Value, Value]:
                """One online-softmax step on the scores of the key block at k0i: (m, l, acc) updated."""
                # the softmax updates the scores in place (outs: the tensor it reads), as do the rescale of
                # the accumulator and the normalisation: one buffer each instead of two
                with b.generic([], [s_], [A["id2"]], ["parallel"] * 2, [f"sa_x{sfx}"], f"sa_sm{sfx}") as (x,):
                    xs = b.arith.mulf(x, scale, name=f"sa_xs{sfx}")
                    if k.causal:
                        i = b.linalg.index(dim=at.IntegerAttr(value=0, type=ty.I64), name=f"sa_i{sfx}")
                        j = b.linalg.index(dim=at.IntegerAttr(value=1, type=ty.I64), name=f"sa_j{sfx}")
                        if G == 1:
                            qi = b.arith.addi(q0, i, name=f"sa_qi{sfx}")
                        elif tb == L:  # one block per KV head (t0 = 0): the token is the row mod L
                            qi = b.arith.remui(i, c["L"], name=f"sa_qi{sfx}")
                        else:  # row i of the block is query head i // tb of the group at token t0 + i mod tb
                            qi = b.arith.addi(t0, b.arith.remui(i, c["tb"], name=f"sa_ti{sfx}"), name=f"sa_qi{sfx}")
                        kj = b.arith.addi(k0i, j, name=f"sa_kj{sfx}")
                        future = b.cmp(Arith.cmpi, "ugt", kj, qi, name=f"sa_future{sfx}")
                        xs = b.arith.select(future, ninf, xs, name=f"sa_r{sfx}")
                    b.yield_(xs, op=Linalg.yield_)
                (sm,) = b.last_results

                def guard(v: str, e: Value, mx: Value) -> None:
                    """exp(x - max) as 0 where the max is -inf. A KV split may see a row's keys all masked
                    (causal rows before the split's first key): without it exp(-inf + inf) is NaN."""
                    if sk > 1:
                        none = b.cmp(Arith.cmpf, "oeq", mx, ninf, name=f"sa_{v}none{sfx}")
                        e = b.arith.select(none, zero, e, name=f"sa_{v}g{sfx}")
                    b.yield_(e, op=Linalg.yield_)

                mnew = b.reduce(Arith.maximumf, [sm], [m_], [1], name=f"sa_mnew{sfx}")
                with b.generic([mnew], [sm], [A["row"], A["id2"]], ["parallel"] * 2,
                               [f"sa_pm{sfx}", f"sa_px{sfx}"], f"sa_p{sfx}") as (pm, px):
                    pe = b.math.exp(b.arith.subf(px, pm, name=f"sa_pd{sfx}"), name=f"sa_pe{sfx}")
                    guard("p", pe, pm)
                (p_,) = b.last_results
                with b.generic([m_, mnew], [e_vec], [A["id1"]] * 3, ["parallel"],
                               [f"sa_old{sfx}", f"sa_new{sfx}", f"sa_ao{sfx}"], f"sa_alpha{sfx}") as (old, new, _):
                    ae = b.math.exp(b.arith.subf(old, new, name=f"sa_ad{sfx}"), name=f"sa_ae{sfx}")
                    guard("a", ae, new)
                (alpha,) = b.last_results
                ls = b.dps(Linalg.mul, [l_, alpha], [e_vec], name=f"sa_ls{sfx}")
                lnew = b.reduce(Arith.addf, [p_], [ls], [1], name=f"sa_lnew{sfx}")
                with b.generic([alpha], [acc_], [A["row"], A["id2"]], ["parallel"] * 2,
                               [f"sa_sa{sfx}", f"sa_aa{sfx}"], f"sa_as{sfx}") as (sa, aa):
                    b.yield_(b.arith.mulf(aa, sa, name=f"sa_ar{sfx}"), op=Linalg.yield_)
                (as_,) = b.last_results
                ph = b.arith.truncf(p_, result_types=[pt], name=f"sa_ph{sfx}")
                anew = b.dps(Linalg.matmul, [ph, vblk], [as_], name=f"sa_anew{sfx}")
                return mnew, lnew, anew

            state = [minit, linit, azero if azero is not None else b.fill(zero, e_acc, "sa_azero")]
            if pipelined:
                # Q K^T of the next key block runs (matrix unit) while the softmax of this one does
                # (vector unit): the loop carries this block's scores, the next K block and this V
                # block, and the last step follows it. One KV split: every block has a step.
                klast = b.arith.subi(kend, c["bkv"], name="sa_klast")
                k_first, v_first = qcur[1:3] if prefetch else (load("sa_k0", "k", kstart, bkv, "kvblk"),
                                                               load("sa_v0", "v", kstart, bkv, "kvblk"))

                def ahead(v: str, at_: Value, held: Value, dst: str) -> Value:
                    """The K or V block at key `at_`, or (past the last block) `held`, a block already loaded."""
                    exists = b.cmp(Arith.cmpi, "sle", at_, klast, name=f"{dst}_in")
                    return b.if_values(exists, lambda: [load(dst, v, at_, bkv, "kvblk")], [held], [f"{dst}_b"])[0]

                # the K/V stream runs `depth` key blocks ahead of the step that uses them: the loop
                # carries the next `depth` K blocks and this and the next depth - 1 V blocks
                ks, vs = [], [v_first]
                for j in range(1, depth + 1):  # in the order the steps use them: K j, then V j
                    kj = b.arith.addi(kstart, b.index(j * bkv, f"sa_koff{j}"), name=f"sa_kat{j}")
                    ks.append(ahead("k", kj, k_first, f"sa_k{j}"))
                    if j < depth:
                        vs.append(ahead("v", kj, v_first, f"sa_v{j}"))
                if defer:
                    # the previous query block's O, stored while this block computes (after the loads
                    # its first steps need, before those of the loop)
                    started = b.cmp(Arith.cmpi, "ne", u, pos, name="sa_started")
                    with b.if_(started):
                        pu = b.arith.subi(u, stride, name="sa_uprev")
                        _store(b, A, views["o"], qcur[3], _at(coords(pu, "_p"), G), c, heads_dim, "_p")
                carry = [qk(k_first, "sa_s0"), *ks, *vs]
                with b.for_(kstart, klast, c["bkv"], state + carry,
                            names=["sa_k0i", "sa_m", "sa_l", "sa_acc", "sa_scur", *[f"sa_kn{j}" for j in range(depth)],
                                   *[f"sa_vc{j}" for j in range(depth)]],
                            results=["sa_mp", "sa_lp", "sa_ap", "sa_sl", *[f"sa_kl{j}" for j in range(depth)],
                                     *[f"sa_vl{j}" for j in range(depth)]]) as (k0i, m_, l_, acc_, scur, *held):
                    kh, vh = held[:depth], held[depth:]
                    kfar = b.arith.addi(k0i, c["kahead"], name="sa_kfar")
                    vfar = b.arith.addi(k0i, c["vahead"], name="sa_vfar")
                    knew, vnew = ahead("k", kfar, kh[-1], "sa_knext"), ahead("v", vfar, vh[-1], "sa_vnext")
                    snext = qk(kh[0], "sa_snext")
                    b.yield_(*step(scur, k0i, m_, l_, acc_, vh[0], ""), snext, *kh[1:], knew, *vh[1:], vnew)
                m_l, l_l, a_l, s_l = b.last_results[:4]
                v_l = b.last_results[4 + depth]
                mf, lf, af_ = step(s_l, klast, m_l, l_l, a_l, v_l, "_e")
            else:
                names, results = ["sa_k0i", "sa_m", "sa_l", "sa_acc"], ["sa_mf", "sa_lf", "sa_af"]
                if db:
                    klast = b.arith.subi(kend, c["bkv"], name="sa_klast")
                    state += qcur[1:3] if prefetch else [load("sa_k0", "k", kstart, bkv, "kvblk"),
                                                         load("sa_v0", "v", kstart, bkv, "kvblk")]
                    names += ["sa_kcur", "sa_vcur"]
                    results += ["sa_kl", "sa_vl"]
                with b.for_(kstart, kend, c["bkv"], state, names=names, results=results) as (k0i, m_, l_, acc_, *cur):
                    if db:
                        kn = b.arith.addi(k0i, c["bkv"], name="sa_kn")
                        kc = b.arith.minsi(kn, klast, name="sa_kc")
                        nxt = [load("sa_knext", "k", kc, bkv, "kvblk"), load("sa_vnext", "v", kc, bkv, "kvblk")]
                        kblk, vblk = cur
                    else:
                        kblk, vblk = load("sa_kb", "k", k0i, bkv, "kvblk"), load("sa_vb", "v", k0i, bkv, "kvblk")
                        nxt = []
                    b.yield_(*step(qk(kblk, "sa_s"), k0i, m_, l_, acc_, vblk, ""), *nxt)
                mf, lf, af_ = b.last_results[:3]
            nxt_unit: list[Value] = []
            if prefetch:  # the next query block of this tile, if there is one
                nu = b.arith.addi(u, stride, name="sa_un")
                more = b.cmp(Arith.cmpi, "ult", nu, c["units"], name="sa_more")

                def next_unit() -> list[Value]:
                    wn = coords(nu, "_n")
                    return [load_q(wn, "sa_qn"), load_kv("sa_kn0", "k", wn[0], kstart),
                            load_kv("sa_vn0", "v", wn[0], kstart)]

                nxt_unit = b.if_values(more, next_unit, [q, *qcur[1:3]], ["sa_qnx", "sa_knx0", "sa_vnx0"])
            if sk > 1:
                assert azero is not None
                out = _combine(b, A, (mf, lf, af_), (minit, linit, azero))
                with b.if_(first):
                    _store(b, A, views["o"], _normalise(b, A, out, qt), _at(where, G), c, heads_dim)
            elif defer:
                nxt_unit.append(_normalise(b, A, (mf, lf, af_), qt))
            else:
                _store(b, A, views["o"], _normalise(b, A, (mf, lf, af_), qt), _at(where, G), c, heads_dim)
            if prefetch:
                b.yield_(*nxt_unit)
        if defer:  # the tile's last query block: u = pos + (units - 1 - pos) // stride * stride
            lastu = b.arith.addi(pos, b.arith.muli(b.arith.divui(b.arith.subi(c["ulast"], pos, name="sa_uleft"), stride,
                                                                 name="sa_urounds"), stride, name="sa_uspan"),
                                 name="sa_ulastmine")
            _store(b, A, views["o"], b.last_results[3], _at(coords(lastu, "_l"), G), c, heads_dim, "_l")
        b.func_return()
    return located(b.module, f"{k.name}.scheduled.ktir")


def _at(where: tuple[Value, Value, Value, Value], group: int) -> tuple[Value, Value, int]:
    """Where a query block's O goes: (KV head, row, 1), or (first query head, token, group) with a group."""
    h, q0, t0, hq = where
    return (hq, t0, group) if group > 1 else (h, q0, 1)


def _normalise(b: Builder, A: dict[str, at.AttrAliasRef], state: tuple[Value, ...], qt: ty.TensorType) -> Value:
    """O = acc / l, rounded to the output type."""
    _, lsum, acc = state
    with b.generic([lsum], [acc], [A["row"], A["id2"]], ["parallel"] * 2, ["sa_od", "sa_oa"], "sa_out") as (od, oa):
        b.yield_(b.arith.divf(oa, od, name="sa_or"), op=Linalg.yield_)
    (out,) = b.last_results
    return b.arith.truncf(out, result_types=[qt], name="sa_oh")


def _store(b: Builder, A: dict[str, at.AttrAliasRef], ov: Value, oh: Value, where: tuple[Value, Value, int],
           c: dict[str, Value], heads_dim: bool, sfx: str = "") -> None:
    """Store the query block's O: at (head, row, 1) of the rows, or at (first query head, token,
    group) of the `[query heads, tokens, D]` view."""
    qt = oh.type
    assert isinstance(qt, ty.TensorType)
    bq, D = (int(n or 0) for n in qt.shape)
    h, q0, G = where
    c0 = c["c0"]
    if G > 1:
        og = b.expand_shape(oh, [[0, 1], [2]], ty.tensor((G, bq // G, D), qt.element_type), name=f"sa_og{sfx}")
        b.store(og, b.access_tile(ov, [h, q0, c0], A["qblkg"], [G, bq // G, D], A["id3"], name=f"sa_to{sfx}"))
    elif heads_dim:
        o3 = b.expand_shape(oh, [[0, 1], [2]], ty.tensor((1, bq, D), qt.element_type), name=f"sa_o3{sfx}")
        to = b.access_tile(ov, [h, q0, c0], A["qblk3"], [1, bq, D], A["id3"], name=f"sa_to{sfx}")
        b.store(o3, to)
    else:
        qrow = b.arith.addi(b.arith.muli(h, c["S"], name=f"sa_qbase{sfx}"), q0, name=f"sa_qrow{sfx}")
        to = b.access_tile(ov, [qrow, c0], A["qblk"], [bq, D], A["id2"], name=f"sa_to{sfx}")
        b.store(oh, to)


def _combine(b: Builder, A: dict[str, at.AttrAliasRef], state: tuple[Value, ...],
             identity: tuple[Value, ...]) -> tuple[Value, ...]:
    """Add the KV splits' online-softmax states (m, l, acc) on the group's first tile.

    Two states combine as m = max(m1, m2), l = l1 e1 + l2 e2, acc = acc1 e1 + acc2 e2 with
    ei = exp(mi - m), taken as 0 where mi is -inf (a split that saw no key of the row, or
    the identity), so that the identity (-inf, 0, 0) is neutral and no exp(-inf + inf) occurs.
    """
    vec, acc = state[0].type, state[2].type
    fut = ty.TileFutureType(partial_types=tuple(v.type for v in state), groups=A["groups"])
    with b.produce(A["split_group"], fut, "sa_gid", "sa_fut"):
        b.yield_(*state, op=Ktdp.yield_partial)
    (f,) = b.last_results
    with b.reduce_tiles(f, A["split_first"], identity, ["sa_m1", "sa_l1", "sa_a1", "sa_m2", "sa_l2", "sa_a2"],
                        ["sa_mt", "sa_lt", "sa_at"]) as (m1, l1, a1, m2, l2, a2):
        czero = b.constant(at.FloatAttr(value=0.0, type=ty.F32), name="sa_czero")
        cninf = b.constant(_NINF, name="sa_cninf")
        cv = b.empty(vec, "sa_cv")  # type: ignore[arg-type]
        ca = b.empty(acc, "sa_ca")  # type: ignore[arg-type]
        cm = b.arith.maximumf(m1, m2, name="sa_cm")

        def factor(i: int, mi: Value) -> Value:
            with b.generic([mi, cm], [cv], [A["id1"]] * 3, ["parallel"], [f"sa_x{i}", f"sa_y{i}", f"sa_o{i}"],
                           f"sa_c{i}") as (x, y, _):
                e = b.math.exp(b.arith.subf(x, y, name=f"sa_d{i}"), name=f"sa_e{i}")
                none = b.cmp(Arith.cmpf, "oeq", x, cninf, name=f"sa_none{i}")
                b.yield_(b.arith.select(none, czero, e, name=f"sa_f{i}"), op=Linalg.yield_)
            return b.last_results[0]

        c1, c2 = factor(1, m1), factor(2, m2)

        def weighted(name: str, maps: list[at.AttrAliasRef], ins: list[Value], out: Value, args: str, r: str) -> Value:
            """sum of x_i y_i over the two splits, elementwise."""
            with b.generic(ins, [out], maps, ["parallel"] * len(out.type.shape),  # type: ignore[attr-defined]
                           [f"sa_{a}" for a in args.split()], name) as (x1, y1, x2, y2, _):
                r1 = b.arith.mulf(x1, y1, name=f"sa_{r}1")
                r2 = b.arith.mulf(x2, y2, name=f"sa_{r}2")
                b.yield_(b.arith.addf(r1, r2, name=f"sa_{r}s"), op=Linalg.yield_)
            return b.last_results[0]

        cl = weighted("sa_cl", [A["id1"]] * 5, [l1, c1, l2, c2], cv, "p1 q1 p2 q2 po", "r")
        cacc = weighted("sa_cacc", [A["id2"], A["row"], A["id2"], A["row"], A["id2"]], [a1, c1, a2, c2], ca,
                        "u1 v1 u2 v2 uo", "w")
        b.yield_(cm, cl, cacc, op=Ktdp.yield_reduced)
    return tuple(b.last_results)


def attention_text(heads: int, seq: int, head_dim: int, dtype: str = "f16", causal: bool = True,
                   name: str = "attention", kv_len: int | None = None, group: int = 1) -> str:
    """A one-tile attention kernel over `[heads, group x seq, head_dim]` queries and `[heads, kv_len,
    head_dim]` keys and values (no leading dimension for one head), one KV block per head: the form
    `match_attention` recognises, as a scheduler input for tests and benchmarks.

    `heads` are KV heads; each has `group` query heads of `seq` tokens stacked head-major in
    its rows (grouped-query attention; row r is query head r // seq of the group, token r mod
    seq). Causal needs seq == kv_len (self-attention); with a group, Q and O are then
    `[heads x group, seq, head_dim]` (query head q uses KV head q // group) and the mask
    compares the key position with the row modulo kv_len.
    """
    L = seq if kv_len is None else kv_len
    S = group * seq
    q_shape, kv_shape = ((heads, S, head_dim), (heads, L, head_dim)) if heads > 1 else ((S, head_dim), (L, head_dim))
    if causal and group > 1:  # the emitted Q and O views: [query heads, tokens, D]
        q_shape, kv_shape = (heads * group, seq, head_dim), (heads, L, head_dim)
    kernel = AttentionKernel(kv_heads=heads, rows=S, kv_len=L, head_dim=head_dim, dtype=dtype, causal=causal,
                             name=name, group=group if causal else 1)
    q, k, v, o = (Operand(f"{n}_ptr", dtype, 2, q_shape if n in "qo" else kv_shape) for n in "qkvo")
    match = AttentionMatch(kernel, q, k, v, o, scale=head_dim ** -0.5)
    sb = Builder()
    with sb.func(name, [(f"{v}_ptr", ty.INDEX) for v in "qkvo"]):
        sb.func_return()
    stub = sb.module.operations[0]
    return print_module(emit_attention(match, stub, {"bq": S, "bkv": L, "db": 0}, 1,
                                       heads_dim=len(kv_shape) == 3))
