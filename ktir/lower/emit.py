"""KernelSpecs and bundles to KTIR modules.

One SDSC becomes one kernel:

    func.func @sdsc_3_exp(%Tensor0: index, %Tensor1: index) attributes {grid = [32]}

with one `index` argument per tensor: the tensor's base as an element offset, in global
memory for HBM tensors and in the executing tile's ct_local memory for LX tensors. Each
tile views every tensor in its stick layout, builds the access tile of its work slice,
loads, computes (see `compute`) and stores.

A bundle becomes a module with one grid-less function per SDSC, taking the core id as its
first argument, and a driver kernel (the bundle's function name, grid = the most cores any
step uses) that calls them in order on every tile that the step uses. Tile t is core t in
every step, so what a step leaves in ct_local memory is there for the next; steps are
separated by a barrier (an all-tile `ktdp.inter_tile_reduce` of a token, since KTIR orders
tiles only through inter-tile ops). The driver's arguments are the memory regions the
bundle touches: one per bundle argument or allocation, and, for concrete addresses, one per
group of overlapping tensors (`%hbm_0x...`, `%lx_0x...`, named after their SDSC address).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ktir.builder import Value, ssa
from ktir.dialects.names import Arith, Func, Ktdp, Scf
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Type
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.lower.bundle import Bundle, Execute, Linear, LoopNode, Node, Var
from ktir.lower.compute import emit_compute
from ktir.lower.errors import SdscError
from ktir.lower.layout import (
    AddressCheck,
    KernelSpec,
    TensorSpec,
    build_kernel,
    check_addresses,
    element_bytes,
    function_name,
)
from ktir.lower.ops import FuncEmitter, ModuleContext, tile_set_range
from ktir.lower.sdsc_model import SdscFile
from ktir.syntax.printer import print_module

GLOBAL = at.MemorySpaceAttr(kind="global")
CT_LOCAL = at.MemorySpaceAttr(kind="ct_local")


@dataclass(frozen=True)
class ArgInfo:
    """An argument of the entry function: an element offset the host binds to an array."""

    name: str  # without %
    space: Literal["global", "ct_local"]
    element_type: Type
    elements: int  # how many elements the array must hold from that offset
    address: int | None  # the SDSC byte address it stands for, when concrete
    users: tuple[str, ...]  # "<kernel>.<tensor>" that live in it

    def describe(self) -> str:
        where = f"SDSC address {self.address} ({self.address:#x})" if self.address is not None else "a symbolic address"
        return (f"%{self.name}: {self.space} {_type_text(self.element_type)}[{self.elements}] at {where}; "
                f"holds {', '.join(self.users)}")


@dataclass
class Lowered:
    """The result of a lowering: the module, what it was made from, and how to call it."""

    module: Module
    entry: str
    args: list[ArgInfo]
    kernels: list[KernelSpec]
    checks: dict[str, list[AddressCheck]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return print_module(self.module)


def _type_text(t: Type) -> str:
    if isinstance(t, ty.FloatType):
        return t.kind
    if isinstance(t, ty.IntegerType):
        return f"i{t.width}"
    return str(t)


# ---------------------------------------------------------------------------- one SDSC


def lower_sdsc(sdsc: SdscFile) -> Lowered:
    """Lower one SDSC to a module with one kernel (every tensor an argument)."""
    kernel = build_kernel(sdsc)
    checks = check_addresses(kernel)
    ctx = ModuleContext()
    emit_kernel(ctx, kernel, standalone=True, checks=checks)
    args = [
        ArgInfo(
            name=t.name,
            space="global" if t.space == "hbm" else "ct_local",
            element_type=t.element_type,
            elements=t.view_bytes // t.word_bytes,
            address=kernel.base(t) if t.addresses[0].value is not None else None,
            users=(f"{kernel.name}.{t.name}",),
        )
        for t in kernel.tensors
    ]
    return Lowered(ctx.module, kernel.name, args, [kernel], {kernel.name: checks})


def emit_kernel(ctx: ModuleContext, kernel: KernelSpec, *, standalone: bool, checks: Sequence[AddressCheck] = ()) -> None:
    """Append the kernel's function: with a grid (standalone), or grid-less taking %core first."""
    params = [(t.name, ty.INDEX) for t in kernel.tensors]
    if not standalone:
        params.insert(0, ("core", ty.INDEX))
    grid = [kernel.num_cores] if standalone else None
    visibility = None if standalone else {"sym_visibility": "private"}
    with ctx.builder.func(kernel.name, params, grid=grid, attributes=visibility) as values:
        func_op = ctx.module.operations[-1]
        func_op.comments.extend(f"// {line}" for line in _kernel_comments(kernel, checks, standalone))
        e = FuncEmitter(ctx)
        for name, _ in params:
            e.reserve(f"%{name}")
        args = dict(zip((n for n, _ in params), values, strict=True))
        core = e.tile_id("core") if standalone else args["core"]
        _emit_kernel_body(e, kernel, core, {t.index: args[t.name] for t in kernel.tensors})
        e.op(Func.return_)


def _emit_kernel_body(e: FuncEmitter, kernel: KernelSpec, core: Value, bases: Mapping[int, Value]) -> None:
    slices = _slice_exprs(e, kernel, core)
    tiles: dict[int, Value] = {}
    access: dict[int, Value] = {}
    for t in kernel.tensors:
        space = GLOBAL if t.space == "hbm" else CT_LOCAL
        view = e.memory_view(bases[t.index], t.view_shape, t.strides, t.element_type, space, hint=f"{t.name}_view")
        subscripts = [_start(t, d_index, slices) for d_index in range(len(t.device))]
        access[t.index] = e.access_tile(view, subscripts, t.tile_shape, hint=f"{t.name}_tile")
        if t.role == "input":
            tiles[t.index] = e.load(access[t.index], t.element_type, hint=f"{t.name}_in")
    results = emit_compute(e, kernel, tiles)
    for index in kernel.outputs:
        e.store(results[index], access[index])


def _start(t: TensorSpec, position: int, slices: Mapping[str, af.AffineExpr]) -> af.AffineExpr:
    d = t.device[position]
    if t.space == "lx" or d.kind == "lanes" or not t.spans(d.dim):
        return af.const(0)
    return slices[d.dim] * d.tile


def _slice_exprs(e: FuncEmitter, kernel: KernelSpec, core: Value) -> dict[str, af.AffineExpr]:
    """Each dim's work slice as an affine function of the core id, or a table lookup."""
    exprs = radix_slices(kernel)
    if exprs is not None:
        c = ssa(core)
        return {name: _radix_expr(c, stride, splits, kernel.num_cores) for name, (stride, splits) in exprs.items()}
    split = [d for d in kernel.dims if d.splits > 1]
    table = e.dense_index([[s[d.name] for d in split] for s in kernel.slices], hint="work_slices")
    out: dict[str, af.AffineExpr] = {d.name: af.const(0) for d in kernel.dims}
    for col, d in enumerate(split):
        value = e.extract(table, [core, e.index(col)], hint=f"slice_{d.name}")
        out[d.name] = ssa(value)
    return out


def radix_slices(kernel: KernelSpec) -> dict[str, tuple[int, int]] | None:
    """{dim: (stride, splits)} when slice(c) = (c floordiv stride) mod splits for every core."""
    out: dict[str, tuple[int, int]] = {}
    for d in kernel.dims:
        values = [s[d.name] for s in kernel.slices]
        if d.splits == 1:
            out[d.name] = (1, 1)
            continue
        stride = values.index(1)
        if stride == 0 or any(v != (c // stride) % d.splits for c, v in enumerate(values)):
            return None
        out[d.name] = (stride, d.splits)
    return out


def _radix_expr(core: af.AffineExpr, stride: int, splits: int, cores: int) -> af.AffineExpr:
    if splits == 1:
        return af.const(0)
    expr = core.floordiv(stride) if stride > 1 else core
    return expr if stride * splits >= cores else expr.mod(splits)


def _kernel_comments(kernel: KernelSpec, checks: Sequence[AddressCheck], standalone: bool) -> list[str]:
    src = kernel.source.replace("\\", "/").rsplit("/", 1)[-1] if kernel.source else "<sdsc>"
    lines = [f"SDSC {kernel.key} ({src}): {kernel.opfunc}" + (f" on {kernel.ex_unit}" if kernel.ex_unit else "")
             + f", {kernel.num_cores} core{'s' if kernel.num_cores > 1 else ''}."]
    dims = ", ".join(f"{d.name} = {d.size}" + (f" in {d.splits} slices of {d.per_core}" if d.splits > 1 else "") for d in kernel.dims)
    lines.append(f"Iteration space: {dims}.")
    radix = radix_slices(kernel)
    core = "c" if standalone else "%core"
    if radix is not None:
        parts = [f"{name} = {_radix_text(core, s, n, kernel.num_cores)}" for name, (s, n) in radix.items() if n > 1]
        if parts:
            lines.append(f"Work slice of tile {core}: {', '.join(parts)}.")
    else:
        lines.append("Work slices: looked up per core in coreIdToWkSlice_ (not a mixed-radix order).")
    lines.append("Arguments are element offsets: global memory for HBM tensors, the tile's ct_local memory for LX tensors.")
    for t in kernel.tensors:
        where = "global" if t.space == "hbm" else "ct_local"
        sparse = ", one element per stick (lane 0)" if t.sparse else ""
        layout = t.describe_layout() if t.space == "hbm" else f"per-core {t.describe_layout()}"
        lines.append(f"  %{t.name}: {t.role}, {where}, {_type_text(t.element_type)} ({t.data_format}), "
                     f"layout class {t.layout_label} {layout}{sparse}.")
    for c in checks:
        lines.append(f"Addresses: {c}.")
    return lines


def _radix_text(core: str, stride: int, splits: int, cores: int) -> str:
    text = core if stride == 1 else f"{core} floordiv {stride}"
    return text if stride * splits >= cores else f"({text}) mod {splits}"


# ---------------------------------------------------------------------------- bundles


@dataclass
class _Region:
    """A memory region of the driver: one argument, holding the tensors that fall in it."""

    space: Literal["hbm", "lx"]
    var: Var | None  # the bundle variable it is based on; None for concrete addresses
    lo: int  # byte range relative to the base (var, or 0 for concrete)
    hi: int
    element: Type
    users: list[str] = field(default_factory=list)
    base: int = 0  # concrete: the byte address the argument stands for
    name: str = ""


@dataclass(frozen=True)
class _Placement:
    """Where one tensor of one step lives: region + byte offset from the region base."""

    region: _Region
    offset: Linear  # bytes from the region's base; terms over loop variables only


def lower_bundle(bundle: Bundle) -> Lowered:
    """Lower a bundle to a module: one function per SDSC plus the driver kernel."""
    kernels: dict[str, KernelSpec] = {}
    checks: dict[str, list[AddressCheck]] = {}
    names: set[str] = {bundle.name}
    for filename, sdsc in bundle.sdscs.items():
        if sdsc is None:
            continue
        kernel = build_kernel(sdsc, name=_unique(function_name(sdsc), names))
        checks[kernel.name] = check_addresses(kernel)
        kernels[filename] = kernel
    if not kernels:
        raise SdscError("none of the SDSC files the bundle executes is present", bundle.path)
    placements = _place(bundle, kernels)
    regions = _name_regions(placements)
    ctx = ModuleContext()
    for kernel in kernels.values():
        emit_kernel(ctx, kernel, standalone=False, checks=checks[kernel.name])
    _emit_driver(ctx, bundle, kernels, placements, regions)
    args = [
        ArgInfo(
            name=r.name,
            space="global" if r.space == "hbm" else "ct_local",
            element_type=r.element,
            elements=(r.hi - (r.lo if r.var is None else 0)) // element_bytes(r.element),
            address=r.base if r.var is None else None,
            users=tuple(r.users),
        )
        for r in regions
    ]
    return Lowered(ctx.module, bundle.name, args, list(kernels.values()), checks, bundle.missing)


def _unique(name: str, taken: set[str]) -> str:
    out, n = name, 1
    while out in taken:
        out = f"{name}_{n}"
        n += 1
    taken.add(out)
    return out


def _address(kernel: KernelSpec, step: Execute, t: TensorSpec, core: int, bundle: Bundle) -> Linear:
    a = t.addresses[core]
    if a.symbol is None:
        assert a.value is not None
        return Linear(a.value)
    value = step.bindings.get(a.symbol)
    if value is None:
        raise SdscError(
            f"{step.filename}: {t.name} core {core} has symbolic start address {a.symbol}, which this sdsc_execute "
            "does not bind (symbol_ids)",
            bundle.path, step.line, step.column,
        )
    return value


def _place(bundle: Bundle, kernels: Mapping[str, KernelSpec]) -> dict[tuple[int, int], _Placement]:
    """Resolve every tensor of every step to a region and offset; check symbolic per-core addresses."""
    steps = [s for s in bundle.steps() if s.filename in kernels]
    spans: list[tuple[int, int, Linear, TensorSpec, KernelSpec]] = []
    for n, step in enumerate(steps):
        kernel = kernels[step.filename]
        for t in kernel.tensors:
            base = _address(kernel, step, t, 0, bundle) - Linear(t.core_offset(kernel.slices[0]) * t.word_bytes)
            for core in range(1, kernel.num_cores):
                got = _address(kernel, step, t, core, bundle)
                want = base + Linear(t.core_offset(kernel.slices[core]) * t.word_bytes)
                if got != want:
                    raise SdscError(
                        f"{step.filename}: {t.name} ({t.space}) core {core} starts at {got}, but the layout "
                        f"{t.describe_layout()} gives {want}",
                        bundle.path, step.line, step.column,
                    )
            spans.append((n, t.index, base, t, kernel))
    regions: list[_Region] = []
    out: dict[tuple[int, int], _Placement] = {}
    for n, index, base, t, kernel in spans:
        where = f"{steps[n].filename}: {t.name}"
        bases = base.vars("arg", "alloc")
        if len(bases) > 1 or (bases and bases[0][1] != 1):
            raise SdscError(f"{where}: address {base} is not one bundle argument plus an offset", bundle.path, steps[n].line)
        var = bases[0][0] if bases else None
        offset = base - Linear.of(var) if var is not None else base
        lo, hi = _range(offset)
        hi += t.view_bytes
        user = f"{kernel.name}.{t.name}"
        region = _join(regions, t.space, var, lo, hi, t.element_type, user, where, bundle)
        out[(n, index)] = _Placement(region, offset)
    return out


def _range(offset: Linear) -> tuple[int, int]:
    lo = hi = offset.const
    for var, c in offset.terms:
        first, last = c * var.lower, c * var.last
        lo += min(first, last)
        hi += max(first, last)
    return lo, hi


def _join(regions: list[_Region], space: Literal["hbm", "lx"], var: Var | None, lo: int, hi: int, element: Type,
          user: str, where: str, bundle: Bundle) -> _Region:
    """Add [lo, hi) to the region it overlaps (merging regions it bridges), or start one."""
    hits = [r for r in regions if r.var == var and (r.var is not None or (r.space == space and r.lo < hi and lo < r.hi))]
    for r in hits:
        if r.space != space:
            raise SdscError(f"{where}: bundle value %{var.name if var else '?'} addresses both hbm and lx", bundle.path)
        if r.element != element:
            raise SdscError(
                f"{where}: {_type_text(element)} data overlaps {_type_text(r.element)} data of {r.users[0]} in one region; "
                "regions of mixed element types are not supported",
                bundle.path,
            )
    if not hits:
        region = _Region(space, var, lo, hi, element, [user])
        regions.append(region)
        return region
    keep = hits[0]
    for r in hits[1:]:
        keep.lo, keep.hi = min(keep.lo, r.lo), max(keep.hi, r.hi)
        keep.users.extend(u for u in r.users if u not in keep.users)
        r.users.clear()
        regions.remove(r)
    keep.lo, keep.hi = min(keep.lo, lo), max(keep.hi, hi)
    if user not in keep.users:
        keep.users.append(user)
    return keep


def _name_regions(placements: Mapping[tuple[int, int], _Placement]) -> list[_Region]:
    regions: list[_Region] = []
    for p in placements.values():
        if p.region not in regions:
            regions.append(p.region)
    taken: set[str] = set()
    for r in regions:
        if r.var is not None:
            if r.var.kind == "alloc" and r.var.size is not None and r.hi > r.var.size:
                raise SdscError(f"tensors in %{r.var.name} reach byte {r.hi}, past its {r.var.size}-byte allocation")
            r.base = 0
            r.name = _unique(r.var.name, taken)
        else:
            r.base = r.lo
            prefix = "hbm" if r.space == "hbm" else "lx"
            r.name = _unique(f"{prefix}_{r.lo:#x}", taken)
        if r.base % element_bytes(r.element):
            raise SdscError(f"region %{r.name} starts at byte {r.base}, not a multiple of its {element_bytes(r.element)}-byte elements")
    regions.sort(key=lambda r: (r.var is None, r.space != "hbm", r.base, r.name))
    return regions


def _emit_driver(ctx: ModuleContext, bundle: Bundle, kernels: Mapping[str, KernelSpec],
                 placements: Mapping[tuple[int, int], _Placement], regions: Sequence[_Region]) -> None:
    grid = max(k.num_cores for k in kernels.values())
    params = [(r.name, ty.INDEX) for r in regions]
    name = bundle.name
    with ctx.builder.func(name, params, grid=[grid]) as values:
        func_op = ctx.module.operations[-1]
        func_op.comments.extend(f"// {line}" for line in _driver_comments(bundle, regions, grid))
        e = FuncEmitter(ctx)
        for p, _ in params:
            e.reserve(f"%{p}")
        driver = _Driver(e, bundle, kernels, placements, dict(zip((r.name for r in regions), values, strict=True)), grid)
        driver.run()
        e.op(Func.return_)


def _driver_comments(bundle: Bundle, regions: Sequence[_Region], grid: int) -> list[str]:
    src = bundle.path.replace("\\", "/")
    lines = [f"Bundle @{bundle.name} ({src.rsplit('/', 2)[-2] + '/' if '/' in src else ''}bundle.mlir): "
             f"the SDSC steps in order on a grid of {grid} (tile t is core t in every step).",
             "Each step runs on the tiles it uses; steps are separated by an all-tile barrier (inter_tile_reduce of a token).",
             "ct_local memory is not cleared between steps: LX data left by one step is read by the next.",
             "Arguments are element offsets of the memory regions the steps use:"]
    for r in regions:
        space = "global" if r.space == "hbm" else "ct_local"
        what = f"bundle value %{r.var.name}" if r.var is not None else f"SDSC address {r.base}"
        size = (r.hi - (r.lo if r.var is None else 0)) // element_bytes(r.element)
        lines.append(f"  %{r.name}: {space}, {_type_text(r.element)}[{size}], {what}: {', '.join(r.users)}.")
    if bundle.missing:
        lines.append(f"Not present, left out: {', '.join(bundle.missing)}.")
    return lines


class _Driver:
    def __init__(self, e: FuncEmitter, bundle: Bundle, kernels: Mapping[str, KernelSpec],
                 placements: Mapping[tuple[int, int], _Placement], region_args: Mapping[str, Value], grid: int) -> None:
        self.e = e
        self.bundle = bundle
        self.kernels = kernels
        self.placements = placements
        self.region_args = region_args
        self.grid = grid
        self.step_index = 0
        self.ivs: dict[str, Value] = {}
        self.core = e.tile_id("core")
        present = [s for s in bundle.steps() if s.filename in kernels]
        self.total = len(present)
        # Values used by many steps are defined up front, so that they dominate steps in loops and after them.
        self.guards: dict[int, Value] = {}
        for cores in sorted({kernels[s.filename].num_cores for s in present} - {grid}):
            limit = e.index(cores)
            self.guards[cores] = e.cmpi("ult", self.core, limit, hint=f"in_{cores}")
        self.token: Value | None = None
        if self.total > 1 or any(s.loops for s in present):
            tensor = ty.TensorType(shape=(1,), element_type=ty.I32)
            self.token = e.one(Arith.constant, [], tensor, {"value": at.DenseAttr(type=tensor, values=0)}, hint="token")

    def run(self) -> None:
        self.nodes(self.bundle.body, in_loop=False)

    def nodes(self, nodes: Sequence[Node], in_loop: bool) -> None:
        for node in nodes:
            if isinstance(node, LoopNode):
                self.loop(node)
            else:
                self.step(node, in_loop)

    def loop(self, node: LoopNode) -> None:
        e = self.e
        v = node.loop.var
        lb, ub, step = e.index(v.lower), e.index(v.upper), e.index(v.step)
        iv = BlockArgument(name=e.name(v.name), type=ty.INDEX)
        body = Block(arguments=[iv])
        self.ivs[v.name] = Value(iv.name, iv.type)
        with e.block(body):
            self.nodes(node.body, in_loop=True)
            e.op(Scf.yield_)
        e.op(Scf.for_, [lb, ub, step], [], regions=[Region(blocks=[body])])

    def step(self, step: Execute, in_loop: bool) -> None:
        e = self.e
        kernel = self.kernels.get(step.filename)
        if kernel is None:
            e.comment(f"{step.filename}: not present, left out")
            return
        n = self.step_index
        self.step_index += 1
        e.comment(f"{step.filename}: {kernel.key} on {kernel.num_cores} core{'s' if kernel.num_cores > 1 else ''}")
        operands = [self.core]
        for t in kernel.tensors:
            operands.append(self.address(self.placements[(n, t.index)], t, kernel))
        call = Operation(name=Func.call, operands=[v.name for v in operands], operand_types=[v.type for v in operands],
                         attributes={"callee": at.SymbolRefAttr(root=kernel.name)})
        if kernel.num_cores < self.grid:
            active = self.guards[kernel.num_cores]
            then = Block(operations=[call, Operation(name=Scf.yield_)])
            e.op(Scf.if_, [active], [], regions=[Region(blocks=[then]), Region(blocks=[])])
        else:
            e.op(Func.call, operands, [], {"callee": at.SymbolRefAttr(root=kernel.name)})
        if in_loop or n + 1 < self.total:
            self.barrier()

    def address(self, p: _Placement, t: TensorSpec, kernel: KernelSpec) -> Value:
        region = p.region
        arg = self.region_args[region.name]
        offset = p.offset - Linear(region.base)
        w = t.word_bytes
        if offset.const % w or any(c % w for _, c in offset.terms):
            raise SdscError(f"{kernel.name}.{t.name}: byte offset {offset} in %{region.name} is not a whole number of "
                            f"{w}-byte elements", self.bundle.path)
        if offset.is_const and offset.const == 0:
            return arg
        expr: af.AffineExpr = ssa(arg) + offset.const // w
        for var, c in offset.terms:
            expr = expr + ssa(self.ivs[var.name]) * (c // w)
        return self.e.apply(expr, hint=f"{kernel.name}_{t.name}")

    def barrier(self) -> None:
        e = self.e
        tensor = ty.TensorType(shape=(1,), element_type=ty.I32)
        token = self.token
        assert token is not None
        tiles = e.ctx.alias(at.IntegerSetAttr(value=tile_set_range(self.grid)), f"all_{self.grid}_tiles")
        group = e.ctx.alias(at.IntegerSetAttr(value=af.IntegerSet(num_dims=1, num_symbols=0, constraints=(
            af.Constraint(expr=af.dim(0), is_equality=True),))), "one_group")
        future_type = ty.TileFutureType(partial_types=(tensor,), groups=group)
        gid = BlockArgument(name=e.name("gid"), type=ty.INDEX)
        produce_body = Block(arguments=[gid])
        with e.block(produce_body):
            e.op(Ktdp.yield_partial, [token], [])
        (future,) = e.op(Ktdp.inter_tile_produce, [], [future_type], {"producer_tiles_per_group": tiles},
                         [Region(blocks=[produce_body])], hint="barrier")
        lhs = BlockArgument(name=e.name("lhs"), type=tensor)
        rhs = BlockArgument(name=e.name("rhs"), type=tensor)
        combine = Block(arguments=[lhs, rhs])
        with e.block(combine):
            s = e.one(Arith.addi, [Value(lhs.name, tensor), Value(rhs.name, tensor)], tensor, hint="s")
            e.op(Ktdp.yield_reduced, [s], [])
        e.op(Ktdp.inter_tile_reduce, [future, token], [tensor], {"consumer_tiles_per_group": tiles},
             [Region(blocks=[combine])], hint="synced")
