"""The suite's levels and the optional parts of a certification, as plain data.

Kept apart from the pydantic models (conformance.model, conformance.capability) so that
the command line can offer them as choices without loading pydantic (`ktir --help`).
"""

from __future__ import annotations

LEVELS: tuple[str, ...] = ("syntax", "validation", "core", "multi-tile", "collective", "full")
# spec/conformance.md#certification: the levels a kind may leave out, and the optional element types
OPTIONAL_LEVELS: dict[str, tuple[str, ...]] = {"parser": (), "verifier": (), "executor": ("collective",)}
OPTIONAL_DTYPES: tuple[str, ...] = ("f64", "f8E4M3FN", "f8E5M2")
