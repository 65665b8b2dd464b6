// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @elementwise_tensor(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xi1>) -> tensor<4xf32> {
  %0 = arith.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>
  %1 = arith.cmpf oge, %0, %b : tensor<4xf32>
  %2 = math.fma %0, %a, %b : tensor<4xf32>
  return %2 : tensor<4xf32>
}
