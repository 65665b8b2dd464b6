"""The mutation harness: every mutant changes the interpreter's behaviour (its witness case
fails under it and passes without it), patches are undone, and the guide lists them all."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.adapters import ReferenceAdapter
from conformance.model import SUITE_ROOT, load_suite
from conformance.runner import run_case

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mutants  # noqa: E402

CASES = {c.id: c for c in load_suite()}
WITNESS = {
    "view-strides-ignored": "core.memory.view_strides.column_major",
    "view-offset-ignored": "core.memory.view_offset.13.f32",
    "view-origin-ignored": "core.memory.tile_base.view_origin_2_2",
    "tile-base-ignored": "core.memory.tile_base.2_3.ssa",
    "tile-base-reversed": "core.memory.tile_base.2_3.literal",
    "holes-read-as-one": "core.memory.holes.load.checkerboard.f32",
    "holes-written": "core.memory.holes.store.lower_triangle.f32",
    "order-inverted": "core.memory.order.load.120",
    "order-ignored-load": "core.memory.order.load.021",
    "order-ignored-store": "core.memory.order.store.021",
    "indirect-indices-sorted": "multi-tile.indirect.rows.shuffled",
    "tile-id-swapped": "multi-tile.memory.grid2x4.base_subscript",
    "divui-signed": "core.arith.divui.top_bit.i32",
    "remui-signed": "core.arith.remui.top_bit.i32",
    "shrui-arithmetic": "core.arith.shrui.top_bit.i32",
    "maxui-signed": "core.arith.maxui.top_bit.i32",
    "minui-signed": "core.arith.minui.top_bit.i32",
    "cmpi-unsigned-as-signed": "core.arith.cmpi.ult.top_bit.i8",
    "extui-sign-extends": "core.arith.extui.top_bit.i8_to_i32",
    "uitofp-signed": "core.arith.uitofp.top_bit.i32_to_f32",
    "index-castui-signed": "core.arith.index_castui.top_bit.i32_to_index",
    "fptoui-signed": "core.arith.fptoui.top_bit.f32_to_i32",
    "divsi-floors": "core.arith.divsi.i32",
    "subnormal-results-flushed": "core.arith.addf.subnormal.f32",
    "subnormal-inputs-flushed": "core.arith.mulf.subnormal.f32",
    "maximumf-drops-nan": "core.arith.maximumf.specials.f32",
    "minimumf-drops-nan": "core.arith.minimumf.specials.f32",
    "maxnumf-propagates-nan": "core.arith.maxnumf.specials.f32",
    "negf-as-subtraction": "core.arith.negf.specials.f32",
    "absf-keeps-negative-zero": "core.math.absf.specials.f32",
    "cmpf-unordered-as-ordered": "core.arith.cmpf.ult.specials.bf16",
    "truncf-toward-zero": "core.arith.truncf.f32_to_f16",
    "truncf-saturates": "core.arith.truncf.overflow.f32_to_f16",
    "remf-floored": "core.arith.remf.f32.16",
    "roundeven-half-away": "core.math.roundeven.specials.f32",
    "select-swapped": "core.arith.cmpf.oeq.f16",
    "reduce-init-ignored": "core.linalg.reduce.init.sum.f32",
    "matmul-accumulator-ignored": "core.linalg.matmul.init.f32",
}


def test_at_least_thirty_distinct_mutants_each_with_a_witness() -> None:
    names = [m.name for m in mutants.catalogue()]
    assert len(names) >= 30 and len(set(names)) == len(names)
    assert set(WITNESS) == set(names)


def _case(cid: str) -> object:
    if cid in CASES:
        return CASES[cid]
    return next(c for k, c in CASES.items() if k.startswith(cid + "."))  # a shape suffix (.16, .4x8)


@pytest.mark.parametrize("mutant", mutants.catalogue(), ids=lambda m: m.name)
def test_each_mutant_is_killed_by_its_witness_and_undone(mutant: mutants.Mutant) -> None:
    case = _case(WITNESS[mutant.name])
    adapter = ReferenceAdapter()
    assert mutant.reaches(case.ops)  # type: ignore[attr-defined]
    with mutant.patch():
        killed = run_case(case, adapter, SUITE_ROOT, 60)  # type: ignore[arg-type]
    assert killed.status != "pass", mutant.name
    assert run_case(case, adapter, SUITE_ROOT, 60).status == "pass"  # type: ignore[arg-type]


def test_the_guide_lists_every_mutant() -> None:
    guide = (ROOT / "docs" / "guides" / "conformance.md").read_text(encoding="utf-8")
    missing = [m.name for m in mutants.catalogue() if f"`{m.name}`" not in guide]
    assert missing == []
