"""Behaviour no other case reached: NaN and signed zeros inside reductions, loops that do not
run, loads of what the same kernel stored, signed division by negative divisors, integer
narrowing and wide products, `index` values beyond 32 bits, conversions that round, indirect
access with offset subscripts and a transposing order, collectives on 2-D grids and in groups
that do not start at tile 0.

Each case's inputs are chosen to tell the right behaviour from the likely wrong ones (a NaN
that a max must propagate and a maxnumf must skip; a product beyond 2^53 that float64
arithmetic rounds; an index beyond 2^31 that 32-bit arithmetic wraps).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.core import FLOAT_ARITH, SPECIALS, accuracy
from conformance.gen.draft import Draft, run_draft
from conformance.gen.kernel import Arr, box_set, io_kernel
from conformance.gen.structured import fold_model
from conformance.oracle.elementwise import convert
from conformance.oracle.expect import Expected, same, summed
from conformance.oracle.sums import exact_sum
from ktir.dialects.names import Arith, Linalg, Math

NP: dict[str, Any] = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16, "f32": np.float32}
GLOBAL = "#ktdp.memory_space<global>"


def _stored(case: str, name: str, array: np.ndarray, dtype: str, d: dict[str, np.ndarray]) -> Arr:
    path = f"inputs/holes.{case}.{name}.npy"
    d[path] = array
    return Arr(name, array.shape, dtype, {"recipe": "npy", "npy": path})


def _stored_draft(case_id: str, text: str, ins: list[Arr], outs: list[Arr], tolerance: str | list[str], description: str,
                  model: models.Model, stored: dict[str, np.ndarray], **kw: Any) -> Draft:
    d = run_draft(case_id, case_id.split(".", 1)[0], text, ins, outs, tolerance, description, model=model, **kw)
    d.npy = stored
    return d


# ---------------------------------------------------------------------- reductions with NaN and signed zeros

# rows: ordinary values; one NaN; zeros of both signs only; +inf among values; both infinities;
# -0 first then +0; a NaN among zeros; negative values only
REDUCE_ROWS = np.array([
    [1.5, -2.0, 0.25, 3.0, -0.5, 2.0, -1.0, 0.75],
    [1.0, 2.0, np.nan, -3.0, 4.0, 0.5, -0.25, 1.25],
    [-0.0, 0.0, -0.0, -0.0, 0.0, -0.0, -0.0, -0.0],
    [1.0, np.inf, -2.0, 3.0, 0.5, -1.0, 2.0, 0.25],
    [np.inf, 1.0, -np.inf, 2.0, -1.0, 0.5, 3.0, -2.0],
    [-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, 0.0],
    [-0.0, np.nan, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0],
    [-1.0, -2.0, -0.5, -3.0, -0.25, -4.0, -1.5, -2.5],
], dtype=np.float32)
REDUCERS = {"maximumf": "0xFF800000", "minimumf": "0x7F800000", "maxnumf": "0xFF800000", "minnumf": "0x7F800000"}
REDUCERS_F16 = {"maximumf": "0xFC00", "minimumf": "0x7C00", "maxnumf": "0xFC00", "minnumf": "0x7C00"}


def reductions_with_specials() -> Iterator[Draft]:
    for dtype in ("f16", "f32"):
        for op, init_bits in (REDUCERS if dtype == "f32" else REDUCERS_F16).items():
            stored: dict[str, np.ndarray] = {}
            case = f"core.linalg.reduce.specials.{op}.{dtype}"
            x = _stored(case, "x", REDUCE_ROWS, dtype, stored)
            y = Arr("y", (8,), dtype)
            body = (f"  %init0 = arith.constant {init_bits} : {dtype}\n"
                    f"  %e = tensor.empty() : {y.tensor}\n"
                    f"  %init = linalg.fill ins(%init0 : {dtype}) outs(%e : {y.tensor}) -> {y.tensor}\n"
                    f"  %y = linalg.reduce {{ arith.{op} }} ins(%x : {x.tensor}) outs(%init : {y.tensor}) dimensions = [1]\n")
            text = io_kernel(f"row {op} with linalg.reduce over NaN, infinities and zeros of both signs:\n"
                             f"{'NaN propagates' if 'imum' in op else 'NaN is skipped'}; max(-0, +0) = +0 and min(-0, +0) = -0",
                             [x], [y], body)
            init = float(np.inf if "min" in op else -np.inf)
            yield _stored_draft(case, text, [x], [y], "exact", f"linalg.reduce {op} on special values",
                                fold_model(op, "x_ptr", "y_ptr", dtype, init), stored)
        stored = {}
        case = f"core.linalg.reduce.specials.addf.{dtype}"
        x = _stored(case, "x", REDUCE_ROWS, dtype, stored)
        y = Arr("y", (8,), dtype)
        body = (f"  %z = arith.constant 0.000000e+00 : {dtype}\n"
                f"  %e = tensor.empty() : {y.tensor}\n"
                f"  %init = linalg.fill ins(%z : {dtype}) outs(%e : {y.tensor}) -> {y.tensor}\n"
                f"  %y = linalg.reduce {{ arith.addf }} ins(%x : {x.tensor}) outs(%init : {y.tensor}) dimensions = [1]\n")
        text = io_kernel("row sums over NaN, infinities and signed zeros: a NaN or both infinities give NaN, one "
                         "infinity gives it", [x], [y], body)
        yield _stored_draft(case, text, [x], [y], "reduction", "linalg.reduce addf on special values",
                            models.row_sums("x_ptr", "y_ptr", dtype, 1), stored, n=8)
    # elementwise linalg.max / linalg.min: NaN propagates, -0 < +0 (as arith.maximumf / minimumf)
    for op in (Linalg.max, Linalg.min):
        for dtype in ("f16", "f32"):
            stored = {"inputs/specials.0.npy": SPECIALS, "inputs/specials.1.npy": np.roll(SPECIALS, 5)}
            ins = [Arr(f"x{i}", (16,), dtype, {"recipe": "npy", "npy": f"inputs/specials.{i}.npy"}) for i in range(2)]
            y = Arr("y", (16,), dtype)
            body = (f"  %e = tensor.empty() : {y.tensor}\n"
                    f"  %y = {op} ins(%x0, %x1 : {y.tensor}, {y.tensor}) outs(%e : {y.tensor}) -> {y.tensor}\n")
            text = io_kernel(f"{op} on NaN, infinities, signed zeros and subnormals: NaN propagates, max(-0, +0) = +0",
                             ins, [y], body)
            d = run_draft(f"core.{op}.specials.{dtype}", "core", text, ins, [y], "exact", f"{op} on special values",
                          model=models.elementwise(op, ["x0_ptr", "x1_ptr"], "y_ptr", dtype, "exact"))
            d.npy = stored
            yield d


def more_specials() -> Iterator[Draft]:
    """remf (C's fmod), fma and rsqrt on IEEE special values, which the specials table did not
    cover; truncf of exact ties; powf of negative bases and C's special cases."""
    for op in (Arith.remf, Math.fma, Math.rsqrt):
        arity = len(FLOAT_ARITH[op])
        for dtype in ("f16", "f32"):
            stored = {f"inputs/specials.{i}.npy": np.roll(SPECIALS, 5 * i) for i in range(arity)}
            ins = [Arr(f"x{i}", (16,), dtype, {"recipe": "npy", "npy": f"inputs/specials.{i}.npy"}) for i in range(arity)]
            y = Arr("y", (16,), dtype)
            operands = ", ".join(f"%{a.name}" for a in ins)
            text = io_kernel(f"{op} on IEEE special values (NaN, infinities, signed zeros, subnormals) in {dtype}",
                             ins, [y], f"  %y = {op} {operands} : {y.tensor}\n")
            d = run_draft(f"core.{op}.specials.{dtype}", "core", text, ins, [y], accuracy(op), f"{op} on special values",
                          model=models.elementwise(op, [f"{a.name}_ptr" for a in ins], "y_ptr", dtype, accuracy(op)))
            d.npy = stored
            yield d
    # ties: exactly halfway between two values of the narrower type (ties to even)
    ties = {"f16": [1 + 2.0**-11, 1 + 3 * 2.0**-11, -(1 + 2.0**-11), -(1 + 3 * 2.0**-11), 2.0**-25, 3 * 2.0**-25,
                    -(2.0**-25), 65520.0, 2048 + 1.0, 2048 + 3.0, 0.5 + 2.0**-12, 1024 + 0.5, -(1024 + 1.5), 5 * 2.0**-25,
                    -65520.0, 1.0],
            "bf16": [1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8), -(1 + 3 * 2.0**-8), 256 + 1.0, 256 + 3.0, 2.0**-134,
                     3 * 2.0**-134, 0.5 + 2.0**-9, 128 + 0.5, -(128 + 1.5), 2.0**127 * (2 - 2.0**-8), 1.0, 3.0, -3.0, 0.0]}
    for dst, values in ties.items():
        stored = {}
        case = f"core.arith.truncf.ties.f32_to_{dst}"
        x = _stored(case, "x", np.array(values, np.float32), "f32", stored)
        y = Arr("y", (16,), dst)
        text = io_kernel(f"arith.truncf f32 -> {dst} of values halfway between two {dst} values: ties go to the even one",
                         [x], [y], f"  %y = arith.truncf %x : {x.tensor} to {y.tensor}\n")
        yield _stored_draft(case, text, [x], [y], accuracy(Arith.truncf), "truncf of ties",
                            models.conversion([(Arith.truncf, "f32", dst)], "x_ptr", "y_ptr"), stored)
    bases = [-2.0, -2.0, -0.5, -3.0, -1.0, -0.0, 0.0, -np.inf, np.inf, 2.0, -2.0, -1.5, 4.0, -8.0, 1.0, np.nan]
    exps = [3.0, 2.0, -3.0, 0.5, np.inf, -3.0, -2.0, 3.0, -1.0, 0.0, -2.0, 2.0, 0.5, 1.0 / 3, np.nan, 0.0]
    for dtype in ("f16", "f32"):
        stored = {}
        case = f"core.math.powf.negative_base.{dtype}"
        a = _stored(case, "x0", np.array(bases, NP[dtype]), dtype, stored)
        b = _stored(case, "x1", np.array(exps, NP[dtype]), dtype, stored)
        y = Arr("y", (16,), dtype)
        text = io_kernel("math.powf with negative bases (integral exponents give signed results, others NaN) and C's "
                         "special cases (pow(x, 0) = 1, pow(1, NaN) = 1, pow(-1, inf) = 1, pow(-0, -3) = -inf)",
                         [a, b], [y], f"  %y = math.powf %x0, %x1 : {y.tensor}\n")
        yield _stored_draft(case, text, [a, b], [y], accuracy(Math.powf), "powf of negative bases",
                            models.elementwise(Math.powf, ["x0_ptr", "x1_ptr"], "y_ptr", dtype, accuracy(Math.powf)), stored)


def structured_details() -> Iterator[Draft]:
    """A rank-3 transpose by a cycle, slices with strides, a pad with a non-zero value, and an
    scf.parallel reduction from a non-zero init."""
    x = Arr("x", (2, 3, 4), "f32", {"recipe": "normal"})
    y = Arr("y", (3, 4, 2), "f32")
    body = ("  %e = tensor.empty() : tensor<3x4x2xf32>\n"
            "  %y = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<3x4x2xf32>) permutation = [1, 2, 0]\n")
    text = io_kernel("linalg.transpose of a 2x3x4 tensor by the permutation [1, 2, 0]: y[i, j, k] = x[k, i, j]", [x], [y], body)
    yield run_draft("core.linalg.transpose.rank3_cycle", "core", text, [x], [y], "exact", "rank-3 transpose by a cycle",
                    model=models.computed(lambda a: {"y_ptr": np.transpose(a["x_ptr"], (1, 2, 0)).copy()}))
    t = Arr("t", (8, 8), "f32", {"recipe": "normal"})
    u = Arr("u", (8, 8), "f32", {"recipe": "normal"})
    s = Arr("s", (3, 3), "f32")
    w = Arr("w", (8, 8), "f32")
    p = Arr("p", (6, 11), "f32")
    body = ("  %s = tensor.extract_slice %t[1, 0] [3, 3] [2, 3] : tensor<8x8xf32> to tensor<3x3xf32>\n"
            "  %w = tensor.insert_slice %s into %u[0, 2] [3, 3] [3, 2] : tensor<3x3xf32> into tensor<8x8xf32>\n"
            "  %k = arith.constant 2.500000e+00 : f32\n"
            "  %top = tensor.extract_slice %t[0, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>\n"
            "  %p = tensor.pad %top low[1, 2] high[1, 1] {\n"
            "  ^bb0(%i: index, %j: index):\n"
            "    tensor.yield %k : f32\n"
            "  } : tensor<4x8xf32> to tensor<6x11xf32>\n")
    text = io_kernel("s = t[1:7:2, 0:9:3] (strides 2 and 3); w = u with s written at [0:9:3, 2:8:2];\n"
                     "p = t[0:4] padded by 1 row above and below, 2 columns left and 1 right, with 2.5", [t, u], [s, w, p], body)

    def slices(a: Mapping[str, Any]) -> dict[str, np.ndarray]:
        sl = a["t_ptr"][1:7:2, 0:9:3]
        wv = a["u_ptr"].copy()
        wv[0:9:3, 2:8:2] = sl
        pv = np.full((6, 11), 2.5, np.float32)
        pv[1:5, 2:10] = a["t_ptr"][0:4]
        return {"s_ptr": sl.copy(), "w_ptr": wv, "p_ptr": pv}

    yield run_draft("core.tensor.strided_slices_pad_value", "core", text, [t, u], [s, w, p], "exact",
                    "slices with strides, pad with a value", model=models.computed(slices))
    v = Arr("v", (64,), "f32", {"recipe": "normal"})
    r = Arr("r", (1,), "f32")
    body = ("  %c1 = arith.constant 1 : index\n"
            "  %c64 = arith.constant 64 : index\n"
            "  %init = arith.constant 1.500000e+01 : f32\n"
            "  %sum = scf.parallel (%iv) = (%c0) to (%c64) step (%c1) init (%init) -> f32 {\n"
            "    %el = tensor.extract %v[%iv] : tensor<64xf32>\n"
            "    scf.reduce(%el : f32) {\n"
            "    ^bb0(%lhs: f32, %rhs: f32):\n"
            "      %s2 = arith.addf %lhs, %rhs : f32\n"
            "      scf.reduce.return %s2 : f32\n"
            "    }\n"
            "  }\n"
            "  %r = tensor.splat %sum : tensor<1xf32>\n")
    text = io_kernel("scf.parallel sum of v from the init 15: r = 15 + sum(v)", [v], [r], body)

    def with_init(a: Mapping[str, Any]) -> dict[str, Expected]:
        s_, m_ = exact_sum(a["v_ptr"], 0, np.array(15.0, np.float32))
        return {"r_ptr": summed(s_.reshape(1), m_.reshape(1), "f32", 65, products=False)}

    yield run_draft("core.scf.parallel.init", "core", text, [v], [r], "reduction", "scf.parallel from a non-zero init",
                    n=65, model=with_init)


# ---------------------------------------------------------------------- loops and memory order


def zero_trip_loops() -> Iterator[Draft]:
    """scf.for whose body never runs (lb = ub, lb > ub): the results are the inits, no store
    happens; and a loop from a negative lower bound (the comparison is signed)."""
    for name, lb, ub in (("empty", 5, 5), ("reversed", 7, 3), ("negative_lb", -2, 3)):
        x = Arr("x", (16,), "f32", {"recipe": "normal"})
        y = Arr("y", (16,), "f32")
        body = ("  %c1 = arith.constant 1 : index\n"
                f"  %zv = ktdp.construct_memory_view %z_ptr, sizes: [16], strides: [1] {{coordinate_set = {box_set((16,))}, memory_space = {GLOBAL}}} : memref<16xf32>\n"
                f"  %zt = ktdp.construct_access_tile %zv[%c0] {{access_tile_order = affine_map<(d0) -> (d0)>, access_tile_set = {box_set((16,))}}} : memref<16xf32> -> !ktdp.access_tile<16xindex>\n"
                "  %y = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %x) -> (tensor<16xf32>) {\n"
                "    %d = arith.addf %acc, %acc : tensor<16xf32>\n"
                "    ktdp.store %d, %zt : tensor<16xf32>, !ktdp.access_tile<16xindex>\n"
                "    scf.yield %d : tensor<16xf32>\n"
                "  }\n")
        trips = max(ub - lb, 0)
        text = io_kernel(f"scf.for from {lb} to {ub} (step 1) doubling x and storing it to z each time: {trips} trips;\n"
                         "y = the loop's result (x when the body never runs), z keeps its initial value then",
                         [x], [y], body, scalars="%lb: index, %ub: index, %z_ptr: index")

        def fn(a: Mapping[str, Any], trips: int = trips) -> dict[str, np.ndarray]:
            v = a["x_ptr"] * np.float32(2.0**trips)  # doubling is exact for these values
            return {"y_ptr": v, "z_ptr": v if trips else a["z_ptr"]}

        d = run_draft(f"core.scf.for.zero_trip.{name}", "core", text, [x], [y], "exact", f"scf.for from {lb} to {ub}",
                      model=models.computed(fn))
        d.scalars.update({"lb": ("index", lb), "ub": ("index", ub)})
        d.arrays.append(Arr("z_ptr", (16,), "f32", {"recipe": "fill", "value": -7.0}))
        d.outputs.append(("z_ptr", "exact", 1))
        yield d
    # scf.while whose condition is false at once: the results are the inits
    v = Arr("v", (16,), "f32", {"recipe": "normal"})
    w = Arr("w", (16,), "f32")
    body = ("  %c1 = arith.constant 1 : index\n"
            "  %c5 = arith.constant 5 : index\n"
            "  %r:2 = scf.while (%cur = %v, %k = %c5) : (tensor<16xf32>, index) -> (tensor<16xf32>, index) {\n"
            "    %go = arith.cmpi slt, %k, %c5 : index\n"
            "    scf.condition(%go) %cur, %k : tensor<16xf32>, index\n"
            "  } do {\n"
            "  ^bb0(%c: tensor<16xf32>, %n: index):\n"
            "    %d = arith.addf %c, %c : tensor<16xf32>\n"
            "    %n1 = arith.addi %n, %c1 : index\n"
            "    scf.yield %d, %n1 : tensor<16xf32>, index\n"
            "  }\n"
            "  %w = arith.negf %r#0 : tensor<16xf32>\n")
    text = io_kernel("scf.while whose condition is false on entry: w = -v (the loop returns its inits)", [v], [w], body)
    yield run_draft("core.scf.while.zero_trip", "core", text, [v], [w], "exact", "scf.while that never iterates",
                    model=models.computed(lambda a: {"w_ptr": -a["v_ptr"]}))


def store_then_load() -> Iterator[Draft]:
    """A tile stores to global memory and loads it back: the load sees the store (program order)."""
    for dtype in ("f16", "f32", "i32"):
        rec: dict[str, Any] = {"recipe": "int", "low": -50, "high": 50} if dtype == "i32" else {"recipe": "normal"}
        x = Arr("x", (4, 8), dtype, rec)
        y = Arr("y", (4, 8), dtype)
        z = Arr("z", (4, 8), dtype)
        neg = "arith.subi %zero, %x" if dtype == "i32" else "arith.negf %x"
        add = Arith.addi if dtype == "i32" else Arith.addf
        one = "1" if dtype == "i32" else "1.000000e+00"
        body = (f"  %zero = arith.constant dense<0> : {x.tensor}\n" if dtype == "i32" else "")
        body += (f"  %n = {neg} : {x.tensor}\n"
                 f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [4, 8], strides: [8, 1] {{coordinate_set = {box_set((4, 8))}, memory_space = {GLOBAL}}} : {y.memref}\n"
                 f"  %rows = ktdp.construct_access_tile %yv[%c0, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = {box_set((4, 8))}}} : {y.memref} -> {y.tile}\n"
                 f"  ktdp.store %n, %rows : {x.tensor}, {y.tile}\n"
                 # read back the middle rows through another tile of the same memory, and add one
                 "  %c1 = arith.constant 1 : index\n"
                 f"  %mid = ktdp.construct_access_tile %yv[%c1, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d1, d0)>, access_tile_set = {box_set((2, 8))}}} : {y.memref} -> !ktdp.access_tile<8x2xindex>\n"
                 f"  %back = ktdp.load %mid : !ktdp.access_tile<8x2xindex> -> tensor<8x2x{dtype}>\n"
                 f"  %k = arith.constant dense<{one}> : tensor<8x2x{dtype}>\n"
                 f"  %b1 = {add} %back, %k : tensor<8x2x{dtype}>\n"
                 f"  %zv = ktdp.construct_memory_view %z_ptr, sizes: [4, 8], strides: [8, 1] {{coordinate_set = {box_set((4, 8))}, memory_space = {GLOBAL}}} : {z.memref}\n"
                 f"  %zt = ktdp.construct_access_tile %zv[%c1, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d1, d0)>, access_tile_set = {box_set((2, 8))}}} : {z.memref} -> !ktdp.access_tile<8x2xindex>\n"
                 f"  ktdp.store %b1, %zt : tensor<8x2x{dtype}>, !ktdp.access_tile<8x2xindex>\n")
        text = io_kernel("y = -x stored to global memory, then rows 1..2 of y loaded back (transposed) from that memory;\n"
                         "z[1:3] = what was read back + 1, the other rows of z keep their initial value",
                         [x], [], body, scalars="%y_ptr: index, %z_ptr: index")

        def fn(a: Mapping[str, Any], dtype: str = dtype) -> dict[str, np.ndarray]:
            y_ = -a["x_ptr"]
            z_ = a["z_ptr"].copy()
            z_[1:3] = models.rounded_op(Arith.addi if dtype == "i32" else Arith.addf, dtype, y_[1:3],
                                        np.ones((2, 8), y_.dtype))
            return {"y_ptr": y_, "z_ptr": z_}

        d = run_draft(f"core.memory.store_then_load.{dtype}", "core", text, [x], [], "exact", "load of what the kernel stored",
                      model=models.computed(fn))
        fill = 0 if dtype == "i32" else -7.0
        d.arrays += [Arr("y_ptr", (4, 8), dtype, {"recipe": "fill", "value": fill}),
                     Arr("z_ptr", (4, 8), dtype, {"recipe": "fill", "value": fill})]
        d.outputs += [("y_ptr", "exact", 1), ("z_ptr", "exact", 1)]
        yield d


# ---------------------------------------------------------------------- integers


DIVIDENDS = [7, -7, 6, -6, 1, -1, 0, 5, -5, 9, -9, 100, -100, 3, -3, 13]
DIVISORS = [-2, -2, -3, -3, -2, -2, -7, -5, 5, 4, -4, -7, 7, -1, 2, -13]


def negative_divisors() -> Iterator[Draft]:
    for op in (Arith.divsi, Arith.remsi, Arith.ceildivsi, Arith.floordivsi):
        for dtype in ("i8", "i32", "i64"):
            stored: dict[str, np.ndarray] = {}
            case = f"core.{op}.negative_divisor.{dtype}"
            a = _stored(case, "x0", np.array(DIVIDENDS, NP[dtype]), dtype, stored)
            b = _stored(case, "x1", np.array(DIVISORS, NP[dtype]), dtype, stored)
            y = Arr("y", (16,), dtype)
            text = io_kernel(f"{op} with negative divisors and dividends of both signs (rounding toward zero, +inf, -inf differ)",
                             [a, b], [y], f"  %y = {op} %x0, %x1 : {y.tensor}\n")
            yield _stored_draft(case, text, [a, b], [y], "exact", f"{op} with negative divisors",
                                models.elementwise(op, ["x0_ptr", "x1_ptr"], "y_ptr", dtype, "exact"), stored)


TRUNC: list[tuple[str, str, list[int]]] = [
    ("i32", "i8", [300, -129, 128, 255, 256, -256, 2**31 - 1, -(2**31), 1000, -1000, 127, -128, 65535, 511, -511, 0]),
    ("i64", "i16", [2**40 + 5, -(2**33) - 1, 65536, 32768, -32769, 2**63 - 1, -(2**63), 70000, -70000, 1, -1, 2**16 + 2**15,
                    123456789, -123456789, 32767, -32768]),
    ("i64", "i32", [2**32 + 7, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**40 - 1, 3 * 2**31, 5, -5, 2**33 + 2**31,
                    -(2**35), 2**31 - 1, 12345678901, -12345678901, 0, 4294967295]),
    ("i16", "i8", [200, -200, 128, -129, 32767, -32768, 256, 255, 1, -1, 0, 127, -128, 1000, -1000, 384]),
]


def wide_integers() -> Iterator[Draft]:
    for src, dst, values in TRUNC:
        stored: dict[str, np.ndarray] = {}
        case = f"core.arith.trunci.out_of_range.{src}_to_{dst}"
        x = _stored(case, "x", np.array(values, dtype=np.int64).astype(NP[src]), src, stored)
        y = Arr("y", (16,), dst)
        text = io_kernel(f"arith.trunci {src} -> {dst} of values beyond the {dst} range: the low bits", [x], [y],
                         f"  %y = arith.trunci %x : {x.tensor} to {y.tensor}\n")
        yield _stored_draft(case, text, [x], [y], "exact", "trunci out of range",
                            models.conversion([(Arith.trunci, src, dst)], "x_ptr", "y_ptr"), stored)
    # i64 products and sums beyond 2^53 (float64 arithmetic rounds them) and beyond 2^63 (wrap)
    big_a = [2**31 + 1, 3037000499, -(2**40 + 7), 2**53 + 1, 2**62 + 3, -(2**63), 2**32 + 1, 94906267,
             -(2**31), 2**45 + 11, 123456789012, -(2**50) - 1, 2**63 - 1, 3, 2**27 + 1, -(2**33) + 5]
    big_b = [2**31 - 1, 3037000499, 2**20 + 3, 3, 4, -1, 2**32 - 1, 94906265, -(2**31), 2**10 + 1, 987654, 2**13 + 7,
             2, 2**62 + 1, 2**27 - 1, 2**30 + 9]
    for op in (Arith.muli, Arith.addi, Arith.subi):
        stored = {}
        case = f"core.{op}.i64.beyond_2p53"
        a = _stored(case, "x0", np.array(big_a, np.int64), "i64", stored)
        b = _stored(case, "x1", np.array(big_b, np.int64), "i64", stored)
        y = Arr("y", (16,), "i64")
        text = io_kernel(f"{op} on i64 values whose results pass 2^53 (float64 loses bits) and wrap modulo 2^64",
                         [a, b], [y], f"  %y = {op} %x0, %x1 : {y.tensor}\n")
        yield _stored_draft(case, text, [a, b], [y], "exact", f"{op} beyond 2^53",
                            models.elementwise(op, ["x0_ptr", "x1_ptr"], "y_ptr", "i64", "exact"), stored)
    # absi of the most negative value wraps; shifts by up to width - 1
    for dtype in ("i8", "i16", "i32", "i64"):
        w = int(dtype[1:])
        stored = {}
        case = f"core.math.absi.extremes.{dtype}"
        vals = [-(2 ** (w - 1)), -(2 ** (w - 1)) + 1, -1, 0, 1, 2 ** (w - 1) - 1, -5, 7, -100, 3, -3, 2 ** (w - 2),
                -(2 ** (w - 2)), 11, -11, 2]
        x = _stored(case, "x0", np.array(vals, np.int64).astype(NP[dtype]), dtype, stored)
        y = Arr("y", (16,), dtype)
        text = io_kernel(f"math.absi on {dtype} extremes: the most negative value stays itself", [x], [y],
                         f"  %y = math.absi %x0 : {y.tensor}\n")
        yield _stored_draft(case, text, [x], [y], "exact", "absi of the extremes",
                            models.elementwise(Math.absi, ["x0_ptr"], "y_ptr", dtype, "exact"), stored)
        if w >= 32:
            for op in (Arith.shli, Arith.shrsi, Arith.shrui):
                stored = {}
                case = f"core.{op}.wide_shift.{dtype}"
                xs = np.array([-(2 ** (w - 1)) + 3, -1, 12345, -12345, 2 ** (w - 2) + 1, 1, -7, 99] * 2, np.int64).astype(NP[dtype])
                amounts = np.array([w - 1, w - 2, w // 2, w - 1, 1, w - 1, 3, 0, w - 3, w // 2 + 1, 17, 31, 5, 0, w - 1, 2],
                                   np.int64).astype(NP[dtype])
                a = _stored(case, "x0", xs, dtype, stored)
                b = _stored(case, "x1", amounts, dtype, stored)
                y = Arr("y", (16,), dtype)
                text = io_kernel(f"{op} on {dtype} by amounts up to {w - 1} (bits shifted past the top, sign copies entering)",
                                 [a, b], [y], f"  %y = {op} %x0, %x1 : {y.tensor}\n")
                yield _stored_draft(case, text, [a, b], [y], "exact", f"{op} by wide amounts",
                                    models.elementwise(op, ["x0_ptr", "x1_ptr"], "y_ptr", dtype, "exact"), stored)


def rounding_conversions() -> Iterator[Draft]:
    """Integer to float conversions that must round (beyond 2^24 for f32, 2^11 for f16), to
    nearest even, and unsigned readings of the top bit."""
    values = [2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**25 + 2, 2**53 + 1, -(2**62) - 1, 2**63 - 1, -(2**63), 16777217,
              33554435, 2**31 - 1, -(2**31) + 1, 2**40 + 2**16 + 1, 7, -9, 2**24]
    cases = [(Arith.sitofp, "i64", "f32"), (Arith.uitofp, "i64", "f32"), (Arith.sitofp, "i32", "f32"),
             (Arith.uitofp, "i32", "f16"), (Arith.sitofp, "i64", "f16"), (Arith.sitofp, "i16", "f16")]
    for op, src, dst in cases:
        stored: dict[str, np.ndarray] = {}
        case = f"core.{op}.rounding.{src}_to_{dst}"
        w = int(src[1:])
        x = _stored(case, "x", np.array([v % 2**w - (2**w if v % 2**w >= 2 ** (w - 1) else 0) for v in values], np.int64)
                    .astype(NP[src]), src, stored)
        y = Arr("y", (16,), dst)
        text = io_kernel(f"{op} {src} -> {dst} of values the result type cannot hold exactly: rounded to nearest even"
                         + (" (the operand read as unsigned)" if op == Arith.uitofp else ""),
                         [x], [y], f"  %y = {op} %x : {x.tensor} to {y.tensor}\n")
        yield _stored_draft(case, text, [x], [y], accuracy(op), f"{op} that rounds",
                            models.conversion([(op, src, dst)], "x_ptr", "y_ptr"), stored)


def wide_index() -> Iterator[Draft]:
    """`index` is 64 bits: values beyond 2^31 survive arithmetic, casts, and a loop's bounds."""
    stored: dict[str, np.ndarray] = {}
    case = "core.arith.index.beyond_2p31"
    vals = [2**31, 2**31 + 5, -(2**31) - 3, 2**32 + 1, 2**40, -(2**40) + 7, 3 * 2**31, 2**62, 1, -1, 0, 2**33 - 1,
            -(2**34), 5 * 2**32 + 3, 2**31 - 1, -(2**31)]
    x = _stored(case, "x", np.array(vals, np.int64), "i64", stored)
    y = Arr("y", (16,), "i64")
    z = Arr("z", (16,), "i32")
    body = ("  %i = arith.index_cast %x : tensor<16xi64> to tensor<16xindex>\n"
            "  %three = arith.constant dense<3> : tensor<16xindex>\n"
            "  %big = arith.constant dense<8589934592> : tensor<16xindex>\n"
            "  %m = arith.muli %i, %three : tensor<16xindex>\n"
            "  %s = arith.addi %m, %big : tensor<16xindex>\n"
            "  %q = arith.floordivsi %s, %three : tensor<16xindex>\n"
            "  %y = arith.index_cast %q : tensor<16xindex> to tensor<16xi64>\n"
            "  %z = arith.index_cast %s : tensor<16xindex> to tensor<16xi32>\n")
    text = io_kernel("index arithmetic beyond 2^31: y = floordiv(3 x + 2^33, 3) through index, z = the low 32 bits of 3 x + 2^33",
                     [x], [y, z], body)

    def fn(a: Mapping[str, Any]) -> dict[str, np.ndarray]:
        s = [((int(v) * 3 + 2**33 + 2**63) % 2**64) - 2**63 for v in a["x_ptr"]]
        q = [((v // 3) + 2**63) % 2**64 - 2**63 for v in s]
        return {"y_ptr": np.array(q, np.int64), "z_ptr": convert(Arith.index_cast, np.array(s, np.int64), "index", "i32")}

    yield _stored_draft(case, text, [x], [y, z], "exact", "index values beyond 2^31", models.computed(fn), stored)
    # a loop whose bounds and induction variable pass 2^32
    lo = 2**32 + 5
    acc = Arr("acc", (1,), "i64")
    body = ("  %c1 = arith.constant 1 : index\n"
            "  %c4 = arith.constant 4 : index\n"
            "  %hi = arith.addi %lo, %c4 : index\n"
            "  %zero = arith.constant 0 : i64\n"
            "  %s = scf.for %i = %lo to %hi step %c1 iter_args(%a = %zero) -> (i64) {\n"
            "    %v = arith.index_cast %i : index to i64\n"
            "    %n = arith.addi %a, %v : i64\n"
            "    scf.yield %n : i64\n"
            "  }\n"
            "  %acc = tensor.splat %s : tensor<1xi64>\n")
    text = io_kernel(f"scf.for over index values from {lo} (beyond 2^32) for 4 trips: acc = their sum", [], [acc], body,
                     scalars="%lo: index")
    d = run_draft("core.scf.for.index_beyond_2p32", "core", text, [], [acc], "exact", "loop bounds beyond 2^32",
                  model=models.computed(lambda a: {"acc_ptr": np.array([4 * lo + 6], np.int64)}))
    d.scalars["lo"] = ("index", lo)
    yield d


# ---------------------------------------------------------------------- indirect access, collectives


def indirect_offset_order() -> Iterator[Draft]:
    """Indirect access tiles whose direct subscript is offset, whose index subscript is offset,
    and whose variables_space_order transposes the tile."""
    V, W, N, D = 16, 12, 8, 4
    for order, name in (("(d0, d1)", "identity"), ("(d1, d0)", "transposed")):
        stored: dict[str, np.ndarray] = {}
        case = f"multi-tile.indirect.offset_subscripts.{name}"
        table = Arr("table", (V, W), "f32", {"recipe": "arange"})
        ids = _stored(case, "ids", np.array([5, 3, 15, 0, 7, 7, 2, 11, 9], np.int32), "i32", stored)
        shape = (N, D) if name == "identity" else (D, N)
        y = Arr("y", shape, "f32")
        ts = "x".join(map(str, shape))
        text = (f"// y = the tile table[ids[m + 1], k + 3] for m < {N}, k < {D}, in the order {order} of (m, k)\n"
                "func.func @kernel(%table_ptr: index, %ids_ptr: index, %y_ptr: index) attributes {grid = [1]} {\n"
                "  %c0 = arith.constant 0 : index\n"
                f"  %tv = ktdp.construct_memory_view %table_ptr, sizes: [{V}, {W}], strides: [{W}, 1] {{coordinate_set = {box_set((V, W))}, memory_space = {GLOBAL}}} : memref<{V}x{W}xf32>\n"
                f"  %iv = ktdp.construct_memory_view %ids_ptr, sizes: [9], strides: [1] {{coordinate_set = {box_set((9,))}, memory_space = {GLOBAL}}} : memref<9xi32>\n"
                f"  %src = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %tv[ind(%iv[%m + 1]), (%k + 3)] "
                f"{{variables_space_order = affine_map<(d0, d1) -> {order}>, variables_space_set = {box_set((N, D))}}} "
                f": memref<{V}x{W}xf32>, memref<9xi32> -> !ktdp.access_tile<{ts}xindex>\n"
                f"  %g = ktdp.load %src : !ktdp.access_tile<{ts}xindex> -> tensor<{ts}xf32>\n"
                f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [{shape[0]}, {shape[1]}], strides: [{shape[1]}, 1] {{coordinate_set = {box_set(shape)}, memory_space = {GLOBAL}}} : memref<{ts}xf32>\n"
                f"  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {{access_tile_order = affine_map<(d0, d1) -> (d0, d1)>, access_tile_set = {box_set(shape)}}} : memref<{ts}xf32> -> !ktdp.access_tile<{ts}xindex>\n"
                f"  ktdp.store %g, %yt : tensor<{ts}xf32>, !ktdp.access_tile<{ts}xindex>\n"
                "  func.return\n}\n")

        def fn(a: Mapping[str, Any], name: str = name) -> dict[str, np.ndarray]:
            rows = a["ids_ptr"].astype(np.int64)[1:N + 1]
            g = a["table_ptr"][rows][:, 3:3 + D]  # (m, k)
            return {"y_ptr": g if name == "identity" else g.T.copy()}

        yield _stored_draft(case, text, [table, ids], [y], "exact", "indirect access with offset subscripts and an order",
                            models.computed(fn), stored)


def _produce_deliver_store(producers: str, fut: str, P: str, R: str, delivery: str, result: tuple[int, int],
                           ys: tuple[int, int], dtype: str) -> str:
    """The end of a collective kernel: every producer yields `%mine`, `delivery` makes `%r`
    (FUT, P_T and R_T replaced by the future, partial and result types), and tile `%t` stores
    its `result`-shaped block of `y` at row `%t * result[0]`."""
    return (f"  %f = ktdp.inter_tile_produce producer_tiles_per_group = {producers} -> {fut} {{\n"
            "  ^bb0(%gid: index):\n"
            f"    ktdp.yield_partial %mine : {P}\n"
            "  }\n"
            + "  " + delivery.replace("FUT", fut).replace("P_T", P).replace("R_T", R) + "\n"
            f"  %row = affine.apply affine_map<(d0) -> (d0 * {result[0]})>(%t)\n"
            f"  %yv = ktdp.construct_memory_view %y_ptr, sizes: [{ys[0]}, {ys[1]}], strides: [{ys[1]}, 1] {{coordinate_set = {box_set(ys)}, memory_space = {GLOBAL}}} : memref<{ys[0]}x{ys[1]}x{dtype}>\n"
            f"  %yt = ktdp.construct_access_tile %yv[%row, %c0] {{access_tile_order = #id2, access_tile_set = {box_set(result)}}} : memref<{ys[0]}x{ys[1]}x{dtype}> -> !ktdp.access_tile<{result[0]}x{result[1]}xindex>\n"
            f"  ktdp.store %r, %yt : {R}, !ktdp.access_tile<{result[0]}x{result[1]}xindex>\n"
            "  func.return\n}\n")


def _collective_2d(grid: tuple[int, int], dtype: str, producers: str, delivery: str, result: tuple[int, int],
                   comment: str) -> str:
    """A 2-D grid of eight tiles; tile (i, j) loads row t = i * g1 + j of X (its position in the
    grid read row by row) and stores its result at rows [R t, R (t + 1)) of Y. On the grids [8, 1]
    and [1, 8], t is also the tile id under either numbering of a grid's tiles; on [2, 4] it is
    not (the tile id of (i, j) is i + 2 j). The groups are sets of tile ids (group g: tile ids
    4 g .. 4 g + 3, the leader 4 g)."""
    N = 16
    P = f"tensor<1x{N}x{dtype}>"
    R = f"tensor<{result[0]}x{result[1]}x{dtype}>"
    fut = f"!ktdp.tile_future<({P}), groups = {'#one' if producers in ('#everyone', '#first') else '#groups'}>"
    ys = (8 * result[0], result[1])
    return (f"// {comment}\n"
            "#group = affine_set<(d0)[s0] : (d0 - s0 * 4 >= 0, -d0 + s0 * 4 + 3 >= 0)>\n"
            "#lead = affine_set<(d0)[s0] : (d0 - s0 * 4 == 0)>\n"
            "#groups = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>\n"
            "#everyone = affine_set<(d0)[s0] : (d0 >= 0, -d0 + 7 >= 0)>\n"
            "#first = affine_set<(d0)[s0] : (d0 == 0)>\n"
            "#one = affine_set<(d0) : (d0 == 0)>\n"
            "#id2 = affine_map<(d0, d1) -> (d0, d1)>\n"
            f"func.func @kernel(%x_ptr: index, %y_ptr: index) attributes {{grid = [{grid[0]}, {grid[1]}]}} {{\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %i, %j = ktdp.get_compute_tile_id : index, index\n"
            f"  %t = affine.apply affine_map<(d0, d1) -> (d0 * {grid[1]} + d1)>(%i, %j)\n"
            f"  %xv = ktdp.construct_memory_view %x_ptr, sizes: [8, {N}], strides: [{N}, 1] {{coordinate_set = {box_set((8, N))}, memory_space = {GLOBAL}}} : memref<8x{N}x{dtype}>\n"
            f"  %xt = ktdp.construct_access_tile %xv[%t, %c0] {{access_tile_order = #id2, access_tile_set = {box_set((1, N))}}} : memref<8x{N}x{dtype}> -> !ktdp.access_tile<1x{N}xindex>\n"
            f"  %mine = ktdp.load %xt : !ktdp.access_tile<1x{N}xindex> -> {P}\n"
            + _produce_deliver_store(producers, fut, P, R, delivery, result, ys, dtype))


def collectives_in_groups() -> Iterator[Draft]:
    """Collectives on 2-D grids. On [8, 1] and [1, 8], two groups of four: group 1 starts at
    tile 4, so a consumer's local index l(c) there is c - 4 and its leader is tile 4. On [2, 4],
    the whole grid as one group (a sum and a broadcast from tile 0: results that do not depend
    on how the grid's tiles are numbered), and the same two groups of tile ids, whose members
    are the tiles the spec's numbering (dimension 0 fastest) puts there: an implementation that
    numbers the grid row by row forms other groups and fails."""
    for dtype in ("f32", "f16"):
        P = f"tensor<1x16x{dtype}>"
        reducer = (f"{{\n  ^bb0(%l: {P}, %r2: {P}):\n    %s = arith.addf %l, %r2 : {P}\n"
                   f"    ktdp.yield_reduced %s : {P}\n  }}")
        zero = "%zero = arith.constant dense<0.000000e+00> : P_T\n  "
        specs: list[tuple[str, str, str, tuple[int, int], str]] = [
            ("reduce", "#group", zero + "%r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #group, identity(%zero : P_T) : FUT -> P_T " + reducer,
             (1, 16), "reduction"),
            ("broadcast", "#lead", "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #group : FUT -> P_T", (1, 16), "exact"),
            ("scatter", "#lead", "%r = ktdp.inter_tile_scatter(%f) consumer_tiles_per_group = #group, scatter_dimensions = [1] : FUT -> R_T",
             (1, 4), "exact"),
            ("gather", "#group", "%r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #group, gather_dimensions = [0] : FUT -> R_T",
             (4, 16), "exact"),
            ("reduce_scatter", "#group", zero + "%r = ktdp.inter_tile_reduce_scatter(%f) consumer_tiles_per_group = #group, scatter_dimensions = [1], identity(%zero : P_T) : FUT -> R_T "
             + reducer, (1, 4), "reduction"),
            ("all_to_all", "#group", "%r = ktdp.inter_tile_all_to_all(%f) consumer_tiles_per_group = #group, split_dimensions = [1], concat_dimensions = [0] : FUT -> R_T",
             (4, 4), "exact"),
        ]
        for grid in ((8, 1), (1, 8)):
            for name, producers, delivery, result, tol in specs:
                x = Arr("x", (8, 16), dtype, {"recipe": "normal"})
                y = Arr("y", (8 * result[0], result[1]), dtype)
                text = _collective_2d(grid, dtype, producers, delivery, result,
                                      f"{name} within two groups of four tiles (0..3 and 4..7) of grid {list(grid)} in {dtype}")
                yield run_draft(f"collective.grid{grid[0]}x{grid[1]}.groups.{name}.{dtype}", "collective", text, [x], [y], tol,
                                f"{name} in groups of a 2-D grid", n=4, grid=list(grid), model=_group_model(name, dtype))
        whole = [("reduce", "#everyone", zero + "%r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #everyone, identity(%zero : P_T) : FUT -> P_T "
                  + reducer, "reduction"),
                 ("broadcast", "#first", "%r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #everyone : FUT -> P_T", "exact")]
        for name, producers, delivery, tol in whole:
            x = Arr("x", (8, 16), dtype, {"recipe": "normal"})
            y = Arr("y", (8, 16), dtype)
            text = _collective_2d((2, 4), dtype, producers, delivery, (1, 16),
                                  f"{name} over all eight tiles of grid [2, 4] in {dtype}: tile (i, j) contributes row 4 i + j")
            yield run_draft(f"collective.grid2x4.all.{name}.{dtype}", "collective", text, [x], [y], tol,
                            f"{name} over a 2-D grid", n=8, grid=[2, 4], model=_whole_grid_model(name, dtype))
        # groups of tile ids on [2, 4]: which tiles form a group depends on how the grid is numbered
        for name, producers, delivery, result, tol in specs:
            x = Arr("x", (8, 16), dtype, {"recipe": "normal"})
            y = Arr("y", (8 * result[0], result[1]), dtype)
            text = _collective_2d((2, 4), dtype, producers, delivery, result,
                                  f"{name} within two groups of four tile ids (0..3 and 4..7) of grid [2, 4] in {dtype}: tile id "
                                  "p is at (p mod 2, p floordiv 2) (dimension 0 fastest), so group 0 is the tiles (0, 0), (1, 0), "
                                  "(0, 1), (1, 1), which load rows 0, 4, 1, 5")
            yield run_draft(f"collective.grid2x4.groups.{name}.{dtype}", "collective", text, [x], [y], tol,
                            f"{name} in groups of tile ids of a 2-D grid", n=4, grid=[2, 4],
                            model=_group_model(name, dtype, (2, 4)))


def _two_row_kernel(dtype: str, delivery: str, result: tuple[int, int], comment: str) -> str:
    """Grid [4]: tile t loads rows [2 t, 2 t + 2) of X (8 x 8) as its 2x8 partial and stores its
    result at rows [R t, R (t + 1)) of Y."""
    P = f"tensor<2x8x{dtype}>"
    R = f"tensor<{result[0]}x{result[1]}x{dtype}>"
    fut = f"!ktdp.tile_future<({P}), groups = #one>"
    ys = (4 * result[0], result[1])
    return (f"// {comment}\n"
            "#all = affine_set<(d0)[s0] : (d0 >= 0, -d0 + 3 >= 0)>\n"
            "#one = affine_set<(d0) : (d0 == 0)>\n"
            "#id2 = affine_map<(d0, d1) -> (d0, d1)>\n"
            "func.func @kernel(%x_ptr: index, %y_ptr: index) attributes {grid = [4]} {\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %t = ktdp.get_compute_tile_id : index\n"
            "  %r0 = affine.apply affine_map<(d0) -> (d0 * 2)>(%t)\n"
            f"  %xv = ktdp.construct_memory_view %x_ptr, sizes: [8, 8], strides: [8, 1] {{coordinate_set = {box_set((8, 8))}, memory_space = {GLOBAL}}} : memref<8x8x{dtype}>\n"
            f"  %xt = ktdp.construct_access_tile %xv[%r0, %c0] {{access_tile_order = #id2, access_tile_set = {box_set((2, 8))}}} : memref<8x8x{dtype}> -> !ktdp.access_tile<2x8xindex>\n"
            f"  %mine = ktdp.load %xt : !ktdp.access_tile<2x8xindex> -> {P}\n"
            + _produce_deliver_store("#all", fut, P, R, delivery, result, ys, dtype))


def collectives_on_inner_dimensions() -> Iterator[Draft]:
    """Partials of two rows, so that joining along dimension 1 differs from joining the flat
    arrays; and reductions whose identity is not zero (max from -inf over negative partials)."""
    for dtype in ("f32", "bf16"):
        blocks = [("gather_cols", "%r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = [1] : FUT -> R_T",
                   (2, 32), lambda x: np.concatenate([x[2 * p:2 * p + 2] for p in range(4)], axis=1)),
                  ("all_to_all_cols", "%r = ktdp.inter_tile_all_to_all(%f) consumer_tiles_per_group = #all, split_dimensions = [1], "
                   "concat_dimensions = [1] : FUT -> R_T", (2, 8), None)]
        for name, delivery, result, join in blocks:
            x = Arr("x", (8, 8), dtype, {"recipe": "normal"})
            y = Arr("y", (4 * result[0], result[1]), dtype)
            text = _two_row_kernel(dtype, delivery, result, f"{name} of 2x8 partials over grid [4], joined along dimension 1")

            def fn(a: Mapping[str, Any], join: Any = join) -> dict[str, np.ndarray]:
                x_ = a["x_ptr"]
                if join is not None:  # every tile receives the same gathered block
                    return {"y_ptr": np.concatenate([join(x_)] * 4)}
                # tile c takes columns [2 c, 2 c + 2) of every producer's 2x8 partial, side by side
                return {"y_ptr": np.concatenate([np.concatenate([x_[2 * p:2 * p + 2, 2 * c:2 * c + 2] for p in range(4)], axis=1)
                                                 for c in range(4)])}

            yield run_draft(f"collective.{name}.two_rows.grid4.{dtype}", "collective", text, [x], [y], "exact",
                            f"{name} along dimension 1", grid=[4], model=models.computed(fn))
        inf = "0xFF80" if dtype == "bf16" else "0xFF800000"
        P = f"tensor<2x8x{dtype}>"
        for name, result in (("reduce_max", (2, 8)), ("reduce_scatter_max", (2, 2))):
            op = "inter_tile_reduce" if name == "reduce_max" else "inter_tile_reduce_scatter"
            extra = "" if name == "reduce_max" else "scatter_dimensions = [1], "
            delivery = (f"%ninf = arith.constant {inf} : {dtype}\n"
                        f"  %e = tensor.empty() : P_T\n"
                        f"  %id = linalg.fill ins(%ninf : {dtype}) outs(%e : P_T) -> P_T\n"
                        f"  %r = ktdp.{op}(%f) consumer_tiles_per_group = #all, {extra}identity(%id : P_T) : FUT -> R_T {{\n"
                        f"  ^bb0(%l: {P}, %r2: {P}):\n    %s = arith.maximumf %l, %r2 : {P}\n"
                        f"    ktdp.yield_reduced %s : {P}\n  }}")
            x = Arr("x", (8, 8), dtype, {"recipe": "uniform", "low": -9.0, "high": -1.0})
            y = Arr("y", (4 * result[0], result[1]), dtype)
            text = _two_row_kernel(dtype, delivery, result, f"{name}: the elementwise max of four negative 2x8 partials, "
                                   "from the identity -inf (a zero identity would give 0)")

            def mx(a: Mapping[str, Any], name: str = name) -> dict[str, np.ndarray]:
                m = np.maximum.reduce([a["x_ptr"][2 * p:2 * p + 2] for p in range(4)])
                if name == "reduce_max":
                    return {"y_ptr": np.concatenate([m] * 4)}
                return {"y_ptr": np.concatenate([m[:, 2 * c:2 * c + 2] for c in range(4)])}

            yield run_draft(f"collective.{name}.identity_ninf.grid4.{dtype}", "collective", text, [x], [y], "exact",
                            f"{name} from a -inf identity", grid=[4], model=models.computed(mx))


def _whole_grid_model(name: str, dtype: str) -> models.Model:
    def model(a: Mapping[str, Any]) -> dict[str, Expected]:
        x = a["x_ptr"]
        if name == "reduce":
            s, m = exact_sum(x, 0)
            return {"y_ptr": summed(np.tile(s, (8, 1)), np.tile(m, (8, 1)), dtype, 8, products=False)}
        return {"y_ptr": same(np.tile(x[0], (8, 1)))}  # tile 0 is (0, 0) however the grid is numbered

    return model


def _position(grid: tuple[int, int], p: int) -> int:
    """The row that tile id p loads and stores in `_collective_2d`: its coordinates (i, j) are
    (p mod g0, p floordiv g0) (spec/execution.md, the grid: dimension 0 varies fastest), and
    the kernel reads row i * g1 + j."""
    i, j = p % grid[0], p // grid[0]
    return i * grid[1] + j


def _group_model(name: str, dtype: str, grid: tuple[int, int] = (8, 1)) -> models.Model:
    """Two groups of tile ids, 4 g .. 4 g + 3; consumer p's local index is p - 4 g and its group's
    leader is tile id 4 g. Tile id p contributes row `_position(grid, p)` of X and stores its
    result at that row's block of Y (on [8, 1] and [1, 8] the row is p itself)."""
    def model(a: Mapping[str, Any]) -> dict[str, Expected]:
        x = a["x_ptr"]
        row = [_position(grid, p) for p in range(8)]
        groups = [x[[row[p] for p in range(4 * g, 4 * g + 4)]] for g in range(2)]  # partials in tile-id order
        at = [row.index(r) for r in range(8)]  # the tile id that stores block r of Y
        if name in ("reduce", "reduce_scatter"):
            sums = [exact_sum(g, 0) for g in groups]
            if name == "reduce":  # each tile receives its group's sum
                s = np.stack([sums[at[r] // 4][0] for r in range(8)])
                m = np.stack([sums[at[r] // 4][1] for r in range(8)])
            else:  # tile p receives chunk p - 4 g of it
                s = np.stack([sums[at[r] // 4][0][4 * (at[r] % 4):4 * (at[r] % 4) + 4] for r in range(8)])
                m = np.stack([sums[at[r] // 4][1][4 * (at[r] % 4):4 * (at[r] % 4) + 4] for r in range(8)])
            return {"y_ptr": summed(s, m, dtype, 4, products=False)}
        rows = {
            "broadcast": lambda p: groups[p // 4][0][None, :],
            "scatter": lambda p: groups[p // 4][0][None, 4 * (p % 4):4 * (p % 4) + 4],
            "gather": lambda p: groups[p // 4],
            "all_to_all": lambda p: groups[p // 4][:, 4 * (p % 4):4 * (p % 4) + 4],
        }[name]
        return {"y_ptr": same(np.concatenate([rows(at[r]) for r in range(8)]))}

    return model


def cases() -> Iterator[Draft]:
    yield from reductions_with_specials()
    yield from more_specials()
    yield from structured_details()
    yield from zero_trip_loops()
    yield from store_then_load()
    yield from negative_divisors()
    yield from wide_integers()
    yield from rounding_conversions()
    yield from wide_index()


def multitile_cases() -> Iterator[Draft]:
    yield from indirect_offset_order()


def collective_cases() -> Iterator[Draft]:
    yield from collectives_in_groups()
    yield from collectives_on_inner_dimensions()
