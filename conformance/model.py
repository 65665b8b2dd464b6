"""The conformance manifest: pydantic models for the TOML files under `conformance/manifest/`.

One manifest file per level lists its cases. A case is a `.ktir` file plus what to do with
it (`expect`): `run` it on inputs and compare outputs with a golden `.npz`, `accept` it
(syntax and validity; printing must be a fixpoint), or `reject` it with a diagnostic ID.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from conformance.levels import LEVELS as LEVELS
from ktir.fileio import confined_file, confined_path, toml_loads

SCHEMA_VERSION = 1
Level = Literal["syntax", "validation", "core", "multi-tile", "collective", "full"]
Recipe = Literal["normal", "uniform", "int", "positive", "zeros", "fill", "arange", "permutation", "scalar", "npy"]
SUITE_ROOT = Path(__file__).resolve().parent


RelativePath = Annotated[str, AfterValidator(lambda v: confined_path(v, "the suite root"))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArgSpec(_Strict):
    """One kernel argument: an array placed in global memory, or a scalar."""

    name: str = Field(description="argument name without `%`")
    recipe: Recipe = Field(description="how the value is made: a seeded generator, a constant, or a stored .npy")
    dtype: str = Field("f32", description="KTIR element type of the array (f16, bf16, f32, f64, i1..i64, f8E4M3FN, f8E5M2)")
    shape: list[int] = Field(default_factory=list, description="array shape; empty for a scalar")
    seed: int = Field(0, description="seed of numpy's default_rng for the generator recipes")
    low: float = Field(-4.0, description="lower bound for `uniform`/`int`/`positive`")
    high: float = Field(4.0, description="upper bound (exclusive for `int`) for `uniform`/`int`/`positive`")
    value: float = Field(0.0, description="the value of `fill` and `scalar`")
    npy: RelativePath | None = Field(None, description="for `npy`: path of the .npy file, relative to the suite root")


class OutputSpec(_Strict):
    """One output array (an argument whose final memory contents are compared)."""

    name: str = Field(description="argument name of the array")
    tolerance: str = Field(
        description="tolerance class: `exact`, `correctly-rounded`, `N ulp`, `reduction`, `matmul` or `derived` "
                    "(spec/conformance.md); outside the first two the golden holds each element's accepted interval"
    )
    n: int = Field(1, description="for `reduction`: values combined per result; for `matmul`: K, products per result "
                                  "(informative: the accepted intervals in the golden already apply it)")


class Case(_Strict):
    """One conformance case."""

    id: str = Field(description="unique dotted name, starting with the level")
    level: Level = Field(description="the conformance level the case belongs to")
    file: RelativePath = Field(description="the .ktir file, relative to the suite root")
    expect: Literal["run", "accept", "reject"] = Field(description="run and compare; accept as valid; reject with `diagnostic`")
    function: str | None = Field(None, description="function to run (when the module has more than one)")
    diagnostic: str | None = Field(None, description="for `reject`: the diagnostic ID that must be reported (`syntax`, `ktdp.load.C1`)")
    line: int | None = Field(None, description="for `reject` with a line: the program's one violation is there; the error "
                             "must be reported at this line and no error elsewhere (spec/conformance.md)")
    column: int | None = Field(None, description="for `reject` with a line: the column where the violating op begins "
                               "(informative, not judged)")
    args: list[ArgSpec] = Field(default_factory=list, description="kernel arguments, in any order")
    outputs: list[OutputSpec] = Field(default_factory=list, description="compared outputs")
    golden: RelativePath | None = Field(
        None, description="for `run`: the golden .npz, relative to the suite root (format 2, key `__format__`: per output "
                          "NAME the exact result rounded once, and NAME.lo / NAME.hi, of the output's type, the accepted interval)")
    ops: list[str] = Field(default_factory=list, description="ops of the inventory the case uses")
    dtypes: list[str] = Field(default_factory=list, description="element types the case computes in")
    grid: list[int] = Field(default_factory=lambda: [1], description="the kernel's grid")
    description: str = Field("", description="what the case checks, in one line")


class Manifest(_Strict):
    """One manifest file: the cases of one level."""

    schema_version: Literal[1] = Field(1, description="version of this format")
    level: Level = Field(description="level of every case in the file")
    case: list[Case] = Field(default_factory=list, description="the cases")


class ManifestError(Exception):
    """A manifest that cannot be read; the message says which file and why."""


def load_manifest(path: Path) -> Manifest:
    try:
        data = toml_loads(path.read_text(encoding="utf-8"))
        return Manifest.model_validate(data)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ManifestError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise ManifestError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except RecursionError:
        raise ManifestError(f"{path}: not valid TOML: nested too deeply") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ManifestError(f"{path}: {where}: {first['msg']}") from None


def load_suite(root: Path = SUITE_ROOT) -> list[Case]:
    """Every case of the suite rooted at `root`, level by level."""
    cases: list[Case] = []
    for level in LEVELS:
        path = root / "manifest" / f"{level}.toml"
        if path.exists():
            cases.extend(load_manifest(path).case)
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise ManifestError(f"duplicate case id {c.id}")
        seen.add(c.id)
    return cases


def suite_version() -> str:
    """The suite's release: the version of the `ktir` distribution that carries it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ktir")
    except PackageNotFoundError:
        return "unknown"


def suite_hash(root: Path = SUITE_ROOT) -> str:
    """sha256 over every manifest, case, golden and stored input (path and bytes), so that two
    runs can tell whether they ran the same suite."""
    import hashlib

    h = hashlib.sha256()
    for sub in ("manifest", "cases", "goldens", "inputs"):
        base = root / sub
        for path in sorted(base.rglob("*")) if base.exists() else []:
            if path.suffix not in (".toml", ".ktir", ".npz", ".npy"):
                continue
            name = str(path.relative_to(root))
            try:
                confined_file(root, name)
            except ValueError:  # a link out of the suite (a device, a pipe): its target's name, not its bytes
                h.update(name.encode() + b"\0->" + os.readlink(path).encode() + b"\0")
                continue
            if path.is_file():
                h.update(name.encode() + b"\0")
                h.update(path.read_bytes())
    return h.hexdigest()
