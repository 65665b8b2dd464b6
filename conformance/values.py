"""Input values from manifest recipes, and golden files (.npz) written atomically."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import ml_dtypes
import numpy as np

from conformance.model import ArgSpec, Case
from ktir.fileio import confined_file, load_npy_checked, read_npz_checked, write_atomic

DTYPES: dict[str, Any] = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
}


FLOAT_DTYPES: frozenset[np.dtype[Any]] = frozenset(
    np.dtype(DTYPES[n]) for n in ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2"))


def is_float(dt: np.dtype[Any]) -> bool:
    """Whether `dt` is a floating-point type, including the ml_dtypes ones (bf16 and f8 have
    numpy kind "V", not "f")."""
    return dt.kind == "f" or np.dtype(dt) in FLOAT_DTYPES


def np_dtype(name: str) -> np.dtype[Any]:
    if name not in DTYPES:
        raise ValueError(f"unknown element type {name!r}")
    return np.dtype(DTYPES[name])


def make_arg(spec: ArgSpec, root: Path, stored: Mapping[str, np.ndarray] | None = None) -> Any:
    """The value of one argument: an array of `spec.shape`, or a Python scalar."""
    if spec.recipe == "scalar":
        return int(spec.value) if spec.dtype in ("index", "i8", "i16", "i32", "i64") else float(spec.value)
    dt = np_dtype(spec.dtype)
    shape = tuple(spec.shape)
    rng = np.random.default_rng(spec.seed)
    if spec.recipe == "npy":
        if spec.npy is None:
            raise ValueError(f"argument {spec.name}: recipe npy needs `npy`")
        if stored is not None and spec.npy in stored:  # not yet written (regeneration)
            return np.asarray(stored[spec.npy]).astype(dt)
        return load_npy_checked(confined_file(root, spec.npy)).astype(dt)
    if spec.recipe == "zeros":
        return np.zeros(shape, dt)
    if spec.recipe == "fill":
        return np.full(shape, spec.value).astype(dt)
    if spec.recipe == "arange":
        return np.arange(int(np.prod(shape))).reshape(shape).astype(dt)
    if spec.recipe == "permutation":
        return rng.permutation(int(np.prod(shape))).reshape(shape).astype(dt)
    if spec.recipe == "int":
        return rng.integers(int(spec.low), int(spec.high), size=shape).astype(dt)
    if spec.recipe == "positive":
        return rng.uniform(max(spec.low, 1.0 / 64), spec.high, size=shape).astype(np.float32).astype(dt)
    if spec.recipe == "uniform":
        return rng.uniform(spec.low, spec.high, size=shape).astype(np.float32).astype(dt)
    # normal: standard normal values, scaled so that low..high is about +-2 sigma
    scale = (spec.high - spec.low) / 4
    return (rng.standard_normal(size=shape) * scale).astype(np.float32).astype(dt)


def case_inputs(case: Case, root: Path, stored: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
    return {a.name: make_arg(a, root, stored) for a in case.args}


def to_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    # ml_dtypes arrays (bf16, f8) are stored as their raw bits plus the dtype name, so that any
    # numpy can read the file: key `name` holds the bits, `name.__dtype__` the type name.
    stored: dict[str, np.ndarray] = {}
    for name, a in arrays.items():
        a = np.asarray(a)
        kind = _ml_name(a.dtype)
        if kind is None:
            stored[name] = a
        else:
            stored[name] = a.view(np.uint8 if a.dtype.itemsize == 1 else np.uint16)
            stored[f"{name}.__dtype__"] = np.array(kind)
    np.savez_compressed(buf, **stored)  # type: ignore[arg-type]
    return buf.getvalue()


def _ml_name(dt: np.dtype[Any]) -> str | None:
    for name, t in DTYPES.items():
        if name in ("bf16", "f8E4M3FN", "f8E5M2") and dt == np.dtype(t):
            return name
    return None


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` to `path` atomically (temporary file in the same directory, then rename)."""
    data = to_bytes(arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


def read_npz(path: Path | IO[bytes]) -> dict[str, np.ndarray]:
    raw = read_npz_checked(path)
    out: dict[str, np.ndarray] = {}
    for name, a in raw.items():
        if name.endswith(".__dtype__"):
            continue
        kind = raw.get(f"{name}.__dtype__")
        out[name] = a if kind is None else a.view(np_dtype(str(kind)))
    return out
