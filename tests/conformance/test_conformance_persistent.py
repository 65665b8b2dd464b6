"""The persistent subprocess protocol: one server process answers many cases over JSON lines."""

from __future__ import annotations

import sys
from pathlib import Path

from conformance.model import load_suite
from conformance.runner import AdapterSpec, run_suite, select

ROOT = Path(__file__).resolve().parents[2]
SERVE = f"{sys.executable} {ROOT / 'conformance' / 'examples' / 'ktir_serve.py'}"
SUITE = load_suite()
SAMPLE = {"multi-tile.grid2.arith.addf.f32", "multi-tile.indirect.rows.repeated", "multi-tile.memory.distributed.quadrants",
          "collective.reduce.grid2.f32", "core.memory.holes.load.checkerboard.f32", "core.arith.divui.top_bit.i64",
          "core.linalg.reduce.sum_short.bf16", "syntax.reject.unbalanced_brace"}


def persistent(command: str) -> AdapterSpec:
    return AdapterSpec(command=command, protocol="persistent")


def test_the_example_server_passes_a_mixed_sample() -> None:
    cases = [c for c in SUITE if c.id in SAMPLE] + select(SUITE, None, "validation.math.same_type.math.ex")
    assert len(cases) >= 8
    r = run_suite(cases, persistent(SERVE), jobs=2, timeout=60)
    assert r.passed, [(c.id, c.status, c.message) for c in r.cases if c.status != "pass"]
    assert r.adapter.startswith("cmd (persistent):")


def _server(tmp_path: Path, body: str) -> str:
    script = tmp_path / "server.py"
    script.write_text("import json, sys, time\n" + body)
    return f"{sys.executable} {script}"


def test_statuses_crashes_and_timeouts(tmp_path: Path) -> None:
    cases = select(SUITE, None, "core.arith.addf.")[:3]
    # answers 77 to the first request, dies on the second, then (restarted) hangs
    server = _server(tmp_path, """
state = tmp = __import__('pathlib').Path(sys.argv[1])
n = int(state.read_text()) if state.exists() else 0
for line in sys.stdin:
    req = json.loads(line)
    n += 1
    state.write_text(str(n))
    if n == 1:
        print(json.dumps({"id": req["id"], "status": 77, "message": "no such unit"}), flush=True)
    elif n == 2:
        sys.exit(3)
    else:
        time.sleep(30)
        (state.parent / "woke").write_text("")
""")
    r = run_suite(cases, persistent(f"{server} {tmp_path / 'count'}"), timeout=1.0)
    statuses = [c.status for c in r.cases]
    assert statuses[:3] == ["not_supported", "error", "timeout"], [(c.status, c.message) for c in r.cases]
    assert "no such unit" in r.cases[0].message and "exited without answering" in r.cases[1].message
    # no clock: had the runner waited for the hung server, it would have written `woke` after its sleep
    assert not (tmp_path / "woke").exists()


def test_a_server_that_answers_out_of_turn_is_an_error(tmp_path: Path) -> None:
    server = _server(tmp_path, """
for line in sys.stdin:
    print(json.dumps({"id": -1, "status": 0}), flush=True)
""")
    r = run_suite(select(SUITE, None, "core.arith.addf.f32.16"), persistent(server), timeout=10)
    assert r.cases[0].status == "error" and "answered request" in r.cases[0].message
