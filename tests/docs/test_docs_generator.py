"""Units of the docs generator: fenced blocks, semantics files, link relocation, the EBNF
rendering of the grammar, and the Pygments lexer."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_support import ROOT, generated_pages
from pygments.token import Error, Keyword, Name, Text

from ktir.dialects.registry import OPS
from ktir.docsgen import ebnf
from ktir.docsgen.blocks import fenced_blocks
from ktir.docsgen.pages import expand_directives, relocate_links
from ktir.docsgen.semantics import parse_dialect_text
from ktir.highlight import KtirLexer


def test_fenced_blocks_read_languages_classes_and_lines() -> None:
    text = "intro\n\n```ktir\n%a = x\n```\n\n- item\n\n    ```{.ktir .run}\n    %b = y\n    ```\n\n````md\n```ktir\nnot a block\n```\n````\n"
    blocks = fenced_blocks(text)
    assert [(b.language, b.classes, b.line) for b in blocks] == [("ktir", (), 3), ("ktir", ("run",), 9), ("md", (), 13)]
    assert blocks[1].code == "%b = y\n"
    assert "not a block" in blocks[2].code


def test_semantics_file_sections_and_shared_headings() -> None:
    text = "# The `x` dialect\n\nIntro text.\n\n## x.a, x.b\n\nShared.\n\n```ktir\n## not a heading\n```\n\n## x.c\n\nOwn.\n"
    doc = parse_dialect_text(text, "x")
    assert doc.title == "The `x` dialect"
    assert doc.intro.strip() == "Intro text."
    assert doc.sections["x.a"] == doc.sections["x.b"]
    assert "## not a heading" in doc.sections["x.b"]
    assert doc.sections["x.c"].strip() == "Own."
    assert doc.lines == {"x.a": 5, "x.b": 5, "x.c": 13}
    with pytest.raises(ValueError, match="two sections"):
        parse_dialect_text("## x.a\n\none\n\n## x.a\n\ntwo\n", "x")


def test_relative_links_move_one_level_down() -> None:
    text = "[m](../memory.md#views) [o](ktdp/load.md) [w](https://example.com) [a](#here)\n\n[ref]: ../types.md\n"
    assert relocate_links(text) == (
        "[m](../../memory.md#views) [o](../ktdp/load.md) [w](https://example.com) [a](#here)\n\n[ref]: ../../types.md\n"
    )


def test_unknown_directive_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown docs directive"):
        expand_directives("<!-- ktir:nonsense -->\n")


def test_ebnf_covers_every_rule_and_op_name() -> None:
    text = ebnf.ebnf_markdown()
    for production in ebnf.productions():
        assert f"{production.name} " in text
    names = {p.name for p in ebnf.productions()}
    assert "type_only" not in names and "PARSED_TYPE" not in names
    assert "PARSED_TYPE" not in text
    for op in OPS.values():
        assert f'"{op.name}"' in text, f"{op.name} is missing from the op-name terminals"


@pytest.mark.parametrize("op_name", sorted(OPS))
def test_every_op_has_syntax(op_name: str) -> None:
    lines = ebnf.op_syntax(op_name)
    assert lines, f"no grammar production spells {op_name}"
    assert all(f'"{op_name}"' in line for line in lines)


def test_lexer_tokenises_the_corpus_without_errors() -> None:
    lexer = KtirLexer()
    files = [p for p in sorted((ROOT / "tests" / "corpus").rglob("*.ktir")) if "invalid_syntax" not in p.parts]
    assert files
    for path in files:
        for token, value in lexer.get_tokens(path.read_text(encoding="utf-8")):
            assert token is not Error and not (token is Text and value.strip()), f"{path.relative_to(ROOT)}: {value!r}"


def test_lexer_token_kinds() -> None:
    tokens = [
        (t, v)
        for t, v in KtirLexer().get_tokens(
            "%x = ktdp.load %t : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16> // c\n"
        )
        if v.strip()
    ]
    kinds = dict((v, t) for t, v in tokens)
    assert kinds["%x"] is Name.Variable
    assert kinds["ktdp.load"] is Keyword
    assert kinds["!ktdp.access_tile"] is Keyword.Type
    assert kinds["f16"] is Keyword.Type
    assert kinds["// c"] in (Keyword, *[t for t in kinds.values()]) and str(kinds["// c"]).startswith("Token.Comment")


def test_pygments_finds_the_lexer_by_name() -> None:
    """Through the package's entry point, or the docs hook's fallback registration."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    from pygments.lexers import get_lexer_by_name

    from ktir.docsgen.mkdocs_hook import register_lexer

    register_lexer()
    assert type(get_lexer_by_name("ktir")).__name__ == "KtirLexer"


def test_python_m_docsgen_writes_the_pages(tmp_path: Path) -> None:
    from ktir.docsgen.__main__ import main

    assert main(["--spec", str(ROOT / "spec"), "--out", str(tmp_path)]) == 0
    page = (tmp_path / "spec" / "ops" / "ktdp.load.md").read_text()
    assert page.startswith("---\nsearch:\n  boost: ") and "\n# ktdp.load\n" in page
    assert (tmp_path / "status.md").exists()


def test_status_rows_follow_what_components_report() -> None:
    from ktir.docsgen import status

    load = OPS["ktdp.load"]
    nothing = status.Coverage(verifier=None, interpreter=None, conformance=None, schedulers=None)
    assert set(status.row(load, True, nothing).values()) == {"yes, 2 constraints", status.NOT_YET}
    some = status.Coverage(
        verifier=frozenset({"ktdp.load.C1"}),
        interpreter=frozenset({"ktdp.load"}),
        conformance={"ktdp.load": 3},
        schedulers={"spyre": frozenset({"ktdp.load"}), "naive": frozenset()},
    )
    assert status.row(load, True, some) == {
        "spec": "yes, 2 constraints",
        "verifier": "1/2",
        "interpreter": "yes",
        "conformance": "3",
        "schedulers": "spyre",
    }


def test_search_finds_op_pages_by_their_name() -> None:
    """The site search splits op names on '.' and '_' (mkdocs.yml), so the words of a query such
    as `inter_tile_reduce` are words of the op page's title, and op pages carry a boost."""
    import re

    import yaml

    from ktir.docsgen.pages import SEARCH_BOOST

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().split("\nnav:")[0].replace("!!python", "#"))
    search = next(p["search"] for p in config["plugins"] if isinstance(p, dict) and "search" in p)
    sep = re.compile(search["separator"])

    def words(text: str) -> list[str]:
        return [w for w in sep.split(text.lower()) if w]

    assert words("ktdp.inter_tile_reduce") == ["ktdp", "inter", "tile", "reduce"]
    assert words("inter_tile_reduce") == ["inter", "tile", "reduce"]
    pages = generated_pages()
    for name in OPS:
        page = pages[f"spec/ops/{name}.md"]
        assert f"\n# {name}\n" in page and f"boost: {SEARCH_BOOST}" in page.split("---")[1]
