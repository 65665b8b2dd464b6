"""A loop whose trip count alone passes the step limit fails on entry, with the verdict the
step counter itself would reach after running up to the limit."""

from __future__ import annotations

import pytest

import reference_interp
from ktir.builder import Builder
from reference_interp import KtirRuntimeError
from reference_interp.ops import scf


def _loop(trips: int, nested: int = 0):  # type: ignore[no-untyped-def]
    b = Builder()
    with b.func("spin", [], grid=[1]):
        lo, hi, one = b.index(0), b.index(trips), b.index(1)
        with b.for_(lo, hi, one) as (i,):
            x = b.arith.addi(i, one)
            for _ in range(nested):
                x = b.arith.muli(x, one)
        b.func_return()
    return b.module


def _verdict(module, limit: int) -> str:  # type: ignore[no-untyped-def]
    try:
        reference_interp.run(module, args={}, step_limit=limit)
    except KtirRuntimeError as e:
        return e.kind
    return "ok"


@pytest.mark.parametrize("trips,nested", [(1, 0), (7, 0), (50, 2), (300, 5)])
def test_the_early_verdict_is_the_step_counters(trips: int, nested: int, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _loop(trips, nested)
    steps = reference_interp.run(module, args={}).stats[0].ops  # what the whole run executes
    for limit in (steps - 1, steps, steps + 1, steps // 2, 1):
        early = _verdict(module, limit)
        with monkeypatch.context() as m:
            m.setattr(scf, "_within_step_limit", lambda *a: None)  # the counter alone decides
            counted = _verdict(module, limit)
        assert early == counted, (trips, nested, limit, steps)
        assert early == ("ok" if limit >= steps else "step-limit")


def test_a_runaway_loop_fails_on_entry_naming_the_loop() -> None:
    with pytest.raises(KtirRuntimeError) as info:
        reference_interp.run(_loop(10**15), args={})
    assert info.value.kind == "step-limit" and info.value.op is not None and info.value.op.name == "scf.for"
    assert "1,000,000,000,000,000 iterations" in str(info.value)
