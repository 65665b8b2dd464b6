"""Executed examples for the op pages, taken from the conformance suite.

For each op, the smallest `run` case of the suite that uses it (preferring a case named after
the op) becomes a ```` ```{.ktir .run} ```` block on the op's page, followed by a
```` ```{.python .ktir-expected} ```` block that spells out every input value and the output
values. The outputs are those of the reference interpreter on those inputs, computed when the
page is generated; the docs test runs every such block again and compares exactly, and the
page says whether they equal the case's golden file.

The conformance suite is read through its public API (the package `conformance`: the suite,
its case inputs and goldens), like the status table's providers.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ktir.dialects.names import Arith, Builtin, Func, Ktdp

# element types spelled in the expected block: numpy name or ml_dtypes name
_DTYPE_SPELLING = {
    "bool": "np.bool_", "int8": "np.int8", "int16": "np.int16", "int32": "np.int32", "int64": "np.int64",
    "uint8": "np.uint8", "float16": "np.float16", "float32": "np.float32", "float64": "np.float64",
    "bfloat16": "ml_dtypes.bfloat16", "float8_e4m3fn": "ml_dtypes.float8_e4m3fn", "float8_e5m2": "ml_dtypes.float8_e5m2",
}
_LARGEST = 4096  # elements shown at most (inputs and outputs together)


@dataclass(frozen=True)
class Example:
    """One executed example: the case it comes from, its kernel and its values."""

    case_id: str
    description: str
    kernel: str
    inputs: dict[str, Any]
    expected: dict[str, np.ndarray]
    golden_matches: bool

    def markdown(self) -> str:
        lines = [
            f"From conformance case `{self.case_id}` ({self.description}). The inputs and outputs below are"
            " the exact values of a run of the reference interpreter"
            + (", equal to the case's golden file." if self.golden_matches else
               "; the case's golden file holds values within the op's accuracy class."),
            "",
            "```{.ktir .run}",
            self.kernel.rstrip("\n"),
            "```",
            "",
            "```{.python .ktir-expected}",
            *_python_values(self.inputs, self.expected),
            "```",
            "",
        ]
        return "\n".join(lines)


def _number(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "True" if v else "False"
    if isinstance(v, int | np.integer):
        return str(int(v))
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(f)


def _array(a: np.ndarray) -> str:
    dt = _DTYPE_SPELLING.get(a.dtype.name)
    if dt is None:
        raise ValueError(f"no spelling for dtype {a.dtype}")

    def nest(x: Any) -> str:
        if isinstance(x, list):
            return "[" + ", ".join(nest(e) for e in x) + "]"
        return _number(x)

    values = a.tolist() if a.dtype.kind in "biuf" else np.asarray(a, dtype=np.float64).tolist()
    return f"np.array({nest(values)}, dtype={dt})"


def _python_values(inputs: dict[str, Any], expected: dict[str, np.ndarray]) -> list[str]:
    out = ["import ml_dtypes", "import numpy as np", "", 'nan, inf = float("nan"), float("inf")', "inputs = {"]
    for name, value in inputs.items():
        shown = _array(value) if isinstance(value, np.ndarray) else _number(value)
        out.append(f'    "{name}": {shown},')
    out += ["}", "expected = {"]
    for name, value in expected.items():
        out.append(f'    "{name}": {_array(value)},')
    out.append("}")
    return out


def _size(value: Any) -> int:
    return int(np.size(value))


def public_kernels(module: Any) -> list[Any]:
    """The functions with a body that are not `private`: what `reference_interp.run` may run
    without being told which."""
    return [f for f in module.functions() if f.regions and f.regions[0].blocks
            and getattr(f.attributes.get("sym_visibility"), "value", None) != "private"]


def _single_kernel(text: str) -> bool:
    import ktir

    module = ktir.parse(text)
    return len(public_kernels(module)) == 1 and not module.warnings


def _rank(op: str, case: Any) -> tuple[int, int, int, int, int, str]:
    return _score(case, op)


_READABLE = ("f32", "i32", "f16", "i64", "index", "i8", "i16", "i1", "f64", "bf16")


# the ops every kernel needs to reach memory: a case using only these besides the op shows the op
_PLUMBING = frozenset({Builtin.module, Func.func, Func.return_, Arith.constant, Ktdp.get_compute_tile_id,
                       Ktdp.construct_memory_view, Ktdp.construct_access_tile, Ktdp.load, Ktdp.store})


def _score(case: Any, op: str) -> tuple[int, int, int, int, int, str]:
    named = 0 if f".{op}." in f".{case.id.split('.', 1)[1]}." else 1
    # the fewest other ops: ktdp.load's example is a load, not a bitcast that happens to load
    others = len(set(case.ops) - _PLUMBING - {op})
    size = sum(math.prod(a.shape) if a.shape else 1 for a in case.args)
    # values in f32 and i32 read best; f8 and bf16 print with many digits
    readable = min((_READABLE.index(d) for d in case.dtypes if d in _READABLE), default=len(_READABLE))
    return (named, others, 0 if case.grid == [1] else 1, readable, size, case.id)


def _build(case: Any, root: Path) -> Example | None:
    import conformance
    import ktir
    import reference_interp

    text = (root / case.file).read_text()
    if not _single_kernel(text):
        return None
    inputs = conformance.case_inputs(case, root)
    if sum(_size(v) for v in inputs.values()) > _LARGEST:
        return None
    module = ktir.parse(text, case.file)
    try:
        result = reference_interp.run(module, args={k: np.copy(v) if isinstance(v, np.ndarray) else v
                                                    for k, v in inputs.items()})
    except ktir.KtirError:
        return None
    names = [o.name for o in case.outputs]
    expected = {n: np.asarray(result.outputs[n]) for n in names}
    golden = conformance.read_npz(root / case.golden) if case.golden else {}
    matches = all(n in golden and np.array_equal(golden[n], expected[n], equal_nan=expected[n].dtype.kind == "f")
                  for n in names)
    return Example(case.id, case.description, text, inputs, expected, matches)


@cache
def collect() -> dict[str, Example]:
    """The executed example of each op that a conformance case can supply, by op name."""
    import conformance
    from ktir.dialects.registry import OPS

    root: Path = conformance.SUITE_ROOT
    cases = [c for c in conformance.load_suite(root) if c.expect == "run" and c.outputs]
    by_op: dict[str, list[Any]] = {}
    for case in cases:
        for op in case.ops:
            by_op.setdefault(op, []).append(case)
    built: dict[str, Example | None] = {}
    found: dict[str, Example] = {}
    for op in OPS:
        for case in sorted(by_op.get(op, []), key=functools.partial(_rank, op)):
            if case.id not in built:
                built[case.id] = _build(case, root)
            example = built[case.id]
            if example is not None:
                found[op] = example
                break
    return found
