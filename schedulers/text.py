"""Small pieces of KTIR text the rewrites and the naive kernel generators share."""

from __future__ import annotations


def box(name: str, *extents: int) -> str:
    """`#name = affine_set<...>`: the box 0 <= d_i < extents[i]."""
    dims = ", ".join(f"d{i}" for i in range(len(extents)))
    cons = ", ".join(f"d{i} >= 0, -d{i} + {e - 1} >= 0" for i, e in enumerate(extents))
    return f"#{name} = affine_set<({dims}) : ({cons})>"
