"""Fixtures for the scheduler tests: the Spyre target and the example plugin.

This directory is deliberately not a package: as `tests/schedulers` it would shadow the
`schedulers` package it tests.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest
from conftest_paths import PLUGIN, PLUGIN_NAME

from ktir.targets import load_target
from ktir.targets.schema import Target


@pytest.fixture(scope="session")
def spyre() -> Target:
    return load_target("spyre")


def _plugin_registered() -> bool:
    return any(ep.name == PLUGIN_NAME for ep in entry_points(group="ktir.schedulers"))


@pytest.fixture(scope="session")
def plugin_installed() -> str:
    """The example plugin, installed as a package (editable) if it is not yet.

    Entry points come from installed distribution metadata, so the plugin must be a real
    installed package for discovery to be tested; a clean checkout installs it here once.
    """
    if not _plugin_registered():
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(PLUGIN)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"could not install the example plugin: {' '.join(cmd)}\n{done.stderr}"
        import importlib

        importlib.invalidate_caches()
        # the editable install's import hook is read at interpreter start-up; this process needs the path
        sys.path.insert(0, str(PLUGIN))
    assert _plugin_registered(), "the example plugin is installed but its entry point is not visible"
    return PLUGIN_NAME


@pytest.fixture(autouse=True)
def _no_schedule_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scheduler tests schedule afresh (the cache has its own tests, in a temporary directory)."""
    monkeypatch.setenv("KTIR_SCHEDULE_CACHE", "off")
