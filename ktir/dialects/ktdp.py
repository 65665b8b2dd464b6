"""The `ktdp` dialect: compute tiles, memory views, access tiles, inter-tile communication."""

from __future__ import annotations

from ktir.dialects.base import Attr, OpDef, Operand, RegionSpec, Result, constraints
from ktir.dialects.constraints import (
    AFFINE_MAP,
    ANY,
    DENSE_I64_ARRAY,
    I64,
    INDEX,
    INT_OR_INDEX,
    INTEGER_SET,
    MEMREF,
    RANKED_TENSOR,
    AccessTile,
    AnyOf,
    AnyScalar,
    AttrKind,
    Derived,
    MemRefOf,
    RuntimeArg,
    TensorOf,
    TileFuture,
    array_of,
    enum_attr,
)
from ktir.dialects.cost import CostClass
from ktir.dialects.traits import (
    ATTR_SIZED_OPERAND_SEGMENTS,
    PURE,
    RECURSIVE_MEMORY_EFFECTS,
    TERMINATOR,
    VARIADIC_REGIONS,
)

_SET = INTEGER_SET

OPS: tuple[OpDef, ...] = (
    OpDef(
        name="ktdp.get_compute_tile_id",
        format="TILE_ID",
        cost=CostClass.FREE,
        summary="The coordinates of the executing compute tile in the grid.",
        description=(
            "Returns the coordinates of the compute tile executing this instance of the kernel in the"
            " enclosing function's `grid`: result `k` is the coordinate along grid dimension `k`, so fewer"
            " results than the grid's rank give the leading coordinates (upstream's meaning: on a grid"
            " `[32, 1]`, one result is the coordinate along dimension 0). With the integer attribute"
            " `dim = k` (written by ktir-cpu's Triton lowering), the one result is the coordinate along"
            " dimension `k`."
        ),
        results=(Result("ids", INDEX, variadic=True),),
        attributes=(Attr("dim", I64, optional=True),),
        traits=frozenset({PURE}),
        constraints=constraints(
            "There is at least one result and every result has type `index`.",
            "The number of results is at most the rank of the enclosing function's `grid` (default `[1]`).",
            "With `dim`, there is exactly one result and `0 <= dim <` the rank of the grid.",
        ),
        examples=(
            "%id = ktdp.get_compute_tile_id : index",
            "%i:2 = ktdp.get_compute_tile_id : index, index",
            "%j = ktdp.get_compute_tile_id {dim = 0} : index",
        ),
    ),
    OpDef(
        name="ktdp.construct_memory_view",
        format="MEMORY_VIEW",
        cost=CostClass.FREE,
        summary="Interpret a region of memory as a shaped view (no allocation, no data movement).",
        description=(
            "Builds a memref view at `offset` in the memory space `memory_space`, with the given"
            " sizes and strides (in elements) and the valid coordinates `coordinate_set`."
        ),
        operands=(
            Operand("offset", INDEX),
            Operand("sizes", INDEX, variadic=True),
            Operand("strides", INDEX, variadic=True),
        ),
        results=(Result("result", MEMREF),),
        attributes=(
            Attr("static_sizes", DENSE_I64_ARRAY),
            Attr("static_strides", DENSE_I64_ARRAY),
            Attr("memory_space", AttrKind("#ktdp.memory_space")),
            Attr("coordinate_set", _SET, optional=True),
        ),
        traits=frozenset({PURE, ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "`sizes` and `strides` have the same number of entries.",
            "The number of dynamic size and stride operands equals the number of `?` entries.",
            "The result memref's rank equals the number of sizes.",
            "Static result dimensions equal the static sizes.",
            "`coordinate_set`, when present, has one dimension per result dimension and at most one symbol per dynamic size (symbols bind to the dynamic sizes left to right).",
            "`memory_space` is a ktdp memory space; `ct_id` is only given with `ct_local`, and names a tile of the grid when the function has one.",
            "Static sizes are non-negative and static strides are positive.",
            "In every dimension the coordinate_set spans at most `size` coordinates (it may start anywhere: pieces of a distributed view use global coordinates).",
            "The result memref's memory space, when it has one, equals `memory_space`.",
        ),
    ),
    OpDef(
        name="ktdp.construct_distributed_memory_view",
        format="DISTRIBUTED_VIEW",
        cost=CostClass.FREE,
        summary="One logical view assembled from per-tile memory views.",
        description="The global index domain is the union of the inputs' coordinate sets.",
        operands=(Operand("memrefs", MEMREF, variadic=True),),
        results=(Result("result", MEMREF),),
        traits=frozenset({PURE}),
        constraints=constraints(
            "Every input is a memref with the result's element type and rank.",
            "The inputs' coordinate sets are pairwise disjoint.",
            "The union of the inputs' coordinate sets covers the result's index space.",
        ),
    ),
    OpDef(
        name="ktdp.construct_access_tile",
        format="ACCESS_TILE",
        cost=CostClass.FREE,
        summary="A set of coordinates of a view: base subscripts plus an integer set.",
        operands=(
            Operand("base", AnyOf((MEMREF, RANKED_TENSOR))),
            Operand("indices", INDEX, variadic=True),
            Operand("symbol_operands", INDEX, variadic=True),
        ),
        results=(Result("result", AccessTile()),),
        attributes=(
            Attr("base_map", AFFINE_MAP),
            Attr("access_tile_set", _SET),
            Attr("access_tile_order", AttrKind("AffineMap", note="permutation")),
        ),
        traits=frozenset({PURE, ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "`access_tile_set` has as many dimensions as `base_map` has results.",
            "`base_map` has as many inputs as there are index operands.",
            "`access_tile_set` has as many symbols as there are symbol operands.",
            "`access_tile_order` has as many inputs and results as the set has dimensions and is a permutation.",
            "The result's rank equals the set's number of dimensions.",
            "The base's rank equals the number of subscripts.",
            "Every coordinate of the tile lies inside the base view's coordinate set.",
        ),
    ),
    OpDef(
        name="ktdp.construct_indirect_access_tile",
        format="INDIRECT_TILE",
        cost=CostClass.FREE,
        summary="An access tile whose subscripts are read from index views (gather/scatter).",
        operands=(
            Operand("base", AnyOf((MEMREF, RANKED_TENSOR))),
            Operand("indirect_memrefs", MemRefOf(INT_OR_INDEX), variadic=True),
            Operand("captured_variables", INDEX, variadic=True),
            Operand("symbol_operands", INDEX, variadic=True),
        ),
        results=(Result("result", AccessTile()),),
        attributes=(
            Attr("per_dim_subscript_kinds", AttrKind("DenseBoolArrayAttr", note="true = indirect")),
            Attr("per_dim_subscript_maps", array_of(AFFINE_MAP)),
            Attr("variables_space_set", _SET),
            Attr("variables_space_order", AttrKind("AffineMap", note="permutation")),
        ),
        regions=(RegionSpec("variables", "The intermediate variables.", "index per variable", "ktdp.region_terminator"),),
        traits=frozenset({ATTR_SIZED_OPERAND_SEGMENTS}),
        constraints=constraints(
            "There is one subscript per dimension of the base.",
            "Each indirect subscript names an index view whose element type is an integer or index.",
            "Each indirect subscript has one expression per dimension of its index view.",
            "`variables_space_set` has one dimension per intermediate variable.",
            "`variables_space_order` is a permutation over the intermediate variables.",
            "The result's rank equals the number of intermediate variables.",
        ),
    ),
    OpDef(
        name="ktdp.load",
        format="LOAD",
        cost=CostClass.DATA_MOVEMENT,
        summary="Gather the elements of an access tile into a tensor.",
        operands=(Operand("access_tile", AccessTile()),),
        results=(Result("result", RANKED_TENSOR),),
        constraints=constraints(
            "The result shape equals the access tile's shape.",
            "The result element type equals the element type of the tile's base view.",
        ),
        examples=("%t = ktdp.load %tile : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>",),
    ),
    OpDef(
        name="ktdp.store",
        format="STORE",
        cost=CostClass.DATA_MOVEMENT,
        summary="Scatter a tensor into the elements of an access tile.",
        operands=(Operand("data", RANKED_TENSOR), Operand("access_tile", AccessTile())),
        constraints=constraints(
            "The data shape equals the access tile's shape.",
            "The data element type equals the element type of the tile's base view.",
            "The access tile's base is a memref (tensors are values and cannot be stored to).",
        ),
    ),
    OpDef(
        name="ktdp.runtime_arg_extract",
        format="RUNTIME_ARG_EXTRACT",
        cost=CostClass.FREE,
        summary="Read the value, granularity or upper bound of a runtime argument.",
        operands=(Operand("input", RuntimeArg()),),
        results=(Result("result", Derived("the runtime argument's value type")),),
        attributes=(Attr("kind", enum_attr("value", "granularity", "upperbound")),),
        traits=frozenset({PURE}),
        constraints=constraints(
            "`kind` is one of value, granularity, upperbound.",
            "The extracted field is present in the runtime argument's type.",
            "The result type is the runtime argument's value type for `value`, and `index` for `granularity` and `upperbound`.",
        ),
    ),
    OpDef(
        name="ktdp.region_terminator",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Terminator of the indirect access tile's region.",
        traits=frozenset({TERMINATOR}),
    ),
    OpDef(
        name="ktdp.inter_tile_produce",
        format="PRODUCE",
        cost=CostClass.COMMUNICATION,
        summary="Each producing tile contributes partial values to a tile future.",
        attributes=(Attr("producer_tiles_per_group", AttrKind("affine_set", note="IntegerSet attribute over (i)[g]")),),
        results=(Result("future", TileFuture()),),
        regions=(RegionSpec("body", "Computes the partial values.", "%gid: index", "ktdp.yield_partial"),),
        traits=frozenset({RECURSIVE_MEMORY_EFFECTS}),
        constraints=constraints(
            "The body has one block with one `index` argument (the group id).",
            "The yielded values' types equal the future's partial types.",
            "Producer groups are pairwise disjoint.",
            "The future has exactly one use.",
            "Every producer is claimed by some consumer.",
            "`producer_tiles_per_group` has one dimension (the tile id `i`) and one symbol (the group index `g`).",
            "The future's `groups` set has one dimension (`g`) and no symbols, and its partial types are one or more"
            " ranked tensor types.",
        ),
    ),
    OpDef(
        name="ktdp.yield_partial",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Terminator of inter_tile_produce: the tile's partial values.",
        operands=(Operand("values", RANKED_TENSOR, variadic=True),),
        traits=frozenset({TERMINATOR}),
        options={"attr_dict_last": True},
    ),
    OpDef(
        name="ktdp.inter_tile_consume",
        format="CONSUME",
        cost=CostClass.COMMUNICATION,
        summary="Deliver producers' partial values to consumer tiles (broadcast or routing).",
        operands=(Operand("future", TileFuture()),),
        results=(Result("results", Derived("the future's partial types"), variadic=True),),
        attributes=(
            Attr("consumer_tiles_per_group", _SET),
            Attr("producer_dependency_per_consumer", AttrKind("affine_set", note="IntegerSet attribute over (p)[c] or (p)[c, g]"), optional=True),
        ),
        constraints=constraints(
            "The result types equal the future's partial types.",
            "Declared dependencies are real producers.",
            "Each consumer tile has exactly one source.",
            "`consumer_tiles_per_group` has one dimension (the tile id `i`) and one symbol (the group index `g`).",
            "`producer_dependency_per_consumer`, when given, has one dimension (the producer tile id `p`) and one"
            " symbol (`c`, the consumer tile id) or two (`c`, `g`).",
        ),
    ),
    OpDef(
        name="ktdp.inter_tile_reduce",
        format="REDUCE",
        cost=CostClass.COMMUNICATION,
        summary="Combine producers' partial values (all-reduce or reduce-to-one).",
        operands=(Operand("future", TileFuture()), Operand("identity", AnyOf((AnyScalar(), TensorOf())), variadic=True)),
        results=(Result("results", Derived("the future's partial types"), variadic=True),),
        attributes=(
            Attr("consumer_tiles_per_group", _SET),
            Attr("producer_dependency_per_consumer", _SET, optional=True),
        ),
        regions=(RegionSpec("combiner", "Combines two partial values.", "2N arguments (lhs..., rhs...)", "ktdp.yield_reduced"),),
        accuracy="reduction",
        constraints=constraints(
            "The result types equal the future's partial types.",
            "The combiner takes 2N arguments for N partial types and yields N values.",
            "Consumers are a subset of the producers.",
            "Consumers equal the producers, or there is a single consumer.",
            "Declared dependencies are real producers.",
            "There is one identity operand per partial type, of that type, and the combiner's 2N arguments have the"
            " partial types (left values, then right values).",
            "`consumer_tiles_per_group` has one dimension (the tile id `i`) and one symbol (the group index `g`).",
            "`producer_dependency_per_consumer`, when given, has one dimension (the producer tile id `p`) and one"
            " symbol (`c`, the consumer tile id) or two (`c`, `g`).",
        ),
    ),
    OpDef(
        name="ktdp.yield_reduced",
        format="TERMINATOR",
        cost=CostClass.FREE,
        summary="Terminator of the inter_tile_reduce combiner.",
        operands=(Operand("values", ANY, variadic=True),),
        traits=frozenset({TERMINATOR}),
        options={"attr_dict_last": True},
    ),
    OpDef(
        name="ktdp.inter_tile_gather",
        format="COLLECTIVE",
        cost=CostClass.COMMUNICATION,
        traits=frozenset({VARIADIC_REGIONS}),  # the combiner region is optional
        summary="(Designed) Concatenate producers' partial values along `gather_dimensions`.",
        operands=(Operand("future", TileFuture()),),
        results=(Result("results", RANKED_TENSOR, variadic=True),),
        attributes=(Attr("consumer_tiles_per_group", _SET), Attr("gather_dimensions", DENSE_I64_ARRAY)),
        constraints=constraints(
            "Each result has its partial's rank; along each gathered dimension its size is a multiple of the partial's.",
        ),
    ),
    OpDef(
        name="ktdp.inter_tile_scatter",
        format="COLLECTIVE",
        cost=CostClass.COMMUNICATION,
        traits=frozenset({VARIADIC_REGIONS}),  # the combiner region is optional
        summary="(Designed) Split a producer's value along `scatter_dimensions` across consumers.",
        operands=(Operand("future", TileFuture()),),
        results=(Result("results", RANKED_TENSOR, variadic=True),),
        attributes=(Attr("consumer_tiles_per_group", _SET), Attr("scatter_dimensions", DENSE_I64_ARRAY)),
        constraints=constraints(
            "Each result has its partial's rank; along each scattered dimension the partial's size is a multiple of the result's."
        ),
    ),
    OpDef(
        name="ktdp.inter_tile_all_to_all",
        format="COLLECTIVE",
        cost=CostClass.COMMUNICATION,
        traits=frozenset({VARIADIC_REGIONS}),  # the combiner region is optional
        summary="(Designed) Split along `split_dimensions`, exchange, concatenate along `concat_dimensions`.",
        operands=(Operand("future", TileFuture()),),
        results=(Result("results", RANKED_TENSOR, variadic=True),),
        attributes=(
            Attr("consumer_tiles_per_group", _SET),
            Attr("split_dimensions", DENSE_I64_ARRAY),
            Attr("concat_dimensions", DENSE_I64_ARRAY),
        ),
        constraints=constraints("`split_dimensions` and `concat_dimensions` have the same length."),
    ),
    OpDef(
        name="ktdp.inter_tile_reduce_scatter",
        format="COLLECTIVE",
        cost=CostClass.COMMUNICATION,
        traits=frozenset({VARIADIC_REGIONS}),  # the combiner region is optional
        summary="(Designed) Reduce producers' values, then scatter the result along `scatter_dimensions`.",
        operands=(Operand("future", TileFuture()), Operand("identity", AnyOf((AnyScalar(), TensorOf())), variadic=True)),
        results=(Result("results", RANKED_TENSOR, variadic=True),),
        attributes=(Attr("consumer_tiles_per_group", _SET), Attr("scatter_dimensions", DENSE_I64_ARRAY)),
        regions=(RegionSpec("combiner", "Combines two partial values.", "2N arguments", "ktdp.yield_reduced"),),
        accuracy="reduction",
        constraints=constraints(
            "The combiner takes 2N arguments for N partial types and yields N values.",
            "Each result has its partial's rank; along each scattered dimension the partial's size is a multiple of the result's.",
            "There is one identity operand per partial type, of that type, and the combiner's 2N arguments have the"
            " partial types (left values, then right values).",
        ),
    ),
)
