"""Start-up of each `ktir` subcommand as a whole process, against baselines in the same run.

Each command runs as a fresh `python -c "from ktir.cli import main; ..."` process (what the
`ktir` console script does, without a shell shim in front); the figure is the best of
`--repeat` runs, interleaved with the baselines `python -c pass` and `python -c "import
numpy"` so that machine load hits all alike; the child's CPU time is shown too (steadier
than wall-clock on a loaded machine). Compiled bytecode goes to a private cache
directory warmed by the first run, as an installed package has its .pyc files (even when
PYTHONDONTWRITEBYTECODE is set in this shell). The parse tables come from the user cache
(`ktir.syntax.lalr`), warmed the same way.

Run: `python benchmarks/bench_startup.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "vector_add.ktir")
CLI = "import sys; from ktir.cli import main; sys.exit(main())"

BASELINES = {
    "python -c pass": ["-c", "pass"],
    'python -c "import numpy"': ["-c", "import numpy"],
}
COMMANDS = {
    "ktir --version": ["--version"],
    "ktir validate vector_add.ktir": ["validate", "-q", EXAMPLE],
    "ktir fmt vector_add.ktir": ["fmt", EXAMPLE],
    "ktir run --help": ["run", "--help"],
    "ktir lower --help": ["lower", "--help"],
    "ktir targets list": ["targets", "list"],
    "ktir schedule --help": ["schedule", "--help"],
    "ktir conformance list": ["conformance", "list"],
    "ktir --help": ["--help"],
}


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) for one whole-process run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(args)}` failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", metavar="TEXT", help="only commands whose label contains TEXT")
    args = ap.parse_args()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="ktir-bench-pyc-")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    commands = {k: ["-c", CLI, *v] for k, v in COMMANDS.items() if not args.only or args.only in k}
    jobs = {**BASELINES, **commands}
    for argv in jobs.values():  # warm the bytecode and table caches
        run_once(argv, env)
    wall = {label: float("inf") for label in jobs}
    cpu = {label: float("inf") for label in jobs}
    for _ in range(args.repeat):
        for label, argv in jobs.items():
            w, c = run_once(argv, env)
            wall[label], cpu[label] = min(wall[label], w), min(cpu[label], c)
    base, numpy = wall["python -c pass"], wall['python -c "import numpy"']
    cpu_base, cpu_numpy = cpu["python -c pass"], cpu['python -c "import numpy"']
    print(f"best of {args.repeat} whole-process runs, interleaved ({sys.executable}); wall-clock, then CPU (user+sys)")
    print(f"{'command':32} {'wall s':>7} {'x pass':>7} {'x numpy':>7}  {'CPU s':>7} {'x pass':>7} {'x numpy':>7}")
    for label in jobs:
        w, c = wall[label], cpu[label]
        print(f"{label:32} {w:7.3f} {w / base:7.2f} {w / numpy:7.2f}  {c:7.3f} {c / cpu_base:7.2f} {c / cpu_numpy:7.2f}")


if __name__ == "__main__":
    main()
