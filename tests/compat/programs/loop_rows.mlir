// Written for tests/compat as a kernel author writes it: one tile, a loop over row blocks (see test_plain_kernels.py).
// y[i, :] = x[i, :] * 2 over 16 rows, 4 rows at a time; colsum accumulates over the blocks
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#row = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
func.func @rows(%X: index, %Y: index, %S: index) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %two = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  %x = ktdp.construct_memory_view %X, sizes: [16, 8], strides: [8, 1] {memory_space = #ktdp.memory_space<global>} : memref<16x8xf32>
  %y = ktdp.construct_memory_view %Y, sizes: [16, 8], strides: [8, 1] {memory_space = #ktdp.memory_space<global>} : memref<16x8xf32>
  %s = ktdp.construct_memory_view %S, sizes: [8], strides: [1] {memory_space = #ktdp.memory_space<global>} : memref<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %sum = scf.for %i = %c0 to %c16 step %c4 iter_args(%acc = %init) -> (tensor<8xf32>) {
    %tx = ktdp.construct_access_tile %x[%i, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x8xf32> -> !ktdp.access_tile<4x8xindex>
    %ty = ktdp.construct_access_tile %y[%i, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x8xf32> -> !ktdp.access_tile<4x8xindex>
    %v = ktdp.load %tx : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
    %t = tensor.splat %two : tensor<4x8xf32>
    %w = arith.mulf %v, %t : tensor<4x8xf32>
    ktdp.store %w, %ty : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
    %cs = linalg.reduce ins(%v : tensor<4x8xf32>) outs(%acc : tensor<8xf32>) dimensions = [0]
      (%in: f32, %a: f32) {
        %r = arith.addf %in, %a : f32
        linalg.yield %r : f32
      }
    scf.yield %cs : tensor<8xf32>
  }
  %ts = ktdp.construct_access_tile %s[%c0] {access_tile_set = #row, access_tile_order = #id1} : memref<8xf32> -> !ktdp.access_tile<8xindex>
  ktdp.store %sum, %ts : tensor<8xf32>, !ktdp.access_tile<8xindex>
  return
}
