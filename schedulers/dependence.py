"""Which dimensions of a kernel may be cut into blocks: a dependence check on the IR.

Every dimension of every tensor value is a node. Ops tie the nodes that index one
iteration: the operands and result of an elementwise op position by position, the operand
dimensions that a linalg op's indexing maps send to one loop dimension, the kept
dimensions of a reduction with its result's, a transpose's permuted dimensions. A class of
tied nodes is one dimension of the kernel's iteration space, with one extent.

Cutting a class into blocks (over tiles or a loop) keeps every output element equal when
each element of a block is computed from elements of the same block only. The check
records, per class, every construct that breaks this, naming the op and where it is:

- a reduction over the class (`iterator_types` "reduction", `linalg.reduce` dimensions, the
  contracted dimension of a matmul);
- an index that is not the loop dimension itself (a constant, `d0 + d1`, `linalg.index`);
- two dimensions of one tensor in the class (a diagonal);
- an op the check does not model, or a dense constant (its elements are positions).

Tensors made by `tensor.empty` are not tied to their uses: their contents are undefined,
so only shapes flow from them (a rewrite makes a fresh one per use).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Scf, Tensor
from ktir.dialects.registry import OPS, lookup
from ktir.dialects.structure import IterationSpace, iteration_space
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.affine_text import format_expr
from ktir.ir.base import Type
from ktir.ir.operation import Module, Operation

# named contractions and their einsum form, from the op definitions (`ktir.dialects.structure`)
CONTRACTIONS = {d.name: d.structure.einsum for d in OPS.values()
                if d.structure is not None and d.structure.kind == "contraction"}


def where(op: Operation) -> str:
    return f" (line {op.loc.line})" if op.loc is not None else ""


def resolve(module: Module, attr: object) -> object:
    if isinstance(attr, at.AttrAliasRef):
        return module.attr_aliases.get(attr.name) or module.attr_aliases.get("#" + attr.name)
    return attr


def shape(t: Type | None) -> tuple[int, ...] | None:
    if isinstance(t, ty.TensorType) and t.has_static_shape:
        return tuple(int(d or 0) for d in t.shape)
    return None


@dataclass
class DimGraph:
    """Union-find over (tensor value, dimension) nodes, with the reasons each class cannot be cut."""

    module: Module
    parent: list[int] = field(default_factory=list)
    extent: list[int] = field(default_factory=list)
    nodes: dict[tuple[str, int], int] = field(default_factory=dict)
    notes: list[tuple[int, str]] = field(default_factory=list)  # (node, reason it cannot be cut)
    types: dict[str, Type] = field(default_factory=dict)
    empties: set[str] = field(default_factory=set)  # values made by tensor.empty

    # ------------------------------------------------------------ nodes and classes

    def fresh(self, size: int) -> int:
        self.parent.append(len(self.parent))
        self.extent.append(size)
        return len(self.parent) - 1

    def node(self, value: str, d: int) -> int:
        key = (value, d)
        if key not in self.nodes:
            dims = shape(self.types.get(value)) or ()
            self.nodes[key] = self.fresh(dims[d] if d < len(dims) else 0)
        return self.nodes[key]

    def dims(self, value: str) -> list[int]:
        return [self.node(value, d) for d in range(len(shape(self.types.get(value)) or ()))]

    def find(self, n: int) -> int:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def tie(self, a: int, b: int, op: Operation) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.extent[ra] != self.extent[rb]:
            self.notes.append((a, f"{op.name}{where(op)} ties dimensions of sizes {self.extent[ra]} and {self.extent[rb]}"))
        self.parent[rb] = ra

    def block(self, n: int, reason: str) -> None:
        self.notes.append((n, reason))

    def cls(self, value: str, d: int) -> int:
        return self.find(self.node(value, d))

    def classes(self, value: str) -> tuple[int, ...]:
        return tuple(self.find(n) for n in self.dims(value))

    def reasons(self, c: int) -> list[str]:
        """Why class `c` cannot be cut, first reason first (empty: it can)."""
        found: list[str] = []
        for n, why in self.notes:
            if self.find(n) == c and why not in found:
                found.append(why)
        return found

    def size(self, c: int) -> int:
        return self.extent[self.find(c)]


def analyse(module: Module, ops: Iterable[Operation], types: dict[str, Type] | None = None) -> DimGraph:
    """The dimension classes of the tensors that `ops` (one block's ops, in order) make and use."""
    g = DimGraph(module)
    ops = list(ops)
    g.types.update(types or {})
    for op in ops:
        for inner in op.walk():
            g.types.update(zip(inner.operands, inner.operand_types, strict=False))
            g.types.update(zip(inner.results, inner.result_types, strict=False))
            if inner.name == Scf.for_:
                g.types.update((a.name, a.type) for a in inner.regions[0].blocks[0].arguments)
            if inner.name == Tensor.empty:
                g.empties.update(inner.results)
    for op in ops:
        if op.name == Scf.for_:
            _tie_loop(g, op)
        else:
            _tie_op(g, op)
    for value, vt in g.types.items():
        dims = g.dims(value) if shape(vt) else []
        roots = [g.find(n) for n in dims]
        for i, r in enumerate(roots):
            j = roots.index(r)
            if j != i and value not in g.empties:
                g.block(dims[i], f"dimensions {j} and {i} of {value} index the same iteration (a diagonal)")
    return g


def _tie_loop(g: DimGraph, op: Operation) -> None:
    """A loop's body ops, and what it carries: each init, iter_arg, yielded value and result
    is one tensor over the same iterations (position by position)."""
    body = op.regions[0].blocks[0]
    for inner in body.operations:
        if inner.name == Scf.for_:
            _tie_loop(g, inner)
        elif inner.name != Scf.yield_:
            _tie_op(g, inner)
    term = body.operations[-1] if body.operations and body.operations[-1].name == Scf.yield_ else None
    inits = op.operands[3:]
    for i, a in enumerate(body.arguments[1:]):
        group = [a.name, inits[i] if i < len(inits) else None, op.results[i] if i < len(op.results) else None,
                 term.operands[i] if term is not None and i < len(term.operands) else None]
        tensors = [v for v in group if v is not None and shape(g.types.get(v)) is not None and v not in g.empties]
        if len(tensors) > 1:
            _positionwise(g, op, tensors)


def _tensors(op: Operation) -> list[str]:
    return [v for v, t in zip(op.operands + op.results, op.operand_types + op.result_types, strict=False)
            if isinstance(t, ty.TensorType)]


def _block_all(g: DimGraph, op: Operation, what: str) -> None:
    for v in _tensors(op):
        for n in g.dims(v):
            g.block(n, f"{op.name}{where(op)} {what}")


_INS = ("inputs", "input")
_OUTS = ("outputs", "inits", "init")


def _groups(op: Operation) -> tuple[str, str] | None:
    """The names of a linalg-style op's input and destination groups, when it declares both and
    carries the segment sizes that split them."""
    try:
        declared = {o.name for o in named(op).opdef.operands}
    except AccessError:
        return None
    ins = next((n for n in _INS if n in declared), None)
    outs = next((n for n in _OUTS if n in declared), None)
    if ins is None or outs is None or "operandSegmentSizes" not in op.attributes:
        return None
    return ins, outs


def outs_positions(op: Operation) -> range:
    """Where a linalg-style op's destination operands (outputs/inits/init) sit; empty for any other op."""
    groups = _groups(op)
    return named(op).operand_positions(groups[1]) if groups is not None else range(0)


def _segments(op: Operation) -> tuple[list[str], list[str]]:
    """An op's inputs and its destination operands (outs/inits), by the names its definition declares."""
    groups = _groups(op)
    if groups is not None:
        v = named(op)
        return v.operands(groups[0]), v.operands(groups[1])
    # any other op (or one with no segment sizes): destination style, one out per result, last
    n_in = len(op.operands) - len(op.results)
    return op.operands[:n_in], op.operands[n_in:]


def _ints(attr: object) -> list[int]:
    return [int(v) for v in getattr(attr, "values", ())]


def _positionwise(g: DimGraph, op: Operation, values: list[str]) -> None:
    ranks = {len(shape(g.types.get(v)) or ()) for v in values}
    if len(ranks) != 1:
        _block_all(g, op, "mixes tensors of different ranks")
        return
    first = values[0]
    for v in values[1:]:
        for a, b in zip(g.dims(first), g.dims(v), strict=True):
            g.tie(a, b, op)


def _live(g: DimGraph, outs: list[str]) -> list[str]:
    """The outs whose contents matter (not made by tensor.empty)."""
    return [o for o in outs if o not in g.empties]


def _tie_op(g: DimGraph, op: Operation) -> None:
    name = op.name
    tensors = _tensors(op)
    if not tensors or name in (Tensor.empty, Ktdp.load, Ktdp.store, Func.return_):
        return
    if name == Arith.constant:
        value = op.attributes.get("value")
        if not isinstance(value, at.DenseAttr) or not value.is_splat:
            _block_all(g, op, "is a dense constant tensor (its elements are positions)")
        return
    if name.startswith(("arith.", "math.")):
        _positionwise(g, op, tensors)
        return
    if name == Tensor.splat:  # a scalar broadcast to a tensor: every element the same
        return
    ins, outs = _segments(op)
    view = generic_view(g.module, op, len(ins))
    if isinstance(view, str):
        _block_all(g, op, f"is not modelled by the dependence check ({view})")
        return
    _structured(g, op, view, ins, outs)


def generic_view(module: Module, op: Operation, inputs: int | None = None) -> IterationSpace | str:
    """The op as a `linalg.generic` (`ktir.dialects.structure`), from the facts its definition declares."""
    d = lookup(op.name)
    if d is None or d.structure is None:
        return f"{op.name} declares no iteration structure"
    if inputs is None:
        inputs = len(_segments(op)[0])
    return iteration_space(op, d.structure, inputs, lambda a: resolve(module, a))


def _reason(op: Operation, view: IterationSpace, j: int) -> str:
    """Why loop j of a structured op cannot be cut: it reduces, in the op's own terms."""
    kind = lookup(op.name).structure.kind  # type: ignore[union-attr]
    if kind == "reduce":
        return f"{op.name}{where(op)} reduces over this dimension (dimensions = {_ints(op.attributes.get('dimensions'))})"
    if kind == "contraction":
        return f"{op.name}{where(op)} contracts (reduces over) this dimension"
    return f"{op.name}{where(op)} reduces over this dimension (iterator_types[{j}] = reduction)"


def _structured(g: DimGraph, op: Operation, view: IterationSpace, ins: list[str], outs: list[str]) -> None:
    """Tie every operand dimension to the loop its indexing map names; block reduced loops and
    dimensions indexed by anything but a loop; read the payload."""
    operands = [*ins, *outs]
    loops = _loop_dims(g, op, operands, list(view.maps), view.loops)
    for j in view.reduced():
        g.block(loops[j], _reason(op, view, j))
    for v, m in zip(ins, view.maps, strict=False):
        if isinstance(g.types.get(v), ty.TensorType):
            _index(g, op, v, m, loops)
    out_maps = view.maps[len(ins):]
    for v, m in zip(outs, out_maps, strict=False):
        if v not in g.empties:
            _index(g, op, v, m, loops)
    for r, m in zip(op.results, out_maps, strict=False):
        _index(g, op, r, m, loops)
    _payload(g, op, loops)


def _maps(g: DimGraph, op: Operation) -> list[af.AffineMap] | None:
    found = []
    for e in getattr(op.attributes.get("indexing_maps"), "elements", ()):
        m = resolve(g.module, e)
        if not isinstance(m, at.AffineMapAttr):
            return None
        found.append(m.value)
    return found


def _loop_dims(g: DimGraph, op: Operation, operands: list[str], maps: list[af.AffineMap], n: int) -> list[int]:
    """One node per loop dimension, sized from the first operand that indexes it directly."""
    size = [0] * n
    for v, m in zip(operands, maps, strict=False):
        dims = shape(g.types.get(v)) or ()
        for p, e in enumerate(m.results):
            if isinstance(e, af.Dim) and p < len(dims) and not size[e.position]:
                size[e.position] = dims[p]
    return [g.fresh(s) for s in size]


def _index(g: DimGraph, op: Operation, v: str, m: af.AffineMap, loops: list[int]) -> None:
    """Tie operand `v`'s dimensions to the loop dimensions its map names; block the others."""
    for p, (e, n) in enumerate(zip(m.results, g.dims(v), strict=False)):
        if isinstance(e, af.Dim):
            g.tie(n, loops[e.position], op)
            continue
        what = f"{op.name}{where(op)} indexes dimension {p} of {v} with `{format_expr(e)}`, not a loop dimension"
        g.block(n, what)
        for d in _dims_in(e):
            g.block(loops[d], what)


def _dims_in(e: af.AffineExpr) -> set[int]:
    if isinstance(e, af.Dim):
        return {e.position}
    found: set[int] = set()
    for child in (getattr(e, "lhs", None), getattr(e, "rhs", None)):
        if child is not None:
            found |= _dims_in(child)
    return found


def _payload(g: DimGraph, op: Operation, loops: list[int]) -> None:
    """Payload ops: `linalg.index` reads a position; a tensor read inside reads any element."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                for nested in inner.walk():
                    if nested.name == Linalg.index:
                        d = int(getattr(nested.attributes.get("dim"), "value", -1))
                        if 0 <= d < len(loops):
                            g.block(loops[d], f"linalg.index{where(nested)} in {op.name}{where(op)} reads the "
                                    f"position along loop dimension {d}")
                    elif _tensors(nested):
                        _block_all(g, nested, f"inside {op.name}{where(op)} reads a tensor element by element")


def row_split_reason(module: Module, before: list[Operation], loop: Operation, rows: int) -> str | None:
    """Why a row loop's blocks of `rows` leading rows cannot be resized, if they cannot.

    `before` are the function's ops before the loop. The loop's row blocks are the tensors
    loaded and stored through access tiles indexed by the loop variable; resizing the block
    is legal when their leading dimension's class can be cut (no reduction across rows, no
    row-dependent index), it is the leading dimension of every tensor in it, every tensor of
    `rows` leading elements is in it, and no tensor loaded once before the loop is in it."""
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0].name
    g = analyse(module, [*before, *body.operations])
    defs = {r: op for op in body.operations for r in op.results}
    seeds: list[tuple[str, Operation]] = []
    for op in body.operations:
        if op.name not in (Ktdp.load, Ktdp.store):
            continue
        v = named(op)
        tile = defs.get(v.operand("access_tile"))
        value = v.result("result") if op.name == Ktdp.load else v.operand("data")
        if tile is not None and tile.name == Ktdp.construct_access_tile \
                and named(tile).operands("indices")[:1] == [iv] and shape(g.types.get(value)):
            seeds.append((value, op))
    if not seeds:
        return None
    first = g.node(seeds[0][0], 0)
    for value, op in seeds[1:]:
        g.tie(first, g.node(value, 0), op)
    rowc = g.find(first)
    found = g.reasons(rowc)
    if found:
        return f"the rows cannot be cut into blocks: {found[0]}, a dependence across rows"
    loaded_before = {r for op in before if op.name == Ktdp.load for r in op.results}
    for value, t in g.types.items():
        dims = shape(t)
        if not dims or value in g.empties:
            continue
        cls = g.classes(value)
        for d, c in enumerate(cls):
            if c != rowc:
                continue
            if value in loaded_before:
                return f"{value}, loaded once before the row loop, is indexed by the row: the row blocks would read its first rows"
            if d != 0:
                return f"the row is dimension {d} of {value} (a transpose): the rewrite resizes leading dimensions only"
        if dims[0] == rows and cls[0] != rowc:
            return (f"{value} has {rows} leading elements, like the row block, but its dimension 0 is not the row: "
                    "resizing the block would change it")
    return None
