"""The specification website's generator: op pages, the status table and the grammar as
EBNF, derived from the op registry and the hand-written text in `spec/`.

mkdocs runs it through `ktir/docsgen/mkdocs_hook.py` (see `mkdocs.yml`);
`python -m ktir.docsgen --out DIR` writes the generated pages as Markdown files.
"""

from __future__ import annotations

SPEC_VERSION = "0.1"
