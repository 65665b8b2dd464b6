"""The `scf` dialect: structured control flow."""

from __future__ import annotations

from ktir.dialects.base import OpDef, Operand, RegionSpec, Result, constraints
from ktir.dialects.constraints import ANY, I1, INDEX, RANKED_TENSOR, AnyOf, Derived, OperandIs, SignlessInteger
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import ATTR_SIZED_OPERAND_SEGMENTS, TERMINATOR, VARIADIC_REGIONS

_TERM = frozenset({TERMINATOR})

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="scf.for",
        format="FOR",
        cost=CostClass.CONTROL,
        summary="A counted loop from lb (inclusive) to ub (exclusive) by step, carrying iter_args.",
        operands=(
            Operand("lower_bound", AnyOf((INDEX, SignlessInteger()))),
            Operand("upper_bound", AnyOf((INDEX, SignlessInteger()))),
            Operand("step", AnyOf((INDEX, SignlessInteger()))),
            Operand("init_args", ANY, variadic=True),
        ),
        results=(Result("results", Derived("the iter_args' types"), variadic=True),),
        regions=(RegionSpec("body", "The loop body.", "induction variable, then one per iter_arg", "scf.yield"),),
        constraints=constraints(
            "Bounds and step have the same type (index or a signless integer) as the induction variable.",
            "The body's arguments are the induction variable and one per init value, of matching types.",
            "The body yields one value per init value, of matching types.",
            "There is one result per init value, of matching types.",
            "A constant step is positive.",
        ),
    ),
    OpDef(
        name="scf.if",
        format="IF",
        cost=CostClass.CONTROL,
        summary="Run the then or else region by an i1 condition; both yield the results.",
        operands=(Operand("condition", I1),),
        results=(Result("results", ANY, variadic=True),),
        regions=(RegionSpec("then", "Runs when true.", "", "scf.yield"), RegionSpec("else", "Runs when false (optional without results).", "", "scf.yield")),
        constraints=constraints(
            OperandIs("condition", I1, stops=False),
            "With results, the else region is present.",
            "Both regions yield values of the result types.",
        ),
    ),
    OpDef(
        name="scf.while",
        format="WHILE",
        cost=CostClass.CONTROL,
        summary="A while loop: the before region computes the condition, the after region the body.",
        operands=(Operand("inits", ANY, variadic=True),),
        results=(Result("results", ANY, variadic=True),),
        regions=(
            RegionSpec("before", "Computes the condition.", "one per init", "scf.condition"),
            RegionSpec("after", "The loop body.", "the values passed by scf.condition", "scf.yield"),
        ),
        constraints=constraints(
            "The before region's arguments match the init types.",
            "scf.condition forwards values whose types match the after region's arguments and the results.",
            "The after region yields values matching the before region's arguments.",
        ),
    ),
    OpDef(
        name="scf.condition",
        format="CONDITION",
        cost=CostClass.FREE,
        summary="Terminator of scf.while's before region.",
        operands=(Operand("condition", I1), Operand("args", ANY, variadic=True)),
        traits=_TERM,
        constraints=constraints(OperandIs("condition", I1)),
    ),
    OpDef(
        name="scf.parallel",
        format="PARALLEL",
        cost=CostClass.CONTROL,
        summary="A parallel loop nest over a hyper-rectangle, with optional reductions.",
        operands=(
            Operand("lower_bounds", INDEX, variadic=True),
            Operand("upper_bounds", INDEX, variadic=True),
            Operand("steps", INDEX, variadic=True),
            Operand("init_vals", ANY, variadic=True),
        ),
        results=(Result("results", Derived("the init values' types"), variadic=True),),
        regions=(RegionSpec("body", "The loop body.", "one index per dimension", "scf.reduce"),),
        traits=frozenset({ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "Lower bounds, upper bounds and steps have the same number of entries.",
            "The body has one index argument per dimension.",
            "The terminating scf.reduce has one operand per init value.",
        ),
    ),
    OpDef(
        name="scf.reduce",
        format="SCF_REDUCE",
        cost=CostClass.FREE,
        summary="Terminator of scf.parallel: combine values into the loop's reductions.",
        operands=(Operand("operands", ANY, variadic=True),),
        regions=(RegionSpec("reductions", "One combiner per operand.", "two values of the operand's type", "scf.reduce.return"),),
        traits=frozenset({TERMINATOR, VARIADIC_REGIONS}),
        constraints=constraints("There is one combiner region per operand."),
    ),
    OpDef(
        name="scf.reduce.return",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Terminator of an scf.reduce combiner region.",
        operands=(Operand("result", ANY),),
        traits=_TERM,
    ),
    OpDef(
        name="scf.forall",
        format="FORALL",
        cost=CostClass.CONTROL,
        summary="A parallel loop over a hyper-rectangle whose iterations insert into shared outputs.",
        operands=(
            Operand("dynamic_lower_bound", INDEX, variadic=True),
            Operand("dynamic_upper_bound", INDEX, variadic=True),
            Operand("dynamic_step", INDEX, variadic=True),
            Operand("outputs", RANKED_TENSOR, variadic=True),
        ),
        results=(Result("results", Derived("the outputs' types", RANKED_TENSOR), variadic=True),),
        regions=(RegionSpec("body", "The loop body.", "one index per dimension, then one per shared output", "scf.forall.in_parallel"),),
        traits=frozenset({ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "Bounds and steps have one entry per induction variable.",
            "There is one result per shared output, of matching type.",
        ),
    ),
    OpDef(
        name="scf.forall.in_parallel",
        format="IN_PARALLEL",
        cost=CostClass.FREE,
        summary="Terminator of scf.forall holding the parallel inserts.",
        regions=(RegionSpec("region", "tensor.parallel_insert_slice ops."),),
        traits=_TERM,
    ),
    OpDef(
        name="scf.yield",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Terminator of scf regions: the region's results.",
        operands=(Operand("results", ANY, variadic=True),),
        traits=_TERM,
    ),
    OpDef(
        name="scf.execute_region",
        format="EXECUTE_REGION",
        cost=CostClass.CONTROL,
        summary="Run a region once and return what it yields.",
        results=(Result("results", ANY, variadic=True),),
        regions=(RegionSpec("region", "The code to run.", "", "scf.yield"),),
        constraints=constraints("The region yields values of the result types."),
    ),
)
