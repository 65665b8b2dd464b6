"""The implementation status table: for each op, what the spec, verifier, interpreter,
conformance suite and schedulers cover.

Each column other than the spec's is filled by a *provider*: a function at a fixed import
path that the component exports. While a component does not exist yet (or does not export
its provider) its column says so, instead of guessing.

| column | provider | returns |
|---|---|---|
| verifier | `ktir.verify:checked_constraints` | iterable of constraint IDs the verifier checks (`ktdp.load.C1`) |
| interpreter | `reference_interp:implemented_ops` | iterable of op names the reference interpreter executes |
| conformance | `conformance:cases_per_op` | mapping op name -> number of conformance cases using it |
| schedulers | `schedulers:supported_ops` | mapping scheduler name -> iterable of op names it accepts |
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ktir.dialects.base import OpDef

PROVIDERS: dict[str, str] = {
    "verifier": "ktir.verify:checked_constraints",
    "interpreter": "reference_interp:implemented_ops",
    "conformance": "conformance:cases_per_op",
    "schedulers": "schedulers:supported_ops",
}


def _provider(column: str) -> Callable[[], Any] | None:
    module_name, _, attr = PROVIDERS[column].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    found = getattr(module, attr, None)
    return found if callable(found) else None


@dataclass(frozen=True)
class Coverage:
    """What the components report; None for a component without a provider yet."""

    verifier: frozenset[str] | None
    interpreter: frozenset[str] | None
    conformance: Mapping[str, int] | None
    schedulers: Mapping[str, frozenset[str]] | None


def collect() -> Coverage:
    def as_set(column: str) -> frozenset[str] | None:
        fn = _provider(column)
        return None if fn is None else frozenset(fn())

    conformance_fn = _provider("conformance")
    schedulers_fn = _provider("schedulers")
    schedulers: dict[str, frozenset[str]] | None = None
    if schedulers_fn is not None:
        reported: Mapping[str, Iterable[str]] = schedulers_fn()
        schedulers = {name: frozenset(ops) for name, ops in reported.items()}
    return Coverage(
        verifier=as_set("verifier"),
        interpreter=as_set("interpreter"),
        conformance=None if conformance_fn is None else dict(conformance_fn()),
        schedulers=schedulers,
    )


NOT_YET = "not yet"


def row(op: OpDef, has_semantics: bool, coverage: Coverage) -> dict[str, str]:
    """One status row, as the cell texts of the table."""
    ids = op.constraint_ids()
    spec = ("yes" if has_semantics else "no") + (f", {len(ids)} constraints" if ids else "")
    if coverage.verifier is None:
        verifier = NOT_YET
    elif not ids:
        verifier = "nothing to check"
    else:
        verifier = f"{sum(i in coverage.verifier for i in ids)}/{len(ids)}"
    interpreter = NOT_YET if coverage.interpreter is None else ("yes" if op.name in coverage.interpreter else "no")
    conformance = NOT_YET if coverage.conformance is None else str(coverage.conformance.get(op.name, 0))
    if coverage.schedulers is None:
        schedulers = NOT_YET
    else:
        names = sorted(n for n, ops in coverage.schedulers.items() if op.name in ops)
        schedulers = ", ".join(names) or "none"
    return {
        "spec": spec,
        "verifier": verifier,
        "interpreter": interpreter,
        "conformance": conformance,
        "schedulers": schedulers,
    }
