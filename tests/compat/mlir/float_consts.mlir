// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @float_consts() -> (f32, f32, f32, f64, bf16, f8E4M3FN, f8E5M2, f16) {
  %0 = arith.constant -0.0 : f32
  %1 = arith.constant 0x7F800000 : f32
  %2 = arith.constant 1.0e+10 : f32
  %3 = arith.constant 0.1 : f64
  %4 = arith.constant 0x3F80 : bf16
  %5 = arith.constant 1.5 : f8E4M3FN
  %6 = arith.constant -2.0 : f8E5M2
  %7 = arith.constant 6.55e4 : f16
  return %0, %1, %2, %3, %4, %5, %6, %7 : f32, f32, f32, f64, bf16, f8E4M3FN, f8E5M2, f16
}
