// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @multi_result_while(%n: index) -> (index, f32) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  %r:2 = scf.while (%i = %c0, %x = %f) : (index, f32) -> (index, f32) {
    %c = arith.cmpi ult, %i, %n : index
    scf.condition(%c) %i, %x : index, f32
  } do {
  ^bb0(%i: index, %x: f32):
    %c1 = arith.constant 1 : index
    %j = arith.addi %i, %c1 : index
    %y = arith.addf %x, %x : f32
    scf.yield %j, %y : index, f32
  }
  return %r#0, %r#1 : index, f32
}
