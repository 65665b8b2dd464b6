"""Keep `//` comments and blank lines through parse -> print: each attaches to the next op or
alias definition, or (comments only) trails the op whose line it ends. A kept blank line is
an empty string among the comments. Comments take no part in AST equality."""

from __future__ import annotations

import bisect
from typing import Any

from ktir.ir.operation import Module, Operation


def blank_lines(text: str) -> list[tuple[int, int, str]]:
    """Separating blank lines worth keeping, as comment entries (line, 0, "").

    A run of blank lines counts once; none is kept at the start or end of the file, nor
    right before a closing brace, where the canonical form has none.
    """
    lines = [line.strip() for line in text.split("\n")]
    # the first character of the next non-blank line after each line ("" at the end)
    next_start = [""] * (len(lines) + 1)
    for i in range(len(lines) - 1, -1, -1):
        next_start[i] = lines[i][:1] if lines[i] else next_start[i + 1]
    kept: list[tuple[int, int, str]] = []
    seen_content = False
    for i, line in enumerate(lines):
        if line:
            seen_content = True
        elif seen_content and lines[i - 1] and next_start[i + 1] not in ("", "}"):
            kept.append((i + 1, 0, ""))
    return kept


def attach(module: Module, comments: list[tuple[int, int, str]], alias_lines: list[tuple[int, int, str]]) -> None:
    if not comments:
        return
    comments = sorted(comments, key=lambda c: (c[0], c[1]))
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
