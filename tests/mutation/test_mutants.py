"""The mutation harness (benchmarks/mutants.py): every mutant changes the implementation's
behaviour, its patch is undone, and it is accounted for.

Each mutant is in exactly one of:
- WITNESS: a suite case that kills it (fails under it, passes without it);
- PROBES / BUILT: a survivor shown *not* equivalent: on inputs (or a small program) no case
  has, its output differs from the unmutated interpreter's. These are the suite's coverage
  holes, listed in the guide and reported to the case writers; once a case kills one, it
  moves to WITNESS;
- HOLES: a survivor whose behaviour needs a program shape too large to build here
  (collectives, indirect access), with the reason;
- EQUIVALENT: no valid program can tell it from the reference, with the reason.

Every test here passes alone and in any order: nothing depends on what ran before (the
harness registers the interpreter's op kernels itself when a patch is applied).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
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
    "holes-read-as-one": "core.memory.holes.load.checkerboard.f32",
    "holes-written": "core.memory.holes.store.lower_triangle.f32",
    "order-inverted": "core.memory.order.load.120",
    "order-ignored-load": "core.memory.order.load.021",
    "order-ignored-store": "core.memory.order.store.021",
    "tile-id-swapped": "multi-tile.memory.grid2x4.base_subscript",
    "scratchpad-shared": "full.distributed_copy.seed0",
    "indirect-indices-sorted": "multi-tile.indirect.rows.shuffled",
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
    # rounding
    "truncf-toward-zero": "core.arith.truncf.f32_to_f16",
    "truncf-saturates": "core.arith.truncf.overflow.f32_to_f16",
    "sitofp-toward-zero": "core.arith.sitofp.i8_to_f8E4M3FN",
    "fma-rounds-product": "core.math.fma.f32.16",
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
    # structured
    "reduce-init-ignored": "core.linalg.reduce.init.sum.f32",
    "matmul-accumulator-ignored": "core.linalg.matmul.init.f32",
    "batch-matmul-first-b": "core.linalg.batch_matmul.f32_f32",
    "matmul-transpose-b-ignored": "core.linalg.matmul_transpose_b.f32_f32",
    "broadcast-as-flat-repeat": "core.linalg.data_movement.f16",
    "concat-reversed": "core.tensor.slicing.f32",
    "reshape-column-major": "core.tensor.slicing.f32",
    "insert-in-place": "core.tensor.slicing.f32",
    # control
    "for-last-iteration-dropped": "core.scf.for.f32",
    "for-zero-trip-runs-once": "full.tiled_matmul.seed0",
    "for-step-ignored": "multi-tile.runtime_arg.M8.f32",
    "for-results-are-inits": "core.scf.for.f32",
    "if-branches-swapped": "core.scf.while_if.f32.flag1",
    # collectives
    "gather-descending": "collective.all_to_all.grid4.f32",
    "consumer-rank-reversed": "collective.scatter.grid4.f32",
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
}

NAN = float("nan")
# survivor -> (case, inputs replacing the case's own): the mutant's outputs differ there
PROBES: dict[str, tuple[str, dict[str, list[float]]]] = {
    "ceildivsi-positive-divisor-formula": ("core.arith.ceildivsi.i32.16", {"x0_ptr": [7, -7, 9], "x1_ptr": [-2, -2, -4]}),
    "floordivsi-dividend-sign": ("core.arith.floordivsi.i32.16", {"x0_ptr": [7, -7, 9], "x1_ptr": [-2, -2, -4]}),
    "addi-saturates": ("core.arith.addi.i8.16", {"x0_ptr": [127, -128], "x1_ptr": [1, -1]}),
    "muli-through-f64": ("core.arith.muli.i64.16", {"x0_ptr": [2**40 + 1], "x1_ptr": [2**20 + 3]}),
    "trunci-saturates": ("core.arith.trunci.i32_to_i8", {"x_ptr": [300, -300, 200]}),
    "absi-min-saturates": ("core.math.absi.i8.16", {"x0_ptr": [-128, 5]}),
    "minmaxnum-zero-sign-ignored": ("core.arith.maxnumf.specials.f32", {"x0_ptr": [0.0, -0.0], "x1_ptr": [-0.0, 0.0]}),
    "rsqrt-negative-zero-positive": ("core.math.rsqrt.f32.16", {"x0_ptr": [-0.0, 4.0]}),
    "truncf-ties-away": ("core.arith.truncf.f32_to_f16", {"x_ptr": [1 + 2**-11, 3 * 2**-11 + 1]}),
    "powf-via-exp-log": ("core.math.powf.f32.16", {"x0_ptr": [-2.0, 2.0], "x1_ptr": [3.0, 3.0]}),
    "reduce-max-drops-nan": ("core.linalg.reduce.max.f16", {"x_ptr": [NAN, 1.0, 2.0, 3.0]}),
    "linalg-max-drops-nan": ("core.linalg.max.f32", {"x0_ptr": [NAN, 1.0], "x1_ptr": [2.0, NAN]}),
}


def _index_program() -> tuple[Any, dict[str, Any]]:
    """y = x * x computed in `index` (x = 2^20 + 1: the product passes 2^32)."""
    from ktir.builder import Builder
    from ktir.ir import types as ty

    i64 = ty.IntegerType(width=64)
    b = Builder()
    with b.func("kernel", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX)], grid=[1]) as (xp, yp):
        x = _load(b, xp, [1], i64)
        xi = b.create("arith.index_cast", [x], [ty.TensorType(shape=(1,), element_type=ty.INDEX)])[0]
        sq = b.create("arith.muli", [xi, xi], [xi.type])[0]
        y = b.create("arith.index_cast", [sq], [x.type])[0]
        _store(b, yp, y, [1], i64)
        b.func_return()
    return b.module, {"x_ptr": np.array([2**20 + 1], np.int64), "y_ptr": np.zeros(1, np.int64)}


def _transpose_program() -> tuple[Any, dict[str, Any]]:
    """A rank-3 linalg.transpose by [1, 2, 0]."""
    from ktir.builder import Builder
    from ktir.ir import attributes as at
    from ktir.ir import types as ty

    b = Builder()
    with b.func("kernel", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX)], grid=[1]) as (xp, yp):
        x = _load(b, xp, [2, 3, 4], ty.F32)
        init = b.empty(ty.TensorType(shape=(3, 4, 2), element_type=ty.F32))
        y = b.dps("linalg.transpose", [x], [init], {"permutation": at.i64_array([1, 2, 0])})
        _store(b, yp, y, [3, 4, 2], ty.F32)
        b.func_return()
    return b.module, {"x_ptr": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "y_ptr": np.zeros((3, 4, 2), np.float32)}


def _strided_slice_program() -> tuple[Any, dict[str, Any]]:
    """Every other element of x, by tensor.extract_slice with stride 2."""
    from ktir.builder import Builder
    from ktir.ir import types as ty

    b = Builder()
    with b.func("kernel", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX)], grid=[1]) as (xp, yp):
        x = _load(b, xp, [8], ty.F32)
        y = b.extract_slice(x, [0], [4], [2])
        _store(b, yp, y, [4], ty.F32)
        b.func_return()
    return b.module, {"x_ptr": np.arange(8, dtype=np.float32), "y_ptr": np.zeros(4, np.float32)}


def _reload_program() -> tuple[Any, dict[str, Any]]:
    """y = x + 1, stored; then y loaded back and doubled into z: z = 2 (x + 1)."""
    from ktir.builder import Builder
    from ktir.ir import types as ty

    b = Builder()
    with b.func("kernel", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX), ("z_ptr", ty.INDEX)], grid=[1]) as (xp, yp, zp):
        x = _load(b, xp, [4], ty.F32)
        y = b.create("arith.addf", [x, x], [x.type])[0]
        _store(b, yp, y, [4], ty.F32)
        again = _load(b, yp, [4], ty.F32)
        z = b.create("arith.addf", [again, again], [x.type])[0]
        _store(b, zp, z, [4], ty.F32)
        b.func_return()
    zeros = np.zeros(4, np.float32)
    return b.module, {"x_ptr": np.arange(4, dtype=np.float32), "y_ptr": zeros.copy(), "z_ptr": zeros.copy()}


def _load(b: Any, ptr: Any, shape: list[int], element: Any) -> Any:
    from ktir.builder import box

    view = b.memory_view(ptr, shape, _strides(shape), element)
    zero = b.index(0)
    tile = b.access_tile(view, [zero] * len(shape), box(*shape), shape)
    return b.load(tile, element)


def _store(b: Any, ptr: Any, value: Any, shape: list[int], element: Any) -> None:
    from ktir.builder import box

    view = b.memory_view(ptr, shape, _strides(shape), element)
    zero = b.index(0)
    b.store(value, b.access_tile(view, [zero] * len(shape), box(*shape), shape))


def _strides(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


# survivor -> a small program (built here) on which the mutant's outputs differ
BUILT: dict[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
    "index-32-bit": _index_program,
    "transpose-inverse-permutation": _transpose_program,
    "slice-strides-ignored": _strided_slice_program,
    "loads-miss-own-stores": _reload_program,
}

# survivors whose showing program (a collective, an indirect tile, a region-built value) is
# left to the suite's case writers: the behaviour no case exercises yet
HOLES: dict[str, str] = {
    "pad-with-zero": "every tensor.pad in the suite pads with zero",
    "parallel-init-ignored": "every scf.parallel reduction in the suite starts from zero",
    "indirect-direct-offset-dropped": "no indirect access tile has a direct subscript with an offset",
    "indirect-order-ignored": "no indirect access tile has a non-identity variables_space_order",
    "gather-first-axis": "every inter_tile_gather gathers along dimension 0",
    "rank-is-tile-id": "every scatter group starts at tile 0",
    "first-group-sources": "every collective has a single group",
    "tile-sets-transposed-ids": "no collective runs on a 2-D grid",
    "reduce-identity-zero": "every inter_tile_reduce identity is zero",
}

EQUIVALENT: dict[str, str] = {
    "v-negative-ct-id-unchecked": "the grammar has no negative ct_id (`ct_id = -1` is a syntax error), so no program "
                                  "text reaches this sub-rule; it guards modules built in Python",
}


def test_the_catalogue_is_large_enough_and_every_mutant_is_accounted_for() -> None:
    kinds = [m.kind for m in CATALOGUE.values()]
    assert kinds.count("interpreter") >= 60 and kinds.count("verifier") >= 15
    assert len(CATALOGUE) == len(mutants.catalogue())  # names are unique
    assert all(m.group for m in CATALOGUE.values())
    listed = [*WITNESS, *PROBES, *BUILT, *HOLES, *EQUIVALENT]
    assert sorted(listed) == sorted(CATALOGUE), set(listed) ^ set(CATALOGUE)
    assert set(mutants.SURVIVORS) == {*PROBES, *BUILT, *HOLES, *EQUIVALENT}


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


def _outputs(module: Any, function: str | None, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    import reference_interp

    result = reference_interp.run(module, function, args={k: np.array(v) for k, v in inputs.items()})
    return {k: np.asarray(v) for k, v in result.outputs.items()}


def _differ(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Whether two runs' outputs differ: bit patterns, NaN matching NaN."""
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.dtype.kind in "iub":
            if not np.array_equal(x, y):
                return True
            continue
        wide_x, wide_y = x.astype(np.float64), y.astype(np.float64)
        nan = np.isnan(wide_x) & np.isnan(wide_y)
        same = (wide_x == wide_y) & (np.signbit(wide_x) == np.signbit(wide_y))
        if not np.all(nan | same):
            return True
    return False


def _case_inputs(case: Case, replace: dict[str, list[float]]) -> dict[str, Any]:
    from conformance.values import case_inputs

    inputs = case_inputs(case, SUITE_ROOT)
    for name, values in replace.items():
        current = np.asarray(inputs[name])
        inputs[name] = np.resize(np.asarray(values, dtype=np.float64 if current.dtype.kind not in "iu" else object)
                                 .astype(current.dtype), current.shape)
    return inputs


@pytest.mark.parametrize("name", sorted(PROBES))
def test_each_survivor_is_a_hole_its_probe_inputs_show(name: str) -> None:
    from ktir.syntax.parser import parse

    case_id, replace = PROBES[name]
    case = _case(case_id)
    text = (SUITE_ROOT / case.file).read_text(encoding="utf-8")
    inputs = _case_inputs(case, replace)
    plain = _outputs(parse(text, case.file), case.function, inputs)
    with CATALOGUE[name].patch():  # a fresh module: compiled functions are cached per module
        mutated = _outputs(parse(text, case.file), case.function, inputs)
    assert _differ(plain, mutated), name


@pytest.mark.parametrize("name", sorted(BUILT))
def test_each_survivor_is_a_hole_its_program_shows(name: str) -> None:
    module, inputs = BUILT[name]()
    plain = _outputs(module, None, inputs)
    with CATALOGUE[name].patch():  # a fresh module: compiled functions are cached per module
        mutated = _outputs(BUILT[name]()[0], None, inputs)
    assert _differ(plain, mutated), name


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
