// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @expand_dyn(%t: tensor<?xf32>, %n: index) -> tensor<?x4xf32> {
  %0 = tensor.expand_shape %t [[0, 1]] output_shape [%n, 4] : tensor<?xf32> into tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
