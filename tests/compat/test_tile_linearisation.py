"""Tile ids number a grid with dimension 0 fastest (spec execution.md#the-grid), as ktir-cpu
numbers them; `ktdp.get_compute_tile_id` gives leading coordinates when asked for fewer than
the grid's rank, and one chosen coordinate with `{dim = k}`.

The kernels are built here so that their result depends on the numbering: inter-tile groups
of consecutive tile ids are the tiles sharing their last coordinate only when dimension 0
varies fastest. Each result is checked against numpy over random grids and data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.verify import validate_text

F32 = ty.F32
W = 8  # elements per tile


def _groups_of(size: int) -> af.IntegerSet:
    """(i)[g]: the `size` consecutive tile ids size g .. size g + size - 1."""
    i, g = af.dim(0), af.sym(0)
    return af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.Constraint(expr=i - g * size, is_equality=False),
        af.Constraint(expr=-i + g * size + (size - 1), is_equality=False)))


def _range(n: int) -> af.IntegerSet:
    g = af.dim(0)
    return af.IntegerSet(num_dims=1, num_symbols=0, constraints=(
        af.Constraint(expr=g, is_equality=False), af.Constraint(expr=-g + (n - 1), is_equality=False)))


def column_sums(g0: int, g1: int) -> ktir.Module:
    """On grid [g0, g1], tile (c0, c1) contributes X[c0, c1, :]; the g0 tiles of each group of
    g0 consecutive ids all-reduce their rows, and the group's tile with c0 = 0 stores the sum at
    OUT[c1, :]. With dimension 0 fastest a group is the tiles sharing c1, so OUT = X.sum(0)."""
    b = Builder()
    part = ty.tensor((1, 1, W), F32)
    future = ty.TileFutureType(partial_types=(part,), groups=at.IntegerSetAttr(value=_range(g1)))
    with b.func("column_sums", [("x", ty.INDEX), ("out", ty.INDEX)], grid=[g0, g1]) as (x, out):
        c0, c1 = b.tile_id(2, ["c0", "c1"])
        zero = b.index(0, "c0_")
        xv = b.memory_view(x, [g0, g1, W], [g1 * W, W, 1], F32, name="xv")
        ov = b.memory_view(out, [1, g1, W], [g1 * W, W, 1], F32, name="ov")
        row = b.load(b.access_tile(xv, [c0, c1, zero], box(1, 1, W), [1, 1, W], name="xt"), F32, "row")
        with b.produce(_groups_of(g0), future, name="fut"):
            b.yield_(row, op="ktdp.yield_partial")
        (fut,) = b.last_results
        fzero = b.constant(0.0, F32, "fzero")
        ident = b.fill(fzero, b.empty(part, "e"), "ident")
        with b.reduce_tiles(fut, _groups_of(g0), [ident], ["l", "r"], ["sum"]) as (lhs, rhs):
            (s,) = b.create("arith.addf", [lhs, rhs], [part], result_names=["s"])
            b.yield_(s, op="ktdp.yield_reduced")
        (total,) = b.last_results
        with b.if_(b.cmp("arith.cmpi", "eq", c0, zero, "first")):
            b.store(total, b.access_tile(ov, [zero, c1, zero], box(1, 1, W), [1, 1, W], name="ot"))
        b.func_return()
    return b.module


def coordinates(g0: int, g1: int) -> ktir.Module:
    """Tile (c0, c1) writes its coordinates three ways into OUT[c0, c1, :]: from the 2-result
    form, from the 1-result form (the leading coordinate) and from `{dim = 1}`."""
    b = Builder()
    with b.func("coordinates", [("out", ty.INDEX)], grid=[g0, g1]) as (out,):
        c0, c1 = b.tile_id(2, ["c0", "c1"])
        (lead,) = b.tile_id(1, ["lead"])
        (second,) = b.create("ktdp.get_compute_tile_id", [], [ty.INDEX], {"dim": at.IntegerAttr(value=1)},
                             result_names=["second"])
        zero = b.index(0, "z")
        ov = b.memory_view(out, [g0, g1, 4], [g1 * 4, 4, 1], ty.INDEX, name="ov")
        for k, v in enumerate((c0, c1, lead, second)):
            t = b.access_tile(ov, [c0, c1, ssa(zero) + k], box(1, 1, 1), [1, 1, 1], name=f"t{k}")
            splat = b.create("tensor.splat", [v], [ty.tensor((1, 1, 1), ty.INDEX)], result_names=[f"v{k}"])[0]
            b.store(splat, t)
        b.func_return()
    return b.module


def _valid(module: ktir.Module) -> ktir.Module:
    text = ktir.print_module(module)
    _, diagnostics = validate_text(text, "built.ktir")
    assert not [d for d in diagnostics if d.severity == "error"], text
    return ktir.parse(text, "built.ktir")


@settings(max_examples=12, deadline=None)
@given(g0=st.integers(2, 4), g1=st.integers(2, 3), seed=st.integers(0, 2**16))
def test_inter_tile_groups_follow_the_linearisation(g0: int, g1: int, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((g0, g1, W)).astype(np.float32)
    result = ri.run(_valid(column_sums(g0, g1)), args={"x": x, "out": np.zeros((1, g1, W), np.float32)})
    # a row-major numbering would sum other tiles' rows: the groups would mix values of c1
    np.testing.assert_allclose(result.outputs["out"][0], x.sum(axis=0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("g0", "g1"), [(3, 2), (2, 5), (1, 4)])
def test_tile_coordinates_fewer_results_and_dim(g0: int, g1: int) -> None:
    result = ri.run(_valid(coordinates(g0, g1)), args={"out": np.zeros((g0, g1, 4), np.int64)})
    got = result.outputs["out"]
    c0, c1 = np.meshgrid(np.arange(g0), np.arange(g1), indexing="ij")
    np.testing.assert_array_equal(got[..., 0], c0)
    np.testing.assert_array_equal(got[..., 1], c1)
    np.testing.assert_array_equal(got[..., 2], c0)  # one result on a rank-2 grid: the leading coordinate
    np.testing.assert_array_equal(got[..., 3], c1)  # {dim = 1}


def test_machine_numbers_dimension_zero_fastest() -> None:
    from reference_interp.runtime import Machine, Options

    m = Machine((2, 3), Options())
    assert [m.coords(t) for t in range(6)] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
