"""A kernel of one element (a lowered program's scalar step, e.g. a cache position plus one) has
nothing to divide: the schedulers say so, instead of declining with an empty list of blockers."""

from __future__ import annotations

import pytest

import ktir
import schedulers
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from schedulers import single_tile as nat


def add(shape: list[int]) -> Module:
    k = nat.Kernel("add", ["x", "y"])
    x = k.load(k.view("x", shape, "f32"))
    k.store(k.op("arith.addf", x, x), k.view("y", shape, "f32"))
    return ktir.parse(print_module(k.done()), "add.ktir")


@pytest.mark.parametrize("shape", [[1], [1, 1]])
def test_one_element_is_nothing_to_divide(shape: list[int], spyre: Target) -> None:
    r = schedulers.schedule(add(shape), spyre, "exact").report
    assert not r.applied
    assert r.reason is not None and r.reason.startswith("nothing to divide"), r.reason


def test_two_elements_are_divided(spyre: Target) -> None:
    r = schedulers.schedule(add([1, 2]), spyre, "exact").report
    assert r.reason is None or not r.reason.startswith("nothing to divide"), r.reason
