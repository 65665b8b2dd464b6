"""Shared helpers of the docs tests: where the Markdown is, and its ktir blocks."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ktir.docsgen.blocks import FencedBlock, fenced_blocks
from ktir.docsgen.pages import generate

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec"
DOCS = ROOT / "docs"


def markdown_files() -> list[Path]:
    return sorted([*SPEC.rglob("*.md"), *DOCS.rglob("*.md")])


@cache
def generated_pages() -> dict[str, str]:
    return generate(SPEC)


def all_blocks() -> list[FencedBlock]:
    """Every fenced block of spec/, docs/ and the generated pages."""
    blocks: list[FencedBlock] = []
    for path in markdown_files():
        blocks += fenced_blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT))
    for uri, text in generated_pages().items():
        blocks += fenced_blocks(text, Path(f"<generated>/{uri}"))
    return blocks
