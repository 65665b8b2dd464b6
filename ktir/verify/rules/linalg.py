"""Rules for linalg."""

from __future__ import annotations

from ktir.dialects.access import AccessError
from ktir.dialects.access import named as view_of
from ktir.dialects.constraints import shape
from ktir.dialects.names import Linalg
from ktir.dialects.registry import OPS, contractions
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import elem, fmt_shape, t

# The (inputs, outputs) operand groups of each linalg op, by their declared names.
_GROUPS: dict[str, tuple[str, str]] = {
    Linalg.map: ("inputs", "init"),
    Linalg.reduce: ("inputs", "inits"),
    Linalg.broadcast: ("input", "init"),
    Linalg.transpose: ("input", "init"),
}


def _ins_outs(check: Check) -> tuple[list[ty.Type], list[ty.Type]] | None:
    seg = check.segments()
    if seg is None or len(seg) != 2:
        return None
    ins, outs = _GROUPS.get(check.op.name, ("inputs", "outputs"))
    return check.operand_types_of(ins), check.operand_types_of(outs)


def _results_match_outputs(check: Check, outs: list[ty.Type], cid: str = "C1") -> bool:
    expected = [o for o in outs if isinstance(o, ty.TensorType)]
    results = check.result_types_of("results")
    if results != expected:
        check.fail(cid, f"results ({', '.join(t(x) for x in results)}) must be the tensor outputs' types ({', '.join(t(x) for x in expected)})")
        return False
    return True


_ELEMENTWISE = ("add", "sub", "mul", "div", "max", "min", "powf")
_UNARY = ("exp", "log", "abs", "negf", "sqrt", "rsqrt", "tanh", "reciprocal", "square", "floor", "erf", "copy")


def _agree(shapes: list[tuple[int | None, ...] | None]) -> bool:
    known = [s for s in shapes if s is not None]
    if not known:
        return True
    rank = len(known[0])
    if any(len(s) != rank for s in known):
        return False
    for i in range(rank):
        dims = {s[i] for s in known if s[i] is not None}
        if len(dims) > 1:
            return False
    return True


@rule(*(n for n, d in OPS.items() if d.format == "LINALG_NAMED"))
def named(check: Check) -> None:
    split = _ins_outs(check)
    if split is None:
        check.fail("C1", "ins and outs are required")
        return
    ins, outs = split
    if not _results_match_outputs(check, outs):
        return
    mnemonic = check.op.name.split(".", 1)[1]
    maps = check.attr("indexing_maps")
    if mnemonic in _ELEMENTWISE + _UNARY:
        arity = 2 if mnemonic in _ELEMENTWISE else 1
        if len(ins) != arity or len(outs) != 1 or not _agree([shape(x) for x in ins + outs]):
            check.fail("C2", f"{check.op.name} takes {arity} input(s) and one output of the same shape, found "
                       f"{', '.join(fmt_shape(shape(x)) for x in ins + outs)}")
        return
    if mnemonic == "fill":
        if len(ins) != 1 or shape(ins[0]) != () or len(outs) != 1 or elem(outs[0]) != ins[0]:
            check.fail("C2", "linalg.fill takes one scalar of the output's element type and one output")
        return
    if isinstance(maps, at.ArrayAttr) and mnemonic in ("matmul", "batch_matmul"):
        _check_maps(check, ins + outs, maps, 3 if mnemonic == "matmul" else 4)
        return
    dims = _CONTRACTIONS.get(mnemonic)
    if dims is None:
        return
    if len(ins) != 2 or len(outs) != 1:
        check.fail("C2", f"{check.op.name} takes two inputs and one output")
        return
    a, b, c = (shape(x) for x in (ins[0], ins[1], outs[0]))
    if a is None or b is None or c is None:
        return
    spec_a, spec_b, spec_c = dims
    if (len(a), len(b), len(c)) != (len(spec_a), len(spec_b), len(spec_c)):
        check.fail("C2", f"{check.op.name} expects ranks {len(spec_a)}, {len(spec_b)}, {len(spec_c)}; found {len(a)}, {len(b)}, {len(c)}")
        return
    sizes: dict[str, int] = {}
    for letters, s in ((spec_a, a), (spec_b, b), (spec_c, c)):
        for letter, d in zip(letters, s, strict=True):
            if d is None:
                continue
            if sizes.setdefault(letter, d) != d:
                check.fail("C2", f"{check.op.name}: dimension '{letter}' is {sizes[letter]} in one operand and {d} in another "
                           f"({fmt_shape(a)} x {fmt_shape(b)} -> {fmt_shape(c)})")
                return


# operand dims by letter: A, B, C, by mnemonic (from the definitions' einsum letters)
_CONTRACTIONS = {
    name.split(".", 1)[1]: tuple(spec.replace("->", ",").split(",")) for name, spec in contractions().items()
}


def _check_maps(check: Check, operands: list[ty.Type], maps: at.ArrayAttr, loops: int) -> None:
    resolved = [check.v.rattr(m) for m in maps.elements]
    if len(resolved) != len(operands) or not all(isinstance(m, at.AffineMapAttr) for m in resolved):
        check.fail("C2", f"indexing_maps needs one affine map per operand ({len(operands)})")
        return
    _loop_sizes(check, operands, [m.value for m in resolved if isinstance(m, at.AffineMapAttr)], "C2")


def _loop_sizes(check: Check, operands: list[ty.Type], maps: list[af.AffineMap], cid: str) -> None:
    sizes: dict[int, int] = {}
    for i, (operand, amap) in enumerate(zip(operands, maps, strict=True)):
        s = shape(operand) or ()
        if len(amap.results) != len(s):
            check.fail(cid, f"indexing map {i} has {len(amap.results)} results but operand {i} has rank {len(s)}")
            return
        for expr, d in zip(amap.results, s, strict=True):
            if isinstance(expr, af.Dim) and d is not None and sizes.setdefault(expr.position, d) != d:
                check.fail(cid, f"loop d{expr.position} is {sizes[expr.position]} by one operand and {d} by operand {i}")
                return


@rule(Linalg.generic)
def generic(check: Check) -> None:
    split = _ins_outs(check)
    maps = check.attr("indexing_maps")
    iterators = check.attr("iterator_types")
    if split is None:
        return
    ins, outs = split
    operands = ins + outs
    if isinstance(iterators, at.ArrayAttr):
        for i, e in enumerate(iterators.elements):
            kind = getattr(check.v.rattr(e), "value", None)
            if kind not in ("parallel", "reduction"):
                check.fail("C7", f"iterator type {i} is {kind!r}: it must be \"parallel\" or \"reduction\"")
                return
    if not isinstance(maps, at.ArrayAttr) or len(maps.elements) != len(operands):
        check.fail("C1", f"indexing_maps needs one map per input and output ({len(operands)})")
        return
    resolved = [check.v.rattr(m) for m in maps.elements]
    if not all(isinstance(m, at.AffineMapAttr) for m in resolved):
        check.fail("C1", "every indexing map must be an affine map")
        return
    amaps = [m.value for m in resolved if isinstance(m, at.AffineMapAttr)]
    n_loops = len(iterators.elements) if isinstance(iterators, at.ArrayAttr) else -1
    for i, (amap, operand) in enumerate(zip(amaps, operands, strict=True)):
        if amap.num_dims != n_loops or len(amap.results) != len(shape(operand) or ()):
            check.fail("C2", f"indexing map {i} must have {n_loops} inputs (one per iterator) and {len(shape(operand) or ())} results")
            return
    region = check.op.regions[0] if check.op.regions else None
    args = region.blocks[0].arguments if region and region.blocks else []
    expected = [elem(x) for x in operands]
    if [check.v.rtype(a.type) for a in args] != expected:
        check.fail("C3", f"the body takes ({', '.join(t(x) for x in expected)}), found ({', '.join(t(a.type) for a in args)})")
    last = region.blocks[-1].operations[-1] if region and region.blocks and region.blocks[-1].operations else None
    if last is not None and last.name == Linalg.yield_ and [check.v.rtype(x) for x in last.operand_types] != [elem(o) for o in outs]:
        check.fail("C4", f"the body must yield ({', '.join(t(elem(o)) for o in outs)})")
    _loop_sizes(check, operands, amaps, "C5")
    _results_match_outputs(check, outs, "C6")


@rule(Linalg.map)
def map_(check: Check) -> None:
    split = _ins_outs(check)
    if split is None:
        return
    ins, outs = split
    if len(outs) != 1 or not _agree([shape(x) for x in ins + outs]):
        check.fail("C1", f"all inputs and the init must have the same shape, found {', '.join(fmt_shape(shape(x)) for x in ins + outs)}")
        return
    region = check.op.regions[0] if check.op.regions else None
    args = region.blocks[0].arguments if region and region.blocks else []
    last = region.blocks[-1].operations[-1] if region and region.blocks and region.blocks[-1].operations else None
    if [check.v.rtype(a.type) for a in args][: len(ins)] != [elem(x) for x in ins] or last is None or [
        check.v.rtype(x) for x in last.operand_types
    ] != [elem(outs[0])]:
        check.fail("C2", "the body takes one element per input and yields one element of the init's type")


@rule(Linalg.reduce)
def reduce_(check: Check) -> None:
    split = _ins_outs(check)
    dims = check.attr("dimensions")
    if split is None or not isinstance(dims, at.DenseArrayAttr):
        return
    ins, outs = split
    rank = len(shape(ins[0]) or ()) if ins else 0
    values = [int(v) for v in dims.values]
    if values != sorted(set(values)) or any(not 0 <= v < rank for v in values):
        check.fail("C1", f"dimensions {values} must be distinct, sorted and below the input rank {rank}")
        return
    for i, (inp, out) in enumerate(zip(ins, outs, strict=False)):
        s = shape(inp) or ()
        kept = tuple(d for k, d in enumerate(s) if k not in values)
        if shape(out) != kept:
            check.fail("C2", f"init {i} must have shape {fmt_shape(kept)} (the input without dimensions {values}), found {fmt_shape(shape(out))}")
            return
    region = check.op.regions[0] if check.op.regions else None
    args = region.blocks[0].arguments if region and region.blocks else []
    if len(args) != len(ins) + len(outs):
        check.fail("C3", f"the body takes {len(ins) + len(outs)} arguments (inputs then accumulators), found {len(args)}")


@rule(Linalg.broadcast)
def broadcast(check: Check) -> None:
    split = _ins_outs(check)
    dims = check.attr("dimensions")
    if split is None or not isinstance(dims, at.DenseArrayAttr) or len(split[0]) != 1 or len(split[1]) != 1:
        return
    s_in, s_out = shape(split[0][0]) or (), shape(split[1][0]) or ()
    added = [int(v) for v in dims.values]
    if len(s_in) + len(added) != len(s_out):
        check.fail("C1", f"input rank {len(s_in)} plus {len(added)} broadcast dimensions must equal the init rank {len(s_out)}")
        return
    kept = tuple(d for k, d in enumerate(s_out) if k not in added)
    if not _agree([kept, s_in]):
        check.fail("C2", f"the input {fmt_shape(s_in)} must equal the init without dimensions {added} ({fmt_shape(kept)})")


@rule(Linalg.transpose)
def transpose(check: Check) -> None:
    split = _ins_outs(check)
    perm = check.attr("permutation")
    if split is None or not isinstance(perm, at.DenseArrayAttr) or len(split[0]) != 1 or len(split[1]) != 1:
        return
    s_in, s_out = shape(split[0][0]) or (), shape(split[1][0]) or ()
    p = [int(v) for v in perm.values]
    if sorted(p) != list(range(len(s_in))):
        check.fail("C1", f"permutation {p} is not a permutation of {len(s_in)} dimensions")
        return
    if len(s_out) != len(p) or not _agree([s_out, tuple(s_in[k] for k in p)]):
        check.fail("C2", f"the init must have shape {fmt_shape(tuple(s_in[k] for k in p))}, found {fmt_shape(s_out)}")


@rule(Linalg.index)
def index(check: Check) -> None:
    dim = check.attr("dim")
    parent = next((p for p in reversed(check.v.stack) if p.name in (Linalg.generic, Linalg.map, Linalg.reduce)), None)
    loops = None
    if parent is not None and parent.name == Linalg.generic:
        iterators = check.v.rattr(parent.attributes.get("iterator_types", at.ArrayAttr(elements=())))
        loops = len(iterators.elements) if isinstance(iterators, at.ArrayAttr) else None
    elif parent is not None:
        try:
            inputs = view_of(parent).operand_types("inputs")
        except AccessError:  # the parent's operands do not fit its definition; it is reported itself
            inputs = []
        loops = len(shape(check.v.rtype(inputs[0])) or ()) if inputs else None
    if parent is None:
        check.fail("C1", "linalg.index must be inside a linalg.generic, linalg.map or linalg.reduce body")
        return
    if not isinstance(dim, at.IntegerAttr) or dim.value < 0 or (loops is not None and dim.value >= loops):
        check.fail("C1", f"dim must be below the enclosing op's {loops if loops is not None else 'number of'} loops")
