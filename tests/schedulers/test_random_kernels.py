"""Random natural-form kernels (`benchmarks/kernelgen`) scheduled by every built-in scheduler.

The small, fast version of `benchmarks/bench_schedule.py --random N`: hypothesis draws kernels
of every kind (elementwise chains with broadcasts, reductions from every init source, several
results, odd transposes, matmuls of any transposition, row loops using the index as data,
scans, gathers); each is first checked against its numpy oracle (the generator is checked
too), then scheduled by baseline, exact and search, and every applied schedule must give the
unscheduled kernel's outputs in the interpreter, without a race, and must not crash.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import reference_interp as ri
from ktir.ir import attributes as at
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from ktir.verify import validate_text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kernelgen  # noqa: E402
from kernelgen.campaign import try_schedulers  # noqa: E402

SCHEDULERS = ("baseline", "exact", "search")

# Wrong outputs of the current engine that are reported (notes/FINDINGS.md, saved under
# notes/sched-failures/) and not yet fixed: (kind, feature the kernel has, scheduler) -> (the finding,
# the seed of `kernelgen.random_kernel` that shows it). Anything else wrong, racy or crashing fails
# the test; an entry whose seed no longer fails fails too (remove it when the engine is fixed).
# Emptied 2026-12-04 on sched-core 91e95ae: the row loop with its index through linalg.fill and
# the independent result of another shape (both reported by sched-gen) are scheduled right.
KNOWN: dict[tuple[str, str, str], tuple[str, int]] = {}


def _known(kernel: kernelgen.Generated, scheduler: str) -> str | None:
    for (kind, feature, name), (why, _) in KNOWN.items():
        if kernel.kind == kind and feature in kernel.features and name == scheduler:
            return why
    return None


def test_every_known_failure_still_fails(spyre: Target) -> None:
    """A known class must be one the engine still gets wrong: its reproducer seed still fails."""
    fixed = []
    for (kind, feature, name), (why, seed) in KNOWN.items():
        kernel = kernelgen.random_kernel(seed, (kind,))
        assert feature in kernel.features, (kind, feature, seed, sorted(kernel.features))
        (outcome,) = try_schedulers(kernel, spyre, (name,), 0.05, kernelgen.check_generator(kernel))
        if outcome.status not in ("wrong", "racy", "error"):
            fixed.append(f"{kind} / {feature} / {name} (seed {seed}) is {outcome.status} now: {why}")
    assert not fixed, "remove from KNOWN:\n" + "\n".join(fixed)


@settings(max_examples=32, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kernel=kernelgen.kernels())
def test_every_schedule_of_a_random_kernel_is_right(kernel: kernelgen.Generated, spyre: Target) -> None:
    reference = kernelgen.check_generator(kernel)
    outcomes = try_schedulers(kernel, spyre, SCHEDULERS, 0.05, reference)
    bad = [f"{o.scheduler}: {o.status}: {o.reason}" for o in outcomes
           if o.status in ("wrong", "racy", "error") and _known(kernel, o.scheduler) is None]
    assert not bad, f"{kernel.kind} kernel {kernel.features}:\n" + "\n".join(bad) + "\n" + kernel.text()


@settings(max_examples=16, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kernel=kernelgen.kernels())
def test_lockstep_runs_a_scheduled_kernel_as_the_per_tile_run(kernel: kernelgen.Generated, spyre: Target) -> None:
    """The interpreter's lockstep mode on kernels nobody wrote for it: the exact schedule of a
    random kernel gives, in lockstep and per tile, the same bytes, statistics and errors
    (benchmarks/lockstep_campaign.py is the large version; it found reductions summed in
    another order)."""
    from lockstep_campaign import difference, outcome

    import ktir
    import schedulers

    result = schedulers.schedule(ktir.parse(kernel.text()), spyre, "exact",
                                 schedulers.ScheduleOptions(time_budget=0.05, seed=kernel.seed or 0, sizes=kernel.sizes))
    if not result.report.applied:
        return
    args = kernel.args()
    assert difference(outcome(result.module, args, False), outcome(result.module, args, "always")) is None, kernel.text()


@pytest.mark.parametrize("seed", [7700306, 7700690])
def test_the_campaign_finds_stay_fixed(seed: int, spyre: Target) -> None:
    """The two kernels of the campaign's first run that differed (a reduction over the middle
    dimension, split over the tiles, summed in another order in lockstep)."""
    from lockstep_campaign import difference, outcome

    import ktir
    import schedulers

    kernel = kernelgen.random_kernel(seed)
    assert kernel.kind == "multi_output"
    result = schedulers.schedule(ktir.parse(kernel.text()), spyre, "exact",
                                 schedulers.ScheduleOptions(time_budget=2.0, seed=seed, sizes=kernel.sizes))
    assert result.report.applied
    args = kernel.args()
    locked = outcome(result.module, args, "always")
    assert isinstance(locked, ri.RunResult) and locked.lockstep
    assert difference(outcome(result.module, args, False), locked) is None


@pytest.mark.parametrize("kind", kernelgen.KIND_NAMES)
def test_each_kind_verifies_and_matches_its_oracle(kind: str) -> None:
    for seed in range(3):
        kernel = kernelgen.generate(kind, random.Random(seed), seed)
        _, diagnostics = validate_text(print_module(kernel.module), f"{kind}.ktir")
        assert not [d for d in diagnostics if d.severity == "error"], [str(d) for d in diagnostics]
        kernelgen.check_generator(kernel)
        assert kernel.outputs and all(o.expected.size for o in kernel.outputs.values())


def test_the_oracle_is_not_the_interpreter() -> None:
    """A wrong oracle is caught: the interpreter's outputs are compared with numpy's, not with themselves."""
    kernel = kernelgen.generate("reduction", random.Random(3), 3)
    name, out = next(iter(kernel.outputs.items()))
    out.expected.flat[0] += 10 * out.atol + 1e-3
    with pytest.raises(kernelgen.GeneratorMismatch, match=name):
        kernelgen.check_generator(kernel)


def test_a_schedule_that_races_is_racy(spyre: Target) -> None:
    """The same whole-tensor kernel on two tiles: both store every element."""
    kernel = kernelgen.generate("elementwise", random.Random(1), 1)
    reference = kernelgen.check_generator(kernel)
    racy = kernelgen.generate("elementwise", random.Random(1), 1).module
    racy.operations[0].attributes["grid"] = at.ArrayAttr(elements=(at.IntegerAttr(value=2),))
    verdict = kernelgen.judge(kernel, racy, reference)
    assert verdict.status == "racy", verdict


def test_a_wrong_or_missing_element_is_wrong() -> None:
    kernel = kernelgen.generate("permute", random.Random(2), 2)
    reference = kernelgen.check_generator(kernel)
    assert kernelgen.judge(kernel, kernel.module, reference).status == "ok"
    name = next(iter(kernel.outputs))
    off = {k: v.astype(np.float64) for k, v in reference.items()}
    off[name].flat[-1] += 1.0
    assert kernelgen.judge(kernel, kernel.module, off).status == "wrong"
    unwritten = {k: v.astype(np.float64) for k, v in reference.items()}
    unwritten[name].flat[0] = np.nan
    assert "differ" in (kernelgen.compare(unwritten, kernel) or "")


def test_a_schedule_that_writes_an_input_is_wrong() -> None:
    """An input the kernel only reads must come out of the scheduled run as it went in."""
    kernel = kernelgen.generate("elementwise", random.Random(4), 4)
    got = kernelgen.run_kernel(kernel.module, kernel, everything=True)
    assert kernelgen.verdict.clobbered(got, kernel) is None
    name = next(n for n in kernel.inputs if n not in kernel.outputs)
    got[name] = got[name].copy()
    got[name].flat[-1] += 1
    assert name in (kernelgen.verdict.clobbered(got, kernel) or "")
