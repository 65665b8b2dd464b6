"""Traits are objects code reads; every op declares a cost class that the cost model reads."""

from __future__ import annotations

import pytest

from ktir.dialects import traits as tr
from ktir.dialects.base import OpDef
from ktir.dialects.cost import CostClass
from ktir.dialects.registry import OPS, cost_class, ops_of_cost


def test_trait_objects_read_like_their_old_string_spelling() -> None:
    yield_op = OPS["scf.yield"]
    assert tr.TERMINATOR in yield_op.traits and "Terminator" in yield_op.traits
    assert yield_op.has_trait(tr.TERMINATOR) and yield_op.has_trait("Terminator")
    assert tr.PURE not in yield_op.traits and "Pure" not in yield_op.traits
    assert [str(t) for t in sorted(OPS["math.exp"].traits)] == ["Elementwise", "Pure", "SameOperandsAndResultType"]


def test_every_declared_trait_is_a_known_object() -> None:
    for op in OPS.values():
        for t in op.traits:
            assert isinstance(t, tr.Trait) and tr.ALL[t.name] is t, (op.name, t)


def test_an_unknown_trait_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown trait 'Pur'"):
        OpDef(name="x.y", format="UNARY", summary="s", traits=frozenset({"Pur"}))


def test_region_traits_drive_the_verifier() -> None:
    assert {n for n, op in OPS.items() if tr.ISOLATED_FROM_ABOVE in op.traits} == {"builtin.module", "func.func"}
    variadic = {n for n, op in OPS.items() if tr.VARIADIC_REGIONS in op.traits}
    assert "scf.reduce" in variadic and "linalg.matmul" in variadic and "scf.for" not in variadic


def test_every_op_has_a_cost_class() -> None:
    missing = sorted(n for n, op in OPS.items() if not isinstance(op.cost, CostClass))
    assert not missing, f"ops without a cost class: {missing}"


def test_cost_classes_are_what_the_cost_model_reads() -> None:
    from ktir.targets import from_interp

    assert cost_class("math.exp") is CostClass.TRANSCENDENTAL and cost_class("math.absf") is CostClass.VECTOR
    assert cost_class("return") is CostClass.FREE  # aliases too
    assert cost_class("nope.op") is None
    assert ops_of_cost(CostClass.TRANSCENDENTAL) == from_interp.TRANSCENDENTAL
    assert ops_of_cost(CostClass.MATMUL) == from_interp.MATMULS
    assert "linalg.matmul" in from_interp.MATMULS and "arith.divf" in from_interp.TRANSCENDENTAL
