"""`ktir lower torch FILE.pt2 -o OUT.ktir` and `ktir run-program OUT.manifest.json`.

Both are registered by ktir.lower.cli.add_lower_parser. torch is imported only when
`lower torch` runs; `run-program` needs only numpy and the reference interpreter.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import re
import sys
import time
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_torch_parser(sources: Any) -> None:
    p = sources.add_parser(
        "torch",
        help="a torch.export program (.pt2, from torch.export.save)",
        description=(
            "Lower an ExportedProgram saved with torch.export.save to KTIR: core ATen decompositions (linear, silu, "
            "gelu and scaled_dot_product_attention kept whole), one kernel per op or fused elementwise chain, work "
            "split over the target's cores. Writes OUT.ktir, OUT.manifest.json (kernels, buffers, order) and "
            "OUT.weights.npz (parameters and constants), each atomically. Needs the torch extra. Exit 0 on success, "
            "1 when the program cannot be lowered, 2 on usage or I/O errors."
        ),
    )
    p.add_argument("path", metavar="FILE.pt2", help="an ExportedProgram written by torch.export.save")
    p.add_argument("-o", "--output", metavar="OUT.ktir", required=True, help="the KTIR module to write; the manifest and weights go next to it")
    p.add_argument("--target", default="spyre", help="target whose cores the work is split over (default: spyre)")
    p.add_argument("--no-verify", action="store_true", help="skip running the KTIR verifier on the result")
    p.add_argument(
        "--sdsc", metavar="DIR",
        help="also write an SDSC JSON per kernel that SDSC can express (single elementwise ops, matmuls) into DIR, "
        "to check against `ktir lower sdsc`; the manifest names each file or says why a kernel has none",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list the kernels and the time each stage took")
    p.set_defaults(run=cmd_lower_torch)


def cmd_lower_torch(args: argparse.Namespace) -> int:
    # what needs no torch is checked first: importing torch takes seconds
    path = Path(args.path)
    if not path.is_file():
        print(f"ktir lower torch: cannot read {path}: no such file", file=sys.stderr)
        return EXIT_USAGE
    folder = Path(args.output).parent
    if not folder.is_dir():
        print(f"ktir lower torch: cannot write {args.output}: no directory {folder}", file=sys.stderr)
        return EXIT_USAGE
    if not _is_pt2_archive(path):
        print(f"{path}: error[torch]: not a torch.export program (not a .pt2 archive)", file=sys.stderr)
        return EXIT_INVALID
    try:
        import torch  # noqa: F401
    except ImportError:
        print("ktir lower torch: PyTorch is not installed (pip install 'ktir[torch]')", file=sys.stderr)
        return EXIT_USAGE
    from ktir.lower.torch import TorchLoweringError, from_exported
    from ktir.lower.torch.export import decompose
    from ktir.progress import working

    with working(f"reading {path.name}") as step:
        try:
            ep = _load_pt2(path)
        except Exception as e:  # torch raises many types for a file that is not a saved ExportedProgram
            print(f"{path}: error[torch]: not a torch.export program ({_one_line(e)})", file=sys.stderr)
            return EXIT_INVALID
        try:
            with _quiet_torch():
                step("decomposing to core ATen")
                start = time.perf_counter()
                ep = decompose(ep)
                decomposing = time.perf_counter() - start
                step("lowering to KTIR" + ("" if args.no_verify else " and verifying"))
                program = from_exported(ep, target=args.target, verify=not args.no_verify, name=Path(args.output).name.removesuffix(".ktir"))
                program.timings = {"decompose": decomposing, **program.timings}
        except TorchLoweringError as e:
            print(f"{path}: error[torch]: {e}", file=sys.stderr)
            return EXIT_INVALID
        except AssertionError as e:  # our own output failed the verifier: a bug, reported plainly
            print(f"{path}: error[internal]: {_one_line(e)}", file=sys.stderr)
            return EXIT_INVALID
        except Exception as e:  # decomposition failures inside torch
            print(f"{path}: error[torch]: {_one_line(e)}", file=sys.stderr)
            return EXIT_INVALID
        step(f"writing {args.output}")
        try:
            written = program.save(args.output, sdsc_dir=args.sdsc)
        except OSError as e:
            print(f"ktir lower torch: cannot write {args.output}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
    if args.verbose:
        for k in program.manifest.kernels:
            print(f"  {k.name:<28} grid {k.grid!s:<10} {k.description}", file=sys.stderr)
        times = ", ".join(f"{k} {v:.2f} s" for k, v in program.timings.items())
        print(f"{len(program.manifest.kernels)} kernels; {times}", file=sys.stderr)
        print("wrote " + ", ".join(str(w) for w in written), file=sys.stderr)
    return EXIT_OK


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines += [x for x in record.getMessage().splitlines() if x.strip()]
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            self.lines.append(f"{type(exc).__name__}: {exc}".splitlines()[0])


# An entry every torch.export.save archive has (<name>/archive_format since the PT2 archive
# format; serialized_exported_program.json before it).
_PT2_MARKERS = ("archive_format", "serialized_exported_program.json")


def _is_pt2_archive(path: Path) -> bool:
    """Whether `path` is a zip archive holding a PT2 marker entry: checked before torch is
    imported, which takes seconds, so that any other file is refused at once."""
    try:
        with zipfile.ZipFile(path) as z:
            return any(name.rsplit("/", 1)[-1] in _PT2_MARKERS for name in z.namelist())
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError):
        return False


@contextlib.contextmanager
def _quiet_torch(collect: _Collect | None = None) -> Iterator[None]:
    # torch warns about its own internal APIs (pytree LeafSpec) while loading and
    # decomposing, and logs whole tracebacks for files it cannot read: nothing a user of
    # `ktir lower` can act on, so it is kept from the terminal (the cause is reported in one line)
    export_log = logging.getLogger("torch.export")
    saved = export_log.level, export_log.propagate, export_log.handlers
    export_log.setLevel(logging.DEBUG if collect else logging.CRITICAL)
    export_log.propagate = False
    export_log.handlers = [collect] if collect is not None else []  # torch attaches its own here
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        export_log.setLevel(saved[0])
        export_log.propagate = saved[1]
        export_log.handlers = saved[2]


# torch names an output class it cannot rebuild: "Deserializing transformers.modeling_outputs.X in pytree is not registered"
_UNREGISTERED = re.compile(r"Deserializing ([\w.]+) in pytree is not registered")


def _load_pt2(path: Path) -> Any:
    """torch.export.load, importing the modules that register the program's output classes
    with pytree (a Hugging Face model returns transformers' ModelOutput classes, which are
    registered when transformers.modeling_outputs is imported)."""
    import torch

    if not zipfile.is_zipfile(path):  # a .pt2 is a zip archive; say so before torch does, at length
        raise ValueError("not a zip archive")
    imported: set[str] = set()
    while True:
        collect = _Collect()
        try:
            with _quiet_torch(collect):
                return torch.export.load(str(path))
        except Exception as e:
            # torch's exception says "see the warnings above"; the logged cause is its last line
            cause = collect.lines[-1].strip() if collect.lines else str(e)
            found = _UNREGISTERED.search(f"{e} {cause}")
            module = found.group(1).rpartition(".")[0] if found else ""
            if not module or module in imported or not _import(module):
                raise ValueError(cause) from e
            imported.add(module)


def _import(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


# ---------------------------------------------------------------------- run-program


def add_run_program_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run-program",
        help="run a lowered multi-kernel program (its manifest) in the reference interpreter",
        description=(
            "Run every kernel of a program lowered by `ktir lower torch` in order in the reference interpreter, with "
            "its weights (OUT.weights.npz) and the given inputs, and write the outputs. Exit 0 on success, 1 when a "
            "runtime check fails, 2 on usage or I/O errors."
        ),
    )
    p.add_argument("manifest", metavar="OUT.manifest.json", help="the manifest written next to the KTIR")
    p.add_argument("--input", action="append", default=[], metavar="NAME=PATH.npy", help="a user input (repeat per input)")
    p.add_argument("--random-inputs", type=int, metavar="SEED", help="fill inputs not given with random values (integers: 0..9)")
    p.add_argument("--out", metavar="OUT.npz", help="write the outputs here (atomically); default: print a summary only")
    p.add_argument(
        "--kernel", action="append", default=[], metavar="NAME=FILE.ktir",
        help="run kernel NAME from FILE instead (e.g. the output of `ktir schedule --func NAME`); repeatable",
    )
    p.add_argument("--target", help="check scratchpad capacity against this target")
    p.add_argument("--no-race-check", action="store_true", help="skip the data-race checks between tiles")
    p.set_defaults(run=cmd_run_program)


def cmd_run_program(args: argparse.Namespace) -> int:
    import numpy as np

    import reference_interp
    from ktir.lower.torch.program import Program, ProgramError, numpy_dtype
    from reference_interp import KtirRuntimeError
    from reference_interp.inputs import load_npy

    if args.random_inputs is not None and not 0 <= args.random_inputs < 1 << 128:
        print(f"ktir run-program: --random-inputs {args.random_inputs}: a seed is a non-negative integer", file=sys.stderr)
        return EXIT_USAGE
    try:
        program = Program.load(args.manifest, runner=reference_interp.run)
    except ProgramError as e:
        print(f"ktir run-program: {e}", file=sys.stderr)
        return EXIT_INVALID
    except OSError as e:
        print(f"ktir run-program: cannot read {e.filename or args.manifest}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    for item in args.kernel:
        name, sep, file = item.partition("=")
        if not sep:
            print(f"ktir run-program: --kernel {item}: expected NAME=FILE.ktir", file=sys.stderr)
            return EXIT_USAGE
        try:
            program.replace_kernel(name, Path(file).read_text(encoding="utf-8"), file)
        except OSError as e:
            print(f"ktir run-program: cannot read {file}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
        except ProgramError as e:
            print(f"ktir run-program: {e}", file=sys.stderr)
            return EXIT_INVALID
    given: dict[str, Any] = {}
    for item in args.input:
        name, sep, file = item.partition("=")
        if not sep:
            print(f"ktir run-program: --input {item}: expected NAME=PATH.npy", file=sys.stderr)
            return EXIT_USAGE
        try:
            given[name] = load_npy(file)
        except (OSError, ValueError) as e:
            print(f"ktir run-program: cannot read {file}: {_one_line(e)}", file=sys.stderr)
            return EXIT_USAGE
    known = {s.name for s in program.manifest.inputs}
    for name in given:
        if name not in known:
            print(f"ktir run-program: the program has no input {name} (inputs: {', '.join(sorted(known))})", file=sys.stderr)
            return EXIT_USAGE
    # an input of another dtype is converted when exact and announced, refused otherwise (as `ktir run --arg`)
    from reference_interp.conform import conform

    for spec in program.manifest.inputs:
        if spec.name not in given:
            continue
        try:
            given[spec.name], note = conform(spec.name, given[spec.name], np.dtype(numpy_dtype(spec.dtype)), spec.dtype)
        except ValueError as e:
            print(f"ktir run-program: {e}", file=sys.stderr)
            return EXIT_USAGE
        if note:
            print(f"ktir run-program: note: {note}", file=sys.stderr)
    rng = np.random.default_rng(args.random_inputs)
    for spec in program.manifest.inputs:
        if spec.name in given:
            continue
        if args.random_inputs is None:
            print(f"ktir run-program: input {spec.name} is missing (--input {spec.name}=PATH.npy or --random-inputs SEED)", file=sys.stderr)
            return EXIT_USAGE
        dt = numpy_dtype(spec.dtype)
        given[spec.name] = rng.integers(0, 10, spec.shape).astype(dt) if spec.dtype.startswith("i") else rng.standard_normal(spec.shape).astype(dt)
    try:
        outputs = _run_with_progress(program, given, args)
    except (ProgramError, KtirRuntimeError) as e:
        print(f"ktir run-program: {e}", file=sys.stderr)
        return EXIT_INVALID
    for spec, value in zip(program.manifest.outputs, outputs, strict=True):
        stats = f"min {float(value.min()):.6g}  max {float(value.max()):.6g}" if value.size else "no elements"
        print(f"{spec.name}: {spec.dtype} {list(value.shape)}  {stats}")
    if args.out:
        import io

        from ktir.fileio import write_atomic
        from ktir.lower.torch.program import storable

        buf = io.BytesIO()
        np.savez(buf, allow_pickle=False, **{s.name: storable(v) for s, v in zip(program.manifest.outputs, outputs, strict=True)})
        try:
            write_atomic(Path(args.out), buf.getvalue())
        except OSError as e:
            print(f"ktir run-program: cannot write {args.out}: {e.strerror}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK


def _run_with_progress(program: Any, inputs: dict[str, Any], args: argparse.Namespace) -> list[Any]:
    from ktir.progress import working

    with working("kernels", total=len(program.manifest.kernels)) as step:
        result: list[Any] = program.run_buffers(
            inputs, target=args.target, check_races=not args.no_race_check, progress=lambda name: step(name, advance=1)
        )
    return result
