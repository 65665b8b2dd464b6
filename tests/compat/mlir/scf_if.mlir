// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @scf_if(%c: i1, %a: f32, %b: f32) -> f32 {
  %0 = scf.if %c -> (f32) {
    scf.yield %a : f32
  } else {
    scf.yield %b : f32
  }
  scf.if %c {
    %x = arith.addf %a, %b : f32
  }
  return %0 : f32
}
