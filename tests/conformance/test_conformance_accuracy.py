"""Stored goldens: the accepted intervals are well formed, and an implementation more accurate
than the reference (float64 accumulation) passes every case."""

from __future__ import annotations

import numpy as np

from conformance.model import SUITE_ROOT, load_suite
from conformance.runner import AdapterSpec, run_suite
from conformance.tolerance import GOLDEN_FORMAT, bit_for_bit
from conformance.values import read_npz

SUITE = load_suite()


def test_every_interval_holds_its_golden() -> None:
    checked = 0
    for case in SUITE:
        if case.golden is None:
            continue
        g = read_npz(SUITE_ROOT / case.golden)
        assert int(g["__format__"]) == GOLDEN_FORMAT, case.id
        for o in case.outputs:
            if bit_for_bit(o.tolerance):
                assert f"{o.name}.lo" not in g, (case.id, o.name)
                continue
            want = g[o.name].astype(np.float64)
            lo, hi = g[f"{o.name}.lo"].astype(np.float64), g[f"{o.name}.hi"].astype(np.float64)
            nan = np.isnan(want)
            assert (np.isnan(lo) == nan).all() and (np.isnan(hi) == nan).all(), (case.id, o.name)
            assert ((lo <= want) & (want <= hi))[~nan].all(), (case.id, o.name)
            checked += 1
    assert checked >= 150


def test_float64_accumulation_passes_every_executing_case() -> None:
    # the adapter changes only the accumulator of reference_interp/ops/linalg.py: a case
    # without a linalg op runs exactly the reference's code, so only the others are run here
    cases = [c for c in SUITE if c.expect == "run" and any(op.startswith("linalg.") for op in c.ops)]
    assert len(cases) >= 100 and {c.level for c in cases} >= {"core", "full"}
    r = run_suite(cases, AdapterSpec("python:conformance.examples.f64_accumulation:F64Accumulation"), jobs=2, timeout=120)
    assert r.passed and {c.status for c in r.cases} == {"pass"}, [(c.id, c.message) for c in r.cases if c.status != "pass"]
