"""Rules for scf, affine and func."""

from __future__ import annotations

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Affine, Arith, Builtin, Func, Scf
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation, Region
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import is_signless_int, t


def _terminator(region: Region | None) -> Operation | None:
    if region is None or not region.blocks or not region.blocks[-1].operations:
        return None
    return region.blocks[-1].operations[-1]


def _yielded(check: Check, region: Region | None) -> list[ty.Type] | None:
    last = _terminator(region)
    return [check.v.rtype(x) for x in last.operand_types] if last is not None else None


@rule(Scf.for_)
def for_(check: Check) -> None:
    lb, ub, step = (check.operand_type(n) for n in ("lower_bound", "upper_bound", "step"))
    region = check.op.regions[0] if check.op.regions else None
    args = [check.v.rtype(a.type) for a in region.blocks[0].arguments] if region and region.blocks else []
    if not (lb == ub == step) or not is_signless_int(lb) or (args and args[0] != lb):
        check.fail("C1", f"bounds, step and induction variable must share one index or integer type, found {t(lb)}, {t(ub)}, {t(step)}")
        return
    inits = check.operand_types_of("init_args")
    results = check.result_types_of("results")
    if args[1:] != inits:
        check.fail("C2", f"the body's iter_args ({', '.join(t(x) for x in args[1:])}) must match the init values ({', '.join(t(x) for x in inits)})")
    yielded = _yielded(check, region)
    if yielded is not None and yielded != inits:
        check.fail("C3", f"the body yields ({', '.join(t(x) for x in yielded)}) but the loop carries ({', '.join(t(x) for x in inits)})")
    if results != inits:
        check.fail("C4", f"the results ({', '.join(t(x) for x in results)}) must match the init values")
    step_op = check.defining_op(check.operand("step"))
    if step_op is not None and step_op.name == Arith.constant:
        v = step_op.attributes.get("value")
        if isinstance(v, at.IntegerAttr) and v.value <= 0:
            check.fail("C5", f"the step must be positive, found {v.value}")


@rule(Scf.if_)
def if_(check: Check) -> None:
    # C1 (the condition is i1) is a typed constraint, checked by the generic pass
    then, other = (check.op.regions + [None, None])[:2]  # type: ignore[list-item]
    if check.result_types and (other is None or not other.blocks):
        check.fail("C2", "an scf.if with results needs an else region")
        return
    for region in (then, other):
        if region is None or not region.blocks:
            continue
        yielded = _yielded(check, region)
        if yielded is not None and yielded != check.result_types:
            check.fail("C3", f"a branch yields ({', '.join(t(x) for x in yielded)}) but the results are ({', '.join(t(x) for x in check.result_types)})")
            return


@rule(Scf.while_)
def while_(check: Check) -> None:
    before, after = (check.op.regions + [None, None])[:2]  # type: ignore[list-item]
    if before is None or after is None or not before.blocks or not after.blocks:
        return
    if [check.v.rtype(a.type) for a in before.blocks[0].arguments] != check.operand_types:
        check.fail("C1", "the before region's arguments must match the initial values")
    cond = _terminator(before)
    if cond is not None and cond.name == Scf.condition:
        try:
            forwarded = [check.v.rtype(x) for x in named(cond).operand_types("args")]
        except AccessError:  # a malformed scf.condition is reported when it is visited
            forwarded = []
        after_args = [check.v.rtype(a.type) for a in after.blocks[0].arguments]
        if forwarded != after_args or forwarded != check.result_types:
            check.fail("C2", f"scf.condition forwards ({', '.join(t(x) for x in forwarded)}), which must match the after region's arguments and the results")
    yielded = _yielded(check, after)
    if yielded is not None and yielded != check.operand_types:
        check.fail("C3", "the after region must yield values matching the before region's arguments")



@rule(Scf.parallel)
def parallel(check: Check) -> None:
    seg = check.segments()
    if seg is None or len(seg) != 4 or not (seg[0] == seg[1] == seg[2]):
        check.fail("C1", "lower bounds, upper bounds and steps need the same number of entries")
        return
    n_loops = len(check.named.operand_positions("lower_bounds"))
    n_inits = len(check.named.operand_positions("init_vals"))
    region = check.op.regions[0] if check.op.regions else None
    args = region.blocks[0].arguments if region and region.blocks else []
    if len(args) != n_loops or any(check.v.rtype(a.type) != ty.INDEX for a in args):
        check.fail("C2", f"the body needs {n_loops} index arguments")
    last = _terminator(region)
    if last is not None and last.name == Scf.reduce and len(last.operands) != n_inits:
        check.fail("C3", f"scf.reduce must reduce {n_inits} values, one per init value")


@rule(Scf.reduce)
def scf_reduce(check: Check) -> None:
    if len(check.op.regions) != len(check.op.operands):
        check.fail("C1", f"{len(check.op.operands)} operands need as many combiner regions, found {len(check.op.regions)}")


@rule(Scf.forall)
def forall(check: Check) -> None:
    lbs, ubs, steps = (check.attr(k) for k in ("staticLowerBound", "staticUpperBound", "staticStep"))
    region = check.op.regions[0] if check.op.regions else None
    n_out = len(check.result_types)
    n_iv = len(region.blocks[0].arguments) - n_out if region and region.blocks else 0
    if not all(isinstance(x, at.DenseArrayAttr) and len(x.values) == n_iv for x in (lbs, ubs, steps)):
        check.fail("C1", f"bounds and steps need {n_iv} entries, one per induction variable")
    seg = check.segments()
    # without a well-formed operandSegmentSizes there are no shared outputs to speak of
    outputs = check.operand_types_of("outputs") if seg is not None and len(seg) == 4 else []
    if check.result_types != outputs:
        check.fail("C2", "the results must match the shared outputs")


@rule(Scf.execute_region)
def execute_region(check: Check) -> None:
    region = check.op.regions[0] if check.op.regions else None
    yielded = _yielded(check, region)
    if yielded is not None and yielded != check.result_types:
        check.fail("C1", f"the region yields ({', '.join(t(x) for x in yielded)}) but the results are ({', '.join(t(x) for x in check.result_types)})")


@rule(Affine.apply, Affine.min, Affine.max)
def affine_apply(check: Check) -> None:
    amap = check.attr("map")
    if not isinstance(amap, at.AffineMapAttr):
        check.fail("C1", "map must be an affine map")
        return
    m = amap.value
    if m.num_dims + m.num_symbols != len(check.op.operands):
        check.fail("C1", f"the map takes {m.num_dims} dims and {m.num_symbols} symbols but {len(check.op.operands)} operands are given")
    if check.op.name == Affine.apply and len(m.results) != 1:
        check.fail("C2", f"affine.apply needs a map with one result, found {len(m.results)}")
    if check.op.name != Affine.apply and not m.results:
        check.fail("C2", "the map needs at least one result")


@rule(Func.func)
def func(check: Check) -> None:
    parent = check.v.stack[-1] if check.v.stack else None
    if parent is not None and parent.name != Builtin.module:
        # MLIR: "symbol's parent must have the SymbolTable trait"
        check.fail("C5", f"a function must be defined at the top level or in a builtin.module, not inside '{parent.name}'")
    fn = check.attr("function_type")
    ftype = check.v.rtype(fn.value) if isinstance(fn, at.TypeAttr) else None
    if not isinstance(ftype, ty.FunctionType):
        check.fail("C1", "function_type must be a function type")
        return
    region = check.op.regions[0] if check.op.regions else None
    if region is not None and region.blocks:
        args = [check.v.rtype(a.type) for a in region.blocks[0].arguments]
        inputs = [check.v.rtype(x) for x in ftype.inputs]
        if args != inputs:
            check.fail("C1", f"the entry block takes ({', '.join(t(x) for x in args)}) but the signature says ({', '.join(t(x) for x in inputs)})")
        results = [check.v.rtype(x) for x in ftype.results]
        for inner in check.op.walk():
            if inner.name == Func.return_ and [check.v.rtype(x) for x in inner.operand_types] != results:
                check.v.error(
                    "func.func.C3",
                    f"func.return returns ({', '.join(t(x) for x in inner.operand_types)}) but the function returns ({', '.join(t(x) for x in results)})",
                    inner.loc or check.loc,
                    (check.loc, "the function is defined here"),
                )


@rule(Func.call)
def call(check: Check) -> None:
    callee = check.attr("callee")
    name = callee.root if isinstance(callee, at.SymbolRefAttr) else None
    target = check.v.symbols.get(name) if name else None
    if target is None:
        check.fail("C1", f"no function named '@{name}' in the module")
        return
    fn = target.attributes.get("function_type")
    ftype = check.v.rtype(fn.value) if isinstance(fn, at.TypeAttr) else None
    if isinstance(ftype, ty.FunctionType) and (
        [check.v.rtype(x) for x in ftype.inputs] != check.operand_types or [check.v.rtype(x) for x in ftype.results] != check.result_types
    ):
        check.fail("C2", f"the call's types do not match @{name}'s signature {t(ftype)}", (target.loc, f"@{name} is defined here"))
