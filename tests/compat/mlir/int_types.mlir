// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @int_types(%a: i4, %b: ui8, %c: si32, %d: i64) -> i4 {
  return %a : i4
}
