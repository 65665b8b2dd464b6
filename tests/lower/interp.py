"""Running lowered KTIR in reference_interp, or skipping with the precise reason when it cannot."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ktir


def interpreter() -> Any:
    try:
        import reference_interp
    except ImportError as e:  # pragma: no cover - depends on the checkout
        pytest.skip(f"reference_interp is not importable: {e}")
    return reference_interp


def local(arrays: np.ndarray) -> Any:
    """Per-tile ct_local contents (leading dim = tiles)."""
    return interpreter().Local(arrays)


def run(text: str, func: str | None = None, args: dict[str, Any] | None = None, **options: Any) -> Any:
    """Parse and run; skip when reference_interp does not execute an op the text uses."""
    ri = interpreter()
    module = ktir.parse(text)
    try:
        return ri.run(module, func=func, args=args or {}, **options)
    except ri.KtirRuntimeError as e:
        if e.kind == "unsupported":
            pytest.skip(f"reference_interp does not execute this yet: {e}")
        raise
