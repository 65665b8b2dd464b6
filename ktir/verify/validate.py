"""Parse + verify one text: the library side of `ktir validate`."""

from __future__ import annotations

from ktir.ir.operation import Module
from ktir.syntax.diagnostics import Diagnostic, KtirError
from ktir.syntax.parser import parse
from ktir.verify.engine import verify


def validate_text(text: str, filename: str | None = None) -> tuple[Module | None, list[Diagnostic]]:
    """(module, diagnostics): module is None when the text does not parse."""
    try:
        module = parse(text, filename)
    except KtirError as e:
        return None, list(e.diagnostics)
    diagnostics = list(module.warnings) + verify(module, filename)
    return module, diagnostics
