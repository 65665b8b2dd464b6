"""An undefined value used twice by one op is one error (MLIR reports it once)."""

from __future__ import annotations

from ktir.verify import validate_text


def test_undefined_value_used_twice_is_reported_once() -> None:
    text = "func.func @f() -> f32 {\n  %0 = arith.addf %a, %a : f32\n  return %0 : f32\n}\n"
    _, diagnostics = validate_text(text, "t.ktir")
    undefined = [d for d in diagnostics if d.id == "ssa.undefined"]
    assert [(d.line, d.message) for d in undefined] == [(2, "use of undefined value '%a'")]
    # two different undefined values are two errors
    _, diagnostics = validate_text(text.replace("%a, %a", "%a, %b"), "t.ktir")
    assert sum(d.id == "ssa.undefined" for d in diagnostics) == 2
