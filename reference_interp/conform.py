"""Arrays given on the command line checked against the types the kernel declares.

A `.npy` file holds its own dtype; the kernel declares another (a memref's element type, or
the element type of the global views built on a pointer argument). Binding the bytes as they
are would reinterpret them: a float32 array read as f16 is garbage with exit 0. So an array
whose dtype differs is converted when every value survives the conversion exactly (an
integer array into a float type wide enough, f16 into f32, a big-endian array into the
machine's byte order) and the conversion is announced; otherwise it is refused, naming the
first value that would change. `ktir run --arg` and `ktir run-program --input` both use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ktir.dialects.names import Ktdp
from ktir.ir import types as ty
from ktir.ir.operation import Module, Operation

from .dtypes import UnsupportedType, np_dtype


class ArgumentTypeError(ValueError):
    """An array that cannot be converted exactly to the declared dtype."""


def conform(name: str, array: np.ndarray, want: np.dtype[Any], ktype: str) -> tuple[np.ndarray, str | None]:
    """`array` in dtype `want` and a note saying what was converted (None when nothing was),
    or ArgumentTypeError when some value would change. `ktype` names the declared type."""
    have = array.dtype
    if have == want:
        return array, None
    if have.newbyteorder("=") == want.newbyteorder("=") and have.kind == want.kind:
        # the same numbers in the other byte order: always exact
        return array.astype(want), f"argument {name}: the {_order(have)} {have.name} array was converted to this machine's byte order"
    if have.kind not in "biuf" and have.name != "bfloat16":
        raise ArgumentTypeError(f"argument {name}: the array has dtype {have} ({_kind(have)}), but the kernel reads {ktype}")
    try:
        with np.errstate(all="ignore"):
            converted = array.astype(want)
            back = converted.astype(have)
            changed = ~((back == array) | ((array != array) & (back != back)))
            if want.kind in "iu":
                # into integers, the round trip can come back equal though the value changed: integers
                # wrap both ways, and f16 -inf -> i32 -2**31 -> f16 -inf; so the range decides
                info = np.iinfo(want)
                wide = array if have.kind in "iu" else array.astype(np.float64)
                changed |= (wide < info.min) | (wide > info.max)
                if have.kind not in "iub":
                    changed |= ~np.isfinite(wide)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"argument {name}: the {have} array cannot be read as {ktype} ({e})") from None
    bad = np.flatnonzero(np.asarray(changed))
    if bad.size:
        first = int(bad[0])
        at = np.unravel_index(first, array.shape) if array.ndim else ()
        value = array.reshape(-1)[first]
        raise ArgumentTypeError(
            f"argument {name}: the array is {have}, but the kernel reads {ktype}; {bad.size} of {array.size} values "
            f"would change in the conversion (the first, {_show(value)} at index {list(map(int, at))}, becomes "
            f"{_show(converted.reshape(-1)[first])}); convert the array yourself if that is what you mean")
    return converted, f"argument {name}: the {have} array was converted to {ktype} (every value is exact)"


def _show(value: Any) -> str:
    """A number with every digit its type holds (f32 0.1 and f16 0.1 print alike otherwise)."""
    if isinstance(value, np.bool_ | np.integer):
        return str(int(value))
    return repr(float(value))


def _order(dt: np.dtype[Any]) -> str:
    return "big-endian" if dt.byteorder == ">" else "little-endian"


def _kind(dt: np.dtype[Any]) -> str:
    return {"c": "complex", "U": "strings", "S": "bytes", "O": "objects", "M": "dates", "m": "time deltas"}.get(dt.kind, "not numbers")


def declared(module: Module, func: str | None) -> dict[str, tuple[np.dtype[Any], str]]:
    """For each argument of `func` that takes an array: the dtype the kernel reads it as and
    that type's KTIR name. Memref and tensor arguments give their element type; a pointer
    (`index`/integer) argument gives the element type of the global views built on it, when
    they all agree (a kernel that views one buffer as two types is left as it is)."""
    from ktir.ir.asm import type_text

    from .executor import choose_function

    fn = choose_function(module, func)
    out: dict[str, tuple[np.dtype[Any], str]] = {}
    views = _pointer_views(fn, module)
    for a in fn.regions[0].blocks[0].arguments:
        name = a.name[1:]
        t = ty.unaliased(a.type, module.type_aliases)
        elem = t.element_type if isinstance(t, ty.MemRefType | ty.TensorType) else None
        if elem is None and isinstance(t, ty.IndexType | ty.IntegerType) and len(views.get(a.name, {})) == 1:
            elem = next(iter(views[a.name].values()))
        if elem is None:
            continue
        try:
            out[name] = (np_dtype(elem), type_text(elem))
        except UnsupportedType:
            continue  # the binder reports it
    return out


def _pointer_views(fn: Operation, module: Module) -> dict[str, dict[str, Any]]:
    """Element types (by their text) of the memory views built on each argument, through
    the index arithmetic random inputs follow too."""
    from ktir.ir.asm import type_text

    from .inputs import _DERIVING, _view_base

    block = fn.regions[0].blocks[0]
    origin = {a.name: a.name for a in block.arguments}
    found: dict[str, dict[str, Any]] = {}
    for op in fn.walk():
        if op.name in _DERIVING:
            sources = {origin[n] for n in op.operands if n in origin}
            if len(sources) == 1:
                for r in op.results:
                    origin[r] = next(iter(sources))
        if op.name != Ktdp.construct_memory_view or not op.result_types:
            continue
        base = _view_base(op)
        t = ty.unaliased(op.result_types[0], module.type_aliases)
        if base in origin and isinstance(t, ty.MemRefType):
            found.setdefault(origin[base], {})[type_text(t.element_type)] = t.element_type
    return found
