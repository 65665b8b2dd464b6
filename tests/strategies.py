"""Hypothesis strategies for KTIR: random, well-typed modules spanning the op registry.

The core is a plain generator driven by a `random.Random` (`generate_module(seed)`), so
tests can run it deterministically; `modules()` wraps it for hypothesis.

The generator builds every op exactly as `ktir.syntax.parser` does when it reads the
op's custom form (operandSegmentSizes, static_* arrays with kDynamic holes, predicates
as indices, entry-block arguments taken from op headers, implicit terminators, the
bodies of `linalg.map { op }`, ...), so `parse(print_module(m)) == m` must hold.

Values are tracked in typed scopes: an operand is always a value defined earlier in a
dominating position (or a new function argument), of the type the op expects. When no
suitable value is in scope, one is materialised (a constant, `tensor.empty`, a memory
view, an access tile, a producer of a tile future, ...).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from ktir.dialects.constraints import TypeConstraint
from ktir.dialects.registry import OPS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.base import Attribute, Type
from ktir.ir.floats import float_from_bits
from ktir.ir.named_affine import AffineName as _AffName
from ktir.ir.named_affine import ssa_map
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.ir.types import KDYNAMIC, i1_like
from ktir.syntax.parser import SHORT_BODY_RESULT, short_body_init, short_body_input

# ---------------------------------------------------------------- vocabulary

F8E4M3 = ty.FloatType(kind="f8E4M3")
F8E5M2FNUZ = ty.FloatType(kind="f8E5M2FNUZ")
F8E4M3FNUZ = ty.FloatType(kind="f8E4M3FNUZ")
TF32 = ty.FloatType(kind="tf32")
MAIN_FLOATS = (ty.F16, ty.BF16, ty.F32, ty.F64)
EXTRA_FLOATS = (ty.F8E4M3FN, ty.F8E5M2, F8E4M3, F8E5M2FNUZ, F8E4M3FNUZ, TF32)
SIGNLESS_INTS = (ty.I8, ty.I16, ty.I32, ty.I64)
BITS_FLOATS = (ty.F16, ty.BF16, ty.F32, ty.F64, ty.F8E4M3FN, ty.F8E5M2)

# Ops that only appear in a specific position; their parents generate them.
CONTEXT_OPS = frozenset(
    {
        "builtin.module",
        "func.func",
        "func.return",
        "scf.yield",
        "scf.condition",
        "scf.reduce",
        "scf.reduce.return",
        "scf.forall.in_parallel",
        "tensor.parallel_insert_slice",
        "tensor.yield",
        "linalg.yield",
        "linalg.index",
        "ktdp.region_terminator",
        "ktdp.yield_partial",
        "ktdp.yield_reduced",
    }
)
UNKNOWN_OP = "<unknown>"
FREE_OPS: tuple[str, ...] = tuple(sorted(n for n in OPS if n not in CONTEXT_OPS)) + (UNKNOWN_OP,) * 4

# Keys for extra attributes: none is an inherent attribute of any op.
EXTRA_KEYS = ("tag", "my.attr", "_priv", "k$1", "note", "has space", 'q"uote', "", "x-y", "a1", "nl\nkey", "true")
UNKNOWN_NAMES = ("mydialect.op", "test.foo", "foo.bar_baz", "my.dialect.thing", 'test."quoted"', "weird op\t1", "x.y")
# `none` is MLIR's default: the parser reads `fastmath<none>` as no flag, so it is not generated
FASTMATH = ("fast", "reassoc", "nnan,ninf", "contract,afn,arcp")
OVERFLOW = ("nsw", "nuw", "nsw,nuw")
STRINGS = ("", "hello", 'with "quotes"', "back\\slash", "line\nbreak", "tab\there", "ctl\x01\x7f", "caf\u00e9 \u2603", "a>b<c")
DIALECT_BODIES = ("1, 2", "a<b>", '"s>t"', "x -> y", "", "[1, 2]", "{k = v}", "3", "a b", "x >= 0", "<>", '"q\\"x"')
COMMENTS = ("// c", "//", "//x", '// has {braces}, "quotes" and -> ^bb0 %x @f #a !t', "// // nested", "// \u00e9\u2603")
NAME_PREFIXES = ("", "v", "x_", "a.", "t-", "$", "arg", "c", "r$.", "0_")
SYMBOL_NAMES = ("kernel", "f.x", "_g$", "my-fn", "has space", "1abc", "ü")


def _sorted_dict(d: dict[str, Attribute]) -> at.DictAttr:
    return at.DictAttr(entries=tuple(sorted(d.items())))


def _segments(*sizes: int) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=ty.I32, values=tuple(sizes))


def _i64s(values: Sequence[int]) -> at.DenseArrayAttr:
    return at.DenseArrayAttr(element_type=ty.I64, values=tuple(values))


def _mentions_type_alias(x: object) -> bool:
    if isinstance(x, ty.TypeAliasRef):
        return True
    if isinstance(x, Attribute | Type):
        return any(_mentions_type_alias(v) for v in x.__dict__.values())
    if isinstance(x, tuple | list):
        return any(_mentions_type_alias(v) for v in x)
    return False


def _numel(shape: Sequence[int | None]) -> int | None:
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n


# Library bugs the generator avoids by default (see Options.avoid).
KNOWN_BUGS: frozenset[str] = frozenset()

# ---------------------------------------------------------------- scopes


@dataclass
class Val:
    name: str
    type: Type  # as written in the text
    elem: Type | None = None  # access tiles: the element type of the base view


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.values: list[Val] = []

    def all(self) -> list[Val]:
        out: list[Val] = []
        s: Scope | None = self
        while s is not None:
            out.extend(s.values)
            s = s.parent
        return out


@dataclass
class FuncState:
    entry: Block
    root: Scope
    grid_rank: int


@dataclass
class Ctx:
    ops: list[Operation]
    scope: Scope
    fn: FuncState
    depth: int
    loops: int = 0  # inside a linalg.generic body: its number of loops (for linalg.index)


@dataclass
class Callee:
    name: str
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]


@dataclass
class Options:
    max_depth: int = 2
    max_ops: int = 5
    max_funcs: int = 3
    budget: int = 80
    unknown_ops: bool = True
    # Library bugs the generator steers around (each has a strict-xfail reproducer in
    # tests/test_roundtrip_property.py); clear an entry once the bug is fixed.
    avoid: frozenset[str] = KNOWN_BUGS


# ---------------------------------------------------------------- the generator


class Gen:
    """One module's worth of generation state."""

    def __init__(self, rnd: random.Random, options: Options | None = None) -> None:
        self.r = rnd
        self.o = options or Options()
        self.counter = 0
        self.attr_aliases: dict[str, Attribute] = {}
        self.type_aliases: dict[str, Type] = {}
        self.callees: list[Callee] = []
        self.decls: list[Operation] = []
        self.used_futures: set[str] = set()
        self.budget = self.o.budget
        self.symbols: set[str] = set()

    # ------------------------------------------------------------ randomness

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: Sequence):  # type: ignore[no-untyped-def]
        return seq[self.r.randrange(len(seq))]

    def rint(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    # ------------------------------------------------------------ names

    def fresh(self) -> str:
        self.counter += 1
        return f"%{self.pick(NAME_PREFIXES)}{self.counter}"

    def label(self) -> str:
        self.counter += 1
        return f"^{self.pick(('bb', 'exit', 'b.', 'L_'))}{self.counter}"

    def result_names(self, n: int) -> list[str]:
        if n == 0:
            return []
        if (n > 1 and self.chance(0.5)) or self.chance(0.05):
            base = self.fresh()
            return [f"{base}#{i}" for i in range(n)]
        return [self.fresh() for _ in range(n)]

    def symbol(self) -> str:
        while True:
            self.counter += 1
            name = f"{self.pick(SYMBOL_NAMES)}{self.counter}" if self.chance(0.5) else f"f{self.counter}"
            if name not in self.symbols:
                self.symbols.add(name)
                return name

    def alias_name(self, kind: str) -> str:
        self.counter += 1
        return f"{self.pick((kind, 'a', 'x.y', '_m$', 'set', 'map'))}{self.counter}"

    # ------------------------------------------------------------ types

    def R(self, t: Type) -> Type:
        """Resolve type aliases."""
        while isinstance(t, ty.TypeAliasRef):
            t = self.type_aliases[t.name]
        return t

    def written(self, t: Type, p: float = 0.08) -> Type:
        """`t`, or sometimes a type alias of it."""
        if not self.chance(p):
            return t
        existing = [n for n, v in self.type_aliases.items() if self.R(v) == t]
        if existing and self.chance(0.6):
            return ty.TypeAliasRef(name=self.pick(existing))
        name = self.alias_name("t")
        # sometimes an alias of an alias: `!b = !a`
        self.type_aliases[name] = ty.TypeAliasRef(name=self.pick(existing)) if existing and self.chance(0.5) else t
        return ty.TypeAliasRef(name=name)

    def float_t(self) -> ty.FloatType:
        return self.pick(EXTRA_FLOATS) if self.chance(0.1) else self.pick(MAIN_FLOATS)

    def int_t(self, index: bool = True) -> Type:
        if index and self.chance(0.25):
            return ty.INDEX
        if self.chance(0.05):
            return ty.I1
        return self.pick(SIGNLESS_INTS)

    def scalar_t(self) -> Type:
        return self.float_t() if self.chance(0.5) else self.int_t()

    def dim(self) -> int:
        return self.pick((1, 2, 3, 4, 8, 16))

    def shape(self, rank: int | None = None, dyn: float = 0.0, min_rank: int = 0) -> tuple[int | None, ...]:
        if rank is None:
            rank = self.rint(min_rank, 3)
        return tuple(None if self.chance(dyn) else self.dim() for _ in range(rank))

    def tensor_t(self, elem: Type | None = None, rank: int | None = None, dyn: float = 0.0, min_rank: int = 0) -> ty.TensorType:
        elem = elem or self.scalar_t()
        enc = self.attr(1) if self.chance(0.04) else None
        return ty.TensorType(shape=self.shape(rank, dyn, min_rank), element_type=elem, encoding=enc)

    def shaped_or_scalar(self, elem: Type) -> Type:
        x = self.r.random()
        if x < 0.5:
            return elem
        if x < 0.9 or elem == ty.INDEX:
            return self.tensor_t(elem, dyn=0.1)
        return ty.VectorType(shape=self.shape(dyn=0.0, min_rank=1), element_type=elem)

    def value_t(self) -> Type:
        """A type for loop-carried and region-result values."""
        elem = self.scalar_t()
        return elem if self.chance(0.6) else self.tensor_t(elem)

    def mem_space(self) -> Attribute:
        if self.chance(0.5):
            a: Attribute = at.MemorySpaceAttr(kind="global")
        else:
            a = at.MemorySpaceAttr(kind="ct_local", ct_id=self.rint(0, 7) if self.chance(0.5) else None)
        return self.alias_attr(a, 0.15)

    def memref_t(self, elem: Type | None = None, rank: int | None = None, dyn: float = 0.0) -> ty.MemRefType:
        shape = self.shape(rank, dyn, min_rank=1)
        layout: Attribute | None = None
        space: Attribute | None = None
        x = self.r.random()
        if x < 0.15:
            layout = self.strided(len(shape))
        elif x < 0.2:
            layout = at.AffineMapAttr(value=af.AffineMap.identity(len(shape)))
        if self.chance(0.3):
            space = self.mem_space()
            if layout is not None:
                layout = self.alias_attr(layout, 0.3)  # with two extras, the first is the layout
        return ty.MemRefType(shape=shape, element_type=elem or self.scalar_t(), layout=layout, memory_space=space)

    def strided(self, rank: int) -> at.StridedLayoutAttr:
        strides = tuple(None if self.chance(0.1) else self.rint(1, 64) for _ in range(rank))
        x = self.r.random()
        offset = 0 if x < 0.5 else (None if x < 0.6 else self.rint(1, 100))
        return at.StridedLayoutAttr(strides=strides, offset=offset)

    def any_type(self, depth: int = 2, fn: bool = False) -> Type:
        """Any type a value may have; with `fn`, also function types (type attributes only)."""
        k = self.rint(0, 18 if depth > 0 else 6)
        if k <= 1:
            return self.scalar_t()
        if k == 2:
            return ty.IntegerType(width=self.pick((1, 7, 32, 64)), signedness=self.pick(("signed", "unsigned")))
        if k == 3:
            return ty.NoneType()
        if k == 4:
            return self.float_t()
        if k == 5:
            return ty.DialectType(dialect=self.pick(("foo", "my")), name=self.pick(("bar", "t.x")), body=self.pick(DIALECT_BODIES))
        if k == 6:
            return ty.INDEX
        if k == 7:
            return self.tensor_t(dyn=0.2)
        if k == 8:
            return ty.UnrankedTensorType(element_type=self.scalar_t())
        if k == 9:
            return self.memref_t(dyn=0.2)
        if k == 10:
            return ty.UnrankedMemRefType(element_type=self.scalar_t(), memory_space=self.mem_space() if self.chance(0.5) else None)
        if k == 11:
            return ty.VectorType(shape=self.shape(min_rank=1), element_type=self.scalar_t())
        if k == 12:
            return ty.ComplexType(element_type=self.float_t())
        if k == 13:
            return ty.TupleType(types=tuple(self.any_type(depth - 1) for _ in range(self.rint(0, 3))))
        if k == 14:
            return ty.AccessTileType(shape=self.shape(dyn=0.2))
        if k == 15:
            return self.future_t()
        if k == 16:
            return self.runtime_arg_t()
        if k == 17 and fn:
            return ty.FunctionType(
                inputs=tuple(self.any_type(0) for _ in range(self.rint(0, 2))),
                results=tuple(self.any_type(0) for _ in range(self.rint(0, 2))),
            )
        return self.written(self.scalar_t(), 1.0)

    def runtime_arg_t(self) -> ty.RuntimeArgType:
        return ty.RuntimeArgType(
            value_type=self.pick((ty.INDEX, ty.I32, ty.I64)),
            granularity=self.rint(1, 8) if self.chance(0.5) else None,
            upperbound=self.rint(1, 1024) if self.chance(0.5) else None,
        )

    def future_t(self) -> ty.TileFutureType:
        partial = tuple(self.tensor_t(self.float_t(), min_rank=1) for _ in range(self.rint(1, 2)))
        groups = self.alias_attr(self.iset_eq0(), 0.3)
        return ty.TileFutureType(partial_types=partial, groups=groups)

    # ------------------------------------------------------------ affine

    def aff(self, leaves: Sequence[af.AffineExpr], depth: int = 2, semi: bool = True) -> af.AffineExpr:
        if depth <= 0 or self.chance(0.3):
            if leaves and self.chance(0.8):
                return self.pick(leaves)
            return af.const(self.rint(-8, 16))
        kinds = ("add", "add", "sub", "mul", "neg", "floordiv", "ceildiv", "mod") + (("semi",) if semi else ())
        k = self.pick(kinds)
        a = self.aff(leaves, depth - 1, semi)
        if k == "add":
            return af.add(a, self.aff(leaves, depth - 1, semi))
        if k == "sub":
            return af.sub(a, self.aff(leaves, depth - 1, semi))
        if k == "mul":
            return af.mul(a, af.const(self.rint(-4, 5)))
        if k == "neg":
            return -a
        if k == "semi":  # semi-affine: a product or quotient of two non-constants
            return af.binary(self.pick(("mul", "floordiv", "mod")), a, self.aff(leaves, depth - 1, semi))
        return af.binary(k, a, af.const(self.rint(1, 8)))  # type: ignore[arg-type]

    def amap(self, nd: int, ns: int, nres: int, depth: int = 2) -> af.AffineMap:
        leaves = [af.dim(i) for i in range(nd)] + [af.sym(i) for i in range(ns)]
        return af.AffineMap(num_dims=nd, num_symbols=ns, results=tuple(self.aff(leaves, depth) for _ in range(nres)))

    def iset(self, nd: int, ns: int) -> af.IntegerSet:
        leaves = [af.dim(i) for i in range(nd)] + [af.sym(i) for i in range(ns)]
        cons = []
        for _ in range(self.rint(0, 3)):
            op = self.pick(("==", ">=", "<="))
            cons.append(af.constraint(self.aff(leaves, 2), op, self.aff(leaves, 1)))
        return af.IntegerSet(num_dims=nd, num_symbols=ns, constraints=tuple(cons))

    def box(self, shape: Sequence[int | None], ns: int = 0) -> at.IntegerSetAttr:
        """`0 <= d_i < n_i`; dynamic extents are bounded by the symbols in turn."""
        cons = []
        sym = 0
        for i, n in enumerate(shape):
            d = af.dim(i)
            cons.append(af.constraint(d, ">=", af.const(0)))
            if n is None and sym < ns:
                cons.append(af.constraint(d, "<=", af.sub(af.sym(sym), af.const(1))))
                sym += 1
            elif n is not None:
                cons.append(af.constraint(d, "<=", af.const(n - 1)))
        return at.IntegerSetAttr(value=af.IntegerSet(num_dims=len(shape), num_symbols=ns, constraints=tuple(cons)))

    def iset_eq0(self) -> at.IntegerSetAttr:
        return at.IntegerSetAttr(
            value=af.IntegerSet(num_dims=1, num_symbols=0, constraints=(af.constraint(af.dim(0), "==", af.const(0)),))
        )

    def group_set(self) -> Attribute:
        """`(i)[g] : (i - n*g >= 0, -i + n*g + n - 1 >= 0)`."""
        n = self.pick((1, 2, 4, 32))
        i, g = af.dim(0), af.sym(0)
        s = af.IntegerSet(
            num_dims=1,
            num_symbols=1,
            constraints=(
                af.constraint(af.sub(i, af.mul(g, af.const(n))), ">=", af.const(0)),
                af.constraint(i, "<=", af.add(af.mul(g, af.const(n)), af.const(n - 1))),
            ),
        )
        return self.alias_attr(at.IntegerSetAttr(value=s), 0.3)

    def perm_map(self, n: int) -> at.AffineMapAttr:
        perm = list(range(n))
        if self.chance(0.4):
            self.r.shuffle(perm)
        return at.AffineMapAttr(value=af.AffineMap(num_dims=n, num_symbols=0, results=tuple(af.dim(p) for p in perm)))

    # ------------------------------------------------------------ attributes

    def alias_attr(self, a: Attribute, p: float) -> Attribute:
        if not self.chance(p):
            return a
        if "alias_order" in self.o.avoid and _mentions_type_alias(a):
            return a
        name = self.alias_name("a")
        self.attr_aliases[name] = a
        return at.AttrAliasRef(name=name)

    def rand_float(self) -> float:
        k = self.rint(0, 6)
        if k == 0:
            return float(self.rint(-100, 100))
        if k == 1:
            return self.pick((0.0, -0.0, 0.5, -1.25, 1e-05, 3.4e38, 5e-324, 1.7976931348623157e308, 0.1))
        if k == 2:
            return float(f"{self.rint(-99, 99)}.{self.rint(0, 999)}e{self.rint(-40, 40)}")
        return round(self.r.uniform(-1000, 1000), self.rint(0, 6))

    def float_attr(self, t: Type | None) -> at.FloatAttr:
        if isinstance(t, ty.FloatType) and t in BITS_FLOATS and self.chance(0.3):
            width = t.width
            special = {
                16: (0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8000),
                32: (0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001),
                64: (0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000),
                8: (0x7F, 0xFF, 0x80, 0x01),
            }[width]
            bits = self.pick(special) if self.chance(0.6) else self.rint(0, 2**width - 1)
            if t == ty.BF16 and bits in (0x7C00, 0xFC00, 0x7E00):
                bits = self.pick((0x7F80, 0xFF80, 0x7FC0))
            return at.FloatAttr(value=float_from_bits(bits, t), type=t, bits=bits)
        return at.FloatAttr(value=self.rand_float(), type=t)

    def int_value(self, t: Type | None) -> int:
        if t == ty.I1:
            return self.rint(0, 1)
        if t == ty.INDEX and self.chance(0.85):
            return self.rint(0, 1)
        if self.chance(0.1):
            return self.pick((2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**64 - 1))
        return self.rint(-1000, 1000)

    def string_attr(self) -> at.StringAttr:
        s = self.pick(STRINGS)
        return at.StringAttr(value=s, type=self.any_type(0) if self.chance(0.1) else None)

    def dense_values(self, shape: Sequence[int], elem: Type):  # type: ignore[no-untyped-def]
        def scalar():  # type: ignore[no-untyped-def]
            if elem == ty.I1:
                return self.chance(0.5)
            if isinstance(elem, ty.FloatType):
                return self.rand_float()
            return self.int_value(elem)

        def nested(dims: Sequence[int]):  # type: ignore[no-untyped-def]
            if not dims:
                return scalar()
            return tuple(nested(dims[1:]) for _ in range(dims[0]))

        if _numel(shape) == 0:
            return ()
        if self.chance(0.5) or len(shape) == 0 or (_numel(shape) or 0) > 16:
            return scalar()
        return nested(shape)

    def dense_attr(self, t: ty.TensorType | ty.VectorType, written: Type | None = None) -> at.DenseAttr:
        shape = tuple(d for d in t.shape if d is not None)
        elem = t.element_type
        if self.chance(0.1) and isinstance(elem, ty.FloatType | ty.IntegerType) and elem != ty.I1:
            nbytes = max((getattr(elem, "width", 8) + 7) // 8, 1) * (_numel(shape) or 0)
            digits = "".join(self.pick("0123456789ABCDEFabcdef") for _ in range(2 * nbytes))
            return at.DenseAttr(type=written or t, hex="0x" + digits)
        return at.DenseAttr(type=written or t, values=self.dense_values(shape, elem))

    def attr(self, depth: int = 2) -> Attribute:
        k = self.rint(0, 22 if depth > 0 else 12)
        if k <= 1:
            t = self.pick((None, None, ty.I32, ty.I64, ty.INDEX, ty.I1, ty.I8, ty.IntegerType(width=16, signedness="unsigned")))
            return at.IntegerAttr(value=self.int_value(t), type=t)
        if k == 2:
            return self.float_attr(self.pick((None, ty.F32, ty.F16, ty.F64, ty.BF16, ty.F8E4M3FN)))
        if k == 3:
            return at.BoolAttr(value=self.chance(0.5))
        if k == 4:
            return self.string_attr()
        if k == 5:
            return at.UnitAttr()
        if k == 6:
            et = self.pick((ty.I64, ty.I32, ty.I1, ty.I8, ty.F32, ty.F64, ty.I16))
            n = self.rint(0, 4)
            if et == ty.I1:
                vals: tuple = tuple(self.chance(0.5) for _ in range(n))
            elif isinstance(et, ty.FloatType):
                vals = tuple(self.rand_float() for _ in range(n))
            else:
                vals = tuple(self.rint(-100, 100) for _ in range(n))
            return at.DenseArrayAttr(element_type=et, values=vals)
        if k == 7:
            return at.MemorySpaceAttr(kind="global") if self.chance(0.5) else at.MemorySpaceAttr(kind="ct_local", ct_id=self.rint(0, 3))
        if k == 8:
            return at.SymbolRefAttr(root=self.pick(SYMBOL_NAMES), nested=tuple(self.pick(SYMBOL_NAMES) for _ in range(self.rint(0, 2))))
        if k == 9:
            if self.chance(0.5):
                return at.EnumAttr(dialect="linalg", name="iterator_type", value=self.pick(("parallel", "reduction")))
            return at.EnumAttr(dialect=self.pick(("foo", "my")), name=self.pick(("kind", "k.v")), value=self.pick(("abc", "x_1", "Q")))
        if k == 10:
            return at.DialectAttr(dialect=self.pick(("foo", "my")), name=self.pick(("bar", "b.c")), body=self.pick(DIALECT_BODIES))
        if k == 11:
            return at.TypeAttr(value=self.any_type(1, fn=True))
        if k == 12:
            if self.attr_aliases and self.chance(0.5):
                return at.AttrAliasRef(name=self.pick(list(self.attr_aliases)))
            return self.alias_attr(self.attr(0), 1.0)
        if k <= 14:
            return at.ArrayAttr(elements=tuple(self.attr(depth - 1) for _ in range(self.rint(0, 3))))
        if k == 15:
            keys = {self.pick(EXTRA_KEYS) for _ in range(self.rint(0, 3))}
            return _sorted_dict({key: self.attr(depth - 1) for key in keys})
        if k == 16:
            t = self.tensor_t(self.pick((ty.F32, ty.I32, ty.I1, ty.F16, ty.I64, ty.INDEX)), rank=self.rint(0, 2))
            t = ty.TensorType(shape=t.shape, element_type=t.element_type)
            return self.dense_attr(t)
        if k == 17:
            nd, ns = self.rint(0, 3), self.rint(0, 2)
            return at.AffineMapAttr(value=self.amap(nd, ns, self.rint(0, 3)))
        if k == 18:
            return at.IntegerSetAttr(value=self.iset(self.rint(0, 3), self.rint(0, 2)))
        if k == 19:
            return self.strided(self.rint(0, 3))
        if k == 20:
            return at.DenseResourceAttr(handle=self.pick(("blob", "res.x", "_r1")), type=self.tensor_t(ty.F32))
        if k == 21:
            return at.TypeAttr(value=self.written(self.scalar_t(), 1.0))
        return at.IntegerAttr(value=self.rint(-5, 5))

    def extras(self, p: float = 0.12) -> dict[str, Attribute]:
        if not self.chance(p):
            return {}
        return {self.pick(EXTRA_KEYS): self.attr(2) for _ in range(self.rint(1, 2))}

    # ------------------------------------------------------------ emission

    def emit(
        self,
        ctx: Ctx,
        name: str,
        operands: Sequence[Val] = (),
        operand_types: Sequence[Type] | None = None,
        result_types: Sequence[Type] = (),
        attrs: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
        results: list[str] | None = None,
        elems: Sequence[Type | None] | None = None,
    ) -> list[Val]:
        self.budget -= 1
        self.used_futures.update(v.name for v in operands if isinstance(self.R(v.type), ty.TileFutureType))
        names = results if results is not None else self.result_names(len(result_types))
        op = Operation(
            name=name,
            operands=[v.name for v in operands],
            operand_types=list(operand_types if operand_types is not None else [v.type for v in operands]),
            results=names,
            result_types=list(result_types),
            attributes=dict(attrs or {}),
            regions=list(regions),
        )
        self.comment(op)
        ctx.ops.append(op)
        vals = [Val(n, t, (elems[i] if elems else None)) for i, (n, t) in enumerate(zip(names, result_types, strict=True))]
        ctx.scope.values.extend(vals)
        return vals

    def comment(self, op: Operation, p: float = 0.06) -> None:
        """Leading and trailing `//` comments (metadata: not part of AST equality)."""
        if op.name in ("scf.yield", "scf.reduce") and not op.operands and not op.attributes:
            return  # may be an implicit terminator, which the printer elides
        if self.chance(p):
            op.comments = [self.pick(COMMENTS) for _ in range(self.rint(1, 2))]
        if self.chance(p):
            op.trailing_comment = self.pick(COMMENTS)

    def add_arg(self, ctx: Ctx, t: Type) -> Val:
        v = Val(self.fresh(), self.written(t, 0.15))
        ctx.fn.entry.arguments.append(BlockArgument(name=v.name, type=v.type))
        ctx.fn.root.values.append(v)
        return v

    def find(self, ctx: Ctx, pred: Callable[[Type], bool]) -> list[Val]:
        return [v for v in ctx.scope.all() if v.name not in self.used_futures and pred(self.R(v.type))]

    def get(self, ctx: Ctx, t: Type, fresh: float = 0.3) -> Val:
        """A value of type `t` in scope, or a new one."""
        cands = self.find(ctx, lambda u: u == t)
        if cands and not self.chance(fresh):
            return self.pick(cands)
        return self.make(ctx, t)

    def get_index(self, ctx: Ctx) -> Val:
        return self.get(ctx, ty.INDEX, 0.4)

    def mixed(self, ctx: Ctx, values: Sequence[int], dyn: float) -> tuple[list[int], list[Val]]:
        """Static entries with kDynamic holes, and the dynamic index operands."""
        static: list[int] = []
        dynamic: list[Val] = []
        for v in values:
            if self.chance(dyn):
                static.append(KDYNAMIC)
                dynamic.append(self.get_index(ctx))
            else:
                static.append(v)
        return static, dynamic

    def make(self, ctx: Ctx, t: Type) -> Val:
        """Materialise a new value of type `t`."""
        if isinstance(t, ty.TileFutureType):
            return self.m_produce(ctx, t)
        if isinstance(t, ty.AccessTileType):
            return self.m_access_tile(ctx, shape=t.shape)
        if self.chance(0.1):
            return self.add_arg(ctx, t)
        if isinstance(t, ty.IndexType) or (isinstance(t, ty.IntegerType) and t.signedness == "signless"):
            return self.constant(ctx, t)
        if isinstance(t, ty.FloatType):
            return self.constant(ctx, t)
        if isinstance(t, ty.TensorType) and isinstance(t.element_type, ty.IntegerType | ty.FloatType | ty.IndexType):
            x = self.r.random()
            if t.has_static_shape and t.encoding is None and x < 0.4:
                return self.constant(ctx, t)
            if x < 0.7:
                sizes = [self.get_index(ctx) for d in t.shape if d is None]
                scalar = self.get(ctx, t.element_type)
                return self.emit(ctx, "tensor.splat", [scalar, *sizes], [t.element_type] + [ty.INDEX] * len(sizes), [t])[0]
            return self.empty(ctx, "tensor.empty", t)
        if isinstance(t, ty.TensorType):
            return self.empty(ctx, "tensor.empty", t)
        if isinstance(t, ty.VectorType) and isinstance(t.element_type, ty.IntegerType | ty.FloatType | ty.IndexType):
            return self.constant(ctx, t)
        if isinstance(t, ty.MemRefType):
            if self.chance(0.5) and t.rank > 0:
                return self.m_memory_view(ctx, t)
            return self.empty(ctx, self.pick(("memref.alloc", "memref.alloca")), t)
        return self.add_arg(ctx, t)

    def empty(self, ctx: Ctx, name: str, t: ty.TensorType | ty.MemRefType) -> Val:
        sizes = [self.get_index(ctx) for d in t.shape if d is None]
        return self.emit(ctx, name, sizes, [ty.INDEX] * len(sizes), [self.written(t)], self.extras())[0]

    def constant(self, ctx: Ctx, t: Type) -> Val:
        if t == ty.I1 and self.chance(0.5):
            value: Attribute = at.BoolAttr(value=self.chance(0.5))
        elif isinstance(t, ty.IntegerType | ty.IndexType):
            value = at.IntegerAttr(value=self.int_value(t), type=t)
        elif isinstance(t, ty.FloatType):
            value = self.float_attr(t)
        else:
            assert isinstance(t, ty.TensorType | ty.VectorType)
            value = self.dense_attr(t, self.written(t))
        rt = value.type if isinstance(value, at.DenseAttr) else t
        return self.emit(ctx, "arith.constant", [], [], [rt], {**self.extras(0.05), "value": value})[0]

    # ------------------------------------------------------------ blocks

    def fill(self, ctx: Ctx, n: int | None = None) -> None:
        if n is None:
            n = 0 if ctx.depth > self.o.max_depth else self.rint(0, self.o.max_ops)
        for _ in range(n):
            if self.budget <= 0:
                return
            self.make_op(ctx, self.pick(FREE_OPS))

    def child(self, ctx: Ctx, ops: list[Operation] | None = None, loops: int = 0) -> Ctx:
        return Ctx(ops if ops is not None else [], Scope(ctx.scope), ctx.fn, ctx.depth + 1, loops)

    def block_args(self, ctx: Ctx, types: Sequence[Type]) -> list[BlockArgument]:
        args = [BlockArgument(name=self.fresh(), type=t) for t in types]
        ctx.scope.values.extend(Val(a.name, a.type) for a in args)
        return args

    def body(
        self,
        ctx: Ctx,
        arg_types: Sequence[Type],
        terminator: str | None,
        yield_types: Sequence[Type] = (),
        loops: int = 0,
        arg_names: Sequence[str] | None = None,
        term_attrs: bool = False,
    ) -> Block:
        """A single-block region body: arguments, random ops, then the terminator."""
        inner = self.child(ctx, loops=loops)
        if arg_names is None:
            args = self.block_args(inner, arg_types)
        else:
            args = [BlockArgument(name=n, type=t) for n, t in zip(arg_names, arg_types, strict=True)]
            inner.scope.values.extend(Val(a.name, a.type) for a in args)
        if loops and self.chance(0.6):
            self.emit(inner, "linalg.index", [], [], [ty.INDEX], {"dim": at.IntegerAttr(value=self.rint(0, loops - 1), type=ty.I64)})
        self.fill(inner)
        if terminator is not None:
            vals = [self.get(inner, self.R(t), 0.1) for t in yield_types]
            attrs = self.extras(0.3 if term_attrs else 0.0)
            self.emit(inner, terminator, vals, list(yield_types), [], attrs)
        return Block(arguments=args, operations=inner.ops)

    # ------------------------------------------------------------ op dispatch

    def make_op(self, ctx: Ctx, name: str) -> None:
        if name == UNKNOWN_OP:
            if self.o.unknown_ops:
                self.m_unknown(ctx)
            return
        d = OPS[name]
        special = getattr(self, "op_" + name.replace(".", "_"), None)
        if special is not None:
            special(ctx)
            return
        getattr(self, "f_" + d.format.lower())(ctx, name)

    # arith / math -------------------------------------------------------

    def op_arith_constant(self, ctx: Ctx) -> None:
        k = self.rint(0, 4)
        if k == 0:
            t: Type = self.int_t()
        elif k == 1:
            t = self.float_t()
        elif k == 2:
            t = self.tensor_t(self.scalar_t(), rank=self.rint(0, 2))
            t = ty.TensorType(shape=t.shape, element_type=t.element_type)
        elif k == 3:
            t = ty.VectorType(shape=self.shape(min_rank=1), element_type=self.scalar_t())
        else:
            value = at.StringAttr(value=self.pick(STRINGS), type=self.any_type(0))
            self.emit(ctx, "arith.constant", [], [], [value.type], {"value": value})  # type: ignore[list-item]
            return
        self.constant(ctx, t)

    def _class_elem(self, kind: TypeConstraint) -> Type:
        """An element type the op's typed operand constraint accepts."""
        if kind.accepts(ty.F32):
            return self.float_t()
        if not kind.accepts(ty.INDEX):
            return self.pick(SIGNLESS_INTS)
        return self.int_t()

    def _elementwise(self, ctx: Ctx, name: str) -> None:
        d = OPS[name]
        kind = d.operands[0].type
        t = self.shaped_or_scalar(self._class_elem(kind))
        vals = [self.get(ctx, t) for _ in d.operands]
        wt = self.written(t)
        attrs = self.extras(0.08)
        if kind.accepts(ty.F32) and self.chance(0.3):
            attrs["fastmath"] = at.EnumAttr(dialect="arith", name="fastmath", value=self.pick(FASTMATH))
        if name in ("arith.addi", "arith.subi", "arith.muli", "arith.shli") and self.chance(0.4):
            attrs["overflowFlags"] = at.EnumAttr(dialect="arith", name="overflow", value=self.pick(OVERFLOW))
        self.emit(ctx, name, vals, [wt] * len(vals), [wt], attrs)

    f_binary = f_unary = f_ternary = _elementwise

    def _same_shape(self, t: Type, elem: Type) -> Type:
        if isinstance(t, ty.TensorType):
            return ty.TensorType(shape=t.shape, element_type=elem, encoding=t.encoding)
        if isinstance(t, ty.VectorType):
            return ty.VectorType(shape=t.shape, element_type=elem)
        return elem

    def f_cast(self, ctx: Ctx, name: str) -> None:
        if name in ("memref.cast", "tensor.cast"):
            if name == "memref.cast":
                src: Type = self.memref_t(rank=self.rint(1, 3))
            else:
                src = self.tensor_t(rank=self.rint(1, 3), dyn=0.3)
            assert isinstance(src, ty.MemRefType | ty.TensorType)
            dst_shape = tuple(
                (None if d is not None and self.chance(0.5) else (self.dim() if d is None else d)) for d in src.shape
            )
            dst = src.model_copy(update={"shape": dst_shape})
            v = self.get(ctx, src)
            self.emit(ctx, name, [v], [v.type], [self.written(dst)], self.extras())
            return
        a, b = self._cast_types(name)
        shape_src = self.shaped_or_scalar(a)
        src_t, dst_t = shape_src, self._same_shape(shape_src, b)
        v = self.get(ctx, src_t)
        self.emit(ctx, name, [v], [v.type], [self.written(dst_t)], self.extras())

    def _cast_types(self, name: str) -> tuple[Type, Type]:
        op = name.split(".", 1)[1]
        floats = [ty.F16, ty.BF16, ty.F32, ty.F64]
        if op in ("extf", "truncf"):
            i = self.rint(0, 2)
            lo = floats[i] if i < 2 else ty.F32
            hi = self.pick([f for f in floats if f.width > lo.width])
            return (lo, hi) if op == "extf" else (hi, lo)
        if op in ("extsi", "extui", "trunci"):
            i = self.rint(0, 2)
            lo, hi = (ty.I1, *SIGNLESS_INTS)[i], self.pick(SIGNLESS_INTS[i:])
            return (lo, hi) if op != "trunci" else (hi, lo)
        if op in ("sitofp", "uitofp"):
            return self.pick(SIGNLESS_INTS), self.float_t()
        if op in ("fptosi", "fptoui"):
            return self.float_t(), self.pick(SIGNLESS_INTS)
        if op in ("index_cast", "index_castui"):
            i = self.pick(SIGNLESS_INTS)
            return (ty.INDEX, i) if self.chance(0.5) else (i, ty.INDEX)
        pairs = [(ty.I32, ty.F32), (ty.I16, ty.F16), (ty.I16, ty.BF16), (ty.I64, ty.F64), (ty.F16, ty.BF16), (ty.I8, ty.F8E4M3FN)]
        a, b = self.pick(pairs)
        return (a, b) if self.chance(0.5) else (b, a)

    def f_cmp(self, ctx: Ctx, name: str) -> None:
        preds = OPS[name].option("predicates")
        assert isinstance(preds, tuple)
        elem = self.float_t() if name == "arith.cmpf" else self.int_t()
        t = self.shaped_or_scalar(elem)
        a, b = self.get(ctx, t), self.get(ctx, t)
        attrs = {**self.extras(0.08), "predicate": at.IntegerAttr(value=self.rint(0, len(preds) - 1), type=ty.I64)}
        self.emit(ctx, name, [a, b], [t, t], [i1_like(t)], attrs)

    def f_select(self, ctx: Ctx, name: str) -> None:
        t = self.value_t() if self.chance(0.8) else self.any_type(1)
        cond_t: Type = ty.I1
        if isinstance(t, ty.TensorType) and self.chance(0.5):
            cond_t = ty.TensorType(shape=t.shape, element_type=ty.I1)
        c, a, b = self.get(ctx, cond_t), self.get(ctx, t), self.get(ctx, t)
        wt = self.written(t)
        self.emit(ctx, name, [c, a, b], [cond_t, wt, wt], [wt], self.extras())

    # ktdp ---------------------------------------------------------------

    def f_tile_id(self, ctx: Ctx, name: str) -> None:
        self.emit(ctx, name, [], [], [ty.INDEX] * ctx.fn.grid_rank, self.extras(0.05))

    def m_memory_view(self, ctx: Ctx, t: ty.MemRefType | None = None) -> Val:
        if t is None:
            t = ty.MemRefType(shape=self.shape(dyn=0.2, min_rank=1), element_type=self.scalar_t())
        offset = self.get_index(ctx)
        sizes: list[int] = []
        dyn_sizes: list[Val] = []
        for d in t.shape:
            if d is None:
                sizes.append(KDYNAMIC)
                dyn_sizes.append(self.get_index(ctx))
            else:
                sizes.append(d)
        strides, dyn_strides = self.mixed(ctx, [self.pick((1, 2, 4, 64)) for _ in t.shape], 0.15)
        attrs: dict[str, Attribute] = {
            **self.extras(0.05),
            "static_sizes": _i64s(sizes),
            "static_strides": _i64s(strides),
            "operandSegmentSizes": _segments(1, len(dyn_sizes), len(dyn_strides)),
            "memory_space": self.mem_space(),
        }
        if self.chance(0.6):
            attrs["coordinate_set"] = self.alias_attr(self.box(t.shape, len(dyn_sizes)), 0.3)
        operands = [offset, *dyn_sizes, *dyn_strides]
        return self.emit(ctx, "ktdp.construct_memory_view", operands, [ty.INDEX] * len(operands), [self.written(t)], attrs)[0]

    def f_memory_view(self, ctx: Ctx, name: str) -> None:
        self.m_memory_view(ctx)

    def f_distributed_view(self, ctx: Ctx, name: str) -> None:
        elem = self.scalar_t()
        rank = self.rint(1, 2)
        parts = [self.get(ctx, ty.MemRefType(shape=self.shape(rank), element_type=elem)) for _ in range(self.rint(1, 3))]
        result = ty.MemRefType(shape=self.shape(rank), element_type=elem)
        self.emit(ctx, name, parts, [p.type for p in parts], [self.written(result)], self.extras())

    def _base(self, ctx: Ctx, rank: int) -> Val:
        if self.chance(0.15):
            return self.get(ctx, self.tensor_t(rank=rank))
        cands = self.find(ctx, lambda u: isinstance(u, ty.MemRefType) and u.rank == rank)
        if cands and self.chance(0.6):
            return self.pick(cands)
        return self.get(ctx, ty.MemRefType(shape=self.shape(rank, 0.1), element_type=self.scalar_t()), 1.0)

    def m_access_tile(self, ctx: Ctx, shape: tuple[int | None, ...] | None = None) -> Val:
        rank = len(shape) if shape is not None else self.rint(1, 3)
        base = self._base(ctx, rank)
        pool = {v.name: v for v in (self.get_index(ctx) for _ in range(self.rint(0, 3)))}
        leaves: list[af.AffineExpr] = [_AffName(name=n) for n in pool]
        if pool and self.chance(0.2):
            sym = self.pick(list(pool))
            if "dim_and_symbol" in self.o.avoid:
                leaves = [x for x in leaves if x.name != sym]  # type: ignore[attr-defined]
            leaves.append(_AffName(name=sym, is_symbol=True))
        exprs = [self.aff(leaves, 2) for _ in range(rank)]
        sm = ssa_map(exprs)
        n_sym = self.rint(0, 2) if shape is None else sum(d is None for d in shape)
        if shape is None:
            shape = tuple(None if i < n_sym and self.chance(0.7) else self.dim() for i in range(rank))
        symbols = [self.get_index(ctx) for _ in range(n_sym)]
        attrs: dict[str, Attribute] = {
            **self.extras(0.05),
            "base_map": at.AffineMapAttr(value=sm.map),
            "access_tile_set": self.alias_attr(self.box(shape, n_sym), 0.3),
            "access_tile_order": self.alias_attr(self.perm_map(rank), 0.2),
            "operandSegmentSizes": _segments(1, len(sm.operands), len(symbols)),
        }
        operands = [base, *(pool[n] for n in sm.operands), *symbols]
        types = [base.type] + [ty.INDEX] * (len(operands) - 1)
        elem = ty.element_type(self.R(base.type))
        result = ty.AccessTileType(shape=shape)
        return self.emit(ctx, "ktdp.construct_access_tile", operands, types, [self.written(result)], attrs, elems=[elem])[0]

    def f_access_tile(self, ctx: Ctx, name: str) -> None:
        self.m_access_tile(ctx)

    def f_indirect_tile(self, ctx: Ctx, name: str) -> None:
        rank = self.rint(1, 2)
        base = self._base(ctx, rank)
        k = self.rint(1, 2)
        variables = [self.fresh() for _ in range(k)]
        outer = {v.name: v for v in (self.get_index(ctx) for _ in range(self.rint(0, 2)))}
        leaves: list[af.AffineExpr] = [_AffName(name=n) for n in variables + list(outer)]
        dims: list[tuple[Val | None, list[af.AffineExpr]]] = []
        for _ in range(rank):
            if self.chance(0.5):
                vrank = self.rint(1, 2)
                view = self.get(ctx, ty.MemRefType(shape=self.shape(vrank), element_type=self.pick((ty.I32, ty.I64, ty.INDEX))))
                dims.append((view, [self.aff(leaves, 1) for _ in range(vrank)]))
            else:
                dims.append((None, [self.aff(leaves, 2)]))
        all_exprs = [e for _, es in dims for e in es]
        captured = [n for n in ssa_map(all_exprs, variables).operands if n not in variables]
        kinds: list[bool] = []
        maps: list[Attribute] = []
        views: list[Val] = []
        for view, exprs in dims:
            sm = ssa_map(exprs, variables + captured)
            kinds.append(view is not None)
            maps.append(at.AffineMapAttr(value=sm.map))
            if view is not None:
                views.append(view)
        symbols = [self.get_index(ctx) for _ in range(self.rint(0, 1))]
        shape = tuple(None if (i == 0 and symbols) else self.dim() for i in range(k))
        attrs: dict[str, Attribute] = {
            **self.extras(0.05),
            "per_dim_subscript_kinds": at.DenseArrayAttr(element_type=ty.I1, values=tuple(kinds)),
            "per_dim_subscript_maps": at.ArrayAttr(elements=tuple(maps)),
            "operandSegmentSizes": _segments(1, len(views), len(captured), len(symbols)),
            "variables_space_set": self.alias_attr(self.box(shape, len(symbols)), 0.3),
            "variables_space_order": self.alias_attr(self.perm_map(k), 0.2),
        }
        operands = [base, *views, *(outer[n] for n in captured), *symbols]
        types = [base.type, *(v.type for v in views)] + [ty.INDEX] * (len(captured) + len(symbols))
        region = Region(
            blocks=[
                Block(
                    arguments=[BlockArgument(name=v, type=ty.INDEX) for v in variables],
                    operations=[Operation(name="ktdp.region_terminator")],
                )
            ]
        )
        elem = ty.element_type(self.R(base.type))
        self.emit(ctx, name, operands, types, [ty.AccessTileType(shape=shape)], attrs, [region], elems=[elem])

    def _tile(self, ctx: Ctx) -> Val:
        cands = self.find(ctx, lambda u: isinstance(u, ty.AccessTileType))
        if cands and self.chance(0.7):
            return self.pick(cands)
        return self.m_access_tile(ctx)

    def f_load(self, ctx: Ctx, name: str) -> None:
        tile = self._tile(ctx)
        tt = self.R(tile.type)
        assert isinstance(tt, ty.AccessTileType)
        elem = tile.elem or self.scalar_t()
        result = ty.TensorType(shape=tt.shape, element_type=elem)
        self.emit(ctx, name, [tile], [tile.type], [self.written(result)], self.extras())

    def f_store(self, ctx: Ctx, name: str) -> None:
        tile = self._tile(ctx)
        tt = self.R(tile.type)
        assert isinstance(tt, ty.AccessTileType)
        data = self.get(ctx, ty.TensorType(shape=tt.shape, element_type=tile.elem or self.scalar_t()))
        self.emit(ctx, name, [data, tile], [data.type, tile.type], [], self.extras())

    def f_runtime_arg_extract(self, ctx: Ctx, name: str) -> None:
        cands = self.find(ctx, lambda u: isinstance(u, ty.RuntimeArgType))
        arg = self.pick(cands) if cands and self.chance(0.7) else self.add_arg(ctx, self.runtime_arg_t())
        rt = self.R(arg.type)
        assert isinstance(rt, ty.RuntimeArgType)
        kinds = ["value"] + [k for k in ("granularity", "upperbound") if getattr(rt, k) is not None]
        kind = self.pick(kinds)
        result = rt.value_type if kind == "value" else ty.INDEX
        attrs = {**self.extras(), "kind": at.EnumAttr(dialect="ktdp", name="runtime_arg_kind", value=kind)}
        self.emit(ctx, name, [arg], [arg.type], [result], attrs)

    def m_produce(self, ctx: Ctx, ft: ty.TileFutureType | None = None) -> Val:
        ft = ft or self.future_t()
        block = self.body(ctx, [ty.INDEX], "ktdp.yield_partial", list(ft.partial_types), term_attrs=True)
        attrs = {**self.extras(0.05), "producer_tiles_per_group": self.group_set()}
        return self.emit(ctx, "ktdp.inter_tile_produce", [], [], [self.written(ft)], attrs, [Region(blocks=[block])])[0]

    def op_ktdp_inter_tile_produce(self, ctx: Ctx) -> None:
        # a future has exactly one use: produce it for a consumer
        self.make_op(ctx, self.pick([n for n, d in OPS.items() if d.format in ("CONSUME", "REDUCE", "COLLECTIVE")]))

    def _future(self, ctx: Ctx) -> tuple[Val, ty.TileFutureType]:
        cands = self.find(ctx, lambda u: isinstance(u, ty.TileFutureType))
        fut = self.pick(cands) if cands and self.chance(0.5) else self.m_produce(ctx)
        self.used_futures.add(fut.name)
        ft = self.R(fut.type)
        assert isinstance(ft, ty.TileFutureType)
        return fut, ft

    def _inter_tile(self, ctx: Ctx, name: str) -> None:
        fut, ft = self._future(ctx)
        d = OPS[name]
        partial = list(ft.partial_types)
        attrs: dict[str, Attribute] = {**self.extras(0.05), "consumer_tiles_per_group": self.group_set()}
        if self.chance(0.4):
            attrs["producer_dependency_per_consumer"] = self.alias_attr(at.IntegerSetAttr(value=self.iset(1, self.rint(1, 2))), 0.2)
        rank = min(t.rank for t in partial if isinstance(t, ty.TensorType))
        dims = sorted({self.rint(0, rank - 1) for _ in range(self.rint(1, 2))})
        for a in d.attributes:
            if a.name.endswith("_dimensions"):
                attrs[a.name] = _i64s(dims)
        operands = [fut]
        regions: list[Region] = []
        if d.regions:
            if self.chance(0.6):
                operands += [self.get(ctx, t) for t in partial]
            block = self.body(ctx, partial + partial, "ktdp.yield_reduced", partial, term_attrs=True)
            regions.append(Region(blocks=[block]))
        self.emit(ctx, name, operands, [fut.type] + [o.type for o in operands[1:]], partial, attrs, regions)

    def f_consume(self, ctx: Ctx, name: str) -> None:
        self._inter_tile(ctx, name)

    def f_reduce(self, ctx: Ctx, name: str) -> None:
        self._inter_tile(ctx, name)

    def f_collective(self, ctx: Ctx, name: str) -> None:
        self._inter_tile(ctx, name)

    # scf ----------------------------------------------------------------

    def f_for(self, ctx: Ctx, name: str) -> None:
        iv_t = ty.INDEX if self.chance(0.8) else self.pick((ty.I32, ty.I64, ty.I16))
        lb, ub = self.get(ctx, iv_t), self.get(ctx, iv_t)
        step = self.emit(ctx, "arith.constant", [], [], [iv_t], {"value": at.IntegerAttr(value=self.rint(1, 4), type=iv_t)})[0]
        types = [self.value_t() for _ in range(self.rint(0, 2))]
        inits = [self.get(ctx, t) for t in types]
        wtypes = [self.written(t) for t in types]
        block = self.body(ctx, [iv_t, *wtypes], "scf.yield", wtypes, term_attrs=not types)
        self.emit(ctx, name, [lb, ub, step, *inits], [iv_t] * 3 + wtypes, wtypes, self.extras(), [Region(blocks=[block])])

    def f_if(self, ctx: Ctx, name: str) -> None:
        cond = self.get(ctx, ty.I1)
        types = [self.written(self.value_t()) for _ in range(self.rint(0, 2))]
        then = self.body(ctx, [], "scf.yield", types, term_attrs=not types)
        other = Region()
        if types or self.chance(0.5):
            other = Region(blocks=[self.body(ctx, [], "scf.yield", types, term_attrs=not types)])
        self.emit(ctx, name, [cond], [ty.I1], types, self.extras(), [Region(blocks=[then]), other])

    def f_while(self, ctx: Ctx, name: str) -> None:
        ins = [self.written(self.value_t()) for _ in range(self.rint(0, 2))]
        outs = [self.written(self.value_t()) for _ in range(self.rint(0, 2))]
        inits = [self.get(ctx, self.R(t)) for t in ins]
        before_ctx = self.child(ctx)
        before_args = self.block_args(before_ctx, ins)
        self.fill(before_ctx)
        cond = self.get(before_ctx, ty.I1)
        passed = [self.get(before_ctx, self.R(t)) for t in outs]
        self.emit(before_ctx, "scf.condition", [cond, *passed], [ty.I1, *outs], [], self.extras(0.1))
        after = self.body(ctx, outs, "scf.yield", ins)
        regions = [Region(blocks=[Block(arguments=before_args, operations=before_ctx.ops)]), Region(blocks=[after])]
        attrs = {} if "while_attrs" in self.o.avoid else self.extras()
        self.emit(ctx, name, inits, ins, outs, attrs, regions)

    def f_parallel(self, ctx: Ctx, name: str) -> None:
        n = self.rint(1, 2)
        bounds = [self.get_index(ctx) for _ in range(3 * n)]
        types = [self.scalar_t() for _ in range(self.rint(0, 2))]
        inits = [self.get(ctx, t) for t in types]
        inner = self.child(ctx)
        ivs = self.block_args(inner, [ty.INDEX] * n)
        self.fill(inner)
        if types:
            vals = [self.get(inner, t) for t in types]
            combiners = [Region(blocks=[self.body(inner, [t, t], "scf.reduce.return", [t])]) for t in types]
            self.emit(inner, "scf.reduce", vals, types, [], self.extras(0.1), combiners)
        else:
            self.emit(inner, "scf.reduce", [], [], [], self.extras(0.2))
        attrs = {**self.extras(), "operandSegmentSizes": _segments(n, n, n, len(types))}
        region = Region(blocks=[Block(arguments=ivs, operations=inner.ops)])
        self.emit(ctx, name, [*bounds, *inits], [ty.INDEX] * (3 * n) + types, types, attrs, [region])

    def _slice_parts(
        self, ctx: Ctx, shape: Sequence[int], dyn: float
    ) -> tuple[dict[str, Attribute], list[list[Val]], tuple[int | None, ...]]:
        """Offsets, sizes and strides into `shape`; returns static arrays, dynamic operands, result shape."""
        offs = [self.rint(0, max(d - 1, 0)) for d in shape]
        strides = [1 if self.chance(0.7) else 2 for _ in shape]
        sizes = [self.rint(1, max((d - o - 1) // st + 1, 1)) for d, o, st in zip(shape, offs, strides, strict=True)]
        s_off, d_off = self.mixed(ctx, offs, dyn)
        s_size, d_size = self.mixed(ctx, sizes, dyn)
        s_str, d_str = self.mixed(ctx, strides, dyn)
        attrs: dict[str, Attribute] = {
            "static_offsets": _i64s(s_off),
            "static_sizes": _i64s(s_size),
            "static_strides": _i64s(s_str),
        }
        out = tuple(None if s == KDYNAMIC else s for s in s_size)
        return attrs, [d_off, d_size, d_str], out

    def f_forall(self, ctx: Ctx, name: str) -> None:
        n = self.rint(1, 2)
        simple = self.chance(0.5)
        lbs = [0] * n if simple else [self.rint(0, 4) for _ in range(n)]
        ubs = [self.rint(1, 16) for _ in range(n)]
        steps = [1] * n if simple else [self.rint(1, 3) for _ in range(n)]
        s_lb, d_lb = self.mixed(ctx, lbs, 0.0 if simple else 0.3)
        s_ub, d_ub = self.mixed(ctx, ubs, 0.3)
        s_st, d_st = self.mixed(ctx, steps, 0.0 if simple else 0.3)
        types = [self.tensor_t(self.float_t(), min_rank=1) for _ in range(self.rint(0, 2))]
        outs = [self.get(ctx, t) for t in types]
        inner = self.child(ctx)
        args = self.block_args(inner, [ty.INDEX] * n + types)
        self.fill(inner)
        inserts: list[Operation] = []
        for arg, t in zip(args[n:], types, strict=True):
            if not self.chance(0.8):
                continue
            assert all(d is not None for d in t.shape)
            attrs, dyn, out = self._slice_parts(inner, [d or 1 for d in t.shape], 0.2)
            src = self.get(inner, ty.TensorType(shape=out, element_type=t.element_type))
            flat = [v for g in dyn for v in g]
            attrs["operandSegmentSizes"] = _segments(1, 1, *(len(g) for g in dyn))
            inserts.append(
                Operation(
                    name="tensor.parallel_insert_slice",
                    operands=[src.name, arg.name, *(v.name for v in flat)],
                    operand_types=[src.type, t, *[ty.INDEX] * len(flat)],
                    attributes=attrs,
                )
            )
        self.emit(inner, "scf.forall.in_parallel", [], [], [], self.extras(0.1), [Region(blocks=[Block(operations=inserts)])])
        attrs2: dict[str, Attribute] = {
            **self.extras(),
            "staticLowerBound": _i64s(s_lb),
            "staticUpperBound": _i64s(s_ub),
            "staticStep": _i64s(s_st),
            "operandSegmentSizes": _segments(len(d_lb), len(d_ub), len(d_st), len(outs)),
        }
        dyn_ops = [*d_lb, *d_ub, *d_st]
        region = Region(blocks=[Block(arguments=args, operations=inner.ops)])
        self.emit(ctx, name, [*dyn_ops, *outs], [ty.INDEX] * len(dyn_ops) + types, types, attrs2, [region])

    def f_execute_region(self, ctx: Ctx, name: str) -> None:
        types = [self.written(self.value_t()) for _ in range(self.rint(0, 2))]
        block = self.body(ctx, [], "scf.yield", types)
        self.emit(ctx, name, [], [], types, self.extras(), [Region(blocks=[block])])

    # affine -------------------------------------------------------------

    def f_affine_apply(self, ctx: Ctx, name: str) -> None:
        nd, ns = self.rint(0, 3), self.rint(0, 2)
        nres = 1 if name == "affine.apply" else self.rint(1, 3)
        leaves = [af.dim(i) for i in range(nd)] + [af.sym(i) for i in range(ns)]
        results = tuple(self.aff(leaves, 2, semi=False) for _ in range(nres))
        amap = af.AffineMap(num_dims=nd, num_symbols=ns, results=results)
        operands = [self.get_index(ctx) for _ in range(nd + ns)]
        attrs = {**self.extras(), "map": self.alias_attr(at.AffineMapAttr(value=amap), 0.2)}
        self.emit(ctx, name, operands, [ty.INDEX] * len(operands), [ty.INDEX], attrs)

    # linalg -------------------------------------------------------------

    def _dps(
        self,
        ctx: Ctx,
        name: str,
        ins: Sequence[Type],
        outs: Sequence[Type],
        attrs: dict[str, Attribute],
        regions: Sequence[Region] = (),
        buffers: bool = False,
    ) -> None:
        in_vals = [self.get(ctx, t) for t in ins]
        out_vals = [self.get(ctx, t) for t in outs]
        attrs = {**attrs, "operandSegmentSizes": _segments(len(ins), len(outs))}
        results = [] if buffers else [t for t in outs if isinstance(t, ty.TensorType)]
        self.emit(ctx, name, [*in_vals, *out_vals], [*ins, *outs], results, attrs, regions)

    def f_linalg_named(self, ctx: Ctx, name: str) -> None:
        op = name.split(".", 1)[1]
        elem = self.float_t()
        buffers = self.chance(0.15)

        def shaped(shape: Sequence[int]) -> Type:
            if buffers:
                return ty.MemRefType(shape=tuple(shape), element_type=elem)
            return ty.TensorType(shape=tuple(shape), element_type=elem)

        attrs = self.extras()
        s = self.shape(min_rank=1)
        t = shaped([d or 1 for d in s])
        m, n, k, b = self.dim(), self.dim(), self.dim(), self.dim()
        if op in ("add", "sub", "mul", "div", "max", "min", "powf"):
            ins, outs = [t, t], [t]
        elif op == "fill":
            ins, outs = [elem], [t]
        elif op in ("matmul", "matmul_transpose_a", "matmul_transpose_b"):
            a_shape = [k, m] if op.endswith("_a") else [m, k]
            b_shape = [n, k] if op.endswith("_b") else [k, n]
            ins, outs = [shaped(a_shape), shaped(b_shape)], [shaped([m, n])]
            if op == "matmul" and self.chance(0.4):
                d0, d1, d2 = af.dim(0), af.dim(1), af.dim(2)
                maps = [(d0, d2), (d2, d1), (d0, d1)]
                written = at.ArrayAttr(
                    elements=tuple(
                        self.alias_attr(at.AffineMapAttr(value=af.AffineMap(num_dims=3, num_symbols=0, results=r)), 0.2)
                        for r in maps
                    )
                )
                # the default maps written out are no maps in the AST (as in MLIR); through
                # an alias they are kept as written
                if any(isinstance(e, at.AttrAliasRef) for e in written.elements):
                    attrs["indexing_maps"] = written
        elif op == "batch_matmul":
            ins, outs = [shaped([b, m, k]), shaped([b, k, n])], [shaped([b, m, n])]
        elif op == "batch_matmul_transpose_b":
            ins, outs = [shaped([b, m, k]), shaped([b, n, k])], [shaped([b, m, n])]
        elif op == "dot":
            ins, outs = [shaped([k]), shaped([k])], [shaped([])]
        elif op == "matvec":
            ins, outs = [shaped([m, k]), shaped([k])], [shaped([m])]
        else:  # unary elementwise, copy
            ins, outs = [t], [t]
        self._dps(ctx, name, ins, outs, attrs, buffers=buffers)

    def f_linalg_generic(self, ctx: Ctx, name: str) -> None:
        loops = self.rint(1, 3)
        sizes = [self.dim() for _ in range(loops)]
        iters = ["reduction" if i == loops - 1 and loops > 1 and self.chance(0.4) else "parallel" for i in range(loops)]
        elem = self.float_t()
        par = [i for i in range(loops) if iters[i] == "parallel"]

        def proj(dims: Sequence[int]) -> af.AffineMap:
            return af.AffineMap(num_dims=loops, num_symbols=0, results=tuple(af.dim(i) for i in dims))

        ins: list[Type] = []
        maps: list[af.AffineMap] = []
        for _ in range(self.rint(0, 2)):
            if self.chance(0.2):
                ins.append(elem)
                maps.append(proj([]))
            else:
                dims = list(range(loops))
                if self.chance(0.3):
                    self.r.shuffle(dims)
                ins.append(ty.TensorType(shape=tuple(sizes[i] for i in dims), element_type=elem))
                maps.append(proj(dims))
        out_elem = self.pick((elem, elem, self.float_t()))
        outs: list[Type] = [ty.TensorType(shape=tuple(sizes[i] for i in par), element_type=out_elem)]
        maps.append(proj(par))
        attrs: dict[str, Attribute] = {
            "indexing_maps": at.ArrayAttr(elements=tuple(self.alias_attr(at.AffineMapAttr(value=m), 0.15) for m in maps)),
            "iterator_types": at.ArrayAttr(
                elements=tuple(at.EnumAttr(dialect="linalg", name="iterator_type", value=i) for i in iters)
            ),
        }
        if self.chance(0.2):
            attrs["doc"] = self.string_attr()
        if self.chance(0.2):
            attrs["library_call"] = at.StringAttr(value=self.pick(("my_lib", "fn.x")))
        attrs.update(self.extras(0.2))
        block = self.body(ctx, [ty.element_type(t) for t in ins + outs], "linalg.yield", [out_elem], loops=loops)
        self._dps(ctx, name, ins, outs, attrs, [Region(blocks=[block])])

    def _short_op(self, elem: Type, arity: int) -> str | None:
        fmt = {1: "UNARY", 2: "BINARY", 3: "TERNARY"}[arity]
        names = [
            n
            for n, d in OPS.items()
            if d.format == fmt
            and d.operands[0].type.accepts(elem)
        ]
        return self.pick(names) if names else None

    def f_linalg_map(self, ctx: Ctx, name: str) -> None:
        shape = self.shape(min_rank=1)
        elem = self.scalar_t()
        k = self.rint(1, 3)
        buffers = self.chance(0.1)
        kind = ty.MemRefType if buffers else ty.TensorType
        ins: list[Type] = [kind(shape=shape, element_type=elem) for _ in range(k)]
        out_elem = elem if self.chance(0.8) else self.scalar_t()
        outs: list[Type] = [kind(shape=shape, element_type=out_elem)]
        short = self._short_op(elem, k) if out_elem == elem and self.chance(0.6) else None
        if short is not None:
            # MLIR 22 gives the short body one argument per input plus one for the init element
            args = [BlockArgument(name=short_body_input(i), type=elem) for i in range(k)]
            inner = Operation(
                name=short,
                operands=[a.name for a in args],
                operand_types=[elem] * k,
                results=[SHORT_BODY_RESULT],
                result_types=[elem],
            )
            yld = Operation(name="linalg.yield", operands=[SHORT_BODY_RESULT], operand_types=[elem])
            block = Block(arguments=[*args, BlockArgument(name=short_body_init(0), type=elem)], operations=[inner, yld])
        else:
            block = self.body(ctx, [elem] * k, "linalg.yield", [out_elem])
        self._dps(ctx, name, ins, outs, self.extras(), [Region(blocks=[block])])

    def f_linalg_reduce(self, ctx: Ctx, name: str) -> None:
        shape = self.shape(min_rank=1)
        dims = sorted({self.rint(0, len(shape) - 1) for _ in range(self.rint(1, len(shape)))})
        rest = tuple(d for i, d in enumerate(shape) if i not in dims)
        n = 1 if self.chance(0.7) else 2
        elems = [self.float_t() if self.chance(0.7) else self.int_t(index=False) for _ in range(n)]
        ins: list[Type] = [ty.TensorType(shape=shape, element_type=e) for e in elems]
        outs: list[Type] = [ty.TensorType(shape=rest, element_type=e) for e in elems]
        attrs = {**self.extras(), "dimensions": _i64s(dims)}
        short = self._short_op(elems[0], 2) if n == 1 and self.chance(0.6) else None
        if short is not None:
            e = elems[0]
            args = [BlockArgument(name=short_body_input(0), type=e), BlockArgument(name=short_body_init(0), type=e)]
            # the op is applied to (init, input), as MLIR 22 builds the short form
            inner = Operation(
                name=short, operands=[args[1].name, args[0].name], operand_types=[e, e], results=[SHORT_BODY_RESULT], result_types=[e]
            )
            yld = Operation(name="linalg.yield", operands=[SHORT_BODY_RESULT], operand_types=[e])
            block = Block(arguments=args, operations=[inner, yld])
        else:
            block = self.body(ctx, elems + elems, "linalg.yield", elems)
        self._dps(ctx, name, ins, outs, attrs, [Region(blocks=[block])])

    def f_linalg_dims(self, ctx: Ctx, name: str) -> None:
        elem = self.scalar_t()
        if name == "linalg.transpose":
            shape = self.shape(min_rank=1)
            perm = list(range(len(shape)))
            self.r.shuffle(perm)
            out = tuple(shape[p] for p in perm)
            key, values = "permutation", perm
        else:
            shape = self.shape(rank=self.rint(0, 2))
            out_rank = len(shape) + self.rint(1, 2)
            values = sorted(self.r.sample(range(out_rank), out_rank - len(shape)))
            it = iter(shape)
            out = tuple(self.dim() if i in values else next(it) for i in range(out_rank))
            key = "dimensions"
        attrs = {**self.extras(), key: _i64s(values)}
        ins = [ty.TensorType(shape=shape, element_type=elem)]
        outs = [ty.TensorType(shape=out, element_type=elem)]
        self._dps(ctx, name, ins, outs, attrs)

    # tensor / memref ------------------------------------------------------

    def f_empty(self, ctx: Ctx, name: str) -> None:
        if name == "tensor.empty":
            t: ty.TensorType | ty.MemRefType = self.tensor_t(dyn=0.3)
        else:
            t = self.memref_t(dyn=0.3)
        self.empty(ctx, name, t)

    def f_splat(self, ctx: Ctx, name: str) -> None:
        t = self.tensor_t(self.scalar_t(), dyn=0.2)
        scalar = self.get(ctx, t.element_type)
        sizes = [self.get_index(ctx) for d in t.shape if d is None]
        self.emit(ctx, name, [scalar, *sizes], [t.element_type] + [ty.INDEX] * len(sizes), [t], self.extras())

    def _container(self, ctx: Ctx, name: str) -> Type:
        if name.startswith("memref."):
            return self.memref_t(self.scalar_t(), dyn=0.2)
        return self.tensor_t(self.scalar_t(), dyn=0.2)

    def _nontemporal(self, name: str) -> dict[str, Attribute]:
        attrs = self.extras()
        if name.startswith("memref.") and self.chance(0.3):
            attrs["nontemporal"] = at.BoolAttr(value=self.chance(0.5))
        return attrs

    def f_extract(self, ctx: Ctx, name: str) -> None:
        t = self._container(ctx, name)
        assert isinstance(t, ty.TensorType | ty.MemRefType)
        src = self.get(ctx, t)
        idx = [self.get_index(ctx) for _ in t.shape]
        self.emit(ctx, name, [src, *idx], [t] + [ty.INDEX] * len(idx), [t.element_type], self._nontemporal(name))

    def f_insert(self, ctx: Ctx, name: str) -> None:
        t = self._container(ctx, name)
        assert isinstance(t, ty.TensorType)
        v, dest = self.get(ctx, t.element_type), self.get(ctx, t)
        idx = [self.get_index(ctx) for _ in t.shape]
        self.emit(ctx, name, [v, dest, *idx], [t.element_type, t] + [ty.INDEX] * len(idx), [t], self.extras())

    def f_memref_store(self, ctx: Ctx, name: str) -> None:
        t = self._container(ctx, name)
        assert isinstance(t, ty.MemRefType)
        v, dest = self.get(ctx, t.element_type), self.get(ctx, t)
        idx = [self.get_index(ctx) for _ in t.shape]
        self.emit(ctx, name, [v, dest, *idx], [t.element_type, t] + [ty.INDEX] * len(idx), [], self._nontemporal(name))

    def f_slice(self, ctx: Ctx, name: str) -> None:
        shape = tuple(self.dim() for _ in range(self.rint(1, 3)))
        elem = self.scalar_t()
        attrs, dyn, out = self._slice_parts(ctx, shape, 0.2)
        if name == "memref.subview":
            space = self.mem_space() if self.chance(0.3) else None
            src_t: Type = ty.MemRefType(shape=shape, element_type=elem, memory_space=space)
            layout = self.strided(len(out)) if self.chance(0.5) else None
            res_t: Type = ty.MemRefType(shape=out, element_type=elem, layout=layout, memory_space=space)
        else:
            src_t = ty.TensorType(shape=shape, element_type=elem)
            if self.chance(0.2):
                out = tuple(d for d in out if d != 1 or self.chance(0.5))
            res_t = ty.TensorType(shape=out, element_type=elem)
        src = self.get(ctx, src_t)
        flat = [v for g in dyn for v in g]
        attrs.update(self.extras())
        attrs["operandSegmentSizes"] = _segments(1, *(len(g) for g in dyn))
        self.emit(ctx, name, [src, *flat], [src.type] + [ty.INDEX] * len(flat), [self.written(res_t)], attrs)

    def f_insert_slice(self, ctx: Ctx, name: str) -> None:
        shape = tuple(self.dim() for _ in range(self.rint(1, 3)))
        elem = self.scalar_t()
        attrs, dyn, out = self._slice_parts(ctx, shape, 0.2)
        src = self.get(ctx, ty.TensorType(shape=out, element_type=elem))
        dest_t = ty.TensorType(shape=shape, element_type=elem)
        dest = self.get(ctx, dest_t)
        flat = [v for g in dyn for v in g]
        attrs.update(self.extras())
        attrs["operandSegmentSizes"] = _segments(1, 1, *(len(g) for g in dyn))
        wdest = self.written(dest_t)
        self.emit(ctx, name, [src, dest, *flat], [src.type, wdest] + [ty.INDEX] * len(flat), [wdest], attrs)

    def _reassoc(self, groups: Sequence[Sequence[int]]) -> at.ArrayAttr:
        return at.ArrayAttr(
            elements=tuple(at.ArrayAttr(elements=tuple(at.IntegerAttr(value=v, type=ty.I64) for v in g)) for g in groups)
        )

    def f_expand_shape(self, ctx: Ctx, name: str) -> None:
        src_shape = tuple(self.pick((2, 4, 8, 16)) for _ in range(self.rint(0, 2)))
        groups: list[list[int]] = []
        out: list[int] = []
        for d in src_shape:
            parts = [d] if self.chance(0.4) else ([2, d // 2] if self.chance(0.5) else [1, d])
            groups.append(list(range(len(out), len(out) + len(parts))))
            out.extend(parts)
        if not src_shape:
            out = [1] * self.rint(0, 2)
        static, dyn = self.mixed(ctx, out, 0.2)
        elem = self.scalar_t()
        src = self.get(ctx, ty.TensorType(shape=src_shape, element_type=elem))
        res = ty.TensorType(shape=tuple(None if s == KDYNAMIC else s for s in static), element_type=elem)
        attrs = {**self.extras(), "reassociation": self._reassoc(groups), "static_output_shape": _i64s(static)}
        self.emit(ctx, name, [src, *dyn], [src.type] + [ty.INDEX] * len(dyn), [self.written(res)], attrs)

    def f_collapse_shape(self, ctx: Ctx, name: str) -> None:
        shape = self.shape(rank=self.rint(1, 4), dyn=0.1)
        groups: list[list[int]] = []
        i = 0
        while i < len(shape):
            size = self.rint(1, len(shape) - i)
            groups.append(list(range(i, i + size)))
            i += size
        out = tuple(_numel([shape[j] for j in g]) for g in groups)
        elem = self.scalar_t()
        src = self.get(ctx, ty.TensorType(shape=shape, element_type=elem))
        attrs = {**self.extras(), "reassociation": self._reassoc(groups)}
        self.emit(ctx, name, [src], [src.type], [self.written(ty.TensorType(shape=out, element_type=elem))], attrs)

    def f_reshape(self, ctx: Ctx, name: str) -> None:
        shape = tuple(self.pick((1, 2, 4, 8)) for _ in range(self.rint(1, 3)))
        n = _numel(shape) or 1
        out = [n] if self.chance(0.5) else ([1, n] if self.chance(0.5) else [n, 1, 1])
        elem = self.scalar_t()
        src = self.get(ctx, ty.TensorType(shape=shape, element_type=elem))
        shape_v = self.get(ctx, ty.TensorType(shape=(len(out),), element_type=self.pick((ty.INDEX, ty.I64, ty.I32))))
        res = ty.TensorType(shape=tuple(out), element_type=elem)
        self.emit(ctx, name, [src, shape_v], [src.type, shape_v.type], [self.written(res)], self.extras())

    def f_concat(self, ctx: Ctx, name: str) -> None:
        shape = list(self.shape(min_rank=1))
        d = self.rint(0, len(shape) - 1)
        elem = self.scalar_t()
        parts = []
        total = 0
        for _ in range(self.rint(1, 3)):
            n = self.dim()
            total += n
            parts.append(self.get(ctx, ty.TensorType(shape=tuple(shape[:d] + [n] + shape[d + 1 :]), element_type=elem)))
        res = ty.TensorType(shape=tuple(shape[:d] + [total] + shape[d + 1 :]), element_type=elem)
        attrs = {**self.extras(), "dim": at.IntegerAttr(value=d, type=ty.I64)}
        self.emit(ctx, name, parts, [p.type for p in parts], [self.written(res)], attrs)

    def f_pad(self, ctx: Ctx, name: str) -> None:
        shape = tuple(self.dim() for _ in range(self.rint(1, 2)))
        elem = self.scalar_t()
        low = [self.rint(0, 3) for _ in shape]
        high = [self.rint(0, 3) for _ in shape]
        s_low, d_low = self.mixed(ctx, low, 0.2)
        s_high, d_high = self.mixed(ctx, high, 0.2)
        out = tuple(
            None if KDYNAMIC in (a, b) else d + a + b for d, a, b in zip(shape, s_low, s_high, strict=True)
        )
        src = self.get(ctx, ty.TensorType(shape=shape, element_type=elem))
        attrs: dict[str, Attribute] = {
            **self.extras(),
            "static_low": _i64s(s_low),
            "static_high": _i64s(s_high),
            "operandSegmentSizes": _segments(1, len(d_low), len(d_high)),
        }
        if self.chance(0.3):
            attrs["nofold"] = at.UnitAttr()
        block = self.body(ctx, [ty.INDEX] * len(shape), "tensor.yield", [elem])
        flat = [*d_low, *d_high]
        res = ty.TensorType(shape=out, element_type=elem)
        self.emit(ctx, name, [src, *flat], [src.type] + [ty.INDEX] * len(flat), [self.written(res)], attrs, [Region(blocks=[block])])

    def f_generate(self, ctx: Ctx, name: str) -> None:
        t = self.tensor_t(self.scalar_t(), dyn=0.4)
        t = ty.TensorType(shape=t.shape, element_type=t.element_type)
        extents = [self.get_index(ctx) for d in t.shape if d is None]
        block = self.body(ctx, [ty.INDEX] * t.rank, "tensor.yield", [t.element_type])
        self.emit(ctx, name, extents, [ty.INDEX] * len(extents), [self.written(t)], self.extras(), [Region(blocks=[block])])

    def f_dim(self, ctx: Ctx, name: str) -> None:
        t = self._container(ctx, name)
        src = self.get(ctx, t)
        idx = self.get_index(ctx)
        self.emit(ctx, name, [src, idx], [src.type, ty.INDEX], [ty.INDEX], self.extras())

    def f_reinterpret_cast(self, ctx: Ctx, name: str) -> None:
        elem = self.scalar_t()
        space = self.mem_space() if self.chance(0.3) else None
        src = self.get(ctx, ty.MemRefType(shape=self.shape(min_rank=1, dyn=0.2), element_type=elem, memory_space=space))
        rank = self.rint(1, 3)
        s_off, d_off = self.mixed(ctx, [self.rint(0, 16)], 0.3)
        sizes = [self.dim() for _ in range(rank)]
        s_size, d_size = self.mixed(ctx, sizes, 0.2)
        strides = [self.pick((1, 4, 16)) for _ in range(rank)]
        s_str, d_str = self.mixed(ctx, strides, 0.2)
        layout = None
        if self.chance(0.6):
            layout = at.StridedLayoutAttr(
                strides=tuple(None if s == KDYNAMIC else s for s in s_str), offset=None if s_off[0] == KDYNAMIC else s_off[0]
            )
        res = ty.MemRefType(
            shape=tuple(None if s == KDYNAMIC else s for s in s_size), element_type=elem, layout=layout, memory_space=space
        )
        attrs: dict[str, Attribute] = {
            **self.extras(),
            "static_offsets": _i64s(s_off),
            "static_sizes": _i64s(s_size),
            "static_strides": _i64s(s_str),
            "operandSegmentSizes": _segments(1, len(d_off), len(d_size), len(d_str)),
        }
        flat = [*d_off, *d_size, *d_str]
        self.emit(ctx, name, [src, *flat], [src.type] + [ty.INDEX] * len(flat), [self.written(res)], attrs)

    # func ---------------------------------------------------------------

    def f_call(self, ctx: Ctx, name: str) -> None:
        if not self.callees or self.chance(0.3):
            self.declare()
        callee = self.pick(self.callees)
        args = [self.get(ctx, self.R(t)) for t in callee.inputs]
        attrs = {**self.extras(), "callee": at.SymbolRefAttr(root=callee.name)}
        self.emit(ctx, name, args, list(callee.inputs), list(callee.results), attrs)

    def declare(self) -> None:
        name = self.symbol()
        inputs = tuple(self.written(self.value_t()) for _ in range(self.rint(0, 3)))
        results = tuple(self.written(self.value_t()) for _ in range(self.rint(0, 2)))
        attrs: dict[str, Attribute] = {
            "sym_name": at.StringAttr(value=name),
            "function_type": at.TypeAttr(value=ty.FunctionType(inputs=inputs, results=results)),
        }
        if self.chance(0.8):
            attrs["sym_visibility"] = at.StringAttr(value="private")
        self._arg_res_attrs(attrs, len(inputs), len(results))
        attrs.update(self.extras(0.1))
        self.decls.append(Operation(name="func.func", attributes=attrs, regions=[Region()]))
        self.comment(self.decls[-1], 0.2)
        self.callees.append(Callee(name, inputs, results))

    def _arg_res_attrs(self, attrs: dict[str, Attribute], n_in: int, n_out: int) -> None:
        for key, n in (("arg_attrs", n_in), ("res_attrs", n_out)):
            dicts = [self.extras(0.25) for _ in range(n)]
            if any(dicts):
                attrs[key] = at.ArrayAttr(elements=tuple(_sorted_dict(d) for d in dicts))

    def func(self) -> Operation:
        name = self.symbol()
        entry = Block()
        root = Scope()
        attrs: dict[str, Attribute] = {"sym_name": at.StringAttr(value=name)}
        grid_rank = 1
        if self.chance(0.6):
            grid = [self.rint(1, 8) for _ in range(self.rint(1, 3))]
            grid_rank = len(grid)
            attrs["grid"] = at.ArrayAttr(elements=tuple(at.IntegerAttr(value=g) for g in grid))
        if self.chance(0.2):
            attrs["sym_visibility"] = at.StringAttr(value=self.pick(("public", "private", "nested")))
        fn = FuncState(entry, root, grid_rank)
        ctx = Ctx(entry.operations, Scope(root), fn, 0)
        for _ in range(self.rint(0, 3)):
            self.add_arg(ctx, self.value_t() if self.chance(0.7) else self.any_type(1))
        results = [self.written(self.value_t()) for _ in range(self.rint(0, 2))]
        self.fill(ctx, self.rint(1, self.o.max_ops + 2))
        blocks = [entry]
        for _ in range(self.rint(0, 2) if self.chance(0.2) else 0):
            passed = [v for v in ctx.scope.all() if v.name not in self.used_futures][: self.rint(0, 2)]
            label = self.label()
            self.emit(ctx, "cf.br", passed, [v.type for v in passed], [], self.extras(0.2))
            ctx.ops[-1].successors = [label]
            nxt = Block(label=label)
            ctx = Ctx(nxt.operations, Scope(ctx.scope), fn, 0)
            nxt.arguments = self.block_args(ctx, [v.type for v in passed])
            self.fill(ctx, self.rint(0, 3))
            blocks.append(nxt)
        vals = [self.get(ctx, self.R(t), 0.2) for t in results]
        self.emit(ctx, "func.return", vals, results, [])
        inputs = tuple(a.type for a in entry.arguments)
        attrs["function_type"] = at.TypeAttr(value=ty.FunctionType(inputs=inputs, results=tuple(results)))
        self._arg_res_attrs(attrs, len(inputs), len(results))
        attrs.update(self.extras(0.1))
        self.callees.append(Callee(name, inputs, tuple(results)))
        op = Operation(name="func.func", attributes=attrs, regions=[Region(blocks=blocks)])
        self.comment(op, 0.2)
        return op

    # unknown ops ----------------------------------------------------------

    def m_unknown(self, ctx: Ctx) -> None:
        name = self.pick(UNKNOWN_NAMES)
        pool = [v for v in ctx.scope.all() if v.name not in self.used_futures]
        operands = [self.pick(pool) for _ in range(self.rint(0, 3))] if pool else []
        results = [self.any_type(1) for _ in range(self.rint(0, 2))]
        regions: list[Region] = []
        for _ in range(self.rint(0, 2) if ctx.depth <= self.o.max_depth and self.chance(0.3) else 0):
            inner = self.child(ctx)
            args = self.block_args(inner, [self.value_t() for _ in range(self.rint(0, 2))])
            self.fill(inner, self.rint(0, 2))
            blocks: list[Block] = []
            if self.chance(0.3):
                label = self.label()
                self.emit(inner, "test.br", [], [], [], {})
                inner.ops[-1].successors = [label]
                nxt = self.child(inner)
                self.fill(nxt, self.rint(0, 2))
                self.emit(nxt, "test.end", [], [], [], {})
                blocks.append(Block(label=label, operations=nxt.ops))
            regions.append(Region(blocks=[Block(arguments=args, operations=inner.ops), *blocks]))
        self.emit(ctx, name, operands, [v.type for v in operands], results, self.extras(0.4), regions)
        if self.chance(0.4):
            keys = {self.pick(EXTRA_KEYS + ("prop", "sym_name")) for _ in range(self.rint(1, 3))}
            ctx.ops[-1].properties = {k: self.attr(1) for k in keys}

    # ------------------------------------------------------------ module

    def module(self) -> Module:
        top: list[Operation] = []
        n_funcs = self.rint(1, self.o.max_funcs)
        funcs = [self.func() for _ in range(n_funcs)]
        layout = self.rint(0, 2)
        if layout == 0:
            top.extend(funcs)
        else:
            inner = funcs if layout == 1 else funcs[1:]
            body = list(inner)
            if self.chance(0.15):
                body.append(self.wrap_module([]))
            top.append(self.wrap_module(body))
            if layout == 2:
                top.insert(0, funcs[0])
        top.extend(self.decls)
        if self.o.unknown_ops and self.chance(0.1):
            attrs = {"sym_name": at.StringAttr(value="g"), **self.extras(0.5)}
            top.append(Operation(name="test.global", attributes=attrs))
        module = Module(attr_aliases=self.attr_aliases, type_aliases=self.type_aliases, operations=top)
        for key in [f"#{n}" for n in self.attr_aliases] + [f"!{n}" for n in self.type_aliases]:
            if self.chance(0.1):
                module.alias_comments[key] = [self.pick(COMMENTS)]
        if self.chance(0.1):
            module.trailing_comments = [self.pick(COMMENTS) for _ in range(self.rint(1, 2))]
        return module

    def wrap_module(self, ops: list[Operation]) -> Operation:
        attrs: dict[str, Attribute] = {}
        if self.chance(0.5):
            attrs["sym_name"] = at.StringAttr(value=self.symbol())
        attrs.update(self.extras(0.3))
        op = Operation(name="builtin.module", attributes=attrs, regions=[Region(blocks=[Block(operations=ops)])])
        self.comment(op, 0.2)
        return op


# ---------------------------------------------------------------- entry points


def generate_module(seed: int, options: Options | None = None) -> Module:
    """A deterministic random well-typed module for `seed`."""
    return Gen(random.Random(seed), options).module()


@st.composite
def modules(draw: st.DrawFn, options: Options | None = None) -> Module:
    """Hypothesis strategy of well-typed KTIR modules (see the module docstring)."""
    seed = draw(st.integers(min_value=0, max_value=2**64 - 1))
    opts = options or Options(
        max_depth=draw(st.integers(0, 2)),
        max_ops=draw(st.integers(1, 6)),
        max_funcs=draw(st.integers(1, 3)),
        budget=draw(st.integers(5, 80)),
    )
    return generate_module(seed, opts)


@st.composite
def affine_exprs(draw: st.DrawFn, num_dims: int = 3, num_symbols: int = 2, max_depth: int = 4) -> af.AffineExpr:
    """Affine expressions built only through the smart constructors of `ktir.ir.affine`."""
    leaves: list[af.AffineExpr] = [af.dim(i) for i in range(num_dims)] + [af.sym(i) for i in range(num_symbols)]

    def build(depth: int) -> af.AffineExpr:
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            if leaves and draw(st.booleans()):
                return draw(st.sampled_from(leaves))
            return af.const(draw(st.integers(-20, 20)))
        kind = draw(st.sampled_from(("add", "sub", "mul", "neg", "floordiv", "ceildiv", "mod")))
        lhs = build(depth - 1)
        if kind == "add":
            return af.add(lhs, build(depth - 1))
        if kind == "sub":
            return af.sub(lhs, build(depth - 1))
        if kind == "mul":
            c = af.const(draw(st.integers(-6, 6)))
            return af.mul(lhs, c) if draw(st.booleans()) else af.mul(c, lhs)
        if kind == "neg":
            return -lhs
        return af.binary(kind, lhs, af.const(draw(st.integers(1, 9))))

    return build(max_depth)
