"""The results of a run: pydantic models (published as JSON Schema) and the exit rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from conformance.model import LEVELS

Status = Literal["pass", "fail", "error", "not_supported", "timeout"]
STATUSES: tuple[str, ...] = ("pass", "fail", "error", "not_supported", "timeout")
RESULTS_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Mismatch(_Strict):
    """Where a failing case is furthest from its golden."""

    output: str = Field(description="name of the output array")
    index: list[int] | None = Field(None, description="coordinates of the worst element")
    got: float | None = Field(None, description="the implementation's value there")
    expected: float | None = Field(None, description="the golden value there")
    error: float = Field(description="the error there (in units of the allowed error for bounded classes)")
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
    mismatch: Mismatch | None = Field(None, description="for `fail` on a compared output: the worst element")


class LevelSummary(_Strict):
    """Counts of one level."""

    level: str = Field(description="the level")
    optional: bool = Field(description="whether the vendor declared this level optional")
    total: int = Field(description="cases run at this level")
    counts: dict[str, int] = Field(description="cases per status")


class Results(_Strict):
    """A saved conformance run (`ktir conformance run --report results.json`)."""

    schema_version: Literal[1] = Field(1, description="version of this format")
    adapter: str = Field(description="the adapter that was tested")
    started: str = Field(description="UTC start time, ISO 8601")
    duration_s: float = Field(description="wall-clock seconds of the whole run")
    jobs: int = Field(description="worker processes used")
    timeout_s: float | None = Field(description="per-case timeout in seconds")
    optional_levels: list[str] = Field(default_factory=list, description="levels the vendor declared optional")
    optional_dtypes: list[str] = Field(default_factory=list, description="element types the vendor declared optional (f64, f8E4M3FN...)")
    selection: dict[str, str] = Field(default_factory=dict, description="filters used: level, -k pattern")
    conformant: bool = Field(description="true when every case passed, or is not_supported at an optional level or with an optional element type")
    summary: list[LevelSummary] = Field(description="counts per level")
    cases: list[CaseResult] = Field(description="one entry per case, in suite order")


def excused(case: CaseResult, optional_levels: set[str], optional_dtypes: set[str]) -> bool:
    """A not_supported case that does not count against conformance."""
    return case.status == "not_supported" and (case.level in optional_levels or bool(optional_dtypes & set(case.dtypes)))


def conformant(cases: list[CaseResult], optional_levels: set[str], optional_dtypes: set[str] | None = None) -> bool:
    return all(c.status == "pass" or excused(c, optional_levels, optional_dtypes or set()) for c in cases)


def summarise(cases: list[CaseResult], optional_levels: set[str]) -> list[LevelSummary]:
    out = []
    for level in LEVELS:
        mine = [c for c in cases if c.level == level]
        if mine:
            counts = {s: sum(1 for c in mine if c.status == s) for s in STATUSES}
            out.append(LevelSummary(level=level, optional=level in optional_levels, total=len(mine), counts=counts))
    return out


def json_schema() -> dict[str, object]:
    schema = Results.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://ktir.dev/schemas/conformance-results-v1.json"
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
    except ValidationError as e:
        first = e.errors()[0]
        raise ResultsError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
