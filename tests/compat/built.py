"""A program built with ktir.builder, checked valid and read back as its text parses."""

from __future__ import annotations

import ktir
from ktir.builder import Builder
from ktir.verify import validate_text


def valid(b: Builder) -> ktir.Module:
    """`b`'s module printed, validated (no error) and parsed back."""
    text = ktir.print_module(b.module)
    _, diagnostics = validate_text(text, "built.ktir")
    assert not [d for d in diagnostics if d.severity == "error"], text
    return ktir.parse(text, "built.ktir")
