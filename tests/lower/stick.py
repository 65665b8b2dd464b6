"""Test-side stick layouts, written from FORMAT.md 1.5 independently of ktir.lower.

A tensor with layout dims `layout` (innermost first) and stick dim `stick_dim` of `stick`
elements is stored as the row-major array with dims reversed(layout), the stick dim
counted in sticks, and a trailing lane dim.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).parent / "data"


def raw(name: str) -> dict[str, Any]:
    """The DSC of a sample file (the object under dscs_[0])."""
    (body,) = json.loads((DATA / name).read_text()).values()
    (dsc,) = body["dscs_"][0].values()
    return dsc


def layout_of(dsc: dict[str, Any], tensor: int) -> tuple[list[str], str, int]:
    info = dsc["primaryDsInfo_"][dsc["labeledDs_"][tensor]["dsType_"]]
    return list(info["layoutDimOrder_"]), info["stickDimOrder_"][0], info["stickSize_"][0]


def to_device(x: np.ndarray, dims: Sequence[str], layout: Sequence[str], stick_dim: str, stick: int) -> np.ndarray:
    """Logical array with axes `dims` -> device array."""
    split_shape: list[int] = []
    names: list[str] = []
    for name, n in zip(dims, x.shape, strict=True):
        if name == stick_dim:
            split_shape += [n // stick, stick]
            names += [name + "#sticks", "#lanes"]
        else:
            split_shape.append(n)
            names.append(name)
    y = x.reshape(split_shape)
    device = [d + "#sticks" if d == stick_dim else d for d in reversed(layout)] + ["#lanes"]
    return np.ascontiguousarray(y.transpose([names.index(d) for d in device]))


def from_device(y: np.ndarray, dims: Sequence[str], layout: Sequence[str], stick_dim: str) -> np.ndarray:
    """Device array -> logical array with axes `dims`."""
    device = [d + "#sticks" if d == stick_dim else d for d in reversed(layout)] + ["#lanes"]
    order: list[str] = []
    for name in dims:
        order += [name + "#sticks", "#lanes"] if name == stick_dim else [name]
    z = y.transpose([device.index(d) for d in order])
    shape = []
    for name in dims:
        shape.append(z.shape[order.index(name + "#sticks")] * z.shape[order.index("#lanes")] if name == stick_dim else z.shape[order.index(name)])
    return np.ascontiguousarray(z).reshape(shape)
