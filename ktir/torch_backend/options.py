"""The options of `torch.compile(model, backend="ktir", options={...})`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class OptionsError(ValueError):
    """Options the backend does not understand (one line naming the option)."""


class BackendOptions(BaseModel):
    """What the backend does with each captured graph. Unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(default="spyre", description="Target description (name or TOML path) the program is lowered, "
                        "scheduled and estimated for; its scratchpad capacity is enforced when kernels run.")
    scheduler: str | None = Field(default="exact", description="Scheduler run on every kernel (its --check on); "
                                  "None keeps the kernels as the lowering wrote them.")
    schedule_budget: float = Field(default=0.5, gt=0, le=600, description="Seconds each kernel's scheduler may search.")
    dtype: Literal["keep", "f32", "f16", "bf16"] = Field(
        default="keep", description="Floating-point type the graph is lowered and run in: `keep` the model's own; "
        "otherwise floating inputs and weights are cast to it and results cast back to the caller's types.")
    check: bool = Field(default=False, description="Run each newly compiled graph once in eager PyTorch too and "
                        "compare (f32/f64 rel 1e-4, f16/bf16 rel 1e-2 of the largest value); a mismatch is an error.")
    strict: bool = Field(default=False, description="A graph that cannot be lowered is an error instead of running eagerly.")
    estimate: bool = Field(default=True, description="Cost the first run of each graph on the target (timeline "
                           "estimate per kernel); available as the graph's report.")
    dump_dir: str | None = Field(default=None, description="Folder receiving, per graph, the KTIR module, manifest, "
                                 "weights, scheduled kernels, report (JSON and text) and Perfetto trace.")
    verbose: bool = Field(default=False, description="Print one line per compiled graph (kernels, time, estimate).")


def parse_options(options: dict[str, Any] | None) -> BackendOptions:
    """`options` as given to torch.compile, validated."""
    try:
        return BackendOptions.model_validate(dict(options or {}))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        known = ", ".join(BackendOptions.model_fields)
        raise OptionsError(f"torch.compile backend 'ktir': option {where}: {first['msg']} (options: {known})") from None
