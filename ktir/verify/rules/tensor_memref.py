"""Rules for tensor and memref."""

from __future__ import annotations

import math

from ktir.dialects.constraints import shape, shapes_compatible
from ktir.dialects.names import Arith, Memref, Scf, Tensor
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.types import KDYNAMIC
from ktir.verify.engine import Check, rule
from ktir.verify.rules.common import elem, fmt_shape, t


def _dyn_count(s: tuple[int | None, ...] | None) -> int:
    return sum(1 for d in s or () if d is None)


@rule(Tensor.empty, Memref.alloc, Memref.alloca)
def empty(check: Check) -> None:
    result = check.result_type("memref" if check.op.name.startswith("memref.") else "result")
    n = _dyn_count(shape(result))
    sizes = check.operand_types_of("dynamic_sizes")
    if len(sizes) != n:
        check.fail("C1", f"{t(result)} has {n} dynamic dimensions but {len(sizes)} sizes are given")


@rule(Tensor.splat)
def splat(check: Check) -> None:
    result, scalar = check.result_type("result"), check.operand_type("input")
    if scalar != elem(result):
        check.fail("C1", f"the scalar {t(scalar)} must be the element type of {t(result)}")
    if len(check.operand_types_of("dynamic_sizes")) != _dyn_count(shape(result)):
        check.fail("C2", f"{t(result)} needs {_dyn_count(shape(result))} dynamic sizes")


@rule(Tensor.extract, Memref.load)
def extract(check: Check) -> None:
    src = check.operand_type("memref" if check.op.name == Memref.load else "tensor")
    indices = check.named.operands("indices")
    s = shape(src)
    if s is None or len(indices) != len(s):
        check.fail("C1", f"{t(src)} needs {len(s or ())} indices, found {len(indices)}")
        return
    _constant_indices_in_bounds(check, indices, s, "C2")


def _constant_indices_in_bounds(check: Check, indices: list[str], s: tuple[int | None, ...], cid: str) -> None:
    for i, (name, d) in enumerate(zip(indices, s, strict=True)):
        op = check.defining_op(name)
        if op is not None and op.name == Arith.constant and d is not None:
            v = op.attributes.get("value")
            if isinstance(v, at.IntegerAttr) and not 0 <= v.value < d:
                check.fail(cid, f"index {i} is {v.value}, outside [0, {d})")


@rule(Tensor.insert)
def insert(check: Check) -> None:
    value, dest = check.operand_type("scalar"), check.operand_type("dest")
    s = shape(dest)
    if s is None or len(check.named.operands("indices")) != len(s):
        check.fail("C1", f"{t(dest)} needs {len(s or ())} indices")
    if value != elem(dest):
        check.fail("C2", f"the scalar {t(value)} must be the element type of {t(dest)}")


@rule(Memref.store)
def memref_store(check: Check) -> None:
    value, dest = check.operand_type("value"), check.operand_type("memref")
    indices = check.named.operands("indices")
    s = shape(dest)
    if s is None or len(indices) != len(s):
        check.fail("C1", f"{t(dest)} needs {len(s or ())} indices")
        return
    if value != elem(dest):
        check.fail("C2", f"the value {t(value)} must be the element type of {t(dest)}")
    _constant_indices_in_bounds(check, indices, s, "C3")


def _slice_lists(check: Check, keys: tuple[str, ...], fixed: int, src: ty.Type) -> list[list[int]] | None:
    lists = []
    for key in keys:
        a = check.attr(key)
        if not isinstance(a, at.DenseArrayAttr):
            check.fail("C1", f"{key} is required")
            return None
        lists.append([int(v) for v in a.values])
    rank = len(shape(src) or ())
    if any(len(x) != rank for x in lists):
        check.fail("C1", f"offsets, sizes and strides need {rank} entries each (the source rank)")
        return None
    seg = check.segments()
    dynamic = [sum(1 for v in x if v == KDYNAMIC) for x in lists]
    if seg is None or seg[fixed:] != dynamic:
        check.fail("C2", f"expected {dynamic} dynamic operands for the `?` entries")
        return None
    return lists


def _in_bounds(check: Check, lists: list[list[int]], src: ty.Type, cid: str) -> None:
    offsets, sizes, strides = lists
    for i, (o, n, st, d) in enumerate(zip(offsets, sizes, strides, shape(src) or (), strict=True)):
        if KDYNAMIC in (o, n, st) or d is None:
            continue
        if o < 0 or n < 0 or (n > 0 and o + (n - 1) * st >= d):
            check.fail(cid, f"dimension {i}: offset {o}, size {n}, stride {st} leave the source extent {d}")
            return


def _rank_reduced(sizes: list[int], result: tuple[int | None, ...] | None) -> bool:
    if result is None:
        return True
    full = tuple(None if v == KDYNAMIC else v for v in sizes)
    if shapes_compatible(full, result):
        return True
    kept = tuple(d for d in full if d != 1)
    return shapes_compatible(kept, tuple(d for d in result if d != 1))


@rule(Tensor.extract_slice, Memref.subview)
def extract_slice(check: Check) -> None:
    src = check.operand_types[0]
    lists = _slice_lists(check, ("static_offsets", "static_sizes", "static_strides"), 1, src)
    if lists is None:
        return
    _in_bounds(check, lists, src, "C3")
    result = check.result_type("result")
    if check.op.name == Tensor.extract_slice and not _rank_reduced(lists[1], shape(result)):
        check.fail("C4", f"the result {t(result)} must have the slice sizes {lists[1]} (unit dimensions may be dropped)")


@rule(Tensor.insert_slice, Tensor.parallel_insert_slice)
def insert_slice(check: Check) -> None:
    source, dest = check.operand_types[:2]
    lists = _slice_lists(check, ("static_offsets", "static_sizes", "static_strides"), 2, dest)
    if lists is None:
        return
    _in_bounds(check, lists, dest, "C3")
    if not _rank_reduced(lists[1], shape(source)):
        check.fail("C4", f"the source {t(source)} must have the slice sizes {lists[1]} (unit dimensions may be dropped)")
    if check.op.name == Tensor.parallel_insert_slice:
        forall = next((p for p in reversed(check.v.stack) if p.name == Scf.forall), None)
        shared: list[str] = []
        if forall is not None and forall.regions and forall.regions[0].blocks:
            args = forall.regions[0].blocks[0].arguments
            shared = [a.name for a in args[len(args) - len(forall.result_types):]]
        if check.op.operands[1] not in shared:
            check.fail("C5", f"'{check.op.operands[1]}' is not a shared output of an enclosing scf.forall")


def _groups(check: Check) -> list[list[int]] | None:
    a = check.attr("reassociation")
    if not isinstance(a, at.ArrayAttr):
        return None
    out = []
    for g in a.elements:
        if not isinstance(g, at.ArrayAttr):
            return None
        out.append([e.value for e in g.elements if isinstance(e, at.IntegerAttr)])
    return out


def _reshape(check: Check, big: tuple[int | None, ...], small: tuple[int | None, ...]) -> None:
    groups = _groups(check)
    if groups == [] and not small:
        # to or from rank 0 (MLIR writes `[]`): the one element is the only one, so every other
        # dimension is 1 (MLIR 22 checks nothing here; spec/differences.md)
        wrong = next((i for i, d in enumerate(big) if d is not None and d != 1), None)
        if wrong is not None:
            check.fail("C2", f"a reshape to or from rank 0 needs dimensions of size 1, but dimension {wrong} is {big[wrong]}")
        return
    flat = [i for g in groups or [] for i in g]
    if groups is None or flat != list(range(len(big))) or len(groups) != len(small):
        check.fail("C1", f"the reassociation must group the {len(big)} dimensions, in order, into {len(small)} groups")
        return
    for g, d in zip(groups, small, strict=True):
        parts = [big[i] for i in g]
        if d is not None and all(p is not None for p in parts) and math.prod(p for p in parts if p is not None) != d:
            check.fail("C2", f"dimensions {g} ({'x'.join(str(p) for p in parts)}) must multiply to {d}")
            return


@rule(Tensor.expand_shape)
def expand_shape(check: Check) -> None:
    src, result = shape(check.operand_type("src")) or (), shape(check.result_type("result")) or ()
    _reshape(check, result, src)
    out = check.attr("static_output_shape")
    if not isinstance(out, at.DenseArrayAttr) or len(out.values) != len(result):
        check.fail("C3", f"output_shape needs {len(result)} entries")


@rule(Tensor.collapse_shape)
def collapse_shape(check: Check) -> None:
    _reshape(check, shape(check.operand_type("src")) or (), shape(check.result_type("result")) or ())


@rule(Tensor.reshape)
def reshape(check: Check) -> None:
    src, result = check.operand_type("source"), check.result_type("result")
    a, b = shape(src), shape(result)
    if elem(src) != elem(result) or (
        a is not None and b is not None and None not in a and None not in b and math.prod(a) != math.prod(b)  # type: ignore[arg-type]
    ):
        check.fail("C1", f"{t(src)} and {t(result)} must have the same element type and number of elements")


@rule(Tensor.concat)
def concat(check: Check) -> None:
    dim = check.attr("dim")
    result = check.result_type("result")
    rs = shape(result) or ()
    if not isinstance(dim, at.IntegerAttr) or not 0 <= dim.value < len(rs):
        check.fail("C1", f"dim must be below the rank {len(rs)}")
        return
    total: int | None = 0
    for x in check.operand_types_of("inputs"):
        s = shape(x) or ()
        if len(s) != len(rs) or elem(x) != elem(result):
            check.fail("C1", f"input {t(x)} must have rank {len(rs)} and element type {t(elem(result))}")
            return
        for k, (a, b) in enumerate(zip(s, rs, strict=True)):
            if k != dim.value and a is not None and b is not None and a != b:
                check.fail("C2", f"input {t(x)} differs from the result in dimension {k}")
                return
        along = s[dim.value]
        total = total + along if (along is not None and total is not None) else None
    if total is not None and rs[dim.value] is not None and total != rs[dim.value]:
        check.fail("C2", f"the inputs add up to {total} along dimension {dim.value}, not {rs[dim.value]}")


@rule(Tensor.pad)
def pad(check: Check) -> None:
    # the source stays positional: the low/high split rests on operandSegmentSizes, which this rule does not check
    src, result = shape(check.operand_types[0]) or (), shape(check.result_type("result")) or ()
    low, high = check.attr("static_low"), check.attr("static_high")
    if not isinstance(low, at.DenseArrayAttr) or not isinstance(high, at.DenseArrayAttr) or len(low.values) != len(src) or len(high.values) != len(src):
        check.fail("C1", f"low and high need {len(src)} entries")
        return
    for i, (s, lo, hi, r) in enumerate(zip(src, low.values, high.values, result, strict=False)):
        if None in (s, r) or KDYNAMIC in (lo, hi):
            continue
        if s + lo + hi != r:  # type: ignore[operator]
            check.fail("C2", f"dimension {i}: {s} + {lo} + {hi} != {r}")
            return
    _index_body(check, "C3", check.result_type("result"))


@rule(Tensor.generate)
def generate(check: Check) -> None:
    result = check.result_type("result")
    if len(check.operand_types_of("dynamic_extents")) != _dyn_count(shape(result)):
        check.fail("C1", f"{t(result)} needs {_dyn_count(shape(result))} extents")
    _index_body(check, "C2", result)


def _index_body(check: Check, cid: str, result: object) -> None:
    """The region of tensor.pad / tensor.generate: one block, an index argument per dimension
    of `result`, a yield of its element type (the interpreter calls it with the indices)."""
    rank = len(shape(result) or ())  # type: ignore[arg-type]
    region = check.op.regions[0] if check.op.regions else None
    if region is None or len(region.blocks) != 1:
        check.fail(cid, "the region must be one block")
        return
    block = region.blocks[0]
    if [a.type for a in block.arguments] != [ty.INDEX] * rank:
        check.fail(cid, f"the region needs {rank} index argument(s), one per dimension, found "
                   f"({', '.join(t(a.type) for a in block.arguments)})")
        return
    last = block.operations[-1] if block.operations else None
    want = elem(result)  # type: ignore[arg-type]
    if last is not None and last.name == Tensor.yield_ and (len(last.operand_types) != 1 or last.operand_types[0] != want):
        check.fail(cid, f"the region must yield one {t(want)}, found ({', '.join(t(x) for x in last.operand_types)})")


@rule(Tensor.dim, Memref.dim)
def dim(check: Check) -> None:
    op = check.defining_op(check.operand("index"))
    rank = len(shape(check.operand_type("source")) or ())
    if op is not None and op.name == Arith.constant:
        v = op.attributes.get("value")
        if isinstance(v, at.IntegerAttr) and not 0 <= v.value < rank:
            check.fail("C1", f"dimension {v.value} is not below the rank {rank}")


@rule(Memref.reinterpret_cast)
def reinterpret_cast(check: Check) -> None:
    result = check.result_type("result")
    offsets, sizes, strides = (check.attr(k) for k in ("static_offsets", "static_sizes", "static_strides"))
    rank = len(shape(result) or ())
    if not all(isinstance(x, at.DenseArrayAttr) for x in (offsets, sizes, strides)) or len(offsets.values) != 1 or len(sizes.values) != rank or len(strides.values) != rank:  # type: ignore[union-attr]
        check.fail("C1", f"one offset and {rank} sizes and strides are required")
    src = check.operand_types[0]
    if elem(src) != elem(result) or getattr(src, "memory_space", None) != getattr(result, "memory_space", None):
        check.fail("C2", f"{t(src)} and {t(result)} must have the same element type and memory space")


_ = (fmt_shape,)
