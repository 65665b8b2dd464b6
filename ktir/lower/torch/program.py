"""A lowered program: the KTIR module, its manifest and its weights; `.run()` executes every
kernel in order with a kernel runner: the one the caller supplies, else the installed default
(the reference interpreter, found through an entry point: see runners.py). The lowering does not
import any executor."""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from ktir.fileio import confined_file, read_npz_checked
from ktir.lower.torch.manifest import BufferEntry, KernelEntry, Manifest, StickLayout, TensorEntry
from ktir.lower.torch.refs import STICK_BYTES, Buffer, Ref, element_bytes

if TYPE_CHECKING:
    from ktir.lower.torch.graph import Graph


class ProgramError(Exception):
    """A program that cannot be loaded or run with the given inputs (one-line message)."""


# Runs one kernel: runner(module, func, args={name: array}, target=..., trace=bool, check_races=bool)
# returns a result whose `.outputs` holds the final contents of every array argument by name.
# `reference_interp.run` is one (the default when none is given); `ktir run-program` passes it.
KernelRunner = Callable[..., Any]


def numpy_dtype(ktype: str) -> Any:
    if ktype == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return {"i1": np.bool_, "f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[ktype]


def stick_layout(buf: Buffer) -> StickLayout:
    rank = len(buf.shape)
    per_stick = max(STICK_BYTES // element_bytes(buf.ktype), 1)
    inner = buf.shape[-1] if rank else 1
    return StickLayout(
        dim_order=list(reversed(range(rank))), stick_dim=rank - 1 if rank else None, stick_elements=per_stick, sticks=math.ceil(inner / per_stick)
    )


def _tensor(name: str, ref: Ref) -> TensorEntry:
    return TensorEntry(name=name, buffer=ref.buffer, dtype=ref.ktype, offset=ref.offset, shape=list(ref.shape), strides=list(ref.strides))


def build_manifest(graph: Graph, name: str, target: str, cores: int, output_names: Sequence[str],
                   updates: Sequence[str | None] | None = None) -> Manifest:
    buffers = [
        BufferEntry(
            name=b.name, kind=b.kind, dtype=b.ktype, shape=list(b.shape), elements=b.size, source=b.source, layout=stick_layout(b), writers=list(b.writers),  # type: ignore[arg-type]
            permutation=b.permutation,
        )
        for b in graph.buffers.values()
    ]
    kernels = [
        KernelEntry(name=k.kernel.name, kind=k.kind, grid=list(k.kernel.grid), args=list(k.kernel.args), reads=k.reads, writes=k.writes, nodes=k.nodes, description=k.comment,
            across_sticks=list(k.kernel.across_sticks), sdsc_skipped=k.sdsc if isinstance(k.sdsc, str) else None)
        for k in graph.kernels
    ]
    by_buffer = {b.name: b for b in graph.buffers.values()}
    inputs = []
    for user_name, buf in graph.inputs:
        b = by_buffer[buf]
        inputs.append(TensorEntry(name=user_name, buffer=buf, dtype=b.ktype, offset=0, shape=list(b.shape), strides=_contig(b.shape)))
    updated = list(updates) if updates is not None else [None] * len(output_names)
    outputs = [_tensor(n, r).model_copy(update={"updates": u}) for n, r, u in zip(output_names, graph.outputs, updated, strict=True)]
    return Manifest(
        program=name, target=target, cores=cores, ktir=f"{name}.ktir", weights=f"{name}.weights.npz", buffers=buffers, kernels=kernels,
        inputs=inputs, outputs=outputs, folded=graph.folded,
    )


def _contig(shape: Sequence[int]) -> list[int]:
    from ktir.lower.torch.refs import contiguous_strides

    return list(contiguous_strides(tuple(shape)))


@dataclass
class Program:
    """A lowered PyTorch program: `text` (KTIR), `manifest`, `weights` (flat arrays by buffer name)."""

    text: str
    manifest: Manifest
    weights: dict[str, np.ndarray]
    timings: dict[str, float] = field(default_factory=dict)
    _module: Any = None
    # per kernel with an SDSC: its document ({key: SuperDsc})
    sdsc: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per kernel with an SDSC: the buffers bound to its Tensor0, Tensor1, ... (inputs, then the output)
    sdsc_buffers: dict[str, list[str]] = field(default_factory=dict)
    # kernels replaced by another module's function of the same name (e.g. a scheduled one)
    overrides: dict[str, Any] = field(default_factory=dict)
    # what scheduling did to each kernel (ktir.lower.torch.scheduling.KernelSchedule), when it ran
    schedules: list[Any] = field(default_factory=list)
    # what executes each kernel (see KernelRunner); None: the installed default (runners.py)
    runner: KernelRunner | None = field(default=None, repr=False)
    _footprints: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False)  # kernel -> (module, Footprint)

    @property
    def module(self) -> Any:
        """The parsed KTIR module (parsed once)."""
        if self._module is None:
            from ktir.syntax.diagnostics import KtirError, render
            from ktir.syntax.parser import parse

            try:
                self._module = parse(self.text, self.manifest.ktir)
            except KtirError as e:  # the located error, as a program error's one line
                raise ProgramError(render(e.diagnostics[0]).splitlines()[0]) from None
        return self._module

    @property
    def kernel_names(self) -> list[str]:
        return [k.name for k in self.manifest.kernels]

    def replace_kernel(self, name: str, text: str, filename: str = "<kernel>") -> None:
        """Run kernel `name` from `text` instead (a module defining @name with the same arguments,
        such as `ktir schedule --func name` writes)."""
        from ktir.syntax.diagnostics import KtirError
        from ktir.verify import validate_text

        if name not in self.kernel_names:
            raise ProgramError(f"the program has no kernel {name}")
        try:
            module, diagnostics = validate_text(text, filename)
        except KtirError as e:
            raise ProgramError(f"{filename}: {e}") from None
        errors = [d for d in diagnostics if d.severity == "error"]
        if errors or module is None:
            first = errors[0] if errors else None
            raise ProgramError(f"{filename}:{first.line}: [{first.id}] {first.message}" if first else f"{filename}: not a KTIR module")
        try:
            fn = module.function(name)
        except KeyError:
            raise ProgramError(f"{filename} does not define @{name}") from None
        want = next(k.args for k in self.manifest.kernels if k.name == name)
        got = [a.lstrip("%") for a in _arg_names(fn)]
        if got != want:
            raise ProgramError(f"{filename}: @{name} takes ({', '.join(got)}), the program passes ({', '.join(want)})")
        self.overrides[name] = module

    def run(self, *inputs: Any, target: str | None = None, check_races: bool = True, progress: Any = None) -> Any:
        """Run every kernel in order; returns the output array (several: a list), as numpy."""
        outputs = self.run_all(inputs, target=target, check_races=check_races, progress=progress)
        return outputs[0] if len(outputs) == 1 else outputs

    def run_all(self, inputs: Sequence[Any], *, target: str | None = None, check_races: bool = True,
                progress: Any = None, traced: Any = None) -> list[np.ndarray]:
        """Run every kernel in order on the user inputs given in order; returns every result
        (numpy). An input the program updates in place (a KV cache, a counter) receives its new
        value, as in PyTorch: a numpy array or a torch tensor is written in place.
        `traced(name, module, result)`, if given, is called after each kernel, run with an
        event trace (see run_buffers)."""
        outputs = self.run_buffers(self._bind(inputs), target=target, check_races=check_races, progress=progress,
                                   traced=traced)
        position = {spec.name: i for i, spec in enumerate(self.manifest.inputs)}
        results = []
        for spec, value in zip(self.manifest.outputs, outputs, strict=True):
            if spec.updates is None:
                results.append(value)
            else:
                _write_back(inputs[position[spec.updates]], value, spec.updates)
        return results

    @property
    def result_specs(self) -> list[TensorEntry]:
        """The outputs that are results (not the new values of inputs updated in place)."""
        return [spec for spec in self.manifest.outputs if spec.updates is None]

    def _bind(self, inputs: Sequence[Any]) -> dict[str, np.ndarray]:
        specs = self.manifest.inputs
        if len(inputs) != len(specs):
            raise ProgramError(f"the program takes {len(specs)} input(s) ({', '.join(s.name for s in specs)}), got {len(inputs)}")
        bound = {}
        for spec, value in zip(specs, inputs, strict=True):
            arr = _as_numpy(value)
            if list(arr.shape) != spec.shape:
                raise ProgramError(f"input {spec.name} has shape {list(arr.shape)}, the program expects {spec.shape}")
            bound[spec.name] = arr
        return bound

    def footprints(self) -> dict[str, Any]:
        """Per kernel, its scratchpad need per tile (`fit.Footprint`), read from the KTIR that
        runs it (a replaced kernel's own text)."""
        from ktir.lower.torch.fit import footprint

        out = {}
        for k in self.manifest.kernels:
            module = self.overrides.get(k.name) or self.module
            cached = self._footprints.get(k.name)
            if cached is None or cached[0] is not module:
                cached = self._footprints[k.name] = (module, footprint(module.function(k.name), module.type_aliases))
            out[k.name] = cached[1]
        return out

    def check_fit(self, target: str) -> None:
        """ProgramError naming the first kernel whose tile needs more scratchpad than a tile of
        `target` has (ct_local buffers plus live tensor values: see ktir/lower/torch/fit.py)."""
        from ktir.lower.torch.fit import DoesNotFit, check
        from ktir.targets import TargetError, scratchpad_bytes

        try:
            capacity = scratchpad_bytes(target)
        except TargetError as e:
            raise ProgramError(str(e)) from None
        try:
            for name, fp in self.footprints().items():
                check(name, fp, capacity, target)
        except DoesNotFit as e:
            raise ProgramError(str(e)) from None

    def estimate(self, *inputs: Any, target: str = "spyre") -> list[tuple[str, str, Any]]:
        """Run every kernel with an event trace and cost it on `target`'s hardware model:
        per kernel (name, kind, ktir.targets CostReport). Kernels run one after another, so
        the program's latency is the sum of the kernels' `estimate_seconds`. A kernel that
        does not fit the target's scratchpad is a ProgramError, not a latency."""
        from ktir.targets import load_target
        from ktir.targets.from_interp import from_interp
        from ktir.targets.report import estimate

        machine = load_target(target)
        kinds = {k.name: k.kind for k in self.manifest.kernels}
        reports: list[tuple[str, str, Any]] = []

        def cost(name: str, module: Any, result: Any) -> None:
            conversion = from_interp(module, result, func=name)
            reports.append((name, kinds[name], estimate(conversion.trace, machine, conversion.warnings).report))

        self.run_buffers(self._bind(inputs), target=target, traced=cost)
        return reports

    def run_buffers(
        self, inputs: Mapping[str, np.ndarray], *, target: str | None = None, check_races: bool = True, progress: Any = None,
        keep: dict[str, np.ndarray] | None = None, traced: Any = None,
    ) -> list[np.ndarray]:
        """Run with user inputs given by name; returns the outputs in order. `keep`, if given,
        receives the final contents of every buffer (flat); `traced(name, module, result)`, if
        given, is called after each kernel, run with an event trace. With a `target`, every
        kernel must fit its scratchpad (check_fit), checked before any runs."""
        if target is not None:
            self.check_fit(target)
        if self.runner is None:
            from ktir.lower.torch.runners import NoRunner, default_runner

            try:
                self.runner = default_runner()
            except NoRunner as e:
                raise ProgramError(str(e)) from None
        arrays: dict[str, np.ndarray] = {}
        for b in self.manifest.buffers:
            dt = numpy_dtype(b.dtype)
            if b.kind in ("parameter", "constant"):
                if b.name not in self.weights:
                    raise ProgramError(f"the weights do not hold buffer {b.name}")
                arrays[b.name] = np.ascontiguousarray(self.weights[b.name].reshape(-1), dtype=dt)
            else:
                try:
                    arrays[b.name] = np.zeros(b.elements, dt)
                except (MemoryError, ValueError):
                    raise ProgramError(f"buffer {b.name}: cannot allocate {b.elements} elements of {b.dtype}") from None
        for spec in self.manifest.inputs:
            if spec.name not in inputs:
                raise ProgramError(f"input {spec.name} is missing")
            try:
                arrays[spec.buffer] = np.ascontiguousarray(np.asarray(inputs[spec.name]), dtype=numpy_dtype(spec.dtype)).reshape(-1)
            except (ValueError, TypeError) as e:  # strings, objects: no number to take
                raise ProgramError(f"input {spec.name}: cannot be read as {spec.dtype} ({_first_line(e)})") from None
        for k in self.manifest.kernels:
            module = self.overrides.get(k.name) or self.module
            args = {a: arrays[a] for a in k.args}
            result = self.runner(module, func=k.name, args=args, target=target, check_races=check_races, trace=traced is not None)
            for w in k.writes:
                arrays[w] = np.asarray(result.outputs[w]).reshape(-1)
            if traced is not None:
                traced(k.name, module, result)
            if progress is not None:
                progress(k.name)
        if keep is not None:
            keep.update(arrays)
        out = []
        for spec in self.manifest.outputs:
            ref = Ref(spec.buffer, spec.dtype, spec.offset, tuple(spec.shape), tuple(spec.strides))
            out.append(ref.view_array(arrays[spec.buffer]))
        return out

    # ------------------------------------------------------------------ files

    def save(self, ktir_path: str | Path, sdsc_dir: str | Path | None = None) -> tuple[Path, ...]:
        """Write OUT.ktir, OUT.manifest.json and OUT.weights.npz (each atomically); with
        `sdsc_dir`, also one SDSC JSON per kernel that has one (named in the manifest)."""
        from ktir.fileio import write_atomic

        path = Path(ktir_path)
        stem = path.name.removesuffix(".ktir").removesuffix(".mlir")
        manifest_path = path.with_name(f"{stem}.manifest.json")
        weights_path = path.with_name(f"{stem}.weights.npz")
        manifest = self.manifest.model_copy(update={"ktir": path.name, "weights": weights_path.name})
        written: list[Path] = []
        if sdsc_dir is not None:
            folder = Path(sdsc_dir)
            folder.mkdir(parents=True, exist_ok=True)
            kernels = []
            for k in manifest.kernels:
                doc = self.sdsc.get(k.name)
                if doc is None:
                    kernels.append(k)
                    continue
                target = folder / f"sdsc_{k.name}.json"
                write_atomic(target, json.dumps(doc, indent=1) + "\n")
                written.append(target)
                kernels.append(k.model_copy(update={"sdsc": os.path.relpath(target.resolve(), path.parent.resolve())}))
            manifest = manifest.model_copy(update={"kernels": kernels})
        buf = io.BytesIO()
        np.savez(buf, allow_pickle=False, **{k: storable(v) for k, v in self.weights.items()})
        write_atomic(weights_path, buf.getvalue())
        write_atomic(path, self.text)
        write_atomic(manifest_path, manifest.to_json())
        return (path, manifest_path, weights_path, *written)

    @classmethod
    def load(cls, manifest_path: str | Path, runner: KernelRunner | None = None) -> Program:
        """Load a program from its manifest (the KTIR and weights files it names sit next to it);
        `runner` executes its kernels (see KernelRunner)."""
        path = Path(manifest_path)
        try:
            manifest = Manifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as e:
            raise ProgramError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
        except (UnicodeDecodeError, RecursionError):
            raise ProgramError(f"{path}: not a program manifest (not UTF-8 JSON, or nested too deeply)") from None
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ProgramError(f"{path}: {where}: {first['msg']}") from None
        try:
            text = confined_file(path.parent, manifest.ktir).read_text(encoding="utf-8")
            weights_file = confined_file(path.parent, manifest.weights) if manifest.weights else None
        except UnicodeDecodeError as e:
            raise ProgramError(f"{path.parent / manifest.ktir}: not UTF-8 text (byte {e.start})") from None
        except ValueError as e:  # a link out of the folder
            raise ProgramError(str(e)) from None
        weights: dict[str, np.ndarray] = {}
        if weights_file is not None:
            try:
                data = read_npz_checked(weights_file)
                for b in manifest.buffers:
                    if b.kind in ("parameter", "constant") and b.name in data:
                        weights[b.name] = _restore(data[b.name], b.dtype)
            except OSError:
                raise
            except Exception as e:  # noqa: BLE001 - numpy/zipfile raise many types for a damaged .npz
                raise ProgramError(f"{weights_file}: not a readable .npz ({e})") from None
        return cls(text, manifest, weights, runner=runner)


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0]


def _write_back(target: Any, value: np.ndarray, name: str) -> None:
    """Store an input's new value into the caller's array or tensor (PyTorch's in-place update)."""
    shape = tuple(target.shape) if hasattr(target, "shape") else ()
    if value.size == math.prod(shape):
        value = value.reshape(shape)
    if hasattr(target, "copy_"):  # a torch tensor
        import torch

        if value.dtype.name == "bfloat16":
            target.copy_(torch.from_numpy(np.array(value).view(np.int16)).view(torch.bfloat16))
        else:  # np.array keeps a 0-d value 0-d (ascontiguousarray would make it 1-d)
            target.copy_(torch.from_numpy(np.array(value)))
        return
    if isinstance(target, np.ndarray) and target.flags.writeable and target.shape == value.shape:
        np.copyto(target, value, casting="unsafe")
        return
    raise ProgramError(f"the program updates input {name} in place: pass it as a writable numpy array or a torch tensor")


def _arg_names(fn: Any) -> list[str]:
    block = fn.regions[0].blocks[0]
    return [str(a.name) for a in block.arguments]


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        t = value.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import ml_dtypes
            import torch

            return np.asarray(t.view(torch.int16).numpy()).view(ml_dtypes.bfloat16)
        return np.asarray(t.numpy())
    return np.asarray(value)


def storable(a: np.ndarray) -> np.ndarray:
    # npz cannot store bfloat16: keep its bits (the manifest says the type)
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def _restore(a: np.ndarray, ktype: str) -> np.ndarray:
    return a.view(numpy_dtype(ktype)) if ktype == "bf16" else a
