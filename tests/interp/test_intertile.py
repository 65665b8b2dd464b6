"""Inter-tile delivery ops: placement, grouping, per-tile dependencies, errors."""

from __future__ import annotations

import numpy as np
import pytest

import reference_interp as ri
from reference_interp.runtime import Undefined

from .helpers import fails, run

SETS = """
#all = affine_set<(d0)[s0] : (d0 - s0 * 4 >= 0, -d0 + s0 * 4 + 3 >= 0)>
#lead = affine_set<(d0)[s0] : (d0 - s0 * 4 == 0)>
#g1 = affine_set<(d0) : (d0 == 0)>
#g2 = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>
#prefix = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 >= 0)>
#left = affine_set<(d0)[s0] : ((d0 - s0 + 1) mod 4 == 0)>
"""


def program(partial: str, delivery: str, result: str, *, producers: str = "#all", groups: str = "#g1",
            grid: int = 4) -> str:
    """Each tile t produces `t * 100 + iota` of type `partial`; returns the delivery's result."""
    shape = partial[len("tensor<"):-1].rsplit("x", 1)[0]
    dims = [int(d) for d in shape.split("x")]
    n = int(np.prod(dims))
    return f"""{SETS}
func.func @k() -> {result} attributes {{grid = [{grid}]}} {{
  %t = ktdp.get_compute_tile_id : index
  %c100 = arith.constant 100 : index
  %base_i = arith.muli %t, %c100 : index
  %base_i64 = arith.index_cast %base_i : index to i64
  %base = arith.sitofp %base_i64 : i64 to f32
  %e = tensor.empty() : tensor<{n}xf32>
  %iota = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}} ins() outs(%e : tensor<{n}xf32>) {{
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %i64 = arith.index_cast %i : index to i64
    %f = arith.sitofp %i64 : i64 to f32
    %v = arith.addf %f, %base : f32
    linalg.yield %v : f32
  }} -> tensor<{n}xf32>
  %part = tensor.expand_shape %iota [[{", ".join(str(i) for i in range(len(dims)))}]] output_shape [{", ".join(map(str, dims))}] : tensor<{n}xf32> into {partial}
  %f = ktdp.inter_tile_produce producer_tiles_per_group = {producers} -> !ktdp.tile_future<({partial}), groups = {groups}> {{
  ^bb0(%gid: index):
    ktdp.yield_partial %part : {partial}
  }}
  {delivery.replace("FUT", f"!ktdp.tile_future<({partial}), groups = {groups}>")}
  return %r : {result}
}}
"""


def partial(t: int, shape: tuple[int, ...]) -> np.ndarray:
    return (t * 100 + np.arange(int(np.prod(shape)))).reshape(shape).astype(np.float32)


ADD = """{{
  ^bb0(%a: {T}, %b: {T}):
    %s = arith.addf %a, %b : {T}
    ktdp.yield_reduced %s : {T}
  }}"""


def reduce_op(T: str, consumers: str = "#all", extra: str = "") -> str:
    return (f"%zero = arith.constant dense<0.0> : {T}\n"
            f"  %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = {consumers}, {extra}identity(%zero : {T}) : FUT -> {T} "
            + ADD.format(T=T).replace("{{", "{").replace("}}", "}"))


def test_all_reduce() -> None:
    T = "tensor<2x3xf32>"
    r = run(program(T, reduce_op(T), T))
    want = sum(partial(t, (2, 3)) for t in range(4))
    for t in range(4):
        np.testing.assert_array_equal(r.returns[t][0], want)


def test_reduce_to_one_leaves_the_others_undefined() -> None:
    T = "tensor<4xf32>"
    r = run(program(T, reduce_op(T, "#lead"), T))
    np.testing.assert_array_equal(r.returns[0][0], sum(partial(t, (4,)) for t in range(4)))
    assert all(isinstance(r.returns[t][0], Undefined) for t in (1, 2, 3))


def test_using_an_undefined_result_is_an_error() -> None:
    T = "tensor<4xf32>"
    text = program(T, reduce_op(T, "#lead") + "\n  %r2 = arith.addf %r, %r : tensor<4xf32>", T).replace("return %r :", "return %r2 :")
    e = fails("undefined", text)
    assert e.tile == 1 and "not in consumer_tiles_per_group" in e.message


def test_per_tile_dependencies_give_a_prefix_sum() -> None:
    T = "tensor<3xf32>"
    r = run(program(T, reduce_op(T, extra="producer_dependency_per_consumer = #prefix, "), T))
    for c in range(4):
        np.testing.assert_array_equal(r.returns[c][0], sum(partial(t, (3,)) for t in range(c + 1)))


def test_consume_broadcasts_from_one_producer_and_routes_with_dependencies() -> None:
    T = "tensor<2xf32>"
    r = run(program(T, "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : FUT -> tensor<2xf32>", T,
                    producers="#lead"))
    for t in range(4):
        np.testing.assert_array_equal(r.returns[t][0], partial(0, (2,)))
    # a ring shift: every tile receives from its left neighbour
    r = run(program(T, "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all, "
                       "producer_dependency_per_consumer = #left : FUT -> tensor<2xf32>", T))
    for t in range(4):
        np.testing.assert_array_equal(r.returns[t][0], partial((t - 1) % 4, (2,)))


def test_consume_needs_one_source_per_consumer() -> None:
    T = "tensor<2xf32>"
    e = fails("undefined", program(T, "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : FUT -> tensor<2xf32>", T))
    assert "R8" in e.message


@pytest.mark.parametrize(("dims", "result"), [("[0]", "tensor<8x3xf32>"), ("[1]", "tensor<2x12xf32>"), ("[0, 1]", "tensor<8x3xf32>")])
def test_gather(dims: str, result: str) -> None:
    T = "tensor<2x3xf32>"
    text = program(T, f"%r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = {dims} : FUT -> {result}", result)
    r = run(text)
    parts = [partial(t, (2, 3)) for t in range(4)]
    if dims == "[1]":
        want = np.concatenate(parts, axis=1)
    else:
        want = np.concatenate([p.reshape(-1) for p in parts]).reshape(8, 3)
    for t in range(4):
        np.testing.assert_array_equal(r.returns[t][0], want)


def test_gather_within_two_groups() -> None:
    T = "tensor<1x2xf32>"
    text = program(T, "%r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = [0] : FUT -> tensor<4x2xf32>",
                   "tensor<4x2xf32>", groups="#g2", grid=8)
    r = run(text)
    for t in range(8):
        g = t // 4
        np.testing.assert_array_equal(r.returns[t][0], np.concatenate([partial(p, (1, 2)) for p in range(4 * g, 4 * g + 4)]))


def test_scatter() -> None:
    T = "tensor<4x8xf32>"
    text = program(T, "%r = ktdp.inter_tile_scatter(%f) consumer_tiles_per_group = #all, scatter_dimensions = [1] : FUT -> tensor<4x2xf32>",
                   "tensor<4x2xf32>", producers="#lead")
    r = run(text)
    for t in range(4):
        np.testing.assert_array_equal(r.returns[t][0], partial(0, (4, 8))[:, 2 * t : 2 * t + 2])


def test_reduce_scatter() -> None:
    T = "tensor<8x2xf32>"
    delivery = ("%zero = arith.constant dense<0.0> : tensor<8x2xf32>\n"
                "  %r = ktdp.inter_tile_reduce_scatter(%f) consumer_tiles_per_group = #all, scatter_dimensions = [0], "
                "identity(%zero : tensor<8x2xf32>) : FUT -> tensor<2x2xf32> "
                + ADD.format(T=T).replace("{{", "{").replace("}}", "}"))
    r = run(program(T, delivery, "tensor<2x2xf32>"))
    total = sum(partial(t, (8, 2)) for t in range(4))
    for t in range(4):
        np.testing.assert_array_equal(r.returns[t][0], total[2 * t : 2 * t + 2])


def test_all_to_all() -> None:
    T = "tensor<4x3xf32>"
    text = program(T, "%r = ktdp.inter_tile_all_to_all(%f) consumer_tiles_per_group = #all, split_dimensions = [0], "
                      "concat_dimensions = [1] : FUT -> tensor<1x12xf32>", "tensor<1x12xf32>")
    r = run(text)
    for c in range(4):
        want = np.concatenate([partial(p, (4, 3))[c : c + 1] for p in range(4)], axis=1)
        np.testing.assert_array_equal(r.returns[c][0], want)


def test_futures_in_a_loop_are_separate_instances() -> None:
    text = f"""{SETS}
func.func @k() -> tensor<1xf32> attributes {{grid = [4]}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant dense<1.0> : tensor<1xf32>
  %zero = arith.constant dense<0.0> : tensor<1xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %one) -> (tensor<1xf32>) {{
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<1xf32>), groups = #g1> {{
    ^bb0(%gid: index):
      ktdp.yield_partial %acc : tensor<1xf32>
    }}
    %s = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%zero : tensor<1xf32>) : !ktdp.tile_future<(tensor<1xf32>), groups = #g1> -> tensor<1xf32> {{
    ^bb0(%a: tensor<1xf32>, %b: tensor<1xf32>):
      %x = arith.addf %a, %b : tensor<1xf32>
      ktdp.yield_reduced %x : tensor<1xf32>
    }}
    scf.yield %s : tensor<1xf32>
  }}
  return %r : tensor<1xf32>
}}
"""
    r = run(text, trace=True)
    assert [x[0].tolist() for x in r.returns] == [[64.0]] * 4
    assert r.trace is not None
    reduces = [e for e in r.trace[2] if e.op == "ktdp.inter_tile_reduce"]
    assert [e.future[1] for e in reduces if e.future] == [0, 1, 2]
    assert all(e.peers == (0, 1, 2, 3) for e in reduces)


def test_producer_groups_must_be_disjoint() -> None:
    T = "tensor<1xf32>"
    overlapping = "affine_set<(d0)[s0] : (d0 >= 0, -d0 + 3 >= 0)>"
    text = program(T, reduce_op(T), T, producers=overlapping, groups="#g2", grid=8)
    assert "R1" in fails("undefined", text).message


def test_happens_before_through_the_future_of_a_chain() -> None:
    """tile 0 writes, tile 1 learns of it through a future, tile 2 through tile 1: no race."""
    text = """
#one = affine_set<(d0) : (d0 == 0)>
#v = affine_set<(d0) : (d0 >= 0, -d0 + 3 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
#from0 = affine_set<(d0)[s0] : (d0 == 0)>
#to1 = affine_set<(d0)[s0] : (d0 - 1 == 0)>
#from1 = affine_set<(d0)[s0] : (d0 - 1 == 0)>
#to2 = affine_set<(d0)[s0] : (d0 - 2 == 0)>
#g = affine_set<(d0) : (d0 == 0)>
func.func @k(%x: index) attributes {grid = [3]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %t = ktdp.get_compute_tile_id : index
  %xv = ktdp.construct_memory_view %x, sizes: [4], strides: [1] {coordinate_set = #v, memory_space = #ktdp.memory_space<global>} : memref<4xf32>
  %a = ktdp.construct_access_tile %xv[%c0] {access_tile_order = #id1, access_tile_set = #v} : memref<4xf32> -> !ktdp.access_tile<4xindex>
  %tok = arith.constant dense<7.0> : tensor<4xf32>
  %is0 = arith.cmpi eq, %t, %c0 : index
  scf.if %is0 {
    ktdp.store %tok, %a : tensor<4xf32>, !ktdp.access_tile<4xindex>
  }
  %f1 = ktdp.inter_tile_produce producer_tiles_per_group = #from0 -> !ktdp.tile_future<(tensor<4xf32>), groups = #g> {
  ^bb0(%gid: index):
    ktdp.yield_partial %tok : tensor<4xf32>
  }
  %r1 = ktdp.inter_tile_consume(%f1) consumer_tiles_per_group = #to1 : !ktdp.tile_future<(tensor<4xf32>), groups = #g> -> tensor<4xf32>
  %f2 = ktdp.inter_tile_produce producer_tiles_per_group = #from1 -> !ktdp.tile_future<(tensor<4xf32>), groups = #g> {
  ^bb0(%gid: index):
    ktdp.yield_partial %r1 : tensor<4xf32>
  }
  %r2 = ktdp.inter_tile_consume(%f2) consumer_tiles_per_group = #to2 : !ktdp.tile_future<(tensor<4xf32>), groups = #g> -> tensor<4xf32>
  %is2 = arith.cmpi eq, %t, %c2 : index
  scf.if %is2 {
    %v = ktdp.load %a : !ktdp.access_tile<4xindex> -> tensor<4xf32>
    ktdp.store %v, %a : tensor<4xf32>, !ktdp.access_tile<4xindex>
  }
  return
}
"""
    r = run(text, args={"x": np.zeros(4, np.float32)})
    assert r.outputs["x"].tolist() == [7.0] * 4
    # without the second hop, tile 2 is not ordered after tile 0's store
    broken = text.replace("#to2 = affine_set<(d0)[s0] : (d0 - 2 == 0)>", "#to2 = affine_set<(d0)[s0] : (d0 - 1 == 0)>")
    broken = broken.replace("%f2 = ktdp.inter_tile_produce producer_tiles_per_group = #from1", "%f2 = ktdp.inter_tile_produce producer_tiles_per_group = #from1")
    e = fails("race", broken.replace("%r2 = ktdp.inter_tile_consume(%f2) consumer_tiles_per_group = #to2", "%r2 = ktdp.inter_tile_consume(%f2) consumer_tiles_per_group = #to2"),
              args={"x": np.zeros(4, np.float32)})
    assert e.tile == 2


def test_tiles_that_do_not_produce_still_hold_the_future() -> None:
    assert ri.run  # the module imports
    T = "tensor<2xf32>"
    r = run(program(T, "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : FUT -> tensor<2xf32>", T,
                    producers="#lead"), trace=True)
    assert r.stats[0].bytes_sent == 8 and r.stats[1].bytes_sent == 0
    assert all(s.bytes_received == 8 for s in r.stats)
