"""Kernels written in the style of ktir-cpu's examples, for bench_interp.py.

Our own kernels (not copies), shaped like the public ktir-cpu examples: one row per loop
iteration on a 2-D grid, column-sharded tensors behind distributed memory views, an
all-reduce of per-row partial sums between the tiles that share a row, f16 arithmetic
throughout. Each `make_*` returns the kernel text for the given sizes, its arguments and a
numpy function computing the same result with the same element types.

The all-reduce groups are the two diagonals of the 2 x 2 grid ({(0, 0), (1, 1)} and
{(0, 1), (1, 0)}): tile (a, b) normalises the row block a xor b, columns half b. A
diagonal is the same set of tiles whether linear tile ids are row-major or dimension 0
fastest, so the kernel means the same under either numbering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

RMSNORM_2X2 = """
#p0 = affine_set<(d0, d1) : (d0 >= 0, -d0 + {R1} >= 0, d1 >= 0, -d1 + {HH1} >= 0)>
#p1 = affine_set<(d0, d1) : (d0 >= 0, -d0 + {R1} >= 0, d1 - {HH} >= 0, -d1 + {H1} >= 0)>
#wset = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + {H1} >= 0)>
#blk = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + {B1} >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#diagonal = affine_set<(d0)[s0] : ((d0 + 1) mod 4 floordiv 2 - s0 == 0, d0 >= 0, -d0 + 3 >= 0)>
#two = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>
func.func @rmsnorm_2x2(%x_ptr: index, %w_ptr: index, %y_ptr: index) attributes {{grid = [2, 2]}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cB = arith.constant {B} : index
  %cHH = arith.constant {HH} : index
  %cRT = arith.constant {RT} : index
  %zero = arith.constant 0.0 : f16
  %inv_n = arith.constant {INV_N} : f16
  %eps = arith.constant 9.9e-06 : f16
  %a, %b = ktdp.get_compute_tile_id : index, index
  %g = arith.xori %a, %b : index
  %row0 = arith.muli %g, %cRT : index
  %row1 = arith.addi %row0, %cRT : index
  %col0 = arith.muli %b, %cHH : index
  %x_hi = arith.addi %x_ptr, %cHH : index
  %y_hi = arith.addi %y_ptr, %cHH : index
  %x0 = ktdp.construct_memory_view %x_ptr, sizes: [{R}, {HH}], strides: [{H}, 1] {{coordinate_set = #p0, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{HH}xf16>
  %x1 = ktdp.construct_memory_view %x_hi, sizes: [{R}, {HH}], strides: [{H}, 1] {{coordinate_set = #p1, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{HH}xf16>
  %x = ktdp.construct_distributed_memory_view(%x0, %x1 : memref<{R}x{HH}xf16>, memref<{R}x{HH}xf16>) : memref<{R}x{H}xf16>
  %y0 = ktdp.construct_memory_view %y_ptr, sizes: [{R}, {HH}], strides: [{H}, 1] {{coordinate_set = #p0, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{HH}xf16>
  %y1 = ktdp.construct_memory_view %y_hi, sizes: [{R}, {HH}], strides: [{H}, 1] {{coordinate_set = #p1, memory_space = #ktdp.memory_space<global>}} : memref<{R}x{HH}xf16>
  %y = ktdp.construct_distributed_memory_view(%y0, %y1 : memref<{R}x{HH}xf16>, memref<{R}x{HH}xf16>) : memref<{R}x{H}xf16>
  %w = ktdp.construct_memory_view %w_ptr, sizes: [1, {H}], strides: [{H}, 1] {{coordinate_set = #wset, memory_space = #ktdp.memory_space<global>}} : memref<1x{H}xf16>
  %e1 = tensor.empty() : tensor<1xf16>
  %zero1 = linalg.fill ins(%zero : f16) outs(%e1 : tensor<1xf16>) -> tensor<1xf16>
  %eb = tensor.empty() : tensor<1x{B}xf16>
  %zero_blk = linalg.fill ins(%zero : f16) outs(%eb : tensor<1x{B}xf16>) -> tensor<1x{B}xf16>
  scf.for %row = %row0 to %row1 step %c1 {{
    %sq = scf.for %cb = %c0 to %cHH step %cB iter_args(%acc = %zero_blk) -> (tensor<1x{B}xf16>) {{
      %col = arith.addi %col0, %cb : index
      %tx = ktdp.construct_access_tile %x[%row, %col] {{access_tile_order = #id2, access_tile_set = #blk}} : memref<{R}x{H}xf16> -> !ktdp.access_tile<1x{B}xindex>
      %xs = ktdp.load %tx : !ktdp.access_tile<1x{B}xindex> -> tensor<1x{B}xf16>
      %x2 = arith.mulf %xs, %xs : tensor<1x{B}xf16>
      %next = arith.addf %acc, %x2 : tensor<1x{B}xf16>
      scf.yield %next : tensor<1x{B}xf16>
    }}
    %part = linalg.reduce {{ arith.addf }} ins(%sq : tensor<1x{B}xf16>) outs(%zero1 : tensor<1xf16>) dimensions = [1]
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #diagonal -> !ktdp.tile_future<(tensor<1xf16>), groups = #two> {{
    ^bb0(%gid: index):
      ktdp.yield_partial %part : tensor<1xf16>
    }}
    %tot = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #diagonal, identity(%zero1 : tensor<1xf16>) : !ktdp.tile_future<(tensor<1xf16>), groups = #two> -> tensor<1xf16> {{
    ^bb0(%l: tensor<1xf16>, %r: tensor<1xf16>):
      %s = arith.addf %l, %r : tensor<1xf16>
      ktdp.yield_reduced %s : tensor<1xf16>
    }}
    %t = tensor.extract %tot[%c0] : tensor<1xf16>
    %ms = arith.mulf %t, %inv_n : f16
    %mse = arith.addf %ms, %eps : f16
    %rstd = math.rsqrt %mse : f16
    %rb = tensor.splat %rstd : tensor<1x{B}xf16>
    scf.for %cb = %c0 to %cHH step %cB {{
      %col = arith.addi %col0, %cb : index
      %tx = ktdp.construct_access_tile %x[%row, %col] {{access_tile_order = #id2, access_tile_set = #blk}} : memref<{R}x{H}xf16> -> !ktdp.access_tile<1x{B}xindex>
      %xs = ktdp.load %tx : !ktdp.access_tile<1x{B}xindex> -> tensor<1x{B}xf16>
      %tw = ktdp.construct_access_tile %w[%c0, %col] {{access_tile_order = #id2, access_tile_set = #blk}} : memref<1x{H}xf16> -> !ktdp.access_tile<1x{B}xindex>
      %ws = ktdp.load %tw : !ktdp.access_tile<1x{B}xindex> -> tensor<1x{B}xf16>
      %xn = arith.mulf %xs, %rb : tensor<1x{B}xf16>
      %ys = arith.mulf %xn, %ws : tensor<1x{B}xf16>
      %ty = ktdp.construct_access_tile %y[%row, %col] {{access_tile_order = #id2, access_tile_set = #blk}} : memref<{R}x{H}xf16> -> !ktdp.access_tile<1x{B}xindex>
      ktdp.store %ys, %ty : tensor<1x{B}xf16>, !ktdp.access_tile<1x{B}xindex>
    }}
  }}
  func.return
}}
"""


def make_rmsnorm_2x2(rows: int, hidden: int, block: int = 1024,
                     seed: int = 11) -> tuple[str, dict[str, Any], Callable[[], np.ndarray]]:
    """RMSNorm of a rows x hidden f16 matrix on a 2 x 2 grid: each tile walks rows / 2 rows
    and half the columns in `block`-wide pieces. hidden must be a power of two (1/hidden is
    exact in f16) and a multiple of 2 * block."""
    hh, rt = hidden // 2, rows // 2
    assert hidden & (hidden - 1) == 0 and hh % block == 0 and rows % 2 == 0
    text = RMSNORM_2X2.format(R=rows, R1=rows - 1, H=hidden, H1=hidden - 1, HH=hh, HH1=hh - 1, B=block, B1=block - 1,
                              RT=rt, INV_N=repr(1.0 / hidden))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, hidden)).astype(np.float16)
    W = rng.standard_normal((1, hidden)).astype(np.float16)
    args = {"x_ptr": X, "w_ptr": W, "y_ptr": np.zeros_like(X)}
    f16 = np.float16

    def ref() -> np.ndarray:
        # the kernel's arithmetic, op for op, in f16: squares, the running sum over the
        # blocks of each half, the row sum of each half (accumulated in f32, rounded once),
        # the all-reduce of the two halves, then mean, eps, rsqrt and the two products
        blocks = X.reshape(rows, 2, hh // block, block)
        acc = np.zeros((rows, 2, block), f16)
        for k in range(hh // block):
            xk = blocks[:, :, k]
            acc = acc + xk * xk
        half = acc.astype(np.float32).sum(-1).astype(f16)
        total = (f16(0) + half[:, 0]) + half[:, 1]
        ms = total * f16(1.0 / hidden) + f16(9.9e-06)
        rstd = (1 / np.sqrt(ms.astype(np.float64))).astype(f16)
        return (X * rstd[:, None]) * W

    return text, args, ref
