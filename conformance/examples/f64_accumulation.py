"""A more accurate implementation than the reference: the reference interpreter with every
float reduction and contraction accumulated in float64 (one rounding to the result type).

    ktir conformance run --adapter python:conformance.examples.f64_accumulation:F64Accumulation

The tolerance classes `reduction` and `matmul` bound the distance to the exact result, so
an implementation that is closer to it than the reference must pass every case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from unittest import mock

import numpy as np

from conformance.adapters import ReferenceAdapter


def _wide(dt: np.dtype[Any]) -> np.dtype[Any]:
    return np.dtype(np.int64) if dt.kind in "iub" else np.dtype(np.float64)


class F64Accumulation(ReferenceAdapter):
    """Reference semantics, float64 accumulators for linalg reductions and contractions."""

    name = "reference-f64-accumulation"

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        from reference_interp.ops import linalg

        with mock.patch.object(linalg, "_acc_dtype", _wide):
            return super().run(source, filename, function, inputs)
