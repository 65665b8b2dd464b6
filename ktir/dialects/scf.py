"""The `scf` dialect: structured control flow."""

from __future__ import annotations

from ktir.dialects.base import OpDef, Operand, RegionSpec, Result, constraints

_TERM = frozenset({"Terminator"})

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="scf.for",
        format="FOR",
        summary="A counted loop from lb (inclusive) to ub (exclusive) by step, carrying iter_args.",
        operands=(
            Operand("lower_bound", "index or integer"),
            Operand("upper_bound", "index or integer"),
            Operand("step", "index or integer"),
            Operand("init_args", "any", variadic=True),
        ),
        results=(Result("results", "the iter_args' types", variadic=True),),
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
        summary="Run the then or else region by an i1 condition; both yield the results.",
        operands=(Operand("condition", "i1"),),
        results=(Result("results", "any", variadic=True),),
        regions=(RegionSpec("then", "Runs when true.", "", "scf.yield"), RegionSpec("else", "Runs when false (optional without results).", "", "scf.yield")),
        constraints=constraints(
            "The condition is i1.",
            "With results, the else region is present.",
            "Both regions yield values of the result types.",
        ),
    ),
    OpDef(
        name="scf.while",
        format="WHILE",
        summary="A while loop: the before region computes the condition, the after region the body.",
        operands=(Operand("inits", "any", variadic=True),),
        results=(Result("results", "any", variadic=True),),
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
        summary="Terminator of scf.while's before region.",
        operands=(Operand("condition", "i1"), Operand("args", "any", variadic=True)),
        traits=_TERM,
        constraints=constraints("The condition is i1."),
    ),
    OpDef(
        name="scf.parallel",
        format="PARALLEL",
        summary="A parallel loop nest over a hyper-rectangle, with optional reductions.",
        operands=(
            Operand("lower_bounds", "index", variadic=True),
            Operand("upper_bounds", "index", variadic=True),
            Operand("steps", "index", variadic=True),
            Operand("init_vals", "any", variadic=True),
        ),
        results=(Result("results", "the init values' types", variadic=True),),
        regions=(RegionSpec("body", "The loop body.", "one index per dimension", "scf.reduce"),),
        traits=frozenset({"AttrSizedOperandSegments"}),
        constraints=constraints(
            "Lower bounds, upper bounds and steps have the same number of entries.",
            "The body has one index argument per dimension.",
            "The terminating scf.reduce has one operand per init value.",
        ),
    ),
    OpDef(
        name="scf.reduce",
        format="SCF_REDUCE",
        summary="Terminator of scf.parallel: combine values into the loop's reductions.",
        operands=(Operand("operands", "any", variadic=True),),
        regions=(RegionSpec("reductions", "One combiner per operand.", "two values of the operand's type", "scf.reduce.return"),),
        traits=_TERM,
        constraints=constraints("There is one combiner region per operand."),
    ),
    OpDef(
        name="scf.reduce.return",
        format="TERMINATOR",
        summary="Terminator of an scf.reduce combiner region.",
        operands=(Operand("result", "any"),),
        traits=_TERM,
    ),
    OpDef(
        name="scf.forall",
        format="FORALL",
        summary="A parallel loop over a hyper-rectangle whose iterations insert into shared outputs.",
        operands=(
            Operand("dynamic_lower_bound", "index", variadic=True),
            Operand("dynamic_upper_bound", "index", variadic=True),
            Operand("dynamic_step", "index", variadic=True),
            Operand("outputs", "ranked tensor", variadic=True),
        ),
        results=(Result("results", "the outputs' types", variadic=True),),
        regions=(RegionSpec("body", "The loop body.", "one index per dimension, then one per shared output", "scf.forall.in_parallel"),),
        traits=frozenset({"AttrSizedOperandSegments"}),
        constraints=constraints(
            "Bounds and steps have one entry per induction variable.",
            "There is one result per shared output, of matching type.",
        ),
    ),
    OpDef(
        name="scf.forall.in_parallel",
        format="IN_PARALLEL",
        summary="Terminator of scf.forall holding the parallel inserts.",
        regions=(RegionSpec("region", "tensor.parallel_insert_slice ops."),),
        traits=_TERM,
    ),
    OpDef(
        name="scf.yield",
        format="TERMINATOR",
        summary="Terminator of scf regions: the region's results.",
        operands=(Operand("results", "any", variadic=True),),
        traits=_TERM,
    ),
    OpDef(
        name="scf.execute_region",
        format="EXECUTE_REGION",
        summary="Run a region once and return what it yields.",
        results=(Result("results", "any", variadic=True),),
        regions=(RegionSpec("region", "The code to run.", "", "scf.yield"),),
        constraints=constraints("The region yields values of the result types."),
    ),
)
