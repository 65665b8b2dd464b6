"""Finding schedulers: the built-ins plus every entry point in the group `ktir.schedulers`.

An entry point names either a scheduler class (instantiated with no arguments) or an
instance. Two schedulers with the same `name` from different places is an error that says
where each comes from.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from .api import ScheduleError, Scheduler

GROUP = "ktir.schedulers"


class SchedulerClash(ScheduleError):
    """Two schedulers registered under one name."""


def _builtins() -> dict[str, tuple[Scheduler, str]]:
    from .builtin import BaselineScheduler, ExactScheduler, SearchScheduler

    return {s.name: (s, f"built-in {type(s).__module__}.{type(s).__name__}")
            for s in (BaselineScheduler(), ExactScheduler(), SearchScheduler())}


def builtin_schedulers() -> dict[str, Scheduler]:
    """The schedulers that ship with KTIR, by name."""
    return {name: inst for name, (inst, _) in sorted(_builtins().items())}


def _load(ep: EntryPoint) -> Scheduler:
    try:
        obj = ep.load()
    except Exception as e:  # noqa: BLE001 - a broken plugin must not take the command down with a traceback
        raise ScheduleError(f"scheduler plugin {ep.name!r} ({ep.value}) failed to load: {e}") from e
    inst = obj() if isinstance(obj, type) else obj
    if not isinstance(inst, Scheduler):
        raise ScheduleError(f"scheduler plugin {ep.name!r} ({ep.value}) has no `name` and `schedule(module, target, options)`")
    return inst


def discover() -> dict[str, Scheduler]:
    """Every available scheduler by name; raises SchedulerClash on a duplicate name."""
    found = _builtins()
    for ep in entry_points(group=GROUP):
        origin = f"entry point {ep.name} = {ep.value}" + (f" (distribution {ep.dist.name})" if ep.dist else "")
        if ep.name in found and ep.value.startswith("schedulers.builtin:"):
            continue  # the built-ins are registered as entry points of this distribution too
        inst = _load(ep)
        if inst.name in found:
            raise SchedulerClash(f"two schedulers are named {inst.name!r}: {found[inst.name][1]} and {origin}")
        found[inst.name] = (inst, origin)
    return {name: inst for name, (inst, _) in sorted(found.items())}


def get(name: str) -> Scheduler:
    available = discover()
    if name not in available:
        raise ScheduleError(f"no scheduler named {name!r}; available: {', '.join(available)}")
    return available[name]
