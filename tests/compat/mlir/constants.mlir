// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @constants() -> (i32, f32, index, i1, tensor<4xf32>, tensor<2x2xi32>, bf16, f16) {
  %0 = arith.constant 42 : i32
  %1 = arith.constant 3.5 : f32
  %2 = arith.constant 7 : index
  %3 = arith.constant true
  %4 = arith.constant dense<1.0> : tensor<4xf32>
  %5 = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %6 = arith.constant 1.5 : bf16
  %7 = arith.constant 0x7C00 : f16
  return %0, %1, %2, %3, %4, %5, %6, %7 : i32, f32, index, i1, tensor<4xf32>, tensor<2x2xi32>, bf16, f16
}
