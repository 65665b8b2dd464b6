"""The structure facts of the linalg definitions (`ktir.dialects.structure`) say what the ops compute.

Each named op is built at a random shape, run in the reference interpreter, and compared
with a numpy evaluation of its `linalg.generic` view alone (the indexing maps and iterator
types `iteration_space` derives from the definition's `Structure`, and the scalar op it names):
a wrong map, a wrong reduced loop or a wrong scalar op makes the two differ. The verifier's
and the interpreter's own contraction tables must say the same as the definitions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
from ktir.dialects.registry import OPS
from ktir.dialects.structure import einsum_maps, iteration_space
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.syntax.printer import print_module
from schedulers import single_tile as nat

SCALAR = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide,
          "arith.maximumf": np.maximum, "arith.minimumf": np.minimum, "math.exp": np.exp, "math.absf": np.abs,
          "arith.negf": np.negative, "math.tanh": np.tanh, "math.floor": np.floor}
BINARY = ("linalg.add", "linalg.sub", "linalg.mul", "linalg.div", "linalg.max", "linalg.min")
UNARY = ("linalg.exp", "linalg.abs", "linalg.negf", "linalg.tanh", "linalg.floor")


def _einsum(maps: tuple[af.AffineMap, ...], arrays: list[np.ndarray]) -> np.ndarray:
    letters = "abcdefghijklmnopqrstuvwxyz"
    spec = [("".join(letters[e.position] for e in m.results if isinstance(e, af.Dim))) for m in maps]
    return np.einsum(f"{','.join(spec[:-1])}->{spec[-1]}", *arrays)


def _op_of(m: ktir.Module, name: str):  # type: ignore[no-untyped-def]
    return next(op for f in m.functions() for op in f.walk() if op.name == name)


def _interp(m: ktir.Module, inputs: dict[str, np.ndarray], out: str, shape: tuple[int, ...]) -> np.ndarray:
    args = {n: v.astype(np.float32) for n, v in inputs.items()}
    args[out] = np.zeros(shape, np.float32)
    return np.asarray(ri.run(m, None, args).outputs[out])


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(n for n, d in OPS.items() if d.structure and d.structure.kind == "contraction"
                                   and n != "linalg.dot")),
       sizes=st.lists(st.integers(1, 5), min_size=4, max_size=4), seed=st.integers(0, 99))
def test_contractions_compute_what_their_maps_say(name: str, sizes: list[int], seed: int) -> None:
    maps, iters = einsum_maps(OPS[name].structure.einsum)  # type: ignore[union-attr]
    n = len(iters)
    extent = sizes[:n]
    shapes = [tuple(extent[e.position] for e in m.results if isinstance(e, af.Dim)) for m in maps]
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-3, 4, s).astype(np.float32) for s in shapes[:2])
    k = nat.Kernel("c", ["a", "b", "y"])
    va, vb = k.load(k.view("a", list(shapes[0]), "f32")), k.load(k.view("b", list(shapes[1]), "f32"))
    res = k.named(name, [va, vb], k.fill(0.0, list(shapes[2])))
    k.store(res, k.view("y", list(shapes[2]), "f32"))
    m = ktir.parse(print_module(k.done()), "c.ktir")
    op = _op_of(m, name)
    view = iteration_space(op, OPS[name].structure, 2)
    assert not isinstance(view, str), view
    assert view.iterators == iters and view.accumulates
    assert np.array_equal(_interp(m, {"a": a, "b": b}, "y", shapes[2]), _einsum(view.maps, [a, b]))


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(BINARY + UNARY), shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
       seed=st.integers(0, 99))
def test_named_elementwise_ops_apply_their_scalar_op(name: str, shape: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    arity = 2 if name in BINARY else 1
    xs = [rng.uniform(0.5, 3.0, shape).astype(np.float32) for _ in range(arity)]
    k = nat.Kernel("e", [*"ab"[:arity], "y"])
    vals = [k.load(k.view(n, shape, "f32")) for n in "ab"[:arity]]
    k.store(k.named(name, vals, k.empty(shape, "f32")), k.view("y", shape, "f32"))
    m = ktir.parse(print_module(k.done()), "e.ktir")
    view = iteration_space(_op_of(m, name), OPS[name].structure, arity)
    assert not isinstance(view, str), view
    assert view.iterators == ("parallel",) * len(shape) and all(mm == af.AffineMap.identity(len(shape)) for mm in view.maps)
    want = SCALAR[view.scalar](*xs)
    got = _interp(m, dict(zip("ab", xs, strict=False)), "y", tuple(shape))
    assert np.allclose(got, want, rtol=1e-6), (name, view.scalar)


@pytest.mark.parametrize("kind", ["reduce", "broadcast", "transpose"])
def test_reduce_broadcast_and_transpose_maps(kind: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (2, 3, 4)).astype(np.float32)
    k = nat.Kernel("r", ["x", "y"])
    v = k.load(k.view("x", [2, 3, 4], "f32"))
    if kind == "reduce":
        res, shape, name = k.reduce(v, [0, 2], "arith.addf", 0.0), (3,), "linalg.reduce"
    elif kind == "broadcast":
        res = k.named("linalg.broadcast", [v], k.empty([2, 5, 3, 4], "f32"), dimensions=at.i64_array([1]))
        shape, name = (2, 5, 3, 4), "linalg.broadcast"
    else:
        res = k.named("linalg.transpose", [v], k.empty([4, 2, 3], "f32"), permutation=at.i64_array([2, 0, 1]))
        shape, name = (4, 2, 3), "linalg.transpose"
    k.store(res, k.view("y", list(shape), "f32"))
    m = ktir.parse(print_module(k.done()), "r.ktir")
    view = iteration_space(_op_of(m, name), OPS[name].structure, 1)
    assert not isinstance(view, str), view
    if kind == "broadcast":  # einsum cannot broadcast: repeat along the added loop
        idx = [e.position for e in view.maps[0].results]
        want = np.broadcast_to(np.expand_dims(x, [d for d in range(4) if d not in idx]), shape)
    else:
        want = _einsum(view.maps, [x])
    assert np.array_equal(_interp(m, {"x": x}, "y", shape), want)
