"""The cost of a module does not depend on its source locations: events map to ops by identity."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktir
from ktir.targets import load_target
from ktir.targets.from_interp import from_interp
from ktir.targets.timeline import simulate

ri = pytest.importorskip("reference_interp")
from reference_interp.inputs import infer_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# a matmul and a softmax, and a line holding two ops of one name (mapping by line cannot tell them apart)
SAME_LINE = """
module {
  func.func @k(%x_ptr: index, %y_ptr: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %x = ktdp.construct_memory_view %x_ptr, sizes: [4, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x256xf32>
    %y = ktdp.construct_memory_view %y_ptr, sizes: [4, 256], strides: [256, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 255 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x256xf32>
    %t = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x256xf32> -> !ktdp.access_tile<4x256xindex>
    %u = ktdp.construct_access_tile %y[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 255 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x256xf32> -> !ktdp.access_tile<4x256xindex>
    %a = ktdp.load %t : !ktdp.access_tile<4x256xindex> -> tensor<4x256xf32>
    %e = math.exp %a : tensor<4x256xf32>  %f = math.exp %e : tensor<4x256xf32>
    ktdp.store %f, %u : tensor<4x256xf32>, !ktdp.access_tile<4x256xindex>
    return
  }
}
"""


def _cycles(module: ktir.Module, func: str | None = None) -> tuple[float, list[str]]:
    args = infer_args(module, func, {}, 0, {})
    conv = from_interp(module, ri.run(module, func, args, trace=True), func)
    return simulate(conv.trace, load_target("spyre")).makespan, conv.warnings


def _unlocated(text: str, name: str) -> ktir.Module:
    m = ktir.parse(text, name)
    for op in m.walk():
        op.loc = None
    return m


@pytest.mark.parametrize(("path", "func"), [("tests/corpus/kernels/softmax.ktir", None),
                                          ("tests/corpus/kernels/tiled_matmul.ktir", "matmul")])
def test_cost_is_the_same_with_and_without_locations(path: str, func: str | None) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    located, warnings = _cycles(ktir.parse(text, path), func)
    bare, bare_warnings = _cycles(_unlocated(text, path), func)
    assert warnings == [] and bare_warnings == []
    assert located == bare


def test_two_ops_of_one_name_on_one_line_are_told_apart() -> None:
    located, warnings = _cycles(ktir.parse(SAME_LINE, "same_line.ktir"))
    bare, _ = _cycles(_unlocated(SAME_LINE, "same_line.ktir"))
    assert warnings == [] and located == bare
    # the second exp waits for the first: the chain is load -> exp -> exp -> store
    args = infer_args(ktir.parse(SAME_LINE, "s.ktir"), None, {}, 0, {})
    m = ktir.parse(SAME_LINE, "s.ktir")
    records = from_interp(m, ri.run(m, None, args, trace=True)).trace.records
    exps = [r for r in records if r.op == "math.exp"]
    assert exps[1].deps == (exps[0].seq,)


def test_events_carry_the_op_identity() -> None:
    m = ktir.parse(SAME_LINE, "s.ktir")
    run = ri.run(m, None, infer_args(m, None, {}, 0, {}), trace=True)
    walked = list(m.walk())
    for ev in run.trace[0]:
        assert walked[ev.op_id].name == ev.op
