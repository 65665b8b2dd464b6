// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @extract_slice_dyn(%t: tensor<16xf32>, %o: index) -> tensor<4xf32> {
  %0 = tensor.extract_slice %t[%o] [4] [1] : tensor<16xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}
