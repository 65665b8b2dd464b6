"""Random inputs for `ktir run --random-inputs`: infer what each argument needs.

- `memref`/`tensor` arguments with a static shape get an array of that shape and dtype.
- `!ktdp.runtime_arg` arguments get their upper bound (rounded down to the granularity).
- float scalars get a standard normal draw.
- an `index`/integer argument used (directly or through `arith.addi`/`subi`/`muli`/
  `index_cast`/`affine.apply`) as the offset of a `construct_memory_view` is an array
  pointer: its dtype is the view's element type, and its size is found by a *probe run*
  that places a growable array for it and records the highest element touched.
- an `index`/integer argument used that way only for `ct_local` views is an address in
  each tile's scratchpad: it gets 0, the start of the scratchpad.
- other integer arguments cannot be guessed and must be given with `--arg`.

Float arrays hold standard normal values; integer arrays hold values in [0, 8) (small,
so that index arrays used for indirect access usually stay in range).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ktir.dialects.access import AccessError, named
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.asm import type_text
from ktir.ir.operation import Module, Operation

from .compiler import reject_semantics_free
from .dtypes import UnsupportedType, np_dtype
from .errors import KtirRuntimeError, fail
from .runtime import Options

_DERIVING = {"arith.addi", "arith.subi", "arith.muli", "arith.index_cast", "arith.index_castui", "affine.apply",
             "affine.min", "affine.max", "arith.maxsi", "arith.minsi"}


def load_npy(path: str | Path) -> np.ndarray:
    """Read one array from a `.npy` file for a kernel argument. Never unpickles
    (`allow_pickle=False`: a pickled object array is refused, not run); any unreadable file
    (empty, truncated, not .npy, a .npz archive) raises ValueError naming it, or OSError."""
    try:
        value = np.load(path, allow_pickle=False)
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
                 types: dict[str, Any] | None = None) -> tuple[dict[str, np.dtype[Any]], set[str]]:
    """Arguments used as (the base of) a memory view offset: for global views, each one's
    dtype (the view's element type); and those used only for ct_local views (scratchpad addresses).
    `aliases`, `types`: the module's attribute and type aliases."""
    block = fn.regions[0].blocks[0]
    origin: dict[str, str] = {a.name: a.name for a in block.arguments}
    found: dict[str, np.dtype[Any]] = {}
    local: set[str] = set()
    for op in fn.walk():
        if op.name in _DERIVING:
            sources = {origin[n] for n in op.operands if n in origin}
            if len(sources) == 1:
                for r in op.results:
                    origin[r] = next(iter(sources))
        base = _view_base(op) if op.name == "ktdp.construct_memory_view" else None
        if base is not None and base in origin:
            arg = origin[base]
            t = ty.unaliased(op.result_types[0], types or {}) if op.result_types else None
            if _view_space(op, aliases or {}, types) == "ct_local":
                local.add(arg)
            elif isinstance(t, ty.MemRefType):
                try:
                    found.setdefault(arg, np_dtype(t.element_type))
                except Exception:  # noqa: BLE001 - unsupported types are reported later
                    continue
    return found, local - set(found)


def infer_args(module: Module, func: str | None, given: dict[str, Any], seed: int, run_kwargs: dict[str, Any],
               zeros: bool = False) -> dict[str, Any]:
    """Arguments for `func`: the given ones, random arrays and numbers for the rest; zero arrays
    with `zeros` (for cost traces, with `run_kwargs={"shapes_only": True}` for the probe run
    that sizes pointer arguments: no random numbers drawn, no arithmetic done)."""
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
    dtypes, scratchpad = view_offsets(fn, module.attr_aliases, module.type_aliases)
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
            args[name] = 0
        else:
            raise fail("argument", f"cannot infer a value for argument {name}; give it with --arg {name}=...")
    if pointers:
        sizes = _probe(module, func, args, pointers, run_kwargs)
        for name, dt in pointers.items():
            args[name] = array((sizes[name],), dt, name)
    return args


_PROBE_SPAN = 1 << 40


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


def _view_base(op: Operation) -> str | None:
    """The value a memory view starts at (its `offset` operand); None for a malformed view."""
    try:
        return named(op).operand("offset")
    except AccessError:
        return None
