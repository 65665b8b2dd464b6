// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func private @callee(f32) -> f32
func.func @caller(%x: f32) -> f32 {
  %0 = func.call @callee(%x) : (f32) -> f32
  %1 = call @callee(%0) : (f32) -> f32
  return %1 : f32
}
