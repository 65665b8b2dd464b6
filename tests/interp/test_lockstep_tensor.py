"""Lockstep's laned index arithmetic and tensor slices (reference_interp/lockstep_tensor.py):
`affine.apply`/`min`/`max` of the tile id and a loop's induction variable, and
`extract_slice`/`insert_slice` at the offsets they give, against the per-tile run (the same
bytes, statistics, errors: test_lockstep._compare). The maps are drawn with floordiv,
ceildiv and mod, coefficients that put some lanes out of bounds and some past the index
range; the offsets land in and out of the tensors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.builder import Builder, box, ssa
from ktir.dialects.names import Affine
from ktir.ir import affine as af
from ktir.ir import types as ty

from .helpers import FAST
from .test_lockstep import _compare


@dataclass(frozen=True)
class Spec:
    tiles: int
    rows: int  # rows per tile: an scf.for over them (vectorised: one more lane dimension)
    n: int  # row length
    c: int  # slice length
    src_map: af.AffineMap  # (tile, row)[s0] -> offset of the slice read
    dst_map: af.AffineMap  # -> offset it is written at (several results: affine.min/max)
    dst_op: str
    symbol: int
    laned_source: bool  # slice a row that differs between tiles, else one row every tile reads
    static_src: int | None = None  # a constant offset for the slice read instead of src_map


def _build(s: Spec) -> ktir.Module:
    f32 = ty.F32
    rows = s.tiles * s.rows
    b = Builder()
    with b.func("k", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[s.tiles]) as (xp, yp):
        (t,) = b.tile_id(1)
        xv = b.memory_view(xp, [rows, s.n], [s.n, 1], f32, coordinate_set=box(rows, s.n))
        yv = b.memory_view(yp, [rows, s.n], [s.n, 1], f32, coordinate_set=box(rows, s.n))
        sym = b.index(s.symbol)
        with b.for_(b.index(0), b.index(s.rows), b.index(1)) as (r,):
            row = b.arith.addi(b.arith.muli(t, b.index(s.rows)), r)
            src_row = row if s.laned_source else b.index(0)
            x = b.load(b.access_tile(xv, [ssa(src_row), 0], box(1, s.n), [1, s.n]), f32)
            y = b.load(b.access_tile(yv, [ssa(row), 0], box(1, s.n), [1, s.n]), f32)
            o1 = b.create(Affine.apply, [t, r, sym], [ty.INDEX], {"map": s.src_map})[0]
            o2 = b.create(s.dst_op, [t, r, sym], [ty.INDEX], {"map": s.dst_map})[0]
            piece = b.extract_slice(x, [0, o1 if s.static_src is None else s.static_src], [1, s.c])
            out = b.insert_slice(piece, y, [0, o2], [1, s.c])
            b.store(out, b.access_tile(yv, [ssa(row), 0], box(1, s.n), [1, s.n]))
        b.func_return()
    return b.module


@st.composite
def exprs(draw: st.DrawFn) -> af.AffineExpr:
    """a*d0 + b*d1 + c*s0 + k, then maybe floordiv/ceildiv/mod by a positive constant, then
    maybe scaled: small coefficients mostly (offsets near the tensor), sometimes 2^62 (past
    the index range in some lanes)."""
    coef = st.one_of(st.integers(-3, 3), st.just(1 << 62))
    e = af.const(draw(st.integers(-2, 6)))
    for v in (af.dim(0), af.dim(1), af.sym(0)):
        e = af.add(e, af.mul(v, af.const(draw(coef))))
    kind = draw(st.sampled_from([None, "floordiv", "ceildiv", "mod"]))
    if kind is not None:
        e = af.binary(kind, e, af.const(draw(st.integers(1, 5))))
    scale = draw(st.sampled_from([1, 1, 2, 3]))
    return af.mul(e, af.const(scale)) if scale != 1 else e


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    n = draw(st.integers(2, 12))
    op = draw(st.sampled_from([Affine.apply, Affine.min, Affine.max]))
    results = 1 if op == Affine.apply else draw(st.integers(1, 3))
    return Spec(
        tiles=draw(st.sampled_from([1, 2, 3, 4, 8])),
        rows=draw(st.integers(1, 3)),
        n=n,
        c=draw(st.integers(1, n)),
        src_map=af.AffineMap(num_dims=2, num_symbols=1, results=(draw(exprs()),)),
        dst_map=af.AffineMap(num_dims=2, num_symbols=1, results=tuple(draw(exprs()) for _ in range(results))),
        dst_op=op,
        symbol=draw(st.integers(0, 3)),
        laned_source=draw(st.booleans()),
        static_src=draw(st.one_of(st.none(), st.integers(-1, n))),
    )


def _args(s: Spec, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    shape = (s.tiles * s.rows, s.n)
    return {"x": rng.standard_normal(shape).astype(np.float32), "y": rng.standard_normal(shape).astype(np.float32)}


def _oracle(s: Spec, args: dict[str, Any]) -> np.ndarray | None:
    """What the kernel computes, from the maps evaluated exactly (None: some row's slice leaves
    the row, and the run must fail)."""
    x, y = args["x"], args["y"].copy()
    pick = {Affine.apply: lambda v: v[0], Affine.min: min, Affine.max: max}[s.dst_op]
    for t in range(s.tiles):
        for r in range(s.rows):
            o1 = af.evaluate(s.src_map.results[0], [t, r], [s.symbol]) if s.static_src is None else s.static_src
            o2 = pick([af.evaluate(e, [t, r], [s.symbol]) for e in s.dst_map.results])
            if not (0 <= o1 <= s.n - s.c and 0 <= o2 <= s.n - s.c):
                return None
            row = t * s.rows + r
            src = x[row] if s.laned_source else x[0]
            y[row, o2: o2 + s.c] = src[o1: o1 + s.c]
    return y


@given(specs(), st.integers(0, 2**32 - 1))
@FAST
def test_laned_offsets_match_the_per_tile_run_and_the_maps(spec: Spec, seed: int) -> None:
    args = _args(spec, seed)
    got = _compare(_build(spec), args)
    want = _oracle(spec, args)
    if want is None:
        assert isinstance(got, tuple) and got[0] == "out-of-bounds", got
    else:
        assert isinstance(got, ri.RunResult), got
        np.testing.assert_array_equal(got.outputs["y"], want)


def _ring_spec(rows: int) -> Spec:
    d0, d1, s0 = af.dim(0), af.dim(1), af.sym(0)
    rot = af.binary("mod", af.add(af.add(d0, d1), s0), af.const(4))  # (t + r + s) mod 4: chunk of 2
    return Spec(tiles=4, rows=rows, n=8, c=2, src_map=af.AffineMap(num_dims=2, num_symbols=1, results=(af.mul(rot, af.const(2)),)),
                dst_map=af.AffineMap(num_dims=2, num_symbols=1, results=(af.mul(rot, af.const(2)), af.const(6))),
                dst_op=Affine.min, symbol=1, laned_source=True)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("static_src", [None, 3])
def test_the_lane_forms_run_not_the_per_lane_fallback(rows: int, static_src: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """With in-bounds offsets the run stays in lockstep and never runs an op lane by lane
    (lockstep.per_lane holds each lane's value through lane_item)."""
    from reference_interp import lockstep

    def refuse(*a: Any, **kw: Any) -> Any:
        raise AssertionError("an op ran lane by lane")

    monkeypatch.setattr(lockstep, "lane_item", refuse)
    spec = dataclasses.replace(_ring_spec(rows), static_src=static_src)
    args = _args(spec, 7)
    got = ri.run(_build(spec), args=args, lockstep="always")
    assert got.lockstep
    np.testing.assert_array_equal(got.outputs["y"], _oracle(spec, args))


def test_a_result_past_the_index_range_gives_up_to_the_per_tile_run() -> None:
    """Per tile, the map's value is a Python int beyond int64 (and the slice check refuses it);
    in lockstep it does not fit the lanes' int64: lockstep gives up, the per-tile error stands."""
    d0 = af.dim(0)
    big = af.AffineMap(num_dims=2, num_symbols=1, results=(af.mul(d0, af.const(1 << 62)),))
    spec = Spec(tiles=4, rows=1, n=4, c=1, src_map=big, dst_map=big, dst_op=Affine.apply, symbol=0, laned_source=True)
    got = _compare(_build(spec), _args(spec, 1))
    assert isinstance(got, tuple) and got[0] == "out-of-bounds" and "leaves dimension 1" in got[1], got


@pytest.mark.parametrize(("expr", "lanes_out"), [
    (af.add(af.dim(0), af.const(-1)), "lane 0 reads from -1"),  # numpy would wrap -1 to the row's end
    (af.add(af.dim(0), af.const(4)), "lane 3 reads past the row"),
])
def test_one_lane_just_out_of_bounds_is_the_per_tile_error(expr: af.AffineExpr, lanes_out: str) -> None:
    m = af.AffineMap(num_dims=2, num_symbols=1, results=(expr,))
    ok = af.AffineMap(num_dims=2, num_symbols=1, results=(af.const(0),))
    for src, dst in ((m, ok), (ok, m)):
        spec = Spec(tiles=4, rows=1, n=8, c=2, src_map=src, dst_map=dst, dst_op=Affine.apply, symbol=0, laned_source=True)
        got = _compare(_build(spec), _args(spec, 3))
        assert isinstance(got, tuple) and got[0] == "out-of-bounds", (lanes_out, got)


def test_index_arithmetic_is_exact_where_int64_would_wrap() -> None:
    """tile * s0 with s0 = 2^62: tile 4 gives 2^64, which int64 wraps to 0 (in bounds); the
    per-tile run's Python ints do not wrap, and the slice check refuses it."""
    prod = af.AffineMap(num_dims=2, num_symbols=1, results=(af.mul(af.dim(0), af.sym(0)),))
    spec = Spec(tiles=8, rows=1, n=4, c=1, src_map=prod, dst_map=prod, dst_op=Affine.apply, symbol=1 << 62, laned_source=True)
    got = _compare(_build(spec), _args(spec, 2))
    assert isinstance(got, tuple) and got[0] == "out-of-bounds", got


def test_index_arithmetic_is_exact_where_int64_would_wrap_in_bounds() -> None:
    """(tile * s0) mod 3 with s0 = 2^62 + 1: tile 2's product passes 2^63, and a wrapped
    product's residue differs by 2^64 mod 3 = 1; every lane stays in bounds either way, so
    only exact arithmetic gives the per-tile (and the maps') offsets."""
    m = af.AffineMap(num_dims=2, num_symbols=1, results=(af.binary("mod", af.mul(af.dim(0), af.sym(0)), af.const(3)),))
    spec = Spec(tiles=8, rows=2, n=4, c=1, src_map=m, dst_map=m, dst_op=Affine.max, symbol=(1 << 62) + 1, laned_source=True)
    args = _args(spec, 5)
    got = _compare(_build(spec), args)
    assert isinstance(got, ri.RunResult) and got.lockstep
    np.testing.assert_array_equal(got.outputs["y"], _oracle(spec, args))
