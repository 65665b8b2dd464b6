"""Building case kernels as text: arrays in global memory, loaded whole, a body, stores.

Every executing case has the same frame so that a vendor can read any of them quickly:
each array argument `%NAME_ptr` is an element address in global memory; the kernel builds
a memory view over it and an access tile covering it, loads it into `%NAME`, runs the
body, and stores each output value `%NAME` back through its own view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Arr:
    """An array argument: name, shape, KTIR element type and its input recipe."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    recipe: dict[str, Any] = field(default_factory=lambda: {"recipe": "normal"})

    @property
    def tensor(self) -> str:
        return tensor_type(self.shape, self.dtype)

    @property
    def memref(self) -> str:
        return f"memref<{'x'.join(map(str, self.shape))}x{self.dtype}>"

    @property
    def tile(self) -> str:
        return f"!ktdp.access_tile<{'x'.join(map(str, self.shape))}xindex>"


def tensor_type(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if shape else f"tensor<{dtype}>"


def box_set(shape: tuple[int, ...]) -> str:
    dims = ", ".join(f"d{i}" for i in range(len(shape)))
    cons = ", ".join(f"d{i} >= 0, -d{i} + {n - 1} >= 0" for i, n in enumerate(shape))
    return f"affine_set<({dims}) : ({cons})>"


def identity_map(rank: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({dims})>"


def strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def view(name: str, arr: Arr, ptr: str, indent: str = "  ", space: str = "#ktdp.memory_space<global>") -> str:
    sizes = ", ".join(map(str, arr.shape))
    st = ", ".join(map(str, strides(arr.shape)))
    return (f"{indent}%{name} = ktdp.construct_memory_view {ptr}, sizes: [{sizes}], strides: [{st}] "
            f"{{coordinate_set = {box_set(arr.shape)}, memory_space = {space}}} : {arr.memref}\n")


def whole_tile(name: str, view_name: str, arr: Arr, indent: str = "  ", base: list[str] | None = None) -> str:
    idx = ", ".join(base or ["%c0"] * len(arr.shape))
    return (f"{indent}%{name} = ktdp.construct_access_tile %{view_name}[{idx}] "
            f"{{access_tile_order = {identity_map(len(arr.shape))}, access_tile_set = {box_set(arr.shape)}}} "
            f": {arr.memref} -> {arr.tile}\n")


def load_whole(arr: Arr) -> str:
    return (view(f"{arr.name}_view", arr, f"%{arr.name}_ptr")
            + whole_tile(f"{arr.name}_tile", f"{arr.name}_view", arr)
            + f"  %{arr.name} = ktdp.load %{arr.name}_tile : {arr.tile} -> {arr.tensor}\n")


def store_whole(arr: Arr) -> str:
    return (view(f"{arr.name}_oview", arr, f"%{arr.name}_ptr")
            + whole_tile(f"{arr.name}_otile", f"{arr.name}_oview", arr)
            + f"  ktdp.store %{arr.name}, %{arr.name}_otile : {arr.tensor}, {arr.tile}\n")


def io_kernel(comment: str, inputs: list[Arr], outputs: list[Arr], body: str, *, scalars: str = "",
              preamble: str = "", helpers: str = "") -> str:
    """A single-tile kernel: load every input whole, run `body`, store every output whole.
    `scalars` are extra parameters (`%n: index`), `helpers` extra functions of the module."""
    params = [f"%{a.name}_ptr: index" for a in [*inputs, *outputs]]
    if scalars:
        params.append(scalars)
    text = "".join(f"// {line}\n" for line in comment.splitlines())
    text += preamble + helpers
    text += f"func.func @kernel({', '.join(params)}) attributes {{grid = [1]}} {{\n"
    text += "  %c0 = arith.constant 0 : index\n"
    text += "".join(load_whole(a) for a in inputs)
    text += body if body.endswith("\n") else body + "\n"
    text += "".join(store_whole(a) for a in outputs)
    text += "  func.return\n}\n"
    return text
