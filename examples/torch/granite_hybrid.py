"""Lower a tiny IBM Granite 4 Hybrid (GraniteMoeHybrid: a Mamba2 layer and an attention layer,
each followed by a top-2-of-4 mixture of experts) from Hugging Face transformers to KTIR, run
it, compare with eager, and cost every kernel on Spyre's hardware model.

    python examples/torch/granite_hybrid.py [--dtype f16] [--out DIR] [--schedule]

Prints the time of each lowering stage, the kernels by kind, the largest difference from
torch eager, and the Spyre latency estimate per kind of kernel (kernels run one after
another: the program's latency is their sum). --schedule also runs the `exact` scheduler on
every kernel and says which it rescheduled and why it left the others unchanged. Needs the
torch and hf extras; the configuration is built in code (random weights, nothing downloaded).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import torch
import transformers

import reference_interp
from ktir.lower import from_torch


def config(layers: list[str]) -> transformers.GraniteMoeHybridConfig:
    return transformers.GraniteMoeHybridConfig(
        vocab_size=128, hidden_size=64, intermediate_size=64, shared_intermediate_size=64, num_hidden_layers=len(layers),
        layer_types=layers, num_attention_heads=4, num_key_value_heads=2, mamba_n_heads=4, mamba_d_head=32, mamba_d_state=16,
        mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=8, num_local_experts=4, num_experts_per_tok=2,
        max_position_embeddings=64, use_cache=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    parser.add_argument("--seq", type=int, default=16, help="sequence length (default 16: two Mamba chunks of 8)")
    parser.add_argument("--out", type=Path, help="write granite_hybrid.ktir, .manifest.json, .weights.npz here")
    parser.add_argument("--schedule", action="store_true", help="run the exact scheduler on every kernel")
    args = parser.parse_args()
    dtype = {"f32": torch.float32, "f16": torch.float16}[args.dtype]

    torch.manual_seed(0)
    model = transformers.GraniteMoeHybridForCausalLM(config(["mamba", "attention"])).eval().to(dtype)
    ids = torch.randint(0, 128, (1, args.seq), generator=torch.Generator().manual_seed(1))

    start, cpu = time.perf_counter(), time.process_time()
    program = from_torch(model, (ids,), name="granite_hybrid", runner=reference_interp.run)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in program.timings.items())
    print(f"lowered in {total:.2f} s wall, {cpu:.2f} s CPU ({stages})")
    kinds = Counter(k.kind for k in program.manifest.kernels)
    print(f"{len(program.manifest.kernels)} kernels: " + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common()))

    start = time.perf_counter()
    got = program.run(ids)
    got = got if isinstance(got, np.ndarray) else got[0]
    ran = time.perf_counter() - start
    with torch.no_grad():
        want = model(ids).logits.float().numpy()
    err = float(np.abs(got.astype(np.float32) - want).max())
    print(f"ran in {ran:.2f} s; max |ktir - eager| = {err:.3g} (max |eager| = {float(np.abs(want).max()):.3g})")

    reports = program.estimate(ids, target="spyre")
    by_kind: dict[str, list[float]] = defaultdict(list)
    for _, kind, report in reports:
        by_kind[kind].append(report.estimate_seconds)
    latency = sum(r.estimate_seconds for _, _, r in reports)
    print(f"\nSpyre latency estimate: {latency * 1e6:.1f} us over {len(reports)} kernels")
    print(f"{'kind':<12} {'kernels':>7} {'us':>9} {'share':>6}")
    for kind, times in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
        print(f"{kind:<12} {len(times):>7} {sum(times) * 1e6:>9.2f} {sum(times) / latency:>6.1%}")

    if args.schedule:
        import schedulers
        from ktir.syntax.printer import print_module
        from ktir.targets import load_target

        target = load_target("spyre")
        applied, declined = [], Counter()
        for k in program.manifest.kernels:
            options = schedulers.ScheduleOptions(func=k.name)
            result = schedulers.schedule(program.module, target, "exact", options)
            if not result.report.applied:
                declined[f"{k.kind}: {result.report.reason}"] += 1
                continue
            try:  # the interpreter on random inputs, as `ktir schedule --check`
                verdict = schedulers.check_schedule(program.module, result, options).message
            except schedulers.ScheduleError as e:
                verdict = f"not checked: {e}"
            applied.append(f"{k.name} ({k.kind}): {verdict}")
            program.replace_kernel(k.name, print_module(result.module))
        print(f"\nexact scheduler: {len(applied)} of {len(program.manifest.kernels)} kernels rescheduled")
        for line in applied:
            print(f"  {line}")
        if applied:  # the whole program again, with the scheduled kernels in place
            again = program.run(ids)
            again = again if isinstance(again, np.ndarray) else again[0]
            print(f"program with the scheduled kernels: max |ktir - eager| = {float(np.abs(again.astype(np.float32) - want).max()):.3g}")
        print("left unchanged:")
        for why, n in declined.most_common():
            print(f"  {n:>3} x {why}")

    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for path in program.save(args.out / "granite_hybrid.ktir"):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
