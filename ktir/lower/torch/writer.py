"""One KTIR kernel built with `ktir.builder`: constants, tile ids, memory views, access
tiles, loads and stores, linalg ops with scalar bodies, loops.

The torch lowering's kernels are regular: every tile loads boxes of strided views, computes
with linalg/arith/math and stores a box. Values are handled by SSA name (`"%x"`); the kernel
keeps each name's type. Affine sets and maps are shared module-wide through `Aliases`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ktir.builder import Builder, ind, ssa
from ktir.builder import Value as Handle
from ktir.builder import box as box_set
from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Scf, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.asm import float_text
from ktir.ir.base import Attribute, Type
from ktir.ir.operation import Block, BlockArgument, Module, Operation, Region
from ktir.lower.torch.refs import Ref

Value = str  # an SSA name ("%x") or a Python int for a constant index
GLOBAL = at.MemorySpaceAttr(kind="global")
INDEX = ty.INDEX


def element(ktype: str) -> Type:
    """The element type spelled `ktype` (f16, bf16, f32, i1, i64, index)."""
    if ktype == "index":
        return INDEX
    if ktype.startswith("i"):
        return ty.i(int(ktype[1:]))
    return ty.FloatType(kind=ktype)  # type: ignore[arg-type]


def tensor(shape: Sequence[int], ktype: str) -> ty.TensorType:
    return ty.TensorType(shape=tuple(shape), element_type=element(ktype))


def float_const(value: float) -> str:
    if math.isinf(value):
        return "0x7F800000" if value > 0 else "0xFF800000"
    if math.isnan(value):
        return "0x7FC00000"
    return float_text(float(value))


def _float_attr(text: str, ktype: str) -> at.FloatAttr:
    """The attribute of `arith.constant <text> : ktype` (hex spellings are f32 bit patterns)."""
    if text.startswith("0x"):
        bits = int(text, 16)
        value = {0x7F800000: math.inf, 0xFF800000: -math.inf}.get(bits, math.nan)
        return at.FloatAttr(value=value, type=element(ktype), bits=bits)
    return at.FloatAttr(value=float(text), type=element(ktype))


def _affine(text: str) -> af.AffineExpr:
    """`d2 + d3`, `d1`, `0`: a sum of dims and integers, as map results are written here."""
    expr: af.AffineExpr | None = None
    for term in text.split("+"):
        term = term.strip()
        leaf = af.dim(int(term[1:])) if term.startswith("d") else af.const(int(term))
        expr = leaf if expr is None else expr + leaf
    assert expr is not None
    return expr


class Aliases:
    """Module-level `#box<n>` / `#map<n>` definitions (integer sets and maps), deduplicated."""

    def __init__(self) -> None:
        self.refs: dict[object, at.AttrAliasRef] = {}
        self.values: dict[str, Attribute] = {}

    def _get(self, prefix: str, key: object, value: Attribute) -> at.AttrAliasRef:
        ref = self.refs.get(key)
        if ref is None:
            ref = at.AttrAliasRef(name=f"{prefix}{len(self.refs)}")
            self.refs[key] = ref
            self.values[ref.name] = value
        return ref

    def box(self, shape: Sequence[int]) -> at.AttrAliasRef:
        """The set of coordinates 0 <= d_i < shape[i]."""
        return self._get("box", ("box", tuple(shape)), at.IntegerSetAttr(value=box_set(*shape)))

    def map(self, rank: int, results: Sequence[str]) -> at.AttrAliasRef:
        """`affine_map<(d0, ...) -> (results)>`; a result is a sum of dims and integers (`d2 + d3`, `0`)."""
        amap = af.AffineMap(num_dims=rank, num_symbols=0, results=tuple(_affine(r) for r in results))
        return self._get("map", ("map", rank, tuple(results)), at.AffineMapAttr(value=amap))

    def identity(self, rank: int) -> at.AttrAliasRef:
        return self.map(rank, [f"d{i}" for i in range(rank)])

    def snapshot(self) -> tuple[dict[object, at.AttrAliasRef], dict[str, Attribute]]:
        """The definitions so far (to forget those of a kernel that is built and then dropped)."""
        return dict(self.refs), dict(self.values)

    def restore(self, saved: tuple[dict[object, at.AttrAliasRef], dict[str, Attribute]]) -> None:
        self.refs, self.values = dict(saved[0]), dict(saved[1])

    def install(self, module: Module) -> None:
        """Define the aliases in `module`, in the order they were first used."""
        for name, value in self.values.items():
            module.attr_aliases[name] = value
            module.alias_order.append(f"#{name}")


Body = Callable[["Kernel", list[str], str], str]
Input = tuple[str, list[int], str, at.AttrAliasRef]  # a linalg.generic input: value, shape, element type, map


class Kernel:
    """Builds one `func.func` kernel."""

    def __init__(self, name: str, aliases: Aliases, grid: Sequence[int]) -> None:
        self.name = name
        self.aliases = aliases
        self.grid = list(grid) or [1]
        self.args: list[str] = []  # buffer names, in argument order
        # constants, hoisted to the top: "%c4" -> its op; a float's "<text>:<type>" -> its name
        self.consts: dict[str, Operation | str] = {}
        self.types: dict[str, Type] = {}
        self.counter = 0
        self.tile_ids: list[str] = []
        self.memo: dict[object, object] = {}
        self.loads: dict[object, tuple[str, list[int]]] = {}  # loaded boxes, valid in the current loop body
        self.division: object = None  # the work division (work.Division), for the SDSC writer
        # buffers read with the tile's innermost dim not along the buffer's sticks
        self.across_sticks: list[str] = []
        self._carry_results: list[list[str]] = []  # result names of the open carrying loops
        self.entry = Block()
        self.b = Builder()
        self.b.enter(self.entry)

    # ------------------------------------------------------------------ basics

    def fresh(self, hint: str) -> str:
        """A new SSA name `%<hint><n>`; never one of the tile ids `%tile0`.. (`tiles()`), which
        an access tile's `%tile<n>` would redefine on a grid of rank above n."""
        reserved = {f"%tile{i}" for i in range(len(self.grid))}
        while True:
            self.counter += 1
            name = f"%{hint}{self.counter}"
            if name not in reserved and name not in self.types:
                return name

    def v(self, name: str) -> Handle:
        """The typed handle of an SSA name."""
        return Handle(name, self.types[name])

    def keep(self, *values: Handle) -> None:
        for value in values:
            self.types[value.name] = value.type

    def op(self, name: str, *operands: str, type: Type | None = None, out: str | None = None,
           attributes: dict[str, Attribute] | None = None) -> str:
        """Append op `name` on `operands` (SSA names) with one result named `out` (fresh "%s<n>"
        if None); its type is `type`, or inferred (elementwise ops: the operands' type)."""
        result = self.b.create(name, [self.v(o) for o in operands], None if type is None else [type], attributes,
                               result_names=[out or self.fresh("s")])[0]
        self.keep(result)
        return result.name

    def cmp(self, op: str, predicate: str, a: str, b: str, out: str | None = None) -> str:
        result = self.b.cmp(op, predicate, self.v(a), self.v(b), name=out or self.fresh("s"))
        self.keep(result)
        return result.name

    def linalg_index(self, dim: int, out: str) -> str:
        """`linalg.index dim` inside a linalg body."""
        return self.op(Linalg.index, type=INDEX, out=out, attributes={"dim": at.IntegerAttr(value=dim, type=ty.I64)})

    def arg(self, buffer: str) -> str:
        if buffer not in self.args:
            self.args.append(buffer)
            self.types[f"%{buffer}"] = INDEX
        return f"%{buffer}"

    def index(self, value: int | str) -> str:
        """An index SSA value for a Python int (a shared constant) or an SSA name."""
        if isinstance(value, str):
            return value
        name = f"%c{value}" if value >= 0 else f"%cm{-value}"
        if name not in self.consts:
            self.consts[name] = _constant(name, at.IntegerAttr(value=value, type=INDEX), INDEX)
            self.types[name] = INDEX
        return name

    def fconst(self, value: float, ktype: str = "f32") -> str:
        text = float_const(value)
        key = f"{text}:{ktype}"
        name = self.consts.get(key)
        if isinstance(name, str):
            return name
        name = f"%f{len(self.consts)}"
        self.consts[key] = name
        self.consts[name] = _constant(name, _float_attr(text, ktype), element(ktype))
        self.types[name] = element(ktype)
        return name

    def iconst(self, value: int, ktype: str = "i64") -> str:
        key = f"{value}:{ktype}"
        name = self.consts.get(key)
        if isinstance(name, str):
            return name
        name = f"%ci{len(self.consts)}"
        while name in self.types:
            name += "_"
        self.consts[key] = name
        self.consts[name] = _constant(name, at.IntegerAttr(value=value, type=element(ktype)), element(ktype))
        self.types[name] = element(ktype)
        return name

    def tiles(self) -> list[str]:
        """The tile coordinates (one per grid dim), made once, first in the body."""
        if not self.tile_ids:
            self.tile_ids = [f"%tile{i}" for i in range(len(self.grid))]
            op = Operation(name=Ktdp.get_compute_tile_id, results=list(self.tile_ids), result_types=[INDEX] * len(self.grid))
            self.entry.operations.insert(0, op)
            self.types.update(dict.fromkeys(self.tile_ids, INDEX))
        return self.tile_ids

    def add(self, a: int | str, b: int | str) -> int | str:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        out = self.fresh("i")
        return self.op(Arith.addi, self.index(a), self.index(b), out=out)

    def mul(self, a: int | str, k: int) -> int | str:
        if isinstance(a, int):
            return a * k
        if k == 1:
            return a
        if k == 0:
            return 0
        out = self.fresh("i")
        return self.op(Arith.muli, a, self.index(k), out=out)

    def div(self, a: int | str, k: int) -> int | str:
        if isinstance(a, int):
            return a // k
        if k == 1:
            return a
        out = self.fresh("i")
        return self.op(Arith.divui, a, self.index(k), out=out)

    # ------------------------------------------------------------------ memory

    def view(self, ref: Ref, extra_offset: int | str = 0) -> str:
        """A global memory view of `ref` (broadcast dims as size 1); returns its SSA name."""
        base = self.arg(ref.buffer)
        ptr = self.add(self.add(base, ref.offset), extra_offset) if (ref.offset or extra_offset != 0) else base
        sizes = [1 if s == 0 else n for n, s in zip(ref.shape, ref.strides, strict=True)]
        strides = [s if s > 0 else 1 for s in ref.strides]
        out = self.fresh("view")
        view = self.b.memory_view(self.v(self.index(ptr)), sizes, strides, element(ref.ktype), GLOBAL,
                                  self.aliases.box(sizes), name=out)
        self.keep(view)
        return view.name

    def tile_of(self, ref: Ref, view: str, starts: Sequence[int | str], block: Sequence[int]) -> tuple[str, list[int]]:
        """The access tile of `block` at `starts` (broadcast dims: index 0, size 1)."""
        shape = [1 if s == 0 else b for b, s in zip(block, ref.strides, strict=True)]
        subs = [self.v(self.index(0 if s == 0 else st)) for st, s in zip(starts, ref.strides, strict=True)]
        out = self.fresh("tile")
        order = self.aliases.identity(len(shape))  # defined before the set, as the text reads
        tile = self.b.access_tile(self.v(view), subs, self.aliases.box(shape), shape, order, name=out)
        self.keep(tile)
        return tile.name, shape

    def load(self, ref: Ref, starts: Sequence[int | str], block: Sequence[int], extra_offset: int | str = 0) -> tuple[str, list[int]]:
        key = ("load", ref, tuple(starts), tuple(block), extra_offset)
        cached = self.loads.get(key)
        if cached is not None:  # the same box read twice in one kernel (a chain and its row reduction)
            return cached
        result = self._load(ref, starts, block, extra_offset)
        self.loads[key] = result
        return result

    def _load(self, ref: Ref, starts: Sequence[int | str], block: Sequence[int], extra_offset: int | str) -> tuple[str, list[int]]:
        if ref.rank and block[-1] > 1 and ref.strides[-1] not in (0, 1) and ref.buffer not in self.across_sticks:
            self.across_sticks.append(ref.buffer)
        tile, shape = self.tile_of(ref, self.view(ref, extra_offset), starts, block)
        return self.load_tile(tile, ref.ktype), shape

    def load_tile(self, tile: str, ktype: str) -> str:
        """`ktdp.load` of an access tile, as a tensor of `ktype`."""
        loaded = self.b.load(self.v(tile), element(ktype), name=self.fresh("ld"))
        self.keep(loaded)
        return loaded.name

    def gather_rows(self, out: str, table: str, ids: str, start: str, variables: tuple[str, str], shape: list[int],
                    ktype: str) -> str:
        """Rows `ids[start + m]` of `table`, columns k, for (m, k) in the box `shape`: a
        `ktdp.construct_indirect_access_tile` named `out`, then its load."""
        first = ssa(self.v(start))
        order = self.aliases.identity(2)  # aliased before the set: the numbering of #map and #box aliases
        tile = self.b.indirect_access_tile(
            self.v(table), shape, lambda m, k: [ind(self.v(ids), first + ssa(m)), k], self.aliases.box(shape),
            order, variables=variables, name=out)
        self.keep(tile)
        loaded = self.b.load(tile, element(ktype), name=self.fresh("rows"))
        self.keep(loaded)
        return loaded.name

    def store(self, value: str, ref: Ref, starts: Sequence[int | str], block: Sequence[int], extra_offset: int | str = 0) -> None:
        tile, _ = self.tile_of(ref, self.view(ref, extra_offset), starts, block)
        self.b.store(self.v(value), self.v(tile))

    # ------------------------------------------------------------------ tensors

    def empty(self, shape: Sequence[int], ktype: str) -> str:
        made = self.b.empty(tensor(shape, ktype), self.fresh("empty"))
        self.keep(made)
        return made.name

    def filled(self, shape: Sequence[int], value: float, ktype: str = "f32") -> str:
        init = self.empty(shape, ktype)
        out = self.fresh("fill")
        scalar = self.iconst(int(value), ktype) if _is_int(ktype) else self.fconst(value, ktype)
        return self.linalg(Linalg.fill, [scalar], [init], out)

    def linalg(self, name: str, ins: Sequence[str], outs: Sequence[str], out: str,
               attributes: dict[str, Attribute] | None = None) -> str:
        """A destination-passing linalg op (`ins(...) outs(...)`) with one result named `out`."""
        result = self.b.dps(name, [self.v(v) for v in ins], [self.v(v) for v in outs], dict(attributes or {}), name=out)
        self.keep(result)
        return result.name

    def convert(self, value: str, shape: Sequence[int], src: str, dst: str) -> str:
        """Tensor element conversion between float types (extf / truncf) or between integer
        types (extsi / trunci)."""
        if src == dst:
            return value
        if _is_int(src) and _is_int(dst):
            op = Arith.extsi if int(dst[1:]) > int(src[1:]) else Arith.trunci
        else:
            op = Arith.extf if _width(dst) > _width(src) else Arith.truncf
        return self.op(op, value, type=tensor(shape, dst), out=self.fresh("cv"))

    def scalar_convert(self, value: str, src: str, dst: str) -> str:
        """A scalar of type `src` as `dst` (floats, integers and i1 masks; torch's casts:
        float to integer truncates toward zero, a mask is 1 where true)."""
        if src == dst:
            return value
        out = self.fresh("s")
        src_int, dst_int = _is_int(src), _is_int(dst)
        if src == "i1":  # a mask: 1 where true
            return self.op(Arith.extui if dst_int else Arith.uitofp, value, type=element(dst), out=out)
        if dst == "i1":
            if src_int:
                return self.cmp(Arith.cmpi, "ne", value, self.iconst(0, src), out=out)
            return self.cmp(Arith.cmpf, "une", value, self.fconst(0.0, src), out=out)
        if src_int and dst_int:
            op = Arith.extsi if int(dst[1:]) > int(src[1:]) else Arith.trunci
        elif src_int:
            op = Arith.sitofp
        elif dst_int:
            op = Arith.fptosi
        else:
            op = Arith.extf if _width(dst) > _width(src) else Arith.truncf
        return self.op(op, value, type=element(dst), out=out)

    def generic(
        self,
        inputs: Sequence[Input],
        out_shape: Sequence[int],
        out_map: at.AttrAliasRef,
        iterators: Sequence[str],
        init: str | None,
        out_type: str,
        body: Body,
    ) -> str:
        """A linalg.generic: `inputs` are (value, shape, element type, indexing map); `body(kernel,
        [input scalars], acc scalar) -> result scalar` builds the scalar ops of the region."""
        init = init or self.empty(out_shape, out_type)
        out = self.fresh("g")
        names = [self.fresh("a") for _ in inputs]
        acc = self.fresh("acc")
        maps = [m for _, _, _, m in inputs] + [out_map]
        with self.b.generic([self.v(v) for v, _, _, _ in inputs], [self.v(init)], maps, list(iterators),
                            [*names, acc], out) as params:
            self.keep(*params)
            result = body(self, names, acc)
            self.b.yield_(self.v(result), op=Linalg.yield_)
        self.keep(*self.b.last_results)
        return out

    def pad(self, value: str, shape: Sequence[int], low: Sequence[int], high: Sequence[int], fill: float = 0.0) -> tuple[str, list[int]]:
        """An f32 tensor padded with `fill`: `low[d]` elements before and `high[d]` after dim d."""
        out_shape = [n + a + b for n, a, b in zip(shape, low, high, strict=True)]
        if list(out_shape) == list(shape):
            return value, out_shape
        out = self.fresh("pad")
        fill_value = self.fconst(fill)
        body = Block(arguments=[BlockArgument(name=self.fresh("p"), type=INDEX) for _ in shape])
        attrs = {"static_low": at.i64_array(list(low)), "static_high": at.i64_array(list(high)),
                 "operandSegmentSizes": at.DenseArrayAttr(element_type=ty.I32, values=(1, 0, 0))}
        with self.b.insert_into(body):
            self.b.yield_(self.v(fill_value), op=Tensor.yield_)
        (padded,) = self.b.create(Tensor.pad, [self.v(value)], [tensor(out_shape, "f32")], attrs,
                                  [Region(blocks=[body])], result_names=[out])
        self.keep(padded)
        return out, out_shape

    def reduce(self, value: str, shape: Sequence[int], combiner: str, init: float) -> tuple[str, list[int]]:
        """Reduce the last dim of an f32 tensor with `arith.<combiner>`."""
        out_shape = list(shape[:-1])
        acc = self.filled(out_shape, init)
        result = self.b.reduce(f"arith.{combiner}", [self.v(value)], [self.v(acc)], [len(shape) - 1],
                               name=self.fresh("red"))
        self.keep(result)
        return result.name, out_shape

    # ------------------------------------------------------------------ loops

    def open_for(self, lower: int | str, upper: int | str, hint: str = "b") -> str:
        iv = self.fresh(hint)
        bounds = [self.index(lower), self.index(upper), self.index(1)]
        body = Block(arguments=[BlockArgument(name=iv, type=INDEX)])
        self.b.append(Operation(name=Scf.for_, operands=bounds, operand_types=[INDEX] * 3, regions=[Region(blocks=[body])]))
        self.b.enter(body)
        self.types[iv] = INDEX
        return iv

    def close(self) -> None:
        self.b.yield_()
        self.b.leave()
        self.loads.clear()  # values loaded inside the loop are not visible after it

    def open_carry(self, lower: int | str, upper: int | str, inits: Sequence[str], hint: str = "b") -> tuple[str, list[str]]:
        """`scf.for` carrying `inits` (tensors: partial sums, running maxima) from one iteration to
        the next; returns the induction variable and the carried values inside the body. Close
        with `close_carry`, which yields their next values and returns the loop's results."""
        iv = self.fresh(hint)
        carried = [self.fresh("carry") for _ in inits]
        body = Block(arguments=[BlockArgument(name=iv, type=INDEX),
                                *(BlockArgument(name=c, type=self.types[v]) for c, v in zip(carried, inits, strict=True))])
        results = [self.fresh("next") for _ in inits]
        bounds = [self.index(lower), self.index(upper), self.index(1)]
        self.b.append(Operation(name=Scf.for_, operands=[*bounds, *inits],
                                operand_types=[INDEX] * 3 + [self.types[v] for v in inits], results=results,
                                result_types=[self.types[v] for v in inits], regions=[Region(blocks=[body])]))
        self.b.enter(body)
        self.types[iv] = INDEX
        for c, v in zip(carried, inits, strict=True):
            self.types[c] = self.types[v]
        self._carry_results.append(results)
        return iv, carried

    def close_carry(self, values: Sequence[str]) -> list[str]:
        """End the innermost `open_carry` loop yielding `values`; returns the loop's results."""
        self.b.yield_(*(self.v(v) for v in values))
        self.b.leave()
        self.loads.clear()
        results = self._carry_results.pop()
        for r, v in zip(results, values, strict=True):
            self.types[r] = self.types[v]
        return results

    # ------------------------------------------------------------------ the function

    def function(self, comment: str = "") -> Operation:
        """The `func.func` op of the kernel (`comment` as `//` lines before it)."""
        consts = [op for key, op in self.consts.items() if key.startswith("%") and isinstance(op, Operation)]
        entry = Block(arguments=[BlockArgument(name=f"%{a}", type=INDEX) for a in self.args],
                      operations=[*consts, *self.entry.operations, Operation(name=Func.return_)])
        attrs: dict[str, Attribute] = {
            "sym_name": at.StringAttr(value=self.name),
            "function_type": at.TypeAttr(value=ty.FunctionType(inputs=tuple(INDEX for _ in self.args), results=())),
            "grid": at.ArrayAttr(elements=tuple(at.IntegerAttr(value=g) for g in self.grid)),
        }
        comments = [f"// {line}" for line in comment.splitlines()] if comment else []
        return Operation(name=Func.func, attributes=attrs, regions=[Region(blocks=[entry])], comments=comments)


def _constant(name: str, value: at.IntegerAttr | at.FloatAttr, type: Type) -> Operation:
    return Operation(name=Arith.constant, results=[name], result_types=[type], attributes={"value": value})


def _is_int(ktype: str) -> bool:
    return ktype.startswith("i") and ktype not in ("i1", "index")


def _width(ktype: str) -> int:
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[ktype]
