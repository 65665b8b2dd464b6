"""Rules for arith ops whose constraints are not typed (the elementwise ops and casts are
checked by the generic pass in `ktir.verify.engine.check_typed`)."""

from __future__ import annotations

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.attributes import constant_type
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import elem, is_float, is_signless_int, t


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
    result = check.result_type("result")
    if vt != result:
        check.fail("C1", f"result type {t(result)} differs from the value's type {t(vt)}")


@rule("arith.cmpi", "arith.cmpf")
def compare(check: Check) -> None:
    a, b = check.operand_type("lhs"), check.operand_type("rhs")
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

    result = check.result_type("result")
    if result != i1_like(a):
        check.fail("C3", f"result must be {t(i1_like(a))}, found {t(result)}")


@rule("arith.select")
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
