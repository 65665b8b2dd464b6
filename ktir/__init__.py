"""KTIR: Kernel Tile IR — the text format, typed AST, printer and tools.

    >>> import ktir
    >>> m = ktir.parse("func.func @f() { return }")
    >>> print(ktir.print_module(m), end="")
    func.func @f() {
      func.return
    }

The names below load on first use (PEP 562), so `import ktir` and `ktir --version` cost
nothing beyond this file: the parser, pydantic and the IR come in with `ktir.parse`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
    from ktir.syntax.diagnostics import Diagnostic, KtirError, ParseError
    from ktir.syntax.parser import parse
    from ktir.syntax.printer import print_module, print_op

    __version__: str

SPEC_VERSION = "0.1"
"""The version of the KTIR specification this library implements (spec/versioning.md)."""

_LAZY = {
    "Block": "ktir.ir.operation",
    "BlockArgument": "ktir.ir.operation",
    "Module": "ktir.ir.operation",
    "Operation": "ktir.ir.operation",
    "Region": "ktir.ir.operation",
    "Diagnostic": "ktir.syntax.diagnostics",
    "KtirError": "ktir.syntax.diagnostics",
    "ParseError": "ktir.syntax.diagnostics",
    "parse": "ktir.syntax.parser",
    "print_module": "ktir.syntax.printer",
    "print_op": "ktir.syntax.printer",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ktir")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'ktir' has no attribute {name!r}")
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


__all__ = [
    "SPEC_VERSION",
    "__version__",
    "Block",
    "BlockArgument",
    "Diagnostic",
    "KtirError",
    "Module",
    "Operation",
    "ParseError",
    "Region",
    "parse",
    "print_module",
    "print_op",
]
