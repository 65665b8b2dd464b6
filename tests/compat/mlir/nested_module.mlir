// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @nested_module() {
  return
}
module @named attributes {my.attr} {
  func.func @inner() {
    return
  }
}
