"""Fenced code blocks in Markdown: find them, with their language, classes and line.

A block's info string is either a language word (```` ```ktir ````) or an attribute list
(```` ```{.ktir .run} ````, the pymdownx.superfences form). The first class of an attribute
list is the language; further classes mark the block (`run`: execute it and compare with
the `ktir-expected` block that follows it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class FencedBlock:
    """One fenced block: its language, extra classes, code and 1-based line of the fence."""

    language: str
    classes: tuple[str, ...]
    code: str
    line: int
    path: Path | None = None

    @property
    def where(self) -> str:
        return f"{self.path or '<markdown>'}:{self.line}"


def _parse_info(info: str) -> tuple[str, tuple[str, ...]]:
    info = info.strip()
    if info.startswith("{") and info.endswith("}"):
        classes = tuple(word[1:] for word in info[1:-1].split() if word.startswith("."))
        return (classes[0], classes[1:]) if classes else ("", ())
    word = info.split()[0] if info else ""
    return word, ()


def fenced_blocks(text: str, path: Path | None = None) -> list[FencedBlock]:
    """Every fenced code block of `text`, in order. Indented fences (in lists) count too."""
    blocks: list[FencedBlock] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, indent = m.group("fence"), len(m.group("indent"))
        language, classes = _parse_info(m.group("info"))
        body: list[str] = []
        j = i + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        while j < len(lines) and not closing.match(lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        blocks.append(FencedBlock(language, classes, "\n".join(body) + "\n", i + 1, path))
        i = j + 1
    return blocks


def ktir_blocks(text: str, path: Path | None = None) -> list[FencedBlock]:
    return [b for b in fenced_blocks(text, path) if b.language == "ktir"]
