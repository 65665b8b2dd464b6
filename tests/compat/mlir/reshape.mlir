// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @reshape(%t: tensor<8xf32>, %s: tensor<2xi64>) -> tensor<2x4xf32> {
  %0 = tensor.reshape %t(%s) : (tensor<8xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
