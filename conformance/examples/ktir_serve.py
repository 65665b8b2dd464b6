#!/usr/bin/env python3
"""A worked example of the persistent protocol: one process serves every case it is sent.

    ktir conformance run -j 2 --adapter-protocol persistent \\
        --adapter-cmd 'python conformance/examples/ktir_serve.py'

The runner writes one JSON request per line on stdin and waits for one JSON response per
line on stdout (nothing else may be printed there; use stderr for logs):

    request:  {"id": 7, "protocol": 2, "mode": "run", "ktir": PATH, "inputs": PATH, "outputs": PATH, "function": null}
    response: {"id": 7, "status": 0, "diagnostics": [], "message": ""}
    rejected: {"id": 8, "status": 1, "diagnostics": [{"id": "ktdp.load.C1", "line": 7, "column": 3}]}

`mode` is `check` (say whether the program is valid; `status` 1 with the errors in
`diagnostics` when it is not, each with its rule ID and the line it points at: validation
cases are judged by both) or `run` (run the kernel on the .npz of `inputs`, write every
array argument's final contents to the .npz `outputs`). `status` follows the per-case exit
statuses: 0 done, 1 rejected, 77 not supported, anything else an error (say why in
`message`). The process exits when stdin closes.

Here the implementation is this repository's verifier and interpreter, loaded once; a vendor
would call its compiler and runtime instead, keeping the device open between cases.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

NOT_SUPPORTED = 77


def handle(request: dict[str, Any]) -> dict[str, Any]:
    import reference_interp
    from conformance.values import read_npz, write_npz
    from ktir.verify import validate_text

    path = Path(request["ktir"])
    source = path.read_text(encoding="utf-8")
    module, diagnostics = validate_text(source, str(path))
    errors = [{"id": d.id, "line": d.line, "column": d.column} for d in diagnostics if d.severity == "error"]
    if errors or module is None:
        return {"status": 1, "diagnostics": errors or [{"id": "syntax"}], "message": "invalid program"}
    if request["mode"] == "check":
        return {"status": 0, "diagnostics": []}
    args = {k: (v.item() if v.ndim == 0 else v) for k, v in read_npz(Path(request["inputs"])).items()}
    try:
        result = reference_interp.run(module, request.get("function") or None, args=args)
    except reference_interp.KtirRuntimeError as e:
        return {"status": 2, "message": e.message}
    write_npz(Path(request["outputs"]), {k: np.asarray(v) for k, v in result.outputs.items()})
    return {"status": 0}


def main() -> int:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            response = handle(request)
        except Exception as e:  # noqa: BLE001 - one bad case must not end the server
            response = {"status": 2, "message": f"{type(e).__name__}: {e}"}
        response["id"] = request["id"]
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
