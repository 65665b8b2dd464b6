#!/usr/bin/env python3
"""A worked example of the subprocess contract: wrap an external executable (here `ktir run`,
standing in for a vendor's compiler + runtime) so that the conformance runner can drive it.

    ktir conformance run --adapter-cmd 'python conformance/examples/ktir_run_wrapper.py {ktir} {inputs} {outputs}'

The runner calls this script once per case with three paths and KTIR_CONFORMANCE_MODE set:
- `check`: say whether the program is valid. Exit 0 (valid) or 1 (invalid, with the
  diagnostics `FILE:LINE:COL: error[ID]: message` on stdout or stderr: validation cases are
  judged by the ID and the line).
- `run`: run the kernel on the arrays of {inputs} (.npz, one array per argument name; 0-d
  arrays are scalars) and write every array argument's final contents to {outputs} (.npz).
  Exit 0 on success.
Exit 77 for anything the implementation does not support; any other status is an error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

NOT_SUPPORTED = 77


def main(ktir: str, inputs: str, outputs: str) -> int:
    ktir_cmd = os.environ.get("KTIR_EXE", "ktir").split()
    if os.environ.get("KTIR_CONFORMANCE_MODE") == "check":
        done = subprocess.run([*ktir_cmd, "validate", "-q", ktir], capture_output=True, text=True)
        sys.stderr.write(done.stderr)  # carries `FILE:LINE:COL: error[ID]` for the runner
        return 0 if done.returncode == 0 else 1
    with np.load(inputs) as z:
        if any(k.endswith(".__dtype__") for k in z.files):
            # `ktir run` reads plain .npy files; bf16 and f8 arrays need ml_dtypes
            print("bf16/f8 arrays are not supported by this wrapper", file=sys.stderr)
            return NOT_SUPPORTED
        arrays = {k: z[k] for k in z.files}
    with tempfile.TemporaryDirectory() as tmp:
        flags = []
        for name, value in arrays.items():
            if value.ndim == 0:
                flags += ["--arg", f"{name}={value.item()}"]
            else:
                path = Path(tmp) / f"{name}.npy"
                np.save(path, value)
                flags += ["--arg", f"{name}={path}"]
        function = os.environ.get("KTIR_CONFORMANCE_FUNCTION")
        if function:
            flags += ["--func", function]
        done = subprocess.run([*ktir_cmd, "run", ktir, *flags, "--out", outputs], capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    return 0 if done.returncode == 0 else 2


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: ktir_run_wrapper.py KTIR INPUTS OUTPUTS", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
