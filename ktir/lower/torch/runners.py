"""The kernel runner `Program.run` uses when the caller gives none.

`ktir.lower` imports no executor (tests/architecture/test_import_graph.py), so the default is
found the way scheduler plugins are: through the entry-point group `ktir.kernel_runners`, where
this distribution registers the reference interpreter as `reference`. A vendor's package can
register its own runner there and select it with `KTIR_KERNEL_RUNNER=name`.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Any

GROUP = "ktir.kernel_runners"
DEFAULT = "reference"


class NoRunner(Exception):
    """No kernel runner could be found or loaded (one-line message)."""


def default_runner() -> Any:
    """The runner named by $KTIR_KERNEL_RUNNER (default `reference`) in the `ktir.kernel_runners` group."""
    name = os.environ.get("KTIR_KERNEL_RUNNER") or DEFAULT
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    if name not in found:
        have = ", ".join(sorted(found)) or "none"
        raise NoRunner(f"no kernel runner named {name!r} is installed (group {GROUP}: {have}); "
                       "reinstall ktir (`pip install -e .`) or pass runner= to from_torch / Program.load")
    try:
        return found[name].load()
    except Exception as e:  # noqa: BLE001 - a broken plugin is a one-line error, not a traceback
        raise NoRunner(f"kernel runner {name!r} ({found[name].value}) failed to load: {e}") from e
