"""Recognising kernel classes in a KTIR function, with the numbers the cost model needs.

Three classes are recognised from a module:

- `matmul`: one `linalg.matmul` whose operands are loaded from two global views A (M x K)
  and B (K x N), accumulated in f32 and stored (after an optional `arith.truncf`) to C.
- `rowwise`: a loop `scf.for %r = %tid * B to R step S` whose body loads blocks of B
  leading rows from global views, computes on them (elementwise ops, row reductions) and
  stores blocks of B rows (softmax, RMSNorm, LayerNorm, RoPE, the single-tile kernels of
  `schedulers.naive`). Tensors loaded before the loop are per-tile resident data.
- `attention` is a cost-model class only (`AttentionKernel`, built by callers).

Everything else is `unrecognized`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation
from ktir.targets.from_interp import TRANSCENDENTAL

from .api import ScheduleError

# Ops that move no data and compute nothing (for the per-row work count).
_FREE = frozenset({"tensor.empty", "ktdp.construct_access_tile", "ktdp.construct_memory_view", "arith.constant",
                   "ktdp.load", "ktdp.store", "arith.addi", "arith.muli", "arith.subi", "arith.minsi", "scf.yield"})
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


@dataclass
class AttentionKernel:
    """softmax(Q K^T * scale) V per KV head; query heads of one group share the KV rows."""

    kv_heads: int
    rows: int  # query rows per KV head: group size x query tokens
    kv_len: int
    head_dim: int
    dtype: str = "bf16"
    causal: bool = False
    name: str = "attention"
    kind: str = "attention"
    max_kv_split: int = 32  # the rewrite (`emit_attention`) does not split the KV loop over tiles: 1

    @property
    def itemsize(self) -> int:
        return 1 if self.dtype.startswith("f8") else 2


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
        if op is not None and op.name == "arith.constant":
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


def _view_shape(view: Operation, vals: _Values) -> tuple[int, ...]:
    static = view.attributes.get("static_sizes")
    dims = list(getattr(static, "values", ()))
    dynamic = iter(view.operands[1:])
    out = []
    for d in dims:
        out.append(vals.need(next(dynamic), "a tensor size") if d == _DYNAMIC else int(d))
    return tuple(out)


def _operand(view: Operation, vals: _Values) -> Operand | None:
    if view.name != "ktdp.construct_memory_view":
        return None
    space = view.attributes.get("memory_space")
    if not isinstance(space, at.MemorySpaceAttr) or space.kind != "global":
        return None
    ptr = view.operands[0]
    if ptr not in vals.args:
        return None
    t = view.result_types[0]
    if not isinstance(t, ty.MemRefType):
        return None
    return Operand(ptr[1:], dtype_name(t.element_type), itemsize(t.element_type), _view_shape(view, vals))


def _view_of_load(op: Operation, vals: _Values) -> Operation | None:
    tile = vals.defs.get(op.operands[-1] if op.name == "ktdp.store" else op.operands[0])
    if tile is None or tile.name != "ktdp.construct_access_tile":
        return None
    return vals.defs.get(tile.operands[0])


def recognise(module: Module, sizes: Mapping[str, int] | None = None, func: str | None = None) -> Recognised:
    fn = function_of(module, func)
    name = func_name(fn)
    vals = _Values(fn, sizes or {})
    ops = list(fn.walk())[1:]
    names = [op.name for op in ops]
    if any(n.startswith("ktdp.inter_tile") or n == "ktdp.construct_indirect_access_tile"
           or n == "ktdp.construct_distributed_memory_view" for n in names):
        return Recognised(None, fn, name, "inter-tile communication or indirect access is outside the recognised classes")
    matmuls = [op for op in ops if op.name == "linalg.matmul"]
    if len(matmuls) == 1 and not any(n in ("linalg.generic", "linalg.reduce") for n in names):
        found = _matmul(fn, matmuls[0], vals, ops, name)
        if isinstance(found, MatmulKernel):
            return Recognised(found, fn, name)
        return Recognised(None, fn, name, found)
    if len(matmuls) == 1:
        return Recognised(None, fn, name, "a matmul fused with other linalg ops (prologue or epilogue): only plain "
                          "matmuls are rewritten")
    if matmuls or any(n.startswith("linalg.matmul") or n.startswith("linalg.batch") for n in names):
        return Recognised(None, fn, name, "several matrix products (attention, fused MLP): only single-matmul "
                          "kernels are rewritten")
    found_row = _rowwise(fn, vals, name)
    if isinstance(found_row, RowKernel):
        return Recognised(found_row, fn, name)
    return Recognised(None, fn, name, found_row)


def _matmul(fn: Operation, mm: Operation, vals: _Values, ops: list[Operation], name: str) -> MatmulKernel | str:
    x, y = mm.operands[0], mm.operands[1]
    views = []
    for v in (x, y):
        load = vals.defs.get(v)
        if load is None or load.name != "ktdp.load":
            return "the matmul's operands are not loaded directly from memory views"
        view = _view_of_load(load, vals)
        operand = _operand(view, vals) if view is not None else None
        if operand is None or len(operand.shape) != 2:
            return "the matmul's operands do not come from 2-D global views of function arguments"
        views.append(operand)
    stores = [op for op in ops if op.name == "ktdp.store"]
    if len(stores) != 1:
        return "a matmul kernel must store exactly one result"
    view = _view_of_load(stores[0], vals)
    c = _operand(view, vals) if view is not None else None
    if c is None or len(c.shape) != 2:
        return "the matmul's result is not stored to a 2-D global view of a function argument"
    a, b = views
    M, K = a.shape
    K2, N = b.shape
    if K != K2 or c.shape != (M, N):
        return f"inconsistent matmul shapes A {a.shape}, B {b.shape}, C {c.shape}"
    allowed = {"arith.constant", "arith.muli", "arith.addi", "scf.for", "scf.yield", "tensor.empty", "linalg.fill",
               "ktdp.get_compute_tile_id", "ktdp.construct_memory_view", "ktdp.construct_access_tile", "ktdp.load",
               "ktdp.store", "linalg.matmul", "arith.truncf", "func.return"}
    extra = sorted({op.name for op in ops} - allowed)
    if extra:
        return f"ops beyond a plain matmul ({', '.join(extra)}): an epilogue is not rewritten"
    return MatmulKernel(M, N, K, a, b, c, name)


def _rowwise(fn: Operation, vals: _Values, name: str) -> RowKernel | str:
    body = fn.regions[0].blocks[0].operations
    loops = [op for op in body if op.name == "scf.for"]
    tid = [op for op in body if op.name == "ktdp.get_compute_tile_id"]
    if len(loops) != 1 or len(tid) != 1 or len(tid[0].results) != 1:
        return "no single row loop over a 1-D grid (scf.for %r = %tid * B to R step S)"
    loop = loops[0]
    if loop.results or len(loop.operands) != 3:
        return "the row loop carries values (iter_args)"
    first = vals.defs.get(loop.operands[0])
    if first is None or first.name != "arith.muli" or tid[0].results[0] not in first.operands:
        return "the row loop does not start at tile id x block"
    other = [o for o in first.operands if o != tid[0].results[0]]
    B = vals.const(other[0]) if other else None
    if B is None or B <= 0:
        return "the row block size is not a constant"
    block = loop.regions[0].blocks[0]
    iv = block.arguments[0].name
    inner = block.operations
    if any(op.regions and op.name.startswith("scf.") for op in inner):
        return "nested loops in the row loop"
    streamed: list[tuple[Operand, int]] = []
    outputs: list[tuple[Operand, int]] = []
    for op in inner:
        if op.name not in ("ktdp.load", "ktdp.store"):
            continue
        tile = vals.defs.get(op.operands[-1] if op.name == "ktdp.store" else op.operands[0])
        if tile is None or tile.name != "ktdp.construct_access_tile" or len(tile.operands) < 2 or tile.operands[1] != iv:
            return "a load or store in the row loop is not indexed by the row"
        if any(vals.const(o) is None for o in tile.operands[2:]):
            return "a load or store in the row loop has a non-constant column offset"
        t = tile.result_types[0]
        if not isinstance(t, ty.AccessTileType) or t.shape[0] != B:
            return "a block in the row loop does not span B rows"
        view = vals.defs.get(tile.operands[0])
        operand = _operand(view, vals) if view is not None else None
        if operand is None:
            return "a row block is not in a global view of a function argument"
        per_row = Operand(operand.arg, operand.dtype, operand.itemsize, tuple(int(d or 0) for d in t.shape[1:]))
        (outputs if op.name == "ktdp.store" else streamed).append((per_row, operand.shape[0]))
    if not streamed or not outputs:
        return "the row loop does not load and store row blocks"
    rows = {r for _, r in streamed + outputs}
    if len(rows) != 1:
        return f"row blocks come from views with different row counts {sorted(rows)}"
    R = rows.pop()
    ub = vals.const(loop.operands[1])
    if ub is not None and ub != R:
        return f"the row loop ends at {ub}, not at the views' {R} rows"
    if R % B:
        return f"{R} rows are not a multiple of the block {B}"
    vector: dict[str, float] = {}
    trans: dict[str, float] = {}
    nvec = 0
    live = 0
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
        scalar = [inner_op.name for inner_op in op.walk() if inner_op is not op and inner_op.name != "linalg.yield"]
        n_trans = sum(1 for s in scalar if s in TRANSCENDENTAL) + (1 if op.name in TRANSCENDENTAL else 0)
        n_plain = max(1, len(scalar) - n_trans) if scalar or op.name not in TRANSCENDENTAL else 0
        vector[dt] = vector.get(dt, 0.0) + elems * n_plain
        if n_trans:
            trans[dt] = trans.get(dt, 0.0) + elems * n_trans
        nvec += 1
    resident, resident_bytes = [], 0
    for op in body:
        if op is loop:
            continue
        for t in op.result_types:
            if not (isinstance(t, ty.TensorType) and t.has_static_shape):
                continue
            nbytes = math.prod(int(d or 0) for d in t.shape) * itemsize(t.element_type)
            if t.shape and t.shape[0] == B and op.name == "ktdp.load":
                return f"a tensor loaded before the row loop has {B} leading rows, like the row block: ambiguous"
            if t.shape and t.shape[0] == B:
                live += nbytes // B  # made before the loop for its body (scratch, broadcast weights): scales with B
            else:
                resident_bytes += nbytes
        if op.name == "ktdp.load":
            view = _view_of_load(op, vals)
            operand = _operand(view, vals) if view is not None else None
            if operand is None:
                return "a load before the row loop does not read a global view of a function argument"
            resident.append(operand)
    return RowKernel(R, B, [s for s, _ in streamed], resident, [o for o, _ in outputs], vector, trans, nvec, live,
                     resident_bytes, name)
