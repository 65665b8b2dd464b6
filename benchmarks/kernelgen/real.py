"""Natural-form kernels at the shapes of Llama-3.1-8B and Granite-3.1-8B, picked at random per run.

Built with the generator's ops (`Gen(exact=False)`: the IR only, no oracle), so every run
writes the same operations in other forms (named or generic, broadcasts materialised or
projected, inits from different sources) and at other token counts: decode (1 token), a
prefill chunk (512) or a whole prompt (2048). The matmuls cover the four operand
transpositions of every projection and the batched products of attention; the others are
the norms, softmax, activations, residual adds and layout changes of a decoder layer.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import ops
from .ir import Gen, Generated

# hidden, query heads, kv heads, head dim, MLP intermediate
MODELS = {"Llama-3.1-8B": (4096, 32, 8, 128, 14336), "Granite-3.1-8B": (4096, 32, 8, 128, 12800)}
TRANSPOSITIONS = {"A B": ("mk", "kn"), "A^T B": ("km", "kn"), "A B^T": ("mk", "nk"), "A^T B^T": ("km", "nk")}
TOKENS = (1, 512, 2048)


@dataclass(frozen=True)
class RealKernel:
    name: str
    group: str  # a transposition ("A B^T", ...), "batched" or "other"
    kernel: Generated


def _matmul(g: Gen, M: int, N: int, K: int, a_labels: str, b_labels: str, batch: int = 1) -> None:
    sizes = {"b": batch, "m": M, "n": N, "k": K}
    dims = {c: g.dim(s) for c, s in sizes.items()}
    a = g.input([sizes[c] for c in a_labels], "bf16", dims=[dims[c] for c in a_labels], hint="a")
    b = g.input([sizes[c] for c in b_labels], "bf16", dims=[dims[c] for c in b_labels], hint="b")
    out = ("b" if "b" in a_labels else "") + "mn"
    init = ops.init_tensor(g, "fill", [sizes[c] for c in out], [dims[c] for c in out], "addf", identity=True)
    if (a_labels, b_labels) == ("km", "nk"):  # no named op: A^T is made by linalg.transpose, then A B^T
        a, a_labels = ops.transpose(g, a, [1, 0]), "mk"
    # named ops only: the interpreter's trace counts a linalg.generic contraction as vector work
    # (elements, not multiply-adds), so the timeline would under-cost it (see the guide)
    g.store(g.cast(ops.contract(g, a, b, a_labels, b_labels, init, named=True), "bf16"), "c")


def _rmsnorm(g: Gen, T: int, H: int) -> None:
    x = g.cast(g.input([T, H], "bf16"), "f32")
    sq = ops.binary(g, "mulf", x, x)
    init = ops.init_tensor(g, g.choice(["fill", "splat", "constant"]), [T], [x.dims[0]], "addf", identity=True)
    total = ops.reduce(g, sq, [1], "addf", init)
    scale = ops.with_scalar(g, "addf", ops.with_scalar(g, "mulf", total, 1.0 / H), 1.0)  # stands in for rsqrt
    w = g.input([H], "f32", dims=[x.dims[1]], hint="w")
    y = ops.binary(g, "mulf", ops.binary(g, "divf", x, scale, [0]), w, [1])
    g.store(g.cast(y, "bf16"))


def _softmax(g: Gen, R: int, C: int) -> None:
    x = g.cast(g.input([R, C], "bf16"), "f32")
    mx = ops.reduce(g, x, [1], "maximumf", ops.init_tensor(g, "fill", [R], [x.dims[0]], "maximumf", identity=True))
    e = ops.unary(g, "exp", ops.binary(g, "subf", x, mx, [0]))
    s = ops.reduce(g, e, [1], "addf", ops.init_tensor(g, g.choice(["fill", "splat"]), [R], [x.dims[0]], "addf", identity=True))
    g.store(g.cast(ops.binary(g, "divf", e, s, [0]), "bf16"))


def _swiglu(g: Gen, T: int, F: int) -> None:
    gate = g.cast(g.input([T, F], "bf16", hint="gate"), "f32")
    up = g.cast(g.input([T, F], "bf16", dims=gate.dims, hint="up"), "f32")
    sig = ops.with_scalar(g, "addf", ops.unary(g, "exp", ops.unary(g, "negf", gate)), 1.0)
    g.store(g.cast(ops.binary(g, "mulf", ops.binary(g, "divf", gate, sig), up), "bf16"))


def _residual(g: Gen, T: int, H: int) -> None:
    x = g.input([T, H], "bf16")
    g.store(ops.binary(g, "addf", x, g.input([T, H], "bf16", dims=x.dims, hint="r")))


def _to_heads(g: Gen, T: int, heads: int, D: int) -> None:
    g.store(ops.transpose(g, g.input([T, heads, D], "bf16"), [1, 0, 2]))


def _layernorm_stats(g: Gen, T: int, H: int) -> None:
    x = g.cast(g.input([T, H], "bf16"), "f32")
    mean = ops.with_scalar(g, "mulf", ops.reduce(g, x, [1], "addf", ops.init_tensor(g, "fill", [T], [x.dims[0]], "addf", identity=True)),
                           1.0 / H)
    g.store(mean, "mean")
    g.store(g.cast(ops.binary(g, "subf", x, mean, [0]), "bf16"), "centred")


Shape = tuple[int, int, int, int, int]
# the kernels of a layer besides the projections: name -> builder(g, tokens, model shape)
OTHERS: dict[str, Callable[[Gen, int, Shape], None]] = {
    "rmsnorm": lambda g, T, m: _rmsnorm(g, T, m[0]),
    "softmax": lambda g, T, m: _softmax(g, m[1] * min(T, 512), min(T, 512)),
    "swiglu": lambda g, T, m: _swiglu(g, T, m[4]),
    "residual add": lambda g, T, m: _residual(g, T, m[0]),
    "to heads": lambda g, T, m: _to_heads(g, T, m[1], m[3]),
    "layernorm with mean": lambda g, T, m: _layernorm_stats(g, T, m[0]),
}


def real_kernels(seed: int) -> list[RealKernel]:
    """The kernels of one run: for each model, every transposition of three random projections,
    the two batched attention products, and the other kernels of a layer, at random token counts."""
    rng = random.Random(seed)
    out: list[RealKernel] = []

    def make(name: str, group: str, build: Callable[[Gen], None]) -> None:
        g = Gen(random.Random(rng.getrandbits(64)), name.split("/")[-1].split(" ")[0], exact=False)
        build(g)
        out.append(RealKernel(name, group, g.done("real", seed)))

    for model, m in MODELS.items():
        h, qh, kvh, d, ffn = m
        short = model.split("-")[0].lower()
        projections = {"qkv_proj": (qh * d + 2 * kvh * d, h), "o_proj": (h, qh * d), "mlp_gate": (ffn, h),
                       "mlp_up": (ffn, h), "mlp_down": (h, ffn)}
        for group, (la, lb) in TRANSPOSITIONS.items():
            for proj in rng.sample(sorted(projections), 3):
                N, K = projections[proj]
                T = rng.choice(TOKENS)
                make(f"{short}/{proj} T={T} ({group})", group,
                     lambda g, T=T, N=N, K=K, la=la, lb=lb: _matmul(g, T, N, K, la, lb))
        T = rng.choice(TOKENS[1:])
        make(f"{short}/scores Q K^T T={T}", "batched", lambda g, T=T, m=m: _matmul(g, T, T, m[3], "bmk", "bnk", m[1]))
        make(f"{short}/P V T={T}", "batched", lambda g, T=T, m=m: _matmul(g, T, m[3], T, "bmk", "bkn", m[1]))
        for name, build in OTHERS.items():
            T = rng.choice(TOKENS)
            make(f"{short}/{name} T={T}", "other", lambda g, T=T, m=m, build=build: build(g, T, m))
    return out


# ---------------------------------------------------------------------- measuring on the timeline


def shapes_only_trace(module: Any, kernel: Generated) -> Any:
    """The cost records of `module` run on the kernel's arguments without arithmetic (shapes only)."""
    import reference_interp as ri
    from ktir.targets.from_interp import from_interp

    run = ri.run(module, None, kernel.args(), trace=True, shapes_only=True)
    return from_interp(module, run).trace


def spread_bound(trace: Any, target: Any) -> tuple[float, str]:
    """The roofline bound of the work in `trace` (MACs, vector elements, global bytes) spread evenly
    over every tile of `target`: computed from the unscheduled kernel, not by the scheduler."""
    import math

    from ktir.targets.machine import Machine
    from ktir.targets.records import GLOBAL, KernelTrace, Kind, OpRecord
    from ktir.targets.roofline import roofline

    machine = Machine(target)
    n = machine.n_tiles
    macs: dict[str | None, int] = {}
    vector: dict[tuple[str | None, bool], int] = {}
    read = written = 0
    for r in trace.records:
        if r.kind is Kind.MATRIX:
            macs[r.dtype] = macs.get(r.dtype, 0) + r.macs
        elif r.kind is Kind.VECTOR:
            vector[r.dtype, r.transcendental] = vector.get((r.dtype, r.transcendental), 0) + r.elements
        read += r.bytes_read.get(GLOBAL, 0)
        written += r.bytes_written.get(GLOBAL, 0)
    share: list[dict[str, Any]] = [{"op": "linalg.matmul", "kind": Kind.MATRIX, "macs": math.ceil(m / n), "dtype": dt}
                                   for dt, m in macs.items() if m]
    share += [{"op": "vector", "kind": Kind.VECTOR, "elements": math.ceil(e / n), "dtype": dt, "transcendental": tr}
              for (dt, tr), e in vector.items() if e]
    if read:
        share.append({"op": "ktdp.load", "kind": Kind.TRANSFER, "bytes_read": {GLOBAL: math.ceil(read / n)}})
    if written:
        share.append({"op": "ktdp.store", "kind": Kind.TRANSFER, "bytes_written": {GLOBAL: math.ceil(written / n)}})
    records = [OpRecord(tile=t, seq=i, **kw) for t in range(n) for i, kw in enumerate(share)]
    bound = roofline(KernelTrace(records, grid=(n,), name="bound"), machine)
    return bound.bound, bound.binding.resource if bound.binding else "none"


def measure(rk: RealKernel, target: Any, scheduler: str = "exact") -> dict[str, Any]:
    """Schedule one real-size kernel and measure it on the timeline against the spread bound."""
    import time

    import ktir
    import schedulers
    from ktir.targets.timeline import simulate

    from .campaign import grid_size

    text = rk.kernel.text()
    module = ktir.parse(text, "kernel.ktir")
    bound, binding = spread_bound(shapes_only_trace(module, rk.kernel), target)
    start, cpu = time.perf_counter(), time.process_time()  # wall and CPU: on a loaded machine they differ
    try:
        result = schedulers.schedule(ktir.parse(text, "kernel.ktir"), target, scheduler)
    except schedulers.ScheduleError as e:  # an error exit: measured as written, like a decline
        result = None
        refusal = f"error: {e}"
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    r = result.report if result is not None else None
    applied = r is not None and r.applied
    final = result.module if result is not None and applied else module
    simulated = simulate(shapes_only_trace(final, rk.kernel), target)
    timeline = float(simulated.makespan)
    return {"name": rk.name, "group": rk.group, "applied": applied, "peak": max(simulated.peak_local.values(), default=0),
            "reason": (r.reason if r is not None else refusal), "class": r.kernel_class if r is not None else "-",
            "grid": grid_size(final), "bound": bound, "binding": binding,
            "scheduler_bound": r.roofline_cycles if r is not None else None, "timeline": timeline,
            "ratio": timeline / bound, "model": r.estimate_cycles if r is not None else None, "seconds": seconds,
            "cpu_seconds": cpu_seconds}
