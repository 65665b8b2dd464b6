// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @cmp(%a: i32, %b: i32, %x: f32, %y: f32) -> (i1, i1, i32) {
  %0 = arith.cmpi slt, %a, %b : i32
  %1 = arith.cmpf olt, %x, %y : f32
  %2 = arith.select %0, %a, %b : i32
  return %0, %1, %2 : i1, i1, i32
}
