"""Tile schedulers on Llama-3.1-8B and Granite-3.1-8B kernels: estimate vs roofline, scheduling time.

Every kernel is written as the typical scheduler input, one compute tile over whole tensors
(`schedulers.naive`), at decode (1 token) and prefill (2048 tokens) shapes, then scheduled
for Spyre by each built-in scheduler through the public API (recognition, search and the
KTIR rewrite included in the timing). Attention is costed through the same schedule space
API (`schedulers.builtin.plan`): its KTIR rewrite is not implemented, so its time covers the
search only. For every kernel and scheduler the script prints the cost model's estimate,
the roofline bound, their ratio and the wall time taken to schedule; then the geometric
means and the three targets of issue 7:

- `exact` within 1.25x of the roofline bound in geometric mean;
- `search` never worse than `baseline` (estimate per kernel);
- under 2 s of scheduling per kernel.

    python benchmarks/bench_schedule.py                 # the full suite
    python benchmarks/bench_schedule.py --only decode   # kernels whose name contains a word
    python benchmarks/bench_schedule.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

import ktir  # noqa: E402
from ktir.targets import load_target  # noqa: E402
from schedulers import ScheduleOptions, naive  # noqa: E402
from schedulers.builtin import baseline_strategy, exact_strategy, plan, search_strategy  # noqa: E402
from schedulers.kernels import AttentionKernel  # noqa: E402
from schedulers.registry import get  # noqa: E402

SCHEDULERS = ("baseline", "exact", "search")
STRATEGIES = {"baseline": baseline_strategy, "exact": exact_strategy, "search": search_strategy}

# hidden, query heads, kv heads, head dim, MLP intermediate
MODELS = {"llama": (4096, 32, 8, 128, 14336), "granite": (4096, 32, 8, 128, 12800)}  # Llama-3.1-8B, Granite-3.1-8B
CONTEXT = 2048  # tokens already in the KV cache at decode, and the prompt length at prefill


def suite() -> list[tuple[str, str | AttentionKernel]]:
    """(name, KTIR text or an attention kernel) for every kernel of the suite."""
    out: list[tuple[str, str | AttentionKernel]] = []
    for model, (h, qh, kvh, d, ffn) in MODELS.items():
        for phase, tokens in (("decode", 1), ("prefill", 2048)):
            pre = f"{model}/{phase}"
            qkv = qh * d + 2 * kvh * d
            out.append((f"{pre}/qkv_proj", naive.matmul(tokens, qkv, h, "bf16", "qkv_proj")))
            out.append((f"{pre}/o_proj", naive.matmul(tokens, h, qh * d, "bf16", "o_proj")))
            if model.startswith("llama"):  # Granite's attention and norms have the same shapes
                out.append((f"{pre}/rmsnorm", naive.rmsnorm(tokens, h, "bf16")))
                out.append((f"{pre}/rope", naive.rope(tokens, qh, d)))
                out.append((f"{pre}/softmax", naive.softmax(qh * tokens, CONTEXT, "bf16")))
                out.append((f"{pre}/attention", AttentionKernel(kv_heads=kvh, rows=qh // kvh * tokens, kv_len=CONTEXT,
                                                                head_dim=d, causal=phase == "prefill")))
            out.append((f"{pre}/mlp_gate", naive.matmul(tokens, ffn, h, "bf16", "mlp_gate")))
            out.append((f"{pre}/mlp_up", naive.matmul(tokens, ffn, h, "bf16", "mlp_up")))
            out.append((f"{pre}/mlp_down", naive.matmul(tokens, h, ffn, "bf16", "mlp_down")))
    return out


def run_one(kernel: str | AttentionKernel, scheduler: str, target: object, budget: float) -> dict[str, float]:
    options = ScheduleOptions(time_budget=budget)
    start = time.perf_counter()
    if isinstance(kernel, AttentionKernel):
        space, point, _, bound = plan(kernel, target, STRATEGIES[scheduler], options)  # type: ignore[arg-type]
        estimate = float(space.evaluate({k: __import__("numpy").array([v]) for k, v in point.items()}).cycles[0])
        elapsed = time.perf_counter() - start
        return {"estimate": estimate, "bound": bound.cycles, "seconds": elapsed}
    module = ktir.parse(kernel, "kernel.ktir")
    start = time.perf_counter()
    result = get(scheduler).schedule(module, target, options)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    r = result.report
    assert r.estimate_cycles is not None and r.roofline_cycles is not None, r.reason
    return {"estimate": r.estimate_cycles, "bound": r.roofline_cycles, "seconds": elapsed}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=[], help="run kernels whose name contains any of these words")
    ap.add_argument("--budget", type=float, default=1.0, help="time budget of `search` per kernel, seconds")
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    args = ap.parse_args()
    target = load_target("spyre")
    kernels = [(n, k) for n, k in suite() if not args.only or any(w in n for w in args.only)]
    rows: dict[str, dict[str, dict[str, float]]] = {}
    console = Console(width=max(150, Console().width))
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("scheduling", total=len(kernels) * len(SCHEDULERS))
        for name, kernel in kernels:
            rows[name] = {}
            for s in SCHEDULERS:
                progress.update(task, description=f"{name} ({s})")
                rows[name][s] = run_one(kernel, s, target, args.budget)
                progress.advance(task)
    clock = target.clock_hz
    table = Table(title=f"schedules on {target.name} (estimate and bound in microseconds)")
    table.add_column("kernel", no_wrap=True, min_width=26)
    table.add_column("bound", justify="right")
    for s in SCHEDULERS:
        table.add_column(f"{s} est", justify="right")
        table.add_column(f"{s} ratio", justify="right")
        table.add_column(f"{s} s", justify="right")
    for name, per in rows.items():
        cells = [name, f"{per['exact']['bound'] / clock * 1e6:,.1f}"]
        for s in SCHEDULERS:
            m = per[s]
            cells += [f"{m['estimate'] / clock * 1e6:,.1f}", f"{m['estimate'] / m['bound']:.3f}", f"{m['seconds']:.2f}"]
        table.add_row(*cells)
    means = {s: geomean([per[s]["estimate"] / per[s]["bound"] for per in rows.values()]) for s in SCHEDULERS}
    table.add_row("geometric mean", "", *[c for s in SCHEDULERS for c in ("", f"{means[s]:.3f}", "")])
    console.print(table)
    worse = [n for n, per in rows.items() if per["search"]["estimate"] > per["baseline"]["estimate"] * (1 + 1e-9)]
    slowest = max((per[s]["seconds"], n, s) for n, per in rows.items() for s in SCHEDULERS)
    speedup = geomean([per["baseline"]["estimate"] / per["exact"]["estimate"] for per in rows.values()])
    console.print(f"exact vs roofline, geometric mean: {means['exact']:.3f} (target <= 1.25): "
                  f"{'met' if means['exact'] <= 1.25 else 'NOT met'}")
    console.print(f"search never worse than baseline: {'met' if not worse else 'NOT met: ' + ', '.join(worse)}")
    console.print(f"slowest scheduling: {slowest[0]:.2f} s ({slowest[1]}, {slowest[2]}) (target < 2 s): "
                  f"{'met' if slowest[0] < 2 else 'NOT met'}")
    console.print(f"exact is {speedup:.2f}x faster than baseline (geometric mean of estimated times)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
