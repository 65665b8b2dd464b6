"""Lowering time of a 2-layer Granite 4 Hybrid (Mamba2 + attention + MoE) from transformers.

Lowers the Llama decoder layer of the guide first (the baseline, same process, so the
one-time costs -- importing torch, the parser tables -- fall on it), then the tiny 2-layer
GraniteMoeHybridForCausalLM of examples/torch/granite_hybrid.py, and prints wall and CPU
seconds per stage and the ratio hybrid / decoder layer. Target: the hybrid lowers in under
30 s wall. Timings are wall-clock and noisy on a shared machine (the CPU column is steadier).

Run: `python benchmarks/bench_lower_hybrid.py` (needs the torch and hf extras).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "torch"))

from decoder_layer import DecoderLayer  # noqa: E402
from granite_hybrid import config  # noqa: E402

from ktir.lower import from_torch  # noqa: E402

BUDGET_S = 30.0


def timed(model: Any, inputs: tuple[Any, ...]) -> tuple[float, float, dict[str, float]]:
    wall, cpu = time.perf_counter(), time.process_time()
    program = from_torch(model, inputs)
    return time.perf_counter() - wall, time.process_time() - cpu, program.timings


def main() -> None:
    import transformers

    torch.manual_seed(0)
    layer = DecoderLayer().eval()
    base = timed(layer, (torch.randn(1, 64, 256),))
    hybrid_model = transformers.GraniteMoeHybridForCausalLM(config(["mamba", "attention"])).eval()
    hybrid = timed(hybrid_model, (torch.randint(0, 128, (1, 16)),))
    print(f"{'model':<28} {'wall s':>7} {'CPU s':>7}  stages")
    for name, (wall, cpu, stages) in (("llama decoder layer (base)", base), ("granite hybrid, 2 layers", hybrid)):
        print(f"{name:<28} {wall:>7.2f} {cpu:>7.2f}  " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    print(f"hybrid / base: {hybrid[0] / base[0]:.2f}x wall, {hybrid[1] / base[1]:.2f}x CPU")
    print(f"target: hybrid under {BUDGET_S:.0f} s wall: {'met' if hybrid[0] < BUDGET_S else 'NOT met'} ({hybrid[0]:.2f} s)")


if __name__ == "__main__":
    main()
