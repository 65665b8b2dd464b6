"""The `collective` level: inter-tile communication through tile futures.

Every case has the same frame: tile t loads row t of X (its partial), produces it into a
tile future, receives a result through one delivery op, and stores it at rows
[R t, R (t + 1)) of Y, where R is the number of rows of the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from conformance.gen.draft import Draft, Model, run_draft
from conformance.gen.kernel import Arr, box_set
from conformance.oracle.expect import Expected, same, summed
from conformance.oracle.sums import exact_sum

N = 16


def _sets(g: int) -> str:
    return (f"#all = affine_set<(d0)[s0] : (d0 - s0 * {g} >= 0, -d0 + s0 * {g} + {g - 1} >= 0)>\n"
            f"#lead = affine_set<(d0)[s0] : (d0 - s0 * {g} == 0)>\n"
            "#one = affine_set<(d0) : (d0 == 0)>\n"
            f"#left = affine_set<(d0)[s0] : ((d0 - s0 + 1) mod {g} == 0)>\n"
            "#id2 = affine_map<(d0, d1) -> (d0, d1)>\n")


def kernel(g: int, dtype: str, producers: str, delivery: str, result: tuple[int, int], comment: str) -> str:
    P = f"tensor<1x{N}x{dtype}>"
    R = f"tensor<{result[0]}x{result[1]}x{dtype}>"
    fut = f"!ktdp.tile_future<({P}), groups = #one>"
    ys = (g * result[0], result[1])
    return (f"// {comment}\n" + _sets(g)
            + f"func.func @kernel(%x_ptr: index, %y_ptr: index) attributes {{grid = [{g}]}} {{\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %t = ktdp.get_compute_tile_id : index\n"
            f"  %xv = ktdp.construct_memory_view %x_ptr, sizes: [{g}, {N}], strides: [{N}, 1] {{coordinate_set = {box_set((g, N))}, memory_space = #ktdp.memory_space<global>}} : memref<{g}x{N}x{dtype}>\n"
            f"  %xt = ktdp.construct_access_tile %xv[%t, %c0] {{access_tile_order = #id2, access_tile_set = {box_set((1, N))}}} : memref<{g}x{N}x{dtype}> -> !ktdp.access_tile<1x{N}xindex>\n"
            f"  %mine = ktdp.load %xt : !ktdp.access_tile<1x{N}xindex> -> {P}\n"
            f"  %f = ktdp.inter_tile_produce producer_tiles_per_group = {producers} -> {fut} {{\n"
            "  ^bb0(%gid: index):\n"
            f"    ktdp.yield_partial %mine : {P}\n"
            "  }\n"
            + "  " + delivery.replace("FUT", fut).replace("P_T", P).replace("R_T", R) + "\n"
            f"  %row = affine.apply affine_map<(d0) -> (d0 * {result[0]})>(%t)\n"
            f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [{ys[0]}, {ys[1]}], strides: [{ys[1]}, 1] {{coordinate_set = {box_set(ys)}, memory_space = #ktdp.memory_space<global>}} : memref<{ys[0]}x{ys[1]}x{dtype}>\n"
            f"  %yt = ktdp.construct_access_tile %yv[%row, %c0] {{access_tile_order = #id2, access_tile_set = {box_set(result)}}} : memref<{ys[0]}x{ys[1]}x{dtype}> -> !ktdp.access_tile<{result[0]}x{result[1]}xindex>\n"
            f"  ktdp.store %r, %yt : {R}, !ktdp.access_tile<{result[0]}x{result[1]}xindex>\n"
            "  func.return\n}\n")


def _reducer(T: str, dtype: str) -> str:
    return (f"{{\n  ^bb0(%l: {T}, %r2: {T}):\n    %s = arith.addf %l, %r2 : {T}\n"
            f"    ktdp.yield_reduced %s : {T}\n  }}")


def _model(name: str, g: int, dtype: str) -> Model:
    """What tile t stores at rows [R t, R (t + 1)) of Y, from the rows x[0..g) the tiles produce
    (spec/ops/ktdp.md: dep(c), the chunk l(c) = c of the consumers in ascending tile id)."""
    c = N // g

    def model(a: Mapping[str, Any]) -> dict[str, Expected]:
        x = a["x_ptr"]
        if name in ("reduce", "reduce_scatter", "reduce_prefix"):
            if name == "reduce_prefix":  # consumer t combines the producers 0..t
                sums = [exact_sum(x[: t + 1], 0) for t in range(g)]
                s = np.stack([v for v, _ in sums])
                m = np.stack([v for _, v in sums])
                terms = np.repeat(np.arange(1, g + 1)[:, None], N, axis=1)
                return {"y_ptr": summed(s, m, dtype, terms, products=False)}
            s, m = exact_sum(x, 0)
            if name == "reduce":  # every tile receives the whole sum
                s, m = np.tile(s, (g, 1)), np.tile(m, (g, 1))
            else:  # tile t receives chunk t of it
                s, m = s.reshape(g, c), m.reshape(g, c)
            return {"y_ptr": summed(s, m, dtype, g, products=False)}
        moves = {
            "consume_broadcast": lambda: np.tile(x[0], (g, 1)),
            "consume_ring_shift": lambda: np.roll(x, 1, axis=0),  # tile t receives the row of tile t - 1 mod g
            "gather_rows": lambda: np.tile(x, (g, 1)),
            "gather_cols": lambda: np.tile(x.reshape(1, g * N), (g, 1)),
            "scatter": lambda: x[0].reshape(g, c),
            # tile t receives chunk t of every producer's row, stacked in producer order
            "all_to_all": lambda: np.concatenate([x[:, t * c:(t + 1) * c] for t in range(g)]),
        }
        return {"y_ptr": same(moves[name]())}

    return model


def cases() -> Iterator[Draft]:
    variants = [(2, "f32"), (4, "f16"), (8, "bf16"), (4, "f32")]
    for g, dtype in variants:
        x = Arr("x", (g, N), dtype, {"recipe": "normal"})
        zero = "%zero = arith.constant dense<0.000000e+00> : P_T\n  "
        specs: list[tuple[str, str, str, tuple[int, int], str, int]] = [
            ("reduce", "#all", zero + "%r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%zero : P_T) : FUT -> P_T "
             + _reducer(f"tensor<1x{N}x{dtype}>", dtype), (1, N), "reduction", g),
            ("reduce_prefix", "#all", zero + "%r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, producer_dependency_per_consumer = "
             "affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 >= 0)>, identity(%zero : P_T) : FUT -> P_T " + _reducer(f"tensor<1x{N}x{dtype}>", dtype),
             (1, N), "reduction", g),
            ("consume_broadcast", "#lead", "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : FUT -> P_T", (1, N), "exact", 1),
            ("consume_ring_shift", "#all", "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all, producer_dependency_per_consumer = #left : FUT -> P_T",
             (1, N), "exact", 1),
            ("gather_rows", "#all", "%r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = [0] : FUT -> R_T", (g, N), "exact", 1),
            ("gather_cols", "#all", "%r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = [1] : FUT -> R_T", (1, g * N), "exact", 1),
            ("scatter", "#lead", "%r = ktdp.inter_tile_scatter(%f) consumer_tiles_per_group = #all, scatter_dimensions = [1] : FUT -> R_T", (1, N // g), "exact", 1),
            ("reduce_scatter", "#all", zero + "%r = ktdp.inter_tile_reduce_scatter(%f) consumer_tiles_per_group = #all, scatter_dimensions = [1], identity(%zero : P_T) : FUT -> R_T "
             + _reducer(f"tensor<1x{N}x{dtype}>", dtype), (1, N // g), "reduction", g),
            ("all_to_all", "#all", "%r = ktdp.inter_tile_all_to_all(%f) consumer_tiles_per_group = #all, split_dimensions = [1], concat_dimensions = [0] : FUT -> R_T",
             (g, N // g), "exact", 1),
        ]
        for name, producers, delivery, result, tol, n in specs:
            y = Arr("y", (g * result[0], result[1]), dtype)
            text = kernel(g, dtype, producers, delivery, result, f"{name} over grid [{g}] in {dtype}")
            yield run_draft(f"collective.{name}.grid{g}.{dtype}", "collective", text, [x], [y], tol,
                            f"{name} over {g} tiles", n=n, grid=[g], model=_model(name, g, dtype))
