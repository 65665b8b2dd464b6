"""The KTIR conformance suite: cases, tolerance classes, runner, adapters and reports.

    ktir conformance run [--adapter reference | --adapter python:pkg.mod:Class |
                          --adapter-cmd 'CMD {ktir} {inputs} {outputs}'] [--level L] [-k PATTERN]
                         [-j N] [--timeout S] [--report results.json] [--junit results.xml]
                         [--html report.html]

See spec/conformance.md (levels, tolerance classes, case format) and
docs/guides/conformance.md (running it, writing an adapter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ktir.lazy import lazy_exports

if TYPE_CHECKING:
    from conformance.adapters import Adapter, CheckResult, CommandAdapter, NotSupported, ReferenceAdapter, load_adapter
    from conformance.model import LEVELS, SUITE_ROOT, Case, Manifest, load_suite
    from conformance.results import CaseResult, Results
    from conformance.runner import AdapterSpec, run_suite, select
    from conformance.tolerance import compare
    from conformance.values import case_inputs, read_npz

# loaded on first use (ktir.lazy): importing a submodule such as the CLI's stays cheap
__getattr__ = lazy_exports(
    __name__,
    {
        "Adapter": "conformance.adapters",
        "CheckResult": "conformance.adapters",
        "CommandAdapter": "conformance.adapters",
        "NotSupported": "conformance.adapters",
        "ReferenceAdapter": "conformance.adapters",
        "load_adapter": "conformance.adapters",
        "LEVELS": "conformance.model",
        "SUITE_ROOT": "conformance.model",
        "Case": "conformance.model",
        "Manifest": "conformance.model",
        "load_suite": "conformance.model",
        "CaseResult": "conformance.results",
        "Results": "conformance.results",
        "AdapterSpec": "conformance.runner",
        "run_suite": "conformance.runner",
        "select": "conformance.runner",
        "compare": "conformance.tolerance",
        "case_inputs": "conformance.values",
        "read_npz": "conformance.values",
    },
)


def cases_per_op() -> Mapping[str, int]:
    """Op name -> number of executing and validation cases that use it (for the status table)."""
    from conformance.coverage import cases_per_op as count

    return count()


def coverage_markdown() -> str:
    """The op x level x dtype coverage table of the suite, in Markdown (for the docs)."""
    from conformance.coverage import markdown

    return markdown()


__all__ = [
    "LEVELS",
    "SUITE_ROOT",
    "Adapter",
    "AdapterSpec",
    "Case",
    "CaseResult",
    "CheckResult",
    "CommandAdapter",
    "Manifest",
    "NotSupported",
    "ReferenceAdapter",
    "Results",
    "case_inputs",
    "cases_per_op",
    "compare",
    "coverage_markdown",
    "load_adapter",
    "load_suite",
    "read_npz",
    "run_suite",
    "select",
]
