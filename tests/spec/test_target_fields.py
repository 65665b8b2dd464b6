"""spec/targets.md requires target descriptions to state subnormal handling and alignment."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ktir.targets import load_target
from ktir.targets.schema import Target


def test_builtin_targets_state_subnormals_and_alignment() -> None:
    spyre = load_target("spyre")
    assert spyre.numerics is not None and spyre.numerics.subnormal_mode("f16") == "preserve"
    assert [m.alignment_bytes.value for m in spyre.memory if m.alignment_bytes] == [128, 128]
    wormhole = load_target("wormhole-n150")
    assert wormhole.numerics is not None and wormhole.numerics.subnormal_mode("bf16") == "flush-to-zero"


def test_alignment_must_be_a_power_of_two_and_modes_are_checked() -> None:
    data = load_target("spyre").model_dump(exclude_none=True)
    data["memory"][1]["alignment_bytes"] = {"value": 96, "source": "torch-spyre-glossary"}
    with pytest.raises(ValidationError, match="power of two"):
        Target.model_validate(data)
    data = load_target("spyre").model_dump(exclude_none=True)
    data["numerics"]["subnormals"]["value"] = "sometimes"
    with pytest.raises(ValidationError):
        Target.model_validate(data)
    data = load_target("spyre").model_dump(exclude_none=True)
    data["numerics"]["subnormals_by_dtype"] = {"f8": {"value": "flush-to-zero", "assumption": "subnormals"}}
    t = Target.model_validate(data)
    assert t.numerics is not None
    assert t.numerics.subnormal_mode("f8E4M3FN") == "flush-to-zero" and t.numerics.subnormal_mode("f16") == "preserve"
