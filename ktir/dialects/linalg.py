"""The `linalg` dialect: structured ops on tensors (named ops, generic, map, reduce)."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, RegionSpec, Result, constraints
from ktir.dialects.constraints import (
    AFFINE_MAP,
    ANY,
    DENSE_I64_ARRAY,
    I64,
    INDEX,
    MEMREF,
    RANKED_TENSOR,
    STRING,
    AnyOf,
    AnyScalar,
    Derived,
    array_of,
    enum_attr,
)
from ktir.dialects.cost import CostClass
from ktir.dialects.structure import BROADCAST, FILL, GENERIC, REDUCE, TRANSPOSE, Structure, contraction, elementwise
from ktir.dialects.traits import ATTR_SIZED_OPERAND_SEGMENTS, DESTINATION_STYLE, PURE, TERMINATOR, VARIADIC_REGIONS

# the buffer form (memref operands, no results) parses too
_INS = Operand("inputs", AnyOf((RANKED_TENSOR, MEMREF, AnyScalar())), variadic=True)
_OUTS = Operand("outputs", AnyOf((RANKED_TENSOR, MEMREF)), variadic=True)
_RES = Result("results", Derived("the outputs' types", RANKED_TENSOR), variadic=True)
_DPS = constraints(
    "There is one result per output and each result has its output's type.",
    "Operand shapes agree as the op's indexing maps require.",
)


def _named(name: str, summary: str, accuracy: str = "exact", cost: CostClass = CostClass.VECTOR,
           structure: Structure | None = None) -> OpDef:
    return OpDef(
        name=f"linalg.{name}",
        format="LINALG_NAMED",
        summary=summary,
        operands=(_INS, _OUTS),
        results=(_RES,),
        # a named op may carry its scalar body (generic form), or not
        traits=frozenset({DESTINATION_STYLE, ATTR_SIZED_OPERAND_SEGMENTS, VARIADIC_REGIONS}),
        constraints=_DPS,
        accuracy=accuracy,
        cost=cost,
        structure=structure,
    )


# the scalar op each named elementwise op applies per element (float spelling)
_SCALAR = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "div": "arith.divf", "max": "arith.maximumf",
           "min": "arith.minimumf", "exp": "math.exp", "log": "math.log", "abs": "math.absf", "negf": "arith.negf",
           "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "tanh": "math.tanh", "reciprocal": "arith.divf",
           "square": "arith.mulf", "floor": "math.floor", "erf": "math.erf", "powf": "math.powf"}


def _elementwise(name: str, summary: str, accuracy: str, cost: CostClass = CostClass.VECTOR) -> OpDef:
    return _named(name, summary, accuracy, cost, elementwise(_SCALAR[name]))


_ELEMENTWISE = (
    ("add", "Elementwise addition.", "correctly-rounded"),
    ("sub", "Elementwise subtraction.", "correctly-rounded"),
    ("mul", "Elementwise multiplication.", "correctly-rounded"),
    ("div", "Elementwise division.", "correctly-rounded", CostClass.TRANSCENDENTAL),
    ("max", "Elementwise maximum.", "exact"),
    ("min", "Elementwise minimum.", "exact"),
    ("exp", "Elementwise exponential.", "1 ulp", CostClass.TRANSCENDENTAL),
    ("log", "Elementwise natural logarithm.", "1 ulp", CostClass.TRANSCENDENTAL),
    ("abs", "Elementwise absolute value.", "exact"),
    ("negf", "Elementwise float negation.", "exact"),
    ("sqrt", "Elementwise square root.", "correctly-rounded", CostClass.TRANSCENDENTAL),
    ("rsqrt", "Elementwise reciprocal square root.", "2 ulp", CostClass.TRANSCENDENTAL),
    ("tanh", "Elementwise hyperbolic tangent.", "2 ulp", CostClass.TRANSCENDENTAL),
    ("reciprocal", "Elementwise reciprocal.", "correctly-rounded"),
    ("square", "Elementwise square.", "correctly-rounded"),
    ("floor", "Elementwise floor.", "exact"),
    ("erf", "Elementwise error function.", "2 ulp", CostClass.TRANSCENDENTAL),
    ("powf", "Elementwise power.", "2 ulp", CostClass.TRANSCENDENTAL),
)

_REGION_BODY = RegionSpec("body", "Scalar computation per iteration point.", "one scalar per input and output", "linalg.yield")

OPS: tuple[OpDef, ...] = (
    *(_elementwise(*row) for row in _ELEMENTWISE),
    _named("fill", "Fill the output with a scalar.", structure=FILL),
    _named("copy", "Copy the input into the output.", structure=elementwise("")),
    _named(
        "matmul",
        "C += A x B; with `indexing_maps`, operands may be transposed or broadcast.",
        "matmul", CostClass.MATMUL, contraction("mk,kn->mn"),
    ),
    _named("batch_matmul", "Batched C[b] += A[b] x B[b].", "matmul", CostClass.MATMUL, contraction("bmk,bkn->bmn")),
    _named("matmul_transpose_a", "C += transpose(A) x B (older spelling).", "matmul", CostClass.MATMUL,
           contraction("km,kn->mn")),
    _named("matmul_transpose_b", "C += A x transpose(B) (older spelling).", "matmul", CostClass.MATMUL,
           contraction("mk,nk->mn")),
    _named("batch_matmul_transpose_b", "Batched C[b] += A[b] x transpose(B[b]).", "matmul", CostClass.MATMUL,
           contraction("bmk,bnk->bmn")),
    _named("dot", "Dot product of two vectors into a 0-d tensor.", "reduction", CostClass.MATMUL, contraction("k,k->")),
    _named("matvec", "Matrix-vector product.", "matmul", CostClass.MATMUL, contraction("mk,k->m")),
    OpDef(
        name="linalg.generic",
        structure=GENERIC,
        format="LINALG_GENERIC",
        cost=CostClass.VECTOR,
        summary="A perfectly nested loop over the iteration space with indexing maps per operand.",
        operands=(_INS, _OUTS),
        results=(_RES,),
        attributes=(
            Attr("indexing_maps", array_of(AFFINE_MAP, note="one per operand")),
            Attr("iterator_types", array_of(enum_attr("parallel", "reduction"))),
            Attr("doc", STRING, optional=True),
            Attr("library_call", STRING, optional=True),
        ),
        regions=(_REGION_BODY,),
        traits=frozenset({DESTINATION_STYLE, ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "There is one indexing map per input and output.",
            "Each indexing map has one input per iterator type and one result per operand dimension.",
            "The body has one argument per operand, of the operand's element type.",
            "The body yields one value per output, of the output's element type.",
            "The loop bounds implied by the maps and operand shapes agree.",
            "There is one result per tensor output and each result has its output's type.",
            "Each iterator type is `parallel` or `reduction`.",
        ),
        accuracy="reduction",
    ),
    OpDef(
        name="linalg.map",
        structure=Structure("elementwise"),
        format="LINALG_MAP",
        cost=CostClass.VECTOR,
        summary="Apply the body elementwise to the inputs, writing the output.",
        operands=(_INS, Operand("init", RANKED_TENSOR)),
        results=(_RES,),
        regions=(_REGION_BODY,),
        constraints=constraints(
            "All inputs and the init have the same shape.",
            "The body has one argument per input and yields one value of the init's element type.",
        ),
    ),
    OpDef(
        name="linalg.reduce",
        structure=REDUCE,
        format="LINALG_REDUCE",
        cost=CostClass.REDUCTION,
        summary="Reduce the inputs along `dimensions` with the body as combiner.",
        operands=(_INS, Operand("inits", RANKED_TENSOR, variadic=True)),
        results=(_RES,),
        attributes=(Attr("dimensions", DENSE_I64_ARRAY),),
        regions=(_REGION_BODY,),
        constraints=constraints(
            "`dimensions` are distinct, sorted and within the inputs' rank.",
            "Each init has the input's shape with the reduced dimensions removed.",
            "The body takes one input element and one accumulator per init and yields the accumulators.",
        ),
        accuracy="reduction",
    ),
    OpDef(
        name="linalg.broadcast",
        structure=BROADCAST,
        format="LINALG_DIMS",
        cost=CostClass.VECTOR,
        summary="Broadcast the input by adding the `dimensions` of the output.",
        operands=(Operand("input", RANKED_TENSOR), Operand("init", RANKED_TENSOR)),
        results=(_RES,),
        attributes=(Attr("dimensions", DENSE_I64_ARRAY),),
        constraints=constraints(
            "The input's rank plus the number of `dimensions` equals the init's rank.",
            "The input's dimensions equal the init's non-broadcast dimensions.",
        ),
    ),
    OpDef(
        name="linalg.transpose",
        structure=TRANSPOSE,
        format="LINALG_DIMS",
        cost=CostClass.VECTOR,
        summary="Permute the input's dimensions into the init.",
        operands=(Operand("input", RANKED_TENSOR), Operand("init", RANKED_TENSOR)),
        results=(_RES,),
        attributes=(Attr("permutation", DENSE_I64_ARRAY),),
        constraints=constraints(
            "`permutation` is a permutation of the input's dimensions.",
            "init dimension i equals input dimension permutation[i].",
        ),
    ),
    OpDef(
        name="linalg.yield",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Terminator of linalg bodies: the values for the outputs.",
        operands=(Operand("values", ANY, variadic=True),),
        traits=frozenset({TERMINATOR}),
    ),
    OpDef(
        name="linalg.index",
        format="LINALG_INDEX",
        cost=CostClass.FREE,
        summary="The current iteration index along `dim` inside a linalg body.",
        attributes=(Attr("dim", I64),),
        results=(Result("result", INDEX),),
        traits=frozenset({PURE}),
        constraints=constraints("`dim` is less than the enclosing op's number of loops."),
    ),
)
