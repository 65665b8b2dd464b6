"""Rules for the ktdp dialect (structure and types; integer-set facts are in ktir.verify.sets)."""

from __future__ import annotations

from ktir.dialects.access import AccessError, named
from ktir.dialects.constraints import shape
from ktir.dialects.names import Ktdp
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute
from ktir.ir.operation import Operation
from ktir.ir.types import KDYNAMIC
from ktir.verify import sets
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import elem, fmt_shape, is_signless_int, t


def _int_set(a: Attribute | None) -> af.IntegerSet | None:
    return a.value if isinstance(a, at.IntegerSetAttr) else None


def _map(a: Attribute | None) -> af.AffineMap | None:
    return a.value if isinstance(a, at.AffineMapAttr) else None


@rule(Ktdp.get_compute_tile_id)
def tile_id(check: Check) -> None:
    ids = check.result_types_of("ids")
    if not ids or any(r != ty.INDEX for r in ids):
        check.fail("C1", "get_compute_tile_id returns at least one value, all of type index")
        return
    rank = len(check.v.grid)
    dim = check.attr("dim")
    if dim is not None:
        dim = check.v.rattr(dim)
        if not isinstance(dim, at.IntegerAttr) or len(ids) != 1 or not 0 <= dim.value < rank:
            found = f"dim = {dim.value}" if isinstance(dim, at.IntegerAttr) else "a dim that is not an integer"
            check.fail("C3", f"with dim, get_compute_tile_id returns one coordinate along a dimension of the grid"
                             f" {list(check.v.grid)} (0 <= dim < {rank}); found {found} and {len(ids)} result(s)")
        return
    if len(ids) > rank:
        check.fail("C2", f"the grid has rank {rank} ({list(check.v.grid)}) but {len(ids)} tile ids are requested")


@rule(Ktdp.construct_memory_view)
def memory_view(check: Check) -> None:
    sizes, strides = check.attr("static_sizes"), check.attr("static_strides")
    if not isinstance(sizes, at.DenseArrayAttr) or not isinstance(strides, at.DenseArrayAttr):
        check.fail("C1", "static_sizes and static_strides are required")
        return
    if len(sizes.values) != len(strides.values):
        check.fail("C1", f"{len(sizes.values)} sizes but {len(strides.values)} strides")
        return
    seg = check.segments()
    n_dyn_sizes = sum(1 for v in sizes.values if v == KDYNAMIC)
    n_dyn_strides = sum(1 for v in strides.values if v == KDYNAMIC)
    if seg is None or seg != [1, n_dyn_sizes, n_dyn_strides]:
        check.fail("C2", f"expected 1 offset, {n_dyn_sizes} dynamic sizes and {n_dyn_strides} dynamic strides as operands")
    result: ty.Type | None = check.result_type("result")
    if not isinstance(result, ty.MemRefType) or result.rank != len(sizes.values):
        check.fail("C3", f"the result must be a memref of rank {len(sizes.values)}, found {t(result) if result else 'none'}")
        return
    for i, (dim, size) in enumerate(zip(result.shape, sizes.values, strict=True)):
        if size != KDYNAMIC and dim is not None and dim != size:
            check.fail("C4", f"result dimension {i} is {dim} but size {i} is {size}")
    cset = check.attr("coordinate_set")
    if cset is not None:
        iset = _int_set(cset)
        if iset is None or iset.num_dims != len(sizes.values) or iset.num_symbols > n_dyn_sizes:
            found = f"{iset.num_dims} dims and {iset.num_symbols} symbols" if iset else "not an affine_set"
            check.fail("C5", f"coordinate_set needs {len(sizes.values)} dims and at most {n_dyn_sizes} symbols, found {found}")
    space = check.attr("memory_space")
    if not isinstance(space, at.MemorySpaceAttr):
        check.fail("C6", "memory_space must be #ktdp.memory_space<global> or <ct_local[, ct_id = N]>")
    elif space.ct_id is not None and (space.kind != "ct_local" or space.ct_id < 0):
        check.fail("C6", "ct_id is only allowed with ct_local and must be non-negative")
    elif space.ct_id is not None and check.v.grid_given and space.ct_id >= _grid_size(check):
        check.fail("C6", f"ct_id = {space.ct_id} names no tile of the grid {list(check.v.grid)}")
    if any(v != KDYNAMIC and v < 0 for v in sizes.values) or any(v != KDYNAMIC and v <= 0 for v in strides.values):
        check.fail("C7", "static sizes must be non-negative and static strides positive")
        return
    iset = _int_set(cset) if cset is not None else None
    if iset is not None and iset.num_dims == len(sizes.values) and iset.num_symbols == 0 and KDYNAMIC not in sizes.values:
        sets.check_set_in_box(check, iset, [int(v) for v in sizes.values], "C8")
    if result.memory_space is not None and isinstance(space, at.MemorySpaceAttr) and check.v.rattr(result.memory_space) != space:
        check.fail("C9", f"the result type's memory space {t(result)} differs from memory_space")


def _grid_size(check: Check) -> int:
    n = 1
    for d in check.v.grid:
        n *= d
    return n


@rule(Ktdp.construct_distributed_memory_view)
def distributed_view(check: Check) -> None:
    result = check.result_type("result")
    if not isinstance(result, ty.MemRefType):
        check.fail("C1", "the result must be a memref")
        return
    for i, operand in enumerate(check.operand_types_of("memrefs")):
        if not isinstance(operand, ty.MemRefType) or operand.rank != result.rank or operand.element_type != result.element_type:
            check.fail("C1", f"input {i} ({t(operand)}) must be a memref of rank {result.rank} with element type {t(result.element_type)}")
            return
    sets.check_distributed_view(check, result)


@rule(Ktdp.construct_access_tile)
def access_tile(check: Check) -> None:
    errors_before = len(check.v.report.errors)
    tile_set = _int_set(check.attr("access_tile_set"))
    base_map = _map(check.attr("base_map"))
    order = _map(check.attr("access_tile_order"))
    seg = check.segments()
    if tile_set is None or base_map is None or seg is None or len(seg) != 3:
        check.fail("C1", "access_tile_set (an affine_set) and the base subscripts are required")
        return
    if tile_set.num_dims != len(base_map.results):
        check.fail("C1", f"access_tile_set has {tile_set.num_dims} dims but there are {len(base_map.results)} subscripts")
    # segments() checked the sizes add up, so the named groups are well defined from here on
    n_indices = len(check.named.operand_positions("indices"))
    n_symbols = len(check.named.operand_positions("symbol_operands"))
    if base_map.num_dims + base_map.num_symbols != n_indices:
        check.fail("C2", f"the subscripts use {base_map.num_dims + base_map.num_symbols} values but {n_indices} index operands are given")
    if tile_set.num_symbols != n_symbols:
        check.fail("C3", f"access_tile_set has {tile_set.num_symbols} symbols but {n_symbols} symbol operands are given")
    if order is None or order.num_dims != tile_set.num_dims or len(order.results) != tile_set.num_dims or not order.is_permutation():
        check.fail("C4", f"access_tile_order must be a permutation map over {tile_set.num_dims} dims")
    result = check.result_type("result")
    if not isinstance(result, ty.AccessTileType) or result.rank != tile_set.num_dims:
        check.fail("C5", f"the result must be an access tile of rank {tile_set.num_dims}, found {t(result) if result else 'none'}")
        return
    base = check.operand_type("base")
    base_shape = shape(base)
    if not isinstance(base, ty.MemRefType | ty.TensorType) or base_shape is None or len(base_shape) != len(base_map.results):
        check.fail("C6", f"the base {t(base)} must be a ranked memref or tensor with {len(base_map.results)} dimensions")
        return
    if len(check.v.report.errors) == errors_before:  # the set check needs consistent counts
        sets.check_tile_shape(check, tile_set, order, tuple(result.shape), "access_tile_set")
        sets.check_access_tile(check, tile_set, base_map, result)


@rule(Ktdp.construct_indirect_access_tile)
def indirect_tile(check: Check) -> None:
    seg = check.segments()
    kinds = check.attr("per_dim_subscript_kinds")
    maps = check.attr("per_dim_subscript_maps")
    region = check.op.regions[0] if check.op.regions else None
    if isinstance(kinds, at.ArrayAttr) and all(isinstance(k, at.BoolAttr) for k in kinds.elements):
        # generic form written by upstream MLIR: an array of bools
        kinds = at.DenseArrayAttr(element_type=ty.I1, values=tuple(k.value for k in kinds.elements if isinstance(k, at.BoolAttr)))
    if seg is None or len(seg) != 4 or not isinstance(kinds, at.DenseArrayAttr) or not isinstance(maps, at.ArrayAttr) or region is None:
        check.fail("C1", "subscripts, index views and the variables region are required")
        return
    base_shape = shape(check.operand_type("base"))
    if base_shape is None or len(base_shape) != len(kinds.values) or len(maps.elements) != len(kinds.values):
        check.fail("C1", f"the base has rank {len(base_shape or ())} but {len(kinds.values)} subscripts are given")
        return
    views = check.operand_types_of("indirect_memrefs")
    view_iter = iter(views)
    for i, (indirect, m) in enumerate(zip(kinds.values, maps.elements, strict=True)):
        amap = _map(check.v.rattr(m))
        if not indirect:
            continue
        view = next(view_iter, None)
        if view is None or not is_signless_int(view) or not isinstance(view, ty.MemRefType | ty.TensorType):
            check.fail("C2", f"subscript {i} reads indices from {t(view) if view else 'nothing'}, which must be a memref or tensor of integers or index")
            continue
        if amap is None or len(amap.results) != len(view.shape):
            check.fail("C3", f"subscript {i} indexes a rank-{len(view.shape)} index view with {len(amap.results) if amap else 0} expressions")
    variables = region.blocks[0].arguments if region.blocks else []
    vset = _int_set(check.attr("variables_space_set"))
    if vset is None or vset.num_dims != len(variables):
        check.fail("C4", f"variables_space_set needs one dimension per intermediate variable ({len(variables)})")
    order = _map(check.attr("variables_space_order"))
    if order is None or order.num_dims != len(variables) or not order.is_permutation():
        check.fail("C5", f"variables_space_order must be a permutation over {len(variables)} variables")
    result = check.result_type("result")
    if not isinstance(result, ty.AccessTileType) or result.rank != len(variables):
        check.fail("C6", f"the result must be an access tile of rank {len(variables)}")
        return
    if vset is not None and vset.num_dims == len(variables) and order is not None and order.num_dims == len(variables):
        sets.check_tile_shape(check, vset, order, tuple(result.shape), "variables_space_set")


def _tile_base(check: Check, tile_value: str) -> tuple[ty.Type | None, Operation | None]:
    """The resolved type of the view (its `base` operand) an access tile was built on, and the
    building op; (None, None) when the tile does not come straight from a tile constructor, or
    from one whose operands do not fit its definition (that op is reported on its own)."""
    op = check.defining_op(tile_value)
    if op is None or op.name not in (Ktdp.construct_access_tile, Ktdp.construct_indirect_access_tile):
        return None, None
    try:
        return check.v.rtype(named(op).operand_type("base")), op
    except AccessError:
        return None, None


def _tile_base_element(check: Check, tile_value: str) -> tuple[ty.Type | None, object]:
    """Element type of the view an access tile was built on, and the building op's location."""
    base, op = _tile_base(check, tile_value)
    return (elem(base), op.loc) if base is not None and op is not None else (None, None)


@rule(Ktdp.load)
def load(check: Check) -> None:
    tile = check.operand_type("access_tile")
    result: ty.Type | None = check.result_type("result")
    if not isinstance(tile, ty.AccessTileType):
        check.fail("C1", f"ktdp.load reads an access tile, found {t(tile)}")
        return
    if not isinstance(result, ty.TensorType) or result.shape != tile.shape:
        check.fail("C1", f"the result shape {fmt_shape(shape(result) if result else None)} must equal the access tile's shape {fmt_shape(tile.shape)}")
        return
    base_elem, where = _tile_base_element(check, check.operand("access_tile"))
    if base_elem is not None and base_elem != result.element_type:
        check.fail("C2", f"the result element type {t(result.element_type)} differs from the view's {t(base_elem)}",
                   (where, "the access tile is built here"))  # type: ignore[arg-type]


@rule(Ktdp.store)
def store(check: Check) -> None:
    data, tile = check.operand_type("data"), check.operand_type("access_tile")
    if not isinstance(tile, ty.AccessTileType) or not isinstance(data, ty.TensorType) or data.shape != tile.shape:
        check.fail("C1", f"the data shape {fmt_shape(shape(data))} must equal the access tile's shape {fmt_shape(shape(tile))}")
        return
    base_elem, where = _tile_base_element(check, check.operand("access_tile"))
    if base_elem is not None and base_elem != data.element_type:
        check.fail("C2", f"the data element type {t(data.element_type)} differs from the view's {t(base_elem)}",
                   (where, "the access tile is built here"))  # type: ignore[arg-type]
    base, tile_op = _tile_base(check, check.operand("access_tile"))
    if tile_op is not None and isinstance(base, ty.TensorType):
        check.fail("C3", "the access tile is built on a tensor; stores need a memref view", (tile_op.loc, "the access tile is built here"))


@rule(Ktdp.runtime_arg_extract)
def runtime_arg_extract(check: Check) -> None:
    kind = check.attr("kind")
    kinds = ("value", "granularity", "upperbound")
    if isinstance(kind, at.IntegerAttr) and 0 <= kind.value < 3:  # the upstream I32 enum, in generic form
        kind = at.EnumAttr(dialect="ktdp", name="runtime_arg_kind", value=kinds[kind.value])
    if not isinstance(kind, at.EnumAttr) or kind.value not in kinds:
        check.fail("C1", "kind must be value, granularity or upperbound")
        return
    arg = check.operand_type("input")
    if not isinstance(arg, ty.RuntimeArgType):
        check.fail("C2", f"the input must be a !ktdp.runtime_arg, found {t(arg)}")
        return
    if kind.value != "value" and getattr(arg, kind.value) is None:
        check.fail("C2", f"{t(arg)} has no {kind.value}")
        return
    # the value has the argument's own type; granularity and upperbound are index counts
    expected = check.v.rtype(arg.value_type) if kind.value == "value" else ty.INDEX
    result = check.result_type("result")
    if result != expected:
        check.fail("C3", f"extracting {kind.value} from {t(arg)} gives {t(expected)}, but the result type is {t(result)}")


def _future(check: Check) -> ty.TileFutureType | None:
    f = check.operand_type("future")
    return f if isinstance(f, ty.TileFutureType) else None


@rule(Ktdp.inter_tile_produce)
def produce(check: Check) -> None:
    region = check.op.regions[0] if check.op.regions else None
    future = check.result_type("future")
    if region is None or len(region.blocks) != 1 or [a.type for a in region.blocks[0].arguments] != [ty.INDEX]:
        check.fail("C1", "the body must be one block with one index argument (the group id)")
        return
    if not isinstance(future, ty.TileFutureType):
        check.fail("C2", "the result must be a !ktdp.tile_future")
        return
    ops = region.blocks[0].operations
    last = ops[-1] if ops else None
    if last is not None and last.name == Ktdp.yield_partial:
        yielded = [check.v.rtype(x) for x in last.operand_types]
        if yielded != list(future.partial_types):
            check.fail("C2", f"the body yields ({', '.join(t(x) for x in yielded)}) but the future's partial types are ({', '.join(t(x) for x in future.partial_types)})")
    producers_ok = _set_structure(check, "producer_tiles_per_group", "C6", "the tile id i", (1,), "the group index g")
    if _future_structure(check, future, "C7") and producers_ok:
        sets.check_produce(check, future)


def _set_structure(check: Check, name: str, cid: str, dim: str, symbols: tuple[int, ...], meaning: str) -> bool:
    """An inter-tile set attribute has one dimension (`dim`) and one of the allowed symbol
    counts; upstream's verifier checks the same. True when it does (or is absent)."""
    attr = check.attr(name)
    if attr is None:
        return True
    iset = _int_set(check.v.rattr(attr))
    if iset is None:
        check.fail(cid, f"{name} must be an affine_set")
        return False
    allowed = " or ".join(str(n) for n in symbols)
    if iset.num_dims != 1 or iset.num_symbols not in symbols:
        check.fail(cid, f"{name} must have one dimension ({dim}) and {allowed} symbol{'s' if symbols != (1,) else ''}"
                        f" ({meaning}), found {iset.num_dims} dimension(s) and {iset.num_symbols} symbol(s)")
        return False
    return True


def _future_structure(check: Check, future: ty.TileFutureType, cid: str) -> bool:
    """A tile future's groups set is `(g)` without symbols and its partials are ranked tensors."""
    groups = _int_set(check.v.rattr(future.groups)) if future.groups is not None else None
    ok = True
    if groups is None or groups.num_dims != 1 or groups.num_symbols != 0:
        found = f"{groups.num_dims} dimension(s) and {groups.num_symbols} symbol(s)" if groups else "no affine_set"
        check.fail(cid, f"the future's groups set must have one dimension (g) and no symbols, found {found}")
        ok = False
    partials = [check.v.rtype(x) for x in future.partial_types]
    wrong = [x for x in partials if not isinstance(x, ty.TensorType)]
    if not partials or wrong:
        what = f"{t(wrong[0])} is not" if wrong else "there are none; they must be one or more"
        check.fail(cid, f"the future's partial types must be ranked tensors: {what}" + (" a ranked tensor" if wrong else ""))
        ok = False
    return ok


@rule(Ktdp.inter_tile_consume)
def consume(check: Check) -> None:
    future = _future(check)
    if future is None or list(future.partial_types) != check.result_types_of("results"):
        check.fail("C1", "the results must have the future's partial types")
        return
    if _delivery_structure(check, "C4", "C5"):
        sets.check_consume(check, future)


def _reshaped(future: ty.TileFutureType | None, results: list[ty.Type]) -> str:
    """The hint for a result that only drops or adds unit dimensions of its partial (ktir-cpu's
    ring reductions return `tensor<128xf16>` for `tensor<1x128xf16>` partials)."""
    if future is None or len(results) != len(future.partial_types):
        return ""
    for part, res in zip(future.partial_types, results, strict=True):
        if (isinstance(res, ty.TensorType) and isinstance(part, ty.TensorType) and res != part
                and res.element_type == part.element_type
                and [d for d in res.shape if d != 1] == [d for d in part.shape if d != 1]):
            return (f" ({t(res)} for the partial {t(part)}: reduce to {t(part)}, then reshape it with "
                    f"tensor.collapse_shape or tensor.expand_shape)")
    return ""


def _delivery_structure(check: Check, consumers: str, deps: str) -> bool:
    """The consumer and dependency sets of a delivery op have upstream's shapes: (i)[g] and (p)[c] or (p)[c, g]."""
    ok = _set_structure(check, "consumer_tiles_per_group", consumers, "the tile id i", (1,), "the group index g")
    return _set_structure(check, "producer_dependency_per_consumer", deps, "the producer tile id p", (1, 2),
                          "the consumer tile id c, then optionally the group index g") and ok


@rule(Ktdp.inter_tile_reduce)
def reduce_(check: Check) -> None:
    future = _future(check)
    results = check.result_types_of("results")
    if future is None or list(future.partial_types) != results:
        check.fail("C1", "the results must have the future's partial types" + _reshaped(future, results))
        return
    _combiner(check, future, "C2")
    _identity(check, future, "C6")
    if _delivery_structure(check, "C7", "C8"):
        sets.check_reduce(check, future)


def _identity(check: Check, future: ty.TileFutureType, cid: str) -> None:
    """The identity operands and the combiner's arguments have the partial types: the
    combination starts from the identity, so a mismatch would only fail while running."""
    partials = [check.v.rtype(x) for x in future.partial_types]
    identity = [check.v.rtype(x) for x in check.operand_types_of("identity")]
    if identity != partials:
        check.fail(cid, f"the identity operands are ({', '.join(t(x) for x in identity)}) but the future's partial "
                        f"types are ({', '.join(t(x) for x in partials)})")
        return
    region = check.op.regions[0] if check.op.regions else None
    if region is None or not region.blocks:
        return
    args = [check.v.rtype(a.type) for a in region.blocks[0].arguments]
    if len(args) == 2 * len(partials) and args != partials + partials:
        check.fail(cid, f"the combiner's arguments are ({', '.join(t(x) for x in args)}); they must be the partial "
                        f"types twice ({', '.join(t(x) for x in partials + partials)})")


def _combiner(check: Check, future: ty.TileFutureType, cid: str) -> None:
    n = len(future.partial_types)
    region = check.op.regions[0] if check.op.regions else None
    if region is None or not region.blocks:
        check.fail(cid, "the combiner region is required")
        return
    args = region.blocks[0].arguments
    last = region.blocks[-1].operations[-1] if region.blocks[-1].operations else None
    if len(args) != 2 * n or last is None or len(last.operands) != n:
        check.fail(cid, f"the combiner takes {2 * n} arguments and yields {n} values")


@rule(Ktdp.inter_tile_gather, Ktdp.inter_tile_scatter, Ktdp.inter_tile_all_to_all, Ktdp.inter_tile_reduce_scatter)
def collective(check: Check) -> None:
    future = _future(check)
    name = check.op.name
    if name == Ktdp.inter_tile_all_to_all:
        split, concat = check.attr("split_dimensions"), check.attr("concat_dimensions")
        if not isinstance(split, at.DenseArrayAttr) or not isinstance(concat, at.DenseArrayAttr) or len(split.values) != len(concat.values):
            check.fail("C1", "split_dimensions and concat_dimensions must have the same length")
            return
        for part in future.partial_types if future is not None else ():
            rank = len(ps) if (ps := shape(part)) is not None else None
            bad = [int(d) for d in (*split.values, *concat.values) if rank is not None and not 0 <= int(d) < rank]
            if bad:  # the interpreter moves these axes: out of range, numpy raised AxisError
                check.fail("C1", f"dimension {bad[0]} is out of range for the partial {t(part)} of rank {rank}")
                return
        return
    if name == Ktdp.inter_tile_reduce_scatter and future is not None:
        _combiner(check, future, "C1")
        _identity(check, future, "C3")
    key = "gather_dimensions" if name == Ktdp.inter_tile_gather else "scatter_dimensions"
    dims = check.attr(key)
    cid = "C2" if name == Ktdp.inter_tile_reduce_scatter else "C1"
    if not isinstance(dims, at.DenseArrayAttr):
        check.fail(cid, f"{key} is required")
        return
    if future is None:
        return
    for part, res in zip(future.partial_types, check.result_types_of("results"), strict=False):
        ps, rs = shape(part), shape(res)
        if ps is None or rs is None or len(ps) != len(rs):
            check.fail(cid, f"result {t(res)} and partial {t(part)} must have the same rank")
            return
        for value in dims.values:
            d = int(value)
            if not 0 <= d < len(ps):
                check.fail(cid, f"dimension {d} is out of range for rank {len(ps)}")
                return
            big, small = (rs[d], ps[d]) if name == Ktdp.inter_tile_gather else (ps[d], rs[d])
            if big is not None and small is not None and (small == 0 or big % small != 0):
                what = "result" if name == Ktdp.inter_tile_gather else "partial"
                check.fail(cid, f"along dimension {d} the {what} size {big} is not a multiple of {small}")
                return
