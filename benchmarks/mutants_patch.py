"""How mutants are injected: monkeypatches on the reference interpreter's op-kernel table
(`reference_interp.compiler.FACTORIES`), on module attributes, or on the verifier; each
patch is a context manager that restores what it replaced. No file is edited.

Nothing here reads the interpreter's tables when a mutant is *defined*: the op kernels
register themselves when `reference_interp.ops` is imported, which `_table()` does the
moment a patch is applied, so a mutant works whatever ran before it (or nothing did).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
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
    group: str = ""  # the semantics class it belongs to (the report counts kills per group)
    kind: str = "interpreter"  # or "verifier": judged by the syntax and validation levels

    def reaches(self, case_ops: list[str], level: str = "core", expect: str = "run") -> bool:
        """Whether a case can see the mutation (the others run unchanged code)."""
        if self.kind == "verifier":
            return level in ("syntax", "validation")
        if expect != "run":
            return False
        return not self.ops or any(op in self.ops for op in case_ops)


def _table() -> dict[str, Any]:
    """The interpreter's op-kernel table, with every op registered."""
    import reference_interp.ops  # noqa: F401  (registers the op kernels)
    from reference_interp.compiler import FACTORIES

    return FACTORIES


@contextlib.contextmanager
def _factories(changes: dict[str, Callable[[Any], Any]]) -> Iterator[None]:
    """Replace FACTORIES[name] by change(original factory) for each name, then restore."""
    table = _table()
    saved = {name: table[name] for name in changes}
    try:
        for name, change in changes.items():
            table[name] = change(saved[name])
        yield
    finally:
        table.update(saved)


def _blocking(run: Any) -> bool:
    from reference_interp.compiler import Blocking

    return isinstance(run, Blocking)


def _tagged(patch: Patch, ops: tuple[str, ...]) -> Patch:
    patch.ops = ops  # type: ignore[attr-defined]
    return patch


def retarget(pairs: dict[str, str]) -> Patch:
    """Compile op A as op B (same operands and types): `divui` done by the `divsi` kernel."""

    def change(target: str) -> Callable[[Any], Any]:
        def wrap(_orig: Any) -> Any:
            other = _table()[target]  # read when the patch is applied, never before
            return lambda c, op: other(c, op.model_copy(update={"name": target}))
        return wrap

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


Fix = Callable[[list[Any], tuple[int, ...], tuple[int, ...]], None]


def post_typed(names: tuple[str, ...], make: Callable[[Any, Any], Fix | None]) -> Patch:
    """Run the op, then let the fix `make(compiler, op)` returns (None: leave this op alone)
    corrupt its results: `fix(frame, operand slots, result slots)`."""
    def change(orig: Any) -> Any:
        def factory(c: Any, op: Any) -> Any:
            run = orig(c, op)
            fix = make(c, op)
            if fix is None:
                return run
            ins, outs = c.operand_slots(op), c.result_slots(op)
            if _blocking(run):  # an op that may wait for other tiles runs as a generator
                def mutated_gen(fr: list[Any]) -> Iterator[Any]:
                    yield from run.fn(fr)
                    fix(fr, ins, outs)
                return type(run)(mutated_gen)

            def mutated(fr: list[Any]) -> None:
                run(fr)
                fix(fr, ins, outs)
            return mutated
        return factory

    return _tagged(lambda: _factories(dict.fromkeys(names, change)), names)


def post(names: tuple[str, ...], fix: Fix) -> Patch:
    """Run the op, then let `fix(frame, operand slots, result slots)` corrupt its results."""
    return post_typed(names, lambda c, op: fix)


def pre_typed(names: tuple[str, ...], make: Callable[[Any, Any], Callable[[list[Any], tuple[int, ...]], dict[int, Any]] | None]) -> Patch:
    """Run the op on operands replaced by `feed(frame, operand slots)` (restored afterwards),
    where `feed = make(compiler, op)` (None: leave this op alone)."""
    def change(orig: Any) -> Any:
        def factory(c: Any, op: Any) -> Any:
            run = orig(c, op)
            feed = make(c, op)
            if feed is None:
                return run
            ins = c.operand_slots(op)

            def swap_in(fr: list[Any]) -> tuple[dict[int, Any], dict[int, Any]]:
                replaced = feed(fr, ins)
                saved = {s: fr[s] for s in replaced}
                for s, v in replaced.items():
                    fr[s] = v
                return replaced, saved

            def swap_out(fr: list[Any], replaced: dict[int, Any], saved: dict[int, Any]) -> None:
                for s, v in saved.items():
                    if fr[s] is replaced[s]:
                        fr[s] = v

            if _blocking(run):
                def mutated_gen(fr: list[Any]) -> Iterator[Any]:
                    replaced, saved = swap_in(fr)
                    try:
                        yield from run.fn(fr)
                    finally:
                        swap_out(fr, replaced, saved)
                return type(run)(mutated_gen)

            def mutated(fr: list[Any]) -> None:
                replaced, saved = swap_in(fr)
                try:
                    run(fr)
                finally:
                    swap_out(fr, replaced, saved)
            return mutated
        return factory

    return _tagged(lambda: _factories(dict.fromkeys(names, change)), names)


def pre(names: tuple[str, ...], feed: Callable[[list[Any], tuple[int, ...]], dict[int, Any]]) -> Patch:
    """Run the op on operands replaced by `feed(frame, operand slots)` (restored afterwards)."""
    return pre_typed(names, lambda c, op: feed)


def attribute(module: str, name: str, make: Callable[[Any], Any]) -> Patch:
    """Replace `module.name` by make(original)."""

    def patch() -> contextlib.AbstractContextManager[Any]:
        mod = importlib.import_module(module)
        return mock.patch.object(mod, name, make(getattr(mod, name)))

    return patch


def per_tile() -> contextlib.AbstractContextManager[Any]:
    """`reference_interp.run` runs tile by tile (`lockstep=False` by default) while a mutant is
    applied. Mutants patch the per-tile op kernels (FACTORIES) and module functions; lockstep
    execution (reference_interp/lockstep*.py) has kernels of its own for loops, memory, linalg
    and collectives, which would not see them, and the mutant would survive every case that
    runs in lockstep. A mutant models an implementation's bug, so it must reach the run; that
    lockstep gives exactly the per-tile results is tested apart (tests/interp/test_lockstep.py)."""
    from reference_interp import executor

    defaults = executor.run.__kwdefaults__
    assert defaults is not None and "lockstep" in defaults
    return mock.patch.dict(defaults, {"lockstep": False})


def together(*patches: Patch) -> Patch:
    """Several patches applied as one mutant (one bug showing in several places)."""
    @contextlib.contextmanager
    def patch() -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for p in patches:
                stack.enter_context(p())
            yield

    ops = tuple(o for p in patches for o in getattr(p, "ops", ()))
    return _tagged(patch, ops) if ops else patch


# ---------------------------------------------------------------------- values in frames


def same_kind(orig: Any, new: Any) -> Any:
    """`new` (an array) in the representation `orig` had: an array, a numpy scalar, or a
    Python int/float/bool (how the interpreter keeps scalars outside vector mode)."""
    arr = np.asarray(new)
    if isinstance(orig, np.ndarray):
        return arr.astype(orig.dtype, copy=False)
    if isinstance(orig, np.generic):
        return arr.astype(orig.dtype)[()]
    if isinstance(orig, bool):
        return bool(arr)
    if isinstance(orig, int):
        return int(arr)
    if isinstance(orig, float):
        return float(arr)
    return arr[()] if arr.ndim == 0 else arr


def np_type(c: Any, t: Any) -> np.dtype[Any]:
    """The numpy dtype of the element type of `t` (a KTIR type) as the interpreter stores it."""
    from ktir.ir import types as ty
    from reference_interp.dtypes import np_dtype

    return np_dtype(ty.element_type(c.type(t)))


def result_dtype(c: Any, op: Any, k: int = 0) -> np.dtype[Any]:
    return np_type(c, op.result_types[k])


def operand_dtype(c: Any, op: Any, k: int = 0) -> np.dtype[Any]:
    return np_type(c, op.operand_types[k])
