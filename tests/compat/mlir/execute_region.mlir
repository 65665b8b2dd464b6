// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @execute_region() -> i32 {
  %0 = scf.execute_region -> i32 {
    %c = arith.constant 1 : i32
    scf.yield %c : i32
  }
  return %0 : i32
}
