"""What the suite covers: cases per op, and the op x level x dtype table for the docs."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from functools import cache

from conformance.model import LEVELS, Case, load_suite


@cache
def _suite() -> tuple[Case, ...]:
    return tuple(load_suite())


def cases_per_op(cases: tuple[Case, ...] | None = None) -> Mapping[str, int]:
    """Op name -> number of executing and validation cases that use it."""
    counts: Counter[str] = Counter()
    for case in cases if cases is not None else _suite():
        if case.expect == "run" or case.level == "validation":
            counts.update(case.ops)
    return dict(counts)


def executing_cases_per_op(cases: tuple[Case, ...] | None = None) -> Mapping[str, int]:
    counts: Counter[str] = Counter()
    for case in cases if cases is not None else _suite():
        if case.expect == "run":
            counts.update(case.ops)
    return dict(counts)


def markdown(cases: tuple[Case, ...] | None = None) -> str:
    """A Markdown table: one row per op of the inventory; per level, the number of cases
    using the op; and the element types of its executing cases."""
    from ktir.dialects.registry import OPS

    suite = cases if cases is not None else _suite()
    per_level: dict[str, Counter[str]] = {level: Counter() for level in LEVELS}
    dtypes: dict[str, set[str]] = defaultdict(set)
    for case in suite:
        per_level[case.level].update(case.ops)
        if case.expect == "run":
            for op in case.ops:
                dtypes[op].update(case.dtypes)
    head = "| op | " + " | ".join(LEVELS) + " | element types (executing cases) |"
    rule = "|---|" + "---:|" * len(LEVELS) + "---|"
    rows = [head, rule]
    for name in sorted(OPS):
        cells = [str(per_level[level][name] or "") for level in LEVELS]
        types = ", ".join(sorted(dtypes[name], key=_dtype_order)) or "—"
        rows.append(f"| `{name}` | " + " | ".join(cells) + f" | {types} |")
    total: Counter[str] = Counter(case.level for case in suite)
    rows.append("| **cases** | " + " | ".join(f"**{total[level]}**" for level in LEVELS) + " | |")
    return "\n".join(rows) + "\n"


_ORDER = ["i1", "i8", "i16", "i32", "i64", "index", "f8E4M3FN", "f8E5M2", "f16", "bf16", "f32", "f64"]


def _dtype_order(name: str) -> int:
    return _ORDER.index(name) if name in _ORDER else len(_ORDER)
