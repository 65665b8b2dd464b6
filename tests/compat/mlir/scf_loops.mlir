// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @scf_loops(%n: index, %t: tensor<8xf32>) -> (f32, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
    %v = tensor.extract %t[%i] : tensor<8xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  %w = scf.while (%arg = %c0) : (index) -> index {
    %cond = arith.cmpi slt, %arg, %n : index
    scf.condition(%cond) %arg : index
  } do {
  ^bb0(%arg: index):
    %next = arith.addi %arg, %c1 : index
    scf.yield %next : index
  }
  return %r, %w : f32, index
}
