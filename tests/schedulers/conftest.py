"""Fixtures for the scheduler tests: the Spyre target and the example plugin.

This directory is deliberately not a package: as `tests/schedulers` it would shadow the
`schedulers` package it tests.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest_paths import PLUGIN, PLUGIN_NAME

from ktir.targets import load_target
from ktir.targets.schema import Target


@pytest.fixture(scope="session")
def spyre() -> Target:
    return load_target("spyre")


@pytest.fixture
def plugin_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The example plugin, discoverable through its entry point without installing anything.

    Entry points are read from distribution metadata (`*.dist-info` directories) on sys.path,
    so the test writes the plugin's metadata as a wheel install would, into a temporary
    directory put first on sys.path with the plugin's source. Nothing is installed into the
    running environment; a copy already installed (e.g. `pip install -e` by hand) is shadowed,
    since importlib.metadata keeps the first distribution of each name on sys.path.
    """
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    dist = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = ["[ktir.schedulers]"] + [f"{k} = {v}" for k, v in project["entry-points"]["ktir.schedulers"].items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(PLUGIN))
    found = [ep for ep in entry_points(group="ktir.schedulers") if ep.name == PLUGIN_NAME]
    assert found, "the example plugin's entry point is not visible"
    assert found[0].dist is not None and Path(found[0].dist.locate_file("")) == tmp_path  # ours, not an installed copy
    return PLUGIN_NAME


@pytest.fixture(autouse=True)
def _no_schedule_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scheduler tests schedule afresh (the cache has its own tests, in a temporary directory)."""
    monkeypatch.setenv("KTIR_SCHEDULE_CACHE", "off")
