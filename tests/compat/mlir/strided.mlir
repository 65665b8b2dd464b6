// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @strided(%m: memref<4x8xf32, strided<[8, 1], offset: ?>>, %k: memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>) {
  return
}
