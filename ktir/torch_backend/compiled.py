"""One graph captured by TorchDynamo, compiled through KTIR once per input signature.

Dynamo hands the backend a GraphModule and example inputs; shapes may turn symbolic after a
recompile. KTIR kernels have static shapes, so the graph is lowered lazily, once per concrete
signature (shapes, dtypes and the values of integer arguments): each variant re-traces the
GraphModule with torch.export on real inputs, lowers it (ktir.lower.torch), schedules every
kernel for the target with the scheduler's own --check, and runs it in the kernel runner.
Arguments Dynamo marks as the module's parameters and buffers become the program's weights (read when the variant is
built; a variant whose parameters PyTorch has since updated in place is lowered again).
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ktir.lower.torch.errors import TorchLoweringError
from ktir.lower.torch.program import Program, ProgramError
from ktir.torch_backend.options import BackendOptions
from ktir.torch_backend.report import GraphReport, KernelReport

torch: Any = importlib.import_module("torch")
log = logging.getLogger("ktir.torch_backend")

DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# eager comparison of `check`: relative to the largest magnitude of the eager result
CHECK_RTOL = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


class BackendError(RuntimeError):
    """A graph the backend cannot run in strict mode, or a failed `check` (one message)."""


@dataclass
class Variant:
    """One concrete signature of the graph, lowered and scheduled."""

    program: Program
    user_slots: list[int]  # positions of the graph's arguments that are program inputs
    out_spec: Any  # how the program's flat outputs rebuild the graph's output structure
    out_dtypes: list[Any]  # the dtype each output has in eager PyTorch
    report: GraphReport
    weight_versions: dict[int, int] = field(default_factory=dict)  # param slot -> tensor._version seen
    runs: int = 0


@dataclass
class Fallback:
    """A signature that runs eagerly, and why."""

    reason: str


class CompiledGraph:
    """What the backend returns to Dynamo: a callable taking the graph's flat arguments."""

    def __init__(self, gm: Any, example_inputs: Sequence[Any], options: BackendOptions, index: int) -> None:
        self.gm = gm
        self.options = options
        self.index = index
        self.name = f"graph{index}"
        updated = _updated_in_place(gm)
        self.param_slots = [i for i, t in enumerate(example_inputs)
                            if _is_weight(t) and (i not in updated or isinstance(t, torch.nn.Parameter))]
        self.variants: dict[tuple[Any, ...], Variant | Fallback] = {}
        self._warned_grad = False

    @property
    def reports(self) -> list[GraphReport]:
        return [v.report for v in self.variants.values() if isinstance(v, Variant)]

    def __call__(self, *args: Any) -> Any:
        key = self._signature(args)
        variant = self.variants.get(key)
        if isinstance(variant, Variant) and self._weights_changed(variant, args):
            variant = None  # built on weights PyTorch has since updated in place: lower again
        if variant is None:
            variant = self.variants[key] = self._compile(args)
        if isinstance(variant, Fallback):
            return self.gm(*args)
        return self._run(variant, args)

    def _weights_changed(self, variant: Variant, args: Sequence[Any]) -> bool:
        return any(args[i]._version != variant.weight_versions.get(i) for i in self.param_slots)

    # ------------------------------------------------------------------ compiling

    def _signature(self, args: Sequence[Any]) -> tuple[Any, ...]:
        key: list[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                key.append((tuple(a.shape), str(a.dtype), id(a) if i in self.param_slots else None))
            else:
                key.append((type(a).__name__, a))
        return tuple(key)

    def _compile(self, args: Sequence[Any]) -> Variant | Fallback:
        try:
            return self._lower(args)
        except (TorchLoweringError, ProgramError) as e:
            return self._decline(str(e))
        except BackendError:
            raise
        except Exception as e:  # noqa: BLE001 - torch.export raises many types for graphs it cannot trace
            if type(e).__module__.startswith("torch"):
                return self._decline(f"torch.export cannot trace it: {type(e).__name__}: {_first_line(e)}")
            raise

    def _decline(self, reason: str) -> Fallback:
        if self.options.strict:
            raise BackendError(f"ktir backend: {self.name} cannot be compiled (strict): {reason}")
        log.warning("ktir backend: %s runs eagerly: %s", self.name, reason)
        return Fallback(reason)

    def _lower(self, args: Sequence[Any]) -> Variant:
        from ktir.lower.torch import from_exported
        from ktir.lower.torch.export import export

        started = time.perf_counter()
        user_slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i not in self.param_slots]
        wrapper = _Bound(self.gm, args, self.param_slots, user_slots, self._cast)
        ep = export(wrapper, tuple(self._cast(args[i]) for i in user_slots))
        out_spec = ep.call_spec.out_spec
        program = from_exported(ep, target=self.options.target, name=self.name)
        if out_spec is None or out_spec.num_leaves != len(program.result_specs):
            raise TorchLoweringError("the graph returns values that are not tensors computed by the program")
        lowered = time.perf_counter()
        report = GraphReport(
            graph=self.name, target=self.options.target, scheduler=self.options.scheduler,
            inputs=[list(args[i].shape) for i in user_slots], lowering_seconds=lowered - started,
            kernels=[KernelReport(name=k.name, kind=k.kind) for k in program.manifest.kernels],
        )
        if self.options.scheduler:
            self._schedule(program, report)
        report.scheduling_seconds = time.perf_counter() - lowered
        variant = Variant(program, user_slots, out_spec, self._eager_dtypes(), report,
                          {i: args[i]._version for i in self.param_slots})
        if self.options.verbose:
            log.warning("ktir backend: %s", report.one_line())
        return variant

    def _schedule(self, program: Program, report: GraphReport) -> None:
        from ktir.lower.torch.scheduling import schedule_program
        from ktir.torch_backend.scheduling import schedule_kernel

        done = schedule_program(program, self.options.target, self.options.scheduler or "exact", self.options.schedule_budget,
                                schedule_kernel)
        for entry, s in zip(report.kernels, done, strict=True):
            entry.scheduled = s.scheduled
            if not s.scheduled:
                entry.schedule_note = s.note

    def _cast(self, t: Any) -> Any:
        if self.options.dtype == "keep" or not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return t
        return t.to(getattr(torch, DTYPES[self.options.dtype]))

    def _eager_dtypes(self) -> list[Any]:
        out = next(n for n in self.gm.graph.nodes if n.op == "output")
        flat, _ = torch.utils._pytree.tree_flatten(out.args[0])
        return [getattr(n.meta.get("example_value"), "dtype", None) if hasattr(n, "meta") else None for n in flat]

    # ------------------------------------------------------------------ running

    def _run(self, variant: Variant, args: Sequence[Any]) -> Any:
        if not self._warned_grad and torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            self._warned_grad = True
            log.warning("ktir backend: %s runs for inference only: its outputs carry no autograd history "
                        "(call the model under torch.no_grad() to silence this)", self.name)
        program = variant.program
        given = [self._cast(args[i]) for i in variant.user_slots]
        started = time.perf_counter()
        try:
            if variant.runs == 0 and self.options.estimate:
                outputs = self._run_estimated(variant, given)
            else:
                outputs = program.run_all(given, target=self.options.target)
        except ProgramError as e:
            raise BackendError(f"ktir backend: {self.name}: {e}") from None
        updated = {spec.updates for spec in program.manifest.outputs if spec.updates is not None}
        for i, cast, spec in zip(variant.user_slots, given, program.manifest.inputs, strict=True):
            if spec.name in updated and cast is not args[i]:  # an input updated in place, run in another type
                args[i].copy_(cast)
        if variant.runs == 0:
            variant.report.first_run_seconds = time.perf_counter() - started
        variant.runs += 1
        tensors = [_to_torch(a, dt) for a, dt in zip(outputs, variant.out_dtypes, strict=True)]
        if variant.runs == 1 and self.options.check:
            self._check(variant, args, tensors)
        if variant.runs == 1 and self.options.dump_dir:
            from ktir.torch_backend.dump import dump_variant

            dump_variant(variant.program, variant.report, self.options.dump_dir)
        return torch.utils._pytree.tree_unflatten(tensors, variant.out_spec)

    def _run_estimated(self, variant: Variant, inputs: list[Any]) -> list[np.ndarray]:
        from ktir.targets import load_target
        from ktir.targets.from_interp import from_interp
        from ktir.targets.report import estimate

        machine = load_target(self.options.target)
        by_name = {k.name: k for k in variant.report.kernels}

        def cost(name: str, module: Any, result: Any) -> None:
            conversion = from_interp(module, result, func=name)
            est = estimate(conversion.trace, machine, conversion.warnings)
            by_name[name].cost(est)

        outputs = variant.program.run_all(inputs, target=self.options.target, traced=cost)
        variant.report.total()
        return outputs

    def _check(self, variant: Variant, args: Sequence[Any], got: list[Any]) -> None:
        with torch.no_grad():
            want, _ = torch.utils._pytree.tree_flatten(self.gm(*args))
        worst = 0.0
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            w = w.detach()
            if g.shape != w.shape:
                raise BackendError(f"ktir backend: {self.name}: output {i} has shape {list(g.shape)}, eager {list(w.shape)}")
            if not w.is_floating_point():
                if not torch.equal(g.to(w.dtype), w):
                    raise BackendError(f"ktir backend: {self.name}: output {i} ({w.dtype}) differs from eager")
                continue
            ref = w.double()
            scale = max(float(ref.abs().max()) if ref.numel() else 0.0, 1e-30)
            err = float((g.double() - ref).abs().max()) / scale if ref.numel() else 0.0
            rtol = CHECK_RTOL.get(str(g.dtype).removeprefix("torch."), 1e-4)
            if self.options.dtype in ("f16", "bf16"):
                rtol = max(rtol, 1e-2)
            if not err <= rtol:
                raise BackendError(f"ktir backend: {self.name}: output {i} differs from eager: max error "
                                   f"{err:.3g} of the largest value (tolerance {rtol:g})")
            worst = max(worst, err)
        variant.report.max_error_vs_eager = worst


class _Bound(torch.nn.Module):  # type: ignore[misc]
    """The GraphModule with its parameters held as this module's parameters (so torch.export
    lifts them as weights) and its non-tensor arguments fixed to this signature's values."""

    def __init__(self, gm: Any, args: Sequence[Any], param_slots: list[int], user_slots: list[int], cast: Any) -> None:
        super().__init__()
        self.gm = gm
        self._slots: list[tuple[str, Any]] = []
        for i, a in enumerate(args):
            if i in param_slots:
                self.register_parameter(f"p{i}", torch.nn.Parameter(cast(a.detach()), requires_grad=False))
                self._slots.append(("param", f"p{i}"))
            elif i in user_slots:
                self._slots.append(("input", user_slots.index(i)))
            else:
                self._slots.append(("const", a))

    def forward(self, *inputs: Any) -> Any:
        full = []
        for kind, what in self._slots:
            full.append(getattr(self, what) if kind == "param" else inputs[what] if kind == "input" else what)
        return self.gm(*full)


def _is_weight(t: Any) -> bool:
    """A parameter or buffer of the compiled module: Dynamo lifts them into graph arguments and
    marks them static and unguarded; the user's inputs (a KV cache included) carry no such mark."""
    return isinstance(t, torch.nn.Parameter) or (isinstance(t, torch.Tensor) and getattr(t, "_dynamo_static_input_type", None) == "unguarded")


def _updated_in_place(gm: Any) -> set[int]:
    """Positions of the graph's arguments an in-place method (`index_copy_`, `add_`) updates
    directly: state such as a static KV cache, which transformers marks static once it has
    run eagerly (torch._dynamo.mark_static_address), so `_is_weight` alone would take it for
    a weight."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    updated = {n.args[0] for n in gm.graph.nodes if n.op == "call_method" and n.args and str(n.target).endswith("_")
               and not str(n.target).startswith("__")}
    return {i for i, p in enumerate(placeholders) if p in updated}


def _to_numpy(t: Any) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _to_torch(a: np.ndarray, dtype: Any) -> Any:
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(a.copy() if not a.flags.writeable else a)
    return t.to(dtype) if dtype is not None and t.dtype != dtype else t


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
