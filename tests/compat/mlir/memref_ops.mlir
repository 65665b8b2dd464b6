// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @memref_ops(%n: index) -> f32 {
  %m = memref.alloc() : memref<4x8xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  memref.store %f, %m[%c0, %c0] : memref<4x8xf32>
  %v = memref.load %m[%c0, %c0] : memref<4x8xf32>
  %s = memref.subview %m[0, 0] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1]>>
  %k = memref.dim %d, %c0 : memref<?xf32>
  %a = memref.alloca() : memref<16xf32>
  %r = memref.reinterpret_cast %a to offset: [0], sizes: [4, 4], strides: [4, 1] : memref<16xf32> to memref<4x4xf32>
  %cst = memref.cast %m : memref<4x8xf32> to memref<?x8xf32>
  return %v : f32
}
