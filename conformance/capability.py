"""What an implementation declares (a capability file) and what a reviewer excuses (a waivers file).

The capability file names the implementation, the kinds of implementation it is, the levels
it claims, and the optional element types and ops it supports. A case outside the
declaration is not run: it is `not_supported`, excused. A `not_supported` the implementation
reports for a case inside its declaration is not excused. Which levels, element types and ops
may be left out is fixed by spec/conformance.md, not by the vendor: every kind has mandatory
levels, and a file that leaves one out does not validate.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from conformance.levels import OPTIONAL_DTYPES as OPTIONAL_DTYPES
from conformance.levels import OPTIONAL_LEVELS as OPTIONAL_LEVELS
from conformance.model import LEVELS, Case, Level
from ktir.dialects.names import Ktdp
from ktir.fileio import toml_loads

CAPABILITIES_SCHEMA_VERSION = 1
Kind = Literal["parser", "verifier", "executor"]
OptionalDtype = Literal["f64", "f8E4M3FN", "f8E5M2"]
OptionalOp = Literal["ktdp.inter_tile_gather", "ktdp.inter_tile_scatter", "ktdp.inter_tile_reduce_scatter",
                     "ktdp.inter_tile_all_to_all"]

# spec/conformance.md#certification: the levels each kind must pass, the levels it may claim
MANDATORY: dict[str, tuple[str, ...]] = {
    "parser": ("syntax",),
    "verifier": ("syntax", "validation"),
    "executor": ("core", "multi-tile", "full"),
}
OPTIONAL_OPS: tuple[str, ...] = (Ktdp.inter_tile_gather, Ktdp.inter_tile_scatter, Ktdp.inter_tile_reduce_scatter,
                                 Ktdp.inter_tile_all_to_all)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Implementation(_Strict):
    """Who is being tested."""

    name: str = Field(min_length=1, description="the implementation's name (`acme-ktir`)")
    version: str = Field(min_length=1, description="its version (a release number or a commit)")


class Capabilities(_Strict):
    """A capability file: what an implementation declares it supports."""

    schema_version: Literal[1] = Field(1, description="version of this format")
    implementation: Implementation = Field(description="the implementation's name and version")
    kinds: list[Kind] = Field(min_length=1, description="what it is: `parser`, `verifier`, `executor` (one or more)")
    levels: list[Level] = Field(description="the levels claimed; must include every mandatory level of each kind")
    optional_dtypes: list[OptionalDtype] = Field(
        default_factory=list, description="the optional element types supported (f64, f8E4M3FN, f8E5M2); cases using another are not run")
    optional_ops: list[OptionalOp] = Field(
        default_factory=list, description="the optional collective ops supported; cases using another are not run")

    @model_validator(mode="after")
    def _levels_fit_the_kinds(self) -> Capabilities:
        mandatory = self.mandatory_levels()
        missing = [lv for lv in LEVELS if lv in mandatory and lv not in self.levels]
        if missing:
            raise ValueError(f"levels: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} mandatory for "
                             f"{' + '.join(self.kinds)} and may not be left out (spec/conformance.md#certification)")
        allowed = mandatory | {lv for k in self.kinds for lv in OPTIONAL_LEVELS[k]}
        extra = [lv for lv in self.levels if lv not in allowed]
        if extra:
            raise ValueError(f"levels: {', '.join(extra)} cannot be claimed by {' + '.join(self.kinds)}")
        return self

    def mandatory_levels(self) -> set[str]:
        return {lv for k in self.kinds for lv in MANDATORY[k]}

    def excluded(self, case: Case) -> str | None:
        """Why the declaration leaves `case` out, or None when the case is claimed."""
        if case.level not in self.levels:
            return f"level {case.level} not claimed"
        dtypes = [d for d in case.dtypes if d in OPTIONAL_DTYPES and d not in self.optional_dtypes]
        if dtypes:
            return f"optional element type {', '.join(dtypes)} not declared"
        ops = [op for op in case.ops if op in OPTIONAL_OPS and op not in self.optional_ops]
        if ops:
            return f"optional op {', '.join(ops)} not declared"
        return None


def everything(name: str = "unnamed", version: str = "unknown", without_levels: set[str] | frozenset[str] = frozenset(),
               without_dtypes: set[str] | frozenset[str] = frozenset()) -> Capabilities:
    """The declaration used without a capability file: every kind, level, type and op,
    less the optional levels and types given (`--optional`, `--optional-dtype`)."""
    return Capabilities(implementation=Implementation(name=name, version=version), kinds=["parser", "verifier", "executor"],
                        levels=[lv for lv in LEVELS if lv not in without_levels],  # type: ignore[misc]
                        optional_dtypes=[d for d in OPTIONAL_DTYPES if d not in without_dtypes],  # type: ignore[misc]
                        optional_ops=list(OPTIONAL_OPS))  # type: ignore[arg-type]


class Waiver(_Strict):
    """One case excused after review."""

    case: str = Field(min_length=1, description="the case id")
    reason: str = Field(min_length=1, description="why the failure is accepted (a bug number, a documented deviation)")
    reviewed_by: str = Field("", description="who reviewed the waiver")


class Waivers(_Strict):
    """A waivers file: reviewed exceptions, one reason per case."""

    schema_version: Literal[1] = Field(1, description="version of this format")
    waiver: list[Waiver] = Field(default_factory=list, description="the waived cases")

    @model_validator(mode="after")
    def _one_per_case(self) -> Waivers:
        seen: set[str] = set()
        for w in self.waiver:
            if w.case in seen:
                raise ValueError(f"case {w.case} is waived twice")
            seen.add(w.case)
        return self

    def reasons(self) -> dict[str, str]:
        return {w.case: w.reason for w in self.waiver}


class DeclarationError(Exception):
    """A capability or waivers file that cannot be used; the message says which and why."""


def _read(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else toml_loads(text)
    except OSError as e:
        raise DeclarationError(f"cannot read {path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise DeclarationError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise DeclarationError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except RecursionError:
        raise DeclarationError(f"{path}: nested too deeply") from None


def _first_error(path: Path, e: ValidationError) -> DeclarationError:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return DeclarationError(f"{path}: {where + ': ' if where else ''}{first['msg']}")


def load_capabilities(path: Path) -> Capabilities:
    try:
        return Capabilities.model_validate(_read(path))
    except ValidationError as e:
        raise _first_error(path, e) from None
    except RecursionError:
        raise DeclarationError(f"{path}: nested too deeply") from None


def load_waivers(path: Path, cases: list[Case] | None = None) -> Waivers:
    """The waivers of `path`; with `cases`, every waived id must be one of them."""
    try:
        waivers = Waivers.model_validate(_read(path))
    except ValidationError as e:
        raise _first_error(path, e) from None
    except RecursionError:
        raise DeclarationError(f"{path}: nested too deeply") from None
    if cases is not None:
        known = {c.id for c in cases}
        unknown = [w.case for w in waivers.waiver if w.case not in known]
        if unknown:
            raise DeclarationError(f"{path}: waiver for unknown case {unknown[0]}")
    return waivers


def json_schemas() -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for name, model in (("capabilities", Capabilities), ("waivers", Waivers)):
        schema = model.model_json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"https://ktir.dev/schemas/conformance-{name}-v1.json"
        out[name] = schema
    return out
