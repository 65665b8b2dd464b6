"""Rules for arith ops whose constraints are not typed (the elementwise ops and casts are
checked by the generic pass in `ktir.verify.engine.check_typed`)."""

from __future__ import annotations

from ktir.dialects.names import Arith
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.attributes import constant_type
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import elem, is_float, is_signless_int, t


@rule(Arith.constant)
def constant(check: Check) -> None:
    value = check.attr("value")
    if value is None or len(check.result_types) != 1:
        check.fail("C1", "arith.constant needs a typed value and one result")
        return
    try:
        vt = check.v.rtype(constant_type(value))
    except Exception:  # noqa: BLE001 - any untyped value is the same user error
        check.fail("C1", "arith.constant's value must be a typed literal")
        return
    result = check.result_type("result")
    if vt != result:
        check.fail("C1", f"result type {t(result)} differs from the value's type {t(vt)}")
        return
    if isinstance(value, at.FloatAttr) and value.bits is not None and value.value != value.value:
        _nan_pattern(check, value.bits, vt)
    problem = None
    if isinstance(value, at.DenseAttr) and isinstance(vt, ty.TensorType):
        problem = _dense_problem(value, vt)
    elif isinstance(value, at.IntegerAttr | at.FloatAttr):
        problem = _scalar_problem(value.value, vt)
    if problem:
        check.fail("C1", problem)


_INF_HIGH_HALVES = {0xFF80: "-inf", 0x7F80: "+inf"}  # bf16's infinities, the top 16 bits of f32's


def _nan_pattern(check: Check, bits: int, vt: ty.Type) -> None:
    """Warn about `0xFF80 : f16`: the bits of bf16's (and f32's top half of) -inf, a NaN in f16."""
    if isinstance(vt, ty.FloatType) and vt.kind == "f16" and bits in _INF_HIGH_HALVES:
        name = _INF_HIGH_HALVES[bits]
        right = "0xFC00" if name == "-inf" else "0x7C00"
        check.v.emit("warning", "arith.constant.nan",
                      f"0x{bits:04X} : f16 is a NaN (it is bf16's {name}); f16's {name} is {right}", check.loc)


def _scalar_problem(value: object, element: ty.Type) -> str | None:
    """What MLIR's parser rejects in a literal of this element type: a float for an integer
    type, and an integer outside both the signed and the unsigned range of its width."""
    if not isinstance(element, ty.IntegerType | ty.IndexType) or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return f"the float value {value!r} is not valid for the integer type {t(element)}"
    assert isinstance(value, int)
    # MLIR reads a signless literal as either signed or unsigned, an index literal as signed
    width = 64 if isinstance(element, ty.IndexType) else element.width
    top = 1 << (width - 1 if isinstance(element, ty.IndexType) else width)
    if not -(1 << (width - 1)) <= value < top:
        return f"the integer constant {value} is out of range for {t(element)}"
    return None


def _literal_shape(values: object) -> tuple[int, ...] | None:
    """The shape of a nested list literal, or None when its rows differ in length."""
    if not isinstance(values, tuple):
        return ()
    shapes = {_literal_shape(v) for v in values}
    if len(shapes) > 1 or None in shapes:
        return None
    inner = shapes.pop() if shapes else ()
    assert inner is not None
    return (len(values), *inner)


def _storage_bytes(element: ty.Type) -> int | None:
    """Bytes per element in MLIR's hex blob (i1 is bit-packed and handled apart)."""
    if isinstance(element, ty.IndexType):
        return 8
    if isinstance(element, ty.IntegerType | ty.FloatType):
        return (element.width + 7) // 8
    return None


def _dense_problem(value: at.DenseAttr, tensor: ty.TensorType) -> str | None:
    """What makes a dense literal disagree with its static tensor type, as MLIR checks it:
    a list literal has the type's shape (or is one splat value); a hex blob holds one
    element (a splat) or all of them."""
    shape = tuple(d for d in tensor.shape if d is not None)
    if len(shape) != len(tensor.shape):
        return None  # MLIR requires a static shape; the type rules say so elsewhere
    count = 1
    for d in shape:
        count *= d
    if value.hex is not None:
        size = (len(value.hex) - 2) // 2
        element = tensor.element_type
        if isinstance(element, ty.IntegerType) and element.width == 1:
            if size == (count + 7) // 8 or (size == 1 and value.hex[2:].lower() in ("00", "ff")):
                return None
            return (f"the hex blob has {size} bytes; {t(tensor)} needs {(count + 7) // 8} (one bit per element, least"
                    " significant first) or one byte 0x00 / 0xFF (a splat)")
        per = _storage_bytes(element)
        if per is None or size in (per, per * count):
            return None
        return f"the hex blob has {size} bytes; {t(tensor)} needs {per * count} ({count} x {per}) or {per} (a splat)"
    if value.is_splat:
        return _scalar_problem(value.values, tensor.element_type)
    found = _literal_shape(value.values)
    if found is None:
        return "the rows of the dense literal differ in length"
    if found != shape:
        return f"the dense literal has shape [{', '.join(map(str, found))}], the type {t(tensor)} has [{', '.join(map(str, shape))}]"
    return next(filter(None, (_scalar_problem(v, tensor.element_type) for v in _flat(value.values))), None)


def _flat(values: object) -> list[object]:
    if isinstance(values, tuple):
        return [x for v in values for x in _flat(v)]
    return [values]


@rule(Arith.cmpi, Arith.cmpf)
def compare(check: Check) -> None:
    a, b = check.operand_type("lhs"), check.operand_type("rhs")
    if a != b:
        check.fail("C1", f"operands must have the same type, found {t(a)} and {t(b)}")
        return
    wanted_float = check.op.name == Arith.cmpf
    if wanted_float != is_float(a) or (not wanted_float and not is_signless_int(a)):
        check.fail("C1", f"{check.op.name} compares {'floats' if wanted_float else 'signless integers or index'}, found {t(a)}")
    predicates = check.opdef.option("predicates")
    pred = check.attr("predicate")
    assert isinstance(predicates, tuple)
    if not isinstance(pred, at.IntegerAttr) or not 0 <= pred.value < len(predicates):
        check.fail("C2", f"predicate must be one of {', '.join(predicates)}")
    from ktir.ir.types import i1_like

    result = check.result_type("result")
    if result != i1_like(a):
        check.fail("C3", f"result must be {t(i1_like(a))}, found {t(result)}")


@rule(Arith.select)
def select(check: Check) -> None:
    cond, a, b = (check.operand_type(n) for n in ("condition", "true_value", "false_value"))
    result = check.result_type("result")
    if not (a == b == result):
        check.fail("C2", f"both values and the result must have the same type, found {t(a)}, {t(b)}")
        return
    if cond == ty.I1:
        return
    if not (isinstance(cond, ty.TensorType) and elem(cond) == ty.I1 and isinstance(a, ty.TensorType) and cond.shape == a.shape):
        check.fail("C1", f"condition must be i1 or a tensor of i1 shaped like the values, found {t(cond)}")
