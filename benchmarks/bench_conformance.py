"""The conformance suite's wall-clock time: in process, and through a subprocess adapter.

Runs the whole suite with the reference adapter in process (-j 1 and -j 2), then with -j 2
through `--adapter-cmd` speaking the persistent protocol (conformance/examples/ktir_serve.py,
the same interpreter behind a process boundary), and a sample through the per-case protocol
(one process per case). Prints seconds per level, the speed-up of -j 2 over -j 1, and the
ratios of the subprocess runs to the in-process -j 2 run measured in the same run (target:
the persistent full suite within 3x). Timings are wall-clock and noisy on a shared machine.

Run: `python benchmarks/bench_conformance.py [--quick]` (--quick skips the -j 1 run).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

from conformance.model import LEVELS, load_suite
from conformance.runner import AdapterSpec, run_suite

BUDGET_S = 600.0
SERVE = Path(__file__).resolve().parents[1] / "conformance" / "examples" / "ktir_serve.py"


def timed(spec: AdapterSpec, cases: list, jobs: int) -> tuple[float, object]:  # type: ignore[type-arg]
    t0 = time.perf_counter()
    results = run_suite(cases, spec, jobs=jobs, timeout=120)
    seconds = time.perf_counter() - t0
    assert results.passed, f"{spec.label}: every case must pass"
    return seconds, results


def main() -> None:
    quick = "--quick" in sys.argv
    cases = load_suite()
    times: dict[str, float] = {}
    for jobs in (() if quick else (1,)) + (2,):
        times[f"in-process -j {jobs}"], results = timed(AdapterSpec(), cases, jobs)
        if jobs == 1 or quick:
            per_level: dict[str, float] = defaultdict(float)
            for c in results.cases:  # type: ignore[attr-defined]
                per_level[c.level] += c.duration_s
            for level in LEVELS:
                print(f"  {level:<11} {per_level[level]:7.2f} s (summed case time)")
    persistent = AdapterSpec(command=f"{sys.executable} {SERVE}", protocol="persistent")
    times["--adapter-cmd persistent -j 2"], _ = timed(persistent, cases, 2)
    sample = cases[::40]
    per_case = AdapterSpec(command=f"{sys.executable} {Path(__file__).resolve().parents[1] / 'tests' / 'conformance' / 'conformance_external_impl.py'} {{ktir}} {{inputs}} {{outputs}}")
    t_sample, _ = timed(per_case, sample, 2)
    base = times["in-process -j 2"]
    print(f"{len(cases)} cases:")
    for name, seconds in times.items():
        print(f"  {name:<32} {seconds:7.1f} s   {seconds / base:5.2f}x the in-process -j 2 time")
    estimate = t_sample / len(sample) * len(cases)
    print(f"  {'--adapter-cmd per-case -j 2':<32} {estimate:7.1f} s   {estimate / base:5.2f}x (estimated from "
          f"{len(sample)} cases in {t_sample:.1f} s)")
    if "in-process -j 1" in times:
        print(f"speed-up of -j 2 over -j 1: {times['in-process -j 1'] / base:.2f}x")
    print(f"-j 2 in process uses {base / BUDGET_S:.1%} of the 10-minute budget")


if __name__ == "__main__":
    main()
