"""linalg ops in buffer form (memref operands, no results) write their outputs in place
(spec/ops/linalg.md); the interpreter ran them into an internal error before."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from .helpers import run

SIGNATURE = "%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<8x4xf32>, %d: memref<4xf32>, %e: memref<4x4xf32>"
IDENTITY = "affine_map<(d0, d1) -> (d0, d1)>"

# body -> (the array it writes, its expected final value from the initial arrays)
CASES: dict[str, tuple[str, str, Callable[[dict[str, np.ndarray]], np.ndarray]]] = {
    "copy": ("linalg.copy ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>)", "b", lambda x: x["a"]),
    "fill": ("%one = arith.constant 1.5 : f32\n  linalg.fill ins(%one : f32) outs(%b : memref<4x8xf32>)", "b",
             lambda x: np.full((4, 8), 1.5, np.float32)),
    "add": ("linalg.add ins(%a, %b : memref<4x8xf32>, memref<4x8xf32>) outs(%b : memref<4x8xf32>)", "b",
            lambda x: x["a"] + x["b"]),
    "exp_in_place": ("linalg.exp ins(%b : memref<4x8xf32>) outs(%b : memref<4x8xf32>)", "b", lambda x: np.exp(x["b"])),
    "transpose": ("linalg.transpose ins(%a : memref<4x8xf32>) outs(%c : memref<8x4xf32>) permutation = [1, 0]", "c",
                  lambda x: x["a"].T),
    # the output is the accumulator: it is read
    "reduce": ("linalg.reduce { arith.addf } ins(%a : memref<4x8xf32>) outs(%d : memref<4xf32>) dimensions = [1]", "d",
               lambda x: x["d"] + x["a"].sum(axis=1)),
    "matmul": ("linalg.matmul ins(%a, %c : memref<4x8xf32>, memref<8x4xf32>) outs(%e : memref<4x4xf32>)", "e",
               lambda x: x["e"] + x["a"] @ x["c"]),
    "generic": (f"linalg.generic {{indexing_maps = [{IDENTITY}, {IDENTITY}], iterator_types = [\"parallel\", \"parallel\"]}}"
                " ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {\n  ^bb0(%x: f32, %y: f32):\n"
                "    %z = arith.mulf %x, %y : f32\n    linalg.yield %z : f32\n  }", "b", lambda x: x["a"] * x["b"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_buffer_form_writes_its_output(name: str) -> None:
    body, written, expected = CASES[name]
    rng = np.random.default_rng(3)
    shapes = {"a": (4, 8), "b": (4, 8), "c": (8, 4), "d": (4,), "e": (4, 4)}
    args = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    text = f"func.func @f({SIGNATURE}) {{\n  {body}\n  return\n}}\n"
    result = run(text, args={k: v.copy() for k, v in args.items()})
    np.testing.assert_allclose(result.outputs[written], expected(args), rtol=1e-5, atol=1e-5)
    for other in set(shapes) - {written}:
        np.testing.assert_array_equal(result.outputs[other], args[other])


def test_an_output_used_only_for_its_shape_need_not_be_initialised() -> None:
    """memref.alloc gives unwritten memory: filling it reads nothing, reading it back works."""
    text = """func.func @f(%out: memref<4xf32>) {
  %m = memref.alloc() : memref<4xf32>
  %v = arith.constant 2.0 : f32
  linalg.fill ins(%v : f32) outs(%m : memref<4xf32>)
  linalg.exp ins(%m : memref<4xf32>) outs(%out : memref<4xf32>)
  return
}
"""
    result = run(text, args={"out": np.zeros(4, np.float32)})
    np.testing.assert_allclose(result.outputs["out"], np.exp(np.full(4, 2.0, np.float32)), rtol=1e-6)
