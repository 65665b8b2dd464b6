"""What the backend reports per compiled graph: its kernels, whether the scheduler rewrote
each, and the target's timeline estimate per kernel and in total (kernels run one after
another, so the graph's latency is their sum)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class KernelReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The kernel (a function of the graph's KTIR module).")
    kind: str = Field(description="What the lowering emitted it for (matmul, elementwise, softmax, ...).")
    scheduled: bool = Field(default=False, description="The scheduler rewrote it (its --check passed).")
    schedule_note: str | None = Field(default=None, description="Why the scheduler kept the kernel as lowered.")
    estimate_seconds: float | None = Field(default=None, description="Timeline estimate on the target.")
    bound_seconds: float | None = Field(default=None, description="Lower bound: this run's busiest resource's work alone "
                                        "(what `ktir run --report` calls the resource bound).")
    ratio_to_bound: float | None = Field(default=None, description="estimate / bound (>= 1).")
    bound_by: str | None = Field(default=None, description="The resource that sets the bound.")
    scratchpad_peak_bytes: int | None = Field(default=None, description="Largest ct_local use of any tile.")
    warnings: list[str] = Field(default_factory=list, description="The cost model's warnings for this kernel.")
    _estimate: Any = PrivateAttr(default=None)  # ktir.targets.report.Estimate, for traces and pictures

    def cost(self, est: Any) -> None:
        r = est.report
        self._estimate = est
        self.estimate_seconds = r.estimate_seconds
        self.bound_seconds = r.roofline_seconds
        self.ratio_to_bound = r.ratio_to_roofline
        self.bound_by = r.binding.resource if r.binding is not None else None
        self.scratchpad_peak_bytes = max((s.peak_bytes for s in r.scratchpad), default=0)
        self.warnings = list(r.warnings)


class GraphReport(BaseModel):
    """One compiled graph at one input signature."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    graph: str = Field(description="graph0, graph1, ... in the order Dynamo compiled them.")
    target: str
    scheduler: str | None
    inputs: list[list[int]] = Field(description="Shapes of the program's inputs (parameters are weights).")
    kernels: list[KernelReport]
    lowering_seconds: float = Field(description="torch.export + lowering + verification, wall clock.")
    scheduling_seconds: float = Field(default=0.0, description="Scheduling every kernel with --check, wall clock.")
    first_run_seconds: float | None = Field(default=None, description="First run in the kernel runner (traced when "
                                            "estimating), wall clock.")
    estimate_seconds: float | None = Field(default=None, description="Sum of the kernels' timeline estimates.")
    bound_seconds: float | None = Field(default=None, description="Sum of the kernels' resource bounds.")
    max_error_vs_eager: float | None = Field(default=None, description="With `check`: the largest error of any "
                                             "output relative to its largest eager value.")

    def total(self) -> None:
        costed = [k for k in self.kernels if k.estimate_seconds is not None]
        if costed and len(costed) == len(self.kernels):
            self.estimate_seconds = sum(k.estimate_seconds or 0.0 for k in costed)
            self.bound_seconds = sum(k.bound_seconds or 0.0 for k in costed)

    @property
    def ratio_to_bound(self) -> float | None:
        if not self.estimate_seconds or not self.bound_seconds:
            return None
        return self.estimate_seconds / self.bound_seconds

    def one_line(self) -> str:
        scheduled = sum(k.scheduled for k in self.kernels)
        text = (f"{self.graph}: {len(self.kernels)} kernels ({scheduled} scheduled) for {self.target}, "
                f"lowered in {self.lowering_seconds:.1f} s, scheduled in {self.scheduling_seconds:.1f} s")
        if self.estimate_seconds is not None:
            text += f", estimate {_us(self.estimate_seconds)} ({self.ratio_to_bound:.2f}x the resource bound)"
        return text

    def to_text(self) -> str:
        lines = [self.one_line(), ""]
        width = max((len(k.name) for k in self.kernels), default=6)
        lines.append(f"{'kernel':<{width}}  {'kind':<12} {'sched':<5} {'estimate':>11} {'x bound':>8}  bound by")
        for k in self.kernels:
            est = _us(k.estimate_seconds) if k.estimate_seconds is not None else "-"
            ratio = f"{k.ratio_to_bound:.2f}" if k.ratio_to_bound is not None else "-"
            lines.append(f"{k.name:<{width}}  {k.kind:<12} {'yes' if k.scheduled else 'no':<5} {est:>11} {ratio:>8}  "
                         f"{k.bound_by or '-'}")
        groups: dict[str, list[KernelReport]] = {}
        for k in self.kernels:
            if k.schedule_note:  # one line per reason; grids and line numbers differ between kernels
                groups.setdefault(re.sub(r"\[[\d, ]+\]|line \d+", "_", k.schedule_note), []).append(k)
        if groups:
            lines += ["", "kept as lowered:"]
            for members in groups.values():
                names = ", ".join(k.name for k in members[:4]) + (f" and {len(members) - 4} more" if len(members) > 4 else "")
                lines.append(f"  {names}: {members[0].schedule_note}")
        if self.max_error_vs_eager is not None:
            lines += ["", f"max error vs eager: {self.max_error_vs_eager:.3g} of the largest value"]
        return "\n".join(lines) + "\n"


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f} us"
