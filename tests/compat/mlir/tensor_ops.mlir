// Written for tests/compat: standard-dialect MLIR as mlir-opt-22 reads and prints it (see test_mlir_opt_compat.py).
func.func @tensor_ops(%t: tensor<4x8xf32>, %s: f32) -> (tensor<2x8xf32>, tensor<32xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %0 = tensor.extract_slice %t[0, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
  %1 = tensor.collapse_shape %t [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %2 = tensor.expand_shape %1 [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %3 = linalg.transpose ins(%t : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
  %4 = tensor.insert_slice %0 into %t[2, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %5 = tensor.insert %s into %4[%c0, %c0] : tensor<4x8xf32>
  return %0, %1, %2, %3, %5 : tensor<2x8xf32>, tensor<32xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}
