"""What an implementation reports about an invalid program: diagnostics with a rule ID and,
since adapter protocol 2, the line (and column) they point at.

A validation case holds one violation at a known line and is judged by ID *and* line
(`conformance.runner.judge_reject`), so adapters must say where each error is. They may do it
in any of these forms, all read here:

- text, as `ktir validate` prints it: `FILE:LINE:COL: error[ID]: message` (a bare `error[ID]`
  without the location prefix is read too, as an error without a line: protocol 1);
- one JSON object per line of output, `{"id": ..., "line": ..., "column": ..., "severity": ...}`
  (`col` is read as `column`; `severity` defaults to `error`);
- for Python adapters and the persistent protocol: `Reported` objects, dicts of those keys,
  objects with `id`/`line`/`column`/`severity` attributes (such as ktir's own Diagnostic),
  or bare ID strings (protocol 1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

PROTOCOL = 2  # 1: IDs only; 2: IDs with lines


class Reported(BaseModel):
    """One diagnostic an implementation reports."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    id: str = Field(description="the rule ID (`ktdp.load.C1`, `ssa.undefined`, `syntax`)")
    line: int | None = Field(None, description="1-based line of the program the diagnostic points at; required "
                             "for validation cases (protocol 2)")
    column: int | None = Field(None, validation_alias=AliasChoices("column", "col"),
                               description="1-based column (informative; `col` is accepted too)")
    severity: Literal["error", "warning", "note", "remark"] = Field(
        "error", description="only errors count in verdicts; warnings, notes and remarks are ignored")
    message: str = Field("", description="the human-readable text (not judged)")

    def where(self) -> str:
        return f"error[{self.id}] at line {self.line}" if self.line is not None else f"error[{self.id}] without a line"


# `FILE:LINE:COL: error[ID]` (the file may hold colons on Windows-like paths: the last three fields)
_LOCATED = re.compile(r"^(?:.*?):(\d+):(\d+): (error|warning|note|remark)\[([^\]\s]+)\]:?\s*(.*)$")
_BARE = re.compile(r"\berror\[([^\]\s]+)\]")


def from_text(text: str) -> list[Reported]:
    """Every diagnostic in an adapter's output (text lines and JSON lines)."""
    out: list[Reported] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("{"):
            try:
                obj = json.loads(stripped)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict) and "id" in obj:
                found = coerce(obj)
                if found is not None:
                    out.append(found)
                continue
        m = _LOCATED.match(stripped)
        if m:
            out.append(Reported(id=m.group(4), line=int(m.group(1)), column=int(m.group(2)), severity=m.group(3),  # type: ignore[arg-type]
                                message=m.group(5)))
            continue
        out += [Reported(id=i) for i in _BARE.findall(line)]
    return out


def coerce(item: Any) -> Reported | None:
    """One reported diagnostic from any of the accepted shapes; None for one that is not."""
    if isinstance(item, Reported):
        return item
    if isinstance(item, str):
        return Reported(id=item)
    if not isinstance(item, dict):
        fields = ("id", "line", "column", "severity", "message")
        item = {k: getattr(item, k) for k in fields if getattr(item, k, None) is not None}
    try:
        return Reported.model_validate(item)
    except ValidationError:
        return None


def coerce_all(items: Iterable[Any]) -> list[Reported]:
    return [r for r in (coerce(i) for i in items) if r is not None]


def errors(items: Iterable[Any]) -> list[Reported]:
    """The errors among `items` (warnings, notes and remarks never decide a verdict)."""
    return [r for r in coerce_all(items) if r.severity == "error"]


class Request(BaseModel):
    """One request of the persistent protocol (a JSON line the runner writes)."""

    id: int = Field(description="echoed back in the response")
    protocol: int = Field(PROTOCOL, description="2: report a `line` with every diagnostic")
    mode: Literal["check", "run"]
    ktir: str = Field(description="path of the program")
    inputs: str | None = Field(None, description="for `run`: path of the .npz of inputs")
    outputs: str | None = Field(None, description="for `run`: path of the .npz to write")
    function: str | None = Field(None, description="the function to run (null: the only one)")


class Response(BaseModel):
    """One response of the persistent protocol (a JSON line the implementation writes)."""

    model_config = ConfigDict(extra="allow")

    id: int
    status: int = Field(description="0 done, 1 rejected, 77 not supported, anything else an error")
    diagnostics: list[Reported | str] = Field(default_factory=list, description="for status 1: the diagnostics, as "
                                              "objects with a line (protocol 2) or bare IDs (protocol 1)")
    message: str = ""


def json_schema() -> dict[str, Any]:
    """The JSON Schema of what an adapter writes: a diagnostic line and a persistent-protocol
    request and response."""
    from pydantic.json_schema import models_json_schema

    _, schema = models_json_schema([(Reported, "validation"), (Request, "validation"), (Response, "validation")],
                                   title="KTIR conformance adapter protocol",
                                   description=f"Protocol {PROTOCOL}: diagnostics carry the line they point at. A "
                                               "diagnostic is written as one JSON line (Reported) or as text "
                                               "`FILE:LINE:COL: error[ID]: message`.")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
