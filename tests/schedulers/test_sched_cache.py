"""The schedule cache: a second run comes from it; a damaged or stale entry is never used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ktir
import schedulers
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from schedulers import cache
from schedulers import single_tile as nat


@pytest.fixture
def cache_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cache.ENV, str(tmp_path))
    return tmp_path


def _kernel() -> ktir.Module:
    return ktir.parse(print_module(nat.swiglu(64, 256)), "swiglu.ktir")


def test_a_second_run_comes_from_the_cache(cache_in: Path, spyre: Target) -> None:
    first = schedulers.schedule(_kernel(), spyre, "exact")
    assert len(list(cache_in.glob("*.json"))) == 1
    second = schedulers.schedule(_kernel(), spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert "from the schedule cache" in second.report.notes[-2]
    assert print_module(second.module) == print_module(first.module)
    assert second.report.schedule == first.report.schedule and second.check and second.check.ok
    other = schedulers.schedule(_kernel(), spyre, "baseline")  # another scheduler: another entry
    assert not any("cache" in n for n in other.report.notes)


@pytest.mark.parametrize("damage", ["garbage", "module", "digest", "unparsable"])
def test_a_damaged_entry_is_ignored_and_replaced(damage: str, cache_in: Path, spyre: Target) -> None:
    good = schedulers.schedule(_kernel(), spyre, "exact")
    (path,) = cache_in.glob("*.json")
    entry = json.loads(path.read_text())
    if damage == "garbage":
        path.write_text("{not json")
    elif damage == "module":  # content changed, digest not: a wrong module must not be returned
        entry["module"] = entry["module"].replace("grid = [", "grid = [1, ")
        path.write_text(json.dumps(entry))
    elif damage == "digest":
        entry["digest"] = "0" * 64
        path.write_text(json.dumps(entry))
    else:  # consistent digest, text that does not parse
        entry["module"] = "func.func @broken("
        entry["digest"] = cache._digest(entry["module"], entry["report"])
        path.write_text(json.dumps(entry))
    again = schedulers.schedule(_kernel(), spyre, "exact")
    assert not any("from the schedule cache" in n for n in again.report.notes)
    assert print_module(again.module) == print_module(good.module)
    assert json.loads(path.read_text())["digest"] == cache._digest(print_module(again.module),
                                                                  json.loads(path.read_text())["report"])


def test_new_scheduler_code_or_other_options_miss(cache_in: Path, spyre: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    schedulers.schedule(_kernel(), spyre, "exact")
    hit = schedulers.schedule(_kernel(), spyre, "exact")
    assert any("from the schedule cache" in n for n in hit.report.notes)
    sized = schedulers.schedule(_kernel(), spyre, "exact", schedulers.ScheduleOptions(seed=3))
    assert not any("from the schedule cache" in n for n in sized.report.notes)
    monkeypatch.setattr(cache, "code_version", lambda: "another version")
    fresh = schedulers.schedule(_kernel(), spyre, "exact")
    assert not any("from the schedule cache" in n for n in fresh.report.notes)


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spyre: Target) -> None:
    monkeypatch.setenv(cache.ENV, "off")
    schedulers.schedule(_kernel(), spyre, "exact")
    assert cache.cache_dir() is None and not list(tmp_path.iterdir())
