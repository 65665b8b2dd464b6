"""torch.compile a tiny Hugging Face Llama with the KTIR backend, compare with eager, print the
per-graph report (kernels, whether the scheduler rewrote each, the Spyre timeline estimate)
and write the dump folder (KTIR, manifest, weights, report, Perfetto traces, a timeline SVG).

    python examples/torch/compile_llama.py [--dump DIR] [--scheduler exact|none] [--dtype f32|f16]

Needs the torch and hf extras; the configuration is built in code (random weights, nothing
downloaded).
"""

from __future__ import annotations

import argparse
import time

import torch
import transformers

import ktir.torch_backend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", metavar="DIR", help="write each compiled graph's files here")
    parser.add_argument("--scheduler", default="exact", help="scheduler for every kernel, or none")
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    args = parser.parse_args()

    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, use_cache=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval().to(torch.float32 if args.dtype == "f32" else torch.float16)
    ids = torch.randint(0, 128, (1, 16), generator=torch.Generator().manual_seed(1))

    options = {"target": "spyre", "strict": True, "scheduler": None if args.scheduler == "none" else args.scheduler}
    if args.dump:
        options["dump_dir"] = args.dump
    compiled = torch.compile(model, backend="ktir", options=options)
    with torch.no_grad():
        start = time.perf_counter()
        got = compiled(ids).logits
        first = time.perf_counter() - start
        start = time.perf_counter()
        compiled(ids)
        second = time.perf_counter() - start
        want = model(ids).logits
    error = float((got.float() - want.float()).abs().max())
    print(f"first call {first:.1f} s (lowering, scheduling, a traced run), second call {second:.2f} s")
    print(f"max |ktir - eager| = {error:.3g} (max |eager| = {float(want.abs().max()):.3g})\n")
    for report in ktir.torch_backend.reports():
        print(report.to_text())


if __name__ == "__main__":
    main()
