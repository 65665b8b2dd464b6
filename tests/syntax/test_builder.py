"""The builder API makes valid modules whose printed text parses back to the same AST."""

from __future__ import annotations

import pytest

import ktir
from ktir.builder import Builder, BuildError, ssa
from ktir.dialects.registry import OPS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.verify import verify


def _box(*extents: int) -> af.IntegerSet:
    cons = []
    for i, n in enumerate(extents):
        cons += [af.constraint(af.dim(i), ">=", af.const(0)), af.constraint(af.dim(i), "<=", af.const(n - 1))]
    return af.IntegerSet(num_dims=len(extents), num_symbols=0, constraints=tuple(cons))


def build_scale_kernel() -> ktir.Module:
    b = Builder()
    with b.func("scale", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[4]):
        x, y = (ktir.builder.Value("%x", ty.INDEX), ktir.builder.Value("%y", ty.INDEX))
        (tid,) = b.tile_id()
        c0 = b.constant(0, ty.INDEX)
        vx = b.memory_view(x, [32, 64], [64, 1], ty.F16, coordinate_set=_box(32, 64))
        vy = b.memory_view(y, [32, 64], [64, 1], ty.F16, coordinate_set=_box(32, 64))
        tx = b.access_tile(vx, [ssa(tid) * 8, c0], _box(8, 64), [8, 64])
        ty_ = b.access_tile(vy, [ssa(tid) * 8, c0], _box(8, 64), [8, 64])
        data = b.load(tx, ty.F16)
        doubled = b.arith.addf(data, data)
        negative = b.arith.cmpf(doubled, data, predicate=at.IntegerAttr(value=4, type=ty.I64))
        out = b.arith.select(negative, data, doubled)
        one, four = b.constant(1, ty.INDEX), b.constant(4, ty.INDEX)
        with b.for_(c0, four, one):
            b.math.exp(out)
        b.store(out, ty_)
        b.func_return()
    return b.module


def test_built_module_round_trips_and_validates() -> None:
    module = build_scale_kernel()
    text = ktir.print_module(module)
    again = ktir.parse(text)
    assert ktir.print_module(again) == text
    assert [d for d in verify(again) if d.severity == "error"] == []
    assert "%2 = ktdp.construct_memory_view %x, sizes: [32, 64], strides: [64, 1]" in text
    assert "ktdp.construct_access_tile %2[%0 * 8, %1]" in text


def test_every_op_has_a_builder_method() -> None:
    b = Builder()
    for name, opdef in OPS.items():
        method = getattr(b.dialect(opdef.dialect), opdef.mnemonic)
        assert method.__doc__ == opdef.summary, name


def test_unknown_op_and_uninferable_results_are_clear_errors() -> None:
    b = Builder()
    with pytest.raises(AttributeError, match="KTIR defines no op arith.frobnicate"):
        _ = b.arith.frobnicate
    with pytest.raises(BuildError, match="cannot infer the result types of arith.extf"):
        b.arith.extf(ktir.builder.Value("%a", ty.F16))
    value = b.arith.extf(ktir.builder.Value("%a", ty.F16), result_types=[ty.F32])
    assert value.type == ty.F32
