// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @rank_reduce(%t: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = tensor.extract_slice %t[1, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
  return %0 : tensor<8xf32>
}
