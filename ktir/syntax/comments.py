"""Keep `//` comments through parse -> print: each attaches to the next op or alias
definition, or trails the op whose line it ends. Comments take no part in AST equality."""

from __future__ import annotations

import bisect
from typing import Any

from ktir.ir.operation import Module, Operation


def attach(module: Module, comments: list[tuple[int, int, str]], alias_lines: list[tuple[int, int, str]]) -> None:
    if not comments:
        return
    anchors: list[tuple[int, int, Any]] = [(line, col, key) for line, col, key in alias_lines]
    anchors += [(op.loc.line, op.loc.column, op) for op in module.walk() if op.loc is not None]
    anchors.sort(key=lambda a: (a[0], a[1]))
    positions = [(a[0], a[1]) for a in anchors]
    for line, col, text in comments:
        text = text.rstrip()
        i = bisect.bisect_left(positions, (line, col))
        before = anchors[i - 1] if i > 0 else None
        if before is not None and before[0] == line and isinstance(before[2], Operation):
            op = before[2]
            op.trailing_comment = text if op.trailing_comment is None else f"{op.trailing_comment} {text}"
        elif i < len(anchors):
            target = anchors[i][2]
            if isinstance(target, Operation):
                target.comments.append(text)
            else:
                module.alias_comments.setdefault(target, []).append(text)
        else:
            module.trailing_comments.append(text)
