"""KTIR: Kernel Tile IR — the text format, typed AST, printer and tools.

    >>> import ktir
    >>> m = ktir.parse("func.func @f() { return }")
    >>> print(ktir.print_module(m), end="")
    func.func @f() {
      func.return
    }
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.syntax.diagnostics import Diagnostic, KtirError, ParseError
from ktir.syntax.parser import parse
from ktir.syntax.printer import print_module, print_op

SPEC_VERSION = "0.1"
"""The version of the KTIR specification this library implements (spec/versioning.md)."""

try:
    __version__ = _dist_version("ktir")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

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
