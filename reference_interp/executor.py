"""`run()`: bind arguments, execute every tile of the grid, collect the results."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.base import Type
from ktir.ir.operation import Module, Operation

from . import blas
from . import ops as _ops  # noqa: F401 - registers the op implementations
from .compiler import CompiledFunc, Program, grid_of
from .dtypes import UnsupportedType, int_normaliser, np_dtype, to_scalar
from .errors import KtirRuntimeError, fail
from .half import WideCache
from .memo import MISSING, Memo, ObjectMemo
from .memory import ALIGN, Allocation, MemoryView, align_up
from .runtime import TARGETS, Machine, Options, TileContext, tile_stats
from .trace import TileStats, TraceEvent


class Local:
    """An array argument placed in ct_local memory: the same scratchpad address on each tile.

    `arrays` is either an array whose leading dimension runs over all tiles of the grid
    (tile t gets `arrays[t]`), or a dict {linear tile id: array}; all pieces have one
    dtype and shape. The function argument receives the element address (index) or a
    view of the executing tile's piece (memref).
    """

    def __init__(self, arrays: np.ndarray | Mapping[int, np.ndarray]) -> None:
        self.arrays = arrays


class At:
    """An array argument placed in global memory at a chosen element address. As a
    `memory=` entry, `space="ct_local"` places it instead at that element address of every
    tile's scratchpad (the same contents on each tile)."""

    def __init__(self, array: np.ndarray, address: int, space: str = "global") -> None:
        self.array = np.asarray(array)
        self.address = address
        self.space = space


@dataclass
class RunResult:
    """What a run produced."""

    grid: tuple[int, ...]
    # final contents of every array argument, by argument name (Local: stacked per tile
    # in tile order, or a dict when given as a dict)
    outputs: dict[str, Any]
    # values returned by func.return, per tile
    returns: list[tuple[Any, ...]]
    stats: list[TileStats]
    # element address bound to each array argument
    addresses: dict[str, int] = field(default_factory=dict)
    trace: list[list[TraceEvent]] | None = None
    # whether the run executed in lockstep (reference_interp/lockstep.py; the same results)
    lockstep: bool = False

    @property
    def total_ops(self) -> int:
        return sum(s.ops for s in self.stats)


_PROGRAMS: ObjectMemo[Program] = ObjectMemo(32)
_LOCK = threading.Lock()


def _program(module: Module) -> Program:
    with _LOCK:
        found = _PROGRAMS.get(module)
        if found is not MISSING:
            return found
        return _PROGRAMS.put(module, Program(module))


def _names(fns: list[Operation]) -> str:
    return ", ".join("@" + str(getattr(f.attributes.get("sym_name"), "value", "?")) for f in fns)


def _private(fn: Operation) -> bool:
    vis = fn.attributes.get("sym_visibility")
    return getattr(vis, "value", None) == "private"


_CHOSEN: ObjectMemo[Operation] = ObjectMemo(64)


class _Entry:
    """What every run of one function of a module starts from, found once (modules are not
    changed once run, see _program): its Program, the function and its name, whether a tile can
    reach another's scratchpad (Program.shares_scratchpads) and whether the module widens narrow
    floats (Program.widens); once a run found them, the grid (grid_of: a failure is not kept) and,
    per compile key (Program.function's: trace, strict, shapes_only), the compiled function
    with its binding plan."""

    __slots__ = ("program", "fn", "name", "private_local", "widens", "grid", "compiled")

    def __init__(self, program: Program, fn: Operation) -> None:
        self.program = program
        self.fn = fn
        self.name = str(getattr(fn.attributes.get("sym_name"), "value", ""))
        self.private_local = not program.shares_scratchpads()
        self.widens = program.widens()
        self.grid: tuple[int, ...] | None = None
        self.compiled: dict[tuple[bool, bool, bool], tuple[CompiledFunc, _Plan]] = {}

    def function(self, options: Options) -> tuple[CompiledFunc, _Plan]:
        """program.function(name, options) and its _Plan."""
        key = (options.trace, options.strict, options.shapes_only)
        found = self.compiled.get(key)
        if found is None:
            compiled = self.program.function(self.name, options)
            found = self.compiled[key] = (compiled, _Plan(_arg_names(self.fn)))
        return found


# per module and function name
_ENTRIES: ObjectMemo[_Entry] = ObjectMemo(64)


def _entry(module: Module, func: str | None) -> _Entry:
    """The _Entry of `func` (choose_function) of `module`, in one look-up per run. Read without
    the lock: a look-up is one dict read, and the lock only keeps the puts from racing."""
    found = _ENTRIES.get(module, func)
    if found is not MISSING:
        return found
    entry = _Entry(_program(module), choose_function(module, func))
    with _LOCK:
        return _ENTRIES.put(module, entry, func)


def choose_function(module: Module, func: str | None) -> Operation:
    """The function to run: `func` by name, else the one public function with a body
    (private functions are helpers and declarations have nothing to run)."""
    with _LOCK:
        found = _CHOSEN.get(module, func)  # modules are not changed once run (see _program)
    if found is not MISSING:
        return found
    fn = _choose_function(module, func)
    with _LOCK:
        return _CHOSEN.put(module, fn, func)


def _choose_function(module: Module, func: str | None) -> Operation:
    bodies = [f for f in module.functions() if f.regions and f.regions[0].blocks]
    if func is not None:
        try:
            fn = module.function(func)
        except KeyError:
            raise fail("argument", f"no function @{func} in the module (functions: {_names(bodies)})") from None
        if not (fn.regions and fn.regions[0].blocks):
            raise fail("argument", f"@{func} is a declaration (it has no body) and cannot be run")
        return fn
    public = [f for f in bodies if not _private(f)]
    if len(public) == 1:
        return public[0]
    if not bodies:
        raise fail("argument", "the module has no function with a body: there is nothing to run")
    if not public:
        raise fail("argument", f"the module has only private functions ({_names(bodies)}); choose one with func= (ktir run --func)")
    raise fail("argument", f"the module has {len(public)} public functions ({_names(public)}); choose one with func= (ktir run --func)")


def run(
    module: Module,
    func: str | None = None,
    args: Mapping[str, Any] | None = None,
    target: str | None = None,
    trace: bool = False,
    *,
    strict: bool = True,
    check_races: bool = True,
    scratchpad_bytes: int | None = None,
    step_limit: int | None = None,
    max_value_bytes: int | None = None,
    shapes_only: bool = False,
    blas_threads: int | None = 1,
    memory: Mapping[str, At] | None = None,
    lockstep: bool | str = True,
) -> RunResult:
    """Run `func` of `module` on every tile of its grid and return the results.

    `args` maps argument names (without `%`) to values: a numpy array is placed in global
    memory (an `index` argument receives its element address, a `memref` argument a view
    of it, a `tensor` argument the value); `Local(...)` places arrays in ct_local memory;
    `At(array, address)` pins an array's element address; Python/numpy numbers are
    passed as values. `memory` places more arrays in global memory, each `At` its element
    address, for kernels that build views at constant addresses (their final contents are
    in `outputs` under the given names). Raises `KtirRuntimeError` when a check fails. `shapes_only` (with
    `trace`) skips the arithmetic of tensor compute ops, for a cost trace in a fraction of the
    time (`Options.shapes_only`); its outputs are meaningless. `blas_threads` limits BLAS
    while the run executes (default 1: see `reference_interp/blas.py`; None leaves it as is).
    `lockstep` runs all tiles (and the iterations of independent loops) at once where the
    results are those of the tile-by-tile run (reference_interp/lockstep.py), else
    tile by tile; with True, repeated runs of a program settle on the faster of the two (the
    results are the same); "always" tries lockstep on every run; False always runs tile by tile.
    """
    entry = _entry(module, func)
    program, fn, name = entry.program, entry.fn, entry.name
    options = _options(trace, strict, check_races, target, shapes_only, blas_threads, scratchpad_bytes, step_limit,
                       max_value_bytes)
    try:
        grid = entry.grid
        if grid is None:
            grid = entry.grid = grid_of(program, fn)
        tiles = math.prod(grid)
        if tiles > options.max_tiles:
            raise KtirRuntimeError("memory-limit", f"the grid {list(grid)} has {tiles} tiles; the interpreter runs "
                                   f"at most {options.max_tiles}", op=fn)
        compiled, plan = entry.function(options)
        lane = None
        if lockstep and not trace and not shapes_only:
            ls = _lockstep()
            lane = ls.lane_function(program, name, options)
        if lane is not None:
            timing = ls.memo(program, name).timing(_signature(args))
            timed = timing.choice is None  # once the choice is made, runs are not timed
            if lockstep != "always" and not timing.pick():
                if not timed:
                    return _attempt(entry, compiled, plan, None, options, grid, args, memory)
                start = _clock()
                result = _attempt(entry, compiled, plan, None, options, grid, args, memory)
                timing.took(False, _clock() - start)
                return result
            start = _clock() if timed else 0.0
            try:
                result = _attempt(entry, compiled, plan, lane, options, grid, args, memory)
                if timed:
                    timing.took(True, _clock() - start)
                return result
            except KtirRuntimeError as e:
                if e.kind == "argument":
                    raise  # the arguments are bound as in the per-tile run: the same error
                failed: BaseException | None = e
            except Exception as e:  # noqa: BLE001 - lockstep gives up; the per-tile run decides
                failed = e
            result = _attempt(entry, compiled, plan, None, options, grid, args, memory)
            _gave_up(program, name, failed)
            return result
        return _attempt(entry, compiled, plan, None, options, grid, args, memory)
    except KtirRuntimeError as e:
        e.file = module.filename
        raise e.attach() from e.__cause__


# The clock timing lockstep against the per-tile run (the first runs of a program only, until
# lockstep.Timing has chosen): the calling thread's CPU time (the run is one thread; BLAS is
# limited to it by default). Process CPU time sums every thread of the process (BLAS's idle
# workers too) and cost 5-10% of a 1 ms run on a loaded 2-core machine; a CPU clock is a system
# call either way (not served in user space as the wall clocks are).
_clock = time.thread_time

# Options by everything run() fills them from: the same object for the runs that ask the same
# (nothing changes an Options once made). The numbers with their types (3 and 3.0 are one key,
# and a message may spell the limit). Not for targets described by a file, which may change.
_OPTIONS: Memo[tuple[Any, ...], Options] = Memo(64)


def _options(trace: bool, strict: bool, check_races: bool, target: str | None, shapes_only: bool,
             blas_threads: int | None, scratchpad_bytes: int | None, step_limit: int | None,
             max_value_bytes: int | None) -> Options:
    key = (trace, strict, check_races, target, shapes_only, blas_threads, type(blas_threads),
           scratchpad_bytes, type(scratchpad_bytes), step_limit, type(step_limit), max_value_bytes, type(max_value_bytes))
    kept = target is None or target in TARGETS
    try:
        found = _OPTIONS.get(key)
    except TypeError:  # an argument that is no hashable value: made afresh, and used as before
        found, kept = MISSING, False
    if found is not MISSING:
        return found
    options = Options(trace=trace, strict=strict, check_races=check_races, target=target, shapes_only=shapes_only,
                      blas_threads=blas_threads)
    if target is not None:
        if target in TARGETS:
            options.scratchpad_bytes = TARGETS[target]
        else:
            from ktir.targets import TargetError
            from ktir.targets import scratchpad_bytes as target_scratchpad

            try:
                options.scratchpad_bytes = target_scratchpad(target)
            except TargetError as e:
                raise fail("argument", str(e)) from None
    if scratchpad_bytes is not None:
        options.scratchpad_bytes = scratchpad_bytes
    if step_limit is not None:
        options.step_limit = step_limit
    if max_value_bytes is not None:
        options.max_value_bytes = max_value_bytes
    if kept:
        with _LOCK:
            _OPTIONS.put(key, options)
    return options


def _gave_up(program: Program, name: str, failed: BaseException | None) -> None:
    """Lockstep gave up and the per-tile run succeeded: later runs of `name` avoid what made it
    give up (a vectorised loop whose iterations overlap, else lockstep for the function)."""
    from .lockstep import Diverged, memo

    m = memo(program, name)
    if isinstance(failed, Diverged) and failed.loop is not None:
        m.no_vector.add(failed.loop)
    else:
        m.disabled = True
    m.why = f"{type(failed).__name__}: {failed}"
    m.timings.clear()  # another lockstep program from now on: time it afresh


def _signature(args: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What the speed of a run depends on besides the program: the arguments' shapes and sizes."""
    if not args:
        return ()
    out: list[Any] = []
    for k in sorted(args):
        v = args[k]
        kind = type(v)
        if kind is np.ndarray:  # the usual arguments first: the tests below, without the isinstance calls
            out.append((k, v.shape, v.dtype))
        elif kind is int:
            out.append((k, v))
        elif isinstance(v, np.ndarray):
            out.append((k, v.shape, v.dtype))
        elif isinstance(v, bool | int | float | np.generic):
            out.append((k, v))
        elif isinstance(v, At):
            out.append((k, "At", v.array.shape, v.array.dtype.str))
        elif isinstance(v, Local):
            pieces = v.arrays
            if isinstance(pieces, Mapping):
                out.append((k, "Local", tuple(sorted((t, np.shape(a)) for t, a in pieces.items()))))
            else:
                out.append((k, "Local", np.asarray(pieces).shape))
        else:
            out.append((k, type(v).__name__))
    return tuple(out)


def _attempt(entry: _Entry, compiled: CompiledFunc, plan: _Plan, lane: Any, options: Options,
             grid: tuple[int, ...], args: Mapping[str, Any] | None, memory: Mapping[str, At] | None) -> RunResult:
    """One run from a fresh machine: per tile (`lane` None) or in lockstep."""
    machine = Machine(grid, options)
    machine.private_local = entry.private_local
    if entry.widens:
        machine.wide = WideCache()
    if lane is not None and not machine.tracker.enabled:
        # lockstep interleaves the tiles differently: without the race check a race would give
        # another result, so lockstep always tracks races and gives up on one (the per-tile run
        # then runs without the check, as asked)
        from .races import RaceTracker

        machine.tracker = RaceTracker(machine.n_tiles, True)
    binder = _Binder(entry.program, machine, entry.fn, compiled, plan)
    if memory:
        binder.place(dict(memory))
    # a copy only of mappings that are not dicts (the binder reads the arguments, never changes them)
    per_tile = binder.bind(args if type(args) is dict else dict(args) if args else {})
    contexts = [TileContext(machine, t) for t in range(machine.n_tiles)]
    blas.begin(options.blas_threads)
    try:
        quiet = _ignore_fp_errors()
        try:
            if lane is not None:
                returns = _lockstep().execute(lane, machine, contexts, per_tile)
            else:
                returns = _execute(compiled, machine, contexts, per_tile)
        finally:
            _restore_fp_errors(quiet)
    finally:
        blas.end()
    return RunResult(  # positional (in the fields' order): keywords cost twice as much
        grid,
        binder.outputs(),
        [_detached(r) if r else r for r in returns],
        tile_stats(contexts),
        binder.addresses,
        [ctx.trace or [] for ctx in contexts] if options.trace else None,
        lane is not None,
    )


# numpy 2 keeps the floating-point error state in a context variable, which np.errstate sets
# from a state it makes anew on each entry (2 us, 5% of a tiny kernel's run): the state with
# every error ignored is made once per state it replaces (numpy 1 has only np.errstate)
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_STATE  # type: ignore[attr-defined]
    from numpy._core.umath import _make_extobj
except ImportError:  # pragma: no cover - numpy 1
    _FP_STATE = None
_IGNORING: dict[Any, Any] = {}  # the state a run replaces -> the same with every error ignored


def _ignore_fp_errors() -> Any:
    """np.errstate(all="ignore") entered: what _restore_fp_errors takes to leave it."""
    if _FP_STATE is None:  # pragma: no cover - numpy 1
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    outer = _FP_STATE.get()
    ignoring = _IGNORING.get(outer)
    if ignoring is None:
        if len(_IGNORING) >= 16:
            _IGNORING.clear()
        ignoring = _IGNORING[outer] = _make_extobj(all="ignore")  # (its other settings: outer's)
    return _FP_STATE.set(ignoring)


def _restore_fp_errors(token: Any) -> None:
    if _FP_STATE is None:  # pragma: no cover - numpy 1
        token.__exit__(None, None, None)
    else:
        _FP_STATE.reset(token)


def _detached(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A tile's returned values, none of them a view of a caller's array (a load from an array
    the run never wrote is a read-only view of it, access._load_box): copied, so that the
    result does not change when the caller later writes the array. Every read-only array is
    copied (the run's shared f32 copies of loaded boxes, half.WideCache, are read-only too):
    the caller gets arrays of its own."""
    if not values or not any(isinstance(v, np.ndarray) and not v.flags.writeable for v in values):
        return values
    return tuple(v.copy() if isinstance(v, np.ndarray) and not v.flags.writeable else v for v in values)


# ---------------------------------------------------------------------- execution


def _execute(compiled: CompiledFunc, machine: Machine, contexts: list[TileContext],
             per_tile: list[list[Any]]) -> list[tuple[Any, ...]]:
    returns: list[tuple[Any, ...]] = [()] * machine.n_tiles
    body = compiled.body
    if not compiled.blocking:
        # each tile runs to its end in turn: one frame at a time
        frame, finish = compiled.frame, machine.tracker.finish
        for ctx, args in zip(contexts, per_tile, strict=True):
            fr = frame(ctx, args)
            body.run(fr)
            if body.term_slots:
                returns[ctx.tile] = tuple(body.results(fr))
            finish(ctx.tile)
        check_counts(machine, contexts)
        return returns
    frames = [compiled.frame(ctx, args) for ctx, args in zip(contexts, per_tile, strict=True)]
    gens: dict[int, Generator[Any, None, None]] = {ctx.tile: compiled.body.gen(fr) for ctx, fr in zip(contexts, frames, strict=True)}
    waiting: dict[int, Any] = {}
    live = list(gens)
    while live:
        before = _fingerprint(machine, contexts)
        still = []
        finished_any = False
        for t in live:
            try:
                waiting[t] = next(gens[t])
                still.append(t)
            except StopIteration:
                returns[t] = tuple(compiled.body.results(frames[t]))
                machine.tracker.finish(t)
                waiting.pop(t, None)
                finished_any = True
        live = still
        if live and not finished_any and _fingerprint(machine, contexts) == before:
            raise _deadlock(machine, waiting, live)
    check_counts(machine, contexts)
    return returns


def check_counts(machine: Machine, contexts: list[TileContext]) -> None:
    global _CHECK_COUNTS
    if machine.futures is None:
        return  # no inter-tile op ran (intertile.check_counts: nothing to count)
    if _CHECK_COUNTS is None:
        from .ops.intertile import check_counts as check

        _CHECK_COUNTS = check
    _CHECK_COUNTS(machine, contexts)


_CHECK_COUNTS: Any = None
_LOCKSTEP: Any = None


def _lockstep() -> Any:
    """reference_interp.lockstep, imported at the first run that may use it (and kept: an
    import statement in a function costs microseconds on every call)."""
    global _LOCKSTEP
    if _LOCKSTEP is None:
        from . import (
            lockstep,
            lockstep_ops,  # noqa: F401 - registers the lane implementations
            lockstep_tensor,  # noqa: F401
        )

        _LOCKSTEP = lockstep
    return _LOCKSTEP


def _fingerprint(machine: Machine, contexts: list[TileContext]) -> tuple[int, int, int]:
    global _STORE_OF
    if _STORE_OF is None:
        from .ops.intertile import store_of

        _STORE_OF = store_of
    return machine.posts, _STORE_OF(machine).takes, sum(c.steps for c in contexts)


_STORE_OF: Any = None  # ops.intertile.store_of, imported once (not by an import statement per call)


def _deadlock(machine: Machine, waiting: dict[int, Any], live: list[int]) -> KtirRuntimeError:
    lines = []
    first_op = None
    for t in live[:8]:
        w = waiting.get(t)
        if w is None:
            continue
        first_op = first_op or w.op
        line = w.op.loc.line if w.op.loc is not None else 0
        missing = ", ".join(map(str, w.missing[:8]))
        lines.append(f"tile {t} waits in {w.op.name} (line {line}) for tile(s) {missing} to produce instance {w.future[1]}")
    more = f" (and {len(live) - 8} more tiles)" if len(live) > 8 else ""
    err = KtirRuntimeError("deadlock", "every unfinished tile is blocked: " + "; ".join(lines) + more, op=first_op)
    return err.attach(grid=machine.grid)


# ---------------------------------------------------------------------- arguments


_ARG_NAMES: ObjectMemo[list[str]] = ObjectMemo(64)  # per function (modules are not changed once run)
_NORMALISERS: ObjectMemo[Any] = ObjectMemo(256)  # per type object
_INDEX_NORMALISER = int_normaliser(ty.IndexType())  # index has no parameters: one for all
_INDEX_WRAPS = 1 << 63  # the least address _INDEX_NORMALISER changes (addresses are not negative)


class _Same:
    """A bound argument value that is the same on every tile."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Varying:
    """A bound argument whose value depends on the tile: `of(tile)`."""

    __slots__ = ("of",)

    def __init__(self, of: Any) -> None:
        self.of = of


class _Plan:
    """What binding takes from a compiled function, the same on every run: its argument names
    (in order, and as a set, to check the given names in one comparison) and their types with
    aliases resolved (once the names were found right, as before there was a plan)."""

    __slots__ = ("names", "name_set", "types")

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.name_set = frozenset(names)
        self.types: list[Type] | None = None


def _arg_names(fn: Operation) -> list[str]:
    """The function's argument names (without `%`), once per function."""
    found = _ARG_NAMES.get(fn)
    if found is not MISSING:
        return found
    return _ARG_NAMES.put(fn, [a.name[1:] for a in fn.regions[0].blocks[0].arguments])


class _Binder:
    def __init__(self, program: Program, machine: Machine, fn: Operation, compiled: CompiledFunc, plan: _Plan) -> None:
        self.program = program
        self.machine = machine
        self.fn = fn
        self.compiled = compiled
        self.plan = plan
        self.addresses: dict[str, int] = {}
        self._globals: dict[str, Allocation] = {}
        self._locals: dict[str, tuple[Any, int, np.dtype[Any], tuple[int, ...]]] = {}

    def names(self) -> list[str]:
        return self.plan.names

    def place(self, memory: dict[str, Any]) -> None:
        """Arrays at fixed element addresses of global memory that no argument names (spec
        execution.md#kernels-and-launches), placed before the arguments so that arguments
        placed automatically go above them."""
        if not memory:
            return
        clash = sorted(set(memory) & set(self.names()))
        if clash:
            raise fail("argument", f"memory array(s) {', '.join(clash)} have the name of an argument; give them other names")
        for name, value in memory.items():
            if not isinstance(value, At):
                raise fail("argument", f"memory array {name}: give At(array, element_address)")
            if value.address < 0:
                raise fail("argument", f"memory array {name}: the element address {value.address} is negative")
            if value.space == "ct_local":
                self._place_local(name, value)
                continue
            alloc = self.machine.memory.place(name, value.array, value.address * value.array.dtype.itemsize)
            self._globals[name] = alloc
            self.addresses[name] = value.address

    def _place_local(self, name: str, value: At) -> None:
        """`value`'s array at its element address of every tile's scratchpad; Local() arguments
        placed afterwards go above it."""
        arr = np.ascontiguousarray(value.array)
        base, nbytes = value.address * arr.dtype.itemsize, arr.nbytes
        for tile in range(self.machine.n_tiles):
            alloc = self.machine.local(tile)
            if alloc.capacity is not None and base + nbytes > alloc.capacity:
                raise fail("capacity", f"memory array {name} needs ct_local bytes up to {base + nbytes}, "
                           f"beyond the capacity {alloc.capacity}")
            alloc.ensure(base + nbytes)
            alloc.raw[base: base + nbytes] = arr.reshape(-1).view(np.uint8)
            if alloc.init is not None:
                alloc.init[base: base + nbytes] = True
        self.machine.local_top = max(self.machine.local_top, align_up(base + max(nbytes, 1), ALIGN))
        self._locals[name] = (None, base, arr.dtype, arr.shape)
        self.addresses[name] = value.address

    def bind(self, args: dict[str, Any]) -> list[list[Any]]:
        """Each tile's argument values, in argument order. Tiles whose values are all the same
        share one list (the callers only read them)."""
        plan = self.plan
        if args.keys() != plan.name_set:
            self._check_names(plan.names, args)
        types = plan.types
        if types is None:
            types = plan.types = [self.program.type(t) for t in self.compiled.arg_types]
        # per argument: its value on every tile, or (_Varying) a function of the tile
        row: list[Any] = []
        varying = False
        for name, t in zip(plan.names, types, strict=True):
            try:
                values = self._bind(name, t, args[name])
            except UnsupportedType as e:
                raise fail("argument", f"argument {name}: {e}") from None
            if type(values) is _Same:
                row.append(values.value)
            else:
                row.append(_Varying(values))
                varying = True
        if not varying:
            return [row] * self.machine.n_tiles
        return [[v.of(tile) if type(v) is _Varying else v for v in row] for tile in range(self.machine.n_tiles)]

    def _check_names(self, names: list[str], args: dict[str, Any]) -> None:
        unknown = sorted(set(args) - set(names))
        if unknown:
            raise fail("argument", f"unknown argument(s) {', '.join(unknown)}; the function takes {', '.join(names) or 'none'}")
        missing = [n for n in names if n not in args]
        if missing:
            raise fail("argument", f"missing argument(s) {', '.join(missing)}")

    def _normaliser(self, t: Type) -> Any:
        """int_normaliser(t), once per type object (the types' own hash is slow)."""
        found = _NORMALISERS.get(t)
        if found is not MISSING:
            return found
        return _NORMALISERS.put(t, int_normaliser(t))

    def _bind(self, name: str, t: Type, value: Any) -> Any:
        if type(t) is ty.IndexType:  # the usual kernel argument: shortcuts of the cases below
            if type(value) is np.ndarray:  # a pointer: the index case of the array branch
                alloc = self.machine.memory.place(name, value)
                self._globals[name] = alloc
                elem = alloc.base // value.dtype.itemsize
                self.addresses[name] = elem
                return _Same(elem if elem < _INDEX_WRAPS else _INDEX_NORMALISER(elem))
            if type(value) is int:  # a number: _scalar's index case
                return _Same(_INDEX_NORMALISER(value))
        if isinstance(value, Local):
            return self._bind_local(name, t, value)
        if isinstance(value, At | np.ndarray):
            array = value.array if isinstance(value, At) else value
            address = value.address if isinstance(value, At) else None
            if isinstance(t, ty.TensorType):
                return _Same(self._tensor(name, t, array))
            if isinstance(t, ty.IndexType | ty.IntegerType | ty.MemRefType):
                byte = None if address is None else address * array.dtype.itemsize
                alloc = self.machine.memory.place(name, array, byte)
                self._globals[name] = alloc
                elem = alloc.base // array.dtype.itemsize
                self.addresses[name] = elem
                if isinstance(t, ty.MemRefType):
                    return _Same(self._memref(name, t, array, "global", alloc, alloc.base))
                return _Same(self._normaliser(t)(elem))
            raise fail("argument", f"argument {name} has type {type_text(t)}; an array binds to index, integer, memref or tensor")
        if isinstance(value, bool | int | float | np.generic):
            return _Same(self._scalar(name, t, value))
        raise fail("argument", f"argument {name}: cannot bind a {type(value).__name__}")

    def _scalar(self, name: str, t: Type, value: Any) -> Any:
        if isinstance(t, ty.RuntimeArgType):
            v = self._scalar(name, t.value_type, value)
            if t.upperbound is not None and v > t.upperbound:
                raise fail("argument", f"argument {name} = {v} exceeds the runtime_arg upperbound {t.upperbound}")
            if t.granularity is not None and v % t.granularity:
                raise fail("argument", f"argument {name} = {v} is not a multiple of the runtime_arg granularity {t.granularity}")
            return v
        if isinstance(t, ty.IndexType | ty.IntegerType):
            if isinstance(value, float) or (isinstance(value, np.generic) and not isinstance(value, np.integer | np.bool_)):
                raise fail("argument", f"argument {name} has type {type_text(t)} but a float {value} was given")
            return to_scalar(int(value), t)
        if isinstance(t, ty.FloatType):
            return to_scalar(float(value), t)
        raise fail("argument", f"argument {name} has type {type_text(t)}; a number binds to index, integer or float")

    def _tensor(self, name: str, t: ty.TensorType, array: np.ndarray) -> np.ndarray:
        dt = np_dtype(t.element_type)
        if array.dtype != dt:
            raise fail("argument", f"argument {name} is a {type_text(t)} but the array has dtype {array.dtype}")
        _check_dims(name, t.shape, array.shape)
        return np.array(array)

    def _memref(self, name: str, t: ty.MemRefType, array: np.ndarray, space: str, alloc: Allocation | None, addr: int) -> MemoryView:
        """A view of `array` as memref type `t`. The array holds the memref's storage: for an
        identity layout its shape is the memref's; for a permutation layout (an affine map
        like `(d0, d1) -> (d1, d0)`) it is the permuted shape; for `strided<[...], offset: o>`
        any array holding the addressed elements."""
        dt = np_dtype(t.element_type)
        if array.dtype != dt:
            raise fail("argument", f"argument {name} is a {type_text(t)} but the array has dtype {array.dtype}")
        layout = self.program.attr(t.layout)
        if layout is None and isinstance(self.program.attr(t.memory_space), at.AffineMapAttr | at.StridedLayoutAttr):
            layout = self.program.attr(t.memory_space)  # the parser files an aliased layout (`#map`) as the space
        rank = len(t.shape)
        if isinstance(layout, at.StridedLayoutAttr):
            if any(s is None for s in layout.strides) or layout.offset is None:
                raise fail("argument", f"argument {name}: a strided layout with dynamic strides or offset cannot be bound")
            shape = tuple(int(d) if d is not None else 0 for d in t.shape)
            if any(d is None for d in t.shape):
                raise fail("argument", f"argument {name}: a strided memref needs a static shape")
            return MemoryView(space, alloc, addr + int(layout.offset) * dt.itemsize, shape,
                              tuple(int(s) for s in layout.strides), dt)  # type: ignore[arg-type]
        perm = list(range(rank))
        if isinstance(layout, at.AffineMapAttr):
            m = layout.value
            if not m.is_permutation() or m.num_dims != rank:
                raise fail("argument", f"argument {name}: only permutation layout maps can be bound")
            perm = [e.position for e in m.results]  # type: ignore[attr-defined]
        physical = tuple(t.shape[p] for p in perm)
        _check_dims(name, physical, array.shape)
        phys_strides = []
        acc = 1
        for d in reversed(array.shape):
            phys_strides.append(acc)
            acc *= max(int(d), 1)
        phys_strides.reverse()
        strides = [0] * rank
        for r, p in enumerate(perm):
            strides[p] = phys_strides[r]
        sizes = [0] * rank
        for r, p in enumerate(perm):
            sizes[p] = int(array.shape[r])
        return MemoryView(space, alloc, addr, tuple(sizes), tuple(strides), dt)

    def _bind_local(self, name: str, t: Type, value: Local) -> Any:
        pieces: dict[int, np.ndarray]
        stacked = not isinstance(value.arrays, Mapping)
        if isinstance(value.arrays, Mapping):
            pieces = {int(k): np.asarray(v) for k, v in value.arrays.items()}
        else:
            arr = np.asarray(value.arrays)
            if arr.shape[:1] != (self.machine.n_tiles,):
                raise fail("argument", f"Local argument {name}: the leading dimension must be the {self.machine.n_tiles} tiles")
            pieces = {i: arr[i] for i in range(self.machine.n_tiles)}
        if not pieces:
            raise fail("argument", f"Local argument {name} places no arrays")
        first = next(iter(pieces.values()))
        for tile, p in pieces.items():
            if not 0 <= tile < self.machine.n_tiles:
                raise fail("argument", f"Local argument {name}: tile {tile} is not in the grid")
            if p.dtype != first.dtype or p.shape != first.shape:
                raise fail("argument", f"Local argument {name}: every piece needs the same dtype and shape")
        if first.dtype.hasobject:
            raise fail("argument", f"Local argument {name} holds Python objects (dtype {first.dtype}): only an array "
                       "of numbers has bytes to place in memory")
        base = self.machine.local_top
        nbytes = first.nbytes
        self.machine.local_top = align_up(base + max(nbytes, 1), ALIGN)
        for tile, p in pieces.items():
            alloc = self.machine.local(tile)
            cap = alloc.capacity
            if cap is not None and base + nbytes > cap:
                raise fail("capacity", f"Local argument {name} needs ct_local bytes up to {base + nbytes}, beyond the capacity {cap}")
            alloc.ensure(base + nbytes)
            alloc.raw[base : base + nbytes] = np.ascontiguousarray(p).reshape(-1).view(np.uint8)
            if alloc.init is not None:
                alloc.init[base : base + nbytes] = True
        self._locals[name] = (value.arrays if not stacked else None, base, first.dtype, first.shape)
        elem = base // first.dtype.itemsize
        self.addresses[name] = elem
        if isinstance(t, ty.MemRefType):
            views = {tile: self._memref(name, t, first, "ct_local", self.machine.local(tile), base) for tile in range(self.machine.n_tiles)}
            return lambda tile: views[tile]
        if isinstance(t, ty.IndexType | ty.IntegerType):
            return _Same(elem)
        raise fail("argument", f"argument {name} has type {type_text(t)}; a Local array binds to index, integer or memref")

    def outputs(self) -> dict[str, Any]:
        # the machine is discarded after the run: hand out its buffers without copying
        out: dict[str, Any] = {name: alloc.contents(copy=False) for name, alloc in self._globals.items()}
        for name, (given, base, dt, shape) in self._locals.items():
            count = int(math.prod(shape)) if shape else 1
            nbytes = count * dt.itemsize

            def piece(tile: int, base: int = base, nbytes: int = nbytes, dt: Any = dt, shape: Any = shape) -> np.ndarray:
                alloc = self.machine.local(tile)
                return alloc.raw[base : base + nbytes].view(dt).reshape(shape)

            # copies: a view would keep the tile's whole scratchpad (np.stack copies anyway)
            if given is None:
                out[name] = np.stack([piece(t) for t in range(self.machine.n_tiles)])
            else:
                out[name] = {t: piece(t).copy() for t in given}
        return out


def _check_dims(name: str, want: tuple[int | None, ...], got: tuple[int, ...]) -> None:
    if len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got, strict=True)):
        dims = "x".join("?" if d is None else str(d) for d in want)
        raise fail("argument", f"argument {name} has shape {list(got)} but the type says {dims}")


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield
