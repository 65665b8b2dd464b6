"""Text of one KTIR kernel: constants, tile ids, memory views, access tiles, loads and stores.

The torch lowering writes KTIR text (then parses and verifies it) because its kernels are
regular: every tile loads boxes of strided views, computes with linalg/arith/math and
stores a box. Affine sets and maps are shared module-wide through `Aliases`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ktir.lower.torch.refs import Ref
from ktir.syntax.printer import float_text

Value = str  # an SSA name ("%x") or a Python int for a constant index


def dims(shape: Sequence[int]) -> str:
    return "x".join(str(n) for n in shape)


def tensor_type(shape: Sequence[int], ktype: str) -> str:
    return f"tensor<{dims(shape)}x{ktype}>" if shape else f"tensor<{ktype}>"


def float_const(value: float) -> str:
    if math.isinf(value):
        return "0x7F800000" if value > 0 else "0xFF800000"
    if math.isnan(value):
        return "0x7FC00000"
    return float_text(float(value))


class Aliases:
    """Module-level `#name = affine_set<...>` / `affine_map<...>` definitions, deduplicated."""

    def __init__(self) -> None:
        self.by_text: dict[str, str] = {}
        self.lines: list[str] = []

    def _get(self, prefix: str, text: str) -> str:
        name = self.by_text.get(text)
        if name is None:
            name = f"#{prefix}{len(self.by_text)}"
            self.by_text[text] = name
            self.lines.append(f"{name} = {text}")
        return name

    def box(self, shape: Sequence[int]) -> str:
        """The set of coordinates 0 <= d_i < shape[i]."""
        ds = ", ".join(f"d{i}" for i in range(len(shape)))
        cons = ", ".join(f"d{i} >= 0, -d{i} + {n - 1} >= 0" for i, n in enumerate(shape))
        return self._get("box", f"affine_set<({ds}) : ({cons})>")

    def map(self, rank: int, results: Sequence[str]) -> str:
        ds = ", ".join(f"d{i}" for i in range(rank))
        return self._get("map", f"affine_map<({ds}) -> ({', '.join(results)})>")

    def identity(self, rank: int) -> str:
        return self.map(rank, [f"d{i}" for i in range(rank)])


class Kernel:
    """Builds the text of one `func.func` kernel."""

    def __init__(self, name: str, aliases: Aliases, grid: Sequence[int]) -> None:
        self.name = name
        self.aliases = aliases
        self.grid = list(grid) or [1]
        self.args: list[str] = []  # buffer names, in argument order
        self.consts: dict[str, str] = {}
        self.body: list[str] = []
        self.indent = 1
        self.counter = 0
        self.tile_ids: list[str] = []
        self.memo: dict[object, object] = {}
        self.loads: dict[object, tuple[str, list[int]]] = {}
        self.division: object = None  # the work division (work.Division), for the SDSC writer  # loaded boxes, valid in the current loop body
        # buffers read with the tile's innermost dim not along the buffer's sticks
        self.across_sticks: list[str] = []  # per-kernel values computed once (tile starts)

    # ------------------------------------------------------------------ basics

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def emit(self, line: str) -> None:
        self.body.append("  " * self.indent + line)

    def arg(self, buffer: str) -> str:
        if buffer not in self.args:
            self.args.append(buffer)
        return f"%{buffer}"

    def index(self, value: int | str) -> str:
        """An index SSA value for a Python int (a shared constant) or an SSA name."""
        if isinstance(value, str):
            return value
        name = f"%c{value}" if value >= 0 else f"%cm{-value}"
        self.consts.setdefault(name, f"{name} = arith.constant {value} : index")
        return name

    def fconst(self, value: float, ktype: str = "f32") -> str:
        text = float_const(value)
        key = f"{text}:{ktype}"
        name = self.consts.get(key)
        if name is None:
            name = f"%f{len(self.consts)}"
            self.consts[key] = name
            self.consts[name] = f"{name} = arith.constant {text} : {ktype}"
        return name

    def tiles(self) -> list[str]:
        """The tile coordinates (one per grid dim), emitted once."""
        if not self.tile_ids:
            self.tile_ids = [f"%tile{i}" for i in range(len(self.grid))]
            types = ", ".join("index" for _ in self.grid)
            self.body.insert(0, f"  {', '.join(self.tile_ids)} = ktdp.get_compute_tile_id : {types}")
        return self.tile_ids

    def add(self, a: int | str, b: int | str) -> int | str:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        out = self.fresh("i")
        self.emit(f"{out} = arith.addi {self.index(a)}, {self.index(b)} : index")
        return out

    def mul(self, a: int | str, k: int) -> int | str:
        if isinstance(a, int):
            return a * k
        if k == 1:
            return a
        if k == 0:
            return 0
        out = self.fresh("i")
        self.emit(f"{out} = arith.muli {a}, {self.index(k)} : index")
        return out

    def div(self, a: int | str, k: int) -> int | str:
        if isinstance(a, int):
            return a // k
        if k == 1:
            return a
        out = self.fresh("i")
        self.emit(f"{out} = arith.divui {a}, {self.index(k)} : index")
        return out

    # ------------------------------------------------------------------ memory

    def view(self, ref: Ref, extra_offset: int | str = 0) -> tuple[str, str]:
        """A global memory view of `ref` (broadcast dims as size 1); returns (SSA name, memref type)."""
        base = self.arg(ref.buffer)
        ptr = self.add(self.add(base, ref.offset), extra_offset) if (ref.offset or extra_offset != 0) else base
        sizes = [1 if s == 0 else n for n, s in zip(ref.shape, ref.strides, strict=True)]
        strides = [s if s > 0 else 1 for s in ref.strides]
        mtype = f"memref<{dims(sizes)}x{ref.ktype}>"
        out = self.fresh("view")
        self.emit(
            f"{out} = ktdp.construct_memory_view {ptr}, sizes: [{', '.join(map(str, sizes))}], "
            f"strides: [{', '.join(map(str, strides))}] {{coordinate_set = {self.aliases.box(sizes)}, "
            f"memory_space = #ktdp.memory_space<global>}} : {mtype}"
        )
        return out, mtype

    def tile_of(self, ref: Ref, view: tuple[str, str], starts: Sequence[int | str], block: Sequence[int]) -> tuple[str, list[int]]:
        """The access tile of `block` at `starts` (broadcast dims: index 0, size 1)."""
        shape = [1 if s == 0 else b for b, s in zip(block, ref.strides, strict=True)]
        subs = [self.index(0 if s == 0 else st) for st, s in zip(starts, ref.strides, strict=True)]
        out = self.fresh("tile")
        self.emit(
            f"{out} = ktdp.construct_access_tile {view[0]}[{', '.join(subs)}] {{access_tile_order = "
            f"{self.aliases.identity(len(shape))}, access_tile_set = {self.aliases.box(shape)}}} : {view[1]} -> "
            f"!ktdp.access_tile<{dims(shape)}xindex>"
        )
        return out, shape

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
        out = self.fresh("ld")
        self.emit(f"{out} = ktdp.load {tile} : !ktdp.access_tile<{dims(shape)}xindex> -> {tensor_type(shape, ref.ktype)}")
        return out, shape

    def store(self, value: str, ref: Ref, starts: Sequence[int | str], block: Sequence[int], extra_offset: int | str = 0) -> None:
        tile, shape = self.tile_of(ref, self.view(ref, extra_offset), starts, block)
        self.emit(f"ktdp.store {value}, {tile} : {tensor_type(shape, ref.ktype)}, !ktdp.access_tile<{dims(shape)}xindex>")

    # ------------------------------------------------------------------ tensors

    def empty(self, shape: Sequence[int], ktype: str) -> str:
        out = self.fresh("empty")
        self.emit(f"{out} = tensor.empty() : {tensor_type(shape, ktype)}")
        return out

    def filled(self, shape: Sequence[int], value: float) -> str:
        init = self.empty(shape, "f32")
        out = self.fresh("fill")
        t = tensor_type(shape, "f32")
        self.emit(f"{out} = linalg.fill ins({self.fconst(value)} : f32) outs({init} : {t}) -> {t}")
        return out

    def convert(self, value: str, shape: Sequence[int], src: str, dst: str) -> str:
        """Tensor element conversion between float types (extf / truncf)."""
        if src == dst:
            return value
        op = "arith.extf" if _width(dst) > _width(src) else "arith.truncf"
        out = self.fresh("cv")
        self.emit(f"{out} = {op} {value} : {tensor_type(shape, src)} to {tensor_type(shape, dst)}")
        return out

    def scalar_convert(self, value: str, src: str, dst: str) -> str:
        if src == dst:
            return value
        out = self.fresh("s")
        if src == "i1":  # a mask: 1.0 where true
            self.emit(f"{out} = arith.uitofp {value} : i1 to {dst}")
        elif dst == "i1":
            self.emit(f"{out} = arith.cmpf une, {value}, {self.fconst(0.0, src)} : {src}")
        else:
            op = "arith.extf" if _width(dst) > _width(src) else "arith.truncf"
            self.emit(f"{out} = {op} {value} : {src} to {dst}")
        return out

    def generic(
        self,
        inputs: Sequence[tuple[str, list[int], str, str]],
        out_shape: Sequence[int],
        out_map: str,
        iterators: Sequence[str],
        init: str | None,
        out_type: str,
        body: object,
    ) -> str:
        """A linalg.generic: `inputs` are (value, shape, element type, indexing map); `body(kernel,
        [input scalars], acc scalar) -> result scalar` writes the scalar ops of the region."""
        init = init or self.empty(out_shape, out_type)
        out = self.fresh("g")
        maps = ", ".join([m for _, _, _, m in inputs] + [out_map])
        iters = ", ".join(f'"{i}"' for i in iterators)
        ins = ", ".join(v for v, _, _, _ in inputs)
        in_types = ", ".join(tensor_type(s, t) for _, s, t, _ in inputs)
        ot = tensor_type(out_shape, out_type)
        ins_text = f"ins({ins} : {in_types}) " if inputs else ""
        self.emit(f"{out} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}} {ins_text}outs({init} : {ot}) {{")
        names = [self.fresh("a") for _ in inputs]
        acc = self.fresh("acc")
        params = ", ".join([f"{n}: {t}" for n, (_, _, t, _) in zip(names, inputs, strict=True)] + [f"{acc}: {out_type}"])
        self.body.append("  " * self.indent + f"^bb0({params}):")
        self.indent += 1
        result = body(self, names, acc)  # type: ignore[operator]
        self.emit(f"linalg.yield {result} : {out_type}")
        self.indent -= 1
        self.emit(f"}} -> {ot}")
        return out

    def pad(self, value: str, shape: Sequence[int], low: Sequence[int], high: Sequence[int], fill: float = 0.0) -> tuple[str, list[int]]:
        """An f32 tensor padded with `fill`: `low[d]` elements before and `high[d]` after dim d."""
        out_shape = [n + a + b for n, a, b in zip(shape, low, high, strict=True)]
        if list(out_shape) == list(shape):
            return value, out_shape
        out = self.fresh("pad")
        fill_value = self.fconst(fill)
        self.emit(f"{out} = tensor.pad {value} low[{', '.join(map(str, low))}] high[{', '.join(map(str, high))}] {{")
        params = ", ".join(f"{self.fresh('p')}: index" for _ in shape)
        self.body.append("  " * self.indent + f"^bb0({params}):")
        self.emit(f"  tensor.yield {fill_value} : f32")
        self.emit(f"}} : {tensor_type(shape, 'f32')} to {tensor_type(out_shape, 'f32')}")
        return out, out_shape

    def reduce(self, value: str, shape: Sequence[int], combiner: str, init: float) -> tuple[str, list[int]]:
        """Reduce the last dim of an f32 tensor with `arith.<combiner>`."""
        out_shape = list(shape[:-1])
        acc = self.filled(out_shape, init)
        out = self.fresh("red")
        self.emit(
            f"{out} = linalg.reduce {{ arith.{combiner} }} ins({value} : {tensor_type(shape, 'f32')}) "
            f"outs({acc} : {tensor_type(out_shape, 'f32')}) dimensions = [{len(shape) - 1}]"
        )
        return out, out_shape

    # ------------------------------------------------------------------ loops

    def open_for(self, lower: int | str, upper: int | str, hint: str = "b") -> str:
        iv = self.fresh(hint)
        self.emit(f"scf.for {iv} = {self.index(lower)} to {self.index(upper)} step {self.index(1)} {{")
        self.indent += 1
        return iv

    def close(self) -> None:
        self.indent -= 1
        self.emit("}")
        self.loads.clear()  # values loaded inside the loop are not visible after it

    # ------------------------------------------------------------------ text

    def text(self, comment: str = "") -> str:
        args = ", ".join(f"%{a}: index" for a in self.args)
        grid = ", ".join(map(str, self.grid))
        head = [f"// {line}" for line in comment.splitlines()] if comment else []
        consts = ["  " + line for key, line in self.consts.items() if key.startswith("%")]
        return "\n".join(
            [*head, f"func.func @{self.name}({args}) attributes {{grid = [{grid}]}} {{", *consts, *self.body, "  func.return", "}"]
        )


def _width(ktype: str) -> int:
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[ktype]
