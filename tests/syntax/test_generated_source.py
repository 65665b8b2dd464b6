"""Code generated from the declarative assembly formats is debuggable: a traceback raised
inside a generated parser callback or printer names its file and line and shows the line."""

from __future__ import annotations

import traceback

import pytest

from ktir.syntax import assembly as asm
from ktir.syntax import parser, printer


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(exc.__traceback__))


@pytest.mark.parametrize("name", sorted(asm.formats()))
def test_a_generated_parser_callback_shows_its_source_in_a_traceback(name: str) -> None:
    rule = asm.formats()[name].rule
    callback = getattr(parser._Builder, rule)
    with pytest.raises(Exception) as caught:
        callback(None, [])  # no children: the generated code fails on its first read of them
    frame = _frames(caught.value)[-1]
    assert frame.filename == f"<ktir generated parser callback of assembly format {name}>"
    source_lines = parser.callback_source(name).splitlines()
    assert frame.line and frame.line == source_lines[frame.lineno - 1].strip()
    assert f"line {frame.lineno}" in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize("name", sorted(asm.formats()))
def test_a_generated_printer_shows_its_source_in_a_traceback(name: str) -> None:
    generated = printer._FORMATS[name]
    with pytest.raises(Exception) as caught:
        generated(None, None, None, 0, "")  # no op: the generated code fails on its first read of it
    frame = _frames(caught.value)[-1]
    assert frame.filename == f"<ktir generated printer of assembly format {name}>"
    assert frame.line and frame.line == printer.printer_source(name).splitlines()[frame.lineno - 1].strip()


@pytest.mark.parametrize("name", sorted(asm.formats()))
def test_a_generated_fast_reader_shows_its_source_in_a_traceback(name: str) -> None:
    from ktir.syntax import fastparse

    reader = fastparse._HANDLERS[name]
    with pytest.raises(Exception) as caught:
        reader(None, None)  # no parser: the generated code fails on its first read of it
    frame = _frames(caught.value)[-1]
    assert frame.filename == f"<ktir generated fast reader of assembly format {name}>"
    assert frame.line and frame.line == fastparse.reader_source(name).splitlines()[frame.lineno - 1].strip()


def test_every_declarative_format_is_read_by_generated_code_and_only_those() -> None:
    """The production parser codes no declarative format by hand: each one's reader is
    generated from its description; the hand-written readers are the irregular formats'."""
    from ktir.syntax import fastparse

    generated = {
        name for name, fn in fastparse._HANDLERS.items() if fn.__code__.co_filename.startswith("<ktir generated fast reader")
    }
    assert generated == set(asm.formats())
    assert set(fastparse._HANDLERS) - generated == set(asm.HAND_WRITTEN)
