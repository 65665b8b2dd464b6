"""Lockstep against the per-tile run on scheduled random kernels, bit for bit.

The interpreter's lockstep mode (reference_interp/lockstep.py) promises exactly the per-tile
run's results: outputs byte for byte, statistics, the same error. Its own tests draw kernels
written for it; this campaign draws kernels nobody wrote for it: `benchmarks/kernelgen`'s
random natural-form kernels, scheduled onto the Spyre grid by `exact` (tile-id-dependent
boxes, reductions split over tiles, row loops), each run with `lockstep="always"` and with
`lockstep=False` on the same inputs, then both again on the same module with the inputs
shuffled (lockstep remembers plans between runs of one program; they must not answer for
other inputs).

    python benchmarks/lockstep_campaign.py --seed 7700000 --kernels 3000
    python benchmarks/lockstep_campaign.py --seed 5 --kernels 200 --schedulers exact search

It prints a line per mismatch (seed, kind, what differs) and a summary: kernels, applied
schedules, runs that stayed in lockstep (the rest gave up, which is allowed, and ran per
tile), mismatches. Exit status 1 when anything differs. Its first run (seeds 7,700,000 +
3,000) found float reductions over a middle dimension summed in another order in lockstep
(fixed: ops/linalg._c_order).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernelgen  # noqa: E402

import ktir  # noqa: E402
import reference_interp as ri  # noqa: E402
import schedulers  # noqa: E402
from ktir.progress import working  # noqa: E402
from ktir.targets import load_target  # noqa: E402


def outcome(module: ktir.Module, args: dict[str, np.ndarray], lockstep: bool | str) -> ri.RunResult | tuple[str, str]:
    try:
        return ri.run(module, None, {k: v.copy() for k, v in args.items()}, lockstep=lockstep)
    except ri.KtirRuntimeError as e:
        return e.kind, str(e)


def shuffled(args: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each array's elements in another order (an index array keeps its values, so stays in range)."""
    return {k: rng.permutation(v.reshape(-1)).reshape(v.shape) if isinstance(v, np.ndarray) and v.size > 1 else v
            for k, v in args.items()}


def difference(tiled: ri.RunResult | tuple[str, str], locked: ri.RunResult | tuple[str, str]) -> str | None:
    """What differs between the per-tile and the lockstep outcome, or None."""
    if isinstance(tiled, tuple) or isinstance(locked, tuple):
        if tiled == locked:
            return None
        return f"per tile: {tiled[0] if isinstance(tiled, tuple) else 'ran'}; lockstep: {locked[0] if isinstance(locked, tuple) else 'ran'}"
    for name in tiled.outputs:
        x, y = np.asarray(tiled.outputs[name]), np.asarray(locked.outputs[name])
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"output {name} differs"
    if tiled.stats != locked.stats:
        return "statistics differ"
    return None


def campaign(seed: int, kernels: int, names: list[str], budget: float, log_every: int = 0) -> dict[str, Any]:
    target = load_target("spyre")
    tally = {"kernels": 0, "scheduled": 0, "lockstep": 0, "mismatches": 0}
    with working("lockstep vs per tile", total=kernels) as step:
        for s in range(seed, seed + kernels):
            kernel = kernelgen.random_kernel(s)
            tally["kernels"] += 1
            if log_every and tally["kernels"] % log_every == 0:
                print(f"{tally['kernels']} kernels: {tally}", flush=True)
            step(description=f"seed {s} ({kernel.kind})", advance=1)
            for name in names:
                module = ktir.parse(kernel.text(), f"{kernel.kind}-{s}.ktir")
                try:
                    result = schedulers.schedule(module, target, name, schedulers.ScheduleOptions(
                        time_budget=budget, seed=s, sizes=kernel.sizes))
                except schedulers.ScheduleError:
                    continue
                if not result.report.applied:
                    continue
                tally["scheduled"] += 1
                args = kernel.args()
                # then the same module again on shuffled inputs (the same values elsewhere: indices
                # stay in range): lockstep's memos, made by the first run, must not answer for it
                for round_, inputs in enumerate((args, shuffled(args, np.random.default_rng(s)))):
                    tiled = outcome(result.module, inputs, False)
                    locked = outcome(result.module, inputs, "always")
                    if round_ == 0 and isinstance(locked, ri.RunResult) and locked.lockstep:
                        tally["lockstep"] += 1
                    why = difference(tiled, locked)
                    if why is not None:
                        tally["mismatches"] += 1
                        print(f"MISMATCH seed {s} ({kernel.kind}, {name}, {'shuffled ' if round_ else ''}inputs): {why}",
                              flush=True)
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0, help="first kernelgen seed")
    ap.add_argument("--kernels", type=int, default=200, help="how many kernels (seeds seed .. seed + N - 1)")
    ap.add_argument("--schedulers", nargs="+", default=["exact"], help="schedulers to apply (default exact)")
    ap.add_argument("--budget", type=float, default=2.0, help="each scheduler's time budget in seconds")
    ap.add_argument("--log-every", type=int, default=0, help="print the counts every N kernels (for logs)")
    a = ap.parse_args(argv)
    start = time.perf_counter()
    t = campaign(a.seed, a.kernels, a.schedulers, a.budget, a.log_every)
    print(f"{t['kernels']} kernels (seeds {a.seed}..{a.seed + a.kernels - 1}), {t['scheduled']} applied schedules, "
          f"{t['lockstep']} ran in lockstep (the rest gave up and ran per tile), {t['mismatches']} mismatches; "
          f"{time.perf_counter() - start:.0f} s")
    return 1 if t["mismatches"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
