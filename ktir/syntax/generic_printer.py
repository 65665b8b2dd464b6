"""MLIR's generic op form, as MLIR 22 prints it (`ktir fmt --generic`).

`"dialect.op"(%operands)[^successors] <{properties}> ({regions}) {attributes} : (types) -> types`
for every op, or only for ops whose name starts with one of the given prefixes (the rest
keep their custom form), so that stock MLIR tools read KTIR: with the `ktdp` ops generic,
`mlir-opt --allow-unregistered-dialect` parses and verifies a KTIR program. What the
generic form spells out that KTIR's AST leaves implicit comes from `ktir.syntax.mlir_generic`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Module, Operation
from ktir.syntax.mlir_generic import map_types, memory_space_string
from ktir.syntax.printer import (
    Printer,
    _results_text,
    attr_text,
    print_module,
)

_MLIR_UNLEXABLE = re.compile(r"[<>]=")


class GenericPrinter(Printer):
    """Prints the selected ops (all, or those whose name starts with a prefix) generic."""

    def __init__(self, prefixes: Sequence[str] | None = None, attr_aliases: dict[str, Attribute] | None = None,
                 counter: list[int] | None = None) -> None:
        super().__init__(attr_aliases, counter)
        self.prefixes = None if prefixes is None else tuple(prefixes)

    def fork(self) -> Printer:
        return GenericPrinter(self.prefixes, self.attr_aliases, self.counter)

    def selected(self, name: str) -> bool:
        return self.prefixes is None or any(name == p or name.startswith(p.rstrip(".") + ".") for p in self.prefixes)

    def _operation(self, op: Operation, depth: int) -> None:
        if self.selected(op.name):
            self.generic(op, depth, _results_text(op.results))
        else:
            super()._operation(op, depth)


def print_generic(module: Module, prefixes: Sequence[str] | None = None, string_memory_spaces: bool = False) -> str:
    """`module` with every op (or every op of the given dialects/prefixes) in MLIR's
    generic form; parsing it gives back an equal module.

    `string_memory_spaces` writes `#ktdp.memory_space<...>` in memref types as the string
    `"#ktdp.memory_space<...>"`: stock MLIR, without the ktdp dialect, accepts no other
    spelling there, and KTIR reads the string back as the attribute.
    """
    if string_memory_spaces:
        module = _string_memory_spaces(module)
    if prefixes is not None and not prefixes:
        return print_module(module)
    return GenericPrinter(prefixes).module(_inline_future_groups(module))


def _string_memory_spaces(module: Module) -> Module:
    def rewrite(t: Type) -> Type:
        if isinstance(t, ty.MemRefType | ty.UnrankedMemRefType) and t.memory_space is not None:
            space = t.memory_space
            if isinstance(space, at.AttrAliasRef):
                space = module.attr_aliases.get(space.name, space)
            if isinstance(space, at.MemorySpaceAttr):
                return t.model_copy(update={"memory_space": memory_space_string(space)})
        return t

    return map_types(module, rewrite)


def _inline_future_groups(module: Module) -> Module:
    """Write `groups = #g` of `!ktdp.tile_future` types inline where MLIR can read it.

    Without the ktdp dialect MLIR keeps a ktdp type as opaque text: it neither resolves
    `#g` nor keeps the alias definition in what it prints. An inline set is read back
    from that text, unless it holds `>=`/`<=`, which MLIR's scanner of dialect-type
    bodies cannot lex (it takes the `>` for the end of the type): those keep the alias.
    """
    def inline(t: Type) -> Type:
        if isinstance(t, ty.TileFutureType) and isinstance(t.groups, at.AttrAliasRef):
            target = module.attr_aliases.get(t.groups.name)
            if isinstance(target, at.IntegerSetAttr) and not _MLIR_UNLEXABLE.search(attr_text(target)):
                return t.model_copy(update={"groups": target})
        return t

    return map_types(module, inline)
