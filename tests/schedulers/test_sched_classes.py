"""The registry of kernel classes (`schedulers.classes`): every class goes through the same proof.

Every registered class (built in, or a plugin's through the entry-point group
`ktir.kernel_classes`) gives example kernels; each is scheduled by every built-in scheduler,
must be taken by that class, proven legal and equal to its input in the interpreter. A
plugin's rewrite is run like a built-in one, and one that races is not returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import EntryPoint

import pytest

import ktir
import schedulers
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from schedulers import classes
from schedulers import single_tile as nat
from schedulers.check import check_equivalent
from schedulers.classes import Forms, Match, kernel_classes, natural_match
from schedulers.proof import prove


def _examples() -> list[tuple[str, int]]:
    return [(c.name, i) for c in kernel_classes() for i in range(len(c.examples()))]


@pytest.mark.parametrize("scheduler", ["baseline", "exact"])
@pytest.mark.parametrize("name,index", _examples())
def test_every_class_is_proven_on_its_examples(name: str, index: int, scheduler: str, spyre: Target) -> None:
    cls = next(c for c in kernel_classes() if c.name == name)
    before = ktir.parse(print_module(cls.examples()[index]), f"{name}.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.3))
    r = result.report
    assert r.applied and r.kernel_class == name, (r.kernel_class, r.reason)
    assert prove(before, result.module) is None
    verdict = check_equivalent(before, result.module, seed=1)
    assert verdict.ok, verdict.message


# ---------------------------------------------------------------------- a plugin's rewrite


class Swish:
    """A plugin's class: x * sigmoid(x) kernels, scheduled with the natural machinery but a
    rewrite of its own (`bad`: every tile stores everything, which the proof must refuse)."""

    name = "swish"

    def __init__(self, bad: bool = False) -> None:
        self.bad = bad

    def match(self, forms: Forms, options: schedulers.ScheduleOptions, target: Target) -> Match | str:
        from schedulers.natural import NaturalKernel, natural_reason_or_kernel

        fn = forms.fn(forms.given)
        if not str(getattr(fn.attributes.get("sym_name"), "value", "")).startswith("swish"):
            return "not a swish"
        k = natural_reason_or_kernel(forms.given, fn, options.sizes)
        assert isinstance(k, NaturalKernel)
        found = natural_match(k, target)
        assert isinstance(found, Match)
        emit = found.emit
        if self.bad:
            def emit(p: dict[str, int]) -> Module:  # the input's body on every tile: a replicated store
                out = forms.given.model_copy(deep=True)
                f = next(iter(out.functions()))
                f.attributes["grid"] = ktir.ir.attributes.ArrayAttr(
                    elements=(ktir.ir.attributes.IntegerAttr(value=4, type=None),))
                return out
        return Match("swish", found.space, emit, found.dims, ["rewritten by the swish plugin"], found.timeline)

    def examples(self) -> Sequence[Module]:
        return [swish(64, 256)]


def swish(R: int, C: int) -> Module:
    k = nat.Kernel("swish", ["x", "y"])
    x = k.load(k.view("x", [R, C], "f32"))
    one = k.scalar(1.0)
    (y,) = k.generic([x], [R, C], [nat.amap(2, 0, 1), nat.amap(2, 0, 1)], ["parallel"] * 2, lambda kk, v: [
        kk.op("arith.divf", v[0], kk.op("arith.addf", one, kk.op("math.exp", kk.op("arith.negf", v[0]))))])
    k.store(y, k.view("y", [R, C], "f32"))
    return k.done()


def _plugged(monkeypatch: pytest.MonkeyPatch, value: str, obj: object) -> None:
    """Register `obj` as if an installed package declared it in the entry-point group."""
    import sys
    import types

    mod = types.ModuleType("swish_plugin")
    mod.CLASS = obj  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "swish_plugin", mod)
    ep = EntryPoint(name="swish", value=value, group=classes.GROUP)
    monkeypatch.setattr(classes, "entry_points", lambda group: [ep] if group == classes.GROUP else [])


def test_a_plugin_class_is_tried_first_and_runs_like_a_builtin(monkeypatch: pytest.MonkeyPatch, spyre: Target) -> None:
    _plugged(monkeypatch, "swish_plugin:CLASS", Swish())
    assert [c.name for c in kernel_classes()][0] == "swish"
    before = ktir.parse(print_module(swish(64, 256)), "swish.ktir")
    result = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(check=True))
    r = result.report
    assert r.applied and r.kernel_class == "swish" and "rewritten by the swish plugin" in r.notes
    assert r.schedule is not None and r.schedule.grid != [1] and result.check and result.check.ok


def test_a_plugin_rewrite_that_races_is_not_returned(monkeypatch: pytest.MonkeyPatch, spyre: Target) -> None:
    _plugged(monkeypatch, "swish_plugin:CLASS", Swish(bad=True))
    before = ktir.parse(print_module(swish(64, 256)), "swish.ktir")
    result = schedulers.schedule(before, spyre, "exact")
    r = result.report
    assert not r.applied and result.module == before
    assert "could not be proven legal" in (r.reason or "") and "both write element" in (r.reason or ""), r.reason


def test_a_broken_plugin_class_is_named(monkeypatch: pytest.MonkeyPatch, spyre: Target) -> None:
    _plugged(monkeypatch, "swish_plugin:MISSING", None)
    with pytest.raises(schedulers.ScheduleError, match="kernel class plugin 'swish'"):
        schedulers.schedule(ktir.parse(print_module(swish(8, 64)), "s.ktir"), spyre, "exact")
