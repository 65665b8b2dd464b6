"""Typed constraints: verdicts come from the objects, prose is generated from them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ktir.dialects import constraints as tc
from ktir.dialects.base import Operand, Result
from ktir.dialects.registry import OPS, SPELLINGS
from ktir.ir import types as ty
from ktir.verify import validate_text

ROOT = Path(__file__).resolve().parents[2]
# Everything a user reads and no code may decide by: rewording any of it changes no verdict.
DOC_FIELDS = frozenset({"summary", "description", "doc", "text", "relation", "note", "arguments"})


def _reword(value: Any) -> Any:
    """`value` with every doc string replaced, recursively through the definition's records."""
    if isinstance(value, tuple):
        return tuple(_reword(v) for v in value)
    if isinstance(value, frozenset):
        return frozenset(_reword(v) for v in value)
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    changes = {}
    for f in dataclasses.fields(value):
        old = getattr(value, f.name)
        if f.name in DOC_FIELDS and isinstance(old, str):
            changes[f.name] = f"reworded {f.name} of something"
        else:
            changes[f.name] = _reword(old)
    return dataclasses.replace(value, **changes)


def _corpus() -> list[Path]:
    skip = ("conformance/cases/core", "conformance/cases/collective")  # valid programs only, many
    return sorted(
        p for p in ROOT.rglob("*.ktir") if ".git" not in p.parts and not str(p.relative_to(ROOT)).startswith(skip)
    )


def _diagnostics(paths: list[Path]) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    for p in paths:
        _, diags = validate_text(p.read_text(encoding="utf-8"), str(p))
        out[str(p)] = [(d.severity, d.id, d.message, d.line, d.column, d.notes) for d in diags]
    return out


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[tuple[object, ...]]]:
    """Diagnostics of every corpus file under the real registry."""
    return _diagnostics(_corpus())


def test_rewording_every_doc_string_changes_no_diagnostic(
    monkeypatch: pytest.MonkeyPatch, corpus: dict[str, list[tuple[object, ...]]]
) -> None:
    paths = _corpus()
    assert len(paths) > 300
    before = corpus
    assert sum(len(d) for d in before.values()) > 500  # the corpus exercises the verifier
    reworded = {name: _reword(op) for name, op in OPS.items()}
    assert reworded["math.exp"].summary != OPS["math.exp"].summary
    assert reworded["scf.for"].constraints[0].text != OPS["scf.for"].constraints[0].text
    # typed constraints keep their generated text whatever was written
    assert reworded["math.exp"].constraints[1].text == "The element type is a float type."
    for name, op in reworded.items():
        monkeypatch.setitem(OPS, name, op)
    for spelling, op in list(SPELLINGS.items()):
        monkeypatch.setitem(SPELLINGS, spelling, reworded[op.name])
    assert _diagnostics(paths) == before


def test_math_exp_verdicts_come_from_the_objects() -> None:
    ok = "func.func @k(%x: f32) {\n  %y = math.exp %x : f32\n  return\n}\n"
    bad = ok.replace("f32", "i32")
    assert [d for d in validate_text(ok)[1] if d.severity == "error"] == []
    errors = [d for d in validate_text(bad)[1] if d.severity == "error"]
    assert [(d.id, d.message) for d in errors] == [("math.exp.C2", "'math.exp' needs float operands, found i32")]


def test_prose_is_generated_from_the_objects() -> None:
    assert tc.FLOAT_LIKE.describe() == "float (scalar or tensor)"
    assert tc.INT_OR_INDEX_LIKE.describe() == "signless integer or index (scalar or tensor)"
    assert tc.RankedTensorOf(tc.INT_OR_INDEX, rank=1).describe() == "1-D ranked tensor of signless integer or index"
    assert tc.AnyFloat((16, 32)).describe() == "float of width 16 or 32"
    assert OPS["arith.addi"].constraints[1].text == "The element type is a signless integer or index type."
    assert OPS["math.ctpop"].constraints[1].text == "The element type is a signless integer type."
    assert OPS["arith.extf"].constraints[1].text == "The result float type is wider than the operand's."
    assert OPS["arith.uitofp"].constraints[1].text == "The operand is an integer and the result a float."


@pytest.mark.parametrize(
    ("constraint", "accepted", "rejected"),
    [
        (tc.FLOAT_LIKE, [ty.F32, ty.TensorType(shape=(4,), element_type=ty.F16)], [ty.I32, ty.INDEX]),
        (tc.SIGNLESS_INT_LIKE, [ty.I32, ty.I1], [ty.INDEX, ty.F32, ty.IntegerType(width=8, signedness="signed")]),
        (tc.INT_OR_INDEX_LIKE, [ty.I32, ty.INDEX], [ty.F32]),
        (tc.AnyFloat((16,)), [ty.F16], [ty.F32]),
        (tc.I1, [ty.I1], [ty.I32]),
        (tc.RankedTensorOf(tc.FLOAT, rank=2), [ty.TensorType(shape=(2, 3), element_type=ty.F32)],
         [ty.TensorType(shape=(2,), element_type=ty.F32), ty.TensorType(shape=(2, 3), element_type=ty.I32), ty.F32]),
        (tc.ScalarOrTensorOf(tc.FLOAT), [ty.F32], [ty.MemRefType(shape=(4,), element_type=ty.F32)]),
    ],
)
def test_type_constraints_accept_what_they_describe(
    constraint: tc.TypeConstraint, accepted: list[ty.Type], rejected: list[ty.Type]
) -> None:
    assert all(constraint.accepts(t) for t in accepted)
    assert not any(constraint.accepts(t) for t in rejected)


def test_definitions_are_typed_not_prose() -> None:
    with pytest.raises(TypeError):
        Operand("x", "float (scalar or tensor)")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Result("x", "index")  # type: ignore[arg-type]
    for op in OPS.values():
        assert not {"operand_class", "src_class", "dst_class"} & set(op.options), op.name


def test_typed_constraint_text_replaces_what_was_written() -> None:
    op = OPS["math.exp"]
    rewritten = dataclasses.replace(
        op, constraints=tuple(dataclasses.replace(c, text="anything") for c in op.constraints)
    )
    assert [c.text for c in rewritten.constraints] == [c.text for c in op.constraints]


def test_every_same_type_trait_has_its_checked_constraint() -> None:
    from ktir.dialects.traits import SAME_OPERANDS_AND_RESULT_TYPE

    for op in OPS.values():
        checks = [c.check for c in op.checked_constraints()]
        assert (SAME_OPERANDS_AND_RESULT_TYPE in op.traits) == any(
            isinstance(c, tc.SameOperandsAndResultType) for c in checks
        ), op.name


def _groups(specs: tuple[Operand, ...] | tuple[Result, ...], n: int, segments: list[int] | None) -> list[tuple[Any, range]]:
    """Which positions each declared operand (or result) covers: by `operandSegmentSizes`, or
    by arity when at most one group is variadic."""
    if segments is not None and len(segments) == len(specs):
        starts = [sum(segments[:i]) for i in range(len(segments))]
        return [(s, range(a, a + k)) for s, a, k in zip(specs, starts, segments, strict=True)]
    flexible = [i for i, s in enumerate(specs) if s.variadic or getattr(s, "optional", False)]
    if len(flexible) > 1:
        return []
    out, at = [], 0
    for i, s in enumerate(specs):
        k = n - (len(specs) - 1) if flexible == [i] else 1
        out.append((s, range(at, at + k)))
        at += k
    return out


def test_declared_types_accept_every_valid_corpus_program(corpus: dict[str, list[tuple[object, ...]]]) -> None:
    """The typed declarations are true of real programs, not decoration."""
    from ktir.ir import attributes as at
    from ktir.verify.engine import Verifier

    wrong, checked = [], 0
    for path, diagnostics in corpus.items():
        if any(d[0] == "error" for d in diagnostics):
            continue
        module, _ = validate_text(Path(path).read_text(encoding="utf-8"), path)
        assert module is not None
        resolve = Verifier(module).rtype
        for op in module.walk():
            opdef = OPS.get(op.name)
            if opdef is None:
                continue
            seg = op.attributes.get("operandSegmentSizes")
            segments = [int(x) for x in seg.values] if isinstance(seg, at.DenseArrayAttr) else None
            for specs, types, sizes in ((opdef.operands, op.operand_types, segments), (opdef.results, op.result_types, None)):
                for spec, positions in _groups(specs, len(types), sizes):
                    for i in positions:
                        checked += 1
                        if i < len(types) and not spec.type.accepts(resolve(types[i])):
                            wrong.append(f"{path}: {op.name} {spec.name}: {types[i]!r} is not {spec.type.describe()}")
    assert checked > 2000
    assert not wrong, "\n".join(wrong[:20])
