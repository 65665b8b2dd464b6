"""Models of the example kernels (`examples/*.ktir`), for the `full` level's goldens.

Each model restates what its kernel's comment and ops say, op by op in the kernel's own
order and types, with `conformance.oracle.approx`: the result is a float64 value per
element and a proven bound on how far any conforming implementation's value before the
final rounding (`arith.truncf` to the output type) can be from it. The accepted outputs are
the roundings of that interval (`expect.enclosed`): the class `derived`. Kernels made only
of correctly rounded ops in a fixed order are compared bit for bit instead (`exact`: vector
add, RoPE, the ring all-reduce spelt out step by step), and a single order-free sum (the
collective all-reduce) keeps the `reduction` class.

These kernels are too large for exact evaluation (a million exponentials in softmax), which
is why their goldens come from float64 with a bound rather than from fractions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from conformance.oracle import approx as ax
from conformance.oracle.approx import Approx
from conformance.oracle.expect import Expected, enclosed, same, summed
from conformance.oracle.sums import exact_sum

Inputs = Mapping[str, Any]
METHOD = ("float64 model of the kernel (conformance/oracle/kernels.py) with a proven bound e per element on any "
          "conforming value before the final rounding; accepted: the roundings of [v - e, v + e]")
F32 = "f32"


def _f64(x: Any) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _derived(z: Approx, dtype: Any) -> Expected:
    return enclosed(z.v, z.e, dtype, METHOD)


def _mask(a: Approx, masked: np.ndarray) -> Approx:
    """arith.select(masked, -inf, a): the -inf is exact."""
    return Approx(np.where(masked, -np.inf, a.v), np.where(masked, 0.0, a.e))


def _bcast(a: Approx, index: Any) -> Approx:
    return Approx(a.v[index], a.e[index])


def vector_add(a: Inputs) -> dict[str, Expected]:
    # one correctly rounded f16 addition per element: numpy's f16 add rounds once (IEEE)
    return {"C": same(a["A"] + a["B"])}


def tiled_matmul(a: Inputs) -> dict[str, Expected]:
    acc = ax.matmul(ax.exact(_f64(a["a_ptr"])), ax.exact(_f64(a["b_ptr"])), F32)
    return {"c_ptr": _derived(acc, np.float16)}


def softmax(a: Inputs) -> dict[str, Expected]:
    xf = ax.exact(_f64(a["x_ptr"]))
    mx = ax.maximum(xf, 1)
    e = ax.exp(ax.sub(xf, _bcast(mx, (slice(None), None)), F32), F32)
    s = ax.total(e, 1, F32)
    p = ax.div(e, _bcast(s, (slice(None), None)), F32)
    return {"y_ptr": _derived(p, np.float16)}


def rmsnorm(a: Inputs) -> dict[str, Expected]:
    xf = ax.exact(_f64(a["x_ptr"]))
    wf = ax.exact(_f64(a["w_ptr"]))
    ss = ax.total(ax.mul(xf, xf, F32), 1, F32)
    mean = ax.div(ss, ax.exact(np.float64(512.0)), F32)
    shifted = ax.add(mean, ax.exact(np.float64(np.float32(9.99999997e-07))), F32)
    inv = ax.rsqrt(shifted, F32)
    n = ax.mul(xf, _bcast(inv, (slice(None), None)), F32)
    out = ax.mul(n, _bcast(wf, (None, slice(None))), F32)
    return {"y_ptr": _derived(out, np.float16)}


def layernorm(a: Inputs) -> dict[str, Expected]:
    import ml_dtypes

    xf = ax.exact(_f64(a["x_ptr"]))
    gf = ax.exact(_f64(a["g_ptr"]))
    bf = ax.exact(_f64(a["b_ptr"]))
    width = ax.exact(np.float64(256.0))
    mean = ax.div(ax.total(xf, 1, F32), width, F32)
    xc = ax.sub(xf, _bcast(mean, (slice(None), None)), F32)
    var = ax.total(ax.mul(xc, xc, F32), 1, F32)
    shifted = ax.add(ax.div(var, width, F32), ax.exact(np.float64(np.float32(9.99999974e-06))), F32)
    rstd = ax.div(ax.exact(np.float64(1.0)), ax.sqrt(shifted, F32), F32)
    xn = ax.mul(xc, _bcast(rstd, (slice(None), None)), F32)
    y = ax.add(ax.mul(xn, _bcast(gf, (None, slice(None))), F32), _bcast(bf, (None, slice(None))), F32)
    return {"y_ptr": _derived(y, ml_dtypes.bfloat16)}


def rope(a: Inputs) -> dict[str, Expected]:
    # correctly rounded f32 ops in a fixed order (no reduction): the result is exact, and
    # numpy's float32 * - + round each op once as IEEE 754 defines
    q = a["q_ptr"]
    x1, x2 = q[..., :32], q[..., 32:]
    c, s = a["cos_ptr"][:, None, :], a["sin_ptr"][:, None, :]
    y = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    return {"y_ptr": same(y.astype(np.float32))}


def swiglu(a: Inputs) -> dict[str, Expected]:
    x = ax.exact(_f64(a["x_ptr"]))
    g = ax.matmul(x, ax.exact(_f64(a["wg_ptr"])), F32)
    u = ax.matmul(x, ax.exact(_f64(a["wu_ptr"])), F32)
    den = ax.add(ax.exact(np.float64(1.0)), ax.exp(ax.neg(g), F32), F32)
    h = ax.mul(ax.div(g, den, F32), u, F32)
    return {"h_ptr": _derived(h, np.float16)}


def causal_attention(a: Inputs) -> dict[str, Expected]:
    """Flash-style over query and key blocks of 128 rows: the query block at rows [q0, q0 + 128)
    walks the key blocks up to its own, carrying the running maximum m, denominator l and
    unnormalised output acc in f32. (Which tile owns a block does not change its result.)"""
    q, k, v = (_f64(a[n]) for n in ("q_ptr", "k_ptr", "v_ptr"))
    B, S = 128, q.shape[0]
    scale = ax.exact(np.float64(0.125))
    rows: list[Approx] = []
    for q0 in range(0, S, B):
        qb = ax.exact(q[q0:q0 + B])
        m = ax.exact(np.full(B, -np.inf))
        lsum = ax.exact(np.zeros(B))
        acc = ax.exact(np.zeros((B, 64)))
        for k0 in range(0, q0 + B, B):
            s = ax.matmul(qb, ax.exact(k[k0:k0 + B].T), F32)
            future = (k0 + np.arange(B))[None, :] > (q0 + np.arange(B))[:, None]
            sm = _mask(ax.mul(s, scale, F32), future)
            m_new = ax.maximum(sm, 1, init=m)
            p = ax.exp(ax.sub(sm, _bcast(m_new, (slice(None), None)), F32), F32)
            alpha = ax.exp(ax.sub(m, m_new, F32), F32)
            lsum = ax.total(p, 1, F32, init=ax.mul(lsum, alpha, F32))
            acc_scaled = ax.mul(acc, _bcast(alpha, (slice(None), None)), F32)
            acc = ax.matmul(ax.rnd(p, "f16"), ax.exact(v[k0:k0 + B]), F32, init=acc_scaled)
            m = m_new
        rows.append(ax.div(acc, _bcast(lsum, (slice(None), None)), F32))
    out = Approx(np.concatenate([r.v for r in rows]), np.concatenate([r.e for r in rows]))
    return {"o_ptr": _derived(out, np.float16)}


def paged_attention(a: Inputs) -> dict[str, Expected]:
    """Sequence b attends to its lens[b] tokens, gathered page by page through the block table,
    256 tokens (16 pages) a chunk, carrying the online-softmax state (maximum m, denominator
    l, unnormalised output acc, f32) from chunk to chunk as the kernel does."""
    q, kc, vc = (_f64(a[n]) for n in ("q_ptr", "kc_ptr", "vc_ptr"))
    bt, lens = a["bt_ptr"].astype(np.int64), a["lens_ptr"].astype(np.int64)
    scale = ax.exact(np.float64(np.float32(0.0883883461)))  # the kernel's f32 constant
    j = np.arange(256)
    outs: list[Approx] = []
    for b in range(q.shape[0]):
        m = ax.exact(np.full(1, -np.inf))
        lsum = ax.exact(np.zeros(1))
        acc = ax.exact(np.zeros((1, 128)))
        for c in range(0, -(-int(lens[b]) // 16), 16):  # the chunk's first page
            pages = bt[b, c + j // 16]
            keys, vals = kc[pages, j % 16], vc[pages, j % 16]
            s = ax.matmul(ax.exact(q[b:b + 1]), ax.exact(keys.T), F32)
            sm = _mask(ax.mul(s, scale, F32), (16 * c + j >= lens[b])[None, :])
            m_new = ax.maximum(sm, 1, init=m)
            p = ax.exp(ax.sub(sm, _bcast(m_new, (slice(None), None)), F32), F32)
            alpha = ax.exp(ax.sub(m, m_new, F32), F32)
            lsum = ax.total(p, 1, F32, init=ax.mul(lsum, alpha, F32))
            acc = ax.matmul(p, ax.exact(vals), F32, init=ax.mul(acc, _bcast(alpha, (slice(None), None)), F32))
            m = m_new
        outs.append(ax.div(acc, _bcast(lsum, (slice(None), None)), F32))
    out = Approx(np.concatenate([o.v for o in outs]), np.concatenate([o.e for o in outs]))
    return {"o_ptr": _derived(out, np.float16)}


def _scaled_columns_matmul(x: np.ndarray, wd: np.ndarray) -> Approx:
    """x @ wd in f32 (an order-free sum of K products) for exact x and exact wd whose columns
    are f8 weights times one f32 scale each: too many binades for one limb_matmul. Each column
    is divided by the power of two just above its largest magnitude (exact) and the matrix
    split at 2^-12 (exact): the large part's f32 values in [2^-12, 1) span at most 35 bits,
    the small part's span is that of the small weights. Both products are limb products,
    added once in float64 and scaled back (exact). Raises ValueError when a part spans more
    than 40 bits (the caller then takes the general bound)."""
    _, ex = np.frexp(np.abs(wd).max(axis=0))
    shift = np.where(wd.any(axis=0), ex, 0)  # column n divided by 2^shift[n]
    b = np.ldexp(wd, -shift[None, :])
    big = np.where(np.abs(b) >= 2.0**-12, b, 0.0)
    parts = [ax.limb_matmul(x, part) for part in (big, b - big)]
    v = np.ldexp(parts[0][0] + parts[1][0], shift[None, :])
    m = np.ldexp((parts[0][1] + parts[1][1]) * (1 + 2 * ax.U64), shift[None, :])
    s_err = np.ldexp(parts[0][2] + parts[1][2], shift[None, :]) + ax.U64 * ax.mag(v)
    k = x.shape[-1]
    return Approx(v, (ax.gamma_f(k, F32) * m + k * ax.tiny(F32) + s_err) * ax._UP)


def fp8_dequant_matmul(a: Inputs) -> dict[str, Expected]:
    w, s = _f64(a["w_ptr"]), _f64(a["s_ptr"])[None, :]
    x = _f64(a["x_ptr"])
    # w * s is exact in float64 (a 4-bit f8 significand times a 24-bit f32 one), so numpy's one
    # rounding of it to f32 is the correctly rounded arith.mulf: the scaled weights are exact
    wd = _f64((w * s).astype(np.float32))
    try:
        if not np.isfinite(wd).all():
            raise ValueError("non-finite scaled weights")
        y = _scaled_columns_matmul(x, wd)
    except ValueError:
        y = ax.matmul(ax.exact(x), ax.mul(ax.exact(w), ax.exact(s), F32), F32)  # w * s, rounded to f32
    return {"y_ptr": _derived(y, np.float16)}


def ring_allreduce(a: Inputs) -> dict[str, Expected]:
    # every tile's row of OUT is the sum of the eight rows of X: one order-free sum of 8 terms
    # (the row's bounds computed once, then repeated for every tile)
    s, m = exact_sum(a["x_ptr"], 0)
    rows = a["x_ptr"].shape[0]
    row = summed(s, m, np.float32, rows, products=False)
    assert row.lo is not None and row.hi is not None
    return {"out_ptr": Expected(golden=np.tile(row.golden, (rows, 1)), lo=np.tile(row.lo, (rows, 1)),
                                hi=np.tile(row.hi, (rows, 1)), method=row.method)}


RING_CHUNK = 65536  # elements per message of examples/ring_allreduce.ktir's ring; a block is one chunk per tile


def ring_allreduce_steps(a: Inputs) -> dict[str, Expected]:
    # the ring algorithm fixes the order of every addition: the vectors are reduced in blocks
    # of T chunks, and in reduce-scatter step s tile t adds its own chunk (t - s - 1) mod T to
    # the partial it receives from tile t - 1, so chunk k of every block is folded along the
    # ring starting at tile k: acc = x[k], then acc = x[k + j] + acc for j = 1 .. T - 1
    # (indices mod T), each addition one correctly rounded f32 arith.addf (numpy's f32 add
    # rounds once, IEEE). The all-gather then copies the finished chunks to every tile unchanged.
    x = np.asarray(a["x_ptr"])
    return {"out_ptr": same(np.tile(ring_order_sum(x), (x.shape[0], 1)))}


def ring_order_sum(x: np.ndarray, chunk: int = RING_CHUNK) -> np.ndarray:
    """The sum of the rows of x (tiles x width, f32) in the ring's order: in each block of one
    chunk per tile, chunk k starts on tile k and travels right, each tile adding its own piece
    to the partial it receives (tests/interp/test_example_ring_allreduce_sizes.py uses it too)."""
    tiles, width = x.shape
    blocks = x.reshape(tiles, width // (tiles * chunk), tiles, chunk)
    row = np.empty(blocks.shape[1:], dtype=np.float32)
    for k in range(tiles):
        acc = blocks[k, :, k]
        for j in range(1, tiles):
            acc = blocks[(k + j) % tiles, :, k] + acc
        row[:, k] = acc
    return row.reshape(width)


def embedding_gather(a: Inputs) -> dict[str, Expected]:
    return {"y_ptr": same(a["e_ptr"][a["ids_ptr"].astype(np.int64)])}


def distributed_copy(a: Inputs) -> dict[str, Expected]:
    return {"y_ptr": same(a["x_ptr"].T.copy())}


MODELS: dict[str, Callable[[Inputs], dict[str, Expected]]] = {
    "vector_add": vector_add, "tiled_matmul": tiled_matmul, "softmax": softmax, "rmsnorm": rmsnorm,
    "layernorm": layernorm, "rope": rope, "swiglu": swiglu, "causal_attention": causal_attention,
    "ring_allreduce": ring_allreduce, "ring_allreduce_steps": ring_allreduce_steps, "embedding_gather": embedding_gather,
    "paged_attention": paged_attention, "fp8_dequant_matmul": fp8_dequant_matmul, "distributed_copy": distributed_copy,
}
