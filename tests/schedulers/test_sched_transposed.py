"""Matmuls of every operand transposition are the same kernel class as the plain one.

A transposed operand read whole from memory is read through a transposed view instead
(`schedulers.canonical.transposes_as_views`): `linalg.matmul_transpose_a/b`, a
`linalg.transpose` before the product, or `indexing_maps` that transpose (or spell out the
default) all become a plain `linalg.matmul` of views whose strides say where each element is.
Each is classed `matmul` (issue 28: the class no longer depends on an optional default
attribute), starts from any constant, and computes what its input does.
"""

from __future__ import annotations

import pytest

import ktir
import schedulers
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from ktir.verify import validate_text
from schedulers import single_tile as nat
from schedulers.check import check_equivalent
from schedulers.proof import prove


def _parsed(m: ktir.Module) -> ktir.Module:
    text = print_module(m)
    _, diags = validate_text(text, "mm.ktir")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    return ktir.parse(text, "mm.ktir")


@pytest.mark.parametrize("spelling", ["named", "maps", "generic"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("scheduler", ["baseline", "exact"])
def test_every_transposition_is_a_matmul_and_right(ta: bool, tb: bool, spelling: str, scheduler: str,
                                                   spyre: Target) -> None:
    before = _parsed(nat.matmul_transposed(96, 128, 192, ta, tb, init=-1.5, spelling=spelling))
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.3))
    r = result.report
    assert r.applied and r.kernel_class == "matmul", (r.kernel_class, r.reason)
    assert r.schedule is not None and r.schedule.grid != [1]
    verdict = check_equivalent(before, result.module, seed=3)
    assert verdict.ok, verdict.message
    assert prove(before, result.module) is None


def test_default_maps_spelled_out_are_the_plain_matmul(spyre: Target) -> None:
    plain = schedulers.schedule(_parsed(nat.matmul_transposed(64, 256, 128, False, False)), spyre, "exact").report
    spelled = schedulers.schedule(_parsed(nat.matmul_transposed(64, 256, 128, False, False, spelling="maps")), spyre,
                                  "exact").report
    assert plain.kernel_class == spelled.kernel_class == "matmul"
    assert plain.schedule == spelled.schedule


def test_a_split_k_is_not_taken_from_a_non_zero_start(spyre: Target) -> None:
    """Each split's partial starts from 0; a start of C added once per split would be wrong, so the
    split schedules are not offered (a decode product, where they would be)."""
    before = _parsed(nat.matmul_transposed(1, 256, 4096, False, False, dtype="f16", init=2.0))
    result = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert result.report.applied and result.check and result.check.ok
    assert "inter_tile_reduce" not in print_module(result.module)
