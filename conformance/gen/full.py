"""The `full` level: the repository's example kernels, end to end, on two input seeds each.

Each kernel's golden comes from its model in `conformance.oracle.kernels`. Kernels made of
correctly rounded ops in a fixed order (vector add, RoPE, the step-by-step ring all-reduce,
whose kernel fixes the order of every addition) and pure data movement are compared bit for
bit; the collective all-reduce is one order-free sum (`reduction`); every other kernel gets the
class `derived`: a float64 model of its ops in order, with a proven bound per element on any
conforming value before the final rounding, so the accepted outputs are the roundings of that
interval (spec/conformance.md#derived).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.gen.draft import Draft
from conformance.gen.kernel import Arr
from conformance.oracle.kernels import METHOD, MODELS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


HEAVY = {"softmax", "tiled_matmul", "embedding_gather", "ring_allreduce", "ring_allreduce_steps"}  # large outputs: one seed keeps the goldens small


def _n(scale: float) -> dict[str, Any]:
    return {"recipe": "normal", "low": -2 * scale, "high": 2 * scale}


# example -> (function, arrays {name: (shape, dtype, recipe)}, outputs {name: (tolerance, n)}, scalars)
SPECS: dict[str, tuple[str | None, dict[str, tuple[tuple[int, ...], str, dict[str, Any]]], dict[str, tuple[str, int]], dict[str, int]]] = {
    "vector_add": (None, {"A": ((65536,), "f16", {"recipe": "normal"}), "B": ((65536,), "f16", {"recipe": "normal"})},
                   {"C": ("correctly-rounded", 1)}, {"N": 65536}),
    "tiled_matmul": (None, {"a_ptr": ((512, 256), "f16", _n(0.5)), "b_ptr": ((256, 1024), "f16", _n(0.5))},
                     {"c_ptr": ("derived", 256)}, {"M": 512, "N": 1024, "K": 256}),
    "softmax": (None, {"x_ptr": ((1024, 1024), "f16", _n(3.0))}, {"y_ptr": ("derived", 1)}, {"R": 1024}),
    "rmsnorm": (None, {"x_ptr": ((256, 512), "f16", {"recipe": "normal"}), "w_ptr": ((512,), "f16", {"recipe": "normal"})},
                {"y_ptr": ("derived", 1)}, {"R": 256}),
    "layernorm": (None, {"x_ptr": ((128, 256), "bf16", {"recipe": "normal"}), "g_ptr": ((256,), "bf16", {"recipe": "normal"}),
                         "b_ptr": ((256,), "bf16", {"recipe": "normal"})}, {"y_ptr": ("derived", 1)}, {"R": 128}),
    "rope": (None, {"q_ptr": ((128, 4, 64), "f32", {"recipe": "normal"}), "cos_ptr": ((128, 32), "f32", {"recipe": "uniform", "low": -1, "high": 1}),
                    "sin_ptr": ((128, 32), "f32", {"recipe": "uniform", "low": -1, "high": 1})}, {"y_ptr": ("exact", 1)}, {"T": 128}),
    "swiglu": (None, {"x_ptr": ((256, 512), "f16", _n(0.25)), "wg_ptr": ((512, 256), "f16", _n(0.04)),
                      "wu_ptr": ((512, 256), "f16", _n(0.04))}, {"h_ptr": ("derived", 512)}, {"M": 256, "N": 256, "K": 512}),
    "causal_attention": (None, {"q_ptr": ((256, 64), "f16", {"recipe": "normal"}), "k_ptr": ((256, 64), "f16", {"recipe": "normal"}),
                                "v_ptr": ((256, 64), "f16", {"recipe": "normal"})}, {"o_ptr": ("derived", 256)}, {"S": 256}),
    "ring_allreduce": ("ring_allreduce", {"x_ptr": ((8, 65536), "f32", {"recipe": "normal"})}, {"out_ptr": ("reduction", 8)}, {"L": 65536}),
    "ring_allreduce_steps": ("ring_allreduce_steps", {"x_ptr": ((8, 524288), "f32", {"recipe": "normal"})}, {"out_ptr": ("exact", 1)},
                             {"L": 524288}),
    "embedding_gather": (None, {"e_ptr": ((300, 1024), "f16", {"recipe": "normal"}), "ids_ptr": ((256,), "i32", {"recipe": "int", "low": 0, "high": 300})},
                         {"y_ptr": ("exact", 1)}, {"V": 300, "B": 256, "H": 1024}),
    "paged_attention": (None, {"q_ptr": ((4, 128), "f16", {"recipe": "normal"}), "kc_ptr": ((64, 16, 128), "f16", {"recipe": "normal"}),
                               "vc_ptr": ((64, 16, 128), "f16", {"recipe": "normal"}), "bt_ptr": ((4, 32), "i32", {"recipe": "int", "low": 0, "high": 64}),
                               "lens_ptr": ((4,), "i32", {"recipe": "int", "low": 1, "high": 513})}, {"o_ptr": ("derived", 512)}, {"NP": 64, "S": 4, "W": 32}),
    "fp8_dequant_matmul": (None, {"x_ptr": ((512, 512), "f16", {"recipe": "normal"}), "w_ptr": ((512, 256), "f8E4M3FN", _n(4.0)),
                                  "s_ptr": ((256,), "f32", {"recipe": "uniform", "low": 0.0, "high": 0.0625})}, {"y_ptr": ("derived", 512)},
                           {"M": 512, "N": 256, "K": 512}),
}
OUT_SHAPES: dict[str, tuple[tuple[int, ...], str]] = {
    "vector_add": ((65536,), "f16"), "tiled_matmul": ((512, 1024), "f16"), "softmax": ((1024, 1024), "f16"),
    "rmsnorm": ((256, 512), "f16"), "layernorm": ((128, 256), "bf16"), "rope": ((128, 4, 64), "f32"),
    "swiglu": ((256, 256), "f16"), "causal_attention": ((256, 64), "f16"), "ring_allreduce": ((8, 65536), "f32"),
    "ring_allreduce_steps": ((8, 524288), "f32"), "embedding_gather": ((256, 1024), "f16"), "paged_attention": ((4, 128), "f16"),
    "fp8_dequant_matmul": ((512, 256), "f16"),
}


def _description(file: str, outputs: dict[str, tuple[str, int]]) -> str:
    text = f"examples/{file}.ktir end to end"
    if any(t == "derived" for t, _ in outputs.values()):
        text += f"; golden: {METHOD}"
    return text


def cases() -> Iterator[Draft]:
    for name, (function, arrays, outputs, scalars) in SPECS.items():
        file = "ring_allreduce" if name.startswith("ring_allreduce") else name
        text = (EXAMPLES / f"{file}.ktir").read_text(encoding="utf-8")
        for k in range(1 if name in HEAVY else 2):
            arrs = [Arr(n, s, dt, dict(r)) for n, (s, dt, r) in arrays.items()]
            oshape, odt = OUT_SHAPES[name]
            for o in outputs:
                arrs.append(Arr(o, oshape, odt, {"recipe": "zeros"}))
            d = Draft(id=f"full.{name}.seed{k}", level="full", text=text, description=_description(file, outputs),
                      arrays=arrs, outputs=[(o, t, n) for o, (t, n) in outputs.items()], function=function,
                      model=MODELS[name])
            d.scalars = {s: ("index", v) for s, v in scalars.items()}
            yield d
    # distributed_copy needs its scratch address as a scalar and global + ct_local memory (one 256 x 1024 panel)
    for k in range(2):
        text = (EXAMPLES / "distributed_copy.ktir").read_text(encoding="utf-8")
        d = Draft(id=f"full.distributed_copy.seed{k}", level="full", text=text, description="examples/distributed_copy.ktir end to end",
                  arrays=[Arr("x_ptr", (256, 1024), "f32", {"recipe": "normal"}), Arr("y_ptr", (1024, 256), "f32", {"recipe": "zeros"})],
                  outputs=[("y_ptr", "exact", 1)], model=MODELS["distributed_copy"])
        d.scalars = {"scratch": ("index", 0), "M": ("index", 256), "N": ("index", 1024)}
        yield d
