"""The tolerance probe: wrong answers an implementation might give must fail every executing
case where the exact value tells them apart from the right one.

For each executing case the runner is fed, in place of an implementation's outputs, the
golden changed in one way: all zeros, negated, halved, and moved N + 1 ulps (the output's
`N ulp` class; 1 ulp for the bit-for-bit classes) away from the golden in each direction. No
interpreter runs: the probe outputs come from the stored goldens.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import numpy as np
import pytest

from conformance.adapters import Adapter, CheckResult
from conformance.model import SUITE_ROOT, Case, load_suite
from conformance.oracle.formats import format_of, round_float64
from conformance.runner import judge
from conformance.tolerance import bit_for_bit, ulp
from conformance.values import is_float, read_npz

SUITE = [c for c in load_suite() if c.expect == "run"]
_ULP = re.compile(r"^(\d+) ulp$")


@cache
def golden(case_id: str) -> dict[str, np.ndarray]:
    case = next(c for c in SUITE if c.id == case_id)
    assert case.golden is not None
    return read_npz(SUITE_ROOT / case.golden)


def allowed_ulps(tolerance: str) -> int | None:
    """N of an `N ulp` class, 0 for the bit-for-bit classes, None for the bound classes."""
    m = _ULP.match(tolerance)
    return int(m.group(1)) if m else (0 if bit_for_bit(tolerance) else None)


def _rounded(x: np.ndarray, dt: np.dtype[Any], mode: str = "nearest") -> np.ndarray:
    return round_float64(x, format_of(dt), mode).astype(dt)  # type: ignore[arg-type]


def zeros(g: np.ndarray) -> np.ndarray:
    return np.zeros_like(g)


def negated(g: np.ndarray) -> np.ndarray:
    return (-g.astype(np.float64)).astype(g.dtype)


def halved(g: np.ndarray) -> np.ndarray:
    return _rounded(g.astype(np.float64) * 0.5, g.dtype)


def ulps_off(g: np.ndarray, n: int, sign: int) -> np.ndarray:
    """g moved at least n ulp(g) away (rounded away from g: the binade's spacing of |g|)."""
    w = g.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return _rounded(w + sign * n * ulp(w, g.dtype), g.dtype, "up" if sign > 0 else "down")


class Probe:
    """An "implementation" (an `Adapter`) whose compared outputs are `change(golden)`."""

    name = "probe"

    def __init__(self, case: Case, change: Callable[[np.ndarray, Any], np.ndarray]) -> None:
        self.case, self.change = case, change

    def check(self, source: str, filename: str) -> CheckResult:  # pragma: no cover - executing cases only
        raise NotImplementedError

    def run(self, source: str, filename: str, function: str | None, inputs: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(inputs)
        for o in self.case.outputs:
            out[o.name] = self.change(golden(self.case.id)[o.name], o)
        return out


def _verdict(case: Case, change: Callable[[np.ndarray, Any], np.ndarray]) -> str:
    adapter: Adapter = Probe(case, change)
    status, _, _ = judge(case, adapter, SUITE_ROOT)
    return status


def _float_outputs(case: Case) -> list[Any]:
    return [o for o in case.outputs if is_float(golden(case.id)[o.name].dtype)]


def _distinguishable(case: Case) -> bool:
    """Whether some output element is a finite non-zero float: zeros, its negation and its half
    are then wrong answers."""
    for o in _float_outputs(case):
        g = golden(case.id)[o.name].astype(np.float64)
        if (np.isfinite(g) & (g != 0)).any():
            return True
    return False


@pytest.mark.parametrize("name, change", [("zeros", lambda g, o: zeros(g)), ("negated", lambda g, o: negated(g)),
                                          ("halved", lambda g, o: halved(g))])
def test_zeros_negation_and_half_fail_every_case(name: str, change: Callable[[np.ndarray, Any], np.ndarray]) -> None:
    def probe(g: np.ndarray, o: Any) -> np.ndarray:
        return change(g, o) if is_float(g.dtype) else g

    probed = [c for c in SUITE if _distinguishable(c)]
    assert len(probed) >= 500
    passed = [c.id for c in probed if _verdict(c, probe) == "pass"]
    assert passed == [], f"{len(passed)} cases accept {name} outputs: {passed[:10]}"


@pytest.mark.parametrize("sign", [1, -1], ids=["above", "below"])
def test_n_plus_one_ulps_off_fail_every_element(sign: int) -> None:
    """Elementwise: in an `N ulp` output (N = 0 for the bit-for-bit classes) every finite
    element moved N + 1 ulps from the golden is rejected."""
    from conformance.tolerance import compare

    accepted: Counter[str] = Counter()
    elements = 0
    for case in SUITE:
        g_all = golden(case.id)
        for o in _float_outputs(case):
            n = allowed_ulps(o.tolerance)
            if n is None:
                continue
            g = g_all[o.name]
            moved = ulps_off(g, n + 1, sign)
            finite = np.isfinite(g.astype(np.float64)) & np.isfinite(moved.astype(np.float64))
            probe = np.where(finite, moved, g)  # elsewhere the golden itself, which passes
            interval = () if bit_for_bit(o.tolerance) else (g_all[f"{o.name}.lo"], g_all[f"{o.name}.hi"])
            verdict = compare(probe, g, o.tolerance, *interval)
            elements += int(finite.sum())
            if verdict.mismatches != int(finite.sum()):
                accepted[case.id] += int(finite.sum()) - verdict.mismatches
    assert elements >= 20_000
    assert not accepted, dict(accepted.most_common(10))


def probe_counts() -> dict[str, Any]:
    """The numbers for a report: per probe, cases where it is distinguishable and cases it
    fails; per interval class, the elements of non-zero golden that accept each change."""
    out: dict[str, Any] = {}
    probes = {"zeros": zeros, "negated": negated, "halved": halved}
    for name, fn in probes.items():
        probed = [c for c in SUITE if _distinguishable(c)]
        failed = sum(_verdict(c, lambda g, o, fn=fn: fn(g) if is_float(g.dtype) else g) != "pass" for c in probed)
        out[name] = (len(probed), failed)
    per_element: Counter[str] = Counter()
    for case in SUITE:
        g_all = golden(case.id)
        for o in _float_outputs(case):
            if bit_for_bit(o.tolerance):
                continue
            g = g_all[o.name]
            nonzero = np.isfinite(g.astype(np.float64)) & (g.astype(np.float64) != 0)
            per_element["elements"] += int(nonzero.sum())
            for name, fn in probes.items():
                v = fn(g).astype(np.float64)
                inside = (v >= g_all[f"{o.name}.lo"]) & (v <= g_all[f"{o.name}.hi"]) & nonzero
                per_element[f"{name} accepted"] += int(inside.sum())
    out["interval elements"] = dict(per_element)
    return out
