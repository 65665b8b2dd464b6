"""Diagnostics: `file:line:col: severity[ID]: message`, the source line and a caret."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    id: str
    message: str
    line: int
    column: int
    file: str | None = None
    notes: tuple[Diagnostic, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "col": self.column,
            "severity": self.severity,
            "id": self.id,
            "message": self.message,
            "notes": [n.to_dict() for n in self.notes],
        }


class KtirError(Exception):
    """Raised for bad input; carries one or more diagnostics, never a traceback for users."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(diagnostics[0].message if diagnostics else "error")
        self.diagnostics = diagnostics


class ParseError(KtirError):
    def __init__(self, message: str, line: int, column: int, file: str | None = None, id: str = "syntax") -> None:
        super().__init__([Diagnostic("error", id, message, line, column, file)])
        self.message = message
        self.line = line
        self.column = column


def render(diag: Diagnostic, source: str | None = None) -> str:
    """Render like a compiler: location, severity[ID], message, source line, caret."""
    # locations are 1-based; a diagnostic without one (line 0) names only the file
    where = f"{diag.file or '<input>'}:{diag.line}:{diag.column}" if diag.line >= 1 else (diag.file or "<input>")
    ident = f"[{diag.id}]" if diag.id else ""
    lines = [f"{where}: {diag.severity}{ident}: {diag.message}"]
    if source is not None and diag.line >= 1:
        text_lines = source.splitlines()
        if diag.line <= len(text_lines):
            src = text_lines[diag.line - 1].expandtabs(1)
            lines.append(f"  {src}")
            lines.append("  " + " " * max(diag.column - 1, 0) + "^")
    for note in diag.notes:
        lines.append(render(note, source))
    return "\n".join(lines)
