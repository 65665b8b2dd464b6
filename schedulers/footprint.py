"""Prove that a matmul kernel computes the whole C = A B, before it is rewritten as one.

The rewrite replaces the kernel by its own tiling of C = A B over whole views, so the input
must compute exactly that, whatever its own tiling. `matmul_footprint` runs the kernel's
index arithmetic for every tile of its grid (constants, tile ids, `arith` on indices,
`scf.for` loops), following abstract values instead of data: a loaded block is its box in
its view, an accumulator is the list of (rows, cols, k range) products summed into it. It
then requires that every accumulator starts from `linalg.fill` of 0.0, that each stored
block is the sum over the whole K range, once, of the products of its own rows and columns,
and that the stored blocks cover C exactly (blocks stored twice with equal contents are
allowed). Anything else returns the reason the kernel is declined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np

from ktir.dialects.names import Arith, Func, Ktdp, Linalg, Scf, Tensor
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Operation

MAX_STEPS = 200_000  # ops executed over all tiles before verification gives up (and the kernel is declined)

_INT: dict[str, Callable[[int, int], int]] = {
    Arith.addi: lambda a, b: a + b, Arith.subi: lambda a, b: a - b, Arith.muli: lambda a, b: a * b,
    Arith.minsi: min, Arith.maxsi: max, Arith.minui: min, Arith.maxui: max,
    Arith.divui: lambda a, b: a // b, Arith.divsi: lambda a, b: int(a / b), Arith.remui: lambda a, b: a % b,
    "arith.ceildivui": lambda a, b: -(-a // b), Arith.floordivsi: lambda a, b: a // b,
}


_UNKNOWN = object()  # the value of an argument not bound by --size (an array's address)


class Declined(Exception):
    """The kernel is not provably C = A B over whole views; the message says why."""


@dataclass(frozen=True)
class Block:
    view: str
    starts: tuple[int, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Acc:
    terms: tuple[tuple[int, int, int, int, int, int], ...]  # (row0, rows, col0, cols, k0, ks) summed
    init: float = 0.0  # the constant the accumulator started from


@dataclass
class _Run:
    views: dict[str, str]  # SSA name of the A, B, C memory views -> "a" / "b" / "c"
    steps: int = 0


def matmul_footprint(fn: Operation, grid: Sequence[int], sizes: dict[str, int], views: dict[str, str],
                     dims: tuple[int, int, int]) -> str | float:
    """The constant every element of C starts from (0.0: C = A B; else C = init + A B) when the
    kernel stores exactly that over the whole views (A M x K, B K x N), else why not (a str)."""
    run = _Run(views)
    stored: dict[tuple[int, int, int, int], Acc] = {}
    body = fn.regions[0].blocks[0]
    try:
        for tile in product(*(range(g) for g in grid)):
            env: dict[str, Any] = {a.name: _UNKNOWN for a in body.arguments}
            env.update({f"%{k.lstrip('%')}": v for k, v in sizes.items()})
            _block(body.operations, env, tile, run, stored)
        return _verify(stored, dims)
    except Declined as e:
        return str(e)


def _value(env: dict[str, Any], name: str) -> Any:
    if name not in env:
        raise Declined(f"{name} is not known when the kernel's blocks are traced (an argument without --size?)")
    return env[name]


def _int(env: dict[str, Any], name: str) -> int:
    v = _value(env, name)
    if v is _UNKNOWN:
        raise Declined(f"{name} depends on an argument without a value (give it with --size)")
    if not isinstance(v, int) or isinstance(v, bool):
        raise Declined(f"{name} is used as an index but is not an integer")
    return v


def _block(ops: Sequence[Operation], env: dict[str, Any], tile: tuple[int, ...], run: _Run,
           stored: dict[tuple[int, int, int, int], Acc]) -> list[Any]:
    for op in ops:
        run.steps += 1
        if run.steps > MAX_STEPS:
            raise Declined(f"more than {MAX_STEPS} ops to trace to prove the kernel is one matmul")
        n = op.name
        if n == Arith.constant:
            v = op.attributes.get("value")
            if isinstance(v, at.IntegerAttr):
                env[op.results[0]] = int(v.value)
            elif isinstance(v, at.FloatAttr):
                env[op.results[0]] = float(v.value)
            elif isinstance(v, at.DenseAttr) and v.is_splat and isinstance(v.values, int | float):
                env[op.results[0]] = Acc((), float(v.values))  # every element the same: a starting value
            else:
                env[op.results[0]] = None  # a dense constant: never a valid operand below
        elif n == Ktdp.get_compute_tile_id:
            for r, t in zip(op.results, tile, strict=False):
                env[r] = t
            for r in op.results[len(tile):]:
                env[r] = 0
        elif n in _INT:
            if any(env.get(o) is _UNKNOWN for o in op.operands):
                env[op.results[0]] = _UNKNOWN  # pointer arithmetic on an array argument: never a coordinate
                continue
            a, b = (_int(env, o) for o in op.operands)
            if n in (Arith.divui, Arith.divsi, Arith.remui, "arith.ceildivui", Arith.floordivsi) and b == 0:
                raise Declined(f"{n} divides by zero")
            env[op.results[0]] = int(_INT[n](a, b))
        elif n == Ktdp.construct_memory_view:
            env[op.results[0]] = ("view", op.results[0])
        elif n == Ktdp.construct_access_tile:
            view = _value(env, op.operands[0])
            tt = op.result_types[0]
            assert isinstance(tt, ty.AccessTileType)
            # subscripts are affine in the index operands: coordinates = base_map(operands)
            indices = [_int(env, o) for o in op.operands[1:]]
            base = op.attributes.get("base_map")
            if isinstance(base, at.AffineMapAttr):
                nd = base.value.num_dims
                starts = tuple(af.evaluate(e, indices[:nd], indices[nd:]) for e in base.value.results)
            else:
                starts = tuple(indices)
            env[op.results[0]] = Block(view[1], starts, tuple(int(d or 0) for d in tt.shape))
        elif n == Ktdp.load:
            env[op.results[0]] = _value(env, op.operands[0])
        elif n == Tensor.empty:
            env[op.results[0]] = "empty"
        elif n == Tensor.splat:
            value = _value(env, op.operands[0])
            if not isinstance(value, int | float):
                raise Declined("an accumulator starts from a splat of a value that is not a constant")
            env[op.results[0]] = Acc((), float(value))
        elif n == Linalg.fill:
            value = _value(env, op.operands[0])
            if not isinstance(value, int | float):
                raise Declined("an accumulator starts from a fill of a value that is not a constant")
            env[op.results[0]] = Acc((), float(value))
        elif n == Linalg.matmul:
            env[op.results[0]] = _matmul(env, op, run)
        elif n in (Arith.truncf, Arith.extf):
            v = _value(env, op.operands[0])
            if not isinstance(v, Acc):
                raise Declined(f"{n} of something other than the accumulator")
            env[op.results[0]] = v
        elif n == Ktdp.store:
            _store(env, op, run, stored)
        elif n == Scf.for_:
            _loop(op, env, tile, run, stored)
        elif n == Scf.yield_:
            return [_value(env, o) for o in op.operands]
        elif n == Func.return_:
            return []
        else:
            raise Declined(f"{n} is not traced when proving the kernel is one matmul")
    return []


def _matmul(env: dict[str, Any], op: Operation, run: _Run) -> Acc:
    x, y, acc = (_value(env, o) for o in op.operands[:3])
    if not (isinstance(x, Block) and isinstance(y, Block) and run.views.get(x.view) == "a"
            and run.views.get(y.view) == "b"):
        raise Declined("the matmul's operands are not blocks loaded from A and B")
    if not isinstance(acc, Acc):
        raise Declined("the matmul accumulates into something other than a zero-filled accumulator")
    (r0, k0), (m, k) = x.starts, x.shape
    (k1, c0), (k2, nn) = y.starts, y.shape
    if k0 != k1 or k != k2:
        raise Declined(f"a block of A (columns {k0}..{k0 + k - 1}) is multiplied by a block of B with rows "
                       f"{k1}..{k1 + k2 - 1}")
    if acc.terms and acc.terms[0][:4] != (r0, m, c0, nn):
        raise Declined("one accumulator sums products of different output blocks")
    return Acc((*acc.terms, (r0, m, c0, nn, k0, k)), acc.init)


def _store(env: dict[str, Any], op: Operation, run: _Run, stored: dict[tuple[int, int, int, int], Acc]) -> None:
    value, where = _value(env, op.operands[0]), _value(env, op.operands[1])
    if not isinstance(where, Block) or run.views.get(where.view) != "c":
        raise Declined("a store does not write C")
    if not isinstance(value, Acc) or not value.terms:
        raise Declined("a store to C does not store a matmul accumulator")
    box = (where.starts[0], where.shape[0], where.starts[1], where.shape[1])
    if value.terms[0][:4] != box:
        raise Declined(f"the block stored at {list(where.starts)} is the product of rows {value.terms[0][0]} and "
                       f"columns {value.terms[0][2]}")
    ks = tuple(sorted(t[4:] for t in value.terms))
    before = stored.get(box)
    if before is not None and tuple(sorted(t[4:] for t in before.terms)) != ks:
        raise Declined(f"the block of C at {list(where.starts)} is stored twice with different sums")
    if before is not None and before.init != value.init:
        raise Declined(f"the block of C at {list(where.starts)} is stored twice from different initial values")
    stored[box] = Acc(tuple(sorted(value.terms)), value.init)


def _loop(op: Operation, env: dict[str, Any], tile: tuple[int, ...], run: _Run,
          stored: dict[tuple[int, int, int, int], Acc]) -> None:
    lb, ub, step = (_int(env, o) for o in op.operands[:3])
    if step <= 0:
        raise Declined("a loop with a non-positive step")
    carried = [_value(env, o) for o in op.operands[3:]]
    block = op.regions[0].blocks[0]
    iv, args = block.arguments[0].name, [a.name for a in block.arguments[1:]]
    for i in range(lb, ub, step):
        inner = dict(env)
        inner[iv] = i
        inner.update(zip(args, carried, strict=True))
        carried = _block(block.operations, inner, tile, run, stored)
    for r, v in zip(op.results, carried, strict=True):
        env[r] = v


def _verify(stored: dict[tuple[int, int, int, int], Acc], dims: tuple[int, int, int]) -> str | float:
    M, N, K = dims
    if not stored:
        return "the kernel stores nothing to C"
    inits = {acc.init for acc in stored.values()}
    if len(inits) != 1:
        return f"blocks of C start from different values {sorted(inits)}"
    for (r0, m, c0, nn), acc in stored.items():
        if r0 < 0 or c0 < 0 or r0 + m > M or c0 + nn > N:
            return f"a block of C at [{r0}, {c0}] leaves the {M}x{N} view"
        pos = 0
        for k0, k in sorted(t[4:] for t in acc.terms):
            if k0 != pos:
                return (f"the block of C at [{r0}, {c0}] sums K from {k0} where {pos} is expected: not the "
                        f"whole K range once")
            pos = k0 + k
        if pos != K:
            return f"the block of C at [{r0}, {c0}] sums K up to {pos}, not {K}"
    # every element of C stored by exactly one distinct block: count coverage on the blocks' grid lines
    boxes = np.array(list(stored), dtype=np.int64)
    rows = np.unique(np.concatenate([[0, M], boxes[:, 0], boxes[:, 0] + boxes[:, 1]]))
    cols = np.unique(np.concatenate([[0, N], boxes[:, 2], boxes[:, 2] + boxes[:, 3]]))
    count = np.zeros((len(rows), len(cols)), dtype=np.int64)
    r_lo, r_hi = np.searchsorted(rows, boxes[:, 0]), np.searchsorted(rows, boxes[:, 0] + boxes[:, 1])
    c_lo, c_hi = np.searchsorted(cols, boxes[:, 2]), np.searchsorted(cols, boxes[:, 2] + boxes[:, 3])
    for idx, sign in ((r_lo, c_lo), 1), ((r_lo, c_hi), -1), ((r_hi, c_lo), -1), ((r_hi, c_hi), 1):
        np.add.at(count, idx, sign)
    cells = count.cumsum(0).cumsum(1)[:-1, :-1]
    if (cells != 1).any():
        r, c = np.argwhere(cells != 1)[0]
        what = "not stored" if cells[r, c] == 0 else "stored by overlapping blocks"
        return f"C[{rows[r]}, {cols[c]}] is {what}: the kernel does not compute the whole of C once"
    return inits.pop()
