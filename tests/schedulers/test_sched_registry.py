"""Plugin API: discovery through entry points, name clashes, broken plugins, supported_ops."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint

import pytest
from conftest_paths import EXAMPLES, ktir_schedule

import schedulers
from ktir.cli import main
from schedulers import registry
from schedulers.api import ScheduleError, Scheduler


def test_builtins_are_schedulers() -> None:
    found = schedulers.discover()
    for name in ("baseline", "exact", "search"):
        assert isinstance(found[name], Scheduler)
        assert found[name].name == name


def test_supported_ops_maps_every_scheduler_to_op_names() -> None:
    ops = {k: set(v) for k, v in schedulers.supported_ops().items()}
    assert set(ops) == {"baseline", "exact", "search"}  # built-ins only, whatever plugins are installed
    assert "linalg.matmul" in ops["exact"] and "ktdp.load" in ops["baseline"]
    from ktir.dialects.registry import OPS

    for names in ops.values():
        assert names <= set(OPS), names - set(OPS)


def _fake_entry_points(*eps: EntryPoint):  # type: ignore[no-untyped-def]
    return lambda group: [ep for ep in eps if ep.group == group]


def test_name_clash_is_an_error_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint("mine", "schedulers.builtin:ExactScheduler", registry.GROUP)  # a plugin reusing the name "exact"
    monkeypatch.setattr(registry, "entry_points", _fake_entry_points(ep))
    with pytest.raises(registry.SchedulerClash) as info:
        registry.discover()
    assert "'exact'" in str(info.value) and "built-in" in str(info.value) and "mine" in str(info.value)


def test_two_plugins_with_one_name_clash(monkeypatch: pytest.MonkeyPatch, plugin_installed: str) -> None:
    a = EntryPoint("a", "ktir_example_scheduler:LargestBlockScheduler", registry.GROUP)
    b = EntryPoint("b", "ktir_example_scheduler:LargestBlockScheduler", registry.GROUP)
    monkeypatch.setattr(registry, "entry_points", _fake_entry_points(a, b))
    with pytest.raises(registry.SchedulerClash, match="largest-block"):
        registry.discover()


def test_broken_plugin_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint("broken", "no_such_module_anywhere:Thing", registry.GROUP)
    monkeypatch.setattr(registry, "entry_points", _fake_entry_points(ep))
    with pytest.raises(ScheduleError, match="broken.*failed to load"):
        registry.discover()
    monkeypatch.setattr(registry, "entry_points", _fake_entry_points(EntryPoint("odd", "json:dumps", registry.GROUP)))
    with pytest.raises(ScheduleError, match="has no `name`"):
        registry.discover()


def test_unknown_scheduler_lists_the_available_ones(capsys: pytest.CaptureFixture[str]) -> None:
    code = ktir_schedule([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=1024", "--scheduler", "nope"])
    err = capsys.readouterr().err
    assert code == 1 and "no scheduler named 'nope'" in err and "exact" in err and "Traceback" not in err


def test_example_plugin_is_discovered_and_runs_through_the_cli(plugin_installed: str, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert plugin_installed in schedulers.discover()
    out, rep = tmp_path / "out.ktir", tmp_path / "report.json"
    code = ktir_schedule([str(EXAMPLES / "softmax.ktir"), "--target", "spyre", "--size", "R=1024",
                 "--scheduler", plugin_installed, "--check", "-o", str(out), "--report-json", str(rep), "-q"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(rep.read_text())
    assert report["scheduler"] == plugin_installed and report["applied"] and report["schedule"]["double_buffered"]
    assert main(["validate", "-q", str(out)]) == 0
