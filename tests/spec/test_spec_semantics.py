"""Checkable statements of the spec (issue 20) against the reference interpreter: how integer
matmul inputs are extended, how often a reduce's identity enters, the access tile's shape
and position predicates, and the collectives' chunk and concatenation rules."""

from __future__ import annotations

import numpy as np

import ktir
import reference_interp as ri

MATMUL = """
func.func @k(%a: tensor<1x2xi8>, %b: tensor<2x1xi8>, %c: tensor<1x1xOUT>) -> tensor<1x1xOUT> {
  %r = linalg.matmul ins(%a, %b : tensor<1x2xi8>, tensor<2x1xi8>) outs(%c : tensor<1x1xOUT>) -> tensor<1x1xOUT>
  return %r : tensor<1x1xOUT>
}
"""


def _ret(text: str, **args: object) -> np.ndarray:
    return np.asarray(ri.run(ktir.parse(text), args=args).returns[0][0])


def test_integer_matmul_inputs_are_sign_extended_and_sums_wrap() -> None:
    a = np.array([[-128, 127]], np.int8)
    b = np.array([[-128], [2]], np.int8)
    assert _ret(MATMUL.replace("OUT", "i32"), a=a, b=b, c=np.zeros((1, 1), np.int32)).item() == 16384 + 254
    wrapped = _ret(MATMUL.replace("OUT", "i8"), a=np.array([[100, 100]], np.int8), b=np.array([[2], [2]], np.int8),
                   c=np.zeros((1, 1), np.int8))
    assert wrapped.item() == 400 - 512  # 400 mod 2^8 read as signed
    as_float = _ret(MATMUL.replace("OUT", "f32"), a=a, b=b, c=np.zeros((1, 1), np.float32))
    assert as_float.item() == 16638.0


REDUCE = """
#all = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
func.func @k(%p: tensor<2xf32>, %e: tensor<2xf32>) -> tensor<2xf32> attributes {grid = [4]} {
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<2xf32>), groups = #one> {
  ^bb0(%gid: index):
    ktdp.yield_partial %p : tensor<2xf32>
  }
  %s = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%e : tensor<2xf32>) : !ktdp.tile_future<(tensor<2xf32>), groups = #one> -> tensor<2xf32> {
  ^bb0(%l: tensor<2xf32>, %r: tensor<2xf32>):
    %a = arith.addf %l, %r : tensor<2xf32>
    ktdp.yield_reduced %a : tensor<2xf32>
  }
  return %s : tensor<2xf32>
}
"""


def test_the_reduce_identity_enters_once_per_consumer() -> None:
    # a non-neutral "identity" makes the count visible: e + 4 contributions
    out = ri.run(ktir.parse(REDUCE), args={"p": np.ones(2, np.float32), "e": np.full(2, 10.0, np.float32)})
    for tile in range(4):
        assert out.returns[tile][0].tolist() == [14.0, 14.0]


GATHER = """
#all = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
func.func @k(%x: tensor<4x2xf32>) -> (tensor<16x2xf32>, tensor<1x2xf32>) attributes {grid = [4]} {
  %t = ktdp.get_compute_tile_id : index
  %c = arith.index_cast %t : index to i32
  %cf = arith.sitofp %c : i32 to f32
  %b = tensor.splat %cf : tensor<4x2xf32>
  %mine = arith.addf %x, %b : tensor<4x2xf32>
  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<4x2xf32>), groups = #one> {
  ^bb0(%gid: index):
    ktdp.yield_partial %mine : tensor<4x2xf32>
  }
  %g = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = [0] : !ktdp.tile_future<(tensor<4x2xf32>), groups = #one> -> tensor<16x2xf32>
  %f2 = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<4x2xf32>), groups = #one> {
  ^bb0(%gid: index):
    ktdp.yield_partial %mine : tensor<4x2xf32>
  }
  %s = ktdp.inter_tile_all_to_all(%f2) consumer_tiles_per_group = #all, split_dimensions = [0], concat_dimensions = [0] : !ktdp.tile_future<(tensor<4x2xf32>), groups = #one> -> tensor<4x2xf32>
  %row = tensor.extract_slice %s[0, 0] [1, 2] [1, 1] : tensor<4x2xf32> to tensor<1x2xf32>
  return %g, %row : tensor<16x2xf32>, tensor<1x2xf32>
}
"""


def test_gather_concatenates_in_ascending_producer_id_and_all_to_all_takes_chunk_l() -> None:
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = ri.run(ktir.parse(GATHER), args={"x": x})
    whole = np.concatenate([x + p for p in range(4)])
    for tile in range(4):
        gathered, row = out.returns[tile]
        np.testing.assert_array_equal(gathered, whole)
        # consumer l receives chunk l (row l) of every producer, producers in ascending id
        np.testing.assert_array_equal(row, (x[tile] + 0)[None, :])


TILE = """
#set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 1 >= 0)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @k(%A: memref<4x4xf32>) -> tensor<2x3xf32> {
  %c1 = arith.constant 1 : index
  %tile = ktdp.construct_access_tile %A[%c1, %c1] {access_tile_order = #t, access_tile_set = #set} : memref<4x4xf32> -> !ktdp.access_tile<2x3xindex>
  %x = ktdp.load %tile : !ktdp.access_tile<2x3xindex> -> tensor<2x3xf32>
  return %x : tensor<2x3xf32>
}
"""


def test_access_tile_shape_is_the_permuted_extents_and_position_q_is_point_sigma() -> None:
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    got = _ret(TILE, A=a)
    # shape n_j = ext_sigma(j) = (2, 3); r[q0, q1] = A[b + p(q)] with p(q) = (q1, q0)
    want = np.array([[a[1 + q1, 1 + q0] for q1 in range(3)] for q0 in range(2)])
    np.testing.assert_array_equal(got, want)
