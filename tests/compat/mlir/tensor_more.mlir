// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @tensor_more(%t: tensor<4x8xf32>, %s: f32, %n: index) -> (tensor<4x16xf32>, tensor<6x10xf32>, tensor<?x8xf32>, index, tensor<4xf32>) {
  %0 = tensor.concat dim(1) %t, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %1 = tensor.pad %t low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %s : f32
  } : tensor<4x8xf32> to tensor<6x10xf32>
  %2 = tensor.cast %t : tensor<4x8xf32> to tensor<?x8xf32>
  %c0 = arith.constant 0 : index
  %3 = tensor.dim %2, %c0 : tensor<?x8xf32>
  %4 = tensor.splat %s : tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4x16xf32>, tensor<6x10xf32>, tensor<?x8xf32>, index, tensor<4xf32>
}
