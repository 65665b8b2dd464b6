"""The `core` level: every op on one tile, per element type and shape."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.gen import models
from conformance.gen.draft import Draft, run_draft
from conformance.gen.kernel import Arr, io_kernel
from conformance.oracle.elementwise import compare_float, compare_int
from ktir.dialects.names import Arith, Math

FLOATS = ("f16", "bf16", "f32")
F8 = ("f8E4M3FN", "f8E5M2")
INTS = ("i8", "i16", "i32", "i64")
SHAPES: tuple[tuple[int, ...], ...] = ((16,), (4, 8))
NORMAL: dict[str, Any] = {"recipe": "normal"}
POSITIVE: dict[str, Any] = {"recipe": "positive", "low": 0.05, "high": 8.0}
UNIT: dict[str, Any] = {"recipe": "uniform", "low": -0.9, "high": 0.9}
SMALL_INT: dict[str, Any] = {"recipe": "int", "low": -40, "high": 40}
NONZERO: dict[str, Any] = {"recipe": "int", "low": 1, "high": 9}
NONNEG: dict[str, Any] = {"recipe": "int", "low": 0, "high": 100}


def shape_name(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def accuracy(op: str) -> str:
    from ktir.dialects.registry import OPS

    return OPS[op].accuracy


# op -> (arity, recipes per operand)
FLOAT_ARITH: dict[str, tuple[dict[str, Any], ...]] = {
    Arith.addf: (NORMAL, NORMAL), Arith.subf: (NORMAL, NORMAL), Arith.mulf: (NORMAL, NORMAL),
    Arith.divf: (NORMAL, POSITIVE), Arith.remf: (NORMAL, POSITIVE), Arith.maximumf: (NORMAL, NORMAL),
    Arith.minimumf: (NORMAL, NORMAL), Arith.maxnumf: (NORMAL, NORMAL), Arith.minnumf: (NORMAL, NORMAL),
    Arith.negf: (NORMAL,), Math.absf: (NORMAL,), Math.ceil: (NORMAL,), Math.floor: (NORMAL,),
    Math.round: (NORMAL,), Math.roundeven: (NORMAL,), Math.trunc: (NORMAL,), Math.sqrt: (POSITIVE,),
    Math.rsqrt: (POSITIVE,), Math.exp: (NORMAL,), Math.exp2: (NORMAL,), Math.expm1: (NORMAL,),
    Math.log: (POSITIVE,), Math.log2: (POSITIVE,), Math.log10: (POSITIVE,), Math.log1p: (POSITIVE,),
    Math.tanh: (NORMAL,), Math.sin: (NORMAL,), Math.cos: (NORMAL,), Math.tan: (UNIT,), Math.atan: (NORMAL,),
    Math.erf: (NORMAL,), Math.atan2: (NORMAL, NORMAL), Math.powf: (POSITIVE, UNIT),
    Math.copysign: (NORMAL, NORMAL), Math.fma: (NORMAL, NORMAL, NORMAL),
}
SHIFT: dict[str, Any] = {"recipe": "int", "low": 0, "high": 8}
INT_ARITH: dict[str, tuple[dict[str, Any], ...]] = {
    Arith.addi: (SMALL_INT, SMALL_INT), Arith.subi: (SMALL_INT, SMALL_INT), Arith.muli: (SMALL_INT, SMALL_INT),
    Arith.andi: (SMALL_INT, SMALL_INT), Arith.ori: (SMALL_INT, SMALL_INT), Arith.xori: (SMALL_INT, SMALL_INT),
    Arith.maxsi: (SMALL_INT, SMALL_INT), Arith.minsi: (SMALL_INT, SMALL_INT), Arith.maxui: (NONNEG, NONNEG),
    Arith.minui: (NONNEG, NONNEG), Arith.divsi: (SMALL_INT, NONZERO), Arith.divui: (NONNEG, NONZERO),
    Arith.ceildivsi: (SMALL_INT, NONZERO), Arith.floordivsi: (SMALL_INT, NONZERO), Arith.remsi: (SMALL_INT, NONZERO),
    Arith.remui: (NONNEG, NONZERO), Arith.shli: (SMALL_INT, SHIFT), Arith.shrsi: (SMALL_INT, SHIFT),
    Arith.shrui: (NONNEG, SHIFT), Math.absi: (SMALL_INT,), Math.ctpop: (SMALL_INT,),
}


def elementwise(op: str, dtype: str, shape: tuple[int, ...], recipes: tuple[dict[str, Any], ...]) -> Draft:
    ins = [Arr(f"x{i}", shape, dtype, dict(r)) for i, r in enumerate(recipes)]
    y = Arr("y", shape, dtype)
    operands = ", ".join(f"%{a.name}" for a in ins)
    body = f"  %y = {op} {operands} : {y.tensor}\n"
    text = io_kernel(f"{op} on {y.tensor}: y = {op}(x...)", ins, [y], body)
    return run_draft(f"core.{op}.{dtype}.{shape_name(shape)}", "core", text, ins, [y], accuracy(op),
                     f"{op} element-wise on {y.tensor}",
                     model=models.elementwise(op, [f"{a.name}_ptr" for a in ins], "y_ptr", dtype, accuracy(op)))


def elementwise_cases() -> Iterator[Draft]:
    for op, recipes in FLOAT_ARITH.items():
        for dtype in FLOATS:
            for shape in SHAPES:
                yield elementwise(op, dtype, shape, recipes)
    for op, recipes in INT_ARITH.items():
        for dtype in INTS:
            yield elementwise(op, dtype, (16,), recipes)
    # optional element types (an implementation may declare them with --optional-dtype)
    for op, recipes in FLOAT_ARITH.items():
        yield elementwise(op, "f64", (16,), recipes)
    for op in (Arith.addf, Arith.mulf, Arith.subf, Arith.maximumf, Arith.minimumf, Arith.negf, Math.absf):
        for dtype in F8:
            yield elementwise(op, dtype, (16,), FLOAT_ARITH[op])
    yield from untabled_elementwise_cases()


def untabled_elementwise_cases() -> Iterator[Draft]:
    """Cases for the registry's elementwise ops the tables above do not list (a newly defined op):
    default input domains. Their goldens need the op's exact semantics in the oracle
    (`conformance.oracle.transcendental.FUNCTIONS` for a math function)."""
    from ktir.dialects.registry import OPS
    from ktir.dialects.traits import SAME_OPERANDS_AND_RESULT_TYPE
    from ktir.ir import types as ty

    for name, op in OPS.items():
        if SAME_OPERANDS_AND_RESULT_TYPE not in op.traits or name in FLOAT_ARITH or name in INT_ARITH:
            continue
        if any(o.variadic or o.optional for o in op.operands):
            continue
        kind = op.operands[0].type
        if kind.accepts(ty.F32):
            for dtype in FLOATS:
                for shape in SHAPES:
                    yield elementwise(name, dtype, shape, (NORMAL,) * len(op.operands))
        elif kind.accepts(ty.I32):
            for dtype in INTS:
                yield elementwise(name, dtype, (16,), (SMALL_INT,) * len(op.operands))


CASTS: list[tuple[str, str, str, dict[str, Any]]] = [
    (Arith.extf, "f16", "f32", NORMAL), (Arith.extf, "bf16", "f32", NORMAL), (Arith.extf, "f32", "f64", NORMAL),
    (Arith.truncf, "f32", "f16", NORMAL), (Arith.truncf, "f32", "bf16", NORMAL), (Arith.truncf, "f64", "f32", NORMAL),
    (Arith.extsi, "i8", "i32", SMALL_INT), (Arith.extsi, "i16", "i64", SMALL_INT), (Arith.extsi, "i32", "i64", SMALL_INT),
    (Arith.extui, "i8", "i32", NONNEG), (Arith.extui, "i16", "i64", NONNEG), (Arith.extui, "i32", "i64", NONNEG),
    (Arith.trunci, "i32", "i8", SMALL_INT), (Arith.trunci, "i64", "i16", SMALL_INT), (Arith.trunci, "i64", "i32", SMALL_INT),
    (Arith.fptosi, "f32", "i32", NORMAL), (Arith.fptosi, "f16", "i16", NORMAL), (Arith.fptosi, "bf16", "i8", NORMAL),
    (Arith.fptoui, "f32", "i32", POSITIVE), (Arith.fptoui, "f16", "i16", POSITIVE), (Arith.fptoui, "f32", "i8", POSITIVE),
    (Arith.sitofp, "i32", "f32", SMALL_INT), (Arith.sitofp, "i16", "f16", SMALL_INT), (Arith.sitofp, "i8", "bf16", SMALL_INT),
    (Arith.uitofp, "i32", "f32", NONNEG), (Arith.uitofp, "i16", "f16", NONNEG), (Arith.uitofp, "i8", "bf16", NONNEG),
    (Arith.bitcast, "f32", "i32", NORMAL), (Arith.bitcast, "f16", "i16", NORMAL), (Arith.bitcast, "i16", "bf16", SMALL_INT),
    (Arith.extf, "f8E4M3FN", "f32", NORMAL), (Arith.extf, "f8E5M2", "f16", NORMAL), (Arith.extf, "f8E4M3FN", "bf16", NORMAL),
    (Arith.truncf, "f32", "f8E4M3FN", NORMAL), (Arith.truncf, "f32", "f8E5M2", NORMAL), (Arith.truncf, "f16", "f8E5M2", NORMAL),
    (Arith.bitcast, "f8E4M3FN", "i8", NORMAL), (Arith.sitofp, "i8", "f8E4M3FN", SMALL_INT), (Arith.fptosi, "f8E5M2", "i32", NORMAL),
]


def cast_cases() -> Iterator[Draft]:
    for op, src, dst, recipe in CASTS:
        x = Arr("x", (16,), src, dict(recipe))
        y = Arr("y", (16,), dst)
        body = f"  %y = {op} %x : {x.tensor} to {y.tensor}\n"
        text = io_kernel(f"{op} from {src} to {dst}", [x], [y], body)
        yield run_draft(f"core.{op}.{src}_to_{dst}", "core", text, [x], [y], accuracy(op), f"{op} {src} -> {dst}",
                        model=models.conversion([(op, src, dst)], "x_ptr", "y_ptr"))
    for via, src, dst in [(Arith.index_cast, "i32", "i64"), (Arith.index_castui, "i32", "i64"),
                                         (Arith.index_cast, "i16", "i32"), (Arith.index_castui, "i8", "i16"),
                          (Arith.index_castui, "i16", "i64")]:
        x = Arr("x", (16,), src, dict(NONNEG if "ui" in via else SMALL_INT))
        y = Arr("y", (16,), dst)
        body = (f"  %i = {via} %x : {x.tensor} to tensor<16xindex>\n"
                f"  %y = {via} %i : tensor<16xindex> to {y.tensor}\n")
        text = io_kernel(f"{via} {src} -> index -> {dst}", [x], [y], body)
        yield run_draft(f"core.{via}.{src}_index_{dst}", "core", text, [x], [y], "exact", f"{via} through index",
                        model=models.conversion([(via, src, "index"), (via, "index", dst)], "x_ptr", "y_ptr"))


FPREDS = ("oeq", "one", "olt", "ole", "ogt", "oge", "ult", "une", "ord", "uno")
IPREDS = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def select_model(pred: str) -> models.Model:
    """y = (a PRED b) ? a : b."""

    def fn(a: models.Inputs) -> dict[str, np.ndarray]:
        m = compare_float(pred, a["a_ptr"], a["b_ptr"])
        return {"y_ptr": np.asarray(np.where(m, a["a_ptr"], a["b_ptr"]))}

    return models.computed(fn)


def cmpi_model(pred: str, dtype: str, out: str = "y_ptr") -> models.Model:
    """y = extui(a PRED b) as i32."""

    def fn(a: models.Inputs) -> dict[str, np.ndarray]:
        return {out: compare_int(pred, dtype, a["a_ptr"], a["b_ptr"]).astype(np.int32)}

    return models.computed(fn)


def compare_select_cases() -> Iterator[Draft]:
    for k, pred in enumerate(FPREDS):
        dtype = FLOATS[k % 3]
        a = Arr("a", (16,), dtype, {"recipe": "int", "low": -3, "high": 3})
        b = Arr("b", (16,), dtype, {"recipe": "int", "low": -3, "high": 3})
        y = Arr("y", (16,), dtype)
        body = (f"  %m = arith.cmpf {pred}, %a, %b : {a.tensor}\n"
                f"  %y = arith.select %m, %a, %b : tensor<16xi1>, {a.tensor}\n")
        text = io_kernel(f"arith.cmpf {pred} then arith.select: y = (a {pred} b) ? a : b", [a, b], [y], body)
        yield run_draft(f"core.arith.cmpf.{pred}.{dtype}", "core", text, [a, b], [y], "exact", f"cmpf {pred} + select",
                        model=select_model(pred))
    for k, pred in enumerate(IPREDS):
        dtype = INTS[k % 4]
        a = Arr("a", (16,), dtype, {"recipe": "int", "low": -3, "high": 3})
        b = Arr("b", (16,), dtype, {"recipe": "int", "low": -3, "high": 3})
        y = Arr("y", (16,), "i32")
        body = (f"  %m = arith.cmpi {pred}, %a, %b : {a.tensor}\n"
                f"  %y = arith.extui %m : tensor<16xi1> to tensor<16xi32>\n")
        text = io_kernel(f"arith.cmpi {pred}, the i1 result widened with extui", [a, b], [y], body)
        yield run_draft(f"core.arith.cmpi.{pred}.{dtype}", "core", text, [a, b], [y], "exact", f"cmpi {pred}",
                        model=cmpi_model(pred, dtype))


def constant_cases() -> Iterator[Draft]:
    for dtype in (*FLOATS, *INTS):
        x = Arr("x", (16,), dtype, dict(SMALL_INT if dtype.startswith("i") else NORMAL))
        y = Arr("y", (16,), dtype)
        lit = "3" if dtype.startswith("i") else "1.500000e+00"
        add = Arith.addi if dtype.startswith("i") else Arith.addf
        body = (f"  %k = arith.constant dense<{lit}> : {x.tensor}\n"
                f"  %y = {add} %x, %k : {x.tensor}\n")
        text = io_kernel(f"a dense arith.constant of {dtype} added to x", [x], [y], body)
        k_value = 3 if dtype.startswith("i") else 1.5
        yield run_draft(f"core.arith.constant.dense.{dtype}", "core", text, [x], [y], "exact", "dense constant",
                        model=models.computed(lambda a, add=add, dtype=dtype, k_value=k_value: {
                            "y_ptr": models.rounded_op(add, dtype, a["x_ptr"], np.full(16, k_value).astype(a["x_ptr"].dtype))}))


def core_cases() -> Iterator[Draft]:
    from conformance.gen.structured import cases as structured_cases

    yield from elementwise_cases()
    yield from special_value_cases()
    yield from cast_cases()
    yield from compare_select_cases()
    yield from constant_cases()
    yield from structured_cases()




# IEEE special values, stored as .npy inputs (exactly representable in f16, bf16 and f32
# except where the type rounds or saturates them): NaN, infinities, signed zeros,
# subnormals of f32, the largest finite f16, ties, and ordinary values.
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1.5, 3.5, 65504.0,
                     1e-40, -1e-40, 6e-8, 2.0**-126], dtype=np.float32)
SPECIAL_OPS = (Arith.addf, Arith.subf, Arith.mulf, Arith.divf, Arith.maximumf, Arith.minimumf,
               Arith.maxnumf, Arith.minnumf, Arith.negf, Math.absf, Math.copysign, Math.sqrt,
               Math.floor, Math.ceil, Math.round, Math.roundeven, Math.trunc)


def special_value_cases() -> Iterator[Draft]:
    """Each op on every pair of special values (x0 = the specials, x1 = a rotation of them)."""
    for op in SPECIAL_OPS:
        arity = len(FLOAT_ARITH[op])
        for dtype in FLOATS:
            stored = {f"inputs/specials.{i}.npy": np.roll(SPECIALS, 5 * i) for i in range(arity)}
            ins = [Arr(f"x{i}", (16,), dtype, {"recipe": "npy", "npy": f"inputs/specials.{i}.npy"}) for i in range(arity)]
            y = Arr("y", (16,), dtype)
            operands = ", ".join(f"%{a.name}" for a in ins)
            body = f"  %y = {op} {operands} : {y.tensor}\n"
            text = io_kernel(f"{op} on IEEE special values (NaN, infinities, signed zeros, subnormals, ties) in {dtype}",
                             ins, [y], body)
            d = run_draft(f"core.{op}.specials.{dtype}", "core", text, ins, [y], accuracy(op),
                          f"{op} on special values",
                          model=models.elementwise(op, [f"{a.name}_ptr" for a in ins], "y_ptr", dtype, accuracy(op)))
            d.npy = stored
            yield d
