"""blank_lines finds blank-line runs with regexes; it must keep exactly the lines the
plain line-by-line reading of its rule keeps, and attach must give comments to the ops
it gave them to when it looked at every op."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ktir.syntax.comments import blank_lines
from ktir.syntax.parser import parse


def _by_lines(text: str) -> list[tuple[int, int, str]]:
    """The rule read line by line: the first blank line of a run, after some content,
    before a line that exists and does not start with `}`."""
    lines = [line.strip() for line in text.split("\n")]
    kept = []
    for i, line in enumerate(lines):
        if line or i == 0 or not lines[i - 1] or not any(lines[:i]):
            continue
        after = next((x for x in lines[i + 1 :] if x), "")
        if after and not after.startswith("}"):
            kept.append((i + 1, 0, ""))
    return kept


_PIECES = st.sampled_from(["\n", "  \n", "a\n", "}\n", " \t\r\n", "x", "\n\n", "}", " ", "\t", "// c\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=16).map("".join))
def test_blank_lines_keeps_what_the_line_rule_keeps(text: str) -> None:
    assert blank_lines(text) == _by_lines(text)


def test_blank_lines_examples() -> None:
    assert blank_lines("\n\na\n\n\nb\n\n}\n\n") == [(4, 0, "")]
    assert blank_lines("a\n  \t\nb") == [(2, 0, "")]
    assert blank_lines("a\n\n") == []


def test_comments_after_the_last_op_and_between_ops() -> None:
    text = (
        "// head\n"
        "func.func @f() {\n"
        "  // before return\n"
        "  func.return // trailing\n"
        "}\n"
        "// second\n"
        "func.func @g() {\n"
        "  func.return\n"
        "}\n"
        "// tail\n"
    )
    module = parse(text)
    f, ret_f, g, _ = module.walk()
    assert f.comments == ["// head"]
    assert ret_f.comments == ["// before return"] and ret_f.trailing_comment == "// trailing"
    assert g.comments == ["// second"]
    assert module.trailing_comments == ["// tail"]
