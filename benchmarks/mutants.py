"""Mutation testing of the conformance suite: how many realistic implementation bugs does it catch?

Each mutant is one bug an implementer could plausibly make, injected into the reference
interpreter (benchmarks/mutants_interp.py) or the reference verifier
(benchmarks/mutants_verifier.py) by monkeypatching; no file is edited. The harness runs the
cases that can see the mutated code against it, one mutant at a time, and reports the cases
that kill it (any status but `pass`): the executing cases for an interpreter mutant, the
`syntax` and `validation` cases for a verifier mutant. Cases the unmutated implementation
already fails (possible with `--suite`, another revision's cases) count as no kill.

    python benchmarks/mutants.py                  # every mutant, -j 2; a line per mutant, kill rates per group
    python benchmarks/mutants.py -m divui-signed  # one mutant (repeatable)
    python benchmarks/mutants.py --group verifier # one group
    python benchmarks/mutants.py --markdown       # the tables for docs/guides/conformance.md

The list is in docs/guides/conformance.md#mutation-testing, every survivor with its reason
(SURVIVORS below).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # this checkout's packages, and the catalogues next to this file

import mutants_interp  # noqa: E402
import mutants_verifier  # noqa: E402
from mutants_patch import Mutant  # noqa: E402

# Survivors: why no case kills them. Each is "equivalent": no valid program can tell it from
# the reference, by the spec (a mutant no case kills that is not equivalent is a coverage hole,
# and tests/mutation/test_mutants.py fails until a case kills it).
SURVIVORS: dict[str, str] = {
    "holes-read-as-one": "equivalent: a load's elements at holes are unspecified (spec/memory.md), so 1 there conforms",
}


def catalogue() -> list[Mutant]:
    return mutants_interp.catalogue() + mutants_verifier.catalogue()


def _cases(mutant: Mutant, pattern: str | None, root: Path) -> list:  # type: ignore[type-arg]
    from conformance.model import load_suite
    from conformance.runner import select

    return [c for c in select(load_suite(root), None, pattern) if mutant.reaches(c.ops, c.level, c.expect)]


def baseline(pattern: str | None = None, root: str | None = None) -> set[str]:
    """Ids of the cases the unmutated implementation does not pass."""
    from conformance.adapters import ReferenceAdapter
    from conformance.model import SUITE_ROOT, load_suite
    from conformance.runner import run_case, select

    suite = Path(root) if root else SUITE_ROOT
    adapter = ReferenceAdapter()
    return {c.id for c in select(load_suite(suite), None, pattern) if run_case(c, adapter, suite, 60).status != "pass"}


def run_mutant(name: str, pattern: str | None = None, root: str | None = None,
               ignore: frozenset[str] = frozenset()) -> tuple[str, list[tuple[str, str, str]], int, float]:
    """(name, (id, status, message) of the cases that kill it, cases run, seconds) for one
    mutant, in this process; `root` is another suite's root (an older revision, to compare)."""
    from conformance.adapters import ReferenceAdapter
    from conformance.model import SUITE_ROOT
    from conformance.runner import run_case

    suite = Path(root) if root else SUITE_ROOT
    mutant = next(m for m in catalogue() if m.name == name)
    cases = [c for c in _cases(mutant, pattern, suite) if c.id not in ignore]
    adapter = ReferenceAdapter()
    t0 = time.perf_counter()
    killers = []
    with mutant.patch():
        for c in cases:
            r = run_case(c, adapter, suite, 60)
            if r.status != "pass":
                killers.append((c.id, r.status, r.message))
    return name, killers, len(cases), time.perf_counter() - t0


def run_all(names: list[str], jobs: int = 2, pattern: str | None = None, root: str | None = None,
            ignore: frozenset[str] = frozenset()) -> dict[str, list[tuple[str, str, str]]]:
    if jobs <= 1:
        return {n: run_mutant(n, pattern, root, ignore)[1] for n in names}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        runs = pool.map(run_mutant, names, [pattern] * len(names), [root] * len(names), [ignore] * len(names))
        return {n: k for n, k, _, _ in runs}


def rates(results: dict[str, list[tuple[str, str, str]]]) -> list[tuple[str, int, int]]:
    """(group, killed, mutants) per group, then per kind ("interpreter", "verifier") and "all"."""
    by_name = {m.name: m for m in catalogue()}
    groups: dict[str, list[bool]] = defaultdict(list)
    for name, killers in results.items():
        m = by_name[name]
        groups[m.group].append(bool(killers))
        groups[f"[{m.kind}]"].append(bool(killers))
        groups["[all]"].append(bool(killers))
    return [(g, sum(v), len(v)) for g, v in sorted(groups.items(), key=lambda kv: (kv[0].startswith("["), kv[0]))]


def markdown(results: dict[str, list[tuple[str, str, str]]]) -> str:
    by_name = {m.name: m for m in catalogue()}
    rows = ["| group | killed | mutants | rate |", "|---|---:|---:|---:|"]
    rows += [f"| {g} | {k} | {n} | {k / n:.0%} |" for g, k, n in rates(results)]
    rows += ["", "| mutant | group | the bug | killed by | e.g. |", "|---|---|---|---:|---|"]
    for name, killers in results.items():
        m = by_name[name]
        ids = sorted((k[0] for k in killers), key=len)
        example = ", ".join(f"`{k}`" for k in ids[:2]) or f"**survives** ({SURVIVORS.get(name, 'not yet explained')})"
        rows.append(f"| `{name}` | {m.group} | {m.bug} | {len(killers)} | {example} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--mutant", action="append", help="run only this mutant (repeatable)")
    parser.add_argument("--group", action="append", help="run only the mutants of this group (repeatable)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("-k", dest="pattern", help="only cases whose id contains PATTERN")
    parser.add_argument("--markdown", action="store_true", help="print the guide's tables")
    parser.add_argument("--suite", help="another suite root (e.g. an older revision's conformance/), to compare")
    parser.add_argument("--json", help="also write the killing cases of each mutant to this file")
    args = parser.parse_args(argv)
    every = catalogue()
    names = args.mutant or [m.name for m in every if not args.group or m.group in args.group]
    unknown = set(names) - {m.name for m in every}
    if unknown:
        print(f"unknown mutant(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    failing = frozenset(baseline(args.pattern, args.suite))
    if failing:
        print(f"{len(failing)} cases fail without any mutant and are not counted: {', '.join(sorted(failing)[:5])} ...")
    results = run_all(names, args.jobs, args.pattern, args.suite, failing)
    seconds = time.perf_counter() - t0
    if args.json:
        import json

        from ktir.fileio import write_atomic

        write_atomic(Path(args.json), (json.dumps(results, indent=1) + "\n").encode())
    if args.markdown:
        print(markdown(results))
    else:
        for name, killers in results.items():
            ids = sorted((k[0] for k in killers), key=len)
            shown = ", ".join(ids[:3]) + (" ..." if len(ids) > 3 else "")
            crashes = [k for k in killers if k[1] == "error"]
            note = f"  [{len(crashes)} by error: {crashes[0][2][:80]}]" if crashes and len(crashes) == len(killers) else ""
            print(f"{'killed ' if killers else 'SURVIVES'} {name:<36} {len(killers):4d} cases  {shown}{note}")
            if not killers and name in SURVIVORS:
                print(f"         {SURVIVORS[name]}")
        for group, killed, total in rates(results):
            print(f"{group:<16} {killed:3d} of {total:3d} killed ({killed / total:.1%})")
    print(f"{sum(1 for k in results.values() if k)} of {len(results)} mutants killed in {seconds:.0f} s with -j {args.jobs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
