"""KTIR: Kernel Tile IR — the text format, typed AST, printer and tools.

    >>> import ktir
    >>> m = ktir.parse("func.func @f() { return }")
    >>> print(ktir.print_module(m), end="")
    func.func @f() {
      func.return
    }
"""

from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.syntax.diagnostics import Diagnostic, KtirError, ParseError
from ktir.syntax.parser import parse
from ktir.syntax.printer import print_module, print_op

__all__ = [
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
