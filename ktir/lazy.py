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
import types
from collections.abc import Callable
from typing import Any


class _LazyPackage(types.ModuleType):
    """A package whose exports load on first use.

    Importing a submodule makes the import system set it as an attribute of its package.
    An export may share its name with a submodule (`ktir.targets.roofline`, the function,
    defined in `ktir/targets/roofline.py`): with eager imports the export is bound after
    the submodule is loaded and wins; here the submodule may load first (imported by a
    sibling), so that attribute assignment is ignored and the export stays reachable."""

    __lazy_exports__: dict[str, str]

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("__lazy_exports__", {})
        if name in exports and isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)


def lazy_exports(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `names` maps an attribute to the module defining it."""
    module_object = sys.modules[package]
    module_object.__dict__["__lazy_exports__"] = names
    module_object.__class__ = _LazyPackage

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        module_object.__dict__[name] = value  # later lookups are plain attribute reads
        return value

    return __getattr__
