"""Reference interpreter speed: the examples at realistic sizes, against numpy.

For each kernel the script times the interpreter (all checks on, as users run it) and the
same computation written directly in numpy, in the same process, and prints their ratio.
It also measures the interpreter's overhead per executed op on small tiles: a kernel that
moves 16-element tiles, against a numpy loop doing the same tile-by-tile work, once through
global memory only and once staging a tile through each tile's scratchpad (ct_local).

    python benchmarks/bench_interp.py            # full sizes (a few minutes)
    python benchmarks/bench_interp.py --quick    # small sizes, a smoke test
    python benchmarks/bench_interp.py --only matmul softmax

Targets (issue 4): ratio <= 2 on the 32-tile 2048^3 matmul and the 4096 x 1024 softmax;
<= 3 us of overhead per executed op on small tiles. Later round: <= 2 on LayerNorm and RoPE,
<= 5 on the embedding gather and paged attention (indirect access tiles) against numpy's
fancy indexing; the embedding line also prints numpy doing the kernel's own 32-row blocks.

How it measures: the best of --repeat runs, the interpreter's and numpy's runs interleaved
so that both see the same machine load. BLAS runs single-threaded by default (--threads N
to change it) for both the interpreter and numpy: many mid-sized BLAS calls against one
large one would otherwise measure thread start-up and contention with other processes more
than the interpreter. With one thread the clock is the process's CPU time (--clock cpu, the
default), which other processes sharing the machine do not inflate; on an idle machine it
equals wall-clock time. --clock wall measures wall-clock time (use it with --threads > 1,
where CPU time adds up the threads).

The matmul line also prints the ratio against numpy running the kernel's own blocked
algorithm (32 x 8 block products with their f16 -> f32 conversions): the part of the ratio
that the kernel's algorithm, not the interpreter, costs.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

# before numpy is imported: the BLAS thread count
_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads)

from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ktir  # noqa: E402
import reference_interp as ri  # noqa: E402

EXAMPLES = ROOT / "examples"


CLOCK = time.process_time


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = CLOCK()
    out = fn()
    return CLOCK() - t0, out


def best_pair(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, Any, float, Any]:
    """Best times of a and b over `repeat` interleaved runs (a, b, a, b, ...)."""
    ta, tb = [], []
    out_a = out_b = None
    for _ in range(repeat):
        t, out_a = timed(a)
        ta.append(t)
        t, out_b = timed(b)
        tb.append(t)
    return min(ta), out_a, min(tb), out_b


def example(name: str) -> ktir.Module:
    return ktir.parse((EXAMPLES / name).read_text(), name)


# ---------------------------------------------------------------------- cases


def matmul_sizes(scale: int) -> tuple[int, int, int]:
    # 32 tiles of 512 x 256 blocks need M and N multiples of 2048; --quick shortens K only
    return 2048, 2048, 2048 // scale


def case_matmul(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
    M, N, K = matmul_sizes(scale)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    m = example("tiled_matmul.ktir")
    args = {"a_ptr": A, "b_ptr": B, "c_ptr": np.zeros((M, N), np.float16), "M": M, "N": N, "K": K}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["c_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=0.5)

    return (f"matmul {M}x{N}x{K} f16, 32 tiles", lambda: ri.run(m, args=args),
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


def case_softmax(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
    R = 4096 // scale
    X = np.random.default_rng(1).standard_normal((R, 1024)).astype(np.float16)
    m = example("softmax.ktir")
    args = {"x_ptr": X, "y_ptr": np.zeros_like(X), "R": R}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["y_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-4)

    return f"softmax {R}x1024 f16, 32 tiles", lambda: ri.run(m, args=args), lambda: _softmax_ref(X), check


def case_rmsnorm(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
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

    return f"rmsnorm {R}x512 f16, 8 tiles", lambda: ri.run(m, args=args), ref, check


def case_layernorm(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
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

    return f"layernorm {R}x256 bf16, 4 tiles", lambda: ri.run(m, args=args), ref, check


def case_rope(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
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

    return f"rope {T}x4x64 f32, 4 tiles", lambda: ri.run(m, args=args), ref, check


def case_embedding(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
    V, B = 32000 // scale, 4096 // scale
    rng = np.random.default_rng(5)
    E = rng.standard_normal((V, 128)).astype(np.float16)
    ids = rng.integers(0, V, B).astype(np.int32)
    m = example("embedding_gather.ktir")
    args = {"e_ptr": E, "ids_ptr": ids, "y_ptr": np.zeros((B, 128), np.float16), "V": V, "B": B}

    def check(got: Any, want: Any) -> None:
        np.testing.assert_array_equal(got.outputs["y_ptr"], want)

    return f"embedding gather {B} of {V}x128 f16, 4 tiles", lambda: ri.run(m, args=args), lambda: E[ids], check


def blocked_embedding(scale: int) -> Callable[[], Any]:
    """embedding_gather.ktir's algorithm in numpy: one fancy-indexed gather per 32-row block."""
    V, B = 32000 // scale, 4096 // scale
    rng = np.random.default_rng(5)
    E = rng.standard_normal((V, 128)).astype(np.float16)
    ids = rng.integers(0, V, B).astype(np.int32)

    def run() -> np.ndarray:
        Y = np.zeros((B, 128), np.float16)
        for t in range(4):
            for r in range(32 * t, B, 128):
                Y[r : r + 32] = E[ids[r : r + 32]]
        return Y

    return run


def case_paged_attention(scale: int) -> tuple[str, Callable[[], Any], Callable[[], Any], Callable[[Any, Any], None]]:
    # the kernel's sequences are fixed (4 of up to 128 tokens, head dim 64); the pool size varies
    NP = 1024 // scale
    rng = np.random.default_rng(8)
    Q = rng.standard_normal((4, 64)).astype(np.float16)
    Kc = rng.standard_normal((NP, 16, 64)).astype(np.float16)
    Vc = rng.standard_normal((NP, 16, 64)).astype(np.float16)
    BT = rng.permutation(NP)[:32].reshape(4, 8).astype(np.int32)
    lens = np.array([128, 97, 40, 1], np.int32)
    m = example("paged_attention.ktir")
    args = {"q_ptr": Q, "kc_ptr": Kc, "vc_ptr": Vc, "bt_ptr": BT, "lens_ptr": lens,
            "o_ptr": np.zeros((4, 64), np.float16), "NP": NP}
    t = np.arange(128)

    def ref() -> np.ndarray:
        pages = BT[:, t // 16]  # (4, 128): each token's page, gathered by fancy indexing
        K, V = Kc[pages, t % 16], Vc[pages, t % 16]  # (4, 128, 64)
        s = np.einsum("bd,btd->bt", Q.astype(np.float32), K.astype(np.float32)) * np.float32(0.125)
        s[t[None, :] >= lens[:, None]] = -np.inf
        p = np.exp(s - s.max(1, keepdims=True))
        o = np.einsum("bt,btd->bd", p, V.astype(np.float32)) / p.sum(1, keepdims=True)
        return o.astype(np.float16)

    def check(got: Any, want: Any) -> None:
        np.testing.assert_allclose(got.outputs["o_ptr"].astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=2e-3)

    return f"paged attention 4 x 128 tokens, {NP}-page pool", lambda: ri.run(m, args=args), ref, check


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
    """Interpreter overhead per executed op: (interpreter - numpy tile loop) / ops."""
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
    for label, races in (("checks on", True), ("race check off", False)):
        interp = functools.partial(ri.run, m, args=args, check_races=races)
        t_interp, r, t_np, want = best_pair(interp, numpy_tiles, repeat)
        np.testing.assert_array_equal(r.outputs["out_ptr"], want)
        results[label] = (t_interp - t_np) / r.total_ops * 1e6
        results[f"{label}: total"] = t_interp / r.total_ops * 1e6
        results["ops"] = r.total_ops
    return results


CASES = {
    "matmul": case_matmul,
    "softmax": case_softmax,
    "rmsnorm": case_rmsnorm,
    "layernorm": case_layernorm,
    "rope": case_rope,
    "embedding": case_embedding,
    "paged_attention": case_paged_attention,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="sizes divided by 8 (smoke test)")
    p.add_argument("--repeat", type=int, default=5, help="runs per measurement (the best is kept)")
    p.add_argument("--clock", choices=("cpu", "wall"), help="process CPU time (default with one BLAS thread) or wall-clock")
    p.add_argument("--only", nargs="*", metavar="CASE", help=f"cases to run: {', '.join(CASES)}, small")
    p.add_argument("--threads", default="1", help="BLAS threads (default 1; read before numpy is imported)")
    args = p.parse_args(argv)
    global CLOCK
    clock = args.clock or ("cpu" if args.threads == "1" else "wall")
    CLOCK = time.process_time if clock == "cpu" else time.perf_counter
    scale = 8 if args.quick else 1
    print(f"clock: {'process CPU time' if clock == 'cpu' else 'wall-clock'}; BLAS threads: {args.threads}; "
          f"best of {args.repeat}")
    wanted = set(args.only) if args.only else set(CASES) | {"small"}
    print(f"{'kernel':48} {'interp ms':>10} {'numpy ms':>10} {'ratio':>7}")
    for name, make in CASES.items():
        if name not in wanted:
            continue
        label, interp, numpy_fn, check = make(scale)
        interp()  # compile, warm caches
        t_in, got, t_np, want = best_pair(interp, numpy_fn, args.repeat)
        check(got, want)
        goal = {"matmul": 2, "softmax": 2, "layernorm": 2, "rope": 2, "embedding": 5, "paged_attention": 5}.get(name)
        target = f" (target <= {goal})" if goal and scale == 1 else ""  # targets are at full size
        print(f"{label:48} {t_in * 1e3:10.2f} {t_np * 1e3:10.2f} {t_in / t_np:7.2f}{target}")
        if name == "embedding":
            t_blk, blk, _, _ = best_pair(blocked_embedding(scale), lambda: None, args.repeat)
            np.testing.assert_array_equal(blk, got.outputs["y_ptr"])
            print(f"{'  numpy, one gather per 32-row block':48} {t_blk * 1e3:10.2f} {t_np * 1e3:10.2f} {t_blk / t_np:7.2f}"
                  f"   (interpreter / blocked numpy {t_in / t_blk:.2f})")
        if name == "matmul":
            t_blk, blk, _, _ = best_pair(blocked_matmul(scale), lambda: None, args.repeat)
            np.testing.assert_array_equal(blk, got.outputs["c_ptr"])  # the same sums, the same order of rounding
            print(f"{'  numpy, the kernel blocked the same way':48} {t_blk * 1e3:10.2f} {t_np * 1e3:10.2f} {t_blk / t_np:7.2f}"
                  f"   (interpreter / blocked numpy {t_in / t_blk:.2f})")
    if "small" in wanted:
        for staged in (False, True):
            res = small_tiles(65536 // scale, args.repeat, staged)
            how = ", staged through ct_local" if staged else ""
            print(f"\nsmall tiles (16 elements){how}, {int(res['ops'])} executed ops:")
            for label in ("checks on", "race check off"):
                print(f"  {label:16} overhead {res[label]:6.2f} us/op (total {res[label + ': total']:6.2f} us/op; "
                      "target <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
