// Written for tests/compat as a kernel author writes it: one tile, whole arrays (see test_plain_kernels.py).
func.func @f(%a: i32, %b: i32, %x: f32, %y: f32) -> (i32, i32, i32, i32, i32, i32, i32, f32, f32, f32, f32, f32, i1, i1, i8, f32, i32, i64, i32, i32) {
  %0 = arith.divsi %a, %b : i32
  %1 = arith.remsi %a, %b : i32
  %2 = arith.floordivsi %a, %b : i32
  %3 = arith.ceildivsi %a, %b : i32
  %4 = arith.divui %a, %b : i32
  %5 = arith.remui %a, %b : i32
  %6 = arith.shrui %a, %b : i32
  %7 = arith.remf %x, %y : f32
  %nan = arith.constant 0x7FC00000 : f32
  %8 = arith.maxnumf %x, %nan : f32
  %9 = arith.maximumf %x, %nan : f32
  %10 = arith.minnumf %nan, %y : f32
  %11 = arith.minimumf %nan, %y : f32
  %12 = arith.cmpf ult, %x, %nan : f32
  %13 = arith.cmpf olt, %x, %nan : f32
  %14 = arith.trunci %a : i32 to i8
  %15 = arith.uitofp %a : i32 to f32
  %16 = arith.shrsi %a, %b : i32
  %17 = arith.extui %a : i32 to i64
  %18 = arith.maxui %a, %b : i32
  %19 = arith.minsi %a, %b : i32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19 : i32, i32, i32, i32, i32, i32, i32, f32, f32, f32, f32, f32, i1, i1, i8, f32, i32, i64, i32, i32
}
