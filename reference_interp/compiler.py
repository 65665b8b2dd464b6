"""Compile each function once into closures; run them on frames.

Every SSA value of a function gets a slot in a flat Python list (the *frame*); slot 0
holds the executing tile's `TileContext`. Each op compiles, once per function, into a
closure `f(frame)` that reads its operand slots and writes its result slots; a block is
a tuple of closures run in a tight loop. Op implementations are registered per op name
with `@impl("arith.addf")` (one module per dialect under `reference_interp.ops`), and
they specialise at compile time on the op's types (scalar or tensor, float or integer,
width), so dispatch costs one Python call per executed op.

Ops that may block on another tile (`inter_tile_*` delivery ops, and any op whose regions
contain one) compile to generator functions; blocks containing them run as generators
stepped by the tile scheduler. Everything else runs as plain calls.

Inside `linalg.generic`/`map`/`reduce`/`tensor.generate` bodies, ops compile in *vector
mode*: scalar-typed ops receive numpy arrays spanning the whole iteration space, so a
body runs once per op, not once per element.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from ktir.dialects.access import AccessError, OpView, named
from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Memref, Scf, Tensor
from ktir.dialects.registry import OPS, contractions
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Block, Module, Operation, Region

from .dtypes import UnsupportedType
from .errors import CompileError, KtirRuntimeError
from .runtime import Options, TileContext, Undefined
from .trace import TraceEvent, access_span

OpFn = Callable[[list[Any]], None]
GenFn = Callable[[list[Any]], Generator[Any, None, None]]
Factory = Callable[["FuncCompiler", Operation], "OpFn | Blocking"]

FACTORIES: dict[str, Factory] = {}
# Operand positions an op only uses for their shape (never reads the contents), for the
# strict-mode check on tensor.empty; a function of the op.
SHAPE_ONLY: dict[str, Callable[[Operation], set[int]]] = {}


class Blocking:
    """A compiled op that may wait for other tiles: a generator function."""

    __slots__ = ("fn",)

    def __init__(self, fn: GenFn) -> None:
        self.fn = fn


# Set by reference_interp.ops.linalg_buffers: compiles a linalg op in buffer form (memref
# operands, no results) through its tensor-form factory; None for an op in tensor form.
BUFFER_FORM: list[Callable[[FuncCompiler, Operation, Factory], OpFn | None]] = []


def impl(*names: str, shape_only: Callable[[Operation], set[int]] | None = None) -> Callable[[Factory], Factory]:
    """Register the compile-time factory of one or more ops."""

    def register(factory: Factory) -> Factory:
        for name in names:
            if name not in OPS:
                raise ValueError(f"no op named {name} in the registry")
            FACTORIES[name] = factory
            if shape_only is not None:
                SHAPE_ONLY[name] = shape_only
        return factory

    return register


TERMINATORS = frozenset(name for name, d in OPS.items() if "Terminator" in d.traits)


class Uninit:
    """Strict mode: a tensor whose elements are (partly) tensor.empty's unspecified contents."""

    __slots__ = ("data", "defined")

    def __init__(self, data: np.ndarray, defined: np.ndarray) -> None:
        self.data = data
        self.defined = defined

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.data.dtype


# ---------------------------------------------------------------------- blocks


class CBlock:
    """A compiled block: op closures, block-argument slots and the terminator's operands."""

    __slots__ = ("fns", "metas", "gens", "arg_slots", "term", "term_slots", "blocking", "n", "oslots")

    def __init__(self) -> None:
        self.fns: tuple[Any, ...] = ()
        self.metas: tuple[Operation, ...] = ()
        self.gens: tuple[bool, ...] = ()
        self.arg_slots: tuple[int, ...] = ()
        self.term: Operation | None = None
        self.term_slots: tuple[int, ...] = ()
        self.blocking = False
        self.n = 0
        self.oslots: tuple[tuple[int, ...], ...] = ()  # operand slots per op, for diagnostics

    def run(self, fr: list[Any]) -> None:
        ctx: TileContext = fr[0]
        ctx.steps += self.n
        if ctx.steps > ctx.step_limit:
            raise _step_limit(ctx, self)
        i = 0
        try:
            for f in self.fns:
                f(fr)
                i += 1
        except Exception as e:  # noqa: BLE001 - every failure becomes a diagnostic
            raise _wrap(e, self.metas[i] if i < len(self.metas) else self.term, ctx, self._undefined(i, fr)) from _cause(e)

    def gen(self, fr: list[Any]) -> Generator[Any, None, None]:
        ctx: TileContext = fr[0]
        ctx.steps += self.n
        if ctx.steps > ctx.step_limit:
            raise _step_limit(ctx, self)
        i = 0
        try:
            for f, g in zip(self.fns, self.gens, strict=True):
                if g:
                    yield from f(fr)
                else:
                    f(fr)
                i += 1
        except Exception as e:  # noqa: BLE001
            raise _wrap(e, self.metas[i] if i < len(self.metas) else self.term, ctx, self._undefined(i, fr)) from _cause(e)

    def results(self, fr: list[Any]) -> list[Any]:
        return [fr[s] for s in self.term_slots]

    def _undefined(self, i: int, fr: list[Any]) -> Undefined | None:
        if i >= len(self.oslots):
            return None
        for s in self.oslots[i]:
            if type(fr[s]) is Undefined:
                return fr[s]  # type: ignore[no-any-return]
        return None


def _last_uses(c: Any, ops: list[Operation], term: Operation | None) -> dict[int, tuple[int, ...]]:
    """For a vectorised body (its values are whole-iteration-space arrays): per op position,
    the slots of values defined in the block that no later op (nor the terminator) reads, to
    drop once that op ran. The body's temporaries then die as in a numpy expression, not all
    together when the frame ends (freeing many large arrays at once makes glibc trim its heap,
    and the next arrays fault their memory in again)."""
    defined = {n for op in ops for n in op.results}
    last: dict[str, int] = {}
    for k, op in enumerate(ops):
        for inner in op.walk():
            for n in inner.operands:
                if n in defined:
                    last[n] = k
    kept = set(term.operands) if term is not None else set()
    out: dict[int, list[int]] = {}
    for n, k in last.items():
        slot = c.slots.get(n)
        if n not in kept and slot:
            out.setdefault(k, []).append(slot)
    return {k: tuple(v) for k, v in out.items()}


def _then_drop(f: Any, slots: tuple[int, ...]) -> Any:
    def run(fr: list[Any]) -> None:
        f(fr)
        for s in slots:
            fr[s] = None

    return run


def _cause(e: Exception) -> BaseException | None:
    return None if isinstance(e, KtirRuntimeError) else e


def _step_limit(ctx: TileContext, block: CBlock) -> KtirRuntimeError:
    op = block.metas[0] if block.metas else block.term
    err = KtirRuntimeError(
        "step-limit",
        f"executed more than {ctx.step_limit} ops (raise the limit, step_limit= or --step-limit, if the program is "
        "meant to run this long)",
        op=op,
    )
    return err.attach(tile=ctx.tile, tile_coords=ctx.coords, grid=ctx.machine.grid)


def _wrap(e: Exception, op: Operation | None, ctx: TileContext, undefined: Undefined | None = None) -> KtirRuntimeError:
    # an op that fails while using a value undefined on this tile (a delivery op's result on a
    # non-consumer) fails because of that value, whatever check noticed it first
    if isinstance(e, KtirRuntimeError) and (undefined is None or e.kind == "undefined"):
        return e.attach(op, ctx.tile, tile_coords=ctx.coords, grid=ctx.machine.grid)
    if undefined is not None:
        err = KtirRuntimeError("undefined", f"uses a value that is undefined on this tile ({undefined.why})")
    elif isinstance(e, ZeroDivisionError):
        err = KtirRuntimeError("undefined", f"division by zero ({e})")
    elif isinstance(e, MemoryError):
        err = KtirRuntimeError("memory-limit", "out of memory")
    elif isinstance(e, UnsupportedType):
        err = KtirRuntimeError("unsupported", str(e))
    elif isinstance(e, RecursionError):
        err = KtirRuntimeError("memory-limit", "nesting too deep")
    else:
        err = KtirRuntimeError("internal", f"{type(e).__name__}: {e}")
    return err.attach(op, ctx.tile, tile_coords=ctx.coords, grid=ctx.machine.grid)


# ---------------------------------------------------------------------- functions


class CompiledFunc:
    def __init__(self, op: Operation, body: CBlock, nslots: int, blocking: bool, arg_types: list[Type]) -> None:
        self.op = op
        self.body = body
        self.nslots = nslots
        self.blocking = blocking
        self.arg_types = arg_types

    @property
    def name(self) -> str:
        sym = self.op.attributes.get("sym_name")
        return str(getattr(sym, "value", "?"))

    def frame(self, ctx: TileContext, args: list[Any]) -> list[Any]:
        """A call's frame: the context in slot 0, the arguments in the entry block's slots."""
        slots = self.body.arg_slots
        # (whether the entry block's arguments have slots 1, 2, ... in order, as the compiler
        # numbers them: the frame is then [ctx, *args] and Nones, built in one go; the Nones)
        layout: tuple[bool, list[None]] | None = self.__dict__.get("_frame_layout")
        if layout is None:
            n = len(slots)
            in_order = slots == tuple(range(1, n + 1))
            layout = self.__dict__["_frame_layout"] = (in_order, [None] * (self.nslots - 1 - n) if in_order else [])
        if layout[0] and len(args) == len(slots):
            fr = [ctx, *args]
            fr += layout[1]
            return fr
        fr = [None] * self.nslots
        fr[0] = ctx
        for s, v in zip(slots, args, strict=True):
            fr[s] = v
        return fr


class Program:
    """A module prepared for execution; compiled functions are cached per mode."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.funcs: dict[str, Operation] = {}
        for fn in module.functions():
            sym = fn.attributes.get("sym_name")
            name = getattr(sym, "value", None)
            if isinstance(name, str):
                self.funcs[name] = fn
        self._compiled: dict[tuple[str, bool, bool, bool], CompiledFunc] = {}
        self._blocking: dict[str, bool] = {}
        self._shares: bool | None = None
        self._has_empty: bool | None = None
        self._widens: bool | None = None
        self._has_calls: bool | None = None
        self._op_ids: dict[int, int] | None = None

    def op_id(self, op: Operation) -> int:
        """The op's position in the module's pre-order walk: its identity in trace events."""
        if self._op_ids is None:
            self._op_ids = {id(o): i for i, o in enumerate(self.module.walk())}
        return self._op_ids.get(id(op), -1)

    def function(self, name: str, options: Options) -> CompiledFunc:
        key = (name, options.trace, options.strict, options.shapes_only)
        found = self._compiled.get(key)
        if found is None:
            if name not in self.funcs:
                raise CompileError(f"no function @{name} in the module")
            found = FuncCompiler(self, self.funcs[name], options).compile()
            self._compiled[key] = found
        return found

    def shares_scratchpads(self) -> bool:
        """Whether a tile can reach another tile's ct_local memory or memref.alloc memory: a
        `ct_id` memory space anywhere in the module (ops, types, aliases), or a memref carried
        by a tile future. When none can, those memories are private to their tile and their
        accesses need no race bookkeeping (the uninitialised-read check still runs)."""
        if self._shares is None:
            roots: list[Any] = [*self.module.attr_aliases.values(), *self.module.type_aliases.values()]
            for op in self.module.walk():
                roots.extend(op.attributes.values())
                roots.extend(op.operand_types)
                roots.extend(op.result_types)
                for region in op.regions:
                    for block in region.blocks:
                        roots.extend(a.type for a in block.arguments)
            self._shares = any(_reaches_other_tiles(r, False) for r in roots)
        return self._shares

    def widens(self) -> bool:
        """Whether an op of the module may widen a loaded narrow float to f32 through the run's
        cache (half.WideCache): a contraction, a linalg.generic (its body may be one) or an
        arith.extf. Runs of other modules do not record their loads for it."""
        if self._widens is None:
            names = {*contractions(), Linalg.generic, Arith.extf}
            self._widens = any(op.name in names for op in self.module.walk())
        return self._widens

    def has_empty(self) -> bool:
        """Whether any function of the module has a tensor.empty."""
        if self._has_empty is None:
            self._has_empty = any(op.name == Tensor.empty for op in self.module.walk())
        return self._has_empty

    def has_calls(self) -> bool:
        if self._has_calls is None:
            self._has_calls = any(op.name == Func.call for op in self.module.walk())
        return self._has_calls

    def func_blocks(self, name: str) -> bool:
        """Whether function @name (transitively) contains an op that can block."""
        if name not in self._blocking:
            self._blocking[name] = False  # recursion guard
            fn = self.funcs.get(name)
            self._blocking[name] = fn is not None and any(self.op_blocks(op) for op in fn.walk() if op is not fn)
        return self._blocking[name]

    def op_blocks(self, op: Operation) -> bool:
        if op.name in BLOCKING_OPS:
            return True
        if op.name == Func.call:
            callee = op.attributes.get("callee")
            return isinstance(callee, at.SymbolRefAttr) and self.func_blocks(callee.root)
        return False

    # --------------------------------------------------------------- resolution

    def attr(self, value: Attribute | None) -> Attribute | None:
        seen = 0
        while isinstance(value, at.AttrAliasRef):
            value = self.module.attr_aliases.get(value.name)
            seen += 1
            if seen > 64:
                raise CompileError("attribute alias cycle")
        return value

    def type(self, t: Type) -> Type:
        seen = 0
        while isinstance(t, ty.TypeAliasRef):
            found = self.module.type_aliases.get(t.name)
            if found is None:
                raise CompileError(f"undefined type alias !{t.name}")
            t = found
            seen += 1
            if seen > 64:
                raise CompileError("type alias cycle")
        if isinstance(t, ty.TensorType | ty.MemRefType) and isinstance(t.element_type, ty.TypeAliasRef):
            return t.model_copy(update={"element_type": self.type(t.element_type)})
        return t


def _reaches_other_tiles(value: Any, in_future: bool) -> bool:
    """A ct_id memory space, or (inside a tile future type) a memref or an alias, in `value`."""
    if isinstance(value, at.MemorySpaceAttr):
        return value.ct_id is not None
    if in_future and isinstance(value, ty.MemRefType | ty.UnrankedMemRefType | ty.TypeAliasRef | ty.DialectType):
        return True  # (an alias or an opaque type might hide a memref: assume it does)
    if isinstance(value, Attribute | Type):
        inside = in_future or isinstance(value, ty.TileFutureType)
        return any(_reaches_other_tiles(getattr(value, name), inside) for name in type(value).model_fields)
    if isinstance(value, list | tuple):
        return any(_reaches_other_tiles(v, in_future) for v in value)
    if isinstance(value, dict):
        return any(_reaches_other_tiles(v, in_future) for v in value.values())
    return False


BLOCKING_OPS = frozenset({
    Ktdp.inter_tile_consume, Ktdp.inter_tile_reduce, Ktdp.inter_tile_gather,
    Ktdp.inter_tile_scatter, Ktdp.inter_tile_all_to_all, Ktdp.inter_tile_reduce_scatter,
})


class FuncCompiler:
    """Compiles one function: slot assignment, then one closure per op."""

    def __init__(self, program: Program, func: Operation, options: Options) -> None:
        self.program = program
        self.func = func
        self.options = options
        self.slots: dict[str, int] = {}
        self.nslots = 1
        self.vector = False  # compiling a linalg/tensor body (scalar ops see arrays)
        self.op_ids: dict[int, int] = {}
        # compiled closures that replace specific ops (by id) while compiling a body
        self.overrides: dict[int, Any] = {}
        self.linalg_index_slot: int | None = None
        self.views: dict[int, OpView] = {}  # each op seen through its definition, once
        # values that may hold tensor.empty's unspecified contents (strict mode checks only
        # the ops reading them): see maybe_empty_values
        self.maybe_empty: frozenset[str] = (
            maybe_empty_values(program, func) if options.strict else frozenset())

    def compile(self) -> CompiledFunc:
        if not self.func.regions or not self.func.regions[0].blocks:
            raise CompileError("the function is a declaration (it has no body)", self.func)
        ftype = self.attr(self.func, "function_type")
        arg_types = [self.type(t) for t in ftype.value.inputs] if isinstance(ftype, at.TypeAttr) and isinstance(ftype.value, ty.FunctionType) else []
        self.check_types(self.func, arg_types)
        try:
            body = self.compile_region(self.func.regions[0])
        except KtirRuntimeError as e:
            raise e.attach(self.func) from None
        return CompiledFunc(self.func, body, self.nslots, body.blocking, arg_types)

    # --------------------------------------------------------------- helpers for factories

    def slot(self, name: str) -> int:
        s = self.slots.get(name)
        if s is None:
            s = self.nslots
            self.slots[name] = s
            self.nslots += 1
        return s

    def operand_slots(self, op: Operation) -> tuple[int, ...]:
        out = []
        for name in op.operands:
            if name not in self.slots:
                raise CompileError(f"use of undefined value {name}", op)
            out.append(self.slots[name])
        return tuple(out)

    def result_slots(self, op: Operation) -> tuple[int, ...]:
        if len(op.results) < len(op.result_types):  # unnamed results (MLIR allows them): private slots
            return tuple(self.slot(f"%__unnamed{id(op)}#{i}") for i in range(len(op.result_types)))
        return tuple(self.slot(n) for n in op.results)

    def attr(self, op: Operation, name: str) -> Any:
        return self.program.attr(op.attributes.get(name))

    def need_attr(self, op: Operation, name: str) -> Any:
        value = self.attr(op, name)
        if value is None:
            raise CompileError(f"missing attribute '{name}'", op)
        return value

    def type(self, t: Type) -> Type:
        return self.program.type(t)

    def otype(self, op: Operation, i: int) -> Type:
        return self.type(op.operand_types[i])

    def rtype(self, op: Operation, i: int = 0) -> Type:
        return self.type(op.result_types[i])

    def op_id(self, op: Operation) -> int:
        return id(op)

    # ------------------------------------------------- operands by name (from the op's definition)

    def view(self, op: Operation) -> OpView:
        found = self.views.get(id(op))
        if found is None:
            try:
                found = self.views[id(op)] = named(op)
            except AccessError as e:
                raise CompileError(str(e), op) from None
        return found

    def operand_group(self, op: Operation, name: str) -> tuple[int, ...]:
        """Slots of operand group `name` (variadic or optional: any number; segments honoured)."""
        slots = self.operand_slots(op)
        try:
            return tuple(slots[i] for i in self.view(op).operand_positions(name))
        except AccessError as e:
            raise CompileError(str(e), op) from None

    def operand_slot(self, op: Operation, name: str) -> int:
        """The slot of operand `name`, which stands for exactly one value."""
        try:
            return self.operand_slots(op)[self.view(op).operand_position(name)]
        except AccessError as e:
            raise CompileError(str(e), op) from None

    def operand_type(self, op: Operation, name: str) -> Type:
        try:
            return self.type(self.view(op).operand_type(name))
        except AccessError as e:
            raise CompileError(str(e), op) from None

    # --------------------------------------------------------------- regions

    def compile_region(self, region: Region, vector: bool = False) -> CBlock:
        if not region.blocks:
            return CBlock()
        if len(region.blocks) > 1:
            raise CompileError(f"a region with {len(region.blocks)} blocks is not executed: KTIR has structured control "
                               "flow only (scf), every region is one block")
        return self.compile_block(region.blocks[0], vector)

    def compile_block(self, block: Block, vector: bool = False) -> CBlock:
        saved = self.vector
        self.vector = vector
        try:
            cb = CBlock()
            cb.arg_slots = tuple(self.slot(a.name) for a in block.arguments)
            fns: list[Any] = []
            oslots: list[tuple[int, ...]] = []
            metas: list[Operation] = []
            gens: list[bool] = []
            ops = block.operations
            if ops and ops[-1].name in TERMINATORS:
                cb.term = ops[-1]
                ops = ops[:-1]
            kills = _last_uses(self, ops, cb.term) if vector else {}
            for k, op in enumerate(ops):
                compiled = self.compile_op(op)
                if isinstance(compiled, Blocking):
                    fns.append(compiled.fn)
                    gens.append(True)
                else:
                    fns.append(_then_drop(compiled, kills[k]) if k in kills else compiled)
                    gens.append(False)
                metas.append(op)
                oslots.append(tuple(self.slots.get(n, 0) for n in op.operands))
            if cb.term is not None and cb.term.name not in (Scf.reduce, Scf.forall_in_parallel):
                cb.term_slots = self.operand_slots(cb.term)
            cb.fns = tuple(fns)
            cb.metas = tuple(metas)
            cb.oslots = tuple(oslots)
            cb.gens = tuple(gens)
            cb.blocking = any(gens)
            cb.n = len(block.operations)
            return cb
        finally:
            self.vector = saved

    def check_types(self, op: Operation, types: list[Type]) -> None:
        reject_semantics_free(op, [self.type(t) for t in types])

    def compile_op(self, op: Operation) -> OpFn | Blocking:
        override = self.overrides.get(id(op))
        if override is not None:
            return override  # type: ignore[no-any-return]
        self.check_types(op, [*op.operand_types, *op.result_types])
        factory = FACTORIES.get(op.name)
        if factory is None:
            known = "" if op.name in OPS else " (it is not a KTIR op)"
            raise CompileError(f"the interpreter does not execute {op.name}{known}", op)
        try:
            compiled: OpFn | Blocking | None = _zeros(self, op) if self.options.shapes_only and not self.vector else None
            if compiled is None and BUFFER_FORM and op.name.startswith("linalg.") and not op.result_types:
                compiled = BUFFER_FORM[0](self, op, factory)
            if compiled is None:
                compiled = factory(self, op)
        except KtirRuntimeError as e:
            raise e.attach(op) from None
        except UnsupportedType as e:
            raise CompileError(str(e), op) from None
        if self.maybe_empty and not self.vector:
            compiled = _strict(compiled, op, self)
        if self.options.trace and not self.vector:
            compiled = _traced(compiled, op, self)
        return compiled


def _zeros(c: FuncCompiler, op: Operation) -> OpFn | None:
    """For `Options.shapes_only`: a tensor compute op that writes zeros of its result types."""
    if not op.name.startswith(("linalg.", "arith.", "math.")) or not op.results:
        return None
    types = [c.type(t) for t in op.result_types]
    if any(isinstance(c.type(t), ty.MemRefType) for t in op.operand_types):
        return None
    tensors = [t for t in types if isinstance(t, ty.TensorType) and all(d is not None for d in t.shape)]
    if len(tensors) != len(types):
        return None
    from .dtypes import np_dtype

    made = [(s, tuple(int(d or 0) for d in t.shape), np_dtype(t.element_type))
            for s, t in zip(c.result_slots(op), tensors, strict=True)]

    def run(fr: list[Any]) -> None:
        for s, shape, dt in made:
            fr[s] = np.zeros(shape, dt)

    return run


def reject_semantics_free(op: Operation, types: list[Type]) -> None:
    """Reject vector, complex and tuple values up front: KTIR 0.1 parses them but defines
    no op on them (spec/types.md), so running one would invent semantics."""
    for t in types:
        bad = _semantics_free(t)
        if bad is not None:
            raise CompileError(
                f"values of type {type_text(bad)} are not executed: KTIR 0.1 defines no operation on "
                "vector, complex or tuple types", op)


def _semantics_free(t: Type) -> Type | None:
    """The vector/complex/tuple type inside `t` (itself or its element type), if any."""
    if isinstance(t, ty.VectorType | ty.ComplexType | ty.TupleType):
        return t
    element = getattr(t, "element_type", None)
    if isinstance(t, ty.TensorType | ty.MemRefType) and isinstance(element, ty.ComplexType | ty.VectorType | ty.TupleType):
        return element
    return None


# ---------------------------------------------------------------------- wrappers


# Ops whose results are fully defined even when an operand they use only for its shape holds
# tensor.empty's contents (the `outs` of linalg ops that do not read them, a dimension).
_DEFINES_RESULTS = ("linalg.", Tensor.dim, Memref.dim)


def maybe_empty_values(program: Program, func: Operation) -> frozenset[str]:
    """The SSA values of `func` that may hold (part of) a tensor.empty's unspecified contents.

    A conservative data-flow fixpoint: a tensor.empty's result; the results of an op that
    passes such a value through an operand it does not read (insert destinations, loop
    inits, casts); block arguments of the regions of an op that receives one; the results
    of an op whose region yields one; and, when the module has a tensor.empty, the results
    of calls and the arguments of called functions. Only the ops reading these values pay
    for the check, so programs without tensor.empty run exactly as fast as before.
    """
    if not program.has_empty():
        return frozenset()
    ops: list[tuple[Operation, Operation | None]] = []

    def visit(op: Operation, parent: Operation | None) -> None:
        ops.append((op, parent))
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner, op)

    visit(func, None)
    tainted: set[str] = set()
    if program.has_calls() and func.regions and func.regions[0].blocks:
        tainted.update(a.name for a in func.regions[0].blocks[0].arguments)
    changed = True
    while changed:
        changed = False
        before = len(tainted)
        for op, parent in ops:
            if op is func:
                continue
            if op.name in (Tensor.empty, Func.call):
                tainted.update(op.results)
            hit = [i for i, name in enumerate(op.operands) if name in tainted]
            if not hit:
                continue
            exempt = SHAPE_ONLY.get(op.name, lambda _op: set())(op)
            if any(i in exempt for i in hit) and not op.name.startswith(_DEFINES_RESULTS):
                tainted.update(op.results)
            if not op.name.startswith(_DEFINES_RESULTS):  # linalg bodies run vectorised, unchecked
                for region in op.regions:
                    for block in region.blocks:
                        tainted.update(a.name for a in block.arguments)
            if op.name in TERMINATORS and parent is not None and parent is not func \
                    and not parent.name.startswith(_DEFINES_RESULTS):
                tainted.update(parent.results)
                for region in parent.regions:
                    for block in region.blocks:
                        tainted.update(a.name for a in block.arguments)
        changed = len(tainted) != before
    return frozenset(tainted)


def _output_slots(op: Operation, c: FuncCompiler) -> frozenset[int]:
    """The frame slots of a linalg op's destination operands (declared last: `outs`, `init`,
    `inits`), which a contraction or reduction reads."""
    from ktir.dialects.access import AccessError, named

    if not op.name.startswith("linalg."):
        return frozenset()
    try:
        view = named(op)
        positions = view.operand_positions(view.opdef.operands[-1].name)
    except (AccessError, IndexError):
        return frozenset()
    slots = c.operand_slots(op)
    return frozenset(slots[i] for i in positions)


def _undefined_message(op: Operation, accumulator: bool) -> str:
    """Say what was read and how to run such a program anyway (spec execution.md#dynamic-errors)."""
    what = "reads the unspecified contents of a tensor.empty"
    if accumulator:
        what += f" ({op.name} accumulates into its `outs`: initialise them first, e.g. with linalg.fill)"
    return what + "; `ktir run --lenient` (run(..., strict=False)) reads them as zeros, as ktir-cpu does"


def _strict(compiled: OpFn | Blocking, op: Operation, c: FuncCompiler) -> OpFn | Blocking:
    exempt = SHAPE_ONLY.get(op.name, lambda _op: set())(op)
    slots = tuple(s for i, (name, s) in enumerate(zip(op.operands, c.operand_slots(op), strict=True))
                  if i not in exempt and name in c.maybe_empty)
    if not slots:
        return compiled

    outs = _output_slots(op, c)

    def check(fr: list[Any]) -> None:
        for s in slots:
            v = fr[s]
            if type(v) is Uninit:
                raise KtirRuntimeError("undefined", _undefined_message(op, s in outs))

    if isinstance(compiled, Blocking):
        inner_gen = compiled.fn

        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            check(fr)
            yield from inner_gen(fr)

        return Blocking(gen)
    inner = compiled

    def run(fr: list[Any]) -> None:
        check(fr)
        inner(fr)

    return run


def _traced(compiled: OpFn | Blocking, op: Operation, c: FuncCompiler) -> OpFn | Blocking:
    from .memory import SPACES

    results = c.result_slots(op)
    line = op.loc.line if op.loc is not None else 0
    name = op.name
    op_id = c.program.op_id(op)
    mac_slots = _mac_slots(c, op)
    # the access tile of a transfer: its byte span lets the timeline order only overlapping accesses
    tile_slot = c.operand_slot(op, "access_tile") if name in (Ktdp.load, Ktdp.store) else None

    def begin(fr: list[Any]) -> tuple[TraceEvent, list[int], list[int], dict[int, int]]:
        ctx: TileContext = fr[0]
        ev = TraceEvent(ctx.tile, name, ctx.seq, ctx.seq, line, op_id=op_id)
        ctx.seq += 1
        assert ctx.trace is not None
        ctx.trace.append(ev)  # appended at the start, so a tile's events are in program order
        return ev, list(ctx.rd), list(ctx.wr), dict(ctx.remote) if ctx.remote else {}

    def end(fr: list[Any], ev: TraceEvent, rd0: list[int], wr0: list[int], rem0: dict[int, int]) -> None:
        ctx: TileContext = fr[0]
        if ctx.remote:
            for key, n in ctx.remote.items():
                moved = n - rem0.get(key, 0)
                if moved and key >= 0:
                    ev.remote_read[key] = moved
                elif moved:
                    ev.remote_written[-key - 1] = moved
        elements = 0
        for s in results:
            v = fr[s]
            if isinstance(v, np.ndarray):
                elements += v.size
        ev.end = ctx.seq
        ev.bytes_read = {SPACES[i]: ctx.rd[i] - rd0[i] for i in range(len(SPACES)) if ctx.rd[i] != rd0[i]}
        ev.bytes_written = {SPACES[i]: ctx.wr[i] - wr0[i] for i in range(len(SPACES)) if ctx.wr[i] != wr0[i]}
        ev.elements = elements
        ev.macs = _macs(name, fr, mac_slots)
        if tile_slot is not None:
            ev.span = access_span(fr[tile_slot])
        if ctx.sync is not None:
            ev.future, ev.peers = ctx.sync
            ctx.sync = None

    if isinstance(compiled, Blocking):
        inner_gen = compiled.fn

        def gen(fr: list[Any]) -> Generator[Any, None, None]:
            state = begin(fr)
            yield from inner_gen(fr)
            end(fr, *state)

        return Blocking(gen)
    inner = compiled

    def run(fr: list[Any]) -> None:
        state = begin(fr)
        inner(fr)
        end(fr, *state)

    return run


def _reduced_axes() -> dict[str, int]:
    """Per named contraction, the axis of its first input that is its first reduced loop."""
    found = {}
    for name, spec in contractions().items():
        first, out = spec.split(",")[0], spec.split("->")[1]
        found[name] = next(i for i, letter in enumerate(first) if letter not in out)
    return found


_REDUCED_AXIS = _reduced_axes()  # the named contractions, each with its first input's reduced axis


def _mac_slots(c: FuncCompiler, op: Operation) -> tuple[int, int] | None:
    """The slots of a contraction's first input and its output (for counting multiply-adds)."""
    if op.name not in _REDUCED_AXIS:
        return None
    ins, outs = c.operand_group(op, "inputs"), c.operand_group(op, "outputs")
    return (ins[0], outs[0]) if ins and outs else None


def _macs(name: str, fr: list[Any], slots: tuple[int, int] | None) -> int:
    if slots is None:
        return 0
    a = fr[slots[0]]
    out = fr[slots[1]]
    if not isinstance(a, np.ndarray) or not hasattr(out, "size"):
        return 0
    k = a.shape[_REDUCED_AXIS[name]] if a.ndim else 1
    return int(out.size) * int(k)


def is_undefined(v: Any) -> bool:
    return type(v) is Undefined


def grid_of(program: Program, fn: Operation) -> tuple[int, ...]:
    """The function's `grid` attribute (default `[1]`); here so the executor and lockstep share it."""
    attr = program.attr(fn.attributes.get("grid"))
    if attr is None:
        return (1,)
    if isinstance(attr, at.ArrayAttr | at.DenseArrayAttr):
        values = attr.values if isinstance(attr, at.DenseArrayAttr) else tuple(getattr(e, "value", None) for e in attr.elements)
        if values and all(isinstance(v, int) and v > 0 for v in values):
            return tuple(int(v) for v in values)  # type: ignore[arg-type]
    raise KtirRuntimeError("argument", "the function's grid must be a non-empty array of positive integers", op=fn)
