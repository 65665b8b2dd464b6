// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @dyn(%n: index) -> tensor<4x?xf32> {
  %0 = tensor.empty(%n) : tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}
