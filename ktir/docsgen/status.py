"""The implementation status table: for each op, what the spec, verifier, interpreter,
conformance suite and schedulers cover.

Each column other than the spec's is filled by a *provider*: a function of the component's
public API, imported here like any other dependency (so the import-graph test sees it).

| column | provider | returns |
|---|---|---|
| verifier | `ktir.verify.checked_constraints` | iterable of constraint IDs the verifier checks (`ktdp.load.C1`) |
| interpreter | `reference_interp.implemented_ops` | iterable of op names the reference interpreter executes |
| conformance | `conformance.cases_per_op` | mapping op name -> number of conformance cases using it |
| schedulers | `schedulers.supported_ops` | mapping scheduler name -> iterable of op names it accepts |

`Coverage` keeps a None column ("not yet") for a component that reports nothing, which the
table renders without guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ktir.dialects.base import OpDef


@dataclass(frozen=True)
class Coverage:
    """What the components report; None for a component without a provider yet."""

    verifier: frozenset[str] | None
    interpreter: frozenset[str] | None
    conformance: Mapping[str, int] | None
    schedulers: Mapping[str, frozenset[str]] | None


def collect() -> Coverage:
    import conformance
    import reference_interp
    import schedulers
    from ktir.verify import checked_constraints

    reported: Mapping[str, Iterable[str]] = schedulers.supported_ops()
    return Coverage(
        verifier=frozenset(checked_constraints()),
        interpreter=frozenset(reference_interp.implemented_ops()),
        conformance=dict(conformance.cases_per_op()),
        schedulers={name: frozenset(ops) for name, ops in reported.items()},
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
