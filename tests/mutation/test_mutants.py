"""The mutation harness (benchmarks/mutants.py): every mutant changes the implementation's
behaviour, its patch is undone, and it is accounted for.

Each mutant is in exactly one of:
- WITNESS: a suite case that kills it (fails under it, passes without it);
- EQUIVALENT: no valid program can tell it from the reference (by the spec), with the reason
  and a program showing that it changes only what the spec leaves unspecified.

A mutant that no case kills and that is not equivalent is a coverage hole: the catalogue
test fails until a generated case kills it (then it goes to WITNESS) or the spec shows it
equivalent (EQUIVALENT, and SURVIVORS in benchmarks/mutants.py).

Every test here passes alone and in any order: nothing depends on what ran before (the
harness registers the interpreter's op kernels itself when a patch is applied).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.adapters import ReferenceAdapter
from conformance.model import SUITE_ROOT, Case, load_suite
from conformance.runner import run_case

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks")]
import mutants  # noqa: E402

CASES = {c.id: c for c in load_suite()}
CATALOGUE = {m.name: m for m in mutants.catalogue()}

WITNESS: dict[str, str] = {
    # memory
    "view-strides-ignored": "core.memory.view_strides.column_major",
    "view-offset-ignored": "core.memory.view_offset.13.f32",
    "view-origin-ignored": "core.memory.tile_base.view_origin_2_2",
    "tile-base-ignored": "core.memory.tile_base.2_3.ssa",
    "tile-base-reversed": "core.memory.tile_base.2_3.literal",
    "tile-extents-from-bounds": "core.memory.holes.load.raised_start.f32",
    "holes-written": "core.memory.holes.store.lower_triangle.f32",
    "order-inverted": "core.memory.order.load.120",
    "order-ignored-load": "core.memory.order.load.021",
    "order-ignored-store": "core.memory.order.store.021",
    "tile-id-swapped": "multi-tile.memory.grid2x4.base_subscript",
    "scratchpad-shared": "full.distributed_copy.seed0",
    "indirect-indices-sorted": "multi-tile.indirect.rows.shuffled",
    "loads-miss-own-stores": "core.memory.store_then_load.f32",
    "indirect-direct-offset-dropped": "multi-tile.indirect.offset_subscripts.identity",
    "indirect-order-ignored": "multi-tile.indirect.offset_subscripts.transposed",
    # integer
    "divui-signed": "core.arith.divui.top_bit.i32",
    "remui-signed": "core.arith.remui.top_bit.i32",
    "shrui-arithmetic": "core.arith.shrui.top_bit.i32",
    "shrsi-logical": "core.arith.shrsi.i32.16",
    "maxui-signed": "core.arith.maxui.top_bit.i32",
    "minui-signed": "core.arith.minui.top_bit.i32",
    "minsi-unsigned": "core.arith.minsi.i32.16",
    "cmpi-unsigned-as-signed": "core.arith.cmpi.ult.top_bit.i8",
    "cmpi-inclusive-as-strict": "core.arith.cmpi.sle.i64",
    "extui-sign-extends": "core.arith.extui.top_bit.i8_to_i32",
    "extsi-zero-extends": "core.arith.extsi.i8_to_i32",
    "uitofp-signed": "core.arith.uitofp.top_bit.i32_to_f32",
    "sitofp-unsigned": "core.arith.sitofp.i32_to_f32",
    "index-castui-signed": "core.arith.index_castui.top_bit.i32_to_index",
    "index-cast-zero-extends": "core.arith.index_cast.i32_index_i64",
    "fptoui-signed": "core.arith.fptoui.top_bit.f32_to_i32",
    "fptosi-rounds-to-nearest": "core.arith.fptosi.f32_to_i32",
    "xori-as-ori": "core.arith.xori.i32.16",
    "bitcast-converts-values": "core.arith.bitcast.f32_to_i32",
    "divsi-floors": "core.arith.divsi.i32",
    "ceildivsi-truncates": "core.arith.ceildivsi.i32.16",
    "floordivsi-truncates": "core.arith.floordivsi.i32.16",
    "remsi-floored": "core.arith.remsi.i32.16",
    "ctpop-sign-extended": "core.math.ctpop.i8.16",
    "ceildivsi-positive-divisor-formula": "core.arith.ceildivsi.negative_divisor.i32",
    "floordivsi-dividend-sign": "core.arith.floordivsi.negative_divisor.i32",
    "addi-saturates": "core.arith.addi.i64.beyond_2p53",
    "muli-through-f64": "core.arith.muli.i64.beyond_2p53",
    "trunci-saturates": "core.arith.trunci.out_of_range.i32_to_i8",
    "index-32-bit": "core.arith.index.beyond_2p31",
    "absi-min-saturates": "core.math.absi.extremes.i8",
    # NaN and signed zeros
    "maximumf-drops-nan": "core.arith.maximumf.specials.f32",
    "minimumf-drops-nan": "core.arith.minimumf.specials.f32",
    "maxnumf-propagates-nan": "core.arith.maxnumf.specials.f32",
    "minmax-zero-sign-ignored": "core.arith.maximumf.specials.f16",
    "negf-as-subtraction": "core.arith.negf.specials.f32",
    "absf-keeps-negative-zero": "core.math.absf.specials.f32",
    "sqrt-negative-zero-positive": "core.math.sqrt.specials.f32",
    "copysign-by-comparison": "core.math.copysign.specials.f32",
    "divf-by-zero-nan": "core.arith.divf.specials.f32",
    "cmpf-unordered-as-ordered": "core.arith.cmpf.ult.specials.bf16",
    "cmpf-ordered-as-unordered": "core.arith.cmpf.olt.specials.f32",
    "subnormal-results-flushed": "core.arith.addf.subnormal.f32",
    "subnormal-inputs-flushed": "core.arith.mulf.subnormal.f32",
    "extf-flushes-subnormals": "core.arith.extf.specials.f16_to_f32",
    "minmaxnum-zero-sign-ignored": "core.arith.maxnumf.specials.f16",
    "rsqrt-negative-zero-positive": "core.math.rsqrt.specials.f32",
    "reduce-max-drops-nan": "core.linalg.reduce.specials.maximumf.f32",
    "linalg-max-drops-nan": "core.linalg.max.specials.f32",
    # rounding
    "truncf-toward-zero": "core.arith.truncf.f32_to_f16",
    "truncf-saturates": "core.arith.truncf.overflow.f32_to_f16",
    "sitofp-toward-zero": "core.arith.sitofp.i8_to_f8E4M3FN",
    "fma-rounds-product": "core.math.fma.f32.16",
    "truncf-ties-away": "core.arith.truncf.ties.f32_to_f16",
    "remf-floored": "core.arith.remf.f32.16",
    "roundeven-half-away": "core.math.roundeven.specials.f32",
    "round-half-even": "core.math.round.specials.f32",
    "floor-as-trunc": "core.math.floor.f32.16",
    "ceil-as-trunc": "core.math.ceil.f32.16",
    "select-swapped": "core.arith.cmpf.oeq.f16",
    # transcendental
    "exp-two-ulp": "multi-tile.grid2x4.exp.bf16",
    "tanh-saturates-early": "core.math.tanh.f32.4x8",  # the 16-element case's inputs are all below 4
    "atan2-swapped": "core.math.atan2.f32.16",
    "log1p-naive": "core.math.log1p.f16.16",
    "expm1-naive": "core.math.expm1.f64.16",
    "powf-via-exp-log": "core.math.powf.negative_base.f32",
    # structured
    "reduce-init-ignored": "core.linalg.reduce.init.sum.f32",
    "matmul-accumulator-ignored": "core.linalg.matmul.init.f32",
    "batch-matmul-first-b": "core.linalg.batch_matmul.f32_f32",
    "matmul-transpose-b-ignored": "core.linalg.matmul_transpose_b.f32_f32",
    "broadcast-as-flat-repeat": "core.linalg.data_movement.f16",
    "concat-reversed": "core.tensor.slicing.f32",
    "reshape-column-major": "core.tensor.slicing.f32",
    "insert-in-place": "core.tensor.slicing.f32",
    "transpose-inverse-permutation": "core.linalg.transpose.rank3_cycle",
    "slice-strides-ignored": "core.tensor.strided_slices_pad_value",
    "pad-with-zero": "core.tensor.strided_slices_pad_value",
    # control
    "for-last-iteration-dropped": "core.scf.for.f32",
    "for-zero-trip-runs-once": "full.tiled_matmul.seed0",
    "for-step-ignored": "multi-tile.runtime_arg.M8.f32",
    "for-results-are-inits": "core.scf.for.f32",
    "if-branches-swapped": "core.scf.while_if.f32.flag1",
    "parallel-init-ignored": "core.scf.parallel.init",
    # collectives
    "gather-descending": "collective.all_to_all.grid4.f32",
    "consumer-rank-reversed": "collective.scatter.grid4.f32",
    "gather-first-axis": "collective.gather_cols.two_rows.grid4.f32",
    "rank-is-tile-id": "collective.grid8x1.groups.scatter.f32",
    "first-group-sources": "collective.grid1x8.groups.reduce.f32",
    "tile-sets-transposed-ids": "collective.grid2x4.groups.reduce.f32",
    "reduce-identity-zero": "collective.reduce_max.identity_ninf.grid4.f32",
    # verifier
    "v-load-element-type-unchecked": "validation.ktdp_load_store.load_elem.ktdp.load.C2.bfd5d3",
    "v-tile-bounds-unchecked": "validation.ktdp_load_store.tile_out_of_view.ktdp.construct_access_tile.C7.aaa796",
    "v-future-uses-unchecked": "validation.ktdp_inter_tile.future_used_twice.ktdp.inter_tile_produce.C4.521a13",
    "v-distributed-overlap-unchecked": "validation.ktdp_views.distributed_overlap.ktdp.construct_distributed_memory_view.C2.f5b3d9",
    "v-ssa-type-unchecked": "validation.structure.operand_type_alias.ssa.type.91fcf3",
    "v-redefinition-unchecked": "validation.structure.redefined.ssa.redefined.aa9027",
    "v-ct-id-range-unchecked": "validation.ktdp_views.memory_space.ktdp.construct_memory_view.C6.b64a9c",
    "v-dense-blob-size-unchecked": "validation.arith_elementwise.constant_dense.arith.constant.C1.91f693",
    "v-matmul-k-unchecked": "validation.linalg_named.contractions.linalg.matmul.C2.0d998c",
    "v-constant-range-unchecked": "validation.arith_elementwise.constant_dense.arith.constant.C1.dc1be0",
    "v-grid-unchecked": "validation.affine_func.grid_zero.func.func.C2.6a78ff",
    "v-loop-yield-unchecked": "validation.scf.for_iter_args.scf.for.C3.b9c6ff",
    "v-nested-undefined-unchecked": "validation.structure.undefined_in_loop.ssa.undefined.338a7a",
    "v-nested-terminator-unchecked": "validation.structure.wrong_terminator.region.terminator.fc9549",
    "v-typed-first-only": "validation.math.element_class.math.exp.C2.da99c6",
    "v-tile-bounds-tile-zero-only": "validation.ktdp_load_store.tile_out_of_view.ktdp.construct_access_tile.C7.aaa796",
    "v-load-ids-swapped": "validation.ktdp_load_store.load_shape.ktdp.load.C1.43c03d",
    "v-intertile-at-function": "validation.ktdp_inter_tile.gather.ktdp.inter_tile_gather.C1.d4eda5",
    "v-linalg-line-above": "validation.linalg_named.fill.linalg.fill.C2.e389a8",
    "v-step-one-rejected": "syntax.accept.mlir.scf",
    "v-legacy-is-error": "syntax.accept.rfc.c6_load",
    "v-negative-ct-id-unchecked": "validation.ktdp_interop_gaps.string_negative_ct_id.type.memory_space.7485b1",
}

EQUIVALENT: dict[str, str] = {
    "holes-read-as-one": "a load's elements at holes of its access tile are unspecified (spec/memory.md, access "
                         "tiles): 1 there is as conforming as 0",
}


def _holes_program() -> tuple[Any, dict[str, Any]]:
    """y = the 4x6 tile of x with the checkerboard's holes, loaded and stored whole."""
    from ktir.builder import Builder, box
    from ktir.ir import affine as af
    from ktir.ir import types as ty

    d0, d1 = af.dim(0), af.dim(1)
    checkerboard = box(4, 6)
    checkerboard = af.IntegerSet(num_dims=2, num_symbols=0, constraints=(
        *checkerboard.constraints, af.Constraint(expr=(d0 + d1).mod(2), is_equality=True)))
    b = Builder()
    with b.func("kernel", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX)], grid=[1]) as (xp, yp):
        zero = b.index(0)
        view = b.memory_view(xp, [4, 6], [6, 1], ty.F32)
        x = b.load(b.access_tile(view, [zero, zero], checkerboard, [4, 6]), ty.F32)
        out = b.memory_view(yp, [4, 6], [6, 1], ty.F32)
        b.store(x, b.access_tile(out, [zero, zero], box(4, 6), [4, 6]))
        b.func_return()
    return b.module, {"x_ptr": np.arange(2, 26, dtype=np.float32).reshape(4, 6), "y_ptr": np.zeros((4, 6), np.float32)}


def _outputs(module: Any, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    import reference_interp

    result = reference_interp.run(module, None, args={k: np.array(v) for k, v in inputs.items()})
    return {k: np.asarray(v) for k, v in result.outputs.items()}


def test_an_equivalent_mutant_changes_only_unspecified_elements() -> None:
    # holes-read-as-one: the outputs differ from the reference's exactly at the holes
    module, inputs = _holes_program()
    plain = _outputs(module, inputs)["y_ptr"]
    with CATALOGUE["holes-read-as-one"].patch():  # a fresh module: compiled functions are cached per module
        mutated = _outputs(_holes_program()[0], inputs)["y_ptr"]
    i, j = np.indices((4, 6))
    hole = (i + j) % 2 == 1
    assert (plain != mutated).any()
    assert np.array_equal(plain[~hole], mutated[~hole]) and np.array_equal(plain[~hole], inputs["x_ptr"][~hole])


def test_the_catalogue_is_large_enough_and_every_mutant_is_accounted_for() -> None:
    kinds = [m.kind for m in CATALOGUE.values()]
    assert kinds.count("interpreter") >= 60 and kinds.count("verifier") >= 15
    assert len(CATALOGUE) == len(mutants.catalogue())  # names are unique
    assert all(m.group for m in CATALOGUE.values())
    listed = [*WITNESS, *EQUIVALENT]
    assert sorted(listed) == sorted(CATALOGUE), set(listed) ^ set(CATALOGUE)
    assert set(mutants.SURVIVORS) == set(EQUIVALENT)
    assert all(reason.startswith("equivalent: ") for reason in mutants.SURVIVORS.values())


@pytest.mark.parametrize("name", sorted(WITNESS))
def test_each_witness_kills_its_mutant_and_passes_without_it(name: str) -> None:
    mutant, case = CATALOGUE[name], _case(WITNESS[name])
    adapter = ReferenceAdapter()
    assert mutant.reaches(case.ops, case.level, case.expect)
    with mutant.patch():
        killed = run_case(case, adapter, SUITE_ROOT, 120)
    assert killed.status != "pass", name
    assert run_case(case, adapter, SUITE_ROOT, 120).status == "pass"


def _case(cid: str) -> Case:
    """The case `cid`, or the first whose id extends it (a shape suffix such as `.16`)."""
    if cid in CASES:
        return CASES[cid]
    return next(c for k, c in CASES.items() if k.startswith(cid + "."))


def test_patches_are_undone() -> None:
    import reference_interp.ops  # noqa: F401
    from ktir.verify import RULES
    from ktir.verify.engine import Verifier
    from reference_interp.compiler import FACTORIES

    before = (dict(FACTORIES), dict(RULES), Verifier.emit)
    for mutant in CATALOGUE.values():
        with mutant.patch():
            pass
    assert (dict(FACTORIES), dict(RULES), Verifier.emit) == before


def test_a_mutant_works_in_a_fresh_process() -> None:
    """The order bug: a retargeting mutant applied before anything registered the op kernels."""
    code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/benchmarks']; import mutants; "
            "m = next(m for m in mutants.catalogue() if m.name == 'divui-signed'); "
            "from reference_interp.compiler import FACTORIES; assert 'arith.divui' not in FACTORIES\n"
            "with m.patch(): assert FACTORIES['arith.divui'] is not None")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_guide_lists_every_mutant_and_survivor() -> None:
    guide = (ROOT / "docs" / "guides" / "conformance.md").read_text(encoding="utf-8")
    assert [m for m in CATALOGUE if f"`{m}`" not in guide] == []
