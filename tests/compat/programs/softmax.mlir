// Written for tests/compat as a kernel author writes it: one tile, whole arrays (see test_plain_kernels.py).
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @softmax(%X: index, %Y: index) {
  %c0 = arith.constant 0 : index
  %x = ktdp.construct_memory_view %X, sizes: [4, 16], strides: [16, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x16xf32>
  %y = ktdp.construct_memory_view %Y, sizes: [4, 16], strides: [16, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x16xf32>
  %tx = ktdp.construct_access_tile %x[%c0, %c0] {access_tile_set = #s, access_tile_order = #id} : memref<4x16xf32> -> !ktdp.access_tile<4x16xindex>
  %ty = ktdp.construct_access_tile %y[%c0, %c0] {access_tile_set = #s, access_tile_order = #id} : memref<4x16xf32> -> !ktdp.access_tile<4x16xindex>
  %v = ktdp.load %tx : !ktdp.access_tile<4x16xindex> -> tensor<4x16xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce { arith.maximumf } ins(%v : tensor<4x16xf32>) outs(%mi : tensor<4xf32>) dimensions = [1]
  %e2 = tensor.empty() : tensor<4x16xf32>
  %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e2 : tensor<4x16xf32>) dimensions = [1]
  %d = arith.subf %v, %mb : tensor<4x16xf32>
  %ex = math.exp %d : tensor<4x16xf32>
  %si = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.reduce { arith.addf } ins(%ex : tensor<4x16xf32>) outs(%si : tensor<4xf32>) dimensions = [1]
  %sb = linalg.broadcast ins(%s : tensor<4xf32>) outs(%e2 : tensor<4x16xf32>) dimensions = [1]
  %p = arith.divf %ex, %sb : tensor<4x16xf32>
  ktdp.store %p, %ty : tensor<4x16xf32>, !ktdp.access_tile<4x16xindex>
  return
}
