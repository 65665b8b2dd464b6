"""mkdocs hooks (`hooks:` in mkdocs.yml): publish `spec/` beside `docs/`, add the pages
generated from the op registry, expand `<!-- ktir:NAME -->` directives, and make sure
```` ```ktir ```` blocks are highlighted even before the package's Pygments entry point is
installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # a clean clone without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from mkdocs.config.defaults import MkDocsConfig  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402
from mkdocs.structure.pages import Page  # noqa: E402

from ktir.docsgen import conformance_page, pages  # noqa: E402

SPEC_DIR = ROOT / "spec"
OPS_NAV_TARGET = "spec/ops/index.md"


def register_lexer() -> None:
    """Let Pygments find `ktir` from this source tree when the entry point is absent."""
    from pygments.lexers import LEXERS, find_lexer_class_by_name
    from pygments.util import ClassNotFound

    try:
        find_lexer_class_by_name("ktir")
    except ClassNotFound:
        LEXERS["KtirLexer"] = ("ktir.highlight", "KTIR", ("ktir",), ("*.ktir",), ("text/x-ktir",))


def _expand_ops_nav(items: Any) -> Any:
    if isinstance(items, list):
        return [_expand_ops_nav(i) for i in items]
    if isinstance(items, dict):
        return {k: pages.nav() if v == OPS_NAV_TARGET else _expand_ops_nav(v) for k, v in items.items()}
    return items


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    register_lexer()
    if config.nav is not None:
        config.nav = _expand_ops_nav(config.nav)
    return config


def spec_source_files() -> list[Path]:
    """Files of spec/ that become site pages (the per-dialect semantics are sources only)."""
    ops_sources = set((SPEC_DIR / "ops").glob("*.md"))
    return sorted(p for p in SPEC_DIR.rglob("*") if p.is_file() and p not in ops_sources)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in spec_source_files():
        files.append(
            File(
                str(path.relative_to(ROOT).as_posix()),
                src_dir=str(ROOT),
                dest_dir=config.site_dir,
                use_directory_urls=config.use_directory_urls,
            )
        )
    for uri, content in pages.generate(SPEC_DIR).items():
        files.append(File.generated(config, uri, content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return pages.expand_directives(conformance_page.expand(markdown))
