// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @arith_scalar(%a: i32, %b: i32, %x: f32, %y: f32) -> (i32, f32) {
  %0 = arith.addi %a, %b : i32
  %1 = arith.subi %0, %b : i32
  %2 = arith.muli %1, %a : i32
  %3 = arith.divsi %2, %b : i32
  %4 = arith.remsi %3, %b : i32
  %5 = arith.andi %4, %a : i32
  %6 = arith.ori %5, %a : i32
  %7 = arith.xori %6, %a : i32
  %8 = arith.shli %7, %a : i32
  %9 = arith.shrsi %8, %a : i32
  %10 = arith.shrui %9, %a : i32
  %11 = arith.maxsi %10, %a : i32
  %12 = arith.minui %11, %a : i32
  %f0 = arith.addf %x, %y : f32
  %f1 = arith.mulf %f0, %y fastmath<fast> : f32
  %f2 = arith.divf %f1, %y : f32
  %f3 = arith.negf %f2 : f32
  %f4 = arith.maximumf %f3, %x : f32
  %f5 = arith.minnumf %f4, %x : f32
  %f6 = arith.remf %f5, %x : f32
  return %12, %f6 : i32, f32
}
