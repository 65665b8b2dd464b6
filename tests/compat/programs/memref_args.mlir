// Written for tests/compat as a kernel author writes it: one tile, whole arrays (see test_plain_kernels.py).
func.func @add(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %y = memref.load %b[%i, %j] : memref<4x8xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %c[%i, %j] : memref<4x8xf32>
    }
  }
  return
}
