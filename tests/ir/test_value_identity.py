"""Equality, hashing and copying of IR values (issue 33): a NaN element compares by its bits,
dictionaries by their entries whatever their order, and comparing or copying a module costs
no Python recursion per level of regions."""

from __future__ import annotations

import copy
import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ktir.builder import Builder
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.floats import float_from_bits
from ktir.ir.operation import Block, Module, Operation, Region

F32 = ty.FloatType(kind="f32")
T2 = ty.TensorType(shape=(2,), element_type=F32)


def _dense(*bits: int) -> at.DenseAttr:
    # each call makes new float objects, as two parses of the same text do
    return at.DenseAttr(type=T2, values=tuple(float_from_bits(b, F32) for b in bits))


def test_a_nan_element_equals_a_nan_of_the_same_bits() -> None:
    a, b = _dense(0x7FC00000, 0x3F800000), _dense(0x7FC00000, 0x3F800000)
    assert a.values[0] is not b.values[0] and math.isnan(a.values[0])
    assert a == b and hash(a) == hash(b)
    assert a != _dense(0x7FC00001, 0x3F800000)  # another payload: another value
    assert a != _dense(0x3F800000, 0x3F800000)
    splat = at.DenseAttr(type=T2, values=float_from_bits(0xFFC00000, F32))
    assert splat == at.DenseAttr(type=T2, values=float_from_bits(0xFFC00000, F32))


@given(st.lists(st.sampled_from([0x7FC00000, 0xFFC00000, 0x7F800000, 0x0, 0x80000000, 0x3F800000]), min_size=2, max_size=2))
def test_dense_equality_and_hash_agree(bits: list[int]) -> None:
    a, b = _dense(*bits), _dense(*bits)
    assert a == b and hash(a) == hash(b)


@given(st.permutations([("a", at.UnitAttr()), ("b", at.IntegerAttr(value=1)), ("z", at.StringAttr(value="s")), ("é", at.BoolAttr(value=True))]))
def test_a_dictionary_is_its_entries_in_any_order(entries: list[tuple[str, at.Attribute]]) -> None:
    d = at.DictAttr(entries=tuple(entries))
    assert d == at.DictAttr(entries=(("a", at.UnitAttr()), ("b", at.IntegerAttr(value=1)), ("z", at.StringAttr(value="s")),
                                     ("é", at.BoolAttr(value=True))))
    assert [k for k, _ in d.entries] == sorted(k for k, _ in entries)


def _deep_module(levels: int, marker: int) -> Module:
    """A function holding `levels` scf.execute_region nested in one another (deeper than
    the parser accepts: built in Python)."""
    inner = [Operation(name="arith.constant", results=["%c"], result_types=[ty.I64],
                       attributes={"value": at.IntegerAttr(value=marker, type=ty.I64)}),
             Operation(name="scf.yield")]
    for _ in range(levels):
        inner = [Operation(name="scf.execute_region", regions=[Region(blocks=[Block(operations=inner)])]), Operation(name="scf.yield")]
    b = Builder()
    with b.func("f", []):
        b.func_return()
    fn = b.module.operations[0]
    fn.regions[0].blocks[0].operations[:0] = inner[:1]
    return b.module


@pytest.mark.parametrize("levels", [10, 64, 2000])
def test_comparing_and_copying_deep_modules_needs_no_recursion(levels: int) -> None:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        a, b, c = _deep_module(levels, 1), _deep_module(levels, 1), _deep_module(levels, 2)
        assert a == b and a != c
        if levels <= 64:  # as deep as a parsed module may be (the copy recurses, a few frames a level)
            d = copy.deepcopy(a)
            assert d == a and d.operations[0] is not a.operations[0]
            assert d.operations[0].attributes is not a.operations[0].attributes
            d.operations[0].attributes["sym_name"] = at.StringAttr(value="g")
            assert d != a
    finally:
        sys.setrecursionlimit(old)
