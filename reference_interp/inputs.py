"""Random inputs for `ktir run --random-inputs`: infer what each argument needs.

- `memref`/`tensor` arguments with a static shape get an array of that shape and dtype.
- `!ktdp.runtime_arg` arguments get their upper bound (rounded down to the granularity).
- float scalars get a standard normal draw.
- an `index`/integer argument used (directly or through `arith.addi`/`subi`/`muli`/
  `index_cast`/`affine.apply`, and through `func.call` into the called function, as a
  lowered SDSC bundle's driver passes its arguments to its steps) as the offset of a
  `construct_memory_view` is an array pointer: its dtype is the view's element type, and
  its size is found by a *probe run* that places a growable array for it and records the
  highest element any view built on it can address (a gathered table is sized by its
  view, not by the rows the probe's index values happen to reach).
- an `index`/integer argument used that way only for `ct_local` views is an address in
  each tile's scratchpad: when the views have static sizes and strides it gets a region of
  its own there, with random contents on every tile (a `Local` array); otherwise 0, the
  start of the scratchpad.
- other integer arguments (sizes, offsets, trip counts, block sizes) get a value from how
  they are used (`size_hints`): an offset added to an access-tile coordinate, a loop's lower
  bound or an indirect tile's captured variable starts at 0; a loop's upper bound whose
  induction variable indexes a view dimension of static size S is S; a loop step, or a factor
  multiplying a coordinate, whose coordinate feeds an access tile of extent T in that dimension
  is T (a block size); a dynamic view size read by an access tile of extent T is T. The
  arguments no use explains take together the smallest of 1, 2, 4, ... with which the kernel
  runs; when even that fails, every integer argument is searched that way. An argument that
  no value makes run must be given with `--arg NAME=VALUE`; the error names it.

Float arrays hold standard normal values; integer arrays hold values in [0, 8) (small,
so that index arrays used for indirect access usually stay in range).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ktir.dialects.access import AccessError, named
from ktir.dialects.names import Affine, Arith, Func, Ktdp, Scf
from ktir.fileio import load_npy_checked
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.operation import Module, Operation
from ktir.ir.types import KDYNAMIC

from .compiler import reject_semantics_free
from .dtypes import UnsupportedType, np_dtype
from .errors import KtirRuntimeError, fail
from .executor import Local
from .runtime import Options

_DERIVING = {Arith.addi, Arith.subi, Arith.muli, Arith.index_cast, Arith.index_castui, Affine.apply,
             Affine.min, Affine.max, Arith.maxsi, Arith.minsi}


def load_npy(path: str | Path) -> np.ndarray:
    """Read one array from a `.npy` file for a kernel argument. Never unpickles
    (`allow_pickle=False`: a pickled object array is refused, not run); any unreadable file
    (empty, truncated, not .npy, a .npz archive) raises ValueError naming it, or OSError."""
    try:
        value = load_npy_checked(path)
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 - numpy raises EOFError, ValueError, BadZipFile, ... for bad files
        raise ValueError(f"{path}: not a readable .npy file ({type(e).__name__}: {e})") from None
    if not isinstance(value, np.ndarray):
        value.close()
        raise ValueError(f"{path}: holds several arrays (a .npz archive); give one array as a .npy file")
    return value


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
    if dt.kind in "iu":
        return rng.integers(0, 8, size=shape).astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(size=shape).astype(np.float32).astype(dt)


def _view_space(op: Operation, aliases: dict[str, Any], types: dict[str, Any] | None = None) -> str:
    """The memory space kind of a construct_memory_view: its attribute, else its memref type's."""
    attr = op.attributes.get("memory_space")
    if attr is None:
        t = ty.unaliased(op.result_types[0], types or {}) if op.result_types else None
        attr = t.memory_space if isinstance(t, ty.MemRefType) else None
    if isinstance(attr, at.AttrAliasRef):
        attr = aliases.get(attr.name)
    return attr.kind if isinstance(attr, at.MemorySpaceAttr) else "global"


def view_offsets(fn: Operation, aliases: dict[str, Any] | None = None,
                 types: dict[str, Any] | None = None,
                 functions: dict[str, Operation] | None = None) -> tuple[dict[str, np.dtype[Any]], dict[str, Region]]:
    """Arguments used as (the base of) a memory view offset, in `fn` or, through `func.call`,
    in the functions it calls (`functions`, by name; a lowered SDSC bundle's driver passes its
    arguments to one function per step): for global views, each one's dtype (the view's
    element type); for those used only for ct_local views (scratchpad addresses), the region
    they address. `aliases`, `types`: the module's attribute and type aliases."""
    found: dict[str, np.dtype[Any]] = {}
    regions: dict[str, Region] = {}
    _scan(fn, {a.name: a.name for a in fn.regions[0].blocks[0].arguments}, aliases or {}, types or {},
          functions or {}, found, regions, set())
    return found, {k: v for k, v in regions.items() if k not in found}


class Region:
    """What the ct_local views built on one argument need: their element type and, when
    every view has static sizes and strides, how many elements from the argument's address."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = dtype
        self.elements: int | None = 0

    def reach(self, op: Operation, delta: int | None) -> None:
        sizes, strides = op.attributes.get("static_sizes"), op.attributes.get("static_strides")
        if (self.elements is None or delta is None or not isinstance(sizes, at.DenseArrayAttr)
                or not isinstance(strides, at.DenseArrayAttr) or KDYNAMIC in (*sizes.values, *strides.values)):
            self.elements = None
            return
        span = 1 + sum(max(0, int(n) - 1) * int(st) for n, st in zip(sizes.values, strides.values, strict=True))
        self.elements = max(self.elements, delta + span)


def _scan(fn: Operation, origin: dict[str, str], aliases: dict[str, Any], types: dict[str, Any],
          functions: dict[str, Operation], found: dict[str, np.dtype[Any]], regions: dict[str, Region],
          active: set[str]) -> None:
    """Record the views built on the arguments `origin` maps values to (value -> argument)."""
    name = str(getattr(fn.attributes.get("sym_name"), "value", ""))
    if name in active:  # recursion: the first visit records everything a call can reach
        return
    active = active | {name}
    offset: dict[str, int | None] = dict.fromkeys(origin, 0)  # a value's constant offset from its argument
    consts: dict[str, int] = {}
    for op in fn.walk():
        value = op.attributes.get("value") if op.name == Arith.constant else None
        if isinstance(value, at.IntegerAttr) and op.results:
            consts[op.results[0]] = int(value.value)
        if op.name in _DERIVING:
            sources = {origin[n] for n in op.operands if n in origin}
            if len(sources) == 1:
                for r in op.results:
                    origin[r] = next(iter(sources))
                    offset[r] = _shifted(op, origin, offset, consts)
        if op.name == Func.call:
            ref = op.attributes.get("callee")
            callee = functions.get(ref.root) if isinstance(ref, at.SymbolRefAttr) and not ref.nested else None
            if callee is not None and callee.regions and callee.regions[0].blocks:
                params = callee.regions[0].blocks[0].arguments
                inner = {p.name: origin[v] for p, v in zip(params, op.operands, strict=False) if v in origin}
                _scan(callee, inner, aliases, types, functions, found, regions, active)
        base = _view_base(op) if op.name == Ktdp.construct_memory_view else None
        if base is None or base not in origin:
            continue
        arg = origin[base]
        t = ty.unaliased(op.result_types[0], types) if op.result_types else None
        if not isinstance(t, ty.MemRefType):
            continue
        try:
            dt = np_dtype(t.element_type)
        except Exception:  # noqa: BLE001 - unsupported types are reported later
            continue
        if _view_space(op, aliases, types) == "ct_local":
            region = regions.setdefault(arg, Region(dt))
            region.reach(op, offset.get(base))
        else:
            found.setdefault(arg, dt)


def _shifted(op: Operation, origin: dict[str, str], offset: dict[str, int | None], consts: dict[str, int]) -> int | None:
    """The constant offset from its argument of `op`'s result: `arg + c` keeps one, anything else
    (a product, an index computed from the tile id) does not."""
    if op.name not in (Arith.addi, Arith.subi) or len(op.operands) != 2:
        return None
    a, b = op.operands
    if a in origin and b in consts and offset.get(a) is not None:
        base = offset[a]
        assert base is not None
        return base + consts[b] if op.name == Arith.addi else base - consts[b]
    if b in origin and a in consts and op.name == Arith.addi and offset.get(b) is not None:
        base = offset[b]
        assert base is not None
        return base + consts[a]
    return None


def infer_args(module: Module, func: str | None, given: dict[str, Any], seed: int, run_kwargs: dict[str, Any],
               zeros: bool = False, notes: list[str] | None = None) -> dict[str, Any]:
    """Arguments for `func`: the given ones, random arrays and numbers for the rest; zero arrays
    with `zeros` (for cost traces, with `run_kwargs={"shapes_only": True}` for the probe run
    that sizes pointer arguments: no random numbers drawn, no arithmetic done). An integer
    argument that is neither a pointer nor a scratchpad offset (a size such as a row count)
    takes the smallest of 1, 2, 4, ... with which the kernel runs; `notes` receives a line
    saying so."""
    from .executor import choose_function

    if seed < 0:
        raise fail("argument", f"the random seed {seed} is negative; give an integer >= 0")
    fn = choose_function(module, func)
    block = fn.regions[0].blocks[0]
    # an argument type the interpreter rejects is that error, not "cannot infer a value"
    reject_semantics_free(fn, [ty.unaliased(a.type, module.type_aliases) for a in block.arguments])
    rng = np.random.default_rng(seed)

    limit = run_kwargs.get("max_value_bytes") or Options().max_value_bytes

    def array(shape: tuple[int, ...], dt: np.dtype[Any], name: str) -> np.ndarray:
        n = int(np.prod(shape, dtype=object)) * dt.itemsize
        if n > limit:  # a huge static shape: a diagnostic, not a MemoryError
            raise fail("memory-limit", f"argument {name} needs {n} bytes (limit {limit})")
        return np.zeros(shape, dt) if zeros else random_array(rng, shape, dt)

    args = dict(given)
    pointers: dict[str, np.dtype[Any]] = {}
    free: list[str] = []  # sizes no view or scratchpad region explains
    functions = {str(getattr(f.attributes.get("sym_name"), "value", "")): f for f in module.walk() if f.name == Func.func}
    dtypes, scratchpad = view_offsets(fn, module.attr_aliases, module.type_aliases, functions)
    for a in block.arguments:
        name = a.name[1:]
        if name in args:
            continue
        t = ty.unaliased(a.type, module.type_aliases)
        if isinstance(t, ty.MemRefType | ty.TensorType) and all(d is not None for d in t.shape):
            try:
                dt = np_dtype(t.element_type)
            except UnsupportedType as e:
                raise fail("unsupported", f"argument {name}: the interpreter has no arrays of {type_text(t.element_type)} ({e})") from None
            args[name] = array(tuple(int(d or 0) for d in t.shape), dt, name)
        elif isinstance(t, ty.RuntimeArgType):
            if t.upperbound is None:
                raise fail("argument", f"argument {name}: a runtime_arg without an upperbound needs --arg {name}=VALUE")
            g = t.granularity or 1
            args[name] = t.upperbound // g * g
        elif isinstance(t, ty.FloatType):
            args[name] = float(rng.standard_normal())
        elif isinstance(t, ty.IndexType | ty.IntegerType) and a.name in dtypes:
            pointers[name] = dtypes[a.name]
        elif isinstance(t, ty.IndexType | ty.IntegerType) and a.name in scratchpad:
            region = scratchpad[a.name]
            if region.elements is None:  # views of run-time size: the start of the scratchpad
                args[name] = 0
            else:  # a region of its own in every tile's scratchpad, with random contents
                tiles = _tiles(module, fn)
                args[name] = Local(array((tiles, max(region.elements, 1)), region.dtype, name))
        elif isinstance(t, ty.IndexType | ty.IntegerType):
            free.append(name)
        else:
            raise fail("argument", f"cannot infer a value for argument {name}; give it with --arg {name}=...")
    def with_pointers(values: dict[str, Any]) -> dict[str, Any]:
        if pointers:
            sizes = _probe(module, func, values, pointers, run_kwargs)
            for name, dt in pointers.items():
                values[name] = array((sizes[name],), dt, name)
        return values

    if not free:
        return with_pointers(args)
    hints = size_hints(fn, free, module.type_aliases, module.attr_aliases)
    rest = [n for n in free if n not in hints]
    fixed = {n: v for n, (v, _) in hints.items()}
    chosen: dict[str, Any] | None = None
    hinted: KtirRuntimeError | None = None
    if hints:
        try:
            chosen = _smallest_size(module, func, {**args, **fixed}, rest, with_pointers, run_kwargs)
        except KtirRuntimeError as e:
            if e.kind == "memory-limit":
                raise
            hinted = e
    if chosen is None:  # the uses explain nothing, or their values do not run: search them all
        try:
            chosen = _smallest_size(module, func, args, free, with_pointers, run_kwargs)
        except KtirRuntimeError:
            if hinted is None or hinted.kind in _SIZE_ERRORS:
                raise
            # a failure no size explains (an undefined read, a race): with the values read from
            # the uses, the kernel's own error at its op is the one to see
            said = ", ".join(f"{n} = {v}" for n, v in fixed.items())
            flags = " ".join(f"--arg {n}=..." for n in free)
            hinted.detail = f"with {said} (read from their uses; no other sizes run either, give them with {flags}): " \
                            f"{hinted.detail}"
            raise hinted.attach() from None
        hints, rest = {}, free
    if notes is not None:
        for n, (v, why) in hints.items():
            notes.append(f"{n} = {v}: {why} (give --arg {n}=... for another value)")
        if rest:
            notes.append(f"{', '.join(rest)} = {chosen[rest[0]]}: the smallest of 1, 2, 4, ... with which the kernel "
                         f"runs on these random inputs (give --arg {rest[0]}=... for another size)")
    return chosen


_SIZE_ERRORS = {"out-of-view", "out-of-bounds", "step-limit", "argument", "store-conflict"}
"""Errors another size may cure: the search's own message (the arguments, `--arg`) reports them."""

Hint = tuple[int, str]
"""A value for an integer argument and why: `(64, "the upper bound of a loop over dimension 1 ...")`."""


def size_hints(fn: Operation, free: list[str], types: dict[str, Any] | None = None,
               aliases: dict[str, Any] | None = None) -> dict[str, Hint]:
    """Values for the integer arguments `free` of `fn` (names without `%`) read from how the
    body uses them (module docstring); an argument no use explains is left out. Only `fn`'s
    own body is read, not the functions it calls."""
    block = fn.regions[0].blocks[0]
    wanted = {f"%{n}" for n in free}
    # value -> (argument, how it was derived): "=" the argument (or a cast of it), "+" plus
    # something, "*" times something (then possibly plus something)
    derived: dict[str, tuple[str, str]] = {a.name: (a.name, "=") for a in block.arguments if a.name in wanted}
    # induction variables (and values they feed through additions) -> their scf.for
    loops: dict[str, Operation] = {}
    # view value -> [(argument, dimension)] for views whose dynamic size is an argument
    sized: dict[str, list[tuple[str, int]]] = {}
    found: dict[str, dict[str, list[Hint]]] = {}

    def note(arg: str, kind: str, value: int, why: str) -> None:
        found.setdefault(arg, {}).setdefault(kind, []).append((value, why))

    for op in fn.walk():
        if op.name in (Arith.index_cast, Arith.index_castui, Arith.extsi, Arith.extui, Arith.trunci):
            if op.operands and op.operands[0] in derived and op.results:
                derived[op.results[0]] = derived[op.operands[0]]
            if op.operands and op.operands[0] in loops and op.results:
                loops[op.results[0]] = loops[op.operands[0]]
        elif op.name in (Arith.addi, Arith.subi, Arith.muli) and len(op.operands) == 2 and op.results:
            a, b = op.operands
            src = [derived[v] for v in (a, b) if v in derived]
            if len(src) == 1:
                arg, how = src[0]
                how = "*" if op.name == Arith.muli or how == "*" else "+"
                if op.name == Arith.subi and b in derived:
                    how = "-"
                derived[op.results[0]] = (arg, how)
            if op.name != Arith.muli:
                for v in (a, b):
                    if v in loops:
                        loops[op.results[0]] = loops[v]
        elif op.name == Scf.for_:
            _for_hints(op, derived, loops, note)
        elif op.name == Ktdp.construct_memory_view:
            _view_sizes(op, derived, sized)
        elif op.name == Ktdp.construct_distributed_memory_view and op.results:
            parts = [x for v in op.operands for x in sized.get(v, [])]
            if parts:
                sized[op.results[0]] = parts
        elif op.name == Ktdp.construct_access_tile:
            _tile_hints(op, derived, loops, sized, types or {}, aliases or {}, note)
        elif op.name == Ktdp.construct_indirect_access_tile:
            try:
                captured = named(op).operands("captured_variables")
            except AccessError:
                continue
            for v in captured:
                if v in derived and derived[v][1] in "=+":
                    note(derived[v][0], "offset", 0, "an offset in an indirect access tile's subscripts")
    out: dict[str, Hint] = {}
    for arg, kinds in found.items():
        if "bound" in kinds:  # a trip count: the smallest dimension its loop walks
            out[arg[1:]] = min(kinds["bound"])
        elif "block" in kinds:  # a block size: the largest tile extent it steps over
            out[arg[1:]] = max(kinds["block"])
        elif "offset" in kinds:
            out[arg[1:]] = kinds["offset"][0]
    return out


def _for_hints(op: Operation, derived: dict[str, tuple[str, str]], loops: dict[str, Operation],
               note: Any) -> None:
    try:
        lo = named(op).operand("lower_bound")
    except AccessError:
        return
    if lo in derived and derived[lo][1] in "=+":
        note(derived[lo][0], "offset", 0, "a loop's lower bound")
    body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    if body is not None and body.arguments:
        loops[body.arguments[0].name] = op


def _view_sizes(op: Operation, derived: dict[str, tuple[str, str]], sized: dict[str, list[tuple[str, int]]]) -> None:
    static = op.attributes.get("static_sizes")
    if not isinstance(static, at.DenseArrayAttr) or not op.results:
        return
    try:
        dynamic = named(op).operands("sizes")
    except AccessError:
        return
    dims = [d for d, n in enumerate(static.values) if n == KDYNAMIC]
    out = [(derived[v][0], d) for v, d in zip(dynamic, dims, strict=False) if v in derived and derived[v][1] == "="]
    if out:
        sized[op.results[0]] = out


def _tile_hints(op: Operation, derived: dict[str, tuple[str, str]], loops: dict[str, Operation],
                sized: dict[str, list[tuple[str, int]]], types: dict[str, Any], aliases: dict[str, Any],
                note: Any) -> None:
    """Hints from one access tile: what each index operand is, per coordinate dimension."""
    try:
        v = named(op)
        base, indices = v.operand("base"), v.operands("indices")
    except AccessError:
        return
    bmap, order = (_unalias(op.attributes.get(k), aliases) for k in ("base_map", "access_tile_order"))
    if not isinstance(bmap, at.AffineMapAttr) or not op.result_types:
        return
    tile = ty.unaliased(op.result_types[0], types)
    shape = getattr(tile, "shape", None)
    identity = isinstance(order, at.AffineMapAttr) and all(
        isinstance(e, af.Dim) and e.position == i for i, e in enumerate(order.value.results))
    if shape is None or not identity or len(shape) != len(bmap.value.results):
        return
    btype = ty.unaliased(v.operand_type("base"), types)
    view_shape = getattr(btype, "shape", None) or [None] * len(shape)
    nd = bmap.value.num_dims
    for d, expr in enumerate(bmap.value.results):
        form = af.linear(expr)
        if form is None:
            continue
        terms = [(k, c) for k, c in form[0].items()] + [(nd + k, c) for k, c in form[1].items()]
        extent = int(shape[d] or 0)
        for k, c in terms:
            if c != 1 or k >= len(indices):
                continue
            x = indices[k]
            if x in derived:
                arg, how = derived[x]
                if how in "=+":
                    note(arg, "offset", 0, f"an offset added to dimension {d} of an access tile")
                elif how == "*" and extent:
                    note(arg, "block", extent, f"a factor of the start of an access tile {extent} wide in dimension {d}")
            loop = loops.get(x)
            if loop is not None:
                _loop_hint(loop, d, extent, view_shape[d] if d < len(view_shape) else None, derived, note)
        for arg, dim in sized.get(base, []):
            if dim == d and extent:
                note(arg, "block", extent, f"a dynamic size of dimension {d} of a view read by an access tile {extent} wide")


def _unalias(attr: Any, aliases: dict[str, Any]) -> Any:
    while isinstance(attr, at.AttrAliasRef) and attr.name in aliases:
        attr = aliases[attr.name]
    return attr


def _loop_hint(loop: Operation, d: int, extent: int, size: int | None, derived: dict[str, tuple[str, str]],
               note: Any) -> None:
    try:
        v = named(loop)
        hi, step = v.operand("upper_bound"), v.operand("step")
    except AccessError:
        return
    if hi in derived and derived[hi][1] == "=" and size:
        note(derived[hi][0], "bound", size, f"the upper bound of a loop over dimension {d} (size {size}) of a view")
    if step in derived and derived[step][1] == "=" and extent:
        note(derived[step][0], "block", extent, f"the step of a loop over an access tile {extent} wide in dimension {d}")


_PROBE_SPAN = 1 << 40


SIZE_CANDIDATES = tuple(1 << k for k in range(15))  # 1 .. 16384


def _smallest_size(module: Module, func: str | None, args: dict[str, Any], free: list[str],
                   complete: Any, run_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments with every size in `free` set to the smallest candidate with which the
    kernel runs without a runtime error: each candidate's pointer arrays are sized and drawn
    (`complete`), then the kernel runs on them (an index table's random values must fall
    inside the size it indexes). With `free` empty, the one run of `args` as they are."""
    from . import executor

    last: tuple[int, KtirRuntimeError] | None = None
    for value in SIZE_CANDIDATES if free else (0,):
        try:
            trial = complete({**args, **dict.fromkeys(free, value)})
            executor.run(module, func, dict(trial), **run_kwargs)
        except KtirRuntimeError as e:
            last = (value, e)
            if e.kind == "memory-limit":  # a larger size needs more still
                break
            continue
        return trial
    if not free:
        assert last is not None
        raise last[1]
    tried = f"{SIZE_CANDIDATES[0]}, {SIZE_CANDIDATES[1]}, ... {SIZE_CANDIDATES[-1]}"
    names = ", ".join(free)
    why = f" (with {names} = {last[0]}: {last[1].detail})" if last is not None else ""
    flags = " ".join(f"--arg {n}=..." for n in free)
    what = f"argument {free[0]}" if len(free) == 1 else f"arguments {names}"
    raise fail("argument", f"cannot infer a value for {what}: no size of {tried} runs the kernel{why}; "
               f"give {'it' if len(free) == 1 else 'them'} with {flags}")


def _probe(module: Module, func: str | None, args: dict[str, Any], pointers: dict[str, np.dtype[Any]],
           run_kwargs: dict[str, Any]) -> dict[str, int]:
    """Run once with growable arrays for the pointer arguments; return their sizes in elements."""
    from . import executor
    from .memory import Allocation

    probes: dict[str, Allocation] = {}
    original = executor._Binder._bind
    # a probe array grows to the highest element touched, but no larger than any one value
    # may be: a kernel that addresses far away fails cleanly instead of allocating for long
    from .runtime import Options

    span = min(_PROBE_SPAN, int(run_kwargs.get("max_value_bytes") or Options.max_value_bytes))

    def bind(self: Any, name: str, t: Any, value: Any) -> Any:
        if name in pointers and value is _PROBE:
            dt = pointers[name]
            base = (len(probes) + 1) * _PROBE_SPAN
            alloc = Allocation(name, "global", base, np.zeros(0, dtype=np.uint8), 0, capacity=span)
            alloc.dtype, alloc.shape = dt, (0,)
            self.machine.memory.allocs.append(alloc)
            self.machine.memory._bases.append(base)
            probes[name] = alloc
            elem = base // dt.itemsize
            return lambda _tile: elem
        return original(self, name, t, value)

    probe_args = dict(args)
    for name in pointers:
        probe_args[name] = _PROBE
    executor._Binder._bind = bind  # type: ignore[method-assign]
    try:
        # tile by tile: the probe allocations are bound once (lockstep may run twice)
        executor.run(module, func, probe_args, **run_kwargs, lockstep=False)
    except KtirRuntimeError as e:
        if e.op is None:  # bad arguments or options: the message says it all
            raise
        # keep the failing op, tile and location: the user must see where the kernel failed
        e.detail = f"while running the kernel once to infer the array sizes for random inputs: {e.detail}"
        raise e.attach() from None
    finally:
        executor._Binder._bind = original  # type: ignore[method-assign]
    out = {}
    for name, alloc in probes.items():
        isz = pointers[name].itemsize
        out[name] = max((alloc.peak + isz - 1) // isz, 1)
    return out


class _Probe:
    pass


_PROBE = _Probe()


def _tiles(module: Module, fn: Operation) -> int:
    """How many tiles run `fn`: the product of its grid (default [1])."""
    grid = fn.attributes.get("grid")
    if isinstance(grid, at.AttrAliasRef):
        grid = module.attr_aliases.get(grid.name)
    values = [e.value for e in grid.elements if isinstance(e, at.IntegerAttr)] if isinstance(grid, at.ArrayAttr) else [1]
    n = 1
    for v in values:
        n *= int(v)
    return n


def _view_base(op: Operation) -> str | None:
    """The value a memory view starts at (its `offset` operand); None for a malformed view."""
    try:
        return named(op).operand("offset")
    except AccessError:
        return None
