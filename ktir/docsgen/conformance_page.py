"""The conformance coverage table in the docs: `<!-- ktir:conformance-coverage -->`."""

from __future__ import annotations

DIRECTIVE = "<!-- ktir:conformance-coverage -->"


def expand(markdown: str) -> str:
    """Replace the coverage directive (if present) by the generated op x level x dtype table."""
    if DIRECTIVE not in markdown:
        return markdown
    import conformance

    return markdown.replace(DIRECTIVE, conformance.coverage_markdown())
