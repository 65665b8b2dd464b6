"""The manifest of a lowered program: its kernels in order, the buffers they read and write,
the user inputs and the outputs. Written next to the KTIR as OUT.manifest.json."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ktir.fileio import confined_path

SCHEMA_VERSION: Literal[1] = 1
# the element types a program's buffers hold (ktir.lower.torch.program.numpy_dtype)
DTYPES = ("i1", "f16", "bf16", "f32", "f64", "i32", "i64")


RelativePath = Annotated[str, AfterValidator(lambda v: confined_path(v, "the manifest's folder"))]


class StickLayout(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dim_order: list[int] = Field(description="The buffer's logical dims, innermost first (layoutDimOrder_ in SDSC terms).")
    stick_dim: int | None = Field(description="The dim stored in 128-byte sticks (the innermost); null for a scalar.")
    stick_elements: int = Field(description="Elements per 128-byte stick for this element type.")
    sticks: int = Field(description="Sticks per row of the stick dim (its size rounded up to whole sticks).")


class BufferEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The buffer's name; kernels take it as an `index` argument of the same name.")
    kind: Literal["input", "parameter", "constant", "intermediate"] = Field(
        description="input: a user input; parameter/constant: stored in the weights file; intermediate: written by a kernel."
    )
    dtype: str = Field(description="KTIR element type (f16, bf16, f32, i32, i64).")
    shape: list[int] = Field(
        description="Shape as stored, row-major, in global memory (a permuted buffer: the source dims in `permutation` order)."
    )
    elements: int = Field(description="Number of elements.")
    source: str = Field(description="The graph node or state-dict key it comes from.")
    layout: StickLayout = Field(description="The device (stick) layout the work division respects.")
    writers: list[str] = Field(description="Kernels that write it, in order.")
    permutation: list[int] | None = Field(
        default=None,
        description=(
            "Set when the buffer is stored permuted, in the order its only reader walks it (a weight read transposed, a "
            "result its consumer permutes): the source tensor's dims in storage order."
        ),
    )


class KernelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The func.func symbol in the KTIR module.")
    kind: str = Field(description="elementwise, reduction, softmax, layer_norm, matmul, attention or embedding.")
    grid: list[int] = Field(description="The kernel's grid: cores per split dim.")
    args: list[str] = Field(description="Buffer names bound to the kernel's arguments, in order.")
    reads: list[str] = Field(description="Buffers it reads.")
    writes: list[str] = Field(description="Buffers it writes.")
    nodes: list[str] = Field(description="The torch.export graph nodes it computes (fused chains list several).")
    sdsc: RelativePath | None = Field(default=None, description="File name of the kernel's SDSC JSON when one was written (--sdsc).")
    sdsc_skipped: str | None = Field(default=None, description="Why the kernel has no SDSC (SDSC has no such op or layout).")
    across_sticks: list[str] = Field(
        default_factory=list,
        description="Buffers it reads with the tile's innermost dim not the buffer's stick dim (on Spyre: a re-stickify).",
    )
    description: str = Field(description="One line on what it computes.")


class TensorEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Graph name of the input or output.")
    buffer: str = Field(description="The buffer holding it.")
    dtype: str = Field(description="KTIR element type.")
    offset: int = Field(description="Element offset of the tensor in its buffer.")
    shape: list[int] = Field(description="Logical shape.")
    strides: list[int] = Field(description="Element strides in the buffer (0: broadcast).")
    updates: str | None = Field(default=None, description="For an output: the input it is the new value of (the "
                                "program updates that input in place, as the PyTorch program did); null for a result.")


class Manifest(BaseModel):
    """Everything needed to run the lowered program, besides the KTIR text and the weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = Field(default=SCHEMA_VERSION, description="Version of this manifest format.")
    program: str = Field(description="Name of the program (the module's class name).")
    target: str = Field(description="Target whose cores the work is divided over.")
    cores: int = Field(description="Cores available on the target.")
    ktir: RelativePath = Field(description="File name of the KTIR module (relative to the manifest).")
    weights: RelativePath | None = Field(description="File name of the .npz with parameter and constant buffers (relative).")
    buffers: list[BufferEntry] = Field(description="Every buffer of the program.")
    kernels: list[KernelEntry] = Field(description="The kernels, in execution order.")
    inputs: list[TensorEntry] = Field(description="User inputs, in the order run() takes them.")
    outputs: list[TensorEntry] = Field(description="Outputs, in the order the module returns them.")
    folded: list[str] = Field(default_factory=list, description="Graph nodes folded into constants at lowering time.")

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=1) + "\n"

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        """What running the program relies on: names that resolve, element types it can
        hold, tensors that lie inside their buffers (a manifest is a file anyone can edit)."""
        buffers = {b.name: b for b in self.buffers}
        if len(buffers) != len(self.buffers):
            raise ValueError("buffer names repeat")
        for b in self.buffers:
            if b.dtype not in DTYPES:
                raise ValueError(f"buffer {b.name}: element type {b.dtype!r} is not one of {', '.join(DTYPES)}")
            if b.elements < 0 or any(d < 0 for d in b.shape):
                raise ValueError(f"buffer {b.name}: negative size")
        for k in self.kernels:
            for name in (*k.args, *k.reads, *k.writes):
                if name not in buffers:
                    raise ValueError(f"kernel {k.name}: no buffer {name}")
        for what, tensors in (("input", self.inputs), ("output", self.outputs)):
            for t in tensors:
                if t.buffer not in buffers:
                    raise ValueError(f"{what} {t.name}: no buffer {t.buffer}")
                if t.dtype not in DTYPES:
                    raise ValueError(f"{what} {t.name}: element type {t.dtype!r} is not one of {', '.join(DTYPES)}")
                if len(t.strides) != len(t.shape) or t.offset < 0 or any(d < 0 for d in t.shape) or any(s < 0 for s in t.strides):
                    raise ValueError(f"{what} {t.name}: shape, strides and offset must be as many, and not negative")
                last = t.offset + sum((d - 1) * s for d, s in zip(t.shape, t.strides, strict=True))
                if min(t.shape, default=1) > 0 and last >= buffers[t.buffer].elements:
                    raise ValueError(f"{what} {t.name}: reaches element {last} of buffer {t.buffer}, which has "
                                     f"{buffers[t.buffer].elements}")
        return self


def json_schema() -> dict[str, object]:
    return Manifest.model_json_schema()
