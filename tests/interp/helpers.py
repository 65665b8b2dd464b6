"""Helpers for the interpreter tests: parse examples and small programs, run them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import ktir
import reference_interp as ri

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# hypothesis settings for this directory (applied per test, not as a global profile)
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def example(name: str) -> ktir.Module:
    path = EXAMPLES / name
    return ktir.parse(path.read_text(), str(path))


def assert_within(got: np.ndarray, want: np.ndarray, tol: np.ndarray, what: str) -> None:
    """|got - want| <= tol elementwise (got as float64); the message names the worst element."""
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= tol).all(), f"{what}: worst error {err.max()} at {np.unravel_index((err - tol).argmax(), err.shape)}"


def module(text: str) -> ktir.Module:
    return ktir.parse(text, "test.ktir")


def run(text: str | ktir.Module, **kw: Any) -> ri.RunResult:
    m = module(text) if isinstance(text, str) else text
    return ri.run(m, **kw)


def fails(kind: str, text: str | ktir.Module, **kw: Any) -> ri.KtirRuntimeError:
    with pytest.raises(ri.KtirRuntimeError) as info:
        run(text, **kw)
    assert info.value.kind == kind, info.value.message
    return info.value


def close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)
