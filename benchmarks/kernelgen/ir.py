"""Building one natural-form kernel and its numpy oracle side by side.

`Gen` wraps `ktir.builder.Builder` around a function on `grid = [1]` whose arguments are the
element addresses of whole arrays (`%x: index`, as the lowering and `schedulers.single_tile`
write them). Every tensor built is a `T`: the KTIR value, the exact result as float64 numpy
data computed from the same (rounded) inputs, the iteration dimensions it is indexed by, and
a bound on how far the interpreter's value may be from the exact one.

The bound is a first-order forward error analysis with the unit roundoff `u` of each op's
result type: a sum of n terms is off by at most `n u sum|x|` (any order of summation,
so a schedule that reorders it stays inside the bound too), a product of two perturbed values
by `ea |b| + eb |a| + u |ab|`, a `truncf` by `u` of the target type, `exp` and `tanh` by a few
ulps of libm. Outputs are compared with `atol = 2 * bound` (each of two runs is within
the bound of the exact value), so a copy, transpose or gather must match exactly.

Dimensions are tied the way the scheduler ties them (elementwise operands position by position,
broadcasts and contractions through their maps): `Dim` is a union-find class. A class is
*parallel* when no op reduces over it, no loop carries state along it and no indirect access
reads along it: cutting it over tiles needs no inter-tile combination.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from ktir.builder import Builder, Value, box
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import BlockArgument, Module

INDEX = ty.IndexType()
FLOATS = ("f32", "f16", "bf16")
NUMPY: dict[str, Any] = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i32": np.int32}
# unit roundoff (half an ulp at 1) of each float type: a rounding moves a value x by at most u |x|
UNIT = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
LIBM_ULPS = 4  # exp and tanh of the interpreter's numpy are within a few ulps of the exact value
TINY = 1e-30  # so that an exact result is compared exactly, and 0 * inf never appears


def ktype(name: str) -> ty.Type:
    return ty.IntegerType(width=32) if name == "i32" else ty.FloatType(kind=name)  # type: ignore[arg-type]


def tensor_type(shape: Sequence[int], dtype: str) -> ty.TensorType:
    return ty.TensorType(shape=tuple(shape), element_type=ktype(dtype))


def gamma(n: int, u: float) -> float:
    """The classic bound n u / (1 - n u) on the relative error of n roundings."""
    return n * u / (1 - n * u) if n * u < 0.5 else math.inf


def amap(n: int, results: Sequence[int | None]) -> af.AffineMap:
    """(d0, ..., d{n-1}) -> (d{results[0]}, ...); None is the constant 0."""
    return af.AffineMap(num_dims=n, num_symbols=0,
                        results=tuple(af.const(0) if r is None else af.dim(r) for r in results))


class Dim:
    """A class of tied iteration dimensions (union-find); `why` says why it is not parallel."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.parent: Dim = self
        self.why: str | None = None

    def root(self) -> Dim:
        d = self
        while d.parent is not d:
            d.parent = d.parent.parent
            d = d.parent
        return d

    def mark(self, why: str) -> None:
        r = self.root()
        r.why = r.why or why


def unify(a: Dim, b: Dim) -> None:
    ra, rb = a.root(), b.root()
    assert ra.size == rb.size, (ra.size, rb.size)
    if ra is not rb:
        rb.parent = ra
        ra.why = ra.why or rb.why


@dataclass
class T:
    """A tensor of the kernel under construction, with its oracle and error bound."""

    v: Value
    data: np.ndarray  # the exact value (float64; int64 for index data)
    dims: tuple[Dim, ...]
    dtype: str
    err: float = 0.0  # |interpreter value - data| <= err, elementwise

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def mag(self) -> float:
        if not self.data.size or not any(self.data.strides):
            return 0.0  # empty, or a shapes-only stand-in (see Gen.exact)
        return float(np.max(np.abs(self.data)))

    @property
    def u(self) -> float:
        return UNIT[self.dtype]


@dataclass
class Output:
    """One array the kernel writes: the exact value and the tolerance of a comparison with it."""

    dtype: str
    expected: np.ndarray  # float64
    atol: float  # |got - expected| <= atol elementwise, for the unscheduled kernel and any correct schedule


@dataclass
class Generated:
    """A generated kernel: the module, its inputs, the oracle's outputs and what it is made of."""

    kind: str
    module: Module
    inputs: dict[str, np.ndarray]  # every array argument, outputs included (filled with NaN: unwritten shows)
    outputs: dict[str, Output]
    parallel: list[int]  # sizes of the dimension classes a schedule may cut without combining partials
    features: list[str]
    seed: int | None = None
    sizes: dict[str, int] = field(default_factory=dict)  # index arguments that are values, not addresses

    def args(self) -> dict[str, Any]:
        """Fresh copies of the arguments (the interpreter writes outputs in place)."""
        return {**{k: v.copy() for k, v in self.inputs.items()}, **self.sizes}

    @property
    def divisible(self) -> bool:
        """Whether the kernel has a parallel dimension of 64 or more (the acceptance's denominator)."""
        return any(s >= 64 for s in self.parallel)

    def text(self) -> str:
        from ktir.syntax.printer import print_module

        return print_module(self.module)


class Gen:
    """One function on grid [1] under construction, with the oracle of every value built.

    With `exact=False` only the IR is built (real-size kernels, measured on the timeline from a
    shapes-only run): values carry a zero-size stand-in of their shape instead of data, and the
    arrays of the arguments are zeros."""

    def __init__(self, rng: Any, name: str, exact: bool = True) -> None:
        self.rng = rng  # random.Random, or hypothesis' recorded stand-in for it
        self.exact = exact
        self.np = np.random.default_rng(rng.getrandbits(63))
        self.b = Builder()
        self.features: set[str] = set()
        self.inputs: dict[str, np.ndarray] = {}
        self.outputs: dict[str, Output] = {}
        self.sizes: dict[str, int] = {}
        self.dims: list[Dim] = []
        self._args: list[str] = []
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(self.b.func(name, [], grid=[1]))
        self._func = self.b.module.operations[-1]
        self.c0 = self.b.index(0)

    # ------------------------------------------------------------ randomness

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def dim(self, size: int) -> Dim:
        d = Dim(size)
        self.dims.append(d)
        return d

    # ------------------------------------------------------------ arguments and memory

    def arg(self, hint: str) -> Value:
        name = hint
        n = 1
        while name in self._args:
            name, n = f"{hint}{n}", n + 1
        self._args.append(name)
        return Value(f"%{name}", INDEX)

    def view(self, arg: Value, shape: Sequence[int], dtype: str) -> Value:
        strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        return self.b.memory_view(arg, list(shape), strides, ktype(dtype), coordinate_set=box(*shape))

    def whole(self, view: Value, shape: Sequence[int]) -> Value:
        return self.b.access_tile(view, [self.c0] * len(shape), box(*shape), list(shape))

    def data(self, shape: Sequence[int], dtype: str, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
        """Random input data of `dtype` (rounded to it): what the kernel and the oracle both read."""
        if not self.exact:
            return np.zeros(tuple(shape), NUMPY[dtype])
        return self.np.uniform(lo, hi, size=tuple(shape)).astype(NUMPY[dtype])

    @staticmethod
    def ghost(shape: Sequence[int]) -> np.ndarray:
        """A stand-in for the data of a value of `shape` when only the IR is built (no memory)."""
        return np.broadcast_to(np.zeros((), np.float64), tuple(shape))

    def input(self, shape: Sequence[int], dtype: str = "f32", dims: Sequence[Dim] | None = None, lo: float = -1.0,
              hi: float = 1.0, hint: str = "x") -> T:
        """A whole array loaded from global memory."""
        arr = self.data(shape, dtype, lo, hi)
        argv = self.arg(hint)
        self.inputs[argv.name[1:]] = arr
        tile = self.whole(self.view(argv, shape, dtype), shape)
        v = self.b.load(tile, ktype(dtype))
        exact = arr.astype(np.float64) if self.exact else self.ghost(shape)
        return T(v, exact, tuple(dims) if dims is not None else tuple(self.dim(s) for s in shape), dtype)

    def store(self, t: T, hint: str = "y") -> str:
        """Store `t` whole to a new output array; returns its argument name."""
        argv = self.arg(hint)
        name = argv.name[1:]
        self.inputs[name] = np.full(t.shape, np.nan, NUMPY[t.dtype]) if self.exact else np.zeros(t.shape, NUMPY[t.dtype])
        self.b.store(t.v, self.whole(self.view(argv, t.shape, t.dtype), t.shape))
        self.outputs[name] = Output(t.dtype, t.data.copy() if self.exact else t.data, 2 * t.err + TINY)
        return name

    def store_into(self, t: T, name: str) -> None:
        """Store `t` whole into the existing array argument `name` (an input: updated in place);
        its final contents become an output."""
        assert name in self._args and self.inputs[name].shape == t.shape, name
        self.b.store(t.v, self.whole(self.view(Value(f"%{name}", INDEX), t.shape, t.dtype), t.shape))
        self.outputs[name] = Output(t.dtype, t.data.copy() if self.exact else t.data, 2 * t.err + TINY)

    def done(self, kind: str, seed: int | None = None) -> Generated:
        self.b.func_return()
        self._stack.close()
        entry = self._func.regions[0].blocks[0]
        entry.arguments = [BlockArgument(name=f"%{a}", type=INDEX) for a in self._args]
        self._func.attributes["function_type"] = at.TypeAttr(
            value=ty.FunctionType(inputs=tuple(INDEX for _ in self._args), results=()))
        parallel = sorted({id(d.root()): d.root().size for d in self.dims if d.root().why is None}.values(), reverse=True)
        return Generated(kind, self.b.module, self.inputs, self.outputs, parallel, sorted(self.features), seed,
                         dict(self.sizes))

    # ------------------------------------------------------------ scalars and tensors

    def scalar(self, value: float, dtype: str = "f32") -> Value:
        return self.b.constant(float(value), ktype(dtype))

    def empty(self, shape: Sequence[int], dtype: str) -> Value:
        return self.b.empty(tensor_type(shape, dtype))

    def splat_value(self, value: float, shape: Sequence[int], dtype: str, how: str) -> Value:
        """A tensor of `value` made by `how`: constant (a dense splat), splat (tensor.splat) or fill."""
        if how == "constant":
            return self.b.constant(at.DenseAttr(type=tensor_type(shape, dtype), values=float(value)))
        if how == "splat":
            return self.b.create("tensor.splat", [self.scalar(value, dtype)], [tensor_type(shape, dtype)])[0]
        return self.b.fill(self.scalar(value, dtype), self.empty(shape, dtype))

    def generic(self, ins: Sequence[Value], outs: Sequence[Value], maps: Sequence[af.AffineMap], iterators: Sequence[str],
                body: Callable[[tuple[Value, ...]], Sequence[Value]]) -> list[Value]:
        with self.b.generic(list(ins), list(outs), list(maps), list(iterators)) as args:
            self.b.yield_(*body(args), op="linalg.yield")
        return list(self.b.last_results)

    def cast(self, t: T, dtype: str) -> T:
        """`arith.extf` / `arith.truncf` of a whole tensor."""
        if dtype == t.dtype:
            return t
        widen = ty.FloatType(kind=dtype).width > ty.FloatType(kind=t.dtype).width  # type: ignore[arg-type]
        if dtype == "bf16" and t.dtype == "f16" or dtype == "f16" and t.dtype == "bf16":
            return self.cast(self.cast(t, "f32"), dtype)
        v = self.b.create("arith.extf" if widen else "arith.truncf", [t.v], [tensor_type(t.shape, dtype)])[0]
        err = t.err if widen else t.err + UNIT[dtype] * (t.mag + t.err)
        return T(v, t.data, t.dims, dtype, err)
