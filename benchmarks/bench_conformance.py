"""The conformance suite's wall-clock time with the reference adapter.

Runs the whole suite with -j 1 and -j 2 and prints seconds per level and in total, the
speed-up of -j 2 over -j 1 (the baseline measured in the same run), and the fraction of
the 10-minute budget (issue 6: the full suite under 10 minutes on 2 cores with -j 2) used.
Run: `python benchmarks/bench_conformance.py`.
"""

from __future__ import annotations

import time
from collections import defaultdict

from conformance.model import LEVELS, load_suite
from conformance.runner import AdapterSpec, run_suite

BUDGET_S = 600.0


def main() -> None:
    cases = load_suite()
    times: dict[int, float] = {}
    for jobs in (1, 2):
        t0 = time.perf_counter()
        results = run_suite(cases, AdapterSpec(), jobs=jobs, timeout=60)
        times[jobs] = time.perf_counter() - t0
        assert results.conformant, "the reference adapter must pass every case"
        if jobs == 1:
            per_level: dict[str, float] = defaultdict(float)
            for c in results.cases:
                per_level[c.level] += c.duration_s
            for level in LEVELS:
                print(f"  {level:<11} {per_level[level]:7.2f} s (-j 1, summed case time)")
    print(f"{len(cases)} cases: -j 1 {times[1]:.1f} s, -j 2 {times[2]:.1f} s")
    print(f"speed-up of -j 2 over -j 1: {times[1] / times[2]:.2f}x")
    print(f"-j 2 uses {times[2] / BUDGET_S:.1%} of the 10-minute budget")


if __name__ == "__main__":
    main()
