// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
#m = affine_map<(d0)[s0] -> (d0 * 4 + s0)>
func.func @affine_ops(%i: index, %j: index) -> (index, index, index) {
  %0 = affine.apply #m(%i)[%j]
  %1 = affine.min affine_map<(d0) -> (d0, 16)>(%i)
  %2 = affine.max affine_map<(d0, d1) -> (d0, d1 + 2)>(%i, %j)
  return %0, %1, %2 : index, index, index
}
