"""Exact integer-set checks with isl (islpy): access tiles inside their views, distributed
views partitioning their tensor, and the inter-tile communication rules.

Index values are modelled as affine functions of the tile ids (bounded by the grid),
loop induction variables (bounded by constant or affine loop bounds) and constants. A
value outside that model (a function argument, a loaded value) becomes an unbounded
parameter: if a property still holds, it is proven; if not, a note says it could not be
decided, never a silent pass. Every isl query is cached by its text, so the cost grows
with the number of distinct sets, not with their uses.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import islpy as isl

from ktir.dialects.names import Affine, Arith, Ktdp, Scf
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.isl_text import NotAffine, isl_constraints, isl_expr
from ktir.ir.types import KDYNAMIC

if TYPE_CHECKING:
    from ktir.verify.engine import Check


@functools.lru_cache(maxsize=4096)
def sample(text: str) -> dict[str, int] | None:
    """A point of the isl set `text` as {name: value}, or None when it is empty."""
    s = isl.Set(text)
    if s.is_empty():
        return None
    point = s.sample_point()
    space = s.get_space()
    out: dict[str, int] = {}
    for kind in (isl.dim_type.param, isl.dim_type.set):
        for i in range(space.dim(kind)):
            name = space.get_dim_name(kind, i) or f"x{i}"
            out[name] = int(point.get_coordinate_val(kind, i).to_python())
    return out


def set_text(names: list[str], constraints: list[str]) -> str:
    body = " and ".join(constraints) if constraints else "0 = 0"
    return f"{{ [{', '.join(names)}] : {body} }}"


# ---------------------------------------------------------------- index values


@dataclass
class Model:
    """Index values as isl expressions over named variables with known bounds."""

    check: Check
    variables: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    exact: bool = True  # False once some value had to be left unbounded
    labels: dict[str, str] = field(default_factory=dict)  # isl name -> what it stands for
    _cache: dict[str, str] = field(default_factory=dict)

    def fresh(self, label: str) -> str:
        name = f"v{len(self.variables)}"
        self.variables.append(name)
        self.labels[name] = label
        return name

    def value(self, ssa: str, depth: int = 0) -> str:
        cached = self._cache.get(ssa)
        if cached is not None:
            return cached
        out = self._value(ssa, depth)
        self._cache[ssa] = out
        return out

    def _unknown(self, ssa: str) -> str:
        self.exact = False
        return self.fresh(ssa)

    def _value(self, ssa: str, depth: int) -> str:
        info = self.check.value_info(ssa)
        if info is None or depth > 32:
            return self._unknown(ssa)
        op = info.op
        if op is None:
            return self._block_argument(ssa, info, depth)
        if op.name == Arith.constant:
            v = op.attributes.get("value")
            if isinstance(v, at.IntegerAttr):
                return str(v.value)
            return self._unknown(ssa)
        if op.name == Ktdp.get_compute_tile_id:
            name = self.fresh(f"{ssa} (tile id)")
            self.constraints.append(f"0 <= {name} < {self.check.v.grid[info.index] if info.index < len(self.check.v.grid) else 1}")
            return name
        if op.name in (Arith.addi, Arith.subi, Arith.muli):
            a, b = (self.value(x, depth + 1) for x in op.operands)
            if op.name == Arith.muli and not (_is_int(a) or _is_int(b)):
                return self._unknown(ssa)
            symbol = {Arith.addi: "+", Arith.subi: "-", Arith.muli: "*"}[op.name]
            return f"({a} {symbol} {b})"
        if op.name == Affine.apply:
            amap = self.check.v.rattr(op.attributes["map"])
            if not isinstance(amap, at.AffineMapAttr) or len(amap.value.results) != 1:
                return self._unknown(ssa)
            args = [self.value(x, depth + 1) for x in op.operands]
            nd = amap.value.num_dims
            try:
                return isl_expr(amap.value.results[0], args[:nd], args[nd:])
            except NotAffine:
                return self._unknown(ssa)
        return self._unknown(ssa)

    def _block_argument(self, ssa: str, info: object, depth: int) -> str:
        owner = getattr(info, "owner", None)
        index = getattr(info, "index", 0)
        if owner is not None and owner.name == Scf.for_ and index == 0:
            lb, ub, step = (self.value(x, depth + 1) for x in owner.operands[:3])
            name = self.fresh(f"{ssa} (loop index)")
            self.constraints.append(f"{lb} <= {name} < {ub}")
            if _is_int(step) and int(step) > 1:
                self.constraints.append(f"({name} - {lb}) mod {int(step)} = 0")
            return name
        return self._unknown(ssa)


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _describe(point: dict[str, int], model: Model, coords: list[str]) -> str:
    parts = [f"{model.labels[n]} = {point[n]}" for n in model.variables if n in point and n in model.labels]
    where = ", ".join(parts)
    coord = ", ".join(str(point.get(c, "?")) for c in coords)
    return f"({coord})" + (f" when {where}" if where else "")


# ---------------------------------------------------------------- views


def _view_domain(check: Check, view: str, model: Model, coords: list[str]) -> list[str] | None:
    """Constraints saying `coords` lie in the view's coordinate set (or its box)."""
    info = check.value_info(view)
    vtype = check.v.rtype(info.type) if info else None
    op = info.op if info else None
    if op is not None and op.name == Ktdp.construct_memory_view:
        sizes = check.v.rattr(op.attributes.get("static_sizes", at.UnitAttr()))
        if not isinstance(sizes, at.DenseArrayAttr) or len(sizes.values) != len(coords):
            return None  # an ill-formed view (reported on the view itself): nothing to check against
        # the dynamic sizes follow the offset operand, one per kDynamic entry
        n_dyn = sum(1 for v in sizes.values if v == KDYNAMIC)
        dyn = op.operands[1 : 1 + n_dyn]
        if len(dyn) != n_dyn:
            return None
        dyn_sizes = [model.value(x) for x in dyn]
        cset = op.attributes.get("coordinate_set")
        if cset is not None:
            cset = check.v.rattr(cset)
            if isinstance(cset, at.IntegerSetAttr):
                iset = cset.value
                if iset.num_dims != len(coords) or iset.num_symbols > len(dyn_sizes):
                    return None  # a set of the wrong rank (construct_memory_view.C5 reports it on the view)
                try:
                    return isl_constraints(iset, coords, dyn_sizes[: iset.num_symbols])
                except NotAffine:
                    return None
        dyn_iter = iter(dyn_sizes)
        return [f"0 <= {c} < {next(dyn_iter) if v == KDYNAMIC else v}" for c, v in zip(coords, sizes.values, strict=True)]
    if isinstance(vtype, ty.MemRefType | ty.TensorType) and len(vtype.shape) == len(coords) and all(d is not None for d in vtype.shape):
        return [f"0 <= {c} < {d}" for c, d in zip(coords, vtype.shape, strict=True)]
    return None


def check_access_tile(check: Check, tile_set: af.IntegerSet, base_map: af.AffineMap, result: ty.AccessTileType) -> None:
    model = Model(check)
    seg = check.segments() or [1, 0, 0]
    indices = check.op.operands[1 : 1 + seg[1]]
    symbols = check.op.operands[1 + seg[1] :]
    try:
        idx = [model.value(x) for x in indices]
        sym_vals = [model.value(x) for x in symbols]
        points = [f"p{i}" for i in range(tile_set.num_dims)]
        coords = [f"c{i}" for i in range(tile_set.num_dims)]
        nd = base_map.num_dims
        base = [isl_expr(e, idx[:nd], idx[nd:]) for e in base_map.results]
        inside = _view_domain(check, check.op.operands[0], model, coords)
        tile = isl_constraints(tile_set, points, sym_vals)
    except NotAffine as e:
        check.note(f"could not check that the access tile stays inside its view: {e}")
        return
    if inside is None:
        check.note("could not check that the access tile stays inside its view: the view's extent is not static")
        return
    names = model.variables + points + coords
    defs = [f"{c} = {b} + {p}" for c, b, p in zip(coords, base, points, strict=True)]
    outside = "not (" + (" and ".join(inside) or "0 = 0") + ")"
    # isl has no 'not' over conjunctions: the violation set is domain minus inside
    domain = set_text(names, model.constraints + tile + defs)
    inside_set = set_text(names, model.constraints + tile + defs + inside)
    violation = _difference(domain, inside_set)
    del outside
    if violation is None:
        return
    view_op = check.defining_op(check.op.operands[0])
    related = (view_op.loc if view_op else None, "the view is defined here")
    if model.exact:
        check.fail("C7", f"the access tile reaches coordinate {_describe(violation, model, coords)}, outside the view's coordinate set", related)
    else:
        check.note(
            f"could not prove the access tile stays inside its view: it would reach {_describe(violation, model, coords)}"
            " for some value not known statically"
        )


@functools.lru_cache(maxsize=4096)
def _difference(a: str, b: str) -> dict[str, int] | None:
    diff = isl.Set(a).subtract(isl.Set(b))
    return None if diff.is_empty() else _point(diff)


def check_set_in_box(check: Check, iset: af.IntegerSet, sizes: list[int], cid: str) -> None:
    """A view's coordinate set spans at most `size` coordinates in every dimension."""
    coords = [f"c{i}" for i in range(len(sizes))]
    try:
        text = set_text(coords, isl_constraints(iset, coords, []))
    except NotAffine as e:
        check.note(f"could not check the coordinate set against the sizes: {e}")
        return
    span = _spans(text)
    if span is None:
        check.note("could not check the coordinate set against the sizes: it is unbounded or empty")
        return
    for i, ((low, high), size) in enumerate(zip(span, sizes, strict=True)):
        if high - low + 1 > size:
            check.fail(cid, f"dimension {i} of the coordinate set spans {low}..{high} ({high - low + 1} coordinates), more than the size {size}")
            return


def check_tile_shape(check: Check, iset: af.IntegerSet, order: af.AffineMap | None, result_shape: tuple[int | None, ...],
                     what: str) -> None:
    """A tile's shape is its set's extents (max - min + 1 per dimension) in the order's
    permutation (spec/memory.md, access tiles). A warning, `<op>.shape`, when the set has no
    symbols: upstream accepts such text (its own tests have some), but constructing the tile
    is a `runtime.type` dynamic error."""
    if iset.num_symbols or order is None or not order.is_permutation():
        return
    dims = [f"d{i}" for i in range(iset.num_dims)]
    try:
        text = set_text(dims, isl_constraints(iset, dims, []))
    except NotAffine:
        return
    span = _spans(text)
    if span is None:
        return
    perm = [r.position for r in order.results if isinstance(r, af.Dim)]
    want = tuple(span[p][1] - span[p][0] + 1 for p in perm)
    if len(want) == len(result_shape) and any(r is not None and r != w for r, w in zip(result_shape, want, strict=True)):
        shown = "x".join("?" if r is None else str(r) for r in result_shape)
        check.v.emit("warning", f"{check.op.name}.shape",
                     f"the result shape {shown} differs from the extents of {what} in its order, "
                     f"{'x'.join(map(str, want))}: constructing the tile is a runtime.type error", check.loc)


@functools.lru_cache(maxsize=4096)
def _spans(text: str) -> list[tuple[int, int]] | None:
    s = isl.Set(text)
    if s.is_empty() or not s.is_bounded():
        return None
    out = []
    for i in range(s.dim(isl.dim_type.set)):
        low = s.dim_min_val(i).to_python() if hasattr(s, "dim_min_val") else None
        high = s.dim_max_val(i).to_python() if hasattr(s, "dim_max_val") else None
        if low is None or high is None:
            return None
        out.append((int(low), int(high)))
    return out


def check_distributed_view(check: Check, result: ty.MemRefType) -> None:
    if any(d is None for d in result.shape):
        check.note("could not check the distributed view's pieces: the result shape is not static")
        return
    coords = [f"c{i}" for i in range(result.rank)]
    pieces: list[str] = []
    for i, operand in enumerate(check.op.operands):
        model = Model(check)
        piece = check.defining_op(operand)
        has_set = piece is not None and piece.name == Ktdp.construct_memory_view and "coordinate_set" in piece.attributes
        inside = _view_domain(check, operand, model, coords) if has_set else None
        if inside is None or not model.exact or model.variables:
            check.note(f"could not check piece {i} of the distributed view: its coordinate set is not static")
            return
        pieces.append(set_text(coords, inside))
    clash = _overlapping_pair(tuple(pieces))
    if clash is not None:
        i, j = clash
        both = _intersection(pieces[i], pieces[j])
        where = ", ".join(str(both[c]) for c in coords) if both else "?"
        check.fail("C2", f"pieces {i} and {j} both hold coordinate ({where})")
        return
    box = set_text(coords, [f"0 <= {c} < {d}" for c, d in zip(coords, result.shape, strict=True)])
    union = " + ".join(f"({p})" for p in pieces) if pieces else "{ [] : 1 = 0 }"
    missing = _difference_union(box, tuple(pieces))
    if missing is not None:
        check.fail("C3", f"no piece holds coordinate ({', '.join(str(missing[c]) for c in coords)})")
    extra = _difference_union_rev(tuple(pieces), box)
    if extra is not None:
        check.fail("C3", f"a piece holds coordinate ({', '.join(str(extra[c]) for c in coords)}), outside the result's {result.shape}")
    del union


@functools.lru_cache(maxsize=1024)
def _overlapping_pair(pieces: tuple[str, ...]) -> tuple[int, int] | None:
    """Two pieces sharing a coordinate, found with one isl query: tag each piece's set with
    its index k, join the tagged map with its inverse, and look for k1 != k2."""
    if len(pieces) < 2:
        return None
    tagged: isl.Map | None = None
    for k, text in enumerate(pieces):
        piece = isl.Map.from_range(isl.Set(text)).insert_dims(isl.dim_type.in_, 0, 1)
        piece = piece.fix_val(isl.dim_type.in_, 0, isl.Val.int_from_si(piece.get_ctx(), k))
        tagged = piece if tagged is None else tagged.union(piece)
    assert tagged is not None
    pairs = tagged.apply_range(tagged.reverse())
    identity = isl.Map.identity(pairs.get_space())
    others = pairs.subtract(identity)
    if others.is_empty():
        return None
    point = others.wrap().sample_point()
    k1 = int(point.get_coordinate_val(isl.dim_type.set, 0).to_python())
    k2 = int(point.get_coordinate_val(isl.dim_type.set, 1).to_python())
    return (min(k1, k2), max(k1, k2))


@functools.lru_cache(maxsize=4096)
def _intersection(a: str, b: str) -> dict[str, int] | None:
    s = isl.Set(a).intersect(isl.Set(b))
    return None if s.is_empty() else _point(s)


def _union(pieces: tuple[str, ...]) -> isl.Set:
    u = isl.Set(pieces[0])
    for p in pieces[1:]:
        u = u.union(isl.Set(p))
    return u


@functools.lru_cache(maxsize=4096)
def _difference_union(box: str, pieces: tuple[str, ...]) -> dict[str, int] | None:
    s = isl.Set(box).subtract(_union(pieces)) if pieces else isl.Set(box)
    return None if s.is_empty() else _point(s)


@functools.lru_cache(maxsize=4096)
def _difference_union_rev(pieces: tuple[str, ...], box: str) -> dict[str, int] | None:
    if not pieces:
        return None
    s = _union(pieces).subtract(isl.Set(box))
    return None if s.is_empty() else _point(s)


def _point(s: isl.Set) -> dict[str, int]:
    point = s.sample_point()
    space = s.get_space()
    return {
        (space.get_dim_name(isl.dim_type.set, i) or f"x{i}"): int(point.get_coordinate_val(isl.dim_type.set, i).to_python())
        for i in range(space.dim(isl.dim_type.set))
    }


# ---------------------------------------------------------------- inter-tile


_UNBOUNDED = 2**40  # no grid attribute: tile ids are not bounded by a grid


def _tiles(check: Check) -> int:
    return math.prod(check.v.grid) if check.v.grid_given else _UNBOUNDED


def _set(check: Check, attr: at.Attribute | None) -> af.IntegerSet | None:
    a = check.v.rattr(attr) if attr is not None else None
    return a.value if isinstance(a, at.IntegerSetAttr) else None


def _static(iset: af.IntegerSet, dims: list[str], syms: list[str]) -> list[str] | None:
    try:
        return isl_constraints(iset, dims, syms)
    except NotAffine:
        return None


def _producer(check: Check) -> tuple[af.IntegerSet | None, object]:
    op = check.defining_op(check.op.operands[0])
    if op is None or op.name != Ktdp.inter_tile_produce:
        return None, None
    return _set(check, op.attributes.get("producer_tiles_per_group")), op


def _empty(names: list[str], constraints: list[str]) -> dict[str, int] | None:
    return sample(set_text(names, constraints))


def check_produce(check: Check, future: ty.TileFutureType) -> None:
    groups = _set(check, future.groups)
    producers = _set(check, check.attr("producer_tiles_per_group"))
    if groups is None or producers is None or groups.num_dims != 1 or producers.num_dims != 1:
        check.note("could not check producer groups: groups and producer_tiles_per_group must be affine sets over one dimension")
        return
    n = _tiles(check)
    g1 = _static(groups, ["g1"], [])
    g2 = _static(groups, ["g2"], [])
    p1 = _static(producers, ["i"], ["g1"][: producers.num_symbols])
    p2 = _static(producers, ["i"], ["g2"][: producers.num_symbols])
    if None in (g1, g2, p1, p2):
        check.note("could not check producer groups: the sets are not affine")
        return
    assert g1 is not None and g2 is not None and p1 is not None and p2 is not None
    clash = _empty(["i", "g1", "g2"], g1 + g2 + p1 + p2 + ["g1 < g2", f"0 <= i < {n}"])
    if clash is not None:
        check.fail("C3", f"tile {clash['i']} produces for both group {clash['g1']} and group {clash['g2']}")


def _consumer_sets(check: Check, future: ty.TileFutureType) -> tuple[list[str], list[str], list[str], list[str] | None] | None:
    """Constraints over (g), producers over (p)[g], consumers over (c)[g], deps over (p)[c, g]."""
    groups = _set(check, future.groups)
    producers, _ = _producer(check)
    consumers = _set(check, check.attr("consumer_tiles_per_group"))
    dep = check.attr("producer_dependency_per_consumer")
    deps = _set(check, dep) if dep is not None else None
    if groups is None or producers is None or consumers is None or (dep is not None and deps is None):
        check.note("could not check the inter-tile sets: the future does not come from inter_tile_produce, or a set is not an affine set")
        return None
    try:
        g = isl_constraints(groups, ["g"], [])
        p = isl_constraints(producers, ["p"], ["g"][: producers.num_symbols])
        c = isl_constraints(consumers, ["c"], ["g"][: consumers.num_symbols])
        d = isl_constraints(deps, ["p"], ["c", "g"][: deps.num_symbols]) if deps is not None else None
    except NotAffine:
        check.note("could not check the inter-tile sets: they are not affine")
        return None
    return g, p, c, d


def check_consume(check: Check, future: ty.TileFutureType) -> None:
    found = _consumer_sets(check, future)
    if found is None:
        return
    g, p, c, d = found
    n = _tiles(check)
    bound = [f"0 <= p < {n}", f"0 <= c < {n}"]
    if d is not None:
        _deps_are_producers(check, g, p, c, d, bound, "C2")
        alone = _empty(["c", "g"], g + c + [f"0 <= c < {n}"])
        if alone is not None:
            pairs = _empty(["p", "q", "c", "g"], g + c + d + _rename(d, "p", "q") + ["p < q"] + bound + [f"0 <= q < {n}"])
            if pairs is not None:
                check.fail("C3", f"consumer tile {pairs['c']} depends on two producers ({pairs['p']} and {pairs['q']}); a consume delivers from exactly one")
                return
            none = _difference(set_text(["c", "g"], g + c + [f"0 <= c < {n}"]), _project_deps(g, c, d, n))
            if none is not None:
                check.fail("C3", f"consumer tile {none['c']} of group {none['g']} has no producer")
        _every_producer_claimed(check, g, p, c, d, n)
    else:
        two = _empty(["p", "q", "g"], g + p + _rename(p, "p", "q") + ["p < q", f"0 <= p < {n}", f"0 <= q < {n}"])
        has_consumer = _empty(["c", "g"], g + c + [f"0 <= c < {n}"])
        if two is not None and has_consumer is not None:
            check.fail("C3", f"group {two['g']} has several producers (e.g. {two['p']} and {two['q']}); without producer_dependency_per_consumer a consume needs exactly one")


def check_reduce(check: Check, future: ty.TileFutureType) -> None:
    found = _consumer_sets(check, future)
    if found is None:
        return
    g, p, c, d = found
    n = _tiles(check)
    stray = _difference(set_text(["c", "g"], g + c + [f"0 <= c < {n}"]), set_text(["c", "g"], g + _rename(p, "p", "c") + [f"0 <= c < {n}"]))
    if stray is not None:
        check.fail("C3", f"consumer tile {stray['c']} of group {stray['g']} is not a producer of the group")
        return
    extra = _difference(set_text(["c", "g"], g + _rename(p, "p", "c") + [f"0 <= c < {n}"]), set_text(["c", "g"], g + c + [f"0 <= c < {n}"]))
    if extra is not None:
        two = _empty(["c", "e", "g"], g + c + _rename(c, "c", "e") + ["c < e", f"0 <= c < {n}", f"0 <= e < {n}"])
        if two is not None:
            check.fail("C4", f"group {two['g']}: the consumers are neither all the producers (tile {extra['c']} is missing) nor a single tile")
    if d is not None:
        _deps_are_producers(check, g, p, c, d, [f"0 <= p < {n}", f"0 <= c < {n}"], "C5")
        _every_producer_claimed(check, g, p, c, d, n)


def _rename(constraints: list[str], old: str, new: str) -> list[str]:
    import re

    pattern = re.compile(rf"\b{old}\b")
    return [pattern.sub(new, x) for x in constraints]


def _project_deps(g: list[str], c: list[str], d: list[str], n: int) -> str:
    return f"{{ [c, g] : exists (p : {' and '.join(g + c + d + [f'0 <= p < {n}'])}) }}"


def _deps_are_producers(check: Check, g: list[str], p: list[str], c: list[str], d: list[str], bound: list[str], cid: str) -> None:
    names = ["p", "c", "g"]
    missing = _difference(set_text(names, g + c + d + bound), set_text(names, g + c + d + p + bound))
    if missing is not None:
        check.fail(cid, f"consumer tile {missing['c']} depends on tile {missing['p']}, which is not a producer of group {missing['g']}")


def _every_producer_claimed(check: Check, g: list[str], p: list[str], c: list[str], d: list[str], n: int) -> None:
    claimed = f"{{ [p, g] : exists (c : {' and '.join(g + c + d + [f'0 <= c < {n}', f'0 <= p < {n}'])}) }}"
    unclaimed = _difference(set_text(["p", "g"], g + p + [f"0 <= p < {n}"]), claimed)
    if unclaimed is not None:
        _, producer = _producer(check)
        check.v.error(
            "ktdp.inter_tile_produce.C5",
            f"producer tile {unclaimed['p']} of group {unclaimed['g']} is not claimed by any consumer",
            check.loc,
            (getattr(producer, "loc", None), "the future is produced here"),
        )
