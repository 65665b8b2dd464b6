"""Verifier mutants: one realistic verifier bug each, injected into `ktir.verify` by
monkeypatching (the diagnostics it emits, its rule table, its generic pass). They are run
against the `syntax` and `validation` levels: a bug that misses a violation must fail a
reject case, one that rejects a valid program must fail an accept case, and one that blames
the wrong line or rule must fail a reject case now that reject cases are judged by ID and
line.

Written from the rules of spec/ (the numbered constraints of the op pages, the structural
rules of spec/conformance.md), not from the cases: a dropped rule, a sub-rule of one ID
dropped while its siblings stay, a location or an ID mixed up, a check made stricter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from mutants_patch import Mutant, Patch

Emit = Callable[..., None]


def _emits(change: Callable[[Any, str, str, str, Any], tuple[str, str, Any] | None]) -> Patch:
    """Patch Verifier.emit: `change(verifier, severity, ident, message, loc)` returns the
    (ident, message, loc) to emit instead, or None to drop the diagnostic."""
    @contextlib.contextmanager
    def patch() -> Iterator[None]:
        from ktir.verify.engine import Verifier

        original = Verifier.emit

        def emit(self: Any, severity: Any, ident: str, message: str, loc: Any, related: Any = None) -> None:
            if severity == "error":
                changed = change(self, severity, ident, message, loc)
                if changed is None:
                    return
                ident, message, loc = changed
            original(self, severity, ident, message, loc, related)

        with mock.patch.object(Verifier, "emit", emit):
            yield

    return patch


def drop(ident: str, containing: str = "", nested_only: bool = False) -> Patch:
    """Never report `ident` (only its messages containing `containing`: one sub-rule)."""
    def change(v: Any, sev: str, i: str, msg: str, loc: Any) -> tuple[str, str, Any] | None:
        if i == ident and containing in msg and (not nested_only or len(v.stack) > 1):
            return None
        return i, msg, loc
    return _emits(change)


def renamed(pairs: dict[str, str]) -> Patch:
    def change(v: Any, sev: str, i: str, msg: str, loc: Any) -> tuple[str, str, Any]:
        return pairs.get(i, i), msg, loc
    return _emits(change)


def located(prefix: str, where: Callable[[Any, Any], Any]) -> Patch:
    """Report errors of ops whose ID starts with `prefix` at `where(verifier, loc)`."""
    def change(v: Any, sev: str, i: str, msg: str, loc: Any) -> tuple[str, str, Any]:
        return i, msg, where(v, loc) if i.startswith(prefix) and loc is not None else loc
    return _emits(change)


def _function_line(v: Any, loc: Any) -> Any:
    func = v.current_func
    return func.loc if func is not None and func.loc is not None else loc


def _line_above(v: Any, loc: Any) -> Any:
    return loc._replace(line=max(1, loc.line - 1))


def _rule(op: str, wrap: Callable[[Any], Any]) -> Patch:
    """Replace the rule function of `op` by wrap(original)."""
    @contextlib.contextmanager
    def patch() -> Iterator[None]:
        from ktir.verify import RULES

        original = RULES[op]
        RULES[op] = wrap(original)
        try:
            yield
        finally:
            RULES[op] = original

    return patch


def _step_one_rejected(rule: Any) -> Any:
    """scf.for.C5 written as `step <= 1` (a step of 1 is rejected)."""
    from ktir.ir import attributes as at

    def mutated(check: Any) -> None:
        rule(check)
        step = check.defining_op(check.operand("step"))
        value = step.attributes.get("value") if step is not None and step.name == "arith.constant" else None
        if isinstance(value, at.IntegerAttr) and value.value == 1:
            check.fail("C5", "the step must be positive, found 1")
    return mutated


def _tile_zero_only(rule: Any) -> Any:
    """Access tiles checked against the view for tile 0 only (the grid taken as [1])."""
    def mutated(check: Any) -> None:
        grid, given = check.v.grid, check.v.grid_given
        check.v.grid, check.v.grid_given = tuple(1 for _ in grid), False
        try:
            rule(check)
        finally:
            check.v.grid, check.v.grid_given = grid, given
    return mutated


def _first_typed_only() -> Patch:
    """The generic pass checks only each op's first typed constraint."""
    @contextlib.contextmanager
    def patch() -> Iterator[None]:
        from ktir.verify import engine

        def check_typed(check: Any) -> bool:
            checked = check.opdef.checked_constraints()
            if not checked:
                return True
            from ktir.ir.asm import type_text

            first = checked[0]
            message = first.check.violation(check.opdef, check.operand_types, check.result_types, type_text)
            if message is not None:
                check.fail(first.id, message)
                return False
            return True

        with mock.patch.object(engine, "check_typed", check_typed):
            yield

    return patch


def _legacy_is_error() -> Patch:
    """The `legacy` spelling warning reported as an error."""
    @contextlib.contextmanager
    def patch() -> Iterator[None]:
        from ktir.syntax.diagnostics import Diagnostic
        from ktir.verify import validate as module

        original = module.validate_text

        def validate_text(text: str, filename: str | None = None) -> Any:
            m, diagnostics = original(text, filename)
            return m, [Diagnostic("error", d.id, d.message, d.line, d.column, d.file, d.notes)
                       if d.id == "legacy" else d for d in diagnostics]

        import conformance.adapters  # noqa: F401  (the reference adapter imports validate_text when checking)
        import ktir.verify

        with mock.patch.object(module, "validate_text", validate_text), \
                mock.patch.object(ktir.verify, "validate_text", validate_text):
            yield

    return patch


def _v(name: str, bug: str, patch: Patch) -> Mutant:
    return Mutant(name, bug, patch, (), "verifier", "verifier")


def catalogue() -> list[Mutant]:
    return [
        # rules missed entirely
        _v("v-load-element-type-unchecked", "ktdp.load.C2 (the result's element type is the view's) is never checked",
           drop("ktdp.load.C2")),
        _v("v-tile-bounds-unchecked", "ktdp.construct_access_tile.C7 (every tile stays inside its view) is never checked",
           drop("ktdp.construct_access_tile.C7")),
        _v("v-future-uses-unchecked", "ktdp.inter_tile_produce.C4 (a tile future has exactly one use) is never checked",
           drop("ktdp.inter_tile_produce.C4")),
        _v("v-distributed-overlap-unchecked", "ktdp.construct_distributed_memory_view.C2 (pieces do not overlap) is never checked",
           drop("ktdp.construct_distributed_memory_view.C2")),
        _v("v-ssa-type-unchecked", "ssa.type (an operand's stated type is its value's type) is never checked", drop("ssa.type")),
        _v("v-redefinition-unchecked", "ssa.redefined (shadowing a visible name) is never checked", drop("ssa.redefined")),
        # sub-rules dropped while the rest of their ID stays
        _v("v-ct-id-range-unchecked", "ktdp.construct_memory_view.C6: a ct_id beyond the grid is not checked (the other "
           "memory-space checks stay)", drop("ktdp.construct_memory_view.C6", "names no tile")),
        _v("v-dense-blob-size-unchecked", "arith.constant.C1: the byte count of a hex dense literal is not checked",
           drop("arith.constant.C1", "hex blob")),
        _v("v-negative-ct-id-unchecked", "type.memory_space: a negative ct_id is not checked", drop("type.memory_space", "non-negative")),
        _v("v-matmul-k-unchecked", "linalg.matmul.C2: the contracted dimension's extents are not compared (the operand "
           "count and ranks still are)", drop("linalg.matmul.C2", "dimension 'k'")),
        _v("v-constant-range-unchecked", "arith.constant.C1: an integer literal out of its type's range is not checked",
           drop("arith.constant.C1", "out of range")),
        _v("v-grid-unchecked", "func.func.C2 (grid is a non-empty array of positive integers) is never checked",
           drop("func.func.C2")),
        _v("v-loop-yield-unchecked", "scf.for.C3 (the body yields what the loop carries) is never checked", drop("scf.for.C3")),
        _v("v-nested-undefined-unchecked", "ssa.undefined is not checked inside nested regions (loop and branch bodies)",
           drop("ssa.undefined", nested_only=True)),
        _v("v-nested-terminator-unchecked", "region.terminator is not checked inside nested regions",
           drop("region.terminator", nested_only=True)),
        _v("v-typed-first-only", "the generic pass checks only the first typed constraint of each op", _first_typed_only()),
        _v("v-tile-bounds-tile-zero-only", "access tiles are checked against their view for tile 0 only",
           _rule("ktdp.construct_access_tile", _tile_zero_only)),
        # wrong rule or wrong place
        _v("v-load-ids-swapped", "ktdp.load.C1 and C2 are reported under each other's ID",
           renamed({"ktdp.load.C1": "ktdp.load.C2", "ktdp.load.C2": "ktdp.load.C1"})),
        _v("v-intertile-at-function", "inter-tile errors are reported at the enclosing function, not at the op",
           located("ktdp.inter_tile", _function_line)),
        _v("v-linalg-line-above", "linalg errors point one line above the op (an off-by-one in the location)",
           located("linalg.", _line_above)),
        # too strict: valid programs rejected
        _v("v-step-one-rejected", "scf.for.C5 written as step <= 1: a loop with step 1 is rejected",
           _rule("scf.for", _step_one_rejected)),
        _v("v-legacy-is-error", "a legacy spelling is an error instead of a warning", _legacy_is_error()),
    ]
