"""Run a folder of programs nobody on this project wrote through `ktir validate` and `ktir run`.

For every `.ktir`/`.mlir` file under FOLDER (recursively) it reports:

- validate: `ok` or the first rule ID of `ktir validate`'s errors;
- run: `ktir run --random-inputs` (the inputs inferred by reference_interp/inputs.py):
  `ok` or the error's rule ID and first line;
- lenient: the same with `--lenient`, run only when the plain run failed;

then the counts. It is a measurement, not a test: the files (for example torch-spyre/ktir-cpu's
`examples/**`, fetched outside the repository) are never copied into it, and no result is
compared with an oracle here (tests/compat/ does that, with programs written for this project).
Each file runs in its own `python -m ktir.cli` process with a time limit.

    python benchmarks/upstream_corpus.py /tmp/ktircpu [--timeout 600] [--json OUT.json]
    python benchmarks/upstream_corpus.py /tmp/ktircpu --arg triton-ktir/layernorm_fwd_ktir.mlir=eps=1e-5

`--arg FILE=NAME=VALUE` passes `--arg NAME=VALUE` to the runs of FILE (a path relative to
FOLDER); `--memory FILE=NAME=ADDRESS:PATH.npy` likewise passes `--memory`, and
`--func FILE=NAME` names the function to run in a file with several (ktir-cpu's own
`examples/entries.py` names one for every kernel).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RULE = re.compile(r"error\[([\w.\-]+)\]: (.*)")


@dataclass
class Outcome:
    ok: bool
    rule: str = ""
    message: str = ""
    seconds: float = 0.0

    def cell(self) -> str:
        if self.ok:
            return f"ok ({self.seconds:.1f} s)"
        return f"{self.rule or 'fail'}: {self.message[:90]}"


@dataclass
class Row:
    file: str
    validate: Outcome
    run: Outcome
    lenient: Outcome | None = None
    extra: list[str] = field(default_factory=list)


def _ktir(args: list[str], timeout: float) -> Outcome:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "ktir.cli", *args], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return Outcome(False, "timeout", f"more than {timeout:.0f} s", time.perf_counter() - start)
    seconds = time.perf_counter() - start
    text = done.stderr + done.stdout
    first = _RULE.search(text)
    if done.returncode == 0:
        return Outcome(True, seconds=seconds)
    if first is not None:
        return Outcome(False, first.group(1), first.group(2).strip(), seconds)
    tail = [line for line in text.strip().splitlines() if line.strip()]
    return Outcome(False, "crash" if "Traceback" in text else "fail", tail[-1] if tail else "", seconds)


def measure(folder: Path, timeout: float, extra: dict[str, list[str]]) -> list[Row]:
    rows = []
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".ktir", ".mlir") and p.is_file())
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "out.npz")
        for path in files:
            rel = str(path.relative_to(folder))
            more = extra.get(rel, [])
            validate = _ktir(["validate", str(path)], timeout)
            run = _ktir(["run", "--random-inputs", "--out", out, *more, str(path)], timeout)
            lenient = None if run.ok else _ktir(["run", "--random-inputs", "--lenient", "--out", out, *more, str(path)],
                                                timeout)
            row = Row(rel, validate, run, lenient, more)
            rows.append(row)
            print(f"{rel}: validate {validate.cell()} | run {run.cell()}"
                  + (f" | lenient {lenient.cell()}" if lenient else ""), file=sys.stderr, flush=True)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| file | validate | run --random-inputs | with --lenient |", "|---|---|---|---|"]
    for r in rows:
        lenient = "" if r.lenient is None else r.lenient.cell()
        lines.append(f"| {r.file} | {r.validate.cell()} | {r.run.cell()} | {lenient} |")
    n = len(rows)
    valid = sum(r.validate.ok for r in rows)
    run = sum(r.run.ok for r in rows)
    lenient = sum(r.run.ok or (r.lenient is not None and r.lenient.ok) for r in rows)
    lines.append("")
    lines.append(f"{n} files: validate {valid}, run as shipped {run}, run with --lenient {lenient}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per ktir command (default 600)")
    p.add_argument("--json", type=Path, help="also write the rows as JSON here")
    p.add_argument("--arg", action="append", default=[], metavar="FILE=NAME=VALUE")
    p.add_argument("--memory", action="append", default=[], metavar="FILE=NAME=ADDRESS:PATH.npy")
    p.add_argument("--func", action="append", default=[], metavar="FILE=NAME")
    args = p.parse_args(argv)
    extra: dict[str, list[str]] = {}
    for flag, values in (("--arg", args.arg), ("--memory", args.memory), ("--func", args.func)):
        for v in values:
            file, _, rest = v.partition("=")
            if not rest:
                p.error(f"{flag} {v!r}: expected FILE=...")
            extra.setdefault(file, []).extend([flag, rest])
    rows = measure(args.folder, args.timeout, extra)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
