from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True, scope="session")
def _private_schedule_cache(tmp_path_factory: pytest.TempPathFactory):
    """Schedules cached by any test (and by the CLI runs tests start) go to a temporary
    directory, never into the user's cache directory."""
    import os

    before = os.environ.get("KTIR_SCHEDULE_CACHE")
    os.environ["KTIR_SCHEDULE_CACHE"] = str(tmp_path_factory.mktemp("schedule-cache"))
    yield
    if before is None:
        os.environ.pop("KTIR_SCHEDULE_CACHE", None)
    else:
        os.environ["KTIR_SCHEDULE_CACHE"] = before
