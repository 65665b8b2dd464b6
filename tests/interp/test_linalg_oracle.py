"""Hypothesis oracles for linalg: generic (contractions, broadcasts, general reductions),
reduce, broadcast and transpose against numpy einsum and reductions."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import ktir
import reference_interp as ri

from .helpers import FAST

LETTERS = "abcdefgh"


def ttype(shape: tuple[int, ...], et: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


def amap(n_loops: int, dims: list[int]) -> str:
    ins = ", ".join(f"d{i}" for i in range(n_loops))
    return f"affine_map<({ins}) -> ({', '.join(f'd{d}' for d in dims)})>"


def run_returns(text: str, **args: Any) -> tuple[Any, ...]:
    return ri.run(ktir.parse(text, "linalg.ktir"), args=args).returns[0]


@st.composite
def shapes(draw: st.DrawFn, min_rank: int = 1, max_rank: int = 4) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(1, 4), min_size=min_rank, max_size=max_rank)))


# ---------------------------------------------------------------------- transpose / broadcast


@FAST
@given(data=st.data())
def test_transpose(data: st.DataObject) -> None:
    shape = data.draw(shapes())
    perm = data.draw(st.permutations(range(len(shape))))
    out_shape = tuple(shape[p] for p in perm)
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    text = f"""func.func @f(%x: {ttype(shape, 'f32')}) -> {ttype(out_shape, 'f32')} {{
  %e = tensor.empty() : {ttype(out_shape, 'f32')}
  %r = linalg.transpose ins(%x : {ttype(shape, 'f32')}) outs(%e : {ttype(out_shape, 'f32')}) permutation = [{', '.join(map(str, perm))}]
  return %r : {ttype(out_shape, 'f32')}
}}"""
    (got,) = run_returns(text, x=x)
    np.testing.assert_array_equal(got, np.transpose(x, perm))


@FAST
@given(data=st.data())
def test_broadcast(data: st.DataObject) -> None:
    out_shape = data.draw(shapes(2, 4))
    added = sorted(data.draw(st.sets(st.integers(0, len(out_shape) - 1), min_size=1, max_size=len(out_shape) - 1)))
    in_shape = tuple(n for i, n in enumerate(out_shape) if i not in added)
    x = np.arange(int(np.prod(in_shape)), dtype=np.int32).reshape(in_shape)
    text = f"""func.func @f(%x: {ttype(in_shape, 'i32')}) -> {ttype(out_shape, 'i32')} {{
  %e = tensor.empty() : {ttype(out_shape, 'i32')}
  %r = linalg.broadcast ins(%x : {ttype(in_shape, 'i32')}) outs(%e : {ttype(out_shape, 'i32')}) dimensions = [{', '.join(map(str, added))}]
  return %r : {ttype(out_shape, 'i32')}
}}"""
    (got,) = run_returns(text, x=x)
    np.testing.assert_array_equal(got, np.broadcast_to(np.expand_dims(x, added), out_shape))


# ---------------------------------------------------------------------- reduce

COMBINERS = {
    "addf": ("f32", np.add), "mulf": ("f32", np.multiply), "maximumf": ("f32", np.maximum), "minimumf": ("f32", np.minimum),
    "maxnumf": ("f32", np.fmax), "minnumf": ("f32", np.fmin), "addi": ("i32", np.add), "muli": ("i32", np.multiply),
    "maxsi": ("i32", np.maximum), "minsi": ("i32", np.minimum), "andi": ("i32", np.bitwise_and),
    "ori": ("i32", np.bitwise_or), "xori": ("i32", np.bitwise_xor),
}


@FAST
@given(data=st.data(), op=st.sampled_from(sorted(COMBINERS)), seed=st.integers(0, 2**31))
def test_reduce(data: st.DataObject, op: str, seed: int) -> None:
    et, uf = COMBINERS[op]
    shape = data.draw(shapes(1, 3))
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    kept = tuple(n for i, n in enumerate(shape) if i not in dims)
    rng = np.random.default_rng(seed)
    if et == "f32":
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        init = rng.uniform(-2, 2, kept).astype(np.float32)
    else:
        x = rng.integers(-50, 50, shape).astype(np.int32)
        init = rng.integers(-50, 50, kept).astype(np.int32)
    short = data.draw(st.booleans())
    body = (f"{{ arith.{op} }}" if short else "")
    region = "" if short else f"""
    (%in: {et}, %acc: {et}) {{
      %s = arith.{op} %in, %acc : {et}
      linalg.yield %s : {et}
    }}"""
    text = f"""func.func @f(%x: {ttype(shape, et)}, %i: {ttype(kept, et)}) -> {ttype(kept, et)} {{
  %r = linalg.reduce {body} ins(%x : {ttype(shape, et)}) outs(%i : {ttype(kept, et)}) dimensions = [{', '.join(map(str, dims))}]{region}
  return %r : {ttype(kept, et)}
}}"""
    (got,) = run_returns(text, x=x, i=init)
    if et == "f32":
        wide = x.astype(np.float64)
        want = uf(init.astype(np.float64), uf.reduce(wide, axis=tuple(dims)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        want = uf(init.astype(np.int64), uf.reduce(x.astype(np.int64), axis=tuple(dims)))
        np.testing.assert_array_equal(got, want.astype(np.int32))


@FAST
@given(rows=st.integers(1, 4), cols=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_reduce_with_a_general_body_runs_in_order(rows: int, cols: int, seed: int) -> None:
    # acc' = acc * 0.5 + x: not associative, so the order is observable
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, (rows, cols)).astype(np.float32)
    text = f"""func.func @f(%x: tensor<{rows}x{cols}xf32>) -> tensor<{rows}xf32> {{
  %half = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{rows}xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<{rows}xf32>) -> tensor<{rows}xf32>
  %r = linalg.reduce ins(%x : tensor<{rows}x{cols}xf32>) outs(%i : tensor<{rows}xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {{
      %h = arith.mulf %acc, %half : f32
      %s = arith.addf %h, %in : f32
      linalg.yield %s : f32
    }}
  return %r : tensor<{rows}xf32>
}}"""
    (got,) = run_returns(text, x=x)
    want = np.zeros(rows, np.float32)
    for j in range(cols):
        want = want * np.float32(0.5) + x[:, j]
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------- generic


@st.composite
def contraction(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int], list[str]]:
    n = draw(st.integers(1, 4))
    ext = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    a = draw(st.permutations(range(n)).flatmap(lambda p: st.integers(1, n).map(lambda k: list(p[:k]))))
    b = draw(st.permutations(range(n)).flatmap(lambda p: st.integers(1, n).map(lambda k: list(p[:k]))))
    # every loop used by some operand; loops not in the output are reductions
    used = set(a) | set(b)
    out = [d for d in draw(st.permutations(sorted(used))) if draw(st.booleans())]
    iters = ["parallel" if d in out else "reduction" for d in range(n)]
    missing = [d for d in range(n) if d not in used]
    a = a + missing
    return ext, a, b, out, iters


@FAST
@given(spec=contraction(), integer=st.booleans(), seed=st.integers(0, 2**31))
def test_generic_contraction_matches_einsum(spec: tuple[Any, ...], integer: bool, seed: int) -> None:
    ext, a_dims, b_dims, out_dims, iters = spec
    n = len(ext)
    rng = np.random.default_rng(seed)
    et = "i32" if integer else "f32"
    dt = np.int32 if integer else np.float32
    shape_a = tuple(ext[d] for d in a_dims)
    shape_b = tuple(ext[d] for d in b_dims)
    shape_o = tuple(ext[d] for d in out_dims)
    a = rng.integers(-9, 9, shape_a).astype(dt)
    b = rng.integers(-9, 9, shape_b).astype(dt)
    init = rng.integers(-9, 9, shape_o).astype(dt)
    mul, add = ("muli", "addi") if integer else ("mulf", "addf")
    text = f"""func.func @f(%a: {ttype(shape_a, et)}, %b: {ttype(shape_b, et)}, %i: {ttype(shape_o, et)}) -> {ttype(shape_o, et)} {{
  %r = linalg.generic {{indexing_maps = [{amap(n, a_dims)}, {amap(n, b_dims)}, {amap(n, out_dims)}], iterator_types = [{', '.join(f'"{k}"' for k in iters)}]}} ins(%a, %b : {ttype(shape_a, et)}, {ttype(shape_b, et)}) outs(%i : {ttype(shape_o, et)}) {{
  ^bb0(%x: {et}, %y: {et}, %o: {et}):
    %p = arith.{mul} %x, %y : {et}
    %s = arith.{add} %o, %p : {et}
    linalg.yield %s : {et}
  }} -> {ttype(shape_o, et)}
  return %r : {ttype(shape_o, et)}
}}"""
    (got,) = run_returns(text, a=a, b=b, i=init)
    sub = f"{''.join(LETTERS[d] for d in a_dims)},{''.join(LETTERS[d] for d in b_dims)}->{''.join(LETTERS[d] for d in out_dims)}"
    want = np.einsum(sub, a.astype(np.int64), b.astype(np.int64)) + init
    np.testing.assert_array_equal(got, want.astype(dt))


@FAST
@given(spec=contraction(), seed=st.integers(0, 2**31))
def test_generic_general_reduction_body(spec: tuple[Any, ...], seed: int) -> None:
    """out = max(out, a - b) * 1: not a pure combine, so the sequential path runs."""
    ext, a_dims, b_dims, out_dims, iters = spec
    n = len(ext)
    rng = np.random.default_rng(seed)
    a = rng.integers(-9, 9, tuple(ext[d] for d in a_dims)).astype(np.float32)
    b = rng.integers(-9, 9, tuple(ext[d] for d in b_dims)).astype(np.float32)
    shape_o = tuple(ext[d] for d in out_dims)
    init = np.full(shape_o, -100, np.float32)
    T = lambda s: ttype(s, "f32")  # noqa: E731
    text = f"""func.func @f(%a: {T(a.shape)}, %b: {T(b.shape)}, %i: {T(shape_o)}) -> {T(shape_o)} {{
  %one = arith.constant 1.0 : f32
  %r = linalg.generic {{indexing_maps = [{amap(n, a_dims)}, {amap(n, b_dims)}, {amap(n, out_dims)}], iterator_types = [{', '.join(f'"{k}"' for k in iters)}]}} ins(%a, %b : {T(a.shape)}, {T(b.shape)}) outs(%i : {T(shape_o)}) {{
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    %m = arith.maximumf %o, %d : f32
    %s = arith.mulf %m, %one : f32
    linalg.yield %s : f32
  }} -> {T(shape_o)}
  return %r : {T(shape_o)}
}}"""
    (got,) = run_returns(text, a=a, b=b, i=init)
    # oracle: broadcast over the full iteration space, max over the reduction loops
    full_a = np.einsum(f"{''.join(LETTERS[d] for d in a_dims)}->{LETTERS[:n]}", a[..., None][..., 0]) if False else None
    del full_a
    grids = np.indices(ext)
    av = a[tuple(grids[d] for d in a_dims)]
    bv = b[tuple(grids[d] for d in b_dims)]
    red = tuple(d for d in range(n) if iters[d] == "reduction")
    m = (av - bv).max(axis=red) if red else av - bv
    kept = [d for d in range(n) if iters[d] == "parallel"]
    m = np.transpose(m, [kept.index(d) for d in out_dims]) if out_dims else m
    np.testing.assert_array_equal(got, np.maximum(init, m))


@FAST
@given(rows=st.integers(1, 5), cols=st.integers(1, 5), seed=st.integers(0, 2**31))
def test_generic_broadcast_maps_and_index(rows: int, cols: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    col = rng.uniform(-1, 1, cols).astype(np.float32)
    text = f"""func.func @f(%x: tensor<{rows}x{cols}xf32>, %c: tensor<{cols}xf32>) -> tensor<{cols}x{rows}xf32> {{
  %e = tensor.empty() : tensor<{cols}x{rows}xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]}} ins(%x, %c : tensor<{rows}x{cols}xf32>, tensor<{cols}xf32>) outs(%e : tensor<{cols}x{rows}xf32>) {{
  ^bb0(%a: f32, %b: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.muli %i, %j : index
    %k64 = arith.index_cast %k : index to i64
    %kf = arith.sitofp %k64 : i64 to f32
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %kf : f32
    linalg.yield %t : f32
  }} -> tensor<{cols}x{rows}xf32>
  return %r : tensor<{cols}x{rows}xf32>
}}"""
    (got,) = run_returns(text, x=x, c=col)
    ii, jj = np.indices((rows, cols))
    np.testing.assert_array_equal(got, (x + col[None, :] + (ii * jj).astype(np.float32)).T)


@FAST
@given(m=st.integers(1, 8), n=st.integers(1, 8), k=st.integers(1, 8), seed=st.integers(0, 2**31))
def test_named_matmuls(m: int, n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(np.float32)
    text = f"""func.func @f(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>, %bt: tensor<{n}x{k}xf16>, %at: tensor<{k}x{m}xf16>, %c: tensor<{m}x{n}xf32>) -> (tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>, tensor<{m}xf32>) {{
  %r1 = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>) outs(%c : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r2 = linalg.matmul_transpose_b ins(%a, %bt : tensor<{m}x{k}xf16>, tensor<{n}x{k}xf16>) outs(%c : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r3 = linalg.matmul_transpose_a ins(%at, %b : tensor<{k}x{m}xf16>, tensor<{k}x{n}xf16>) outs(%c : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %v = tensor.extract_slice %b[0, 0] [{k}, 1] [1, 1] : tensor<{k}x{n}xf16> to tensor<{k}xf16>
  %z = arith.constant dense<0.0> : tensor<{m}xf32>
  %r4 = linalg.matvec ins(%a, %v : tensor<{m}x{k}xf16>, tensor<{k}xf16>) outs(%z : tensor<{m}xf32>) -> tensor<{m}xf32>
  return %r1, %r2, %r3, %r4 : tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>, tensor<{m}xf32>
}}"""
    r1, r2, r3, r4 = run_returns(text, a=a, b=b, bt=np.ascontiguousarray(b.T), at=np.ascontiguousarray(a.T), c=c)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    for got in (r1, r2, r3):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r4, a.astype(np.float64) @ b[:, 0].astype(np.float64), rtol=1e-5, atol=1e-5)


def test_reduce_with_two_outputs_argmax() -> None:
    x = np.array([[3.0, 7.0, 7.0, 1.0], [-1.0, -5.0, 2.0, 2.5]], np.float32)
    text = """func.func @f(%x: tensor<2x4xf32>, %ix: tensor<2x4xi32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %ninf_s = arith.constant 0xFF800000 : f32
  %ninf = tensor.splat %ninf_s : tensor<2xf32>
  %zero = arith.constant dense<0> : tensor<2xi32>
  %m, %i = linalg.reduce ins(%x, %ix : tensor<2x4xf32>, tensor<2x4xi32>) outs(%ninf, %zero : tensor<2xf32>, tensor<2xi32>) dimensions = [1]
    (%v: f32, %j: i32, %best: f32, %bj: i32) {
      %gt = arith.cmpf ogt, %v, %best : f32
      %nv = arith.select %gt, %v, %best : f32
      %nj = arith.select %gt, %j, %bj : i32
      linalg.yield %nv, %nj : f32, i32
    }
  return %m, %i : tensor<2xf32>, tensor<2xi32>
}"""
    ix = np.broadcast_to(np.arange(4, dtype=np.int32), (2, 4)).copy()
    m, i = run_returns(text, x=x, ix=ix)
    np.testing.assert_array_equal(m, [7.0, 2.5])
    np.testing.assert_array_equal(i, [1, 3])
