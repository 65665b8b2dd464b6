"""The `validation` level: one violation per case, judged by rule ID and line.

The cases come from the repository's negative tests, tests/verify/invalid/*.ktir, whose
`// -----` blocks often hold several violations (`// expected-error@+N {{[ID] ...}}` marks,
written by the test's author). `conformance.gen.split` cuts each block into one program per
error mark, deleting the other marked ops and what depends on them. Each program is then
checked independently: the reference verifier must report exactly one error, with the mark's
ID, at the mark's line, with a message containing the mark's text. A program that fails that
check stops the regeneration (a splitter or a verifier bug), it is never stored.

Case IDs are `validation.<file>.<function>.<rule ID>.<h>`, where `h` is a short hash of the
violating op's own text: no line numbers, so inserting a case anywhere renames nothing else.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conformance.gen.draft import Draft, DraftError
from conformance.gen.split import Block, Mark, Split, blocks, extent, split

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "verify" / "invalid"


class SplitMismatch(DraftError):
    """A split program on which the reference verifier does not report exactly its one error."""


@dataclass(frozen=True)
class Unsplit:
    """An error mark that no program can hold alone, and why."""

    source: str  # file:line of the marked op
    id: str
    reason: str


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")


def op_key(block: Block, mark: Mark) -> str:
    """Six hex digits of the violating op's text (comments and spacing dropped): stable while
    that op is unchanged, whatever else its file gains or loses."""
    span = block.lines[mark.target:extent(block.lines, mark.target) + 1]
    code = " ".join(" ".join(line.split("//", 1)[0].split()) for line in span).strip()
    return hashlib.sha1(code.encode()).hexdigest()[:6]


def _marks(path: Path) -> Iterator[tuple[Block, Mark]]:
    for block in blocks(path.read_text(encoding="utf-8")):
        for mark in block.marks():
            if mark.severity == "error":
                yield block, mark


def splits(directory: Path = INVALID) -> Iterator[tuple[Path, Block, Mark, Split | str]]:
    """Every error mark of every negative test with its single-violation program (or why none)."""
    for path in sorted(directory.glob("*.ktir")):
        for block, mark in _marks(path):
            yield path, block, mark, split(block, mark)


def unsplit(directory: Path = INVALID) -> list[Unsplit]:
    """The marks left out of the level: each shares its op with another violation."""
    return [Unsplit(f"{p.name}:{b.start + m.target}", m.id, r) for p, b, m, r in splits(directory) if isinstance(r, str)]


def check(text: str, rule: str, line: int, fragment: str, name: str) -> int:
    """The column at which the reference verifier reports the program's one error; raises
    SplitMismatch unless that is exactly one error, `rule` at `line`, its message holding
    `fragment`."""
    from ktir.verify import validate_text

    _, diagnostics = validate_text(text, name)
    errors = [d for d in diagnostics if d.severity == "error"]
    if len(errors) != 1 or errors[0].id != rule or errors[0].line != line or fragment not in errors[0].message:
        found = "; ".join(f"{d.line}:{d.column} error[{d.id}] {d.message}" for d in errors) or "no error"
        raise SplitMismatch(f"{name}: expected only error[{rule}] at line {line} ({fragment!r}); the reference reports {found}")
    return errors[0].column


def validation_cases(directory: Path = INVALID) -> Iterator[Draft]:
    seen: set[str] = set()
    for path, block, mark, result in splits(directory):
        if isinstance(result, str):
            continue
        where = f"{path.name}:{block.start + mark.target}"
        function = result.function or "module"
        case_id = f"validation.{_slug(path.stem)}.{_slug(function)}.{mark.id}.{op_key(block, mark)}"
        if case_id in seen:
            raise SplitMismatch(f"{where}: two marks give the case id {case_id} (the same op text twice in @{function})")
        seen.add(case_id)
        line = result.line + 1
        text = (f"// The one violation of this program: [{mark.id}] at line {line}. "
                f"Cut from tests/verify/invalid/{path.name} (@{function}).\n") + result.text
        column = check(text, mark.id, line, mark.fragment, case_id)
        yield Draft(id=case_id, level="validation", text=text, expect="reject", diagnostic=mark.id, line=line,
                    column=column, file_key=f"invalid/{_slug(path.stem)}/{case_id.split('.', 2)[2]}", description=f"rejected with error[{mark.id}] at line {line}, and no other error")
