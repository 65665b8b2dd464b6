"""Float values as bit patterns of a KTIR float type (hex literals, inf/nan in dense data)."""

from __future__ import annotations

from typing import Any

from ktir.ir import types as ty

_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def numpy_float(t: ty.FloatType) -> Any:
    """The numpy dtype holding values of `t` (f32 for a kind numpy does not have, such as tf32)."""
    import ml_dtypes
    import numpy as np

    dtypes = {
        "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
        "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
        "f8E4M3": ml_dtypes.float8_e4m3, "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
        "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    }  # fmt: skip
    return np.dtype(dtypes.get(t.kind, np.float32))


def float_from_bits(bits: int, t: ty.FloatType) -> float:
    import numpy as np

    dtype = numpy_float(t)
    return float(np.array([bits], dtype=_UINT[dtype.itemsize]).view(dtype)[0])


def float_bits(value: float, t: ty.FloatType) -> int:
    import numpy as np

    dtype = numpy_float(t)
    return int(np.array([value], dtype=dtype).view(_UINT[dtype.itemsize])[0])
