"""The results of a run: pydantic models (published as JSON Schema) and the exit rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator

from conformance.capability import Capabilities, Implementation, Waiver
from conformance.model import LEVELS

Status = Literal["pass", "fail", "error", "not_supported", "timeout"]
STATUSES: tuple[str, ...] = ("pass", "fail", "error", "not_supported", "timeout")
RESULTS_SCHEMA_VERSION = 2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# infinities and NaN are written as the strings "Infinity", "-Infinity", "NaN" (JSON has no such numbers)
Number = Annotated[float, WithJsonSchema({"anyOf": [{"type": "number"}, {"enum": ["Infinity", "-Infinity", "NaN"]}]})]


class Mismatch(_Strict):
    """Where a failing case is furthest from its golden."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    output: str = Field(description="name of the output array")
    index: list[int] | None = Field(None, description="coordinates of the worst element")
    got: Number | None = Field(None, description="the implementation's value there")
    expected: Number | None = Field(None, description="the golden value there")
    error: Number = Field(description="the error there (in units of the allowed error for bounded classes)")
    mismatches: int = Field(description="number of elements outside the tolerance")
    tolerance: str = Field(description="the tolerance class applied")


class CaseResult(_Strict):
    """The outcome of one case."""

    id: str = Field(description="case id")
    level: str = Field(description="case level")
    status: Status = Field(description="pass, fail, error, not_supported or timeout")
    message: str = Field("", description="why it did not pass, in one line")
    duration_s: float = Field(description="wall-clock seconds spent on the case")
    dtypes: list[str] = Field(default_factory=list, description="element types of the case's arrays")
    ops: list[str] = Field(default_factory=list, description="ops the case uses")
    file: str = Field("", description="the case's .ktir file, relative to the suite root")
    mismatch: Mismatch | None = Field(None, description="for `fail` on a compared output: the worst element")
    excused: Literal["capability", "waiver"] | None = Field(
        None, description="why a case that did not pass does not count: left out by the capability file (not run), or waived")
    waiver: str | None = Field(None, description="the waiver's reason, when the case is waived")


Verdict = Literal["certified", "not certified", "not attempted"]


class LevelVerdict(_Strict):
    """The verdict and the counts of one level."""

    level: str = Field(description="the level")
    verdict: Verdict = Field(description="certified, not certified or not attempted")
    why: str = Field("", description="for anything but certified: the reason, in one line")
    mandatory: bool = Field(description="whether the declared kinds make this level mandatory")
    claimed: bool = Field(description="whether the capability file claims this level")
    total: int = Field(description="cases of this level in the suite")
    run: int = Field(description="cases of this level selected for the run")
    counts: dict[str, int] = Field(description="selected cases per status")
    excused: int = Field(0, description="cases left out by the capability file (counted as not_supported)")
    waived: int = Field(0, description="cases that did not pass but are waived")

    @field_validator("counts")
    @classmethod
    def _every_status(cls, counts: dict[str, int]) -> dict[str, int]:
        # the reports read a count for every status (a hand-edited file may lack one)
        missing = [s for s in STATUSES if s not in counts]
        if missing:
            raise ValueError(f"no count for {', '.join(missing)}")
        return counts


class SuiteId(_Strict):
    """Which suite ran."""

    version: str = Field(description="the suite's release (the ktir distribution version)")
    hash: str = Field(description="sha256 over the suite's manifests, cases, goldens and stored inputs")


class Results(_Strict):
    """A saved conformance run (`ktir conformance run --report results.json`)."""

    schema_version: Literal[2] = Field(2, description="version of this format")
    suite: SuiteId = Field(description="the suite's version and content hash")
    implementation: Implementation = Field(description="the implementation's name and version (from the capability file)")
    adapter: str = Field(description="the adapter that was tested")
    capabilities: Capabilities = Field(description="the declaration the run used")
    waivers: list[Waiver] = Field(default_factory=list, description="the waivers the run used")
    started: str = Field(description="UTC start time, ISO 8601")
    duration_s: float = Field(description="wall-clock seconds of the whole run")
    jobs: int = Field(description="worker processes used")
    timeout_s: float | None = Field(description="per-case timeout in seconds")
    selection: dict[str, str] = Field(default_factory=dict, description="filters used: level, -k pattern")
    passed: bool = Field(description="every selected case passed or is excused (the exit status of `run`)")
    conformant: bool = Field(description="every mandatory and every claimed level is certified")
    levels: list[LevelVerdict] = Field(description="one verdict per level, in level order")
    cases: list[CaseResult] = Field(description="one entry per selected case, in suite order")


def ok(case: CaseResult) -> bool:
    """Passed, or does not count (left out by the capability file, or waived)."""
    return case.status == "pass" or case.excused is not None


def verdicts(cases: list[CaseResult], capabilities: Capabilities, totals: dict[str, int]) -> list[LevelVerdict]:
    """One verdict per level of the suite: `totals` is the suite's number of cases per level."""
    mandatory = capabilities.mandatory_levels()
    out = []
    for level in LEVELS:
        mine = [c for c in cases if c.level == level]
        counts = {s: sum(1 for c in mine if c.status == s) for s in STATUSES}
        excused = sum(1 for c in mine if c.excused == "capability")
        waived = sum(1 for c in mine if c.excused == "waiver")
        total = totals.get(level, 0)
        claimed = level in capabilities.levels
        bad = [c for c in mine if not ok(c)]
        verdict: Verdict
        if not claimed:
            verdict, why = "not attempted", "not claimed"
        elif not mine:
            verdict, why = "not attempted", "no case selected"
        elif bad:
            verdict, why = "not certified", f"{len(bad)} of {len(mine)} cases did not pass ({bad[0].id}: {bad[0].status})"
        elif len(mine) < total:
            verdict, why = "not certified", f"partial run: {len(mine)} of {total} cases selected"
        elif excused == len(mine):
            verdict, why = "not certified", "every case left out by the capability file"
        else:
            verdict, why = "certified", ""
        out.append(LevelVerdict(level=level, verdict=verdict, why=why, mandatory=level in mandatory, claimed=claimed,
                                total=total, run=len(mine), counts=counts, excused=excused, waived=waived))
    return out


def conformant(levels: list[LevelVerdict]) -> bool:
    """Every mandatory level and every claimed level certified."""
    return all(v.verdict == "certified" for v in levels if v.mandatory or v.claimed)


def json_schema() -> dict[str, object]:
    schema = Results.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://ktir.dev/schemas/conformance-results-v2.json"
    return schema


class ResultsError(Exception):
    """A results file that cannot be read."""


def load_results(path: Path) -> Results:
    try:
        return Results.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except RecursionError:
        raise ResultsError(f"{path}: not a results file (nested too deeply)") from None
    except ValidationError as e:
        first = e.errors()[0]
        raise ResultsError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
