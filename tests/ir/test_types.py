"""Types reject what KTIR has no meaning for, at construction, not later with a KeyError."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ktir.ir import types as ty


@pytest.mark.parametrize("kind", ty.FLOAT_KINDS)
def test_every_float_kind_has_a_width(kind: str) -> None:
    assert ty.FloatType(kind=kind).width > 0


@pytest.mark.parametrize("kind", ["f17", "F32", "", "float", "i32"])
def test_unknown_float_kind_is_rejected(kind: str) -> None:
    with pytest.raises(ValidationError, match="unknown float type"):
        ty.FloatType(kind=kind)


def test_the_parser_still_reports_an_unknown_float_as_a_diagnostic() -> None:
    import ktir

    with pytest.raises(ktir.KtirError):
        ktir.parse("func.func @f(%a: f17) { return }")


def test_i1_like_keeps_the_shape() -> None:
    assert ty.i1_like(ty.tensor((2, 3), ty.F32)) == ty.tensor((2, 3), ty.I1)
    assert ty.i1_like(ty.INDEX) == ty.I1
