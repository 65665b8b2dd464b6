"""A small external implementation for the subprocess contract (run as a separate process).

    python external_impl.py [--wrong | --no-collectives] KTIR INPUTS OUTPUTS

Runs the reference verifier/interpreter; `--wrong` adds 1 to every float output;
`--no-collectives` exits 77 (not supported) for programs with inter-tile ops.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    wrong = "--wrong" in argv
    no_collectives = "--no-collectives" in argv
    ktir, inputs, outputs = [a for a in argv if not a.startswith("--")]
    import reference_interp
    from conformance.values import read_npz, write_npz
    from ktir.verify import validate_text

    source = Path(ktir).read_text(encoding="utf-8")
    if no_collectives and "inter_tile_" in source:
        print("inter-tile ops are not supported", file=sys.stderr)
        return 77
    module, diagnostics = validate_text(source, ktir)
    errors = [d for d in diagnostics if d.severity == "error"]
    if os.environ["KTIR_CONFORMANCE_MODE"] == "check" or errors:
        for d in errors:
            print(f"{ktir}:{d.line}:{d.column}: error[{d.id}]: {d.message}")
        return 1 if errors else 0
    args = {k: (v.item() if v.ndim == 0 else v) for k, v in read_npz(Path(inputs)).items()}
    result = reference_interp.run(module, os.environ.get("KTIR_CONFORMANCE_FUNCTION") or None, args=args)
    out = {k: np.asarray(v) for k, v in result.outputs.items()}
    if wrong:
        out = {k: (v + v.dtype.type(1) if v.dtype.kind == "f" else v) for k, v in out.items()}
    write_npz(Path(outputs), out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
