"""MLIR-style expectations in test files.

A file holds cases separated by lines `// -----`. Inside a case, a comment

    // expected-error@+1 {{[ktdp.load.C1] result shape}}

says the verifier reports, on the line one below (`@+N`, `@-N`, or the same line without
`@`), a diagnostic of that severity whose ID is `ktdp.load.C1` and whose message contains
`result shape`. `expected-warning` and `expected-note` work the same way. Every error and
warning the verifier reports must be expected, and every expectation must be met; notes
are only checked when expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ktir.verify import validate_text

_SPLIT = re.compile(r"^// -----\s*$", re.M)
_EXPECT = re.compile(r"//\s*expected-(error|warning|note)(?:@([+-]\d+))?\s*\{\{\[([^\]]+)\]\s*(.*?)\}\}")


@dataclass(frozen=True)
class Expectation:
    severity: str
    line: int
    id: str
    fragment: str


@dataclass
class Case:
    path: Path
    start_line: int  # 1-based line where the case begins
    text: str  # the whole file with other cases blanked, so line numbers are absolute

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.start_line}"


def cases(path: Path) -> list[Case]:
    source = path.read_text()
    lines = source.split("\n")
    bounds = [0] + [i + 1 for i, line in enumerate(lines) if _SPLIT.match(line)] + [len(lines) + 1]
    out = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        kept = [line if start <= i < end - 1 else "" for i, line in enumerate(lines)]
        if any(line.strip() and not line.strip().startswith("//") for line in kept):
            out.append(Case(path, start + 1, "\n".join(kept)))
    return out


def expectations(case: Case) -> list[Expectation]:
    found = []
    for number, line in enumerate(case.text.split("\n"), start=1):
        for m in _EXPECT.finditer(line):
            offset = int(m.group(2)) if m.group(2) else 0
            found.append(Expectation(m.group(1), number + offset, m.group(3), m.group(4)))
    return found


def check_case(case: Case) -> list[str]:
    """Problems with this case, as readable strings (empty when it passes)."""
    _, diagnostics = validate_text(case.text, str(case.path))
    expected = expectations(case)
    problems: list[str] = []
    unmatched = list(expected)
    for d in diagnostics:
        match = next(
            (e for e in unmatched if e.severity == d.severity and e.line == d.line and e.id == d.id and e.fragment in d.message),
            None,
        )
        if match is not None:
            unmatched.remove(match)
        elif d.severity in ("error", "warning") and d.id != "legacy":
            problems.append(f"unexpected {d.severity}[{d.id}] at line {d.line}: {d.message}")
    for e in unmatched:
        near = [f"{d.severity}[{d.id}]@{d.line}: {d.message}" for d in diagnostics]
        problems.append(f"expected {e.severity}[{e.id}] at line {e.line} containing {e.fragment!r}; got {near}")
    return problems


def all_cases(directory: Path) -> list[Case]:
    return [c for p in sorted(directory.glob("*.ktir")) for c in cases(p)]
