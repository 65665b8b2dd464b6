"""Moved to `ktir.ir.affine_text` (the IR renders its own affine maps and sets); kept for old imports."""

from ktir.ir.affine_text import format_expr, format_map, format_set

__all__ = ["format_expr", "format_map", "format_set"]
