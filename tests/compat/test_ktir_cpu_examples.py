"""torch-spyre/ktir-cpu's example kernels, run as shipped and checked against numpy.

The kernels are not in this repository (they are not ours to copy): set `KTIR_CPU_EXAMPLES` to
a checkout's `examples/` folder (or a copy of its `examples/**` files) and these tests run each
kernel from there; without it they are skipped. The oracles below are written here from what
each kernel computes (its comments and ktir-cpu's `entries.py` name the shapes), in f32 from the
kernel's f16 inputs, compared with a tolerance relative to the result's size.

`benchmarks/upstream_corpus.py` measures the same folder (validate / run / --lenient) without
oracles; spec/differences.md lists why the kernels not here do not run."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.verify import validate_text
from reference_interp.executor import At

FOLDER = os.environ.get("KTIR_CPU_EXAMPLES")
pytestmark = pytest.mark.skipif(not FOLDER, reason="set KTIR_CPU_EXAMPLES to ktir-cpu's examples/ folder")

H = np.float16


def _text(rel: str) -> str:
    assert FOLDER is not None
    path = Path(FOLDER) / rel
    if not path.exists():
        pytest.skip(f"{rel} is not in {FOLDER}")
    return path.read_text()


def _run(rel: str, args: dict[str, Any], func: str | None = None, lenient: bool = False,
         memory: dict[str, At] | None = None, text: str | None = None) -> dict[str, Any]:
    module = ktir.parse(text if text is not None else _text(rel), rel)
    return ri.run(module, func, {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()},
                  strict=not lenient, memory=memory or {}).outputs


def _nan_then_fixed(rel: str, args: dict[str, Any], output: str, want: np.ndarray, lenient: bool = False) -> None:
    """A kernel that starts a max at `0xFF80 : f16`: a NaN as MLIR reads it (bf16's -inf; f16's
    is 0xFC00), which `arith.maximumf` propagates. `ktir validate` warns; the output is NaN;
    with the constant spelled 0xFC00 (in memory only) it matches numpy."""
    text = _text(rel)
    _, diagnostics = validate_text(text, rel)
    assert any(d.id == "arith.constant.nan" for d in diagnostics)
    assert np.isnan(np.asarray(_run(rel, args, lenient=lenient, text=text)[output], np.float32)).all()
    fixed = _run(rel, args, lenient=lenient, text=text.replace("0xFF80 : f16", "0xFC00 : f16"))
    _close(fixed[output], want)


def _close(got: np.ndarray, want: np.ndarray, tol: float = 1e-2) -> None:
    got, want = np.asarray(got, np.float64).reshape(want.shape), np.asarray(want, np.float64)
    scale = max(float(np.abs(want).max()), 1e-6)
    err = float(np.abs(got - want).max()) / scale
    assert err <= tol, f"max error {err:.3g} of the largest |value| {scale:.3g} (tolerance {tol})"


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(H)


def _f(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _swiglu(x: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray) -> np.ndarray:
    g = _f(x) @ _f(wg)
    return _f(x) + (g / (1 + np.exp(-g)) * (_f(x) @ _f(wu))) @ _f(wd)


def _rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x32 = _f(x)
    return x32 / np.sqrt((x32 * x32).mean(axis=1, keepdims=True) + eps) * _f(w)


# ---------------------------------------------------------------------------- examples/ktir


def test_ffn_swiglu() -> None:
    rng = np.random.default_rng(0)
    x, wg, wu, wd = (_normal(rng, s, 0.2) for s in ((1, 64), (64, 128), (64, 128), (128, 64)))
    out = _run("ktir/ffn_swiglu.mlir", {"x_ptr": x, "w_gate_ptr": wg, "w_up_ptr": wu, "w_down_ptr": wd,
                                        "out_ptr": np.zeros((1, 64), H)}, lenient=True)
    _close(out["out_ptr"], _swiglu(x, wg, wu, wd))


def test_ffn_swiglu_4core() -> None:
    rng = np.random.default_rng(1)
    x = _normal(rng, (4, 256))
    wg, wu = (_normal(rng, (256, 1024), 256 ** -0.5) for _ in range(2))
    wd = _normal(rng, (1024, 256), 1024 ** -0.5)
    out = _run("ktir/ffn_swiglu_4core.mlir", {"x_ptr": x, "w_gate_ptr": wg, "w_up_ptr": wu, "w_down_ptr": wd,
                                              "out_ptr": np.zeros((4, 256), H)}, lenient=True)
    _close(out["out_ptr"], _swiglu(x, wg, wu, wd))


def test_nested_yield() -> None:
    out = _run("ktir/nested_yield.ktir", {"out": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(out["out"], np.full(4, 2.0, np.float32))


@pytest.mark.parametrize("rel, width, fold", [("ktir/reduce_generic.mlir", 4, np.sum),
                                               ("ktir/reduce_multiop.mlir", 8, np.max)])
def test_row_reductions(rel: str, width: int, fold: Callable[..., Any]) -> None:
    data = np.array([[1.5, -2.0, 3.25, 0.5, 2.75, -1.0, 0.25, 1.0][:width]], H)
    out = _run(rel, {"arg0": data.copy()})
    np.testing.assert_array_equal(out["arg0"], np.full((1, width), fold(_f(data)), H))


def test_scalar_broadcast() -> None:
    out = _run("ktir/scalar_broadcast.mlir", {"in_ptr": np.full((1, 1), 2.5, H), "out_ptr": np.zeros((4, 64), H)})
    np.testing.assert_array_equal(out["out_ptr"], np.full((4, 64), 2.5, H))


def test_softmax_wide() -> None:
    x = _normal(np.random.default_rng(2), (2, 262144))
    out = _run("ktir/softmax_wide.mlir", {"output_ptr": np.zeros_like(x), "input_ptr": x})
    _close(out["output_ptr"], _softmax(_f(x)), 5e-2)


# ---------------------------------------------------------------------------- examples/latency


def test_matmul_small() -> None:
    rng = np.random.default_rng(3)
    a, b = _normal(rng, (16, 64)), _normal(rng, (64, 64))
    out = _run("latency/matmul_small.mlir", {"a_ptr": a, "b_ptr": b, "c_ptr": np.zeros((16, 64), H), "K": 64,
                                             "BLOCK_SIZE_M": 8, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32}, lenient=True)
    _close(out["c_ptr"], _f(a) @ _f(b))


def test_rmsnorm_4x1() -> None:
    rng = np.random.default_rng(4)
    x, w = _normal(rng, (256, 4096)), np.tile(_normal(rng, (1, 4096)), (256, 1))
    out = _run("latency/rmsnorm_4core_4x1.mlir", {"X": x, "Y": np.zeros_like(x), "W": w, "N": 4096,
                                                  "eps": 1e-5, "BLOCK_SIZE": 1024})
    _close(out["Y"], _rmsnorm(x, w, 1e-5))


def test_rope_4x2() -> None:
    rng = np.random.default_rng(5)
    heads, seq, d = 40, 4096, 128
    x = _normal(rng, (heads * seq, d))
    angles = np.outer(np.arange(seq), 10000.0 ** (-np.arange(d // 2) * 2.0 / d))
    cos, sin = np.cos(angles).astype(H), np.sin(angles).astype(H)
    out = _run("latency/rope_fwd_4x2.mlir", {"x_ptr": x, "cos_ptr": cos, "sin_ptr": sin, "out_ptr": np.zeros_like(x)})
    x3 = _f(x).reshape(heads, seq, d)
    first, second = x3[..., : d // 2], x3[..., d // 2:]
    c, s = _f(cos)[None], _f(sin)[None]
    _close(out["out_ptr"], np.concatenate([first * c - second * s, first * s + second * c], -1).reshape(heads * seq, d))


def test_softmax_small() -> None:
    x = _normal(np.random.default_rng(6), (64, 64))
    out = _run("latency/softmax_small_explicit.mlir", {"output_ptr": np.zeros_like(x), "input_ptr": x, "n_rows": 64})
    _close(out["output_ptr"], _softmax(_f(x)))
    _nan_then_fixed("latency/softmax_small.mlir", {"output_ptr": np.zeros_like(x), "input_ptr": x}, "output_ptr",
                    _softmax(_f(x)))


# ---------------------------------------------------------------------------- examples/rfc (constant addresses)


def test_add_with_control_flow() -> None:
    rng = np.random.default_rng(7)
    a, b = _normal(rng, (96, 64)), _normal(rng, (96, 64))
    memory = {"A": At(a, 1024), "B": At(b, 12288), "C": At(np.zeros((96, 64), H), 18432)}
    out = _run("rfc/add-with-control-flow.mlir", {}, memory=memory)
    # no grid attribute: one tile, which adds rows 0-2 (its tile_size); the rest stays zero
    want = np.zeros((96, 64), np.float32)
    want[:3] = _f(a[:3]) + _f(b[:3])
    _close(out["C"], want, 1e-3)


def test_distributed_view_copy() -> None:
    rng = np.random.default_rng(8)
    hbm, lx0, lx1 = _normal(rng, (96, 64)), _normal(rng, (4096,)), _normal(rng, (64, 64))
    memory = {"AH": At(hbm, 0), "L0": At(lx0, 12288, "ct_local"), "L1": At(lx1, 16384, "ct_local"),
              "B": At(np.zeros((192, 64), H), 24576)}
    out = _run("rfc/distributed-view-copy.mlir", {}, memory=memory)
    r, c = np.meshgrid(np.arange(32), np.arange(64), indexing="ij")
    np.testing.assert_array_equal(out["B"], np.concatenate([hbm, lx0[r + 64 * c], lx1]))  # LX0 has strides [1, 64]


def test_indirect_access_copy() -> None:
    rng = np.random.default_rng(9)
    x = _normal(rng, (64, 64))
    i1, i2 = (rng.integers(0, 64, (64, 64)).astype(np.int32) for _ in range(2))
    memory = {"X": At(x, 0), "I1": At(i1, 8192), "I2": At(i2, 16384), "Y": At(np.zeros((64, 64), H), 24576)}
    out = _run("rfc/indirect-access-copy.mlir", {}, memory=memory)
    np.testing.assert_array_equal(out["Y"], x[i1, i2])


@pytest.mark.parametrize("rel, s0", [("rfc/distributed-view-copy-dynamic-s16.mlir", 16),
                                     ("rfc/distributed-view-copy-dynamic-s32.mlir", 32),
                                     ("rfc/distributed-view-copy-dynamic.mlir", 16),
                                     ("rfc/distributed-view-copy-dynamic.mlir", 32)])
def test_distributed_view_copy_dynamic(rel: str, s0: int) -> None:
    rng = np.random.default_rng(s0)
    a0, a1 = _normal(rng, (64, s0)), _normal(rng, (64, s0))
    out = _run(rel, {"a0_ptr": a0, "a1_ptr": a1, "b_ptr": np.zeros((64, 2 * s0), H), "s0_in": s0})
    np.testing.assert_array_equal(out["b_ptr"], np.concatenate([a0, a1], 1))


def test_distributed_view_copy_rowmerge() -> None:
    rng = np.random.default_rng(10)
    a0, a1 = _normal(rng, (64, 32)), _normal(rng, (64, 32))
    out = _run("rfc/distributed-view-copy-rowmerge-dynamic.mlir",
               {"a0_ptr": a0, "a1_ptr": a1, "b_ptr": np.zeros((128, 32), H), "s0_in": 32})
    np.testing.assert_array_equal(out["b_ptr"], np.concatenate([a0, a1], 0))


# ---------------------------------------------------------------------------- examples/sdsc


def test_sdpa_pv_ksplit() -> None:
    rng = np.random.default_rng(11)
    a, b = _normal(rng, (1, 8192)), _normal(rng, (8192, 128), 0.05)
    out = _run("sdsc/sdpa_pv_ksplit.mlir", {"a_ptr": a, "b_ptr": b, "c_ptr": np.zeros((1, 128), H)})
    _close(out["c_ptr"], _f(a) @ _f(b))


# ---------------------------------------------------------------------------- examples/triton-ktir


def test_indexed_add() -> None:
    rng = np.random.default_rng(12)
    x, y = _normal(rng, (128, 64, 8, 128)), _normal(rng, (2, 32, 8, 128))
    index = np.array([3, 100], np.int64)
    out = _run("triton-ktir/indexed_add.mlir", {"x_ptr": x, "y_ptr": y, "index_ptr": index,
                                                "output_ptr": np.zeros_like(y), "dim1_start": 0})
    _close(out["output_ptr"], _f(x[index][:, :32]) + _f(y), 1e-3)


def test_layernorm() -> None:
    rng = np.random.default_rng(13)
    x = _normal(rng, (1152, 8192))
    w, bias = (np.tile(_normal(rng, (1, 8192)), (1152, 1)) for _ in range(2))
    out = _run("triton-ktir/layernorm_fwd_ktir.mlir",
               {"X": x, "Y": np.zeros_like(x), "W": w, "B": bias, "Mean": np.zeros(1152, H), "Rstd": np.zeros(1152, H),
                "eps": 1e-5})
    x32 = _f(x)
    mean = x32.mean(axis=1)
    rstd = 1 / np.sqrt(x32.var(axis=1) + 1e-5)
    _close(out["Mean"], mean, 5e-2)
    _close(out["Rstd"], rstd)
    _close(out["Y"], (x32 - mean[:, None]) * rstd[:, None] * _f(w) + _f(bias), 2e-2)


def test_matmul_fwd() -> None:
    rng = np.random.default_rng(14)
    a, b = _normal(rng, (64, 2048), 0.1), _normal(rng, (2048, 8192), 0.1)
    out = _run("triton-ktir/matmul_fwd_ktir.mlir", {"a_ptr": a, "b_ptr": b, "c_ptr": np.zeros((64, 8192), H), "K": 2048,
                                                    "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 512, "BLOCK_SIZE_K": 128},
               lenient=True)
    _close(out["c_ptr"], _f(a) @ _f(b))


def test_paged_attention() -> None:
    rng = np.random.default_rng(15)
    tokens, heads, kv_heads, d, pages, page, tiles, context = 8, 32, 8, 128, 64, 16, 8, 120
    q = _normal(rng, (tokens, heads, d))
    kc, vc = _normal(rng, (pages, page, kv_heads, d)), _normal(rng, (pages, page, kv_heads, d))
    table = rng.integers(0, pages, (1, 16)).astype(np.int32)
    scale = 1 / np.sqrt(d)
    out = _run("triton-ktir/paged_attention.mlir",
               {"output_ptr": np.zeros_like(q), "query_ptr": q, "key_cache_ptr": kc, "value_cache_ptr": vc,
                "block_tables_ptr": table, "cur_batch_start_index": 0, "block_table_offset": 0,
                "num_tiles": tiles, "context_len": context, "scale": scale})
    want = np.zeros((tokens, heads, d), np.float32)
    per = heads // kv_heads
    for h in range(kv_heads):
        keys = np.concatenate([_f(kc[p, :, h]) for p in table[0, :tiles]])
        vals = np.concatenate([_f(vc[p, :, h]) for p in table[0, :tiles]])
        for t in range(tokens):
            s = _f(q[t, h * per:(h + 1) * per]) @ keys.T * scale
            s[:, np.arange(keys.shape[0]) > context + t] = -np.inf  # causal: position context + t
            want[t, h * per:(h + 1) * per] = _softmax(s) @ vals
    _close(out["output_ptr"], want)


def test_sdpa_2d() -> None:
    rng = np.random.default_rng(16)
    q, k, v = (_normal(rng, (32, 64)) for _ in range(3))
    _nan_then_fixed("triton-ktir/sdpa_2d.mlir", {"q_ptr": q, "k_ptr": k, "v_ptr": v, "output_ptr": np.zeros_like(q)},
                    "output_ptr", _softmax(_f(q) @ _f(k).T * 0.125) @ _f(v), lenient=True)


def test_softmax_fwd() -> None:
    x = _normal(np.random.default_rng(17), (4096, 1024))
    x[:, 778:] = -np.inf  # ktir-cpu's padded rows
    out = _run("triton-ktir/softmax_fwd_ktir.mlir", {"output_ptr": np.zeros_like(x), "input_ptr": x})
    _close(out["output_ptr"], _softmax(_f(x)))


@pytest.mark.parametrize("rel, func", [("triton-ktir/softmax_lx_fused.ktir", None),
                                       ("triton-ktir/softmax_lx_fused_calls.ktir", "softmax")])
def test_softmax_lx_fused(rel: str, func: str | None) -> None:
    logical = _normal(np.random.default_rng(18), (512, 1024))
    sticks = np.ascontiguousarray(logical.reshape(512, 16, 64).transpose(1, 0, 2))  # [stick, row, 64]
    out = _run(rel, {"X": sticks, ("C" if func is None else "Y"): np.zeros_like(sticks)}, func=func)
    got = out["C" if func is None else "Y"].reshape(16, 512, 64).transpose(1, 0, 2).reshape(512, 1024)
    _close(got, _softmax(_f(logical)))


def test_vector_adds() -> None:
    rng = np.random.default_rng(19)
    x, y = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)
    out = _run("triton-ktir/vector_add_dynamic_ktir.mlir",
               {"x_ptr": x, "y_ptr": y, "output_ptr": np.zeros_like(x), "n_elements": 1024})
    np.testing.assert_array_equal(out["output_ptr"], x + y)
    x16, y16 = _normal(rng, (4096,)), _normal(rng, (4096,))
    out = _run("triton-ktir/vector_add_ktir.mlir", {"x_ptr": x16, "y_ptr": y16, "output_ptr": np.zeros_like(x16)})
    np.testing.assert_array_equal(out["output_ptr"], x16 + y16)


# ---------------------------------------------------------------------------- the paged tensors: one 1.4 GB image

BIG = os.environ.get("KTIR_CPU_EXAMPLES_BIG")


@pytest.mark.skipif(not BIG, reason="set KTIR_CPU_EXAMPLES_BIG=1 too: these need a 1.4 GB memory image")
@pytest.mark.parametrize("rel", ["rfc/paged-tensor-copy.mlir", "rfc/paged-tensor-write.mlir"])
def test_paged_tensors_in_one_byte_image(rel: str) -> None:
    """Their constant addresses, read as elements (f16 at 10M/30M/40M, the i32 page table at
    20M/30M), put the page table inside the 10000-page pool: one byte array holding everything
    runs them (spec/execution.md), and the pages the table names (below 128) are far from it."""
    nb, ntkv, page, d, heads, pages = 4, 2048, 64, 128, 8, 10000
    text = _text(rel)
    rng = np.random.default_rng(20)
    copy = rel.endswith("copy.mlir")
    if copy:
        dense_b, table_b, pool_b = 10_000_000 * 2, 20_000_000 * 4, 30_000_000 * 2
    else:
        dense_b, table_b, pool_b = 10_000_000 * 2, 30_000_000 * 4, 40_000_000 * 2
    image = np.zeros(pool_b + pages * heads * page * d * 2, np.uint8)
    table = rng.permutation(nb * ntkv // page).reshape(nb, ntkv // page).astype(np.int32)  # distinct pages < 128
    image[table_b: table_b + table.nbytes] = table.view(np.uint8).reshape(-1)
    dense_n = nb * ntkv * heads * d
    tkv = np.arange(ntkv)
    if copy:
        pool = _normal(rng, (128, heads, page, d))
        image[pool_b: pool_b + pool.nbytes] = pool.view(np.uint8).reshape(-1)
    else:
        dense = _normal(rng, (nb, ntkv, heads, d))
        image[dense_b: dense_b + dense.nbytes] = dense.view(np.uint8).reshape(-1)
    out = _run(rel, {}, memory={"M": At(image, 0)}, text=text)["M"]
    if copy:  # Y[b, t, h, :] = X[table[b, t // 64], h, t % 64, :]
        got = out[dense_b: dense_b + dense_n * 2].view(np.float16).reshape(nb, ntkv, heads, d)
        for b in range(nb):
            np.testing.assert_array_equal(got[b], pool[table[b, tkv // page], :, tkv % page, :])
    else:  # Y[table[b, t // 64], h, t % 64, :] = X[b, t, h, :]
        got = out[pool_b: pool_b + 128 * heads * page * d * 2].view(np.float16).reshape(128, heads, page, d)
        for b in range(nb):
            np.testing.assert_array_equal(got[table[b, tkv // page], :, tkv % page, :], dense[b])
