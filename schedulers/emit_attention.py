"""Recognise flash-style attention and emit it scheduled over the tiles.

Recognised: one function whose two `linalg.matmul` are S = Q K^T (K read transposed through
the indexing maps) and O += P V, with Q, K, V loaded from, and O stored to, four global
views of function arguments of one shape, `[S, D]` or `[H, S, D]` (H heads), f16 or bf16;
an online softmax (`math.exp`, a `linalg.reduce` of `arith.maximumf`); the scores scaled by
an f32 constant (`arith.mulf` in a `linalg.generic`) and, if that generic compares indices
(`arith.cmpi` + `arith.select`), masked causally (key > query gets -inf). The compute ops
must be exactly those of the online-softmax step (`_COMPUTE`), so that an epilogue or a bias
is never silently dropped; the index arithmetic and loop structure are free. The rewrite
emits the standard online-softmax kernel for those numbers, and `--check` compares it with
the input in the interpreter.

The emitted kernel splits the H x (S / bq) query blocks cyclically over a grid of
min(units, tiles) tiles. Per query block, the Q block is loaded once and stays resident in
the tile's scratchpad for the whole KV loop; the KV loop walks blocks of bkv keys (whole
128-byte sticks) up to the causal bound ceil((q0 + bq) / bkv) blocks; with double buffering
it carries the next K and V blocks as iter_args (clamped to the last block, so no access
leaves the view). Views of `[H, S, D]` arrays are read as `[H S, D]`: same memory, row
offset h S.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir.operation import Module, Operation
from ktir.syntax.parser import parse
from ktir.syntax.printer import print_module, type_text

from .kernels import AttentionKernel, Operand, _operand, _Values, _view_of_load, func_name, function_of
from .text import box


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
    while op is not None and op.name in ("tensor.collapse_shape", "tensor.cast"):
        op = vals.defs.get(op.operands[0])
    if op is None or op.name != "ktdp.load":
        return None
    view = _view_of_load(op, vals)
    return _operand(view, vals) if view is not None else None


def _scale(ops: list[Operation], vals: _Values) -> float | None:
    """The f32 constant the scores are multiplied by inside a linalg.generic (1.0 if none)."""
    found = []
    for op in ops:
        if op.name != "linalg.generic":
            continue
        for inner in op.walk():
            if inner.name != "arith.mulf":
                continue
            for o in inner.operands:
                d = vals.defs.get(o)
                value = d.attributes.get("value") if d is not None and d.name == "arith.constant" else None
                if isinstance(value, at.FloatAttr):
                    found.append(float(value.value))
    if len(set(found)) > 1:
        return None
    return found[0] if found else 1.0


# The online-softmax step, op for op: two exponentials (P and the rescale factor), the running
# max and sum (reductions of maximumf and addf), the rescale of l (linalg.mul) and of the
# accumulator, the final division, the two products and their roundings. A kernel with
# anything more (an epilogue, a bias) is not this form: its extra work would be dropped.
_COMPUTE = {"math.exp": 2, "arith.divf": 1, "arith.mulf": 2, "arith.subf": 2, "arith.addf": 1, "arith.maximumf": 1,
            "arith.truncf": 2, "linalg.reduce": 2, "linalg.generic": 5, "linalg.mul": 1, "linalg.matmul": 2}
_FREE = {"arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.divui", "arith.remui", "arith.ceildivsi",
         "arith.minsi", "linalg.fill", "linalg.yield", "linalg.index", "tensor.empty", "tensor.collapse_shape",
         "tensor.expand_shape", "tensor.cast", "scf.for", "scf.yield", "func.return", "ktdp.get_compute_tile_id",
         "ktdp.construct_memory_view", "ktdp.construct_access_tile", "ktdp.load", "ktdp.store"}


def _is_online_softmax(ops: list[Operation]) -> bool:
    counts = Counter(op.name for op in ops)
    mask = counts.pop("arith.cmpi", 0), counts.pop("arith.select", 0)
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


def _masks_the_future(ops: list[Operation], vals: _Values) -> bool:
    """Whether the mask's comparison is key position (linalg.index 1) > query position (linalg.index 0)."""
    cmp = next(op for op in ops if op.name == "arith.cmpi")

    def dims(name: str) -> set[int]:
        op = vals.defs.get(name)
        if op is None:
            return set()
        if op.name == "linalg.index":
            d = op.attributes.get("dim")
            return {int(d.value)} if isinstance(d, at.IntegerAttr) else set()
        if op.name in ("arith.addi", "arith.subi", "arith.muli"):
            return set().union(*(dims(o) for o in op.operands))
        return set()

    pred = cmp.attributes.get("predicate")
    p = int(pred.value) if isinstance(pred, at.IntegerAttr) else -1
    lhs, rhs = dims(cmp.operands[0]), dims(cmp.operands[1])
    return (p in _GREATER and (lhs, rhs) == ({1}, {0})) or (p in _LESS and (lhs, rhs) == ({0}, {1}))


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
    if any(n.startswith("ktdp.inter_tile") or n in ("ktdp.construct_indirect_access_tile",
                                                    "ktdp.construct_distributed_memory_view") for n in names):
        return None
    if not _is_online_softmax(ops):
        return None
    matmuls = [op for op in ops if op.name == "linalg.matmul"]
    stores = [op for op in ops if op.name == "ktdp.store"]
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
    loaded = [_source_view(op.results[0], vals) for op in ops if op.name == "ktdp.load"]
    if any(x is None or x.arg not in (q.arg, k.arg, v.arg) for x in loaded):
        return None  # every load reads Q, K or V
    ops_views = (q, k, v, o)
    if len({x.arg for x in ops_views}) != 4 or q.shape != o.shape or k.shape != v.shape or len(q.shape) != len(k.shape):
        return None
    if q.shape[:-2] != k.shape[:-2] or q.shape[-1] != k.shape[-1]:
        return None  # one KV head per query head (its rows may hold a group of query heads), one head dim
    if any(getattr(x, "offset", 0) or getattr(x, "strides", ()) not in ((), _row_major(x.shape)) for x in ops_views):
        return None  # the rewrite reads row-major views at the argument's address
    if len({x.dtype for x in ops_views}) != 1 or q.dtype not in ("f16", "bf16") or len(q.shape) not in (2, 3):
        return None
    scale = _scale(ops, vals)
    if scale is None:
        return None
    causal = any(op.name == "arith.cmpi" for op in ops)
    if causal and (q.shape != k.shape or not _masks_the_future(ops, vals)):
        return None  # the causal mask compares query and key positions of one sequence
    H, S, D = q.shape if len(q.shape) == 3 else (1, *q.shape)
    L = k.shape[-2]
    kernel = AttentionKernel(kv_heads=H, rows=S, kv_len=L, head_dim=D, dtype=q.dtype, causal=causal,
                             name=func_name(fn))
    return AttentionMatch(kernel, q, k, v, o, scale)


def _box3(name: str, h: int, rows: int, cols: int, one: int) -> str:
    first = "d0 == 0" if one else f"d0 >= 0, -d0 + {h - 1} >= 0"
    return (f"#{name} = affine_set<(d0, d1, d2) : ({first}, d1 >= 0, -d1 + {rows - 1} >= 0, d2 >= 0, "
            f"-d2 + {cols - 1} >= 0)>")


def attention_grid(k: AttentionKernel, bq: int, split: int, tiles: int) -> int:
    """Tiles used: every (query block, KV split) pair, or as many whole groups of `split` tiles as fit."""
    units = k.kv_heads * (k.rows // bq) * split
    return units if units <= tiles else tiles // split * split


def emit_attention(m: AttentionMatch, fn: Operation, p: dict[str, int], tiles: int, heads_dim: bool = False) -> Module:
    """The scheduled kernel; `heads_dim` reads `[H, S, D]` views (else flat `[H S, D]` ones)."""
    k = m.kernel
    H, S, L, D, dt = k.kv_heads, k.rows, k.kv_len, k.head_dim, k.dtype
    bq, bkv, db, sk = p["bq"], p["bkv"], bool(p["db"]), p.get("s", 1)
    units = H * (S // bq)
    grid = attention_grid(k, bq, sk, tiles)
    qview = f"memref<{H}x{S}x{D}x{dt}>" if heads_dim else f"memref<{H * S}x{D}x{dt}>"
    kview = f"memref<{H}x{L}x{D}x{dt}>" if heads_dim else f"memref<{H * L}x{D}x{dt}>"
    vec, mat, acc = f"tensor<{bq}xf32>", f"tensor<{bq}x{bkv}xf32>", f"tensor<{bq}x{D}xf32>"
    qt, kvt = f"tensor<{bq}x{D}x{dt}>", f"tensor<{bkv}x{D}x{dt}>"
    args = ", ".join(f"{a.name}: {type_text(a.type)}" for a in fn.regions[0].blocks[0].arguments)
    lines = [
        "// scheduled by ktir schedule: query blocks over the tiles, Q resident, K/V streamed (see the report)",
        box("sa_qall", H * S, D), box("sa_kall", H * L, D), box("sa_qblk", bq, D), box("sa_kvblk", bkv, D),
        *([_box3("sa_qall3", H, S, D, 0), _box3("sa_kall3", H, L, D, 0), _box3("sa_qblk3", 1, bq, D, 1),
           _box3("sa_kvblk3", 1, bkv, D, 1),
           "#sa_id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>"] if heads_dim else []),
        "#sa_id1 = affine_map<(d0) -> (d0)>", "#sa_id2 = affine_map<(d0, d1) -> (d0, d1)>",
        "#sa_row = affine_map<(d0, d1) -> (d0)>", "#sa_qk_q = affine_map<(d0, d1, d2) -> (d0, d2)>",
        "#sa_qk_k = affine_map<(d0, d1, d2) -> (d1, d2)>", "#sa_qk_s = affine_map<(d0, d1, d2) -> (d0, d1)>",
        *([f"#sa_split_group = affine_set<(d0)[s0] : (d0 - s0 * {sk} >= 0, -d0 + s0 * {sk} + {sk - 1} >= 0)>",
           f"#sa_split_first = affine_set<(d0)[s0] : (d0 - s0 * {sk} == 0)>",
           f"#sa_groups = affine_set<(d0) : (d0 >= 0, -d0 + {grid // sk - 1} >= 0)>"] if sk > 1 else []),
        f"func.func @{k.name}({args}) attributes {{grid = [{grid}]}} {{",
    ]
    body = [f"%sa_{n} = arith.constant {v} : index" for n, v in
            (("c0", 0), ("bq", bq), ("bkv", bkv), ("S", S), ("L", L), ("qblocks", S // bq), ("units", units),
             ("grid", grid))]
    if sk > 1:  # tile t works on KV split t mod sk of the query blocks of group t / sk
        body += [f"%sa_{n} = arith.constant {v} : index" for n, v in (("sk", sk), ("splitlen", L // sk), ("groups", grid // sk))]
    body += ["%sa_zero = arith.constant 0.0 : f32", "%sa_ninf = arith.constant 0xFF800000 : f32",
             f"%sa_scale = arith.constant {m.scale!r} : f32", "%sa_tid = ktdp.get_compute_tile_id : index"]
    for v, operand in (("q", m.q), ("k", m.k), ("v", m.v), ("o", m.o)):
        rows, kind = (S, "q") if v in "qo" else (L, "k")
        sizes, strides, cset = (f"{H}, {rows}, {D}", f"{rows * D}, {D}, 1", f"sa_{kind}all3") if heads_dim else (
            f"{H * rows}, {D}", f"{D}, 1", f"sa_{kind}all")
        body.append(f"%sa_{v}v = ktdp.construct_memory_view %{operand.arg}, sizes: [{sizes}], strides: [{strides}] "
                    f"{{coordinate_set = #{cset}, memory_space = #ktdp.memory_space<global>}} : "
                    f"{qview if kind == 'q' else kview}")
    body += [f"%sa_vec = tensor.empty() : {vec}", f"%sa_mat = tensor.empty() : {mat}", f"%sa_am = tensor.empty() : {acc}",
             f"%sa_minit = linalg.fill ins(%sa_ninf : f32) outs(%sa_vec : {vec}) -> {vec}",
             f"%sa_linit = linalg.fill ins(%sa_zero : f32) outs(%sa_vec : {vec}) -> {vec}",
             f"%sa_szero = linalg.fill ins(%sa_zero : f32) outs(%sa_mat : {mat}) -> {mat}",
             f"%sa_azero = linalg.fill ins(%sa_zero : f32) outs(%sa_am : {acc}) -> {acc}"]

    def load(dst: str, v: str, inrow: str, rows: int, blk: str) -> list[str]:
        """Load `rows` rows of head %sa_h from row `inrow` of the head."""
        view, base = (qview, "%sa_qbase") if v in "qo" else (kview, "%sa_kbase")
        if heads_dim:
            return [f"%{dst}_t = ktdp.construct_access_tile %sa_{v}v[%sa_h, {inrow}, %sa_c0] {{access_tile_order = "
                    f"#sa_id3, access_tile_set = #{blk}3}} : {view} -> !ktdp.access_tile<1x{rows}x{D}xindex>",
                    f"%{dst}_3 = ktdp.load %{dst}_t : !ktdp.access_tile<1x{rows}x{D}xindex> -> tensor<1x{rows}x{D}x{dt}>",
                    f"%{dst} = tensor.collapse_shape %{dst}_3 [[0, 1], [2]] : tensor<1x{rows}x{D}x{dt}> into "
                    f"tensor<{rows}x{D}x{dt}>"]
        return [f"%{dst}_r = arith.addi {base}, {inrow} : index",
                f"%{dst}_t = ktdp.construct_access_tile %sa_{v}v[%{dst}_r, %sa_c0] {{access_tile_order = #sa_id2, "
                f"access_tile_set = #{blk}}} : {view} -> !ktdp.access_tile<{rows}x{D}xindex>",
                f"%{dst} = ktdp.load %{dst}_t : !ktdp.access_tile<{rows}x{D}xindex> -> tensor<{rows}x{D}x{dt}>"]

    unit = ["%sa_h = arith.divui %sa_u, %sa_qblocks : index", "%sa_qb = arith.remui %sa_u, %sa_qblocks : index",
            "%sa_q0 = arith.muli %sa_qb, %sa_bq : index", "%sa_qbase = arith.muli %sa_h, %sa_S : index",
            "%sa_kbase = arith.muli %sa_h, %sa_L : index"]
    unit += load("sa_q", "q", "%sa_q0", bq, "sa_qblk")  # resident for the whole KV loop
    kstart, kend = ("%sa_kstart", "%sa_kstop") if sk > 1 else ("%sa_c0", "%sa_L")
    if k.causal:  # key blocks up to the last one holding a key <= the block's last query
        unit += ["%sa_qend = arith.addi %sa_q0, %sa_bq : index", "%sa_nkv = arith.ceildivsi %sa_qend, %sa_bkv : index",
                 "%sa_kcausal = arith.muli %sa_nkv, %sa_bkv : index"]
        if sk > 1:  # a split past the causal bound runs no step: its partial is the identity
            unit.append("%sa_kend = arith.minsi %sa_kcausal, %sa_kstop : index")
            kend = "%sa_kend"
        else:
            kend = "%sa_kcausal"
    carried = ""
    types = f"{vec}, {vec}, {acc}"
    if db:
        unit.append(f"%sa_klast = arith.subi {kend}, %sa_bkv : index")
        unit += load("sa_k0", "k", kstart, bkv, "sa_kvblk") + load("sa_v0", "v", kstart, bkv, "sa_kvblk")
        carried = ", %sa_kcur = %sa_k0, %sa_vcur = %sa_v0"
        types += f", {kvt}, {kvt}"
    results = "%sa_mf, %sa_lf, %sa_af" + (", %sa_kl, %sa_vl" if db else "")
    unit.append(f"{results} = scf.for %sa_k0i = {kstart} to {kend} step %sa_bkv iter_args(%sa_m = %sa_minit, "
                f"%sa_l = %sa_linit, %sa_acc = %sa_azero{carried}) -> ({types}) {{")
    kv: list[str] = []
    if db:
        kv += ["%sa_kn = arith.addi %sa_k0i, %sa_bkv : index", "%sa_kc = arith.minsi %sa_kn, %sa_klast : index"]
        kv += load("sa_knext", "k", "%sa_kc", bkv, "sa_kvblk") + load("sa_vnext", "v", "%sa_kc", bkv, "sa_kvblk")
        kblk, vblk = "%sa_kcur", "%sa_vcur"
    else:
        kv += load("sa_kb", "k", "%sa_k0i", bkv, "sa_kvblk") + load("sa_vb", "v", "%sa_k0i", bkv, "sa_kvblk")
        kblk, vblk = "%sa_kb", "%sa_vb"
    def guard(v: str, mx: str) -> list[str]:
        """exp(x - max) as 0 where the max is -inf. A KV split may see a row's keys all masked
        (causal rows before the split's first key): without it exp(-inf + inf) is NaN."""
        if sk == 1:
            return [f"  linalg.yield %sa_{v}e : f32"]
        return [f"  %sa_{v}none = arith.cmpf oeq, {mx}, %sa_ninf : f32",
                f"  %sa_{v}g = arith.select %sa_{v}none, %sa_zero, %sa_{v}e : f32", f"  linalg.yield %sa_{v}g : f32"]

    kv.append(f"%sa_s = linalg.matmul indexing_maps = [#sa_qk_q, #sa_qk_k, #sa_qk_s] ins(%sa_q, {kblk} : {qt}, {kvt}) "
              f"outs(%sa_szero : {mat}) -> {mat}")
    kv.append(f"%sa_sm = linalg.generic {{indexing_maps = [#sa_id2, #sa_id2], iterator_types = [\"parallel\", "
              f"\"parallel\"]}} ins(%sa_s : {mat}) outs(%sa_mat : {mat}) {{")
    kv.append("^bb0(%sa_x: f32, %sa_o: f32):")
    kv.append("  %sa_xs = arith.mulf %sa_x, %sa_scale : f32")
    if k.causal:
        kv += ["  %sa_i = linalg.index 0 : index", "  %sa_j = linalg.index 1 : index",
               "  %sa_qi = arith.addi %sa_q0, %sa_i : index", "  %sa_kj = arith.addi %sa_k0i, %sa_j : index",
               "  %sa_future = arith.cmpi ugt, %sa_kj, %sa_qi : index",
               "  %sa_r = arith.select %sa_future, %sa_ninf, %sa_xs : f32", "  linalg.yield %sa_r : f32"]
    else:
        kv.append("  linalg.yield %sa_xs : f32")
    kv.append(f"}} -> {mat}")
    kv += [
        f"%sa_mnew = linalg.reduce {{ arith.maximumf }} ins(%sa_sm : {mat}) outs(%sa_m : {vec}) dimensions = [1]",
        f"%sa_p = linalg.generic {{indexing_maps = [#sa_id2, #sa_row, #sa_id2], iterator_types = [\"parallel\", "
        f"\"parallel\"]}} ins(%sa_sm, %sa_mnew : {mat}, {vec}) outs(%sa_mat : {mat}) {{",
        "^bb0(%sa_px: f32, %sa_pm: f32, %sa_po: f32):",
        "  %sa_pd = arith.subf %sa_px, %sa_pm : f32", "  %sa_pe = math.exp %sa_pd : f32", *guard("p", "%sa_pm"),
        f"}} -> {mat}",
        f"%sa_alpha = linalg.generic {{indexing_maps = [#sa_id1, #sa_id1, #sa_id1], iterator_types = [\"parallel\"]}} "
        f"ins(%sa_m, %sa_mnew : {vec}, {vec}) outs(%sa_vec : {vec}) {{",
        "^bb0(%sa_old: f32, %sa_new: f32, %sa_ao: f32):",
        "  %sa_ad = arith.subf %sa_old, %sa_new : f32", "  %sa_ae = math.exp %sa_ad : f32", *guard("a", "%sa_new"),
        f"}} -> {vec}",
        f"%sa_ls = linalg.mul ins(%sa_l, %sa_alpha : {vec}, {vec}) outs(%sa_vec : {vec}) -> {vec}",
        f"%sa_lnew = linalg.reduce {{ arith.addf }} ins(%sa_p : {mat}) outs(%sa_ls : {vec}) dimensions = [1]",
        f"%sa_as = linalg.generic {{indexing_maps = [#sa_id2, #sa_row, #sa_id2], iterator_types = [\"parallel\", "
        f"\"parallel\"]}} ins(%sa_acc, %sa_alpha : {acc}, {vec}) outs(%sa_am : {acc}) {{",
        "^bb0(%sa_aa: f32, %sa_sa: f32, %sa_so: f32):",
        "  %sa_ar = arith.mulf %sa_aa, %sa_sa : f32", "  linalg.yield %sa_ar : f32",
        f"}} -> {acc}",
        f"%sa_ph = arith.truncf %sa_p : {mat} to tensor<{bq}x{bkv}x{dt}>",
        f"%sa_anew = linalg.matmul ins(%sa_ph, {vblk} : tensor<{bq}x{bkv}x{dt}>, {kvt}) outs(%sa_as : {acc}) -> {acc}",
        "scf.yield %sa_mnew, %sa_lnew, %sa_anew" + (", %sa_knext, %sa_vnext" if db else "") + f" : {types}",
    ]
    unit += ["  " + s for s in kv] + ["}"]
    if sk > 1:
        unit += _combine(vec, acc)
        out, tail = ["%sa_mt", "%sa_lt", "%sa_at"], []
        unit.append("scf.if %sa_first {")
    else:
        out = ["%sa_mf", "%sa_lf", "%sa_af"]
    tail = [
        f"%sa_out = linalg.generic {{indexing_maps = [#sa_id2, #sa_row, #sa_id2], iterator_types = [\"parallel\", "
        f"\"parallel\"]}} ins({out[2]}, {out[1]} : {acc}, {vec}) outs(%sa_am : {acc}) {{",
        "^bb0(%sa_oa: f32, %sa_od: f32, %sa_oo: f32):",
        "  %sa_or = arith.divf %sa_oa, %sa_od : f32", "  linalg.yield %sa_or : f32",
        f"}} -> {acc}",
        f"%sa_oh = arith.truncf %sa_out : {acc} to {qt}",
    ]
    if heads_dim:
        tail += [f"%sa_o3 = tensor.expand_shape %sa_oh [[0, 1], [2]] output_shape [1, {bq}, {D}] : {qt} into "
                 f"tensor<1x{bq}x{D}x{dt}>",
                 f"%sa_to = ktdp.construct_access_tile %sa_ov[%sa_h, %sa_q0, %sa_c0] {{access_tile_order = #sa_id3, "
                 f"access_tile_set = #sa_qblk3}} : {qview} -> !ktdp.access_tile<1x{bq}x{D}xindex>",
                 f"ktdp.store %sa_o3, %sa_to : tensor<1x{bq}x{D}x{dt}>, !ktdp.access_tile<1x{bq}x{D}xindex>"]
    else:
        tail += ["%sa_qrow = arith.addi %sa_qbase, %sa_q0 : index",
                 f"%sa_to = ktdp.construct_access_tile %sa_ov[%sa_qrow, %sa_c0] {{access_tile_order = #sa_id2, "
                 f"access_tile_set = #sa_qblk}} : {qview} -> !ktdp.access_tile<{bq}x{D}xindex>",
                 f"ktdp.store %sa_oh, %sa_to : {qt}, !ktdp.access_tile<{bq}x{D}xindex>"]
    unit += ["  " + s for s in tail] + ["}"] if sk > 1 else tail
    if sk > 1:
        body += ["%sa_split = arith.remui %sa_tid, %sa_sk : index", "%sa_grp = arith.divui %sa_tid, %sa_sk : index",
                 "%sa_kstart = arith.muli %sa_split, %sa_splitlen : index",
                 "%sa_kstop = arith.addi %sa_kstart, %sa_splitlen : index",
                 "%sa_first = arith.cmpi eq, %sa_split, %sa_c0 : index",
                 "scf.for %sa_u = %sa_grp to %sa_units step %sa_groups {"]
    else:
        body.append("scf.for %sa_u = %sa_tid to %sa_units step %sa_grid {")
    body += ["  " + s for s in unit] + ["}", "func.return"]
    lines += ["  " + s for s in body] + ["}", ""]
    return parse("\n".join(lines), f"{k.name}.scheduled.ktir")


def _combine(vec: str, acc: str) -> list[str]:
    """Add the KV splits' online-softmax states (m, l, acc) on the group's first tile.

    Two states combine as m = max(m1, m2), l = l1 e1 + l2 e2, acc = acc1 e1 + acc2 e2 with
    ei = exp(mi - m), taken as 0 where mi is -inf (a split that saw no key of the row, or
    the identity), so that the identity (-inf, 0, 0) is neutral and no exp(-inf + inf) occurs.
    """
    types = f"{vec}, {vec}, {acc}"
    fut = f"!ktdp.tile_future<({types}), groups = #sa_groups>"

    def factor(i: int) -> list[str]:
        return [
            f"  %sa_c{i} = linalg.generic {{indexing_maps = [#sa_id1, #sa_id1, #sa_id1], iterator_types = [\"parallel\"]}} "
            f"ins(%sa_m{i}, %sa_cm : {vec}, {vec}) outs(%sa_cv : {vec}) {{",
            f"  ^bb0(%sa_x{i}: f32, %sa_y{i}: f32, %sa_o{i}: f32):",
            f"    %sa_d{i} = arith.subf %sa_x{i}, %sa_y{i} : f32", f"    %sa_e{i} = math.exp %sa_d{i} : f32",
            f"    %sa_none{i} = arith.cmpf oeq, %sa_x{i}, %sa_cninf : f32",
            f"    %sa_f{i} = arith.select %sa_none{i}, %sa_czero, %sa_e{i} : f32", f"    linalg.yield %sa_f{i} : f32",
            f"  }} -> {vec}"]

    return [
        f"%sa_fut = ktdp.inter_tile_produce producer_tiles_per_group = #sa_split_group -> {fut} {{",
        "^bb0(%sa_gid: index):",
        f"  ktdp.yield_partial %sa_mf, %sa_lf, %sa_af : {types}",
        "}",
        f"%sa_mt, %sa_lt, %sa_at = ktdp.inter_tile_reduce(%sa_fut) consumer_tiles_per_group = #sa_split_first, "
        f"identity(%sa_minit, %sa_linit, %sa_azero : {types}) : {fut} -> {types} {{",
        f"^bb0(%sa_m1: {vec}, %sa_l1: {vec}, %sa_a1: {acc}, %sa_m2: {vec}, %sa_l2: {vec}, %sa_a2: {acc}):",
        "  %sa_czero = arith.constant 0.0 : f32", "  %sa_cninf = arith.constant 0xFF800000 : f32",
        f"  %sa_cv = tensor.empty() : {vec}", f"  %sa_ca = tensor.empty() : {acc}",
        f"  %sa_cm = arith.maximumf %sa_m1, %sa_m2 : {vec}",
        *factor(1), *factor(2),
        f"  %sa_cl = linalg.generic {{indexing_maps = [#sa_id1, #sa_id1, #sa_id1, #sa_id1, #sa_id1], "
        f"iterator_types = [\"parallel\"]}} ins(%sa_l1, %sa_c1, %sa_l2, %sa_c2 : {vec}, {vec}, {vec}, {vec}) "
        f"outs(%sa_cv : {vec}) {{",
        "  ^bb0(%sa_p1: f32, %sa_q1: f32, %sa_p2: f32, %sa_q2: f32, %sa_po: f32):",
        "    %sa_r1 = arith.mulf %sa_p1, %sa_q1 : f32", "    %sa_r2 = arith.mulf %sa_p2, %sa_q2 : f32",
        "    %sa_rs = arith.addf %sa_r1, %sa_r2 : f32", "    linalg.yield %sa_rs : f32",
        f"  }} -> {vec}",
        f"  %sa_cacc = linalg.generic {{indexing_maps = [#sa_id2, #sa_row, #sa_id2, #sa_row, #sa_id2], "
        f"iterator_types = [\"parallel\", \"parallel\"]}} ins(%sa_a1, %sa_c1, %sa_a2, %sa_c2 : {acc}, {vec}, {acc}, "
        f"{vec}) outs(%sa_ca : {acc}) {{",
        "  ^bb0(%sa_u1: f32, %sa_v1: f32, %sa_u2: f32, %sa_v2: f32, %sa_uo: f32):",
        "    %sa_w1 = arith.mulf %sa_u1, %sa_v1 : f32", "    %sa_w2 = arith.mulf %sa_u2, %sa_v2 : f32",
        "    %sa_ws = arith.addf %sa_w1, %sa_w2 : f32", "    linalg.yield %sa_ws : f32",
        f"  }} -> {acc}",
        f"  ktdp.yield_reduced %sa_cm, %sa_cl, %sa_cacc : {types}",
        "}",
    ]


def attention_text(heads: int, seq: int, head_dim: int, dtype: str = "f16", causal: bool = True,
                   name: str = "attention", kv_len: int | None = None) -> str:
    """A one-tile attention kernel over `[heads, seq, head_dim]` arrays (`[seq, head_dim]` for one
    head), one KV block per head: the form `match_attention` recognises, as a scheduler input
    for tests and benchmarks."""
    L = seq if kv_len is None else kv_len
    q_shape, kv_shape = ((heads, seq, head_dim), (heads, L, head_dim)) if heads > 1 else ((seq, head_dim), (L, head_dim))
    kernel = AttentionKernel(kv_heads=heads, rows=seq, kv_len=L, head_dim=head_dim, dtype=dtype, causal=causal,
                             name=name)
    q, k, v, o = (Operand(f"{n}_ptr", dtype, 2, q_shape if n in "qo" else kv_shape) for n in "qkvo")
    match = AttentionMatch(kernel, q, k, v, o, scale=head_dim ** -0.5)
    stub = parse(f"func.func @{name}({', '.join(f'%{v}_ptr: index' for v in 'qkvo')}) {{\n  func.return\n}}\n",
                 "stub").functions()[0]
    return print_module(emit_attention(match, stub, {"bq": seq, "bkv": L, "db": 0}, 1, heads_dim=heads > 1))
