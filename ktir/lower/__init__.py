"""Lowering to KTIR: SDSC (SuperDSC, torch-spyre's Inductor backend) and PyTorch (torch.export).

    from ktir.lower import lower_path
    lowered = lower_path("bundle_dir/")        # or one sdsc_*.json
    print(lowered.text)                          # canonical KTIR
    lowered.entry, lowered.args                  # the kernel to run and its arguments

    from ktir.lower import from_torch            # needs the torch extra; imported on first use
    program = from_torch(model, (x,), runner=reference_interp.run)   # runner: what executes kernels
    program.text, program.manifest, program.run(x)

See README.md in this directory for what lowers and how.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktir.lazy import lazy_exports

if TYPE_CHECKING:
    from ktir.lower.bundle import Bundle, load_bundle, parse_bundle_text
    from ktir.lower.emit import ArgInfo, Lowered, lower_bundle, lower_sdsc
    from ktir.lower.errors import SdscError
    from ktir.lower.layout import AddressCheck, KernelSpec, build_kernel, check_addresses
    from ktir.lower.sdsc_model import SdscFile, load_sdsc_file, parse_sdsc

# loaded on first use (ktir.lazy): importing a submodule such as the CLI's stays cheap
__getattr__ = lazy_exports(
    __name__,
    {
        "Bundle": "ktir.lower.bundle",
        "load_bundle": "ktir.lower.bundle",
        "parse_bundle_text": "ktir.lower.bundle",
        "ArgInfo": "ktir.lower.emit",
        "Lowered": "ktir.lower.emit",
        "lower_bundle": "ktir.lower.emit",
        "lower_sdsc": "ktir.lower.emit",
        "SdscError": "ktir.lower.errors",
        "AddressCheck": "ktir.lower.layout",
        "KernelSpec": "ktir.lower.layout",
        "build_kernel": "ktir.lower.layout",
        "check_addresses": "ktir.lower.layout",
        "SdscFile": "ktir.lower.sdsc_model",
        "load_sdsc_file": "ktir.lower.sdsc_model",
        "parse_sdsc": "ktir.lower.sdsc_model",
    },
)


def from_torch(module: Any, example_inputs: Any, **options: Any) -> Any:
    """Lower a PyTorch module to a KTIR program (ktir.lower.torch.from_torch; imports torch)."""
    from ktir.lower.torch import from_torch as lower_torch

    return lower_torch(module, example_inputs, **options)


def lower_path(path: str | Path, *, skip_missing: bool = False, verify: bool = True) -> Lowered:
    """Lower one SDSC JSON file, or a bundle (a directory holding bundle.mlir, or a .mlir bundle file).

    `skip_missing`: lower a bundle whose SDSC files are not all present, leaving those steps
    out. `verify`: run the KTIR verifier on the result (an error there is a lowering bug).
    """
    from ktir.lower.bundle import load_bundle
    from ktir.lower.emit import lower_bundle, lower_sdsc
    from ktir.lower.sdsc_model import load_sdsc_file

    p = Path(path)
    if p.is_dir() or (p.suffix == ".mlir" and p.exists()):
        lowered = lower_bundle(load_bundle(p, skip_missing=skip_missing))
    elif p.exists():
        lowered = lower_sdsc(load_sdsc_file(p))
    else:
        raise FileNotFoundError(str(p))
    if verify:
        _verify(lowered, str(p))
    return lowered


def _verify(lowered: Lowered, source: str) -> None:
    from ktir.verify import validate_text

    _, diagnostics = validate_text(lowered.text, source)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        first = errors[0]
        raise AssertionError(f"the lowering produced invalid KTIR (a bug in ktir.lower): line {first.line}: [{first.id}] {first.message}")


__all__ = [
    "AddressCheck",
    "ArgInfo",
    "Bundle",
    "KernelSpec",
    "Lowered",
    "SdscError",
    "SdscFile",
    "build_kernel",
    "check_addresses",
    "from_torch",
    "load_bundle",
    "load_sdsc_file",
    "lower_bundle",
    "lower_path",
    "lower_sdsc",
    "parse_bundle_text",
    "parse_sdsc",
]
