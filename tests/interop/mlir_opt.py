"""Run stock `mlir-opt` on many KTIR programs at once (one process per batch, `--split-input-file`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

SPLIT = "// -----"
BINARIES = ("mlir-opt-22", "mlir-opt")
_MARKER = re.compile(r"//(\s*)-----")
_LOCATION = re.compile(r"^(?:<stdin>|[^:\n]*):(\d+):(\d+): error: (.*)$", re.M)


def find_mlir_opt() -> str | None:
    """The MLIR 22 `mlir-opt`, if installed (Debian's mlir-22-tools names it mlir-opt-22)."""
    for name in BINARIES:
        path = shutil.which(name)
        if path is not None and (name.endswith("-22") or "version 22." in _version(path)):
            return path
    return None


def _version(path: str) -> str:
    return subprocess.run([path, "--version"], capture_output=True, text=True, check=False).stdout


@dataclass
class Outcome:
    output: str | None  # MLIR's print of the program, or None if MLIR rejected it
    error: str | None  # MLIR's first diagnostic for a rejected program


def run_batch(binary: str, programs: list[str], extra: tuple[str, ...] = ()) -> list[Outcome]:
    """`mlir-opt --allow-unregistered-dialect --verify-each` on every program, in one call when
    all pass; a failing program is located by its diagnostic's line and the rest re-run."""
    # MLIR splits at `// -----` anywhere in a line, even inside a comment
    programs = [_MARKER.sub(r"//\1(-----)", text) for text in programs]
    outcomes: dict[int, Outcome] = {}
    pending = list(range(len(programs)))
    while pending:
        chunks = [programs[i] for i in pending]
        joined = f"\n{SPLIT}\n".join(chunks)
        proc = subprocess.run(
            [binary, "--allow-unregistered-dialect", "--verify-each", "--split-input-file", *extra, "-"],
            input=joined, capture_output=True, text=True, check=False,
        )
        if proc.returncode == 0:
            outputs = proc.stdout.split(f"{SPLIT}\n")
            assert len(outputs) == len(pending), f"{len(outputs)} outputs for {len(pending)} programs"
            for i, out in zip(pending, outputs, strict=True):
                outcomes[i] = Outcome(out, None)
            break
        starts = []
        line = 1
        for text in chunks:
            starts.append(line)
            line += text.count("\n") + 2  # the joining newline and the marker line
        failed: dict[int, str] = {}
        for m in _LOCATION.finditer(proc.stderr):
            at_line = int(m.group(1))
            if at_line < 1:
                continue  # `<unknown>:0`: a note on an op, not the error's location
            k = max(j for j, s in enumerate(starts) if s <= at_line)
            failed.setdefault(pending[k], f"{at_line - starts[k] + 1}:{m.group(2)}: {m.group(3)}")
        if not failed:
            raise RuntimeError(f"mlir-opt failed without a located error:\n{proc.stderr[:2000]}")
        for i, message in failed.items():
            outcomes[i] = Outcome(None, message)
        pending = [i for i in pending if i not in failed]
    return [outcomes[i] for i in range(len(programs))]
