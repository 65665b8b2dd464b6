// Written for tests/compat as a kernel author writes it: one tile, whole arrays (see test_plain_kernels.py).
func.func @add(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = arith.addf %a, %b : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
