"""Compile every tiny-config Hugging Face model class (benchmarks/hf_models.py) with
`torch.compile(backend="ktir", options={"strict": True})` and compare with eager.

    python benchmarks/sweep_torch_compile.py [--models Llama,ViT] [--dtype f32|f16] [--scheduler exact|none]

Prints one row per class: matched (max error relative to the largest eager value), or the
error that stopped it (with strict, the op the lowering declines), and the time taken.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from hf_models import MODELS, build  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import ktir.torch_backend as backend  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-2}


def first_tensor(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state") and out.last_hidden_state is not None:
        return out.last_hidden_state
    if hasattr(out, "logits"):
        return out.logits
    return out[0]


def one(name: str, dtype: str, options: dict[str, Any]) -> tuple[str, str, float]:
    torch._dynamo.reset()
    backend.reset()
    model, inputs = build(name, torch.float32 if dtype == "f32" else torch.float16)
    start = time.perf_counter()
    try:
        compiled = torch.compile(model, backend="ktir", options={"strict": True, **options})
        with torch.no_grad():
            got = first_tensor(compiled(*inputs)).float()
            want = first_tensor(model(*inputs)).float()
    except Exception as e:  # noqa: BLE001 - the sweep reports whatever stopped a model
        text = str(e).strip().splitlines()
        return "declined", f"{type(e).__name__}: {text[0] if text else ''}"[:300], time.perf_counter() - start
    err = float((got - want).abs().max()) / max(1.0, float(want.abs().max()))
    verdict = "matched" if err <= TOL[dtype] else "WRONG"
    graphs = len(backend.compiled_graphs())
    return verdict, f"max error {err:.2e}, {graphs} graph(s)", time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", help="comma-separated names (default: all)")
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    p.add_argument("--scheduler", default="none", help="scheduler for every kernel, or none (default: none, faster)")
    args = p.parse_args(argv)
    names = args.models.split(",") if args.models else list(MODELS)
    options = {"scheduler": None if args.scheduler == "none" else args.scheduler, "estimate": False}
    table = Table(title=f"torch.compile(backend='ktir', strict) vs eager, {args.dtype}")
    for col in ("model", "verdict", "detail", "seconds"):
        table.add_column(col)
    console = Console(stderr=True)
    counts: dict[str, int] = {}
    for name in names:
        with console.status(f"{name} ..."):
            verdict, detail, seconds = one(name, args.dtype, options)
        counts[verdict] = counts.get(verdict, 0) + 1
        table.add_row(name, verdict, detail, f"{seconds:.1f}")
        print(f"{name}: {verdict} ({detail}) {seconds:.1f} s", file=sys.stderr, flush=True)
    Console().print(table)
    print(", ".join(f"{v}: {n}" for v, n in sorted(counts.items())))
    return 1 if counts.get("WRONG") else 0


if __name__ == "__main__":
    sys.exit(main())
