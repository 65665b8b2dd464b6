// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @casts(%a: i32, %x: f32, %i: index) -> (i64, i16, f64, f16, f32, i32, index, i32) {
  %0 = arith.extsi %a : i32 to i64
  %1 = arith.trunci %a : i32 to i16
  %2 = arith.extf %x : f32 to f64
  %3 = arith.truncf %x : f32 to f16
  %4 = arith.sitofp %a : i32 to f32
  %5 = arith.fptosi %x : f32 to i32
  %6 = arith.index_cast %a : i32 to index
  %7 = arith.bitcast %x : f32 to i32
  return %0, %1, %2, %3, %4, %5, %6, %7 : i64, i16, f64, f16, f32, i32, index, i32
}
