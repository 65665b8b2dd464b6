// Written for tests/compat as a kernel author writes it: one tile, whole arrays (see test_plain_kernels.py).
#s48 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#s86 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 5 >= 0)>
#s46 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 5 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul(%A: index, %B: index, %C: index) {
  %c0 = arith.constant 0 : index
  %a = ktdp.construct_memory_view %A, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s48, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %b = ktdp.construct_memory_view %B, sizes: [8, 6], strides: [6, 1] {coordinate_set = #s86, memory_space = #ktdp.memory_space<global>} : memref<8x6xf32>
  %c = ktdp.construct_memory_view %C, sizes: [4, 6], strides: [6, 1] {coordinate_set = #s46, memory_space = #ktdp.memory_space<global>} : memref<4x6xf32>
  %ta = ktdp.construct_access_tile %a[%c0, %c0] {access_tile_set = #s48, access_tile_order = #id} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %tb = ktdp.construct_access_tile %b[%c0, %c0] {access_tile_set = #s86, access_tile_order = #id} : memref<8x6xf32> -> !ktdp.access_tile<8x6xindex>
  %tc = ktdp.construct_access_tile %c[%c0, %c0] {access_tile_set = #s46, access_tile_order = #id} : memref<4x6xf32> -> !ktdp.access_tile<4x6xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %y = ktdp.load %tb : !ktdp.access_tile<8x6xindex> -> tensor<8x6xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = linalg.matmul ins(%x, %y : tensor<4x8xf32>, tensor<8x6xf32>) outs(%init : tensor<4x6xf32>) -> tensor<4x6xf32>
  ktdp.store %r, %tc : tensor<4x6xf32>, !ktdp.access_tile<4x6xindex>
  return
}
