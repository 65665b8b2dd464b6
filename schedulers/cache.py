"""A cache of schedules per (kernel, target, scheduler, options, scheduler code).

A second `schedulers.schedule` of the same kernel returns the stored module and report
instead of searching again. The cache lives in the user's cache directory
(`$XDG_CACHE_HOME/ktir/schedules`, else `~/.cache/ktir/schedules`); `KTIR_SCHEDULE_CACHE`
names another directory, or turns the cache off with `off`.

A stale or damaged entry must never give a wrong answer, so:

- the key hashes the kernel's printed text, the target description, the scheduler's name,
  every option that changes the result, and the source of the scheduler code itself (any
  edit to `schedulers/` or `ktir/targets/` invalidates every entry);
- an entry stores its key and a digest of its content, and is used only when both match,
  its module parses and its report validates; anything else is ignored and replaced;
- only the built-in schedulers are cached (a plugin's code is not part of the key).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path

from ktir.fileio import write_atomic
from ktir.ir.operation import Module
from ktir.targets.schema import Target

from .api import ScheduleOptions, ScheduleResult
from .report import ScheduleReport

ENV = "KTIR_SCHEDULE_CACHE"
FORMAT = 1


def cache_dir() -> Path | None:
    """Where entries go; None when the cache is turned off."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "no") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ktir" / "schedules"


@cache
def code_version() -> str:
    """A digest of the scheduler and target-model sources: a new version never reads old entries."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for folder in (here, here.parent / "ktir" / "targets"):
        for path in sorted(folder.glob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def key(module: Module, target: Target, scheduler: str, options: ScheduleOptions) -> str:
    from ktir.syntax.printer import print_module

    parts = {
        "format": FORMAT, "code": code_version(), "scheduler": scheduler, "kernel": print_module(module),
        "target": target.model_dump_json(), "sizes": sorted((k.lstrip("%"), int(v)) for k, v in options.sizes.items()),
        "func": options.func, "seed": options.seed, "budget": options.time_budget,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _digest(module_text: str, report_json: str) -> str:
    return hashlib.sha256(module_text.encode() + b"\0" + report_json.encode()).hexdigest()


def load(k: str) -> ScheduleResult | None:
    """The entry for key `k`, or None (absent, damaged, or written for another key)."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"{k}.json"
    try:
        entry = json.loads(path.read_text())
        text, report_json = entry["module"], entry["report"]
        if entry.get("key") != k or entry.get("digest") != _digest(text, report_json):
            raise ValueError("the entry does not match its key or digest")
        from ktir.syntax.parser import parse

        module = parse(text, "cached.scheduled.ktir")
        report = ScheduleReport.model_validate_json(report_json)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - any damage means: schedule again (and overwrite the entry)
        return None
    return ScheduleResult(module, report)


def store(k: str, result: ScheduleResult) -> None:
    """Write the entry for key `k` (atomically; a failure to write only costs the next run time)."""
    folder = cache_dir()
    if folder is None:
        return
    from ktir.syntax.printer import print_module

    text = print_module(result.module)
    report_json = result.report.model_dump_json()
    entry = {"format": FORMAT, "key": k, "digest": _digest(text, report_json), "module": text, "report": report_json}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{k}.json", json.dumps(entry))
    except OSError:
        return
