"""Every kernel in examples/ against a numpy oracle (and the corpus kernels too)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import reference_interp as ri
from ktir.cli import main

from .helpers import EXAMPLES, ROOT, close, example

RNG = np.random.default_rng(1234)


def normal(*shape: int, dtype: object = np.float16, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(dtype)  # type: ignore[call-overload]


def f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


def test_every_example_is_canonical_and_has_a_test() -> None:
    names = sorted(p.name for p in EXAMPLES.glob("*.ktir"))
    assert len(names) >= 12
    tested = {n.split("test_", 1)[1] for n in globals() if n.startswith("test_")}
    for name in names:
        assert name[: -len(".ktir")] in tested, f"no oracle test for examples/{name}"
        assert main(["fmt", str(EXAMPLES / name), "--check"]) == 0, f"examples/{name} is not canonical"


def test_vector_add() -> None:
    N = 5 * 65536  # five blocks: tile 0 adds two, the others one each
    a, b = normal(N), normal(N)
    r = ri.run(example("vector_add.ktir"), args={"A": a, "B": b, "C": np.zeros(N, np.float16), "N": N})
    np.testing.assert_array_equal(r.outputs["C"], a + b)
    assert [s.bytes_written["global"] for s in r.stats] == [2 * 131072, 131072, 131072, 131072]


def test_tiled_matmul() -> None:
    M, N, K = 2048, 2048, 256
    A, B = normal(M, K, scale=0.5), normal(K, N, scale=0.5)
    r = ri.run(example("tiled_matmul.ktir"), args={"a_ptr": A, "b_ptr": B, "c_ptr": np.zeros((M, N), np.float16),
                                                    "M": M, "N": N, "K": K})
    want = f32(A) @ f32(B)
    close(r.outputs["c_ptr"], want, rtol=2e-3, atol=2e-2)
    assert r.grid == (4, 8)
    assert sum(s.bytes_written["global"] for s in r.stats) == M * N * 2


def test_softmax() -> None:
    X = normal(1024, 1024, scale=3.0)
    r = ri.run(example("softmax.ktir"), args={"x_ptr": X, "y_ptr": np.zeros_like(X), "R": 1024})
    x = f32(X)
    e = np.exp(x - x.max(1, keepdims=True))
    close(r.outputs["y_ptr"], e / e.sum(1, keepdims=True), rtol=2e-3, atol=1e-6)


def test_rmsnorm() -> None:
    X, W = normal(256, 512), normal(512)
    r = ri.run(example("rmsnorm.ktir"), args={"x_ptr": X, "w_ptr": W, "y_ptr": np.zeros_like(X), "R": 256})
    x = f32(X)
    close(r.outputs["y_ptr"], x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * f32(W), rtol=2e-3, atol=2e-3)


def test_layernorm() -> None:
    bf = ml_dtypes.bfloat16
    X, G, B = normal(128, 256, dtype=bf), normal(256, dtype=bf), normal(256, dtype=bf)
    r = ri.run(example("layernorm.ktir"), args={"x_ptr": X, "g_ptr": G, "b_ptr": B, "y_ptr": np.zeros_like(X), "R": 128})
    x = f32(X)
    mu = x.mean(1, keepdims=True)
    want = (x - mu) / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5) * f32(G) + f32(B)
    assert r.outputs["y_ptr"].dtype == bf
    close(r.outputs["y_ptr"], want, rtol=1e-2, atol=2e-2)


def test_rope() -> None:
    T = 128
    Q = normal(T, 4, 64, dtype=np.float32)
    ang = np.arange(T)[:, None] * (10000.0 ** (-np.arange(32) / 32))[None]
    C, S = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    r = ri.run(example("rope.ktir"), args={"q_ptr": Q, "cos_ptr": C, "sin_ptr": S, "y_ptr": np.zeros_like(Q), "T": T})
    x1, x2, c, s = Q[..., :32], Q[..., 32:], C[:, None], S[:, None]
    close(r.outputs["y_ptr"], np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1), rtol=1e-6, atol=1e-6)


def test_swiglu() -> None:
    X, Wg, Wu = normal(256, 512, scale=0.25), normal(512, 256, scale=0.04), normal(512, 256, scale=0.04)
    r = ri.run(example("swiglu.ktir"), args={"x_ptr": X, "wg_ptr": Wg, "wu_ptr": Wu, "h_ptr": np.zeros((256, 256), np.float16),
                                             "M": 256, "N": 256, "K": 512})
    g, u = f32(X) @ f32(Wg), f32(X) @ f32(Wu)
    close(r.outputs["h_ptr"], g / (1 + np.exp(-g)) * u, rtol=2e-3, atol=1e-4)


def test_causal_attention() -> None:
    S = 512
    Q, K, V = normal(S, 64), normal(S, 64), normal(S, 64)
    r = ri.run(example("causal_attention.ktir"), args={"q_ptr": Q, "k_ptr": K, "v_ptr": V, "o_ptr": np.zeros_like(Q), "S": S})
    s = f32(Q) @ f32(K).T / 8
    s[np.triu(np.ones((S, S), bool), 1)] = -np.inf
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    close(r.outputs["o_ptr"], p @ f32(V), rtol=5e-3, atol=5e-3)
    # heaviest first: tile t takes the query block ending at row S - 128 t and walks S / 128 - t
    # key blocks; tiles 4.. have no block
    ops = [s.ops for s in r.stats]
    assert ops[:4] == sorted(ops[:4], reverse=True) and ops[3] < ops[0] and len(set(ops[4:])) == 1 and ops[4] < ops[3]


@pytest.mark.parametrize("func", ["ring_allreduce", "ring_allreduce_steps"])
def test_ring_allreduce(func: str) -> None:
    L = 524288  # one block of the ring's (8 chunks of 65536), 8 of the collective's
    X = normal(8, L, dtype=np.float32)
    r = ri.run(example("ring_allreduce.ktir"), func, args={"x_ptr": X, "out_ptr": np.zeros_like(X), "L": L})
    close(r.outputs["out_ptr"], np.broadcast_to(X.sum(0), (8, L)), rtol=1e-5, atol=1e-5)
    sent = [s.bytes_sent for s in r.stats]
    assert sent == [4 * L] * 8 if func == "ring_allreduce" else sent == [14 * L // 8 * 4] * 8


def test_embedding_gather() -> None:
    E = normal(1000, 2048)
    ids = RNG.integers(0, 1000, 256).astype(np.int32)
    r = ri.run(example("embedding_gather.ktir"), args={"e_ptr": E, "ids_ptr": ids, "y_ptr": np.zeros((256, 2048), np.float16),
                                                        "V": 1000, "B": 256, "H": 2048})
    np.testing.assert_array_equal(r.outputs["y_ptr"], E[ids])
    # tiles 0 and 1 each gather one 128-row block in two 1,024-column halves, reading the
    # block's 128 ids (4 bytes each) once per half; the other 30 tiles have no block
    per_block = 2 * (128 * 1024 * 2 + 128 * 4)
    assert [s.bytes_read.get("global", 0) for s in r.stats] == [per_block] * 2 + [0] * 30


def test_paged_attention() -> None:
    NP, S, W = 80, 4, 16
    Q, Kc, Vc = normal(S, 128), normal(NP, 16, 128), normal(NP, 16, 128)
    BT = RNG.permutation(NP)[:S * W].reshape(S, W).astype(np.int32)
    lens = np.array([256, 77, 16, 1], np.int32)
    r = ri.run(example("paged_attention.ktir"), args={"q_ptr": Q, "kc_ptr": Kc, "vc_ptr": Vc, "bt_ptr": BT,
                                                       "lens_ptr": lens, "o_ptr": np.zeros_like(Q), "NP": NP, "S": S, "W": W})
    want = np.zeros((S, 128), np.float32)
    for b in range(S):
        k = f32(Kc[BT[b]].reshape(16 * W, 128)[: lens[b]])
        v = f32(Vc[BT[b]].reshape(16 * W, 128)[: lens[b]])
        s = k @ f32(Q[b]) / np.sqrt(128)
        p = np.exp(s - s.max())
        want[b] = p @ v / p.sum()
    close(r.outputs["o_ptr"], want, rtol=3e-3, atol=3e-3)


def test_distributed_copy() -> None:
    M, N = 512, 2048  # four 256 x 1024 panels
    X = normal(M, N, dtype=np.float32)
    r = ri.run(example("distributed_copy.ktir"), args={"x_ptr": X, "y_ptr": np.zeros((N, M), np.float32), "scratch": 0,
                                                        "M": M, "N": N}, target="spyre")
    np.testing.assert_array_equal(r.outputs["y_ptr"], X.T)
    for s in r.stats:
        assert s.scratchpad_peak == 64 * 1024 * 4
        assert s.bytes_read["ct_local"] == 4 * 256 * 256 * 4  # per panel a column block spans all four scratchpads


def test_distributed_copy_without_barrier_is_a_race() -> None:
    text = (EXAMPLES / "distributed_copy.ktir").read_text()
    # route the reads around the barrier: replace the reduce's result by a fresh value
    start = text.index("      %f = ktdp.inter_tile_produce")
    end = text.index("      // 3. my column block")
    import ktir

    m = ktir.parse(text[:start] + text[end:], "no_barrier.ktir")
    X = normal(256, 1024, dtype=np.float32)
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(m, args={"x_ptr": X, "y_ptr": np.zeros((1024, 256), np.float32), "scratch": 0, "M": 256, "N": 1024})
    # tile 0 runs first and reads tile 1's scratchpad, which tile 1 has not written yet
    assert info.value.kind in ("race", "uninitialised")


def test_fp8_dequant_matmul() -> None:
    f8 = ml_dtypes.float8_e4m3fn
    X, W = normal(512, 512), normal(512, 256, dtype=f8, scale=4.0)
    S = (RNG.random(256) / 16).astype(np.float32)
    r = ri.run(example("fp8_dequant_matmul.ktir"), args={"x_ptr": X, "w_ptr": W, "s_ptr": S, "y_ptr": np.zeros((512, 256), np.float16),
                                                         "M": 512, "N": 256, "K": 512})
    close(r.outputs["y_ptr"], f32(X) @ (f32(W) * S), rtol=2e-3, atol=2e-3)
    # tile (0, 0) computes the one 512 x 256 block: two K steps of X (f16) and W (f8), its scales once
    assert r.stats[0].bytes_read["global"] == 2 * (512 * 256 * 2 + 256 * 256) + 256 * 4
    assert r.stats[1].bytes_read.get("global", 0) == 0


# ---------------------------------------------------------------------- the corpus kernels

CORPUS = ROOT / "tests" / "corpus" / "kernels"


def corpus(name: str):  # type: ignore[no-untyped-def]
    import ktir

    path = CORPUS / name
    return ktir.parse(path.read_text(), str(path))


def test_corpus_rmsnorm_distributed_reads_other_scratchpads() -> None:
    X, W = normal(4, 256), normal(256)
    r = ri.run(corpus("rmsnorm_distributed.ktir"), args={"x_off": ri.Local(X[:, None, :]), "w_ptr": W,
                                                         "y_ptr": np.zeros((4, 256), np.float16)})
    x = f32(X)
    close(r.outputs["y_ptr"], x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * f32(W), rtol=3e-3, atol=3e-3)
    np.testing.assert_array_equal(r.outputs["x_off"][:, 0], X)


def test_corpus_group_reduce_then_broadcast() -> None:
    X = normal(8, 128, dtype=np.float32)
    r = ri.run(corpus("ring_reduce.ktir"), "group_reduce_then_broadcast", args={"in_ptr": X, "scratch": 0})
    assert [s.bytes_written.get("ct_local") for s in r.stats] == [512] * 8


def test_corpus_indirect_scatter_with_runtime_arg() -> None:
    Xs = normal(32, 64)
    idx = RNG.permutation(1000)[:32].astype(np.int32)
    r = ri.run(corpus("indirect_gather.ktir"), "scatter_rows_dynamic",
               args={"x_ptr": Xs, "idx_ptr": idx, "y_ptr": np.zeros((1000, 64), np.float16), "n_arg": 20})
    want = np.zeros((1000, 64), np.float16)
    want[idx[:20]] = Xs[:20]
    np.testing.assert_array_equal(r.outputs["y_ptr"], want)
    with pytest.raises(ri.KtirRuntimeError, match="upperbound"):
        ri.run(corpus("indirect_gather.ktir"), "scatter_rows_dynamic",
               args={"x_ptr": Xs, "idx_ptr": idx, "y_ptr": np.zeros((1000, 64), np.float16), "n_arg": 33})


def test_corpus_gather_transposed_returns_a_tensor() -> None:
    E = normal(1000, 64)
    ids = RNG.integers(0, 1000, 32).astype(np.int32)
    r = ri.run(corpus("indirect_gather.ktir"), "gather_transposed", args={"table": E, "idx": ids})
    np.testing.assert_array_equal(r.returns[0][0], E[ids[:8]].T)


@pytest.mark.parametrize("name", ["softmax.ktir", "layernorm.ktir", "causal_attention.ktir", "swiglu.ktir"])
def test_examples_are_clean_in_strict_mode(name: str) -> None:
    """No example reads the unspecified contents of a tensor.empty."""
    m = example(name)
    if name == "softmax.ktir":
        args = {"x_ptr": normal(1024, 1024), "y_ptr": np.zeros((1024, 1024), np.float16), "R": 1024}
    elif name == "layernorm.ktir":
        bf = ml_dtypes.bfloat16
        args = {"x_ptr": normal(128, 256, dtype=bf), "g_ptr": normal(256, dtype=bf), "b_ptr": normal(256, dtype=bf),
                "y_ptr": np.zeros((128, 256), bf), "R": 128}
    elif name == "causal_attention.ktir":
        args = {"q_ptr": normal(256, 64), "k_ptr": normal(256, 64), "v_ptr": normal(256, 64), "o_ptr": np.zeros((256, 64), np.float16),
                "S": 256}
    else:
        args = {"x_ptr": normal(256, 512), "wg_ptr": normal(512, 256), "wu_ptr": normal(512, 256), "h_ptr": np.zeros((256, 256), np.float16),
                "M": 256, "N": 256, "K": 512}
    ri.run(m, args=args, strict=True)
