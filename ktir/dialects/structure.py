"""The structure of structured ops, declared once on their definitions: the `linalg.generic` view.

Every structured op is a loop nest over an iteration space: one indexing map per operand
(inputs, then outputs) from the loops to the operand's dimensions, an iterator type per
loop ("parallel" or "reduction") and a scalar body. A named op (`linalg.matmul`,
`linalg.reduce`, `linalg.transpose`, ...) is one particular generic; its definition carries a
`Structure` saying which (`OpDef.structure`), and `iteration_space` derives the maps and
iterator types of any instance from it and the instance's attributes and operand ranks.
Elementwise ops of `arith` and `math` applied to tensors are the elementwise generic too.

Readers: the schedulers' dependence analysis (`schedulers.dependence`); the verifier, the
interpreter and the MLIR generic form read the contractions' letters through
`ktir.dialects.registry.contractions()` (a test fails if another module spells them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation

Kind = Literal["elementwise", "fill", "contraction", "reduce", "broadcast", "transpose", "generic"]


@dataclass(frozen=True)
class Structure:
    """What kind of loop nest a structured op is.

    - `elementwise`: every operand indexed by the identity of the output's rank (scalar
      inputs by no dimension), all loops parallel; `scalar` names the op applied per element
      (`arith.addf`; the integer spelling is derived), empty when the op has its own body.
    - `fill`: the output set to a scalar input.
    - `contraction`: `einsum` letters per operand (`"mk,kn->mn"`): letters of the output are
      parallel loops, the others reductions; the output is accumulated into. An explicit
      `indexing_maps` attribute (transposed or broadcast operands) takes precedence.
    - `reduce`, `broadcast`, `transpose`: read from the `dimensions` / `permutation` attribute.
    - `generic`: the `indexing_maps` and `iterator_types` attributes themselves.
    """

    kind: Kind
    einsum: str = ""
    scalar: str = ""


@dataclass(frozen=True)
class IterationSpace:
    """One structured op as a generic: its loops and how its operands index them."""

    maps: tuple[af.AffineMap, ...]  # one per operand, inputs then outputs (a scalar operand: no results)
    iterators: tuple[str, ...]  # per loop: "parallel" or "reduction"
    inputs: int  # how many of the operands are inputs
    accumulates: bool  # whether the outputs' contents are read (a contraction or a reduction adds into them)
    scalar: str = ""  # the per-element op of a named elementwise op ("" when the op carries a body)

    @property
    def loops(self) -> int:
        return len(self.iterators)

    def reduced(self) -> list[int]:
        return [i for i, t in enumerate(self.iterators) if t == "reduction"]


def _identity(rank: int) -> af.AffineMap:
    return af.AffineMap.identity(rank)


def _pick(n: int, dims: Sequence[int]) -> af.AffineMap:
    return af.AffineMap(num_dims=n, num_symbols=0, results=tuple(af.dim(d) for d in dims))


def _rank(t: ty.Type | None) -> int | None:
    if isinstance(t, ty.TensorType | ty.MemRefType):
        return len(t.shape)
    return 0 if t is not None else None


def _ints(attr: object) -> list[int]:
    return [int(v) for v in getattr(attr, "values", ())]


def einsum_loops(spec: str) -> tuple[tuple[int, ...], ...]:
    """Per operand (inputs, then the output), the loops its dimensions are, the loops being
    the output's letters in order, then the reduced letters in order of appearance
    (`"km,kn->mn"`: m, n, k; `((2, 0), (2, 1), (0, 1))`)."""
    lhs, out = spec.split("->")
    operands = lhs.split(",")
    letters = list(out) + [c for c in dict.fromkeys("".join(operands)) if c not in out]
    return tuple(tuple(letters.index(c) for c in s) for s in [*operands, out])


def einsum_maps(spec: str) -> tuple[tuple[af.AffineMap, ...], tuple[str, ...]]:
    """The maps and iterator types of a contraction written in einsum letters (`"mk,kn->mn"`):
    loops are the output's letters in order, then the reduced letters in order of appearance."""
    out = spec.split("->")[1]
    n = len(set(spec) - set(",->"))
    maps = tuple(_pick(n, list(positions)) for positions in einsum_loops(spec))
    return maps, ("parallel",) * len(out) + ("reduction",) * (n - len(out))


def _resolved(attr: object, resolve: Callable[[object], object]) -> object:
    return resolve(attr) if resolve is not None else attr


def iteration_space(op: Operation, structure: Structure | None, inputs: int,
                    resolve: Callable[[object], object] = lambda a: a) -> IterationSpace | str:
    """`op` as a generic (or why it cannot be read as one): `structure` is its definition's,
    `inputs` how many of its operands are inputs (the rest are outputs), `resolve` turns an
    attribute alias into its value."""
    types = list(op.operand_types)
    ranks = [_rank(t) for t in types]
    if any(r is None for r in ranks):
        return f"{op.name} has an operand of unknown rank"
    outs = types[inputs:]
    if structure is None:
        return f"{op.name} declares no structure"
    kind = structure.kind
    n_out = len(outs)
    if kind in ("elementwise", "fill"):
        if n_out != 1:
            return f"{op.name} has {n_out} outputs"
        rank = ranks[inputs] or 0
        maps = tuple(_identity(rank) if (r or 0) == rank else _pick(rank, []) for r in ranks)
        if any((r or 0) not in (0, rank) for r in ranks):
            return f"{op.name} mixes operands of ranks {ranks}"
        scalar = structure.scalar
        if scalar and isinstance(ty.element_type(outs[0]), ty.IntegerType):
            scalar = _INTEGER.get(scalar, scalar)
        return IterationSpace(maps, ("parallel",) * rank, inputs, False, scalar if kind == "elementwise" else "")
    if kind == "contraction":
        explicit = op.attributes.get("indexing_maps")
        if isinstance(explicit, at.ArrayAttr):
            found = []
            for e in explicit.elements:
                m = _resolved(e, resolve)
                if not isinstance(m, at.AffineMapAttr):
                    return f"{op.name} has an indexing map that is not an affine map"
                found.append(m.value)
            if len(found) != len(types):
                return f"{op.name} has {len(found)} indexing maps for {len(types)} operands"
            out_dims = {e.position for e in found[-1].results if isinstance(e, af.Dim)}
            n = found[0].num_dims
            iters = tuple("parallel" if d in out_dims else "reduction" for d in range(n))
            return IterationSpace(tuple(found), iters, inputs, True)
        maps, iters = einsum_maps(structure.einsum)
        if [len(m.results) for m in maps] != ranks:
            return f"{op.name} expects operand ranks {[len(m.results) for m in maps]}, found {ranks}"
        return IterationSpace(maps, iters, inputs, True)
    if kind == "reduce":
        red = set(_ints(op.attributes.get("dimensions")))
        rank = ranks[0] or 0
        kept = [d for d in range(rank) if d not in red]
        maps = tuple([_identity(rank)] * inputs + [_pick(rank, kept)] * n_out)
        return IterationSpace(maps, tuple("reduction" if d in red else "parallel" for d in range(rank)), inputs, True)
    if kind == "broadcast":
        added = set(_ints(op.attributes.get("dimensions")))
        rank = ranks[-1] or 0
        kept = [d for d in range(rank) if d not in added]
        return IterationSpace((_pick(rank, kept), _identity(rank)), ("parallel",) * rank, 1, False)
    if kind == "transpose":
        perm = _ints(op.attributes.get("permutation"))
        rank = len(perm)
        # output dimension i is input dimension perm[i]: input dimension j is loop perm.index(j)
        if sorted(perm) != list(range(rank)):
            return f"{op.name} has permutation {perm}"
        return IterationSpace((_pick(rank, [perm.index(j) for j in range(rank)]), _identity(rank)),
                              ("parallel",) * rank, 1, False)
    # generic
    found = []
    for e in getattr(op.attributes.get("indexing_maps"), "elements", ()):
        m = _resolved(e, resolve)
        if not isinstance(m, at.AffineMapAttr):
            return f"{op.name} has an indexing map that is not an affine map"
        found.append(m.value)
    iters = tuple(str(getattr(_resolved(e, resolve), "value", e)) for e in
                  getattr(op.attributes.get("iterator_types"), "elements", ()))
    iters = tuple("reduction" if "reduction" in t else "parallel" for t in iters)
    if len(found) != len(types):
        return f"{op.name} has {len(found)} indexing maps for {len(types)} operands"
    block = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
    used = {o for x in (block.operations if block else []) for y in x.walk() for o in y.operands}
    args = block.arguments if block else []
    reads_outs = any(a.name in used for a in args[inputs:])
    return IterationSpace(tuple(found), iters, inputs, reads_outs)


# float spelling -> integer spelling of the per-element op
_INTEGER = {"arith.addf": "arith.addi", "arith.subf": "arith.subi", "arith.mulf": "arith.muli",
            "arith.divf": "arith.divsi", "arith.maximumf": "arith.maxsi", "arith.minimumf": "arith.minsi"}

ELEMENTWISE = Structure("elementwise")
FILL = Structure("fill")
REDUCE = Structure("reduce")
BROADCAST = Structure("broadcast")
TRANSPOSE = Structure("transpose")
GENERIC = Structure("generic")


def elementwise(scalar: str) -> Structure:
    return Structure("elementwise", scalar=scalar)


def contraction(einsum: str) -> Structure:
    return Structure("contraction", einsum=einsum)


__all__ = ["BROADCAST", "ELEMENTWISE", "FILL", "GENERIC", "REDUCE", "TRANSPOSE", "IterationSpace", "Structure",
           "contraction", "einsum_loops", "einsum_maps", "elementwise", "iteration_space"]
