"""Regenerate the suite: case files, manifests and goldens, then show what changed.

    python -m conformance.regen            # write everything, print a diff summary
    python -m conformance.regen --check    # write nothing; exit 1 if anything would change

Goldens come from each case's model (`Draft.model`, built from `conformance.oracle`): the
exact result rounded once to the output type, and for the classes that allow an error the
accepted interval per element (`NAME.lo`, `NAME.hi`). The reference interpreter is not used:
while a model runs, importing it fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from conformance import toml_out
from conformance.gen.draft import Draft, DraftError, Model
from conformance.model import LEVELS, SUITE_ROOT, ArgSpec, Case
from conformance.values import case_inputs, read_npz, to_bytes
from ktir.dialects.names import Builtin
from ktir.fileio import write_atomic


def case_path(d: Draft) -> str:
    return f"cases/{d.level}/{d.file_key or d.id.split('.', 1)[1]}.ktir"


def golden_path(d: Draft) -> str:
    return f"goldens/{d.level}/{d.id.split('.', 1)[1]}.npz"


def ops_of(text: str, name: str) -> list[str]:
    from ktir.dialects.registry import OPS
    from ktir.syntax.parser import parse

    module = parse(text, name)
    found = {op.name for op in module.walk() if op.name in OPS}
    found.add(Builtin.module)
    return sorted(found)


SEEDED = ("normal", "uniform", "int", "positive", "permutation")


def to_case(d: Draft) -> Case:
    from conformance.gen.models import seed_of

    args = []
    for a in d.arrays:
        recipe = dict(a.recipe)
        if "seed" in recipe:
            raise DraftError(f"{d.id}: argument {a.name} names a seed; seeds come from the case id and the argument name")
        if recipe.get("recipe") in SEEDED:
            recipe["seed"] = seed_of(d.id, a.name)
        args.append(ArgSpec(name=a.name, shape=list(a.shape), dtype=a.dtype, **recipe))
    for name, (dtype, v) in d.scalars.items():
        args.append(ArgSpec(name=name, recipe="scalar", dtype=dtype, value=v))
    try:
        ops = ops_of(d.text, case_path(d)) if d.expect != "reject" or d.diagnostic != "syntax" else []
    except Exception:  # noqa: BLE001 - syntax cases do not parse; their ops are not counted
        ops = []
    dtypes = sorted({a.dtype for a in d.arrays})
    return Case(id=d.id, level=d.level, file=case_path(d), expect=d.expect, function=d.function,  # type: ignore[arg-type]
                diagnostic=d.diagnostic, line=d.line, column=d.column, args=args,
                outputs=[{"name": n, "tolerance": t, "n": k} for n, t, k in d.outputs],  # type: ignore[misc]
                golden=golden_path(d) if d.expect == "run" else None, ops=ops, dtypes=dtypes, grid=d.grid,
                description=d.description)


STALE_ADVICE = (
    "the stored suite differs from what the generators make now.\n"
    "- If your change touched a generator, a case's model, the oracle (conformance/oracle) or an example kernel, "
    "run `python -m conformance.regen` and commit what it writes.\n"
    "- If it touched none of them, do not regenerate: the goldens do not reproduce on this machine, which is a bug "
    "in the oracle (goldens must not depend on the CPU, BLAS or libm). Report it with the list above.")


class _WithoutInterpreter:
    """While a model runs, `import reference_interp` fails: no golden is made by the code it judges."""

    def __enter__(self) -> None:
        self._saved = {k: v for k, v in sys.modules.items() if k == "reference_interp" or k.startswith("reference_interp.")}
        for k in self._saved:
            del sys.modules[k]
        sys.modules["reference_interp"] = None  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        del sys.modules["reference_interp"]
        sys.modules.update(self._saved)


def golden(case: Case, root: Path, model: Model, stored: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The golden file's arrays: the model's exact outputs and accepted intervals (format 2)."""
    from conformance.oracle.scalar import Undefined
    from conformance.tolerance import GOLDEN_FORMAT, bit_for_bit

    inputs = case_inputs(case, root, stored)
    try:
        with _WithoutInterpreter():
            expected = model(inputs)
    except Undefined as e:
        raise DraftError(f"{case.id}: the case's inputs reach a dynamic error: {e}") from None
    out: dict[str, np.ndarray] = {"__format__": np.array(GOLDEN_FORMAT)}
    if set(expected) != {o.name for o in case.outputs}:
        raise DraftError(f"{case.id}: the model gives {sorted(expected)}, the case compares {[o.name for o in case.outputs]}")
    for o in case.outputs:
        want_out = expected[o.name]
        arg = next(a for a in case.args if a.name == o.name)
        initial = np.asarray(inputs[o.name])
        if want_out.golden.shape != initial.shape or want_out.golden.dtype != initial.dtype:
            raise DraftError(f"{case.id}: the model's {o.name} is {want_out.golden.dtype}{list(want_out.golden.shape)}, "
                             f"the argument {arg.dtype}{arg.shape}")
        if bit_for_bit(o.tolerance) != (want_out.lo is None):
            raise DraftError(f"{case.id}: output {o.name} of class {o.tolerance} "
                             f"{'has' if want_out.lo is not None else 'lacks'} an accepted interval")
        out[o.name] = want_out.golden
        if want_out.lo is not None and want_out.hi is not None:
            for key, ends in (("lo", want_out.lo), ("hi", want_out.hi)):
                typed = ends.astype(want_out.golden.dtype)  # every end is a value of the output type (or +-inf)
                back = typed.astype(np.float64)
                if not ((back == ends) | (np.isnan(back) & np.isnan(ends))).all():
                    raise DraftError(f"{case.id}: an end of {o.name}'s accepted interval is not a value of its type")
                out[f"{o.name}.{key}"] = typed
        out[f"{o.name}.__oracle__"] = np.array(want_out.method)
    return out


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0

    def lines(self) -> list[str]:
        out = [f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed, {self.unchanged} unchanged"]
        out += [f"  + {p}" for p in self.added[:20]]
        out += [f"  ~ {p}" for p in self.changed[:40]]
        out += [f"  - {p}" for p in self.removed[:20]]
        return out


def _describe_npz_change(old: Path, new: dict[str, np.ndarray]) -> str:
    try:
        before = read_npz(old)
    except Exception:  # noqa: BLE001 - an unreadable old golden is simply replaced
        return "unreadable before"
    parts = []
    for k, v in new.items():
        if k not in before:
            parts.append(f"{k} new")
        elif before[k].shape != v.shape or before[k].dtype != v.dtype:
            parts.append(f"{k} {before[k].dtype}{list(before[k].shape)} -> {v.dtype}{list(v.shape)}")
        elif v.dtype.kind in "US":
            if (before[k] != v).any():
                parts.append(f"{k} changed")
        else:
            a, b = before[k].astype(np.float64), v.astype(np.float64)
            with np.errstate(invalid="ignore"):
                diff = np.abs(a - b)
            count = int(np.count_nonzero(~((a == b) | (np.isnan(a) & np.isnan(b)))))
            if count:
                parts.append(f"{k}: {count} elements, max |diff| {np.nanmax(diff):.3g}")
    return "; ".join(parts) or "bits only"


def write_suite(drafts: Iterable[Draft], root: Path = SUITE_ROOT, check: bool = False,
                progress: Any = None) -> Changes:
    """Write (or with check=True, compare) every file of the suite; return what changed."""
    drafts = list(drafts)
    seen: set[str] = set()
    for d in drafts:
        if d.id in seen:
            raise DraftError(f"{d.id}: two cases have this id")
        seen.add(d.id)
    changes = Changes()
    wanted: set[Path] = set()
    by_level: dict[str, list[Case]] = {lv: [] for lv in LEVELS}
    for i, d in enumerate(drafts):
        if progress is not None:
            progress(i, len(drafts), d.id)
        case = to_case(d)
        by_level[d.level].append(case)
        files: dict[Path, bytes] = {root / case.file: d.text.encode()}
        for rel, array in d.npy.items():
            files[root / rel] = _npy_bytes(array)
        if case.expect == "run":
            if d.model is None:
                raise DraftError(f"{d.id}: an executing case without a model of its outputs")
            files[root / golden_path(d)] = to_bytes(golden(case, root, d.model, d.npy))
        for path, data in files.items():
            wanted.add(path)
            _update(path, data, changes, check, root)
    for level, cases in by_level.items():
        header: dict[str, Any] = {"schema_version": 1, "level": level}
        rows = [c.model_dump(exclude_defaults=True) for c in cases]
        for row, c in zip(rows, cases, strict=True):
            row["level"], row["expect"] = c.level, c.expect
        text = "# Generated by `python -m conformance.regen`; do not edit.\n" + toml_out.manifest(header, rows)
        path = root / "manifest" / f"{level}.toml"
        wanted.add(path)
        _update(path, text.encode(), changes, check, root)
    for name, text in schemas().items():
        path = root / "schema" / name
        wanted.add(path)
        _update(path, text.encode(), changes, check, root)
    for sub in ("cases", "goldens", "manifest", "inputs"):
        for path in sorted((root / sub).rglob("*")) if (root / sub).exists() else []:
            if path.is_file() and path not in wanted and path.suffix in (".ktir", ".npz", ".toml", ".npy"):
                changes.removed.append(str(path.relative_to(root)))
                if not check:
                    path.unlink()
    return changes


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def schemas() -> dict[str, str]:
    """The published JSON Schemas: results, manifests, capability files, waivers files and the
    adapter protocol's diagnostics."""
    import json

    from conformance.capability import json_schemas
    from conformance.model import Manifest
    from conformance.reported import json_schema as adapter_schema
    from conformance.results import json_schema

    manifest = Manifest.model_json_schema()
    manifest["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out = {"results.schema.json": json.dumps(json_schema(), indent=2) + "\n",
           "manifest.schema.json": json.dumps(manifest, indent=2) + "\n"}
    out.update({f"{name}.schema.json": json.dumps(schema, indent=2) + "\n" for name, schema in json_schemas().items()})
    out["adapter.schema.json"] = json.dumps(adapter_schema(), indent=2) + "\n"
    return out


def _update(path: Path, data: bytes, changes: Changes, check: bool, root: Path) -> None:
    rel = str(path.relative_to(root))
    if not path.exists():
        changes.added.append(rel)
    elif path.read_bytes() == data:
        changes.unchanged += 1
        return
    else:
        if path.suffix == ".npz":
            import io

            rel = f"{rel} ({_describe_npz_change(path, read_npz(io.BytesIO(data)))})"
        changes.changed.append(rel)
    if check:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from conformance.gen import all_drafts

    parser = argparse.ArgumentParser(prog="python -m conformance.regen", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the stored suite is out of date")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("generating cases", total=None)

        def tick(i: int, total: int, name: str) -> None:
            bar.update(task, completed=i, total=total, description=name)

        try:
            changes = write_suite(all_drafts(), check=args.check, progress=tick)
        except DraftError as e:
            console.print(f"[red]error:[/red] {e}")
            return 1
    for line in changes.lines():
        console.print(line, highlight=False, markup=False)
    if args.check and (changes.added or changes.changed or changes.removed):
        console.print(STALE_ADVICE, highlight=False, markup=False)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
