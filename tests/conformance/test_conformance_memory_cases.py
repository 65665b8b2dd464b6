"""The suite exercises memory semantics and edge values with small single-purpose cases."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.model import SUITE_ROOT, Case, load_suite
from conformance.values import case_inputs, np_dtype, read_npz

SUITE = load_suite()
RUN = [c for c in SUITE if c.expect == "run"]


def text(case: Case) -> str:
    return (SUITE_ROOT / case.file).read_text(encoding="utf-8")


@pytest.mark.parametrize("prefix, least", [
    ("core.memory.view_offset.", 4), ("core.memory.view_strides.", 5), ("core.memory.store_strides.", 3),
    ("core.memory.tile_base.", 9), ("core.memory.holes.load.", 8), ("core.memory.holes.store.", 8),
    ("core.memory.order.load.", 6), ("core.memory.order.store.", 5), ("multi-tile.memory.distributed.", 3),
    ("multi-tile.indirect.", 6), ("core.linalg.reduce.init.", 4),
])
def test_each_memory_semantic_has_its_own_cases(prefix: str, least: int) -> None:
    mine = [c for c in RUN if c.id.startswith(prefix)]
    assert len(mine) >= least
    # small and single-purpose: data movement (or the one op named) only
    assert all(len(c.outputs) == 1 for c in mine)


def test_memory_cases_use_non_zero_bases_strides_and_sets_with_holes() -> None:
    memory = [text(c) for c in RUN if c.id.startswith("core.memory.")]
    assert sum("arith.addi %x_ptr" in t for t in memory) >= 4  # views that start inside their array
    assert sum("strides: [16, 2]" in t or "strides: [1, 8]" in t for t in memory) >= 4
    assert sum("mod 2 == 0" in t for t in memory) >= 2 and sum("-d0 + d1" in t or "d0 - d1" in t for t in memory) >= 2
    assert sum("affine_map<(d0, d1, d2) -> (d1, d2, d0)>" in t for t in memory) >= 2  # a cyclic order (not its own inverse)


def test_multi_tile_cases_that_do_not_need_affine_apply() -> None:
    mt = [c for c in RUN if c.level == "multi-tile"]
    free = [c for c in mt if "affine.apply" not in c.ops]
    assert len(free) >= 10 and any(c.grid == [2, 4] for c in free)


UNSIGNED = ("arith.divui", "arith.remui", "arith.shrui", "arith.maxui", "arith.minui", "arith.extui", "arith.uitofp")


@pytest.mark.parametrize("op", UNSIGNED)
def test_unsigned_ops_see_inputs_with_the_top_bit_set(op: str) -> None:
    cases = [c for c in RUN if op in c.ops and ".top_bit." in c.id]
    assert cases
    for c in cases:
        ints = [v for v in case_inputs(c, SUITE_ROOT).values() if isinstance(v, np.ndarray) and v.dtype.kind == "i"]
        assert any((v < 0).any() for v in ints), c.id  # negative as signed = top bit set


def test_signed_and_unsigned_division_disagree_on_the_cases() -> None:
    c = next(c for c in RUN if c.id == "core.arith.divui.top_bit.i32")
    x = case_inputs(c, SUITE_ROOT)
    a, b = x["x0_ptr"], x["x1_ptr"]
    golden = read_npz(SUITE_ROOT / str(c.golden))["y_ptr"]
    signed = (np.trunc(a.astype(np.float64) / b)).astype(np.int64).astype(np.int32)
    assert (golden != signed).sum() >= 4


def test_subnormal_cases_have_subnormal_results() -> None:
    import ml_dtypes

    for c in (c for c in RUN if ".subnormal." in c.id):
        y = read_npz(SUITE_ROOT / str(c.golden))["y_ptr"].astype(np.float64)
        tiny = float(ml_dtypes.finfo(np_dtype(c.dtypes[0])).smallest_normal)
        assert ((y != 0) & (np.abs(y) < tiny)).sum() >= 4, c.id
