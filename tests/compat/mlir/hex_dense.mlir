// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @hex_dense() -> tensor<2xf32> {
  %0 = arith.constant dense<"0x0000803F00000040"> : tensor<2xf32>
  return %0 : tensor<2xf32>
}
