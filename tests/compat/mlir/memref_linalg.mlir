// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @memref_linalg(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  linalg.add ins(%a, %a : memref<4x8xf32>, memref<4x8xf32>) outs(%b : memref<4x8xf32>)
  linalg.copy ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>)
  %cst = arith.constant 1.0 : f32
  linalg.fill ins(%cst : f32) outs(%b : memref<4x8xf32>)
  return
}
