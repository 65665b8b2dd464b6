"""Reference interpreter speed: every example, and kernels in ktir-cpu's style, against numpy.

For each kernel the script times the interpreter (all checks on, as users run it) and numpy
computing the same result with the same element types, in the same process, and prints
their ratio. The kernels: every file of examples/ (each takes its sizes as index arguments
and runs here at a size a model would use) and, from
cpu_style.py, a 2 x 2-grid RMSNorm written the way ktir-cpu's examples are (one row per loop
iteration, column-sharded distributed views, an all-reduce per row, f16 throughout).

Beside each ratio it prints the interpreter's fixed cost per run for that kernel's arguments
(the same run of a function with the kernel's signature and grid and an empty body: binding
and placing the arguments, a context per tile, the race tracker, the outputs), the executed
ops, and (interpreter - fixed cost) / numpy: how much of the gap is the fixed cost and how
much the ops (at small sizes, `--quick`, the fixed cost weighs more).

It also prints:
- the race check's cost per loop iteration at 128, 1,024 and 8,192 rows per tile (the
  2 x 2 RMSNorm at hidden size 256, with checks on and with the race check off; the median
  of several such pairs of runs, on process CPU time): flat when the check is linear in the
  trip count;
- the interpreter's time per executed op on small tiles (16-element loads and stores, as in
  a kernel scheduled into small blocks) and on the 2 x 2 RMSNorm.

    python benchmarks/bench_interp.py                 # full sizes (a few minutes)
    python benchmarks/bench_interp.py --quick         # small sizes, a smoke test
    python benchmarks/bench_interp.py --only matmul softmax
    python benchmarks/bench_interp.py --write-table   # also rewrite docs/guides/run.md's tables

Targets (issue 31): every kernel <= 2x numpy; the race check's per-iteration cost flat in the
trip count; <= 1.5 us per executed op; the 2 x 2 RMSNorm at 2048 x 4096 <= 2x numpy.

What each side times. The interpreter: one `reference_interp.run(module, args=...)` call, all
checks on, on a module parsed once before the timing (as a program that runs a kernel many
times does; numpy has no text to parse either). The call includes everything a run does:
finding the function compiled at the first run (cached per module), choosing between the
per-tile and lockstep ways (reference_interp/lockstep.py), binding and placing the
arguments, a context per tile, every runtime check (the race tracker included), and the
outputs. numpy: the expression computing the same result from the same input arrays with
the same element types, output allocation included. Neither side copies the inputs first.

How it measures: the best of --repeat runs, the interpreter's and numpy's runs interleaved
so that both see the same machine load, on process CPU time (which other processes sharing
the machine do not inflate; on an idle machine it equals wall-clock time). BLAS runs on one
thread for both (threadpoolctl; the interpreter does so by default, reference_interp/blas.py).
The race check's cost is a difference of two long runs, so it takes medians instead of bests
(see race_scaling).
The load average before and after is printed with the figures (and written with the table).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cpu_style import make_rmsnorm_2x2  # noqa: E402
from interp_table import GUIDE, Tables, render, replace_in  # noqa: E402

import ktir  # noqa: E402
import reference_interp as ri  # noqa: E402

EXAMPLES = ROOT / "examples"

CLOCK = time.process_time

Case = tuple[str, "Interp", Callable[[], Any], Callable[[Any, Any], None]]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = CLOCK()
    out = fn()
    return CLOCK() - t0, out


def _inner(t: float) -> int:
    """How many calls of a call taking `t` seconds one timing makes (at least 2 ms in all)."""
    inner = 1
    while t * inner < 2e-3 and inner < 4096:
        inner *= 2
    return inner


def best_pair(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, Any, float, Any]:
    """Best times of a and b over `repeat` interleaved runs (a, b, a, b, ...); short calls
    are repeated inside one timing so that the clock's resolution does not matter, each side
    as often as it needs: with one count for both, chosen for the slower side, a numpy
    expression of microseconds beside a millisecond interpreter run was timed one call at a
    time and measured the clock and cold caches (the ring all-reduce's 5 us expression
    measured 15-38 us)."""
    inner_a, inner_b = _inner(timed(a)[0]), _inner(timed(b)[0])
    ta, tb = [], []
    out_a = out_b = None
    for _ in range(repeat):
        t0 = CLOCK()
        for _ in range(inner_a):
            out_a = a()
        ta.append((CLOCK() - t0) / inner_a)
        t0 = CLOCK()
        for _ in range(inner_b):
            out_b = b()
        tb.append((CLOCK() - t0) / inner_b)
    return min(ta), out_a, min(tb), out_b


def example(name: str) -> ktir.Module:
    return parsed((EXAMPLES / name).read_text(), name)


_TEXTS: dict[int, str] = {}  # id(module) -> its text (for empty_of)


def parsed(text: str, name: str) -> ktir.Module:
    m = ktir.parse(text, name)
    _TEXTS[id(m)] = text
    return m


class Interp:
    """A case's interpreter run: `reference_interp.run(module, func, args=args, **kw)`, all checks on."""

    def __init__(self, m: ktir.Module, args: dict[str, Any], func: str | None = None, **kw: Any) -> None:
        self.m, self.args, self.func, self.kw = m, args, func, kw

    def __call__(self) -> Any:
        return ri.run(self.m, self.func, args=self.args, **self.kw)

    def empty(self) -> Callable[[], Any]:
        """The same run of a function with the same signature and grid and an empty body: the
        interpreter's fixed cost per run for these arguments (compiling cached, binding and
        placing the arguments, a context per tile, the race tracker, the outputs)."""
        e = empty_of(_TEXTS[id(self.m)], self.func)
        return functools.partial(ri.run, e, args=self.args, **self.kw)


def interp_of(m: ktir.Module, args: dict[str, Any], func: str | None = None, **kw: Any) -> Interp:
    return Interp(m, args, func, **kw)


def empty_of(text: str, func: str | None) -> ktir.Module:
    """A module of one function with the signature and attributes (grid) of `func` (or the
    text's one function) and an empty body (the benchmark's kernels take index arguments only)."""
    heads = [ln.strip() for ln in text.splitlines() if ln.lstrip().startswith("func.func @")]
    if func is not None:
        heads = [h for h in heads if h.startswith(f"func.func @{func}(")]
    assert len(heads) == 1 and heads[0].endswith("{"), heads
    return ktir.parse(heads[0] + "\n  func.return\n}\n", "empty.ktir")


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# ---------------------------------------------------------------------- cases
def matmul_sizes(scale: int) -> tuple[int, int, int]:
    # 32 tiles of 512 x 256 blocks need M and N multiples of 2048; --quick shortens K only
    return 2048, 2048, 2048 // scale


def case_matmul(scale: int) -> Case:
    M, N, K = matmul_sizes(scale)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    m = example("tiled_matmul.ktir")
    args = {"a_ptr": A, "b_ptr": B, "c_ptr": np.zeros((M, N), np.float16), "M": M, "N": N, "K": K}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["c_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=0.5)

    return (f"matmul {M}x{N}x{K} f16, 32 tiles", interp_of(m, args),
            lambda: (A.astype(np.float32) @ B.astype(np.float32)).astype(np.float16), check)


def blocked_matmul(scale: int) -> Callable[[], Any]:
    """tiled_matmul.ktir's algorithm written directly in numpy (for the matmul's floor)."""
    M, N, K = matmul_sizes(scale)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)

    def run() -> np.ndarray:
        C = np.zeros((M, N), np.float16)
        for m in range(0, M, 512):
            for n in range(0, N, 256):
                acc = np.zeros((512, 256), np.float32)
                for k in range(0, K, 256):
                    x = A[m : m + 512, k : k + 256].copy()
                    y = B[k : k + 256, n : n + 256].copy()
                    p = x.astype(np.float32) @ y.astype(np.float32)
                    p += acc
                    acc = p
                C[m : m + 512, n : n + 256] = acc.astype(np.float16)
        return C

    return run


def _softmax_ref(X: np.ndarray) -> np.ndarray:
    x = X.astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).astype(np.float16)


def case_softmax(scale: int) -> Case:
    R = 4096 // scale
    X = np.random.default_rng(1).standard_normal((R, 1024)).astype(np.float16)
    m = example("softmax.ktir")
    args = {"x_ptr": X, "y_ptr": np.zeros_like(X), "R": R}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["y_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-4)

    return f"softmax {R}x1024 f16, 32 tiles", interp_of(m, args), lambda: _softmax_ref(X), check


def case_rmsnorm(scale: int) -> Case:
    R = 4096 // scale
    rng = np.random.default_rng(2)
    X, W = rng.standard_normal((R, 512)).astype(np.float16), rng.standard_normal(512).astype(np.float16)
    m = example("rmsnorm.ktir")
    args = {"x_ptr": X, "w_ptr": W, "y_ptr": np.zeros_like(X), "R": R}

    def ref() -> np.ndarray:
        x = X.astype(np.float32)
        return (x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * W.astype(np.float32)).astype(np.float16)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["y_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)

    return f"rmsnorm {R}x512 f16, 8 tiles", interp_of(m, args), ref, check


def case_layernorm(scale: int) -> Case:
    R = 4096 // scale
    bf = ml_dtypes.bfloat16
    rng = np.random.default_rng(3)
    X = rng.standard_normal((R, 256)).astype(bf)
    G, Bt = rng.standard_normal(256).astype(bf), rng.standard_normal(256).astype(bf)
    m = example("layernorm.ktir")
    args = {"x_ptr": X, "g_ptr": G, "b_ptr": Bt, "y_ptr": np.zeros_like(X), "R": R}

    def ref() -> np.ndarray:
        x = X.astype(np.float32)
        mu = x.mean(1, keepdims=True)
        v = ((x - mu) ** 2).mean(1, keepdims=True)
        return ((x - mu) / np.sqrt(v + 1e-5) * G.astype(np.float32) + Bt.astype(np.float32)).astype(bf)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["y_ptr"].astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=5e-2)

    return f"layernorm {R}x256 bf16, 4 tiles", interp_of(m, args), ref, check


def case_rope(scale: int) -> Case:
    T = 4096 // scale
    rng = np.random.default_rng(4)
    Q = rng.standard_normal((T, 4, 64)).astype(np.float32)
    ang = np.arange(T)[:, None] * (10000.0 ** (-np.arange(32) / 32))[None]
    C, S = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    m = example("rope.ktir")
    args = {"q_ptr": Q, "cos_ptr": C, "sin_ptr": S, "y_ptr": np.zeros_like(Q), "T": T}

    def ref() -> np.ndarray:
        x1, x2, c, s = Q[..., :32], Q[..., 32:], C[:, None], S[:, None]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["y_ptr"], want, rtol=1e-5, atol=1e-5)

    return f"rope {T}x4x64 f32, 4 tiles", interp_of(m, args), ref, check


def embedding_inputs(scale: int) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """A 32,000-token vocabulary of hidden size 1,024 (f16) and a batch of 16,384 token ids."""
    V, B, H = 32000 // scale, 16384 // scale, 1024
    rng = np.random.default_rng(5)
    E = rng.standard_normal((V, H), dtype=np.float32).astype(np.float16)
    ids = rng.integers(0, V, B).astype(np.int32)
    return E, ids, V, B, H


def case_embedding(scale: int) -> Case:
    E, ids, V, B, H = embedding_inputs(scale)
    m = example("embedding_gather.ktir")
    args = {"e_ptr": E, "ids_ptr": ids, "y_ptr": np.zeros((B, H), np.float16), "V": V, "B": B, "H": H}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_array_equal(got.outputs["y_ptr"], want)

    return f"embedding gather {B} of {V}x{H} f16, 32 tiles", interp_of(m, args), lambda: E[ids], check


def blocked_embedding(scale: int) -> Callable[[], Any]:
    """embedding_gather.ktir's algorithm in numpy: one fancy-indexed gather per 128 x 1024 block."""
    E, ids, _, B, H = embedding_inputs(scale)

    def run() -> np.ndarray:
        Y = np.zeros((B, H), np.float16)
        for t in range(32):
            for r in range(128 * t, B, 4096):
                for c in range(0, H, 1024):
                    Y[r : r + 128, c : c + 1024] = E[ids[r : r + 128], c : c + 1024]
        return Y

    return run


def case_paged_attention(scale: int) -> Case:
    # decode for 32 sequences of up to 2,048 tokens (128 pages of 16), head dim 128, from an
    # 8,192-page pool; lengths between half and all of the block table (one of each extreme)
    S, W, NP = 32, 128 // scale, 8192 // scale
    T = 16 * W
    rng = np.random.default_rng(8)
    Q = rng.standard_normal((S, 128), dtype=np.float32).astype(np.float16)
    Kc = rng.standard_normal((NP, 16, 128), dtype=np.float32).astype(np.float16)
    Vc = rng.standard_normal((NP, 16, 128), dtype=np.float32).astype(np.float16)
    BT = rng.permutation(NP)[: S * W].reshape(S, W).astype(np.int32)
    lens = rng.integers(T // 2, T + 1, S).astype(np.int32)
    lens[0], lens[-1] = T, 1
    m = example("paged_attention.ktir")
    args = {"q_ptr": Q, "kc_ptr": Kc, "vc_ptr": Vc, "bt_ptr": BT, "lens_ptr": lens,
            "o_ptr": np.zeros((S, 128), np.float16), "NP": NP, "S": S, "W": W}
    t = np.arange(T)
    scale_f = np.float32(0.0883883461)  # the kernel's 1 / sqrt(128) in f32

    def ref() -> np.ndarray:
        pages = BT[:, t // 16]  # (S, T): each token's page, gathered by fancy indexing
        K, V = Kc[pages, t % 16], Vc[pages, t % 16]  # (S, T, 128)
        s = np.einsum("bd,btd->bt", Q.astype(np.float32), K.astype(np.float32)) * scale_f
        s[t[None, :] >= lens[:, None]] = -np.inf
        p = np.exp(s - s.max(1, keepdims=True))
        o = np.einsum("bt,btd->bd", p, V.astype(np.float32)) / p.sum(1, keepdims=True)
        return o.astype(np.float16)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["o_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=2e-3)

    return f"paged attention {S} x {T} tokens, head dim 128, {NP}-page pool", interp_of(m, args), ref, check


SMALL = """
#vec = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
#chunk = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @small(%x_ptr: index, %y_ptr: index, %out_ptr: index, %n: index) attributes {grid = [4]} {
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %tid = ktdp.get_compute_tile_id : index
  %x = ktdp.construct_memory_view %x_ptr, sizes: [%n], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
  %y = ktdp.construct_memory_view %y_ptr, sizes: [%n], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
  %out = ktdp.construct_memory_view %out_ptr, sizes: [%n], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<?xf32>
  %first = arith.muli %tid, %c16 : index
  scf.for %off = %first to %n step %c64 {
    %xa = ktdp.construct_access_tile %x[%off] {access_tile_order = #id1, access_tile_set = #chunk} : memref<?xf32> -> !ktdp.access_tile<16xindex>
    %ya = ktdp.construct_access_tile %y[%off] {access_tile_order = #id1, access_tile_set = #chunk} : memref<?xf32> -> !ktdp.access_tile<16xindex>
    %xs = ktdp.load %xa : !ktdp.access_tile<16xindex> -> tensor<16xf32>
    %ys = ktdp.load %ya : !ktdp.access_tile<16xindex> -> tensor<16xf32>
    %s = arith.addf %xs, %ys : tensor<16xf32>
    %m = arith.mulf %s, %xs : tensor<16xf32>
    %oa = ktdp.construct_access_tile %out[%off] {access_tile_order = #id1, access_tile_set = #chunk} : memref<?xf32> -> !ktdp.access_tile<16xindex>
    ktdp.store %m, %oa : tensor<16xf32>, !ktdp.access_tile<16xindex>
  }
  return
}
"""


# The same work staged through each tile's scratchpad, as scheduled kernels are: x goes to
# ct_local and back before the multiply (two more memory ops per iteration).
STAGED = SMALL.replace("@small(", "@staged(").replace(
    "  %first = arith.muli",
    "  %c0 = arith.constant 0 : index\n"
    "  %l = ktdp.construct_memory_view %c0, sizes: [16], strides: [1] {coordinate_set = #chunk, "
    "memory_space = #ktdp.memory_space<ct_local>} : memref<16xf32>\n"
    "  %la = ktdp.construct_access_tile %l[%c0] {access_tile_order = #id1, access_tile_set = #chunk} : "
    "memref<16xf32> -> !ktdp.access_tile<16xindex>\n"
    "  %first = arith.muli").replace(
    "    %s = arith.addf %xs, %ys",
    "    ktdp.store %xs, %la : tensor<16xf32>, !ktdp.access_tile<16xindex>\n"
    "    %ls = ktdp.load %la : !ktdp.access_tile<16xindex> -> tensor<16xf32>\n"
    "    %s = arith.addf %ls, %ys")


def small_tiles(n: int, repeat: int, staged: bool = False) -> dict[str, float]:
    """Interpreter overhead per executed op: (interpreter - numpy tile loop) / ops, tile by tile
    (lockstep=False: lockstep runs the loop vectorised, one Python step for all its iterations,
    which says nothing of the cost per op), and with lockstep for comparison."""
    m = ktir.parse(STAGED if staged else SMALL, "small_tiles.ktir")
    x = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    args = {"x_ptr": x, "y_ptr": y, "out_ptr": np.zeros(n, np.float32), "n": n}

    def numpy_tiles() -> np.ndarray:
        out = np.zeros(n, np.float32)
        for t in range(4):
            local = np.zeros(16, np.float32)
            for off in range(16 * t, n, 64):
                xs = x[off : off + 16].copy()
                ys = y[off : off + 16].copy()
                if staged:
                    local[:] = xs
                    out[off : off + 16] = (local.copy() + ys) * xs
                else:
                    out[off : off + 16] = (xs + ys) * xs
        return out

    results = {}
    runs = (("checks on", True, False), ("race check off", False, False), ("checks on, lockstep", True, True))
    for label, races, lockstep in runs:
        interp = functools.partial(ri.run, m, args=args, check_races=races, lockstep=lockstep)
        t_interp, r, t_np, want = best_pair(interp, numpy_tiles, repeat)
        np.testing.assert_array_equal(r.outputs["out_ptr"], want)
        results[label] = (t_interp - t_np) / r.total_ops * 1e6
        results[f"{label}: total"] = t_interp / r.total_ops * 1e6
        results["ops"] = r.total_ops
    return results


def case_vector_add(scale: int) -> Case:
    N = 2**24 // scale  # a multiple of the kernel's 65,536-element block
    rng = np.random.default_rng(20)
    a, b = rng.standard_normal(N).astype(np.float16), rng.standard_normal(N).astype(np.float16)
    m = example("vector_add.ktir")
    args = {"A": a, "B": b, "C": np.zeros(N, np.float16), "N": N}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_array_equal(got.outputs["C"], want)

    return f"vector add {N} f16, 4 tiles", interp_of(m, args), lambda: a + b, check


def swiglu_sizes(scale: int) -> tuple[int, int, int]:
    # a transformer FFN's gate over 2048 tokens, hidden 1024, FFN width 4096 (M and N multiples
    # of 256, K of 512); --quick shortens M only
    return 2048 // scale, 4096, 1024


def _swiglu_inputs(scale: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    M, N, K = swiglu_sizes(scale)
    rng = np.random.default_rng(21)
    X = (rng.standard_normal((M, K)) * 0.25).astype(np.float16)
    Wg = (rng.standard_normal((K, N)) * 0.03).astype(np.float16)
    Wu = (rng.standard_normal((K, N)) * 0.03).astype(np.float16)
    return X, Wg, Wu


def case_swiglu(scale: int) -> Case:
    M, N, K = swiglu_sizes(scale)
    X, Wg, Wu = _swiglu_inputs(scale)
    m = example("swiglu.ktir")
    args = {"x_ptr": X, "wg_ptr": Wg, "wu_ptr": Wu, "h_ptr": np.zeros((M, N), np.float16), "M": M, "N": N, "K": K}

    def ref() -> np.ndarray:
        x = X.astype(np.float32)
        g, u = x @ Wg.astype(np.float32), x @ Wu.astype(np.float32)
        return (g / (1 + np.exp(-g)) * u).astype(np.float16)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["h_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-3)

    return f"SwiGLU {M}x{K} @ {K}x{N} f16, 32 tiles", interp_of(m, args), ref, check


def blocked_swiglu(scale: int) -> Callable[[], Any]:
    """swiglu.ktir's algorithm written directly in numpy: per 256 x 256 block of H, a K loop
    of 256 x 512 @ 512 x 256 block products per matrix, each block widened to f32 (the floor
    of the kernel as written, beside numpy's whole-matrix expression)."""
    M, N, K = swiglu_sizes(scale)
    X, Wg, Wu = _swiglu_inputs(scale)
    one = np.float32(1)

    def run() -> np.ndarray:
        H = np.zeros((M, N), np.float16)
        for r in range(0, M, 256):
            for c in range(0, N, 256):
                g = np.zeros((256, 256), np.float32)
                u = np.zeros((256, 256), np.float32)
                for k in range(0, K, 512):
                    x = X[r : r + 256, k : k + 512].astype(np.float32)
                    p = x @ Wg[k : k + 512, c : c + 256].astype(np.float32)
                    p += g
                    g = p
                    q = x @ Wu[k : k + 512, c : c + 256].astype(np.float32)
                    q += u
                    u = q
                H[r : r + 256, c : c + 256] = (g / (one + np.exp(-g)) * u).astype(np.float16)
        return H

    return run


def case_causal_attention(scale: int) -> Case:
    S = 4096 // scale
    rng = np.random.default_rng(22)
    Q, K, V = (rng.standard_normal((S, 64)).astype(np.float16) for _ in range(3))
    m = example("causal_attention.ktir")
    args = {"q_ptr": Q, "k_ptr": K, "v_ptr": V, "o_ptr": np.zeros_like(Q), "S": S}
    mask = np.triu(np.ones((S, S), bool), 1)

    def ref() -> np.ndarray:
        s = Q.astype(np.float32) @ K.astype(np.float32).T / np.float32(8)
        s[mask] = -np.inf
        p = np.exp(s - s.max(1, keepdims=True))
        return (p @ V.astype(np.float32) / p.sum(1, keepdims=True)).astype(np.float16)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["o_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)

    return f"causal attention {S}x64 f16, 32 tiles", interp_of(m, args), ref, check


RING_BLOCK = 8 * 65536  # L is a multiple of the ring steps' block (8 chunks of 65536)


def ring_inputs(scale: int) -> tuple[int, np.ndarray]:
    L = max(RING_BLOCK, (1 << 20) // scale // RING_BLOCK * RING_BLOCK)  # 4 MiB of f32 per tile
    return L, np.random.default_rng(23).standard_normal((8, L)).astype(np.float32)


def blocked_ring_steps(scale: int) -> Callable[[], Any]:
    """ring_allreduce_steps' algorithm written directly in numpy: per block of 8 chunks, 7
    reduce-scatter steps in which every tile adds its own piece of a chunk to the partial its
    left neighbour sent (a fresh array per add, as each message is), then the finished chunks
    passed around the ring, each tile storing each one (the floor of the ring as written,
    beside numpy's one sum over the rows)."""
    L, X = ring_inputs(scale)
    C = RING_BLOCK // 8

    def run() -> np.ndarray:
        out = np.zeros((8, L), np.float32)
        for b in range(0, L, RING_BLOCK):
            def piece(t: int, k: int, b: int = b) -> np.ndarray:
                return X[t, b + k * C : b + (k + 1) * C]
            held = [piece(t, t) for t in range(8)]  # chunk k starts on tile k
            for j in range(1, 8):  # tile t gets chunk (t - j) mod 8 from tile t - 1 and adds its piece
                held = [piece(t, (t - j) % 8) + held[(t - 1) % 8] for t in range(8)]
            for j in range(8):  # tile t holds finished chunk (t + 1 - j) mod 8; then passes it right
                for t in range(8):
                    k = (t + 1 - j) % 8
                    out[t, b + k * C : b + (k + 1) * C] = held[t]
                held = [held[(t - 1) % 8] for t in range(8)]
        return out

    return run


def _ring(func: str, label: str) -> Callable[[int], Case]:
    def case(scale: int) -> Case:
        L, X = ring_inputs(scale)
        m = example("ring_allreduce.ktir")
        args = {"x_ptr": X, "out_ptr": np.zeros_like(X), "L": L}

        def check(got: Any, want: Any) -> None:
            # the kernels add in another order than numpy (a ring's, or the executor's)
            np.testing.assert_allclose(got.outputs["out_ptr"], want, rtol=1e-5, atol=1e-5)

        return label.format(L=L), interp_of(m, args, func), lambda: np.broadcast_to(X.sum(0), (8, L)).copy(), check

    return case


def case_distributed_copy(scale: int) -> Case:
    M, N = 2048 // scale, 4096  # M a multiple of the kernel's 256-row panels, N of its 1,024 columns
    X = np.random.default_rng(24).standard_normal((M, N)).astype(np.float32)
    m = example("distributed_copy.ktir")
    args = {"x_ptr": X, "y_ptr": np.zeros((N, M), np.float32), "scratch": 0, "M": M, "N": N}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_array_equal(got.outputs["y_ptr"], want)

    return (f"transpose {M}x{N} f32 through a distributed view, 4 tiles",
            interp_of(m, args, target="spyre"), lambda: X.T.copy(), check)


def case_fp8(scale: int) -> Case:
    # a 4096 x 4096 projection over 1024 tokens (M a multiple of 512, N and K of 256); --quick
    # shortens K only
    M, N, K = 1024, 4096, 4096 // scale
    rng = np.random.default_rng(25)
    X = rng.standard_normal((M, K)).astype(np.float16)
    W = (rng.standard_normal((K, N)) * 4).astype(ml_dtypes.float8_e4m3fn)
    S = (rng.random(N) / 256).astype(np.float32)
    m = example("fp8_dequant_matmul.ktir")
    args = {"x_ptr": X, "w_ptr": W, "s_ptr": S, "y_ptr": np.zeros((M, N), np.float16), "M": M, "N": N, "K": K}

    def ref() -> np.ndarray:
        return (X.astype(np.float32) @ (W.astype(np.float32) * S)).astype(np.float16)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["y_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)

    return f"fp8 dequantise + matmul {M}x{K} @ {K}x{N}, 32 tiles", interp_of(m, args), ref, check


def rmsnorm_2x2_sizes(scale: int) -> tuple[int, int]:
    return 2048 // scale, 4096


def case_rmsnorm_2x2(scale: int) -> Case:
    rows, hidden = rmsnorm_2x2_sizes(scale)
    text, args, ref = make_rmsnorm_2x2(rows, hidden)
    m = parsed(text, "rmsnorm_2x2.ktir")

    def check(got: Any, want: Any) -> None:
        np.testing.assert_array_equal(got.outputs["y_ptr"], want)  # the same f16 operations, op for op

    return (f"ktir-cpu style RMSNorm {rows}x{hidden} f16, 2x2 tiles, distributed views, all-reduce per row",
            interp_of(m, args), ref, check)


def rmsnorm_2x2_tiled(scale: int) -> Callable[[], Any]:
    """The 2 x 2 RMSNorm run tile by tile (for the time per executed op)."""
    rows, hidden = rmsnorm_2x2_sizes(scale)
    text, args, _ = make_rmsnorm_2x2(rows, hidden)
    return functools.partial(ri.run, ktir.parse(text, "rmsnorm_2x2.ktir"), args=args, lockstep=False)


def race_scaling(rows_per_tile: list[int], runs: int) -> list[tuple[int, float, float]]:
    """Per tile and loop iteration: the time with every check on, and the part the race check
    takes, on the 2 x 2 RMSNorm at hidden size 256, tile by tile (lockstep=False: the tracker
    sees one access per tile and iteration, as the per-tile run). Each size runs `runs` pairs
    (checks on, race check off, one after the other on process CPU time); the figures are the
    median of the on-times and the median of the pairs' differences (a busy machine inflates
    single runs by tens of percent: the median of paired differences is what stays put)."""
    out = []
    for rpt in rows_per_tile:
        text, args, _ = make_rmsnorm_2x2(2 * rpt, 256, block=128)
        m = ktir.parse(text, "rmsnorm_2x2.ktir")
        on = functools.partial(ri.run, m, args=args, lockstep=False)
        off = functools.partial(ri.run, m, args=args, check_races=False, lockstep=False)
        on()
        t_on, t_diff = [], []
        for _ in range(runs):
            a, r_on = timed(on)
            b, r_off = timed(off)
            np.testing.assert_array_equal(r_on.outputs["y_ptr"], r_off.outputs["y_ptr"])
            t_on.append(a)
            t_diff.append(a - b)
        iterations = 4 * rpt
        out.append((rpt, statistics.median(t_on) / iterations * 1e6, statistics.median(t_diff) / iterations * 1e6))
    return out


CASES: dict[str, Callable[[int], Case]] = {
    "vector_add": case_vector_add,
    "matmul": case_matmul,
    "softmax": case_softmax,
    "rmsnorm": case_rmsnorm,
    "layernorm": case_layernorm,
    "rope": case_rope,
    "swiglu": case_swiglu,
    "causal_attention": case_causal_attention,
    "ring_allreduce": _ring("ring_allreduce", "ring all-reduce 8x{L:,} f32, 8 tiles, collective, 256 KiB blocks"),
    "ring_allreduce_steps": _ring("ring_allreduce_steps", "ring all-reduce 8x{L:,} f32, 8 tiles, 14 ring steps of 256 KiB chunks per block"),
    "embedding": case_embedding,
    "paged_attention": case_paged_attention,
    "distributed_copy": case_distributed_copy,
    "fp8_dequant_matmul": case_fp8,
    "rmsnorm_2x2": case_rmsnorm_2x2,
}

# per case: numpy running the kernel's own algorithm (its floor, printed under the case's
# row), what that line and its ratio say, and how its result must agree with the interpreter's
FLOORS: dict[str, tuple[Callable[[int], Callable[[], Any]], str, str, Callable[[Any, Any], None]]] = {
    # the same sums, the same order of rounding
    "matmul": (blocked_matmul, "numpy, the kernel blocked the same way", "blocked numpy",
               lambda blk, got: np.testing.assert_array_equal(blk, got.outputs["c_ptr"])),
    "swiglu": (blocked_swiglu, "numpy, the kernel blocked the same way", "blocked numpy",
               lambda blk, got: np.testing.assert_allclose(blk.astype(np.float32), got.outputs["h_ptr"].astype(np.float32),
                                                           rtol=1e-3, atol=1e-4)),
    # the same additions in the same order
    "ring_allreduce_steps": (blocked_ring_steps, "numpy, the ring algorithm step by step", "ring in numpy",
                             lambda blk, got: np.testing.assert_array_equal(blk, got.outputs["out_ptr"])),
    "embedding": (blocked_embedding, "numpy, one gather per 128 x 1024 block", "blocked numpy",
                  lambda blk, got: np.testing.assert_array_equal(blk, got.outputs["y_ptr"])),
}

# the example each case runs (the docs test checks every file of examples/ has one)
EXAMPLE_OF = {
    "vector_add": "vector_add.ktir", "matmul": "tiled_matmul.ktir", "softmax": "softmax.ktir",
    "rmsnorm": "rmsnorm.ktir", "layernorm": "layernorm.ktir", "rope": "rope.ktir", "swiglu": "swiglu.ktir",
    "causal_attention": "causal_attention.ktir", "ring_allreduce": "ring_allreduce.ktir",
    "ring_allreduce_steps": "ring_allreduce.ktir", "embedding": "embedding_gather.ktir",
    "paged_attention": "paged_attention.ktir", "distributed_copy": "distributed_copy.ktir",
    "fp8_dequant_matmul": "fp8_dequant_matmul.ktir",
}

RACE_ROWS = [128, 1024, 8192]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="sizes divided by 8 (smoke test)")
    p.add_argument("--repeat", type=int, default=5, help="runs per measurement (the best is kept)")
    p.add_argument("--only", nargs="*", metavar="CASE", help=f"cases to run: {', '.join(CASES)}, races, small")
    p.add_argument("--write-table", action="store_true", help=f"rewrite the tables of {GUIDE.relative_to(ROOT)} "
                   "(needs a full run: no --quick, no --only)")
    args = p.parse_args(argv)
    if args.write_table and (args.quick or args.only):
        p.error("--write-table needs a full run (no --quick, no --only)")
    scale = 8 if args.quick else 1
    wanted = set(args.only) if args.only else set(CASES) | {"races", "small"}
    before = load()
    print(f"clock: process CPU time; BLAS threads: 1; best of {args.repeat}; load average {before}")
    tables = Tables(conditions="")
    print(f"{'kernel':84} {'interp ms':>10} {'numpy ms':>10} {'ratio':>7} {'fixed ms':>9} {'ops':>7} "
          f"{'(interp - fixed) / numpy':>25}")
    with threadpool_limits(limits=1, user_api="blas"):
        for name, make in CASES.items():
            if name not in wanted:
                continue
            label, interp, numpy_fn, check = make(scale)
            got = interp()  # compile, warm caches
            t_in, got, t_np, want = best_pair(interp, numpy_fn, args.repeat)
            check(got, want)
            empty = interp.empty()
            empty()
            t_fixed = best_pair(empty, lambda: None, args.repeat)[0]
            print(f"{name + ': ' + label:84} {t_in * 1e3:10.3f} {t_np * 1e3:10.3f} {t_in / t_np:7.2f} "
                  f"{t_fixed * 1e3:9.3f} {got.total_ops:7} {(t_in - t_fixed) / t_np:25.2f}", flush=True)
            tables.kernels.append((f"`{name}`: {label}", t_in * 1e3, t_np * 1e3, t_fixed * 1e3, got.total_ops))
            if name == "rmsnorm_2x2":
                tiled = rmsnorm_2x2_tiled(scale)
                t_tiled, r_tiled, _, _ = best_pair(tiled, lambda: None, max(args.repeat // 2, 1))
                np.testing.assert_array_equal(r_tiled.outputs["y_ptr"], got.outputs["y_ptr"])
                print(f"{'  the same, tile by tile (lockstep=False)':84} {t_tiled * 1e3:10.3f} {t_np * 1e3:10.3f} "
                      f"{t_tiled / t_np:7.2f}   ({t_tiled / got.total_ops * 1e6:.2f} us per executed op)")
                tables.per_op.append(("the 2x2 RMSNorm above, all checks on, tile by tile", got.total_ops,
                                      t_tiled / got.total_ops * 1e6))
            floor = FLOORS.get(name)
            if floor is not None:
                make, label, of, agree = floor
                t_blk, blk, _, _ = best_pair(make(scale), lambda: None, args.repeat)
                agree(blk, got)
                print(f"{'  ' + label:84} {t_blk * 1e3:10.3f} {t_np * 1e3:10.3f} "
                      f"{t_blk / t_np:7.2f}   (interpreter / {of} {t_in / t_blk:.2f})")
        if "races" in wanted:
            print(f"\nrace check per tile and loop iteration (2x2 RMSNorm, hidden 256, 4 tiles; medians of {max(args.repeat, 3)} "
                  "pairs of runs, checks on and race check off):")
            tables.races = race_scaling([r // scale for r in RACE_ROWS], max(args.repeat, 3))
            for rpt, total, check_us in tables.races:
                print(f"  {rpt:6} rows per tile: {total:7.2f} us per iteration with checks on, "
                      f"of which the race check {check_us:6.2f} us")
        if "small" in wanted:
            for staged in (False, True):
                res = small_tiles(65536 // scale, args.repeat, staged)
                how = ", staged through ct_local" if staged else ""
                print(f"\nsmall tiles (16 elements){how}, {int(res['ops'])} executed ops, tile by tile unless marked:")
                for label in ("checks on", "race check off", "checks on, lockstep"):
                    print(f"  {label:19} overhead {res[label]:6.2f} us/op (total {res[label + ': total']:6.2f} us/op)")
                tables.per_op.append((f"16-element tiles{how}, all checks on, tile by tile", int(res["ops"]),
                                      res["checks on: total"]))
    after = load()
    print(f"\nload average {before} before, {after} after")
    tables.conditions = (f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores: process CPU time, BLAS on one "
                         f"thread, best of {args.repeat} interleaved runs (the race check: medians of {max(args.repeat, 3)} pairs of runs); load average (1, 5, 15 min) {before} before "
                         f"the run and {after} after.")
    if args.write_table:
        text = replace_in(GUIDE.read_text(), tables)
        tmp = GUIDE.with_suffix(".md.tmp")
        tmp.write_text(text)
        os.replace(tmp, GUIDE)
        print(f"wrote the tables of {GUIDE.relative_to(ROOT)}")
    else:
        print("\n" + render(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
