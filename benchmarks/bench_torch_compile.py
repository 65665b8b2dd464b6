"""torch.compile(backend="ktir") on one Llama-3.1-8B-sized decoder layer: times, estimate, error.

A one-layer LlamaForCausalLM at Llama-3.1-8B's layer sizes (hidden 4096, 32 query heads, 8
key/value heads of 128, MLP 14336, RoPE theta 500000; random weights; a 256-token vocabulary so
the embedding and head stay small) decodes one token with a static KV cache of 512 positions:
the first 511 are filled by an eager prompt, the token is the 512th. The decode step is
compiled with the KTIR backend (target Spyre, strict) and compared with the same step in eager
PyTorch on a copy of the cache. Prints the lowering and scheduling time, the interpreter's time
(the first run, traced for the estimate, and a second, untraced run), the estimated Spyre
latency (timeline, per kernel in the report), every kernel's peak scratchpad use against the
2 MB per core (the run with `target="spyre"` checks each kernel before it runs), the max error
vs eager, and the process's peak RSS. `--prefill N` compiles an N-token prefill instead
(no cache). `--scheduler none` keeps the kernels as lowered. The baseline the times are measured
against in the same run: eager PyTorch on the same step (printed as the ratio).

Run: `python benchmarks/bench_torch_compile.py [--prefill 128] [--scheduler exact|none]`
(torch and hf extras; about 3 GB of memory in f32).
"""

from __future__ import annotations

import argparse
import copy
import resource
import time
from typing import Any

import torch
import transformers

import ktir.torch_backend
from ktir.targets import scratchpad_bytes

CACHE = 512
VOCAB = 256


def config() -> Any:
    return transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=4096, intermediate_size=14336, num_hidden_layers=1, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, rope_theta=500000.0, rms_norm_eps=1e-5, max_position_embeddings=8192,
        use_cache=True)


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefill", type=int, metavar="N", help="compile an N-token prefill instead of the decode step")
    parser.add_argument("--scheduler", default="exact", help="scheduler for every kernel, or none")
    args = parser.parse_args()

    torch.manual_seed(0)
    cfg = config()
    model = transformers.LlamaForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        if args.prefill:
            what = f"{args.prefill}-token prefill"
            ids = torch.randint(0, VOCAB, (1, args.prefill), generator=gen)

            def step(m: Any) -> Any:
                return m(input_ids=ids, use_cache=False).logits
        else:
            what = f"decode with a {CACHE}-token cache"
            cache = transformers.StaticCache(config=cfg, max_cache_len=CACHE)
            prompt = torch.randint(0, VOCAB, (1, CACHE - 1), generator=gen)
            model(input_ids=prompt, past_key_values=cache, cache_position=torch.arange(CACHE - 1), use_cache=True)
            token = torch.randint(0, VOCAB, (1, 1), generator=gen)
            caches = [copy.deepcopy(cache) for _ in range(3)]

            def step(m: Any, c: list[Any] = caches) -> Any:
                return m(input_ids=token, past_key_values=c.pop(), cache_position=torch.tensor([CACHE - 1]), use_cache=True).logits

        start = time.perf_counter()
        want = step(model)
        eager = time.perf_counter() - start
        options = {"target": "spyre", "strict": True, "scheduler": None if args.scheduler == "none" else args.scheduler}
        compiled = torch.compile(model, backend=ktir.torch_backend.ktir_backend, options=options)
        start = time.perf_counter()
        got = step(compiled)
        first = time.perf_counter() - start
        start = time.perf_counter()
        step(compiled)
        second = time.perf_counter() - start

    error = float((got - want).abs().max())
    scale = float(want.abs().max())
    capacity = scratchpad_bytes("spyre")
    print(f"Llama-3.1-8B-sized decoder layer, {what}, f32, torch.compile(backend='ktir'), target spyre, "
          f"scheduler {args.scheduler}")
    for report in ktir.torch_backend.reports():
        program = next(v.program for g in ktir.torch_backend.compiled_graphs() for v in g.variants.values()
                       if getattr(v, "report", None) is report)
        fps = program.footprints()
        worst = max(fps.items(), key=lambda kv: kv[1].peak_bytes)
        print(report.to_text())
        print(f"  scratchpad: every kernel's peak <= {capacity} B per core: {all(f.peak_bytes <= capacity for f in fps.values())}; "
              f"largest {worst[1].peak_bytes} B ({worst[1].peak_bytes / capacity:.0%}) in {worst[0]}")
        for name, fp in fps.items():
            print(f"    {name:<44} {fp.peak_bytes:>9} B")
        print(f"  lowering {report.lowering_seconds:.1f} s, scheduling {report.scheduling_seconds:.1f} s, "
              f"interpreter (first run, traced) {report.first_run_seconds or 0:.1f} s")
        if report.estimate_seconds is not None:
            print(f"  estimated Spyre latency {report.estimate_seconds * 1e6:.1f} us")
    print(f"first call {first:.1f} s (export, lowering, scheduling, traced run), second call (interpreter only) "
          f"{second:.1f} s = {second / eager:.0f}x eager ({eager * 1e3:.1f} ms)")
    print(f"max |ktir - eager| = {error:.3g} (max |eager| = {scale:.3g}, relative {error / scale:.2g}; tolerance 1e-4)")
    print(f"peak RSS {rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
