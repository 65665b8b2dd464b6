"""What changed between two saved runs (`ktir conformance compare A.json B.json`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.results import CaseResult, Results, ok

# a status change counts as a regression when B is worse than A
_RANK = {"pass": 0, "not_supported": 1, "fail": 2, "timeout": 2, "error": 2}


@dataclass
class Comparison:
    header: list[str] = field(default_factory=list)  # suite / implementation / verdict lines that differ
    levels: list[str] = field(default_factory=list)  # "core: certified -> not certified"
    regressed: list[str] = field(default_factory=list)  # "id: pass -> fail (message)"
    fixed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # other status changes (fail -> error, ...)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    @property
    def worse(self) -> bool:
        return bool(self.regressed) or any("-> not certified" in line for line in self.levels)

    def lines(self) -> list[str]:
        out = list(self.header)
        out += [f"level {line}" for line in self.levels]
        for title, items in (("regressed", self.regressed), ("fixed", self.fixed), ("changed", self.changed),
                             ("only in A", self.only_a), ("only in B", self.only_b)):
            if items:
                out.append(f"{title} ({len(items)}):")
                out += [f"  {item}" for item in items]
        return out or ["no differences"]


def _state(c: CaseResult) -> str:
    return c.status + (" (waived)" if c.excused == "waiver" else " (left out)" if c.excused == "capability" else "")


def compare_runs(a: Results, b: Results) -> Comparison:
    out = Comparison()
    if a.suite != b.suite:
        out.header.append(f"suite: {a.suite.version} {a.suite.hash[:12]} -> {b.suite.version} {b.suite.hash[:12]}"
                          + (" (different cases or goldens)" if a.suite.hash != b.suite.hash else ""))
    if a.implementation != b.implementation:
        out.header.append(f"implementation: {a.implementation.name} {a.implementation.version} -> "
                          f"{b.implementation.name} {b.implementation.version}")
    if a.conformant != b.conformant:
        out.header.append(f"conformant: {a.conformant} -> {b.conformant}")
    va = {v.level: v for v in a.levels}
    for v in b.levels:
        before = va.get(v.level)
        if before is not None and before.verdict != v.verdict:
            out.levels.append(f"{v.level}: {before.verdict} -> {v.verdict}" + (f" ({v.why})" if v.why else ""))
    ca = {c.id: c for c in a.cases}
    cb = {c.id: c for c in b.cases}
    for cid, x in ca.items():
        y = cb.get(cid)
        if y is None:
            out.only_a.append(cid)
            continue
        if _state(x) == _state(y):
            continue
        line = f"{cid}: {_state(x)} -> {_state(y)}" + (f" ({y.message})" if y.message and y.status != "pass" else "")
        if not ok(y) and (ok(x) or _RANK[y.status] > _RANK[x.status]):
            out.regressed.append(line)
        elif not ok(x) and ok(y):
            out.fixed.append(line)
        else:
            out.changed.append(line)
    out.only_b = [cid for cid in cb if cid not in ca]
    return out
