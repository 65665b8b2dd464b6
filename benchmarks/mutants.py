"""Mutation testing of the conformance suite: how many realistic interpreter bugs does it catch?

Each mutant is one bug an implementer could plausibly make, injected into the reference
interpreter by monkeypatching (the op factory table `reference_interp.compiler.FACTORIES`,
or a module attribute); no file is edited. The harness runs the suite's executing cases
against the mutated interpreter, one mutant at a time, and reports the cases that kill each
(any status but `pass`).

    python benchmarks/mutants.py                 # every mutant, -j 2; prints the table
    python benchmarks/mutants.py -m divui-signed  # one mutant (repeatable)
    python benchmarks/mutants.py --markdown       # the table for docs/guides/conformance.md

The list is in docs/guides/conformance.md#mutation-testing, with every survivor explained.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np

Patch = Callable[[], contextlib.AbstractContextManager[Any]]


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str  # what the implementation gets wrong, in one line
    patch: Patch
    ops: tuple[str, ...] = ()  # the ops whose kernels it changes; () = every case may see it

    def reaches(self, case_ops: list[str]) -> bool:
        """Whether a case using `case_ops` can see the mutation (the others run unchanged code)."""
        return not self.ops or any(op in self.ops for op in case_ops)


# ---------------------------------------------------------------------- patching helpers


@contextlib.contextmanager
def _factories(changes: dict[str, Callable[[Any], Any]]) -> Iterator[None]:
    """Replace FACTORIES[name] by change(original factory) for each name, then restore."""
    from reference_interp.compiler import FACTORIES

    saved = {name: FACTORIES[name] for name in changes}
    try:
        for name, change in changes.items():
            FACTORIES[name] = change(saved[name])
        yield
    finally:
        FACTORIES.update(saved)


def _tagged(patch: Patch, ops: tuple[str, ...]) -> Patch:
    patch.ops = ops  # type: ignore[attr-defined]
    return patch


def retarget(pairs: dict[str, str]) -> Patch:
    """Compile op A as op B (same operands and types): `divui` done by the `divsi` kernel."""
    from reference_interp.compiler import FACTORIES

    def change(target: str) -> Callable[[Any], Any]:
        other = FACTORIES[target]
        return lambda _orig: (lambda c, op: other(c, op.model_copy(update={"name": target})))

    return _tagged(lambda: _factories({a: change(b) for a, b in pairs.items()}), tuple(pairs))


def predicates(op_name: str, pairs: dict[str, str]) -> Patch:
    """Compile a comparison with another predicate: `cmpi ult` as `cmpi slt`."""
    from ktir.dialects.registry import OPS
    from ktir.ir import attributes as at

    preds = OPS[op_name].option("predicates")
    assert isinstance(preds, tuple)

    def change(orig: Any) -> Any:
        def factory(c: Any, op: Any) -> Any:
            attr = op.attributes["predicate"]
            pred = preds[int(attr.value)]
            if pred in pairs:
                new = at.IntegerAttr(value=preds.index(pairs[pred]), type=attr.type)
                op = op.model_copy(update={"attributes": {**op.attributes, "predicate": new}})
            return orig(c, op)
        return factory

    return _tagged(lambda: _factories({op_name: change}), (op_name,))


def post(names: tuple[str, ...], fix: Callable[[list[Any], tuple[int, ...], tuple[int, ...]], None]) -> Patch:
    """Run the op, then let `fix(frame, operand slots, result slots)` corrupt its results."""
    def change(orig: Any) -> Any:
        def factory(c: Any, op: Any) -> Any:
            run = orig(c, op)
            ins, outs = c.operand_slots(op), c.result_slots(op)

            def mutated(fr: list[Any]) -> None:
                run(fr)
                fix(fr, ins, outs)
            return mutated
        return factory

    return _tagged(lambda: _factories(dict.fromkeys(names, change)), names)


def pre(names: tuple[str, ...], feed: Callable[[list[Any], tuple[int, ...]], dict[int, Any]]) -> Patch:
    """Run the op on operands replaced by `feed(frame, operand slots)` (restored afterwards)."""
    def change(orig: Any) -> Any:
        def factory(c: Any, op: Any) -> Any:
            run = orig(c, op)
            ins = c.operand_slots(op)

            def mutated(fr: list[Any]) -> None:
                replaced = feed(fr, ins)
                saved = {s: fr[s] for s in replaced}
                for s, v in replaced.items():
                    fr[s] = v
                try:
                    run(fr)
                finally:
                    for s, v in saved.items():
                        if fr[s] is replaced[s]:
                            fr[s] = v
            return mutated
        return factory

    return _tagged(lambda: _factories(dict.fromkeys(names, change)), names)


def attribute(module: str, name: str, make: Callable[[Any], Any]) -> Patch:
    """Replace `module.name` by make(original)."""
    import importlib

    def patch() -> contextlib.AbstractContextManager[Any]:
        mod = importlib.import_module(module)
        return mock.patch.object(mod, name, make(getattr(mod, name)))

    return patch


def _same_kind(orig: Any, new: np.ndarray) -> Any:
    return new if isinstance(orig, np.ndarray) else new[()]


# ---------------------------------------------------------------------- memory mutants


def _remake_view(v: Any, **changes: Any) -> Any:
    from reference_interp.memory import MemoryView

    args = {"space": v.space, "alloc": v.alloc, "addr": v.addr, "sizes": v.sizes, "strides": v.strides,
            "dtype": v.dtype, "cset": v.cset, "csyms": v.csyms, "ct_id": v.ct_id}
    args.update(changes)
    return MemoryView(**args)


def _row_major(sizes: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(sizes):
        out.append(max(acc, 1))
        acc *= max(n, 1)
    return tuple(out[::-1])


def _views(change: Callable[[Any], Any]) -> Patch:
    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        fr[outs[0]] = change(fr[outs[0]])
    return post(("ktdp.construct_memory_view",), fix)


def _tiles(change: Callable[[Any], None]) -> Patch:
    def fix(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
        change(fr[outs[0]])
    return post(("ktdp.construct_access_tile",), fix)


def _copy_tile(t: Any, **changes: Any) -> Any:
    from reference_interp.access import AccessTile

    new = AccessTile.__new__(AccessTile)
    for slot in AccessTile.__slots__:
        setattr(new, slot, changes.get(slot, getattr(t, slot)))
    if "perm" in changes or "ext" in changes:
        new.shape = new.ext if new.perm is None else tuple(new.ext[p] for p in new.perm)
    return new


def _global_base(v: Any) -> Any:
    return _remake_view(v, addr=v.alloc.base) if v.space == "global" and v.alloc is not None else v


def _zero_base(t: Any) -> None:
    if t.lo is not None:
        t.lo = tuple(0 for _ in t.lo)


def _reversed_base(t: Any) -> None:
    if t.lo is not None and len(t.lo) > 1:
        t.lo = tuple(reversed(t.lo))


def _holes_one(load: Any) -> Any:
    def mutated(ctx: Any, tile: Any, opname: str) -> Any:
        data = load(ctx, tile, opname)
        if tile.mask is None:
            return data
        mask = tile.mask if tile.perm is None else tile.mask.transpose(tile.perm)
        data = np.array(data)
        data[~mask] = 1
        return data
    return mutated


def _holes_written(store: Any) -> Any:
    def mutated(ctx: Any, tile: Any, data: Any, opname: str) -> None:
        if tile.mask is not None and tile.coords is None:
            tile = _copy_tile(tile, mask=None)
        store(ctx, tile, data, opname)
    return mutated


def _inverse_order(load: Any) -> Any:
    def mutated(ctx: Any, tile: Any, opname: str) -> Any:
        if tile.perm is None:
            return load(ctx, tile, opname)
        return load(ctx, _copy_tile(tile, perm=tuple(int(i) for i in np.argsort(tile.perm))), opname)
    return mutated


def _linear_load(load: Any) -> Any:
    def mutated(ctx: Any, tile: Any, opname: str) -> Any:
        if tile.perm is None:
            return load(ctx, tile, opname)
        return load(ctx, _copy_tile(tile, perm=None), opname).reshape(tile.shape)
    return mutated


def _linear_store(store: Any) -> Any:
    def mutated(ctx: Any, tile: Any, data: Any, opname: str) -> None:
        if tile.perm is None:
            return store(ctx, tile, data, opname)
        return store(ctx, _copy_tile(tile, perm=None), np.asarray(data).reshape(tile.ext), opname)
    return mutated


def _sorted_indices(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    t = fr[outs[0]]
    if t.coords is not None:
        t.coords = [np.sort(c, axis=0) if getattr(c, "ndim", 0) and c.shape[0] > 1 else c for c in t.coords]


def _swap_tile_ids(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    if len(outs) == 2:
        fr[outs[0]], fr[outs[1]] = fr[outs[1]], fr[outs[0]]


# ---------------------------------------------------------------------- value mutants


def _tiny(dt: np.dtype[Any]) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dt).smallest_normal)


def _flush(x: Any) -> Any:
    a = np.asarray(x)
    if a.dtype.kind not in "fV" or a.dtype.kind == "V" and a.dtype.itemsize > 2:
        return x
    wide = a.astype(np.float64)
    flushed = np.where(np.abs(wide) < _tiny(a.dtype), np.copysign(0.0, wide), wide).astype(a.dtype)
    return _same_kind(x, flushed)


def _ftz(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    fr[outs[0]] = _flush(fr[outs[0]])


def _daz(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    return {s: _flush(fr[s]) for s in ins}


def _zero_minus(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x = np.asarray(fr[ins[0]])
    fr[outs[0]] = _same_kind(fr[ins[0]], (np.zeros_like(x) - x).astype(x.dtype))


def _abs_keeps_negative_zero(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    x = np.asarray(fr[ins[0]])
    fr[outs[0]] = _same_kind(fr[ins[0]], np.where(x < 0, -x, x).astype(x.dtype))


def _fmod_as_remainder(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    a, b = np.asarray(fr[ins[0]]), np.asarray(fr[ins[1]])
    wide = np.remainder(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    fr[outs[0]] = _same_kind(fr[ins[0]], wide)


def _swapped_select(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    k, a, b = (fr[s] for s in ins)
    out = fr[outs[0]]
    fr[outs[0]] = np.where(k, b, a).astype(np.asarray(out).dtype) if isinstance(out, np.ndarray) else (b if k else a)


def _narrowing(fr: list[Any], ins: tuple[int, ...], outs: tuple[int, ...], saturate_only: bool) -> None:
    x = np.asarray(fr[ins[0]]).astype(np.float64)
    y = np.array(fr[outs[0]], copy=True)
    if y.dtype.itemsize != 2:
        return
    bits = y.view(np.uint16)
    yw = y.astype(np.float64)
    finite = np.isfinite(x)
    # saturate: infinities from finite inputs; toward zero: one ulp back where rounding went up in magnitude
    over = finite & np.isinf(yw) if saturate_only else finite & (np.abs(yw) > np.abs(x)) & (x != 0)
    bits[over] -= 1
    fr[outs[0]] = _same_kind(fr[outs[0]], y)


def _zero_outs(fr: list[Any], ins: tuple[int, ...]) -> dict[int, Any]:
    last = ins[-1]
    return {last: np.zeros_like(fr[last])}


MATMULS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matmul_transpose_a", "linalg.matmul_transpose_b",
           "linalg.batch_matmul_transpose_b", "linalg.matvec", "linalg.dot")
FLOAT_BINARY = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf")


def _with_ops(m: Mutant) -> Mutant:
    """Fill in `ops` for mutants that patch op kernels (their names are on the patch)."""
    names = getattr(m.patch, "ops", ())
    return Mutant(m.name, m.bug, m.patch, tuple(names)) if names and not m.ops else m


def catalogue() -> list[Mutant]:
    return [_with_ops(m) for m in _catalogue()]


def _catalogue() -> list[Mutant]:
    kt = "reference_interp.ops.ktdp"
    return [
        # memory views and access tiles
        Mutant("view-strides-ignored", "memory views are read with the row-major strides of their sizes",
               _views(lambda v: _remake_view(v, strides=_row_major(v.sizes)))),
        Mutant("view-offset-ignored", "a view starts at its array's first element whatever its offset operand",
               _views(_global_base)),
        Mutant("view-origin-ignored", "coordinate (0, ...) of a view is its first element even when its set starts elsewhere",
               _views(lambda v: _remake_view(v, origin=tuple(0 for _ in v.sizes)))),
        Mutant("tile-base-ignored", "access tiles start at coordinate 0 whatever their base subscripts",
               _tiles(_zero_base)),
        Mutant("tile-base-reversed", "access tile subscripts applied in reverse dimension order", _tiles(_reversed_base)),
        Mutant("holes-read-as-one", "loads through a non-rectangular access tile read 1 at holes instead of 0",
               attribute(kt, "load", _holes_one)),
        Mutant("holes-written", "stores through a non-rectangular access tile also write the holes",
               attribute(kt, "store", _holes_written)),
        Mutant("order-inverted", "access_tile_order applied as its inverse permutation on loads",
               attribute(kt, "load", _inverse_order)),
        Mutant("order-ignored-load", "loads ignore access_tile_order and reshape the row-major data",
               attribute(kt, "load", _linear_load)),
        Mutant("order-ignored-store", "stores ignore access_tile_order and reshape the data row-major",
               attribute(kt, "store", _linear_store)),
        Mutant("indirect-indices-sorted", "indirect access tiles visit their indices in sorted order",
               post(("ktdp.construct_indirect_access_tile",), _sorted_indices)),
        Mutant("tile-id-swapped", "2-D get_compute_tile_id returns (j, i)", post(("ktdp.get_compute_tile_id",), _swap_tile_ids)),
        # unsigned integer ops done as signed
        Mutant("divui-signed", "arith.divui done as signed division", retarget({"arith.divui": "arith.divsi"})),
        Mutant("remui-signed", "arith.remui done as signed remainder", retarget({"arith.remui": "arith.remsi"})),
        Mutant("shrui-arithmetic", "arith.shrui shifts in the sign bit", retarget({"arith.shrui": "arith.shrsi"})),
        Mutant("maxui-signed", "arith.maxui compares as signed", retarget({"arith.maxui": "arith.maxsi"})),
        Mutant("minui-signed", "arith.minui compares as signed", retarget({"arith.minui": "arith.minsi"})),
        Mutant("cmpi-unsigned-as-signed", "arith.cmpi ult/ule/ugt/uge compare as signed",
               predicates("arith.cmpi", {"ult": "slt", "ule": "sle", "ugt": "sgt", "uge": "sge"})),
        Mutant("extui-sign-extends", "arith.extui sign-extends", retarget({"arith.extui": "arith.extsi"})),
        Mutant("uitofp-signed", "arith.uitofp converts as signed", retarget({"arith.uitofp": "arith.sitofp"})),
        Mutant("index-castui-signed", "arith.index_castui sign-extends", retarget({"arith.index_castui": "arith.index_cast"})),
        Mutant("fptoui-signed", "arith.fptoui converts through a signed integer", retarget({"arith.fptoui": "arith.fptosi"})),
        Mutant("divsi-floors", "arith.divsi rounds toward negative infinity", retarget({"arith.divsi": "arith.floordivsi"})),
        # floating point
        Mutant("subnormal-results-flushed", "addf/subf/mulf/divf flush subnormal results to zero (FTZ)",
               post(FLOAT_BINARY, _ftz)),
        Mutant("subnormal-inputs-flushed", "addf/subf/mulf/divf read subnormal inputs as zero (DAZ)", pre(FLOAT_BINARY, _daz)),
        Mutant("maximumf-drops-nan", "arith.maximumf returns the other operand for NaN (maxnum semantics)",
               retarget({"arith.maximumf": "arith.maxnumf"})),
        Mutant("minimumf-drops-nan", "arith.minimumf returns the other operand for NaN",
               retarget({"arith.minimumf": "arith.minnumf"})),
        Mutant("maxnumf-propagates-nan", "arith.maxnumf returns NaN when one operand is NaN",
               retarget({"arith.maxnumf": "arith.maximumf"})),
        Mutant("negf-as-subtraction", "arith.negf computed as 0 - x (negf(+0) gives +0)", post(("arith.negf",), _zero_minus)),
        Mutant("absf-keeps-negative-zero", "math.absf computed as x < 0 ? -x : x (absf(-0) gives -0)",
               post(("math.absf",), _abs_keeps_negative_zero)),
        Mutant("cmpf-unordered-as-ordered", "arith.cmpf ueq/une/ult/ule/ugt/uge are false on NaN",
               predicates("arith.cmpf", {"ueq": "oeq", "une": "one", "ult": "olt", "ule": "ole", "ugt": "ogt", "uge": "oge"})),
        Mutant("truncf-toward-zero", "arith.truncf to f16/bf16 rounds toward zero",
               post(("arith.truncf",), lambda fr, i, o: _narrowing(fr, i, o, saturate_only=False))),
        Mutant("truncf-saturates", "arith.truncf to f16/bf16 saturates to the largest finite value instead of infinity",
               post(("arith.truncf",), lambda fr, i, o: _narrowing(fr, i, o, saturate_only=True))),
        Mutant("remf-floored", "arith.remf takes the sign of the divisor (Python %)", post(("arith.remf",), _fmod_as_remainder)),
        Mutant("roundeven-half-away", "math.roundeven rounds ties away from zero", retarget({"math.roundeven": "math.round"})),
        Mutant("select-swapped", "arith.select returns the false operand when the condition holds",
               post(("arith.select",), _swapped_select)),
        # structured ops
        Mutant("reduce-init-ignored", "linalg.reduce starts from zero instead of its outs operand",
               pre(("linalg.reduce",), _zero_outs)),
        Mutant("matmul-accumulator-ignored", "linalg.matmul (and its family) overwrite C instead of adding to it",
               pre(MATMULS, _zero_outs)),
    ]


# ---------------------------------------------------------------------- harness


def run_mutant(name: str, pattern: str | None = None, root: str | None = None) -> tuple[str, list[str], int, float]:
    """(name, ids of the cases that kill it, cases run, seconds) for one mutant, in this process;
    `root` is another suite's root (an older revision, to compare)."""
    from pathlib import Path

    from conformance.adapters import ReferenceAdapter
    from conformance.model import SUITE_ROOT, load_suite
    from conformance.runner import run_case, select

    suite = Path(root) if root else SUITE_ROOT
    mutant = next(m for m in catalogue() if m.name == name)
    cases = [c for c in select(load_suite(suite), None, pattern) if c.expect == "run" and mutant.reaches(c.ops)]
    adapter = ReferenceAdapter()
    t0 = time.perf_counter()
    with mutant.patch():
        killers = [c.id for c in cases if run_case(c, adapter, suite, 60).status != "pass"]
    return name, killers, len(cases), time.perf_counter() - t0


def run_all(names: list[str], jobs: int = 2, pattern: str | None = None, root: str | None = None) -> dict[str, list[str]]:
    if jobs <= 1:
        return {n: run_mutant(n, pattern, root)[1] for n in names}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return {n: k for n, k, _, _ in pool.map(run_mutant, names, [pattern] * len(names), [root] * len(names))}


def markdown(results: dict[str, list[str]]) -> str:
    rows = ["| mutant | the bug | killed by | e.g. |", "|---|---|---:|---|"]
    bugs = {m.name: m.bug for m in catalogue()}
    for name, killers in results.items():
        example = ", ".join(f"`{k}`" for k in sorted(killers, key=len)[:2]) or "**survives**"
        rows.append(f"| `{name}` | {bugs[name]} | {len(killers)} | {example} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--mutant", action="append", help="run only this mutant (repeatable)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("-k", dest="pattern", help="only cases whose id contains PATTERN")
    parser.add_argument("--markdown", action="store_true", help="print the guide's table")
    parser.add_argument("--suite", help="another suite root (e.g. an older revision's conformance/), to compare")
    args = parser.parse_args(argv)
    names = args.mutant or [m.name for m in catalogue()]
    unknown = set(names) - {m.name for m in catalogue()}
    if unknown:
        print(f"unknown mutant(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results = run_all(names, args.jobs, args.pattern, args.suite)
    seconds = time.perf_counter() - t0
    killed = [n for n, k in results.items() if k]
    if args.markdown:
        print(markdown(results))
    else:
        for name, killers in results.items():
            shown = ", ".join(sorted(killers, key=len)[:3]) + (" ..." if len(killers) > 3 else "")
            print(f"{'killed ' if killers else 'SURVIVES'} {name:<28} {len(killers):4d} cases  {shown}")
    print(f"{len(killed)} of {len(results)} mutants killed ({len(killed) / len(results):.1%}) in {seconds:.0f} s "
          f"with -j {args.jobs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
