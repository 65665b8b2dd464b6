"""Lower a scaled-down Llama decoder layer from PyTorch to KTIR, run it, compare with eager.

    python examples/torch/decoder_layer.py [--dtype f16] [--out DIR]

Prints the kernels, the time each lowering stage took, the interpreter's run time and the
largest difference from torch eager on CPU. With --out DIR it also writes decoder.ktir,
decoder.manifest.json and decoder.weights.npz there (for `ktir run-program` and
`ktir schedule`). Needs the torch extra.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import reference_interp
from ktir.lower import from_torch


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class DecoderLayer(nn.Module):
    """RMSNorm, q/k/v projections, RoPE, grouped-query causal attention, o projection,
    residual, RMSNorm, SwiGLU MLP, residual."""

    def __init__(self, hidden: int = 256, heads: int = 4, kv_heads: int = 2, seq: int = 64, ffn: int = 512) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.attn_norm, self.mlp_norm = RMSNorm(hidden), RMSNorm(hidden)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.k = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    parser.add_argument("--out", type=Path, help="write decoder.ktir, .manifest.json and .weights.npz here")
    args = parser.parse_args()
    dtype = {"f32": torch.float32, "f16": torch.float16}[args.dtype]

    torch.manual_seed(0)
    model = DecoderLayer().to(dtype).eval()
    for lin in (model.q, model.k, model.v, model.o, model.gate, model.up, model.down):
        nn.init.normal_(lin.weight, std=1.0 / math.sqrt(lin.in_features))
    x = torch.randn(1, 64, 256, dtype=dtype)

    start = time.perf_counter()
    program = from_torch(model, (x,), runner=reference_interp.run)
    lowering = time.perf_counter() - start
    for k in program.manifest.kernels:
        print(f"{k.name:<22} grid {str(k.grid):<9} {k.description}")
    stages = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in program.timings.items())
    print(f"lowered in {lowering:.2f} s ({stages}); {len(program.manifest.kernels)} kernels, {len(program.text.splitlines())} lines of KTIR")

    start = time.perf_counter()
    got = program.run(x)
    run = time.perf_counter() - start
    with torch.no_grad():
        want = model(x).float().numpy()
    err = float(np.abs(got.astype(np.float32) - want).max())
    print(f"ran in the reference interpreter in {run:.2f} s; max |KTIR - eager| = {err:.3g} (max |eager| = {float(np.abs(want).max()):.3g})")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for path in program.save(args.out / "decoder.ktir"):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
