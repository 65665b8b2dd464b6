"""Run cases against an adapter: one case at a time per worker process, each under a timeout."""

from __future__ import annotations

import fnmatch
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.capability import Capabilities, Waivers, everything
from conformance.model import SUITE_ROOT, Case, load_suite, suite_hash, suite_version
from conformance.reported import Reported
from conformance.results import CaseResult, Mismatch, Results, SuiteId, conformant, ok, verdicts
from ktir.fileio import confined_file

if TYPE_CHECKING:  # the adapters bring in the interpreter (numpy, ml_dtypes, scipy): `ktir conformance list` needs none
    from conformance.adapters import Adapter


@dataclass(frozen=True)
class AdapterSpec:
    """What names the adapter, picklable so that worker processes can build their own."""

    adapter: str = "reference"
    command: str | None = None
    protocol: str = "per-case"  # for `command`: "per-case" or "persistent"

    @property
    def label(self) -> str:
        if not self.command:
            return self.adapter
        return f"cmd{' (persistent)' if self.protocol == 'persistent' else ''}: {self.command}"


class CaseTimeout(Exception):
    pass


def select(cases: list[Case], levels: list[str] | None = None, pattern: str | None = None) -> list[Case]:
    """Cases of the given levels whose id matches `pattern` (a substring or a glob)."""
    out = [c for c in cases if not levels or c.level in levels]
    if pattern:
        glob = any(ch in pattern for ch in "*?[")
        out = [c for c in out if (fnmatch.fnmatch(c.id, pattern) if glob else pattern in c.id)]
    return out


def _fixpoint_problem(printed: str, filename: str) -> str | None:
    """None when `printed` re-parses and prints to itself; otherwise what went wrong."""
    from ktir.syntax.diagnostics import KtirError
    from ktir.syntax.parser import parse
    from ktir.syntax.printer import print_module

    try:
        again = print_module(parse(printed, filename))
    except KtirError as e:
        return f"the printed program does not parse: {e.diagnostics[0].message if e.diagnostics else e}"
    return None if again == printed else "printing is not a fixpoint (print(parse(print(p))) != print(p))"


def judge(case: Case, adapter: Adapter, root: Path) -> tuple[str, str, Mismatch | None]:
    """Run one case; return (status, message, worst mismatch). Exceptions propagate."""
    from conformance.tolerance import GOLDEN_FORMAT, compare
    from conformance.values import case_inputs, read_npz

    # confined_file: a case file or golden that is a link out of the suite (to a device, say)
    # is refused, not read; the ValueError becomes the case's error
    source = confined_file(root, case.file).read_text(encoding="utf-8")
    if case.expect in ("accept", "reject"):
        checked = adapter.check(source, case.file)
        if case.expect == "reject":
            status, message = judge_reject(case, checked.accepted, checked.errors())
            return status, message, None
        if not checked.accepted:
            return "fail", f"rejected a valid program: {', '.join(r.id for r in checked.errors())}", None
        if checked.printed is not None:
            problem = _fixpoint_problem(checked.printed, case.file)
            if problem:
                return "fail", problem, None
        return "pass", "", None
    inputs = case_inputs(case, root)
    outputs = adapter.run(source, case.file, case.function, inputs)
    if case.golden is None:
        return "error", "the case has no golden file", None
    golden = read_npz(confined_file(root, case.golden))
    if int(golden.get("__format__", 1)) != GOLDEN_FORMAT:
        return "error", f"{case.golden}: golden format {int(golden.get('__format__', 1))}, this runner reads {GOLDEN_FORMAT}", None
    worst: tuple[float, Mismatch, str] | None = None
    for spec in case.outputs:
        if spec.name not in outputs:
            return "fail", f"no output {spec.name}", None
        verdict = compare(outputs[spec.name], golden[spec.name], spec.tolerance, golden.get(f"{spec.name}.lo"),
                          golden.get(f"{spec.name}.hi"))
        if not verdict.ok:
            m = Mismatch(output=spec.name, index=list(verdict.worst_index) if verdict.worst_index else None,
                         got=verdict.got, expected=verdict.want, error=verdict.worst_error,
                         mismatches=verdict.mismatches, tolerance=spec.tolerance)
            if worst is None or verdict.worst_error > worst[0]:
                worst = (verdict.worst_error, m, f"{spec.name}: {verdict.message}")
    if worst is not None:
        return "fail", worst[2], worst[1]
    return "pass", "", None


def judge_reject(case: Case, accepted: bool, errors: list[Reported]) -> tuple[str, str]:
    """The verdict on a reject case, from the errors the implementation reported.

    A case with a `line` (every validation case) holds exactly one violation there: it passes
    only if the implementation reports error[`diagnostic`] at that line and no error
    anywhere else (nor another ID at that line). Warnings, notes and remarks are ignored
    wherever they are, and so is the column. A case without a line (a syntax case: where a
    parser notices malformed text depends on the parsing method) passes when the ID is among
    the errors."""
    want = case.diagnostic
    if accepted:
        return "fail", f"accepted an invalid program (expected error[{want}]{_at(case.line)})"
    found = ", ".join(dict.fromkeys(r.where() for r in errors)) or "no error ID"
    if case.line is None:
        if any(r.id == want for r in errors):
            return "pass", ""
        return "fail", f"rejected with {found}, expected error[{want}]"
    hits = [r for r in errors if r.id == want and r.line == case.line]
    if not hits:
        if any(r.id == want and r.line is None for r in errors):
            return "fail", (f"error[{want}] reported without a line: validation cases are judged by ID and line "
                            "(adapter protocol 2, see docs/guides/conformance.md)")
        return "fail", f"rejected with {found}, expected error[{want}] at line {case.line}"
    extra = [r for r in errors if not (r.id == want and r.line == case.line)]
    if extra:
        others = ", ".join(dict.fromkeys(r.where() for r in extra))
        return "fail", f"also reported {others}: the program's one violation is error[{want}] at line {case.line}"
    return "pass", ""


def _at(line: int | None) -> str:
    return "" if line is None else f" at line {line}"


def _on_alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


def run_case(case: Case, adapter: Adapter, root: Path, timeout: float | None) -> CaseResult:
    """One case, never raising: errors and timeouts become statuses."""
    from conformance.adapters import NotSupported

    start = time.perf_counter()
    mismatch = None
    use_alarm = timeout is not None and timeout > 0
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(timeout or 0))
    try:
        status, message, mismatch = judge(case, adapter, root)
    except (CaseTimeout, TimeoutError):
        status, message = "timeout", f"did not finish in {timeout} s"
    except NotSupported as e:
        status, message = "not_supported", str(e) or "not supported"
    except Exception as e:  # noqa: BLE001 - an adapter's failure is a result, not a crash
        status, message = "error", f"{type(e).__name__}: {_first_line(e)}"
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return _result(case, status, message, time.perf_counter() - start, mismatch)


def _result(case: Case, status: str, message: str, seconds: float, mismatch: Mismatch | None = None) -> CaseResult:
    return CaseResult(id=case.id, level=case.level, status=status, message=message,  # type: ignore[arg-type]
                      duration_s=round(seconds, 4), dtypes=case.dtypes, ops=case.ops, file=case.file, mismatch=mismatch)


def _first_line(e: BaseException) -> str:
    text = str(getattr(e, "message", None) or e).strip()
    return text.splitlines()[0] if text else ""


_WORKER: dict[str, Any] = {}


def _init_worker(spec: AdapterSpec, timeout: float | None, root: Path) -> None:
    from conformance.adapters import load_adapter

    _WORKER["adapter"] = load_adapter(spec.adapter, spec.command, timeout, spec.protocol)
    _WORKER["timeout"] = timeout
    _WORKER["root"] = root


def _work(case: Case) -> CaseResult:
    return run_case(case, _WORKER["adapter"], _WORKER["root"], _WORKER["timeout"])


def iter_results(cases: list[Case], spec: AdapterSpec, jobs: int = 1, timeout: float | None = None,
                 root: Path = SUITE_ROOT) -> Iterator[CaseResult]:
    """Results as cases finish (in completion order). Raises AdapterError if the adapter
    cannot be loaded."""
    from conformance.adapters import load_adapter

    adapter = load_adapter(spec.adapter, spec.command, timeout, spec.protocol)  # fail fast, in this process
    # no more workers than cases: a pool forks all of its workers up front (`-j 1000` for one
    # case started a thousand processes)
    jobs = min(jobs, len(cases))
    if jobs <= 1:
        try:
            for case in cases:
                yield run_case(case, adapter, root, timeout)
        finally:
            _close(adapter)
        return
    _close(adapter)
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(spec, timeout, root)) as pool:
        futures = {pool.submit(_work, case): case for case in cases}
        for future in as_completed(futures):
            case = futures[future]
            try:
                yield future.result()
            except BrokenProcessPool:
                yield _result(case, "error", "the worker process died (the adapter crashed)", 0.0)


def _close(adapter: Any) -> None:
    close = getattr(adapter, "close", None)
    if callable(close):
        close()


def run_suite(cases: list[Case], spec: AdapterSpec, *, jobs: int = 1, timeout: float | None = None,
              capabilities: Capabilities | None = None, waivers: Waivers | None = None,
              optional_levels: set[str] | None = None, optional_dtypes: set[str] | None = None,
              selection: dict[str, str] | None = None, root: Path = SUITE_ROOT,
              on_result: Callable[[CaseResult], None] | None = None) -> Results:
    """Run `cases` and collect a Results (cases in suite order).

    Without `capabilities` the implementation is taken to claim everything, less the
    `optional_levels` and `optional_dtypes` given (which must be optional per the spec)."""
    # the reference adapter is this distribution's own implementation: its version is the suite's
    version = suite_version() if spec.adapter == "reference" and not spec.command else "unknown"
    caps = capabilities or everything(spec.label, version, frozenset(optional_levels or ()), frozenset(optional_dtypes or ()))
    reasons = waivers.reasons() if waivers is not None else {}
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    by_id: dict[str, CaseResult] = {}
    claimed = []
    for case in cases:
        why = caps.excluded(case)
        if why is None:
            claimed.append(case)
            continue
        by_id[case.id] = _result(case, "not_supported", f"not run: {why} in the capability file", 0.0).model_copy(
            update={"excused": "capability"})
        if on_result is not None:
            on_result(by_id[case.id])
    jobs = max(1, min(jobs, len(claimed)))  # what iter_results uses, and what the report says
    for result in iter_results(claimed, spec, jobs, timeout, root) if claimed else iter(()):
        reason = reasons.get(result.id)
        if reason is not None:
            result = result.model_copy(update={"waiver": reason, "excused": None if result.status == "pass" else "waiver"})
        by_id[result.id] = result
        if on_result is not None:
            on_result(result)
    ordered = [by_id[c.id] for c in cases]
    totals: dict[str, int] = dict(Counter(str(c.level) for c in load_suite(root)))
    levels = verdicts(ordered, caps, totals)
    return Results(suite=SuiteId(version=suite_version(), hash=suite_hash(root)), implementation=caps.implementation,
                   adapter=spec.label, capabilities=caps, waivers=list(waivers.waiver) if waivers else [],
                   started=started.isoformat(timespec="seconds"), duration_s=round(time.perf_counter() - t0, 3), jobs=jobs,
                   timeout_s=timeout, selection=selection or {}, passed=all(ok(c) for c in ordered),
                   conformant=conformant(levels), levels=levels, cases=ordered)
