"""Multi-dimensional box accesses (strided views of the array, the write map viewed per box):
races and out-of-bounds accesses report the first offending coordinate in traversal order."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import fails, run

KERNEL = """
#all = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 15 >= 0)>
#blk = affine_set<(d0, d1, d2) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 7 >= 0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @k(%y_ptr: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %step = arith.constant ROWSTEP : index
  %cstep = arith.constant COLSTEP : index
  %t = ktdp.get_compute_tile_id : index
  %r = arith.muli %t, %step : index
  %c = arith.muli %t, %cstep : index
  %y = ktdp.construct_memory_view %y_ptr, sizes: [8, 4, 16], strides: [64, 16, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8x4x16xDT>
  %v = arith.constant dense<ONE> : tensor<2x4x8xDT>
  %a = ktdp.construct_access_tile %y[%r, %c0, %c] {access_tile_order = #id3, access_tile_set = #blk} : memref<8x4x16xDT> -> !ktdp.access_tile<2x4x8xindex>
  ktdp.store %v, %a : tensor<2x4x8xDT>, !ktdp.access_tile<2x4x8xindex>
  return
}
"""


def text(rowstep: int, colstep: int, dt: str) -> str:
    return KERNEL.replace("ONE", "1" if dt.startswith("i") else "1.0").replace("ROWSTEP", str(rowstep)).replace("COLSTEP", str(colstep)).replace("DT", dt)


@pytest.mark.parametrize(("dt", "np_dt"), [("f32", np.float32), ("f16", np.float16), ("i8", np.int8)])
def test_disjoint_boxes_do_not_race(dt: str, np_dt: type) -> None:
    for rowstep, colstep in ((2, 0), (0, 8), (2, 8)):
        r = run(text(rowstep, colstep, dt), args={"y_ptr": np.zeros((8, 4, 16), np_dt)})
        assert int(r.outputs["y_ptr"].astype(np.float32).sum()) == 2 * 64


@pytest.mark.parametrize(("dt", "np_dt"), [("f32", np.float32), ("f16", np.float16), ("i8", np.int8)])
@pytest.mark.parametrize(("rowstep", "colstep", "coord"), [(1, 0, (1, 0, 0)), (0, 4, (0, 0, 4)), (1, 4, (1, 0, 4))])
def test_overlapping_boxes_race_at_the_first_shared_coordinate(dt: str, np_dt: type, rowstep: int, colstep: int,
                                                               coord: tuple[int, ...]) -> None:
    e = fails("race", text(rowstep, colstep, dt), args={"y_ptr": np.zeros((8, 4, 16), np_dt)})
    assert e.tile == 1 and e.coordinate == coord
    assert "tile 1 writes it here and tile 0 wrote it in ktdp.store" in e.message


@pytest.mark.parametrize(("row", "size", "coord"), [(6, 7 * 64 + 16, (7, 1, 0)), (5, 6 * 64 + 40, (6, 3, 0))])
def test_box_beyond_the_array_is_out_of_bounds(row: int, size: int, coord: tuple[int, ...]) -> None:
    # the view is 8 x 4 x 16, the array holds only `size` elements; one tile stores rows row, row + 1
    text = KERNEL.replace("ONE", "1.0").replace("ROWSTEP", str(row)).replace("COLSTEP", "0").replace("DT", "f32")
    text = text.replace("attributes {grid = [2]}", "attributes {grid = [1]}").replace(
        "%r = arith.muli %t, %step : index", "%r = arith.addi %t, %step : index")
    e = fails("out-of-bounds", text, args={"y_ptr": np.zeros(size, np.float32)})
    assert e.coordinate == coord and "global array 'y_ptr'" in e.message
    run(text, args={"y_ptr": np.zeros(8 * 64, np.float32)})
