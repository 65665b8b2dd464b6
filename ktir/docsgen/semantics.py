"""Hand-written op semantics: `spec/ops/<dialect>.md`, one `## <op>` section per op.

A file starts with `# <title>` and an introduction to the dialect; then each section's
heading names one op, or several ops that share the text (`## arith.addi, arith.subi`).
The generator puts a section's text under "Semantics" on the page of each op it names.
Sub-headings inside a section use `###`. Relative links are written from the file's own
place (`../memory.md`, `ktdp.load.md` for another op's page): op pages are generated beside
it, as `spec/ops/<op name>.md`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_HEADING = re.compile(r"^(#{1,2})\s+(.*?)\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass
class DialectText:
    dialect: str
    title: str
    intro: str
    # op name -> its section's text (several ops may share one text)
    sections: dict[str, str] = field(default_factory=dict)
    # line of each op's heading, for messages
    lines: dict[str, int] = field(default_factory=dict)
    path: Path | None = None


def parse_dialect_text(text: str, dialect: str, path: Path | None = None) -> DialectText:
    """Split a dialect's semantics file into its title, introduction and op sections."""
    title = dialect
    intro: list[str] = []
    current: list[str] | None = None
    names: list[str] = []
    doc = DialectText(dialect, title, "", path=path)
    in_fence: str | None = None

    def flush() -> None:
        if current is not None:
            body = "\n".join(current).strip() + "\n"
            for name in names:
                if name in doc.sections:
                    raise ValueError(f"{path or dialect}: op {name} has two sections")
                doc.sections[name] = body

    for number, line in enumerate(text.split("\n"), start=1):
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if in_fence is None:
                in_fence = marker
            elif marker[0] == in_fence[0] and len(marker) >= len(in_fence):
                in_fence = None
        heading = None if in_fence or fence else _HEADING.match(line)
        if heading and heading.group(1) == "#" and current is None and not names:
            doc.title = heading.group(2)
            continue
        if heading and heading.group(1) == "##":
            flush()
            names = [n.strip().strip("`") for n in heading.group(2).split(",")]
            for name in names:
                doc.lines[name] = number
            current = []
            continue
        (intro if current is None else current).append(line)
    flush()
    doc.intro = "\n".join(intro).strip() + "\n"
    return doc


def load_semantics(spec_dir: Path) -> dict[str, DialectText]:
    """Every `spec/ops/<dialect>.md`, by dialect name."""
    ops_dir = spec_dir / "ops"
    result: dict[str, DialectText] = {}
    for path in sorted(ops_dir.glob("*.md")):
        result[path.stem] = parse_dialect_text(path.read_text(encoding="utf-8"), path.stem, path)
    return result
