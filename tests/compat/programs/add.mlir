// Written for tests/compat as a kernel author writes it: one tile, whole arrays (see test_plain_kernels.py).
func.func @add(%A: index, %B: index, %C: index) {
  %a = ktdp.construct_memory_view %A, sizes: [4, 8], strides: [8, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %b = ktdp.construct_memory_view %B, sizes: [4, 8], strides: [8, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %c = ktdp.construct_memory_view %C, sizes: [4, 8], strides: [8, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %c0 = arith.constant 0 : index
  %ta = ktdp.construct_access_tile %a[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %tb = ktdp.construct_access_tile %b[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %tc = ktdp.construct_access_tile %c[%c0, %c0] {access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>, access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %y = ktdp.load %tb : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %s = arith.addf %x, %y : tensor<4x8xf32>
  ktdp.store %s, %tc : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}
