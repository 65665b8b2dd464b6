// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @linalg_more(%a: tensor<4x8xf32>, %v: tensor<8xf32>, %s: f32) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %e4 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%s : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %0 = linalg.matvec ins(%a, %v : tensor<4x8xf32>, tensor<8xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.broadcast ins(%v : tensor<8xf32>) outs(%e : tensor<4x8xf32>) dimensions = [0]
  %2 = linalg.map { math.exp } ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
  %3 = linalg.reduce { arith.addf } ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
  %4 = linalg.copy ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>
}
