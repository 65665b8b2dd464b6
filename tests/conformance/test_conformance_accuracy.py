"""Tolerance bounds for every float type: the stored magnitudes are magnitudes, and an
implementation more accurate than the reference (float64 accumulation) passes every case."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conformance.model import SUITE_ROOT, load_suite
from conformance.runner import AdapterSpec, run_suite
from conformance.values import magnitude, read_npz

SUITE = load_suite()
FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


@pytest.mark.parametrize("dt", FLOATS, ids=lambda t: np.dtype(t).name)
def test_magnitude_of_every_float_type(dt: object) -> None:
    x = np.array([-1.5, 2.0, -0.0, -3.0], dtype=dt)  # type: ignore[call-overload]
    m = magnitude(x)
    assert m.dtype == x.dtype
    assert list(m.astype(np.float64)) == [1.5, 2.0, 0.0, 3.0]
    assert not np.signbit(m.astype(np.float64)).any()


def test_magnitude_leaves_integers_and_scalars() -> None:
    ids = np.array([-3, 4], np.int32)
    assert magnitude(ids) is ids and magnitude(-2.0) == -2.0


def test_every_stored_bound_magnitude_is_non_negative() -> None:
    bounded = [(c, o.name) for c in SUITE if c.golden for o in c.outputs if o.tolerance in ("reduction", "matmul")]
    assert len(bounded) >= 50
    for case, name in bounded:
        assert case.golden is not None
        m = read_npz(SUITE_ROOT / case.golden)[f"{name}.abs"].astype(np.float64)
        assert not (m < 0).any(), (case.id, name)


def test_float64_accumulation_passes_every_executing_case() -> None:
    # the adapter changes only the accumulator of reference_interp/ops/linalg.py: a case
    # without a linalg op runs exactly the reference's code, so only the others are run here
    cases = [c for c in SUITE if c.expect == "run" and any(op.startswith("linalg.") for op in c.ops)]
    assert len(cases) >= 100 and {c.level for c in cases} >= {"core", "full"}
    r = run_suite(cases, AdapterSpec("python:conformance.examples.f64_accumulation:F64Accumulation"), jobs=2, timeout=120)
    assert r.passed and {c.status for c in r.cases} == {"pass"}, [(c.id, c.message) for c in r.cases if c.status != "pass"]
