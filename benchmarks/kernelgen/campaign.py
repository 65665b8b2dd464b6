"""Scheduling generated kernels with every scheduler and judging each outcome.

`try_schedulers` is the check of `bench_schedule.py --random` and of
`tests/schedulers/test_random_kernels.py`: the kernel goes through its printed text (what a
user hands to `ktir schedule`), each scheduler schedules it with the public API, and every
applied schedule is run in the interpreter on the kernel's inputs and compared with the
unscheduled kernel's outputs (`verdict.judge`).
"""

from __future__ import annotations

import math
import re
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ktir.ir.operation import Module

from .ir import Generated
from .verdict import judge

STATUSES = ("applied", "declined", "wrong", "racy", "error")


@dataclass(frozen=True)
class Outcome:
    scheduler: str
    status: str  # applied (and right), declined, wrong, racy, error (the scheduler raised)
    reason: str = ""  # why it declined, or what is wrong
    divided: bool = False  # applied with a grid of more than one tile
    seconds: float = 0.0  # wall-clock time of scheduling
    scheduled: str | None = None  # the scheduled module's text, when applied
    cpu_seconds: float = 0.0  # CPU time of scheduling (what it costs on an unloaded core)


def grid_size(module: Module) -> int:
    """Tiles of the (first) function's grid."""
    for op in module.operations:
        if op.name == "func.func":
            grid = op.attributes.get("grid")
            return math.prod(int(getattr(e, "value", 1)) for e in getattr(grid, "elements", ()))
    return 1


def try_schedulers(kernel: Generated, target: Any, names: Sequence[str], budget: float,
                   reference: dict[str, np.ndarray]) -> list[Outcome]:
    """Schedule `kernel` with each named scheduler and judge the result against `reference`."""
    import ktir
    import schedulers
    from ktir.syntax.printer import print_module

    text = kernel.text()
    out = []
    for name in names:
        module = ktir.parse(text, f"{kernel.kind}-{kernel.seed}.ktir")
        options = schedulers.ScheduleOptions(time_budget=budget, seed=kernel.seed or 0, sizes=kernel.sizes)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            result = schedulers.schedule(module, target, name, options)
        except schedulers.ScheduleError as e:
            out.append(Outcome(name, "declined", f"error: {e}", seconds=time.perf_counter() - start,
                               cpu_seconds=time.process_time() - cpu))
            continue
        except Exception as e:  # noqa: BLE001 - a crash is a finding, recorded with where it happened
            where = traceback.extract_tb(e.__traceback__)[-1]
            out.append(Outcome(name, "error", f"{type(e).__name__}: {e} ({Path(where.filename).name}:{where.lineno})",
                               seconds=time.perf_counter() - start, cpu_seconds=time.process_time() - cpu))
            continue
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        if not result.report.applied:
            out.append(Outcome(name, "declined", result.report.reason or "(no reason given)", seconds=seconds,
                               cpu_seconds=cpu_seconds))
            continue
        scheduled = print_module(result.module)
        verdict = judge(kernel, result.module, reference)
        status = "applied" if verdict.status == "ok" else verdict.status
        out.append(Outcome(name, status, verdict.message, grid_size(result.module) > 1, seconds, scheduled, cpu_seconds))
    return out


def reason_key(reason: str) -> str:
    """A decline reason with its particulars (numbers, SSA names, lines, shapes) blanked, for grouping."""
    key = re.sub(r"%[\w.$-]+", "%v", reason)
    key = re.sub(r"@[\w.$-]+", "@f", key)
    key = re.sub(r"\d+(x\d+)*(x[a-z]+\d*)?", "N", key)
    key = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", key)
    return key[:110]


@dataclass
class Tally:
    """Counts of one scheduler over a campaign."""

    counts: Counter[str] = field(default_factory=Counter)
    divisible: int = 0  # kernels with a parallel dimension >= 64
    divided: int = 0  # of those, applied over more than one tile
    declines: Counter[str] = field(default_factory=Counter)
    example: dict[str, str] = field(default_factory=dict)  # reason key -> one full reason
    seconds: list[float] = field(default_factory=list)  # wall-clock per kernel
    cpu_seconds: list[float] = field(default_factory=list)
    slowest: tuple[float, int | None, str] = (0.0, None, "")  # CPU seconds, seed and kind of the slowest kernel
    # of the kernels with a parallel dim >= 64, per kind: divided, one tile (applied on a grid of 1),
    # declined, or wrong/racy/error
    by_kind: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, kernel: Generated, o: Outcome) -> None:
        self.counts[o.status] += 1
        self.seconds.append(o.seconds)
        self.cpu_seconds.append(o.cpu_seconds)
        self.slowest = max(self.slowest, (o.cpu_seconds, kernel.seed, kernel.kind), key=lambda x: x[0])
        if kernel.divisible:
            self.divisible += 1
            self.divided += int(o.status == "applied" and o.divided)
            what = ("divided" if o.divided else "one tile") if o.status == "applied" else o.status
            self.by_kind[kernel.kind, what if what in ("divided", "one tile", "declined") else "failed"] += 1
        if o.status == "declined":
            key = reason_key(o.reason)
            self.declines[key] += 1
            self.example.setdefault(key, f"{o.reason} [{kernel.kind}, seed {kernel.seed}]")


def save_failure(folder: Path, kernel: Generated, o: Outcome, command: str) -> Path:
    """Write the kernel (text, seed, how to reproduce) and the scheduled module of a wrong, racy or
    crashing outcome to `folder`; returns the kernel's file."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{o.scheduler}-{o.status}-{kernel.kind}-seed{kernel.seed}"
    header = [f"// {o.status} with scheduler {o.scheduler}: {o.reason}",
              f"// generated kernel: kind {kernel.kind}, seed {kernel.seed} (benchmarks/kernelgen: random_kernel({kernel.seed}))",
              f"// reproduce: {command.replace('{scheduler}', o.scheduler)}", ""]
    path = folder / f"{stem}.ktir"
    path.write_text("\n".join(header) + kernel.text())
    if o.scheduled is not None:
        (folder / f"{stem}.scheduled.ktir").write_text(f"// {o.scheduler}'s schedule of {path.name}\n" + o.scheduled)
    return path


@dataclass
class Campaign:
    """The result of scheduling many generated kernels with several schedulers."""

    names: list[str]
    tallies: dict[str, Tally]
    kinds: Counter[str] = field(default_factory=Counter)
    features: Counter[str] = field(default_factory=Counter)
    divisible: Counter[str] = field(default_factory=Counter)  # kind -> kernels with a parallel dim >= 64
    generator_mismatches: list[str] = field(default_factory=list)
    saved: list[Path] = field(default_factory=list)

    def add_kernel(self, kernel: Generated) -> None:
        self.kinds[kernel.kind] += 1
        self.divisible[kernel.kind] += int(kernel.divisible)
        self.features.update(f"{kernel.kind}: {f}" for f in kernel.features)


def run_campaign(seeds: Sequence[int], target: Any, names: Sequence[str], budget: float, save: Path | None,
                 command: str, step: Any = None, kinds: Sequence[str] | None = None) -> Campaign:
    """Generate the kernel of each seed, check it against its oracle, schedule it with every
    scheduler and judge each result; wrong, racy and crashing outcomes are saved to `save`.
    `step(seed, kernel)` is called before each kernel (progress); `kinds` narrows the kinds (in turn)."""
    from . import random_kernel
    from .verdict import GeneratorMismatch, check_generator

    c = Campaign(list(names), {n: Tally() for n in names})
    for seed in seeds:
        kernel = random_kernel(seed, kinds) if kinds else random_kernel(seed)
        if step is not None:
            step(seed, kernel)
        c.add_kernel(kernel)
        try:
            reference = check_generator(kernel)
        except GeneratorMismatch as e:
            c.generator_mismatches.append(str(e))
            continue
        for o in try_schedulers(kernel, target, names, budget, reference):
            c.tallies[o.scheduler].add(kernel, o)
            if o.status in ("wrong", "racy", "error") and save is not None:
                c.saved.append(save_failure(save, kernel, o, command.replace("SEED", str(seed))))
    return c
