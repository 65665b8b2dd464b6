"""`ktir run`: parse, check, run a kernel and write the final contents of its arrays.

Wire it into `ktir/cli.py` with:

    from reference_interp.cli import add_run_parser
    add_run_parser(sub)          # inside build_parser(), next to `fmt`

`add_run_parser` sets `run=cmd_run` as the subcommand's handler.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import Any

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_run_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run",
        help="run a kernel on the reference interpreter",
        description="Run FILE's kernel on every tile of its grid with the reference interpreter. "
        "Array arguments are placed in global memory; the final contents of every array argument "
        "are written to --out.",
    )
    p.add_argument("file", metavar="FILE", help="a .ktir or .mlir file, or - for stdin")
    p.add_argument("--func", metavar="NAME", help="the function to run (required when the file has several)")
    p.add_argument(
        "--arg", action="append", default=[], metavar="NAME=VALUE",
        help="bind an argument: NAME=PATH.npy (an array in global memory), NAME=ct_local:PATH.npy "
        "(one piece per tile in ct_local memory), NAME=INT or NAME=FLOAT (a value); repeatable",
    )
    p.add_argument("--memory", action="append", default=[], metavar="NAME=ADDRESS:PATH.npy",
                   help="place an array in global memory at a fixed element address (in the array's element type), "
                   "for kernels that build views at constant addresses; NAME=ct_local:ADDRESS:PATH.npy places it at "
                   "that address of every tile's scratchpad instead; written to --out as NAME; repeatable")
    p.add_argument("--random-inputs", type=_seed, metavar="SEED", nargs="?", const=0,
                   help="generate the arguments not given with --arg, from SEED (default 0; see reference_interp.inputs)")
    p.add_argument("--out", metavar="OUT.npz", help="write the final contents of every array argument, the value of "
                   "every tensor argument and each value the function returns (return.0, return.1, ...) here")
    p.add_argument("--target", metavar="NAME", help="target whose scratchpad capacity applies (e.g. spyre)")
    p.add_argument("--stats", action="store_true", help="print per-tile statistics")
    p.add_argument("--strict", action="store_true",
                   help="reading tensor.empty contents is an error (the default; kept for compatibility)")
    p.add_argument("--lenient", action="store_true",
                   help="read tensor.empty contents as zeros instead of reporting runtime.undefined")
    p.add_argument("--no-race-check", action="store_true", help="do not check for data races between tiles")
    p.add_argument("--step-limit", type=int, metavar="N", help="ops per tile before giving up (default 2e7, about 20 s; a loop whose trip count alone exceeds it fails at once)")
    p.add_argument("--event-trace", metavar="OUT.json", help="write the interpreter's raw event trace (per tile) as JSON")
    from ktir.targets.cli import add_cost_arguments

    add_cost_arguments(p)  # --report, --report-json PATH, --trace PATH (Perfetto), --timeline OUT.svg
    p.set_defaults(run=cmd_run)
    return p


def _seed(text: str) -> int:
    """A random seed: a non-negative integer (numpy refuses negative seeds)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a seed is an integer >= 0")
    return value


def _parse_memory(text: str) -> tuple[str, Any]:
    """`NAME=ADDRESS:PATH.npy`: the array in PATH at element address ADDRESS of global memory;
    `NAME=ct_local:ADDRESS:PATH.npy`: at that address of every tile's scratchpad."""
    from .executor import At
    from .inputs import load_npy

    name, sep, rest = text.partition("=")
    space = "global"
    if rest.startswith("ct_local:"):
        space, rest = "ct_local", rest[len("ct_local:"):]
    address, sep2, path = rest.partition(":")
    name = name.strip().lstrip("%")
    if not sep or not sep2 or not name or not path:
        raise ValueError(f"--memory {text!r}: expected NAME=ADDRESS:PATH.npy")
    try:
        where = int(address, 0)
    except ValueError:
        raise ValueError(f"--memory {name}: {address!r} is not an element address") from None
    return name, At(load_npy(path), where, space)


def _parse_arg(text: str) -> tuple[str, Any]:
    from .executor import Local
    from .inputs import load_npy

    if "=" not in text:
        raise ValueError(f"--arg {text!r}: expected NAME=VALUE")
    name, value = text.split("=", 1)
    name = name.strip().lstrip("%")
    if not name:
        raise ValueError(f"--arg {text!r}: empty name")
    if value.startswith("ct_local:"):
        return name, Local(load_npy(value[len("ct_local:"):]))
    if value.endswith(".npy"):
        return name, load_npy(value)
    try:
        return name, int(value, 0)
    except ValueError:
        pass
    try:
        return name, float(value)
    except ValueError:
        raise ValueError(f"--arg {name}: {value!r} is neither a .npy path nor a number") from None


def cmd_run(args: argparse.Namespace) -> int:
    import numpy as np

    from ktir.fileio import InputError, read_source, write_atomic
    from ktir.syntax.diagnostics import KtirError
    from ktir.syntax.parser import parse

    from .executor import run
    from .inputs import infer_args

    name = "<stdin>" if args.file == "-" else args.file
    try:
        source = read_source(args.file)
    except InputError as e:
        print(f"ktir run: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        given = dict(_parse_arg(a) for a in args.arg)
        memory = dict(_parse_memory(m) for m in args.memory)
    except (ValueError, OSError) as e:
        print(f"ktir run: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        module = parse(source, name)
        problems = _validate(module)
        if problems:
            for diag in problems:
                print(_render(diag, source, name), file=sys.stderr)
            return EXIT_INVALID
        try:
            given = _conform_given(module, args.func, given)
        except ValueError as e:
            print(f"ktir run: {e}", file=sys.stderr)
            return EXIT_USAGE
        kwargs: dict[str, Any] = {"target": args.target, "strict": not args.lenient,
                                  "check_races": not args.no_race_check, "memory": memory}
        if args.step_limit is not None:
            kwargs["step_limit"] = args.step_limit
        from ktir.progress import working
        from ktir.targets.cli import wants_cost

        with working(f"running {name}") as step:
            if args.random_inputs is not None:
                step(f"sizing the random inputs of {name}")
                notes: list[str] = []
                given = infer_args(module, args.func, given, args.random_inputs, kwargs, notes=notes)
                for note in notes:
                    print(f"{name}: note: {note}", file=sys.stderr)
                step(f"running {name}")
            result = run(module, args.func, given, trace=bool(args.event_trace) or wants_cost(args), **kwargs)
    except KtirError as e:
        for diag in e.diagnostics:
            print(_render(diag, source, name), file=sys.stderr)
        if args.random_inputs is None and any(d.message.startswith("missing argument") for d in e.diagnostics):
            print("note: bind them with --arg NAME=PATH.npy or NAME=VALUE, or generate them with "
                  "--random-inputs SEED", file=sys.stderr)
        return EXIT_INVALID
    try:
        if args.out:
            arrays = _arrays(result, module, args.func, given)
            buf = io.BytesIO()
            np.savez(buf, **arrays)
            # numpy's own rule for a bare name: `--out result` writes result.npz
            out = args.out if args.out.endswith(".npz") else args.out + ".npz"
            write_atomic(out, buf.getvalue())  # a failed run leaves an earlier file intact
        if args.event_trace:
            assert result.trace is not None
            write_atomic(args.event_trace, json.dumps([[e.to_dict() for e in t] for t in result.trace]))
    except OSError as e:
        print(f"ktir run: cannot write output: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.stats:
        _print_stats(result)
    from ktir.targets.cli import emit_cost_outputs

    if not (args.out or args.event_trace or args.stats or wants_cost(args)):
        # asked for nothing to be written: say what ran, so success is not silence
        print(_summary(result, name, module, args.func))

    return emit_cost_outputs(args, module, result)


def _conform_given(module: Any, func: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """The given arrays in the dtypes the kernel declares: converted when exact (announced on
    stderr), else ValueError (reference_interp.conform)."""
    import numpy as np

    from .conform import conform, declared
    from .executor import Local

    wanted = declared(module, func)
    out = dict(given)
    for name, value in given.items():
        if name not in wanted:
            continue
        dt, ktype = wanted[name]
        if isinstance(value, Local) and isinstance(value.arrays, np.ndarray):
            array, note = conform(name, value.arrays, dt, ktype)
            out[name] = Local(array)
        elif isinstance(value, np.ndarray):
            out[name], note = conform(name, value, dt, ktype)
        else:
            continue
        if note:
            print(f"ktir run: note: {note}", file=sys.stderr)
    return out


def _tensor_arguments(module: Any, func: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """The values bound to the function's tensor arguments: arrays the kernel reads as values,
    so they are in no memory and not among the run's outputs."""
    import numpy as np

    from ktir.ir import types as ty

    from .executor import choose_function

    fn = choose_function(module, func)
    found = {}
    for arg in fn.regions[0].blocks[0].arguments:
        name = arg.name.lstrip("%")
        t = ty.unaliased(arg.type, module.type_aliases)
        if isinstance(t, ty.TensorType) and name in given:
            found[name] = np.asarray(given[name])
    return found


def _returned(result: Any, module: Any, func: str | None) -> dict[str, Any]:
    """`return.K`: the K-th value the function returns, in its result type's dtype (the
    interpreter holds integer scalars as Python ints); with several tiles, one per tile
    stacked in tile order. A returned memref gives its contents; a value that is no array
    (tensor.empty's undefined contents, a distributed view) is left out."""
    import numpy as np

    from ktir.ir import attributes as at
    from ktir.ir import types as ty

    from .compiler import Uninit
    from .dtypes import UnsupportedType, np_dtype
    from .executor import choose_function
    from .memory import MemoryView

    if not result.returns or not result.returns[0]:
        return {}
    ftype = choose_function(module, func).attributes.get("function_type")
    types = list(ftype.value.results) if isinstance(ftype, at.TypeAttr) and isinstance(ftype.value, ty.FunctionType) else []

    def typed(value: Any, k: int) -> Any:
        if isinstance(value, MemoryView):
            return _view_contents(value)
        if isinstance(value, Uninit) or not isinstance(value, np.ndarray | np.generic | int | float | bool):
            return None
        arr = np.asarray(value)
        if arr.ndim == 0 and k < len(types):
            try:
                return arr.astype(np_dtype(ty.unaliased(types[k], module.type_aliases)))
            except UnsupportedType:
                pass
        return arr

    found = {}
    for k in range(len(result.returns[0])):
        per_tile = [typed(r[k], k) for r in result.returns]
        if any(v is None for v in per_tile) or len({(v.shape, v.dtype) for v in per_tile}) != 1:
            continue
        found[f"return.{k}"] = per_tile[0] if len(per_tile) == 1 else np.stack(per_tile)
    return found


def _view_contents(view: Any) -> Any:
    """A memref view's elements (origin to origin + sizes), or None if they leave its allocation."""
    import numpy as np

    if view.alloc is None:
        return None
    start = view.boff + sum(o * st for o, st in zip(view.origin, view.bstrides, strict=True))
    try:
        return np.ndarray(view.sizes, view.dtype, buffer=view.alloc.raw, offset=start, strides=view.bstrides).copy()
    except (TypeError, ValueError):
        return None


def _arrays(result: Any, module: Any, func: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """What --out writes: every array argument's final contents (ct_local pieces as
    NAME.TILE), every tensor argument's value and every returned value (return.K)."""
    arrays = {}
    for key, value in result.outputs.items():
        if isinstance(value, dict):
            for tile, piece in value.items():
                arrays[f"{key}.{tile}"] = piece
        else:
            arrays[key] = value
    for key, value in _tensor_arguments(module, func, given).items():
        arrays.setdefault(key, value)
    arrays.update(_returned(result, module, func))
    return arrays


def _summary(result: Any, name: str, module: Any, func: str | None) -> str:
    """One line on what a run did, for a run that writes nothing else."""
    import numpy as np

    arrays = []
    for key, value in result.outputs.items():
        if isinstance(value, dict):
            arrays.append(f"{key} ({len(value)} ct_local pieces)")
        else:
            arr = np.asarray(value)
            arrays.append(f"{key} {list(arr.shape)} {arr.dtype}")
    returned = [f"{key} = {value} ({value.dtype})" if value.ndim == 0 else f"{key} {list(value.shape)} {value.dtype}"
                for key, value in _returned(result, module, func).items()]
    tiles = 1
    for g in result.grid:
        tiles *= g
    held = "; arrays: " + ", ".join(arrays) if arrays else ""
    held += "; returned: " + ", ".join(returned) if returned else ""
    write = " Write them with --out OUT.npz;" if arrays or returned else ""
    return (f"{name}: ran on grid {list(result.grid)} ({tiles} tile{'s' if tiles != 1 else ''}, "
            f"{result.total_ops:,} ops){held}.{write} --stats gives per-tile figures.")


def _render(diag: Any, source: str, name: str) -> str:
    """A diagnostic with a source position renders like the compiler's; one without (bad
    arguments, a failure outside any op) names the file instead of a fake `:0:0`."""
    import dataclasses

    from ktir.syntax.diagnostics import render

    if diag.file is None:
        diag = dataclasses.replace(diag, file=name)
    if diag.line >= 1:
        return render(diag, source)
    ident = f"[{diag.id}]" if diag.id else ""
    return f"{diag.file or name}: {diag.severity}{ident}: {diag.message}"


def _validate(module: Any) -> list[Any]:
    """Run ktir.verify when it exists (the verifier is its own issue); [] otherwise."""
    try:
        import ktir.verify as verify
    except ImportError:
        return []
    fn = getattr(verify, "verify_module", None) or getattr(verify, "verify", None)
    if fn is None:
        return []
    found = fn(module)
    if not found:
        return []
    return [d for d in found if getattr(d, "severity", "error") == "error"]


def _print_stats(result: Any) -> None:
    """Per-tile figures; the table fits 80 columns (piped output): two-line headers, no
    vertical rules, byte counts with units."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"grid {list(result.grid)}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  caption="bytes per tile; local = the tile's ct_local scratchpad", caption_justify="left")
    for col in ("tile", "ops", "global\nread", "global\nwritten", "local\nread", "local\nwritten",
                "scratch\npeak", "sent", "received"):
        # a byte count may wrap at its unit on a narrow terminal, never lose digits
        table.add_column(col, justify="right", no_wrap=col in ("tile", "ops"), min_width=max(map(len, col.split("\n"))))
    for s in result.stats:
        table.add_row(
            str(s.tile if len(result.grid) == 1 else f"{s.tile} {','.join(map(str, s.coords))}"), f"{s.ops:,}",
            _bytes(s.bytes_read.get("global", 0)), _bytes(s.bytes_written.get("global", 0)),
            _bytes(s.bytes_read.get("ct_local", 0)), _bytes(s.bytes_written.get("ct_local", 0)),
            _bytes(s.scratchpad_peak), _bytes(s.bytes_sent), _bytes(s.bytes_received),
        )
    Console(file=sys.stdout).print(table)


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"
