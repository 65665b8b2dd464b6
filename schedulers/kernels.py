"""Recognising kernel classes in a KTIR function, with the numbers the cost model needs.

Three classes are recognised from a module:

- `matmul`: one `linalg.matmul` whose operands are loaded from two global views A (M x K)
  and B (K x N), accumulated in f32 and stored (after an optional `arith.truncf`) to C.
- `rowwise`: a loop `scf.for %r = %tid * B to R step S` whose body loads blocks of B
  leading rows from global views, computes on them (elementwise ops, row reductions) and
  stores blocks of B rows (softmax, RMSNorm, LayerNorm, RoPE, the single-tile kernels of
  `schedulers.naive`). Tensors loaded before the loop are per-tile resident data.
- `attention`: flash-style attention (`AttentionKernel`), recognised from a module by
  `schedulers.emit_attention.match_attention`.

Everything else is `unrecognized`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Affine, Arith, Func, Ktdp, Linalg, Scf, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation
from ktir.targets.from_interp import TRANSCENDENTAL

from .api import ScheduleError

# Ops that move no data and compute nothing (for the per-row work count).
_FREE = frozenset({Tensor.empty, Ktdp.construct_access_tile, Ktdp.construct_memory_view, Arith.constant,
                   Ktdp.load, Ktdp.store, Arith.addi, Arith.muli, Arith.subi, Arith.minsi, Scf.yield_})
_DYNAMIC = -9223372036854775808  # MLIR's kDynamic in static_sizes


def dtype_name(t: ty.Type) -> str:
    if isinstance(t, ty.FloatType):
        return t.kind
    if isinstance(t, ty.IntegerType):
        return f"i{t.width}"
    return "index"


def itemsize(t: ty.Type) -> int:
    if isinstance(t, ty.FloatType):
        return max(1, t.width // 8)
    if isinstance(t, ty.IntegerType):
        return max(1, t.width // 8)
    return 8


@dataclass
class Operand:
    """One global array the kernel reads or writes."""

    arg: str  # function argument name, without %
    dtype: str
    itemsize: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] = ()  # the view's strides in elements (row-major when empty)
    offset: int = 0  # elements from the argument's address to the view's first element

    @property
    def layout(self) -> tuple[int, ...]:
        """The strides to emit for the view: the input's, or row-major."""
        if self.strides:
            return self.strides
        return tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))


@dataclass
class MatmulKernel:
    M: int
    N: int
    K: int
    a: Operand
    b: Operand
    c: Operand
    name: str
    kind: str = "matmul"
    init: float = 0.0  # every element of C starts from it: C = init + A B

    @property
    def macs(self) -> int:
        return self.M * self.N * self.K


@dataclass
class RowKernel:
    R: int
    block: int  # B: leading rows per block in the input
    streamed: list[Operand]  # loaded inside the row loop, shape = per-row trailing shape
    resident: list[Operand]  # loaded once per tile before the loop (whole shape)
    outputs: list[Operand]  # stored inside the row loop, shape = per-row trailing shape
    vector_per_row: dict[str, float]  # dtype -> simple vector elements per row
    transcendental_per_row: dict[str, float]  # dtype -> transcendental elements per row
    vector_ops: int  # vector ops per block (each pays the unit's startup)
    live_bytes_per_row: int  # scratchpad bytes of every tensor the loop body creates, per row
    resident_bytes: int  # scratchpad bytes of the tensors created before the loop
    name: str
    kind: str = "rowwise"
    # one vector pass per op, as the timeline charges it: (dtype of its first tensor, transcendental, elements per row)
    passes: list[tuple[str, bool, float]] = field(default_factory=list)
    # why the block of B rows must be kept (the loop index is used as data: a block of other
    # rows would give all its rows one index); None when blocks may be resized
    fixed_block: str | None = None


@dataclass
class AttentionKernel:
    """softmax(Q K^T * scale + mask) V per KV head; query heads of one group share the KV rows.

    The rows of a KV head stack its `group` query heads head-major: row r is query head
    r // tokens of the group at token r mod tokens (Q `[query heads, tokens, D]` read as
    `[KV heads, group x tokens, D]`, the same memory). Causal: the query at token t sees the
    keys 0..t, so causal kernels have tokens == kv_len.
    """

    kv_heads: int
    rows: int  # query rows per KV head: group size x query tokens
    kv_len: int
    head_dim: int
    dtype: str = "bf16"
    causal: bool = False
    name: str = "attention"
    kind: str = "attention"
    max_kv_split: int = 32  # the largest KV split (over tiles) the schedule space may use
    group: int = 1  # query heads per KV head, stacked head-major in the rows

    @property
    def itemsize(self) -> int:
        return 1 if self.dtype.startswith("f8") else 2

    @property
    def tokens(self) -> int:
        """Query tokens per query head."""
        return self.rows // self.group


Kernel = MatmulKernel | RowKernel | AttentionKernel


@dataclass
class Recognised:
    kernel: MatmulKernel | RowKernel | None
    fn: Operation
    name: str
    reason: str | None = None  # why it is not recognised
    details: dict[str, object] = field(default_factory=dict)


def function_of(module: Module, func: str | None) -> Operation:
    if func is not None:
        try:
            return module.function(func)
        except KeyError:
            raise ScheduleError(f"no function @{func} in the module") from None
    bodies = [f for f in module.functions() if f.regions and f.regions[0].blocks]
    if not bodies:
        raise ScheduleError("the module has no function with a body: there is no kernel to schedule")
    public = [f for f in bodies if getattr(f.attributes.get("sym_visibility"), "value", None) != "private"]
    if len(bodies) != 1 and len(public) == 1:
        return public[0]  # private functions are helpers (a lowered SDSC bundle's steps), as `ktir run` chooses
    if len(bodies) != 1:
        names = ", ".join("@" + str(getattr(f.attributes.get("sym_name"), "value", "?")) for f in bodies)
        raise ScheduleError(f"the module has {len(bodies)} functions with bodies ({names}); choose one with --func")
    return bodies[0]


def func_name(fn: Operation) -> str:
    return str(getattr(fn.attributes.get("sym_name"), "value", "kernel"))


def grid_of(fn: Operation) -> tuple[int, ...]:
    g = fn.attributes.get("grid")
    if isinstance(g, at.ArrayAttr):
        return tuple(int(getattr(e, "value", 1)) for e in g.elements)
    return (1,)


class _Values:
    """Integer values of SSA names: constants, and index arguments bound by the caller."""

    def __init__(self, fn: Operation, sizes: Mapping[str, int]) -> None:
        self.defs: dict[str, Operation] = {}
        for op in fn.walk():
            for r in op.results:
                self.defs[r] = op
        self.sizes = {("%" + k.lstrip("%")): int(v) for k, v in sizes.items()}
        self.args = {a.name for a in fn.regions[0].blocks[0].arguments}

    def const(self, name: str) -> int | None:
        if name in self.sizes:
            return self.sizes[name]
        op = self.defs.get(name)
        if op is not None and op.name == Arith.constant:
            v = op.attributes.get("value")
            if isinstance(v, at.IntegerAttr):
                return int(v.value)
        return None

    def need(self, name: str, what: str) -> int:
        v = self.const(name)
        if v is None:
            if name in self.args:
                raise ScheduleError(f"argument {name} sets {what}; give its value with --size {name[1:]}=INT")
            raise ScheduleError(f"{what} ({name}) is not a constant")
        return v


def _segments(view: Operation) -> tuple[list[str], list[str]]:
    """The dynamic size and stride operands of a memory view."""
    try:
        v = named(view)
        return v.operands("sizes"), v.operands("strides")
    except AccessError as e:
        raise ScheduleError(str(e)) from None


def _mixed(view: Operation, attr: str, dynamic: list[str], vals: _Values, what: str) -> tuple[int, ...]:
    static = view.attributes.get(attr)
    values = iter(dynamic)
    return tuple(vals.need(next(values), what) if d == _DYNAMIC else int(d) for d in getattr(static, "values", ()))


def _view_shape(view: Operation, vals: _Values) -> tuple[int, ...]:
    return _mixed(view, "static_sizes", _segments(view)[0], vals, "a tensor size")


def _pointer(name: str, vals: _Values) -> tuple[str, int] | None:
    """(argument, element offset) of a view's base: an argument plus constants (`arith.addi`)."""
    if name in vals.args:
        return name, 0
    op = vals.defs.get(name)
    if op is None or op.name != Arith.addi:
        return None
    lhs, rhs = named(op).operand("lhs"), named(op).operand("rhs")
    for base, other in ((lhs, rhs), (rhs, lhs)):
        inner, k = _pointer(base, vals), vals.const(other)
        if inner is not None and k is not None:
            return inner[0], inner[1] + k
    return None


def _operand(view: Operation, vals: _Values) -> Operand | None:
    if view.name != Ktdp.construct_memory_view:
        return None
    space = view.attributes.get("memory_space")
    if not isinstance(space, at.MemorySpaceAttr) or space.kind != "global":
        return None
    ptr = _pointer(named(view).operand("offset"), vals)
    if ptr is None:
        return None
    t = named(view).result_type("result")
    if not isinstance(t, ty.MemRefType):
        return None
    strides = _mixed(view, "static_strides", _segments(view)[1], vals, "a stride")
    return Operand(ptr[0][1:], dtype_name(t.element_type), itemsize(t.element_type), _view_shape(view, vals), strides,
                   ptr[1])


def _view_of_load(op: Operation, vals: _Values) -> Operation | None:
    tile = vals.defs.get(named(op).operand("access_tile"))
    if tile is None or tile.name != Ktdp.construct_access_tile:
        return None
    return vals.defs.get(named(tile).operand("base"))


def recognise(module: Module, sizes: Mapping[str, int] | None = None, func: str | None = None) -> Recognised:
    fn = function_of(module, func)
    name = func_name(fn)
    vals = _Values(fn, sizes or {})
    ops = list(fn.walk())[1:]
    names = [op.name for op in ops]
    blocking = next((op for op in ops if op.name.startswith("ktdp.inter_tile")
                     or op.name in (Ktdp.construct_indirect_access_tile, Ktdp.construct_distributed_memory_view)), None)
    if blocking is not None:
        what = "inter-tile communication" if blocking.name.startswith("ktdp.inter_tile") else \
            "indirect access" if "indirect" in blocking.name else "a distributed memory view"
        return Recognised(None, fn, name, f"{what} ({op_at(blocking)}) is outside the recognised classes")
    matmuls = [op for op in ops if op.name == Linalg.matmul]
    if len(matmuls) == 1 and not any(n in (Linalg.generic, Linalg.reduce) for n in names):
        found = _matmul(module, fn, matmuls[0], vals, ops, name)
        if isinstance(found, MatmulKernel):
            return Recognised(found, fn, name)
        return Recognised(None, fn, name, found)
    if len(matmuls) == 1:
        fused = next(op for op in ops if op.name in (Linalg.generic, Linalg.reduce))
        return Recognised(None, fn, name, f"a matmul ({op_at(matmuls[0])}) fused with other linalg ops ({op_at(fused)}): "
                          "only plain matmuls are rewritten")
    products = [op for op in ops if op.name.startswith(Linalg.matmul) or op.name.startswith("linalg.batch")]
    if products:
        listed = ", ".join(op_at(op) for op in products[:3]) + (", ..." if len(products) > 3 else "")
        return Recognised(None, fn, name, f"several matrix products ({listed}): only single-matmul kernels are "
                          "rewritten")
    found_row = _rowwise(module, fn, vals, name)
    if isinstance(found_row, RowKernel):
        return Recognised(found_row, fn, name)
    return Recognised(None, fn, name, found_row)


def op_at(op: Operation) -> str:
    """`op.name` at line N, for reasons that name the op in the way."""
    return f"`{op.name}` at line {op.loc.line}" if op.loc is not None else f"`{op.name}`"


def _alias(module: Module, attr: object) -> object:
    if isinstance(attr, at.AttrAliasRef):
        return module.attr_aliases.get(attr.name) or module.attr_aliases.get("#" + attr.name)
    return attr


linear = af.linear  # shared with the interpreter, which is slow to import


def _bounds(iset: af.IntegerSet, syms: tuple[int, ...]) -> tuple[list[int | None], list[int | None]] | None:
    """Per-dimension lower and upper bounds when every constraint is `d >= c` or `d <= c`, else None."""
    lo: list[int | None] = [None] * iset.num_dims
    hi: list[int | None] = [None] * iset.num_dims
    for c in iset.constraints:
        lin = linear(c.expr)
        if lin is None or c.is_equality or len(lin[0]) != 1:
            return None
        (d, a), = lin[0].items()
        const = lin[2] + sum(k * syms[s] for s, k in lin[1].items())
        if a == 1:  # d + const >= 0
            low = lo[d]
            lo[d] = -const if low is None else max(-const, low)
        elif a == -1:  # -d + const >= 0
            high = hi[d]
            hi[d] = const if high is None else min(const, high)
        else:
            return None
    return lo, hi


def _is_box(module: Module, attr: object, extents: tuple[int, ...], syms: tuple[int, ...] = ()) -> bool:
    """Whether an integer set is exactly the box [0, extents) (symbols bound to `syms`)."""
    value = _alias(module, attr)
    if not isinstance(value, at.IntegerSetAttr) or value.value.num_dims != len(extents):
        return False
    if len(syms) != value.value.num_symbols:
        return False
    found = _bounds(value.value, syms)
    if found is not None:
        return found[0] == [0] * len(extents) and found[1] == [e - 1 for e in extents]
    # other constraints (possibly redundant): enumerate the set (rare, and slow to import)
    from reference_interp.affine_eval import CompiledSet

    try:
        pts = CompiledSet(value.value, max_points=1 << 22).points(syms)
    except Exception:  # noqa: BLE001 - a set the evaluator cannot enumerate is not a box we can vouch for
        return False
    return pts.is_box and pts.lo == (0,) * len(extents) and pts.ext == extents


def _is_identity(module: Module, attr: object, rank: int) -> bool:
    value = _alias(module, attr)
    return value is None or (isinstance(value, at.AffineMapAttr) and value.value == af.AffineMap.identity(rank))


def _tile_reason(module: Module, tile: Operation) -> str | None:
    """Why an access tile is not a plain box at its start coordinates, if it is not."""
    t = named(tile).result_type("result")
    if not isinstance(t, ty.AccessTileType):
        return "an access tile has no access tile type"
    rank = len(t.shape)
    try:
        symbols = named(tile).operands("symbol_operands")
    except AccessError as e:
        return str(e)
    if symbols:
        return "an access tile of the matmul has symbol operands"
    if not _is_identity(module, tile.attributes.get("access_tile_order"), rank):
        return "an access tile of the matmul has a non-identity access_tile_order"
    if not _is_box(module, tile.attributes.get("access_tile_set"), tuple(int(d or 0) for d in t.shape)):
        return "an access tile set of the matmul is not the box of its shape"
    return None


def aliased(box: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether a box of `box` elements at `strides` may map two coordinates to one element:
    ordered by stride, each dimension's stride must pass the span of the smaller ones."""
    span = 1
    for stride, n in sorted((st, n) for st, n in zip(strides, box, strict=False) if n > 1):
        if stride < span:
            return True
        span += stride * (n - 1)
    return False


def _view_reason(module: Module, view: Operation, operand: Operand, vals: _Values) -> str | None:
    """Why a memory view of the matmul cannot be re-tiled with its strides and offset, if it cannot."""
    t = named(view).result_type("result")
    if isinstance(t, ty.MemRefType) and t.layout is not None:
        return f"the view of {operand.arg} has a memref layout"
    if any(s <= 0 for s in operand.strides):
        return f"the view of {operand.arg} has a non-positive stride {list(operand.strides)}"
    syms = tuple(vals.need(o, "a tensor size") for o in _segments(view)[0])
    # addresses count from the set's lower corner, and the rewrite's views use the box of their sizes
    if not _is_box(module, view.attributes.get("coordinate_set"), operand.shape, syms):
        return (f"the coordinate_set of the view of {operand.arg} is not proven to be the box of its sizes "
                f"{list(operand.shape)} from 0")
    return None


def _matmul(module: Module, fn: Operation, mm: Operation, vals: _Values, ops: list[Operation], name: str
            ) -> MatmulKernel | str:
    from .footprint import matmul_footprint

    ins = named(mm).operands("inputs")
    if len(ins) != 2:
        return "the matmul does not have two inputs"
    x, y = ins
    views: list[Operand] = []
    names: dict[str, str] = {}
    for v, role in ((x, "a"), (y, "b")):
        load = vals.defs.get(v)
        if load is None or load.name != Ktdp.load:
            return "the matmul's operands are not loaded directly from memory views"
        view = _view_of_load(load, vals)
        operand = _operand(view, vals) if view is not None else None
        if view is None or operand is None or len(operand.shape) != 2:
            return "the matmul's operands do not come from 2-D global views of function arguments"
        views.append(operand)
        names[named(view).result("result")] = role
    stores = [op for op in ops if op.name == Ktdp.store]
    if len(stores) != 1:
        return "a matmul kernel must store exactly one result"
    view = _view_of_load(stores[0], vals)
    c = _operand(view, vals) if view is not None else None
    if view is None or c is None or len(c.shape) != 2:
        return "the matmul's result is not stored to a 2-D global view of a function argument"
    names[named(view).result("result")] = "c"
    if aliased(c.shape, c.layout):
        # the input's store already writes some elements twice; blocks on different tiles would race
        return f"the view of {c.arg} (strides {list(c.layout)}) maps several coordinates of C to one element"
    if len(names) != 3:
        return "A, B and C of the matmul are not three distinct memory views"
    if c.arg in (views[0].arg, views[1].arg):
        # in place: the rewrite stores blocks of C while other blocks still read the operand
        return f"C is stored into {c.arg}, an array the matmul also reads"
    a, b = views
    M, K = a.shape
    K2, N = b.shape
    if K != K2 or c.shape != (M, N):
        return f"inconsistent matmul shapes A {a.shape}, B {b.shape}, C {c.shape}"
    if 0 in (M, N, K):
        return f"a matmul dimension has size 0 (M={M}, N={N}, K={K}): the kernel touches no elements"
    allowed = {Arith.constant, Arith.muli, Arith.addi, Scf.for_, Scf.yield_, Tensor.empty, Linalg.fill,
               Ktdp.get_compute_tile_id, Ktdp.construct_memory_view, Ktdp.construct_access_tile, Ktdp.load,
               Ktdp.store, Linalg.matmul, Arith.truncf, Func.return_, Tensor.splat}
    extra = sorted({op.name for op in ops} - allowed)
    if extra:
        return f"ops beyond a plain matmul ({', '.join(extra)}): an epilogue is not rewritten"
    # the rewrite is a plain row-major product, accumulated in f32, of float operands
    if set(mm.attributes) - {"operandSegmentSizes"}:
        return f"the matmul has attributes ({', '.join(sorted(set(mm.attributes) - {'operandSegmentSizes'}))})"
    acc_types = named(mm).result_types("results")
    acc = acc_types[0] if acc_types else None
    if not (isinstance(acc, ty.TensorType) and isinstance(acc.element_type, ty.FloatType)):
        return "the matmul does not accumulate in floating point"
    if acc.element_type.kind == "f64":
        # the rewrite accumulates in f32: an f64 product would lose precision
        return "the matmul accumulates in f64; the rewrite accumulates in f32"
    if acc.element_type.kind != "f32":
        # one whole-K product rounds once (interpreter semantics): an f32 accumulator rounded
        # at the store gives that result; a K loop in the narrow type rounds at every step
        if any(op.name == Scf.for_ for op in ops):
            return f"the matmul accumulates in {acc.element_type.kind} across a loop (rounding at every step)"
        if acc.element_type.kind != c.dtype:
            return f"the matmul accumulates in {acc.element_type.kind} but C is {c.dtype}"
    if not all(o.dtype.startswith(("f", "bf")) for o in (a, b, c)):
        return f"A, B and C must be floating point (got {a.dtype}, {b.dtype}, {c.dtype})"
    for op in ops:
        base = vals.defs.get(named(op).operand("base")) if op.name == Ktdp.construct_access_tile else None
        if base is not None and named(base).result("result") in names:
            reason = _tile_reason(module, op)
            if reason:
                return reason
    for role, operand in zip("abc", (a, b, c), strict=True):
        vop = vals.defs[next(n for n, r in names.items() if r == role)]
        reason = _view_reason(module, vop, operand, vals)
        if reason:
            return reason
    init = matmul_footprint(fn, grid_of(fn), {k[1:]: v for k, v in vals.sizes.items()}, names, (M, N, K))
    if isinstance(init, str):
        return init
    reason = _straight_matmul_reason(module, fn, mm, stores[0])
    if reason:
        return reason
    return MatmulKernel(M, N, K, a, b, c, name, init=init)


def _straight_matmul_reason(module: Module, fn: Operation, mm: Operation, store: Operation) -> str | None:
    """The dependence check of a straight-line matmul kernel: the rewrite cuts C's rows and
    columns into blocks and K into steps, so M and N must be free and K reduced by the matmul
    only. (Loop forms are proven by `footprint` instead, which evaluates what they compute.)"""
    from .dependence import analyse

    body = fn.regions[0].blocks[0].operations
    if any(op.regions for op in body if op.name != Func.func):
        return None
    g = analyse(module, body)
    for d, what in ((0, "M"), (1, "N")):
        found = g.reasons(g.cls(named(store).operand("data"), d))
        if found:
            return f"the matmul's {what} dimension cannot be cut into blocks: {found[0]}"
    k_reasons = g.reasons(g.cls(named(mm).operands("inputs")[0], 1))  # A's second dimension is K
    if any(not r.startswith(mm.name) for r in k_reasons):
        return f"the matmul's K dimension cannot be cut into steps: {next(r for r in k_reasons if not r.startswith(mm.name))}"
    return None


def _row_set_reason(module: Module, attr: object, B: int) -> str | None:
    """Why an access tile set in the row loop cannot have its row bound changed, if it cannot.

    The rewrite replaces the bound `d0 <= B - 1` and keeps the other constraints, which must
    therefore not involve the row (a triangular set would mean something else per block)."""
    value = _alias(module, attr)
    if not isinstance(value, at.IntegerSetAttr):
        return "an access tile set in the row loop is not an integer set"
    for c in value.value.constraints:
        lin = linear(c.expr)
        if lin is None:
            return "an access tile set in the row loop has a non-linear constraint"
        dims, syms, const = lin
        if not dims.get(0):
            continue
        lower = dims == {0: 1} and not syms and const == 0 and not c.is_equality
        upper = dims == {0: -1} and not syms and const == B - 1 and not c.is_equality
        if not (lower or upper):
            return "an access tile set in the row loop constrains the row beyond 0 <= d0 < B"
    return None


def _row_subscripts(tile: Operation) -> bool:
    """Whether an access tile's subscripts are [row, constants...]: the first is the first index
    operand itself, the others do not involve it (subscripts are `base_map` of the operands)."""
    base = tile.attributes.get("base_map")
    if not isinstance(base, at.AffineMapAttr):
        return True  # no map: the operands are the subscripts
    results = base.value.results
    if not results or results[0] != af.Dim(position=0):
        return False
    for e in results[1:]:
        lin = linear(e)
        if lin is None or lin[0].get(0):
            return False
    return True


def _ambiguous_rows(body: list[Operation], loop: Operation, B: int) -> bool:
    """Whether a tensor loaded before the row loop has a dimension of size B (a weight of C == B
    columns, say): the rewrite finds row-block tensors by their leading size B, and a tensor
    derived from such data could be taken for one."""
    return any(op.name == Ktdp.load and any(isinstance(t, ty.TensorType) and B in t.shape for t in op.result_types)
               for op in body[:body.index(loop)])


_INDEX_ARITH = frozenset({Arith.addi, Arith.subi, Arith.muli, Arith.minsi, Arith.maxsi, Arith.divui,
                          Arith.remui, Arith.ceildivsi, Arith.divsi, Arith.remsi, Affine.apply})


def index_as_data(loop: Operation) -> Operation | None:
    """The first op of the loop's body that uses its index (or index arithmetic on it) other
    than as a subscript of an access tile: the index is then data, and re-blocking the loop
    would change what that op computes."""
    body = loop.regions[0].blocks[0]
    derived = {body.arguments[0].name}
    for op in body.operations:
        for inner in op.walk():
            if not derived & set(inner.operands):
                continue
            if inner.name == Ktdp.construct_access_tile:
                continue
            if inner.name in _INDEX_ARITH:
                derived |= set(inner.results)
                continue
            return inner
    return None


def _rowwise(module: Module, fn: Operation, vals: _Values, name: str) -> RowKernel | str:
    body = fn.regions[0].blocks[0].operations
    loops = [op for op in body if op.name == Scf.for_]
    tid = [op for op in body if op.name == Ktdp.get_compute_tile_id]
    if len(loops) != 1 or len(tid) != 1 or len(tid[0].results) != 1:
        return "no single row loop over a 1-D grid (scf.for %r = %tid * B to R step S)"
    loop = loops[0]
    lv = named(loop)
    if loop.results or lv.operands("init_args"):
        return "the row loop carries values (iter_args)"
    (tile_id,) = named(tid[0]).results("ids")
    first = vals.defs.get(lv.operand("lower_bound"))
    if first is None or first.name != Arith.muli or tile_id not in first.operands:
        return "the row loop does not start at tile id x block"
    other = [o for o in (named(first).operand("lhs"), named(first).operand("rhs")) if o != tile_id]
    B = vals.const(other[0]) if other else None
    if B is None or B <= 0:
        return "the row block size is not a constant"
    grid = grid_of(fn)
    step = vals.const(lv.operand("step"))
    if math.prod(grid) != grid[0]:
        return f"the row loop runs on a grid {list(grid)} of more than one dimension"
    if step != grid[0] * B:
        # the rewrite covers every row once; the input must too
        return f"the row loop's step ({step}) is not grid x block ({grid[0]} x {B}): the tiles do not cover each row once"
    block = loop.regions[0].blocks[0]
    iv = block.arguments[0].name
    inner = block.operations
    if any(op.regions and op.name.startswith("scf.") for op in inner):
        return "nested loops in the row loop"
    streamed: list[tuple[Operand, int]] = []
    outputs: list[tuple[Operand, int]] = []
    layouts: dict[str, set[tuple[int, tuple[int, ...], bool]]] = {}  # per array: (offset, strides, stored)
    for op in inner:
        if op.name not in (Ktdp.load, Ktdp.store):
            continue
        tile = vals.defs.get(named(op).operand("access_tile"))
        if tile is None or tile.name != Ktdp.construct_access_tile:
            return "a load or store in the row loop is not indexed by the row"
        tv = named(tile)
        indices = tv.operands("indices")
        if indices[:1] != [iv]:
            return "a load or store in the row loop is not indexed by the row"
        t = tv.result_type("result")
        rank = len(getattr(t, "shape", ()))
        if not _row_subscripts(tile) or not _is_identity(module, tile.attributes.get("access_tile_order"), rank):
            return "a block in the row loop is not a plain box at [row, constant columns] (subscripts or order)"
        reason = _row_set_reason(module, tile.attributes.get("access_tile_set"), B)
        if reason:
            return reason
        if any(vals.const(o) is None for o in [*indices[1:], *tv.operands("symbol_operands")]):
            return "a load or store in the row loop has a non-constant column offset"
        if not isinstance(t, ty.AccessTileType) or t.shape[0] != B:
            return "a block in the row loop does not span B rows"
        view = vals.defs.get(tv.operand("base"))
        operand = _operand(view, vals) if view is not None else None
        if operand is None:
            return "a row block is not in a global view of a function argument"
        if op.name == Ktdp.store and aliased(operand.shape, operand.layout):
            # rows stored by different tiles would land on the same elements
            return f"the view of {operand.arg} (strides {list(operand.layout)}) maps several rows to one element"
        per_row = Operand(operand.arg, operand.dtype, operand.itemsize, tuple(int(d or 0) for d in t.shape[1:]))
        layouts.setdefault(operand.arg, set()).add((operand.offset, operand.strides, op.name == Ktdp.store))
        (outputs if op.name == Ktdp.store else streamed).append((per_row, operand.shape[0]))
    if not streamed or not outputs:
        return "the row loop does not load and store row blocks"
    for arg, seen in layouts.items():
        # in place through another view: row r is written where another block's rows are read
        if any(w for *_, w in seen) and len({(o, st) for o, st, _ in seen}) > 1:
            return f"{arg} is read and written through different views: the rows' order would matter"
    rows = {r for _, r in streamed + outputs}
    if len(rows) != 1:
        return f"row blocks come from views with different row counts {sorted(rows)}"
    R = rows.pop()
    ub = vals.const(lv.operand("upper_bound"))
    if ub != R:
        return f"the row loop ends at {ub if ub is not None else lv.operand('upper_bound')}, not at the views' {R} rows"
    if R % B:
        return f"{R} rows are not a multiple of the block {B}"
    # Blocks of other sizes must compute the same rows: when they might not, the input's blocks
    # are kept and only dealt to the tiles differently (each iteration is independent: no
    # iter_args, and the proof checks the memory each one touches)
    from .dependence import row_split_reason

    fixed = None
    if _ambiguous_rows(body, loop, B):
        fixed = (f"a tensor loaded before the row loop has a dimension of {B}, the row block: which tensors are "
                 "row blocks is ambiguous")
    fixed = fixed or row_split_reason(module, body[:body.index(loop)], loop, B)
    data = index_as_data(loop)
    if fixed is None and data is not None:
        fixed = f"{op_at(data)} uses the row loop's index {iv} as data"
    if fixed is not None and R // B < 2:
        return fixed  # a single block: nothing to divide without changing it
    if fixed is not None:
        fixed += f"; each block keeps its {B} row(s), only the tiles that run them change"
    vector: dict[str, float] = {}
    trans: dict[str, float] = {}
    nvec = 0
    live = 0
    passes: list[tuple[str, bool, float]] = []
    for op in inner:
        for t in op.result_types:
            if isinstance(t, ty.TensorType) and t.shape and t.shape[0] == B:
                live += math.prod(int(d or 0) for d in t.shape) * itemsize(t.element_type) // B
        if op.name in _FREE or not op.result_types:
            continue
        t = op.result_types[0]
        if not isinstance(t, ty.TensorType):
            continue
        # reductions count their input elements, not their smaller result
        sizes = [t] + [u for u in op.operand_types if isinstance(u, ty.TensorType)]
        elems = max(math.prod(int(d or 0) for d in u.shape) for u in sizes) / B
        dt = dtype_name(t.element_type)
        scalar = [inner_op.name for inner_op in op.walk() if inner_op is not op and inner_op.name != Linalg.yield_]
        n_trans = sum(1 for s in scalar if s in TRANSCENDENTAL) + (1 if op.name in TRANSCENDENTAL else 0)
        n_plain = max(1, len(scalar) - n_trans) if scalar or op.name not in TRANSCENDENTAL else 0
        vector[dt] = vector.get(dt, 0.0) + elems * n_plain
        if n_trans:
            trans[dt] = trans.get(dt, 0.0) + elems * n_trans
        nvec += 1
        lead = next(u for u in [*op.operand_types, *op.result_types] if isinstance(u, ty.TensorType))
        passes.append((dtype_name(lead.element_type), bool(n_trans), elems))
    resident, resident_bytes = [], 0
    for op in body:
        if op is loop:
            continue
        for t in op.result_types:
            if not (isinstance(t, ty.TensorType) and t.has_static_shape):
                continue
            nbytes = math.prod(int(d or 0) for d in t.shape) * itemsize(t.element_type)
            if t.shape and t.shape[0] == B and op.name == Ktdp.load and fixed is None:
                return f"a tensor loaded before the row loop has {B} leading rows, like the row block: ambiguous"
            if t.shape and t.shape[0] == B:
                live += nbytes // B  # made before the loop for its body (scratch, broadcast weights): scales with B
            else:
                resident_bytes += nbytes
        if op.name == Ktdp.load:
            view = _view_of_load(op, vals)
            operand = _operand(view, vals) if view is not None else None
            if operand is None:
                return "a load before the row loop does not read a global view of a function argument"
            resident.append(operand)
    return RowKernel(R, B, [s for s, _ in streamed], resident, [o for o, _ in outputs], vector, trans, nvec, live,
                     resident_bytes, name, passes=passes, fixed_block=fixed)
