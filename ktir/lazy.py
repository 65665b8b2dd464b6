"""Package attributes that load on first use (PEP 562).

A package's `__init__` that imports its submodules makes every `import pkg.sub` pay for
all of them: `ktir --help` loaded numpy, ml_dtypes and scipy through
`reference_interp/__init__` just to add the `run` subcommand. Such a package lists its
public names instead:

    __getattr__ = lazy_exports(__name__, {"run": "reference_interp.executor", ...})

and keeps the real imports under `if TYPE_CHECKING:` for the type checker. Functions
defined in the `__init__` itself import what they use inside their bodies: a module's
own global lookups do not go through its `__getattr__`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `names` maps an attribute to the module defining it."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups are plain attribute reads
        return value

    return __getattr__
