"""Keep `//` comments and blank lines through parse -> print: each attaches to the next op or
alias definition, or (comments only) trails the op whose line it ends. A kept blank line is
an empty string among the comments. Comments take no part in AST equality."""

from __future__ import annotations

import bisect
import re
from typing import Any

from ktir.ir.operation import Module, Operation

# A maximal run of blank lines with the newline before it (so the line before the run is
# not blank, but at the start of the text), and the first character after a run.
_BLANK_RUN = re.compile(r"\n(?:[^\S\n]*\n)+")
_NEXT_CHAR = re.compile(r"[^\S\n]*(\S?)")


def blank_lines(text: str) -> list[tuple[int, int, str]]:
    """Separating blank lines worth keeping, as comment entries (line, 0, "").

    A run of blank lines counts once; none is kept at the start or end of the file, nor
    right before a closing brace, where the canonical form has none.
    """
    kept: list[tuple[int, int, str]] = []
    counted, line = 0, 1  # line: the number of the line at offset `counted`
    first = True
    for run in _BLANK_RUN.finditer(text):
        start = run.start()
        if first:
            first = False
            if not text[:start].strip():
                continue  # blank lines at the start of the text (later runs follow a line)
        nxt = _NEXT_CHAR.match(text, run.end()).group(1)  # type: ignore[union-attr]
        if nxt in ("", "}"):
            continue
        line += text.count("\n", counted, start + 1)
        counted = start + 1
        kept.append((line, 0, ""))
    return kept


def attach(module: Module, comments: list[tuple[int, int, str]], alias_lines: list[tuple[int, int, str]]) -> None:
    if not comments:
        return
    comments = sorted(comments, key=_position)
    anchors: list[tuple[int, int, Any]] = [(line, col, key) for line, col, key in alias_lines]
    anchors += _ops_up_to(module, comments[-1][:2])
    anchors.sort(key=_position)
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


def _position(item: tuple[int, int, Any]) -> tuple[int, int]:
    return item[0], item[1]


def _ops_up_to(module: Module, last: tuple[int, int]) -> list[tuple[int, int, Operation]]:
    """(line, column, op) of the module's ops, in order, up to the first past `last`.

    Ops walk in the order they are written (pre-order is document order), so the walk
    stops there: most comments head the file. Should an op stand out of order, every op
    is taken and sorted."""
    found: list[tuple[int, int, Operation]] = []
    for op in module.walk():
        loc = op.loc
        if loc is None:
            continue
        if found and (loc[0], loc[1]) < _position(found[-1]):
            return sorted(((o.loc[0], o.loc[1], o) for o in module.walk() if o.loc is not None), key=_position)
        found.append((loc[0], loc[1], op))
        if (loc[0], loc[1]) > last:
            break
    return found
