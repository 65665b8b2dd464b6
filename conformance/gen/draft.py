"""A case before it is written: its kernel text, arguments and compared outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.gen.kernel import Arr

if TYPE_CHECKING:
    from conformance.oracle.expect import Expected

# A case's oracle: from the arguments (arrays by name, outputs holding their initial contents)
# to each compared output's expected contents. Written from what the case's kernel is meant
# to compute, never by running the kernel.
Model = Callable[[Mapping[str, Any]], "dict[str, Expected]"]


class DraftError(Exception):
    """A generated case that does not parse, verify or run as its generator meant."""


@dataclass
class Draft:
    id: str
    level: str
    text: str
    expect: str = "run"
    description: str = ""
    arrays: list[Arr] = field(default_factory=list)  # every array argument (inputs and outputs)
    scalars: dict[str, Any] = field(default_factory=dict)  # scalar arguments: name -> (dtype, value)
    outputs: list[tuple[str, str, int]] = field(default_factory=list)  # (name, tolerance, n)
    function: str | None = None
    diagnostic: str | None = None
    line: int | None = None  # for a validation case: where its one violation is
    column: int | None = None
    grid: list[int] = field(default_factory=lambda: [1])
    file_key: str | None = None  # cases sharing one program (validation IDs) share this file name
    npy: dict[str, Any] = field(default_factory=dict)  # stored inputs: path under the suite root -> array
    model: Model | None = None  # executing cases: the oracle of its outputs


def out(arr: Arr) -> Arr:
    """An output array: initialised to a sentinel so that a missing store shows."""
    return Arr(arr.name, arr.shape, arr.dtype, {"recipe": "fill", "value": 0 if arr.dtype.startswith("i") else -7.0})


def run_draft(case_id: str, level: str, text: str, inputs: list[Arr], outputs: list[Arr], tolerance: str | list[str],
              description: str, n: int = 1, **kw: Any) -> Draft:
    tols = tolerance if isinstance(tolerance, list) else [tolerance] * len(outputs)
    return Draft(id=case_id, level=level, text=text, description=description,
                 arrays=[*(Arr(f"{a.name}_ptr", a.shape, a.dtype, a.recipe) for a in inputs),
                         *(out(Arr(f"{a.name}_ptr", a.shape, a.dtype)) for a in outputs)],
                 outputs=[(f"{a.name}_ptr", t, n) for a, t in zip(outputs, tols, strict=True)], **kw)
