"""The one error type of the lowering: bad SDSC input, reported as `file: error[sdsc]: message`."""

from __future__ import annotations

from ktir.syntax.diagnostics import Diagnostic, KtirError


class SdscError(KtirError):
    """An SDSC file or bundle that cannot be lowered; the message names the key at fault."""

    def __init__(self, message: str, file: str | None = None, line: int = 0, column: int = 0) -> None:
        super().__init__([Diagnostic("error", "sdsc", message, line, column, file)])
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def with_file(self, file: str) -> SdscError:
        """The same error, attributed to `file` unless it already names one."""
        if self.file is not None:
            return self
        return SdscError(self.message, file, self.line, self.column)

    def render(self) -> str:
        where = self.file or "<sdsc>"
        if self.line:
            where += f":{self.line}:{self.column}" if self.column else f":{self.line}"
        return f"{where}: error[sdsc]: {self.message}"

    def __str__(self) -> str:
        return self.render()
