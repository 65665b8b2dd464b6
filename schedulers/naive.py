"""Single-tile, whole-tensor kernels: the typical scheduler input, at any shape.

Each function returns KTIR text for one compute tile (`grid = [1]`) working on whole
tensors in global memory, in the forms `schedulers.kernels` recognises. The benchmarks
build their Llama-3.1-8B and Granite kernels with them; the tests run them small.
"""

from __future__ import annotations

from .text import box


def matmul(M: int, N: int, K: int, dtype: str = "f16", name: str = "matmul") -> str:
    """C = A B with A M x K, B K x N, C M x N, accumulated in f32."""
    return f"""// C = A B on one tile: A {M}x{K}, B {K}x{N}, C {M}x{N} ({dtype}), accumulated in f32.
{box("a", M, K)}
{box("b", K, N)}
{box("c", M, N)}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @{name}(%a_ptr: index, %b_ptr: index, %c_ptr: index) attributes {{grid = [1]}} {{
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %a = ktdp.construct_memory_view %a_ptr, sizes: [{M}, {K}], strides: [{K}, 1] {{coordinate_set = #a, memory_space = #ktdp.memory_space<global>}} : memref<{M}x{K}x{dtype}>
  %b = ktdp.construct_memory_view %b_ptr, sizes: [{K}, {N}], strides: [{N}, 1] {{coordinate_set = #b, memory_space = #ktdp.memory_space<global>}} : memref<{K}x{N}x{dtype}>
  %c = ktdp.construct_memory_view %c_ptr, sizes: [{M}, {N}], strides: [{N}, 1] {{coordinate_set = #c, memory_space = #ktdp.memory_space<global>}} : memref<{M}x{N}x{dtype}>
  %ta = ktdp.construct_access_tile %a[%c0, %c0] {{access_tile_order = #id2, access_tile_set = #a}} : memref<{M}x{K}x{dtype}> -> !ktdp.access_tile<{M}x{K}xindex>
  %tb = ktdp.construct_access_tile %b[%c0, %c0] {{access_tile_order = #id2, access_tile_set = #b}} : memref<{K}x{N}x{dtype}> -> !ktdp.access_tile<{K}x{N}xindex>
  %x = ktdp.load %ta : !ktdp.access_tile<{M}x{K}xindex> -> tensor<{M}x{K}x{dtype}>
  %y = ktdp.load %tb : !ktdp.access_tile<{K}x{N}xindex> -> tensor<{K}x{N}x{dtype}>
  %e = tensor.empty() : tensor<{M}x{N}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %acc = linalg.matmul ins(%x, %y : tensor<{M}x{K}x{dtype}>, tensor<{K}x{N}x{dtype}>) outs(%init : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %res = arith.truncf %acc : tensor<{M}x{N}xf32> to tensor<{M}x{N}x{dtype}>
  %tc = ktdp.construct_access_tile %c[%c0, %c0] {{access_tile_order = #id2, access_tile_set = #c}} : memref<{M}x{N}x{dtype}> -> !ktdp.access_tile<{M}x{N}xindex>
  ktdp.store %res, %tc : tensor<{M}x{N}x{dtype}>, !ktdp.access_tile<{M}x{N}xindex>
  func.return
}}
"""


def _rows_header(name: str, args: str, R: int) -> str:
    return (f"func.func @{name}({args}) attributes {{grid = [1]}} {{\n"
            f"  %c0 = arith.constant 0 : index\n  %cR = arith.constant {R} : index\n"
            f"  %tid = ktdp.get_compute_tile_id : index\n")


def rmsnorm(R: int, C: int, dtype: str = "f16", name: str = "rmsnorm") -> str:
    """y = x * rsqrt(mean(x^2) + eps) * w over rows of an R x C matrix, computed in f32."""
    return f"""// RMSNorm of {R} rows of {C} ({dtype}) on one tile, in f32.
{box("rows", R, C)}
{box("vec", C)}
#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
{_rows_header(name, "%x_ptr: index, %w_ptr: index, %y_ptr: index", R)}  %zero = arith.constant 0.0 : f32
  %width = arith.constant {float(C)} : f32
  %eps = arith.constant 9.99999997e-07 : f32
  %x = ktdp.construct_memory_view %x_ptr, sizes: [{R}, {C}], strides: [{C}, 1] {{coordinate_set = #rows, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{C}x{dtype}>
  %w = ktdp.construct_memory_view %w_ptr, sizes: [{C}], strides: [1] {{coordinate_set = #vec, memory_space = #ktdp.memory_space<global>}} : memref<{C}x{dtype}>
  %y = ktdp.construct_memory_view %y_ptr, sizes: [{R}, {C}], strides: [{C}, 1] {{coordinate_set = #rows, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{C}x{dtype}>
  %tw = ktdp.construct_access_tile %w[%c0] {{access_tile_order = #id1, access_tile_set = #vec}} : memref<{C}x{dtype}> -> !ktdp.access_tile<{C}xindex>
  %wh = ktdp.load %tw : !ktdp.access_tile<{C}xindex> -> tensor<{C}x{dtype}>
  %wf = arith.extf %wh : tensor<{C}x{dtype}> to tensor<{C}xf32>
  %first = arith.muli %tid, %cR : index
  scf.for %r = %first to %cR step %cR {{
    %tx = ktdp.construct_access_tile %x[%r, %c0] {{access_tile_order = #id2, access_tile_set = #rows}} : memref<{R}x{C}x{dtype}> -> !ktdp.access_tile<{R}x{C}xindex>
    %xh = ktdp.load %tx : !ktdp.access_tile<{R}x{C}xindex> -> tensor<{R}x{C}x{dtype}>
    %xf = arith.extf %xh : tensor<{R}x{C}x{dtype}> to tensor<{R}x{C}xf32>
    %vec_e = tensor.empty() : tensor<{R}xf32>
    %ss_init = linalg.fill ins(%zero : f32) outs(%vec_e : tensor<{R}xf32>) -> tensor<{R}xf32>
    %ss = linalg.generic {{indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}} ins(%xf : tensor<{R}x{C}xf32>) outs(%ss_init : tensor<{R}xf32>) {{
    ^bb0(%v: f32, %acc: f32):
      %sq = arith.mulf %v, %v : f32
      %a = arith.addf %acc, %sq : f32
      linalg.yield %a : f32
    }} -> tensor<{R}xf32>
    %inv = linalg.generic {{indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}} ins(%ss : tensor<{R}xf32>) outs(%vec_e : tensor<{R}xf32>) {{
    ^bb0(%s: f32, %o: f32):
      %mean = arith.divf %s, %width : f32
      %shifted = arith.addf %mean, %eps : f32
      %r_ = math.rsqrt %shifted : f32
      linalg.yield %r_ : f32
    }} -> tensor<{R}xf32>
    %mat = tensor.empty() : tensor<{R}x{C}xf32>
    %yf = linalg.generic {{indexing_maps = [#id2, #row, #col, #id2], iterator_types = ["parallel", "parallel"]}} ins(%xf, %inv, %wf : tensor<{R}x{C}xf32>, tensor<{R}xf32>, tensor<{C}xf32>) outs(%mat : tensor<{R}x{C}xf32>) {{
    ^bb0(%v: f32, %s: f32, %g: f32, %o: f32):
      %n = arith.mulf %v, %s : f32
      %out = arith.mulf %n, %g : f32
      linalg.yield %out : f32
    }} -> tensor<{R}x{C}xf32>
    %yh = arith.truncf %yf : tensor<{R}x{C}xf32> to tensor<{R}x{C}x{dtype}>
    %ty = ktdp.construct_access_tile %y[%r, %c0] {{access_tile_order = #id2, access_tile_set = #rows}} : memref<{R}x{C}x{dtype}> -> !ktdp.access_tile<{R}x{C}xindex>
    ktdp.store %yh, %ty : tensor<{R}x{C}x{dtype}>, !ktdp.access_tile<{R}x{C}xindex>
  }}
  func.return
}}
"""


def softmax(R: int, C: int, dtype: str = "f16", name: str = "softmax") -> str:
    """Row softmax of an R x C matrix, computed in f32."""
    return f"""// Row softmax of {R} rows of {C} ({dtype}) on one tile, in f32.
{box("rows", R, C)}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
{_rows_header(name, "%x_ptr: index, %y_ptr: index", R)}  %neg_inf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %x = ktdp.construct_memory_view %x_ptr, sizes: [{R}, {C}], strides: [{C}, 1] {{coordinate_set = #rows, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{C}x{dtype}>
  %y = ktdp.construct_memory_view %y_ptr, sizes: [{R}, {C}], strides: [{C}, 1] {{coordinate_set = #rows, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{C}x{dtype}>
  %first = arith.muli %tid, %cR : index
  scf.for %r = %first to %cR step %cR {{
    %tx = ktdp.construct_access_tile %x[%r, %c0] {{access_tile_order = #id2, access_tile_set = #rows}} : memref<{R}x{C}x{dtype}> -> !ktdp.access_tile<{R}x{C}xindex>
    %xh = ktdp.load %tx : !ktdp.access_tile<{R}x{C}xindex> -> tensor<{R}x{C}x{dtype}>
    %xf = arith.extf %xh : tensor<{R}x{C}x{dtype}> to tensor<{R}x{C}xf32>
    %vec = tensor.empty() : tensor<{R}xf32>
    %max_init = linalg.fill ins(%neg_inf : f32) outs(%vec : tensor<{R}xf32>) -> tensor<{R}xf32>
    %max = linalg.reduce {{ arith.maximumf }} ins(%xf : tensor<{R}x{C}xf32>) outs(%max_init : tensor<{R}xf32>) dimensions = [1]
    %mat = tensor.empty() : tensor<{R}x{C}xf32>
    %e = linalg.generic {{indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}} ins(%xf, %max : tensor<{R}x{C}xf32>, tensor<{R}xf32>) outs(%mat : tensor<{R}x{C}xf32>) {{
    ^bb0(%v: f32, %m: f32, %o: f32):
      %d = arith.subf %v, %m : f32
      %ex = math.exp %d : f32
      linalg.yield %ex : f32
    }} -> tensor<{R}x{C}xf32>
    %sum_init = linalg.fill ins(%zero : f32) outs(%vec : tensor<{R}xf32>) -> tensor<{R}xf32>
    %sum = linalg.reduce ins(%e : tensor<{R}x{C}xf32>) outs(%sum_init : tensor<{R}xf32>) dimensions = [1] (%in: f32, %acc: f32) {{
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }}
    %p = linalg.generic {{indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}} ins(%e, %sum : tensor<{R}x{C}xf32>, tensor<{R}xf32>) outs(%mat : tensor<{R}x{C}xf32>) {{
    ^bb0(%v: f32, %s: f32, %o: f32):
      %q = arith.divf %v, %s : f32
      linalg.yield %q : f32
    }} -> tensor<{R}x{C}xf32>
    %ph = arith.truncf %p : tensor<{R}x{C}xf32> to tensor<{R}x{C}x{dtype}>
    %ty = ktdp.construct_access_tile %y[%r, %c0] {{access_tile_order = #id2, access_tile_set = #rows}} : memref<{R}x{C}x{dtype}> -> !ktdp.access_tile<{R}x{C}xindex>
    ktdp.store %ph, %ty : tensor<{R}x{C}x{dtype}>, !ktdp.access_tile<{R}x{C}xindex>
  }}
  func.return
}}
"""


def rope(T: int, H: int, D: int, name: str = "rope") -> str:
    """Rotary embedding (rotate-half) of Q[T x H x D] with T x D/2 cos and sin tables, f32."""
    h = D // 2
    q = f"memref<{T}x{H}x{D}xf32>"
    tab = f"memref<{T}x{h}xf32>"
    blk, tblk = f"{T}x{H}x{h}", f"{T}x{h}"
    return f"""// RoPE of {T} tokens x {H} heads x {D} on one tile (f32).
{box("q", T, H, D)}
{box("tab", T, h)}
{box("half", T, H, h)}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#tok = affine_map<(d0, d1, d2) -> (d0, d2)>
{_rows_header(name, "%q_ptr: index, %cos_ptr: index, %sin_ptr: index, %y_ptr: index", T)}  %ch = arith.constant {h} : index
  %qv = ktdp.construct_memory_view %q_ptr, sizes: [{T}, {H}, {D}], strides: [{H * D}, {D}, 1] {{coordinate_set = #q, memory_space = #ktdp.memory_space<global>}} : {q}
  %yv = ktdp.construct_memory_view %y_ptr, sizes: [{T}, {H}, {D}], strides: [{H * D}, {D}, 1] {{coordinate_set = #q, memory_space = #ktdp.memory_space<global>}} : {q}
  %cv = ktdp.construct_memory_view %cos_ptr, sizes: [{T}, {h}], strides: [{h}, 1] {{coordinate_set = #tab, memory_space = #ktdp.memory_space<global>}} : {tab}
  %sv = ktdp.construct_memory_view %sin_ptr, sizes: [{T}, {h}], strides: [{h}, 1] {{coordinate_set = #tab, memory_space = #ktdp.memory_space<global>}} : {tab}
  %first = arith.muli %tid, %cR : index
  scf.for %t = %first to %cR step %cR {{
    %t1 = ktdp.construct_access_tile %qv[%t, %c0, %c0] {{access_tile_order = #id3, access_tile_set = #half}} : {q} -> !ktdp.access_tile<{blk}xindex>
    %t2 = ktdp.construct_access_tile %qv[%t, %c0, %ch] {{access_tile_order = #id3, access_tile_set = #half}} : {q} -> !ktdp.access_tile<{blk}xindex>
    %tc = ktdp.construct_access_tile %cv[%t, %c0] {{access_tile_order = #id2, access_tile_set = #tab}} : {tab} -> !ktdp.access_tile<{tblk}xindex>
    %ts = ktdp.construct_access_tile %sv[%t, %c0] {{access_tile_order = #id2, access_tile_set = #tab}} : {tab} -> !ktdp.access_tile<{tblk}xindex>
    %x1 = ktdp.load %t1 : !ktdp.access_tile<{blk}xindex> -> tensor<{blk}xf32>
    %x2 = ktdp.load %t2 : !ktdp.access_tile<{blk}xindex> -> tensor<{blk}xf32>
    %cs = ktdp.load %tc : !ktdp.access_tile<{tblk}xindex> -> tensor<{tblk}xf32>
    %sn = ktdp.load %ts : !ktdp.access_tile<{tblk}xindex> -> tensor<{tblk}xf32>
    %e = tensor.empty() : tensor<{blk}xf32>
    %y1, %y2 = linalg.generic {{indexing_maps = [#id3, #id3, #tok, #tok, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%x1, %x2, %cs, %sn : tensor<{blk}xf32>, tensor<{blk}xf32>, tensor<{tblk}xf32>, tensor<{tblk}xf32>) outs(%e, %e : tensor<{blk}xf32>, tensor<{blk}xf32>) {{
    ^bb0(%a: f32, %b: f32, %c: f32, %s: f32, %o1: f32, %o2: f32):
      %ac = arith.mulf %a, %c : f32
      %bs = arith.mulf %b, %s : f32
      %r1 = arith.subf %ac, %bs : f32
      %bc = arith.mulf %b, %c : f32
      %as = arith.mulf %a, %s : f32
      %r2 = arith.addf %bc, %as : f32
      linalg.yield %r1, %r2 : f32, f32
    }} -> (tensor<{blk}xf32>, tensor<{blk}xf32>)
    %o1 = ktdp.construct_access_tile %yv[%t, %c0, %c0] {{access_tile_order = #id3, access_tile_set = #half}} : {q} -> !ktdp.access_tile<{blk}xindex>
    %o2 = ktdp.construct_access_tile %yv[%t, %c0, %ch] {{access_tile_order = #id3, access_tile_set = #half}} : {q} -> !ktdp.access_tile<{blk}xindex>
    ktdp.store %y1, %o1 : tensor<{blk}xf32>, !ktdp.access_tile<{blk}xindex>
    ktdp.store %y2, %o2 : tensor<{blk}xf32>, !ktdp.access_tile<{blk}xindex>
  }}
  func.return
}}
"""
