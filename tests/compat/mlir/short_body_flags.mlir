// Written for tests/compat: the short bodies of linalg.map / linalg.reduce as mlir-opt-22
// prints them, with the inner op's flags in an attribute dictionary (see test_mlir_opt_compat.py).
func.func @short_bodies(%a: tensor<4x8xi32>, %b: tensor<4x8xi32>, %x: tensor<4x8xf32>) -> (tensor<4xi32>, tensor<4x8xi32>, tensor<4xf32>, tensor<4xi32>) {
  %ei = tensor.empty() : tensor<4xi32>
  %zi = arith.constant 0 : i32
  %i0 = linalg.fill ins(%zi : i32) outs(%ei : tensor<4xi32>) -> tensor<4xi32>
  %r = linalg.reduce { arith.addi {overflowFlags = #arith.overflow<none>} } ins(%a : tensor<4x8xi32>) outs(%i0 : tensor<4xi32>) dimensions = [1]
  %e2 = tensor.empty() : tensor<4x8xi32>
  %m = linalg.map { arith.muli {overflowFlags = #arith.overflow<nsw, nuw>} } ins(%a, %b : tensor<4x8xi32>, tensor<4x8xi32>) outs(%e2 : tensor<4x8xi32>)
  %ef = tensor.empty() : tensor<4xf32>
  %zf = arith.constant 0.000000e+00 : f32
  %f0 = linalg.fill ins(%zf : f32) outs(%ef : tensor<4xf32>) -> tensor<4xf32>
  %rf = linalg.reduce { arith.addf {fastmath = #arith.fastmath<fast>} } ins(%x : tensor<4x8xf32>) outs(%f0 : tensor<4xf32>) dimensions = [1]
  %rm = linalg.reduce { arith.maxsi } ins(%a : tensor<4x8xi32>) outs(%i0 : tensor<4xi32>) dimensions = [1]
  return %r, %m, %rf, %rm : tensor<4xi32>, tensor<4x8xi32>, tensor<4xf32>, tensor<4xi32>
}
func.func @short_compares(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %c: tensor<4x8xi1>) -> (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %eb = tensor.empty() : tensor<4x8xi1>
  %e = tensor.empty() : tensor<4x8xf32>
  %lt = linalg.map { arith.cmpf {predicate = 4 : i64} } ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%eb : tensor<4x8xi1>)
  %pick = linalg.map { arith.select } ins(%c, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
  %abs = linalg.map { math.absf {fastmath = #arith.fastmath<fast>} } ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>)
  return %lt, %pick, %abs : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>
}
