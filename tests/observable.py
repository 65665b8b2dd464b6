"""What a parse result shows beyond AST equality, for comparing the two parse paths (the
fast path and the grammar): tests/syntax/test_fastparse_equivalence.py and the fuzz lane."""

from __future__ import annotations

from typing import Any

from ktir.ir.operation import Module


def observable(module: Module) -> list[Any]:
    """Everything a parse result shows beyond AST equality: where each op, block and block
    argument starts, the comments and blank lines kept, and the warnings."""
    seen: list[Any] = [module.alias_order, module.alias_comments, module.trailing_comments, list(module.warnings)]
    for op in module.walk():
        seen.append((op.name, op.loc, op.results, op.comments, op.trailing_comment))
        for region in op.regions:
            for block in region.blocks:
                seen.append((block.label, block.loc, [(a.name, a.loc) for a in block.arguments]))
    return seen
