// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @mathops(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  %1 = math.log %0 : f32
  %2 = math.sqrt %1 : f32
  %3 = math.rsqrt %2 : f32
  %4 = math.tanh %3 : f32
  %5 = math.absf %4 : f32
  %6 = math.powf %5, %x : f32
  %7 = math.fma %6, %x, %x : f32
  %8 = math.erf %7 : f32
  %9 = math.sin %8 fastmath<nnan> : f32
  %10 = math.cos %9 : f32
  %11 = math.floor %10 : f32
  %12 = math.exp2 %11 : f32
  %13 = math.log1p %12 : f32
  return %13 : f32
}
