"""The suite judged from outside: a "vendor" implementation with one behaviour wrong
(tests/conformance/conformance_vendor.py: flush-to-zero, rounding toward zero, a 32-bit
`index`, a max that skips NaN) must not be certified at the level that defines the behaviour.

Each vendor runs the `core` cases that use the ops it changes: `core` is where these
behaviours are specified (arithmetic, conversions, index values) and a mandatory level of every
executor, so failing it makes the vendor non-conformant. Its failures must be wrong outputs
(`fail`), not crashes, and it must still pass the cases whose inputs do not show the
behaviour: the suite tells this bug apart rather than rejecting everything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.model import load_suite
from conformance.results import Results
from conformance.runner import AdapterSpec, run_suite

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import conformance_vendor as vendor  # noqa: E402

SUITE = load_suite()

# vendor -> cases that must fail (each names the behaviour: the suite has a case for it)
MUST_FAIL: dict[type[vendor.Vendor], list[str]] = {
    vendor.FlushesSubnormals: ["core.arith.addf.subnormal.f32", "core.arith.mulf.subnormal.f32"],
    vendor.RoundsTowardZero: ["core.arith.addf.f32.16", "core.arith.mulf.f16.16", "core.arith.divf.bf16.16"],
    vendor.Index32: ["core.arith.index.beyond_2p31"],
    vendor.NanIgnoringMax: ["core.arith.maximumf.specials.f32", "core.arith.minimumf.specials.f32",
                            "core.linalg.max.specials.f32"],
}


def _run(cls: type[vendor.Vendor]) -> Results:
    cases = [c for c in SUITE if c.level == "core" and c.expect == "run" and any(op in cls.OPS for op in c.ops)]
    assert len(cases) >= 20
    return run_suite(cases, AdapterSpec(f"python:conformance_vendor:{cls.__name__}"), jobs=2, timeout=120)


@pytest.mark.parametrize("cls", list(MUST_FAIL), ids=lambda c: c.name)
def test_a_vendor_with_one_wrong_behaviour_is_not_certified_at_its_level(cls: type[vendor.Vendor]) -> None:
    r = _run(cls)
    core = next(v for v in r.levels if v.level == "core")
    assert core.verdict == "not certified" and not r.conformant
    failed = {c.id: c for c in r.cases if c.status != "pass"}
    missing = [cid for cid in MUST_FAIL[cls] if cid not in failed and not any(k.startswith(cid + ".") for k in failed)]
    assert missing == [], f"{cls.name} passes {missing}"
    assert {c.status for c in failed.values()} == {"fail"}, [(c.id, c.status, c.message) for c in failed.values()
                                                           if c.status != "fail"][:3]
    passed = [c for c in r.cases if c.status == "pass"]
    assert passed, f"{cls.name} fails every case it runs: the vendor itself is broken"


def test_the_vendors_change_only_what_they_say() -> None:
    # run outside the suite: each vendor's one change shows on a tiny input, and nothing else does
    import ml_dtypes
    import numpy as np

    f32 = np.float32
    tiny = float(ml_dtypes.finfo(f32).smallest_normal)
    ftz = vendor.FlushesSubnormals().change("arith.mulf", [], [np.array([tiny / 4, -tiny / 2, 1.5], f32)], [_f32()])
    assert list(ftz[0]) == [0.0, 0.0, 1.5] and np.signbit(ftz[0][1])
    a, b = np.array([1.0, -2.0, 1.0], f32), np.array([3.0, 3.0, 2.0], f32)
    rtz = vendor.RoundsTowardZero().change("arith.divf", [a, b], [a / b], [_f32()])
    # 1/3 and -2/3 round to nearest away from zero: one step back; 1/2 is exact
    assert list(rtz[0]) == [np.nextafter(f32(1 / 3), f32(0)), np.nextafter(f32(-2 / 3), f32(0)), f32(0.5)]
    nan = vendor.NanIgnoringMax().change("arith.maximumf", [np.array([np.nan, 1.0], f32), np.array([2.0, 3.0], f32)],
                                         [np.array([np.nan, 3.0], f32)], [_f32()])
    assert list(nan[0]) == [2.0, 3.0]


def _f32() -> object:
    from ktir.ir import types as ty

    return ty.F32
