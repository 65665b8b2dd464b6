"""The cached LALR tables: a missing, corrupt, stale or unwritable cache never changes a parse."""

from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Any

import pytest

from ktir.syntax import lalr
from ktir.syntax.parser import GRAMMAR_STARTS, _grammar_text

ROOT = Path(__file__).resolve().parents[2]


def _cache_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("lalr-*.marshal"))


def test_tables_are_built_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTIR_CACHE_DIR", str(tmp_path))
    built = lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)
    (path,) = _cache_files(tmp_path)
    monkeypatch.setattr(lalr, "build_tables", lambda *a: pytest.fail("the cache was not used"))
    assert lalr.load_tables(_grammar_text(), GRAMMAR_STARTS) == built
    assert path.exists()


def test_another_grammar_gets_its_own_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTIR_CACHE_DIR", str(tmp_path))
    lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)
    changed = _grammar_text().replace('"nofold"', '"nofold" | "no_fold"')
    tables = lalr.load_tables(changed, GRAMMAR_STARTS)
    assert len(_cache_files(tmp_path)) == 2
    assert ("NOFOLD", "re", "(?:no_fold|nofold)") in tables["terminals"] or any(
        name == "NOFOLD" and "no_fold" in value for name, _, value in tables["terminals"]
    )


def _parses(tables: lalr.Tables) -> bool:
    from ktir.syntax.parser import _Builder

    text = (ROOT / "examples" / "vector_add.ktir").read_text()
    return bool(lalr.Driver(tables, _Builder).parse(text, "start", _Builder()).operations)


@pytest.mark.parametrize("garbage", [b"\x00\x01not marshal", marshal.dumps({"key": "other", "format": lalr.FORMAT})])
def test_a_corrupt_cache_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garbage: bytes) -> None:
    monkeypatch.setenv("KTIR_CACHE_DIR", str(tmp_path))
    lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)
    (path,) = _cache_files(tmp_path)
    path.write_bytes(garbage)
    rebuilt = lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)
    assert _parses(rebuilt)
    assert marshal.loads(path.read_bytes()[32:]) == rebuilt  # and written back whole, after its digest


def test_a_cache_with_a_flipped_bit_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: a flipped bit can leave marshal data that loads, with one wrong entry (a
    rule name, a state): every parse then failed with a KeyError and the file was kept."""
    import hashlib

    monkeypatch.setenv("KTIR_CACHE_DIR", str(tmp_path))
    lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)
    (path,) = _cache_files(tmp_path)
    good = path.read_bytes()
    for position in (5, len(good) // 2, len(good) - 1):  # in the digest, in the tables
        damaged = bytearray(good)
        damaged[position] ^= 0x04
        path.write_bytes(bytes(damaged))
        assert _parses(lalr.load_tables(_grammar_text(), GRAMMAR_STARTS))
        # rebuilt (lark numbers its states differently from build to build) and written back whole
        written = path.read_bytes()
        assert written != bytes(damaged) and hashlib.sha256(written[32:]).digest() == written[:32]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_cache_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path.chmod(0o500)
    monkeypatch.setenv("KTIR_CACHE_DIR", str(tmp_path / "sub"))
    try:
        assert lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)["rows"]
    finally:
        tmp_path.chmod(0o700)


def test_a_cache_path_that_is_a_file_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KTIR_CACHE_DIR", str(blocker))
    assert lalr.load_tables(_grammar_text(), GRAMMAR_STARTS)["rows"]


def test_driver_shapes_children_as_lark_does() -> None:
    """The cached tables and our callbacks give the AST that lark's own LALR parser, with
    the same lexer and callbacks, gives on every example and corpus file."""
    import functools

    import lark

    from ktir.syntax import parser as p
    from ktir.syntax.lexer import KtirLexer

    builder = p._Builder()  # the reference parser's, reset before each text

    class Adapter(lark.lexer.Lexer):  # lark's interface around our contextual lexer
        __future_interface__ = 1

        def __init__(self, conf: object) -> None:
            self.inner = KtirLexer(p._driver().terminals, functools.partial(p._type_hook, p._driver(), builder))

        def lex(self, state: Any, parser_state: Any) -> Any:
            return self.inner.lex(state.text.text, parser_state)

    reference = lark.Lark(
        p._grammar_text(),
        parser="lalr",
        lexer=Adapter,
        start=list(GRAMMAR_STARTS),
        transformer=builder,
        maybe_placeholders=False,
    )
    files = sorted((ROOT / "examples").glob("*.ktir")) + sorted((ROOT / "tests" / "corpus").rglob("*.ktir"))
    checked = 0
    for path in files:
        text = path.read_text()
        try:
            ours = p.parse(text)
        except p.ParseError:
            continue
        builder.reset()
        theirs = reference.parse(text, start="start")
        assert ours == theirs, path
        assert ours.operations and [op.loc for op in ours.walk()] == [op.loc for op in theirs.walk()], path
        checked += 1
    assert checked > 10
