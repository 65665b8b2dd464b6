"""Rules for arith and math."""

from __future__ import annotations

from ktir.dialects.registry import OPS
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.attributes import constant_type
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import elem, is_float, is_index, is_signless_int, same_container, t, width

_FLOAT_CLASS = "float (scalar or tensor)"


def _class_ok(check: Check, operand_type: ty.Type) -> bool:
    kind = check.opdef.option("operand_class")
    if kind == _FLOAT_CLASS:
        return is_float(operand_type)
    if check.opdef.dialect == "math":  # math's integer ops take signless integers, not index
        return is_signless_int(operand_type) and not is_index(elem(operand_type))
    return is_signless_int(operand_type)


def elementwise(check: Check) -> None:
    types = check.operand_types + check.result_types
    if len(check.result_types) != 1 or any(x != types[0] for x in types):
        check.fail("C1", f"operands and result must have the same type, found {', '.join(t(x) for x in types)}")
        return
    if not _class_ok(check, types[0]):
        if check.opdef.option("operand_class") == _FLOAT_CLASS:
            kind = "float"
        else:
            kind = "signless integer" if check.opdef.dialect == "math" else "signless integer or index"
        check.fail("C2", f"'{check.op.name}' needs {kind} operands, found {t(types[0])}")


_ELEMENTWISE = [n for n, d in OPS.items() if d.format in ("BINARY", "UNARY", "TERNARY") and d.dialect in ("arith", "math")]
rule(*_ELEMENTWISE)(elementwise)


@rule("arith.constant")
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
    if vt != check.result_types[0]:
        check.fail("C1", f"result type {t(check.result_types[0])} differs from the value's type {t(vt)}")


@rule("arith.cmpi", "arith.cmpf")
def compare(check: Check) -> None:
    a, b = check.operand_types[:2]
    if a != b:
        check.fail("C1", f"operands must have the same type, found {t(a)} and {t(b)}")
        return
    wanted_float = check.op.name == "arith.cmpf"
    if wanted_float != is_float(a) or (not wanted_float and not is_signless_int(a)):
        check.fail("C1", f"{check.op.name} compares {'floats' if wanted_float else 'signless integers or index'}, found {t(a)}")
    predicates = check.opdef.option("predicates")
    pred = check.attr("predicate")
    assert isinstance(predicates, tuple)
    if not isinstance(pred, at.IntegerAttr) or not 0 <= pred.value < len(predicates):
        check.fail("C2", f"predicate must be one of {', '.join(predicates)}")
    from ktir.ir.types import i1_like

    if check.result_types != [i1_like(a)]:
        check.fail("C3", f"result must be {t(i1_like(a))}, found {', '.join(t(x) for x in check.result_types)}")


@rule("arith.select")
def select(check: Check) -> None:
    cond, a, b = check.operand_types
    result = check.result_types[0] if check.result_types else None
    if not (a == b == result):
        check.fail("C2", f"both values and the result must have the same type, found {t(a)}, {t(b)}")
        return
    if cond == ty.I1:
        return
    if not (isinstance(cond, ty.TensorType) and elem(cond) == ty.I1 and isinstance(a, ty.TensorType) and cond.shape == a.shape):
        check.fail("C1", f"condition must be i1 or a tensor of i1 shaped like the values, found {t(cond)}")


def _cast_rule(check: Check) -> None:
    src, dst = check.operand_types[0], check.result_types[0]
    if not same_container(src, dst):
        check.fail("C1", f"operand and result must have the same shape, found {t(src)} and {t(dst)}")
        return
    name = check.op.name.split(".", 1)[1]
    ok = _CAST_OK[name](src, dst)
    if not ok:
        check.fail("C2", f"{check.opdef.constraints[1].text[:-1]}; found {t(elem(src))} to {t(elem(dst))}")


def _ints(a: ty.Type, b: ty.Type) -> bool:
    return isinstance(elem(a), ty.IntegerType) and isinstance(elem(b), ty.IntegerType)


def _floats(a: ty.Type, b: ty.Type) -> bool:
    return is_float(a) and is_float(b)


def _wider(a: ty.Type, b: ty.Type) -> bool:
    wa, wb = width(a), width(b)
    return wa is not None and wb is not None and wb > wa


_CAST_OK = {
    "extf": lambda a, b: _floats(a, b) and _wider(a, b),
    "truncf": lambda a, b: _floats(a, b) and _wider(b, a),
    "extsi": lambda a, b: _ints(a, b) and _wider(a, b),
    "extui": lambda a, b: _ints(a, b) and _wider(a, b),
    "trunci": lambda a, b: _ints(a, b) and _wider(b, a),
    "sitofp": lambda a, b: isinstance(elem(a), ty.IntegerType) and is_float(b),
    "uitofp": lambda a, b: isinstance(elem(a), ty.IntegerType) and is_float(b),
    "fptosi": lambda a, b: is_float(a) and isinstance(elem(b), ty.IntegerType),
    "fptoui": lambda a, b: is_float(a) and isinstance(elem(b), ty.IntegerType),
    "index_cast": lambda a, b: is_signless_int(a) and is_signless_int(b) and is_index(elem(a)) != is_index(elem(b)),
    "index_castui": lambda a, b: is_signless_int(a) and is_signless_int(b) and is_index(elem(a)) != is_index(elem(b)),
    "bitcast": lambda a, b: width(a) is not None and width(a) == width(b),
}

rule(*(f"arith.{n}" for n in _CAST_OK))(_cast_rule)
