"""Kernels in their natural single-tile form (grid [1], whole tensors) are divided over the grid.

Each acceptance kernel, written the plain way, is scheduled by every built-in scheduler with
a grid of more than one tile and gives the input's results in the interpreter. Random
natural kernels (row and column reductions, transposes, broadcasts, weights along either
dimension) are scheduled exactly when a dimension can legally be cut, and right when they are.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ktir
import schedulers
from ktir.builder import Value
from ktir.dialects.names import Arith, Linalg
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from ktir.verify import validate_text
from schedulers import single_tile as nat
from schedulers.check import check_equivalent
from schedulers.single_tile import Kernel, amap

KERNELS = {
    "matmul_f32_acc": lambda: nat.matmul(64, 128, 64),
    "matmul_f16_acc": lambda: nat.matmul(64, 128, 64, acc="f16"),
    "batch_matmul_transpose_b": lambda: nat.batch_matmul_tb(4, 32, 64, 64),
    "matmul_bias_relu": lambda: nat.matmul_bias_act(64, 128, 64),
    "matmul_bias_silu_bf16": lambda: nat.matmul_bias_act(32, 128, 64, dtype="bf16", act="silu"),
    "rmsnorm": lambda: nat.rmsnorm(64, 128),
    "layernorm": lambda: nat.layernorm(64, 128),
    "softmax_rows": lambda: nat.softmax(64, 128),
    "softmax_columns": lambda: nat.softmax(128, 128, axis=0),
    "elementwise_3d": lambda: nat.elementwise3d(8, 16, 128),
    "transpose": lambda: nat.transpose(128, 256),
    "rope": lambda: nat.rope(16, 4, 128),
    "swiglu": lambda: nat.swiglu(64, 256),
    "reduce_sum_to_scalar": lambda: nat.reduce_sum(64, 128),
    # a loop kept whole, its state carried in iter_args: the columns are divided, the rows run in order
    "scan": lambda: nat.scan(16, 512, "f16"),
    "scan_with_decay": lambda: nat.scan(8, 256, "f32", decay=0.5),
    # odd extents: partial last blocks. Not 97 x 131: at 50 KB one side of a divided transpose moves
    # runs of a few bytes, a granule each, and one tile is faster on the timeline (1,100 cycles
    # against 1,344 for two tiles)
    "transpose_odd": lambda: nat.transpose(97, 1031, dtype="f32"),
    "elementwise_3d_odd": lambda: nat.elementwise3d(3, 5, 127),
}


def _text(m: Module, name: str) -> str:
    text = print_module(m)
    _, diags = validate_text(text, f"{name}.ktir")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    return text


def _divided_and_checked(before: Module, spyre: Target, scheduler: str) -> schedulers.ScheduleResult:
    """`before` scheduled with the interpreter's check on: divided over several tiles, and equal."""
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(check=True, time_budget=0.3))
    r = result.report
    assert r.applied and r.schedule is not None and math.prod(r.schedule.grid) > 1, r.reason
    assert result.check and result.check.ok
    return result


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_natural_kernels_are_divided_and_equal(name: str, scheduler: str, spyre: Target) -> None:
    before = ktir.parse(_text(KERNELS[name](), name), f"{name}.ktir")
    result = _divided_and_checked(before, spyre, scheduler)
    _text(result.module, name)  # the scheduled module verifies


def test_softmax_over_columns_cuts_the_columns(spyre: Target) -> None:
    before = ktir.parse(_text(nat.softmax(64, 256, axis=0), "sc"), "sc.ktir")
    result = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert result.report.schedule is not None
    cut = {k: v for k, v in result.report.schedule.tile_sizes.items()}
    assert any(k.endswith(":256") and v < 256 for k, v in cut.items()), cut  # the columns, not the reduced rows
    assert any("reduces over this dimension (dimensions = [0])" in n for n in result.report.notes), result.report.notes


def test_a_whole_reduction_is_split_with_an_inter_tile_reduce(spyre: Target) -> None:
    before = ktir.parse(_text(nat.reduce_sum(256, 128), "sum"), "sum.ktir")
    result = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert result.report.applied and result.check
    assert "ktdp.inter_tile_reduce" in print_module(result.module)
    assert result.report.schedule is not None and "d0:256" in result.report.schedule.splits  # the rows, not the sticks


@pytest.mark.parametrize("init", ["1.0", "-2.5"])
@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
def test_a_reduction_from_any_init_is_split_and_the_init_applied_once(init: str, scheduler: str, spyre: Target) -> None:
    """Partials start from the identity and are combined; the init joins once, on the tile that stores."""
    text = _text(nat.reduce_sum(64, 128), "sum").replace("arith.constant 0.0 : f32", f"arith.constant {init} : f32")
    before = ktir.parse(text, "sum.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(check=True, time_budget=0.3))
    assert result.report.applied, result.report.reason
    assert "ktdp.inter_tile_reduce" in print_module(result.module)
    assert result.check and result.check.ok


def test_a_kernel_updating_an_array_in_place_is_divided_block_by_block(spyre: Target) -> None:
    """y written where the input `up` is read, through the same view: each tile reads and then
    writes its own block, so dividing it is legal."""
    inplace = _text(nat.swiglu(64, 256), "s").replace("construct_memory_view %y,", "construct_memory_view %up,")
    result = schedulers.schedule(ktir.parse(inplace, "s.ktir"), spyre, "exact", schedulers.ScheduleOptions(check=True))
    r = result.report
    assert r.applied and r.schedule is not None and math.prod(r.schedule.grid) > 1, r.reason
    assert result.check and result.check.ok


def memory_scan(R: int, C: int, shift: int = 0, side: int = 0) -> Module:
    """y[0] = x[0]; for r in 1..R: y[r, 0:C-shift] = y[r-1, shift:C] + x[r, 0:C-shift]: state carried
    through memory (the row the previous iteration stored is loaded back). With `side` > 0 the
    loop also computes z[r] = 2 u[r] over rows of `side` columns, independent of y."""
    k = Kernel("memscan", ["x", "y", "u", "z"])
    x, y = k.view("x", [R, C], "f32"), k.view("y", [R, C], "f32")
    u, z = (k.view("u", [R, side], "f32"), k.view("z", [R, side], "f32")) if side else (None, None)
    W = C - shift
    row = nat._box((1, C))
    first = k.b.load(k.b.access_tile(x, [k.c0, k.c0], row, (1, C)), nat.F32)
    k.b.store(first, k.b.access_tile(y, [k.c0, k.c0], row, (1, C)))
    c1, cs = k.b.constant(1, nat.INDEX), k.b.constant(shift, nat.INDEX)
    part = nat._box((1, W))
    with k.b.for_(c1, k.b.constant(R, nat.INDEX), c1) as (r,):
        above = k.b.create(Arith.subi, [r, c1], [nat.INDEX])[0]
        prev = k.b.load(k.b.access_tile(y, [above, cs], part, (1, W)), nat.F32)
        cur = k.b.load(k.b.access_tile(x, [r, k.c0], part, (1, W)), nat.F32)
        k.b.store(k.op(Arith.addf, prev, cur), k.b.access_tile(y, [r, k.c0], part, (1, W)))
        if u is not None and z is not None:
            urow = k.b.load(k.b.access_tile(u, [r, k.c0], nat._box((1, side)), (1, side)), nat.F32)
            k.b.store(k.op(Arith.addf, urow, urow), k.b.access_tile(z, [r, k.c0], nat._box((1, side)), (1, side)))
    return k.done()


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
def test_a_scan_carried_through_memory_is_divided_along_its_columns(scheduler: str, spyre: Target) -> None:
    before = ktir.parse(_text(memory_scan(16, 256), "ms"), "ms.ktir")
    _divided_and_checked(before, spyre, scheduler)


def test_an_array_read_and_written_at_shifted_columns_is_declined(spyre: Target) -> None:
    """Row r reads columns 1.. of row r - 1 and writes columns 0..: cut along the columns, a tile
    would read the first column of the next tile's block, which that tile writes."""
    before = ktir.parse(_text(memory_scan(16, 256, shift=1), "ms"), "ms.ktir")
    for scheduler in ("baseline", "exact"):
        r = schedulers.schedule(before, spyre, scheduler).report
        assert not r.applied, scheduler
        assert "read and written at different coordinates along its dimension 1" in (r.reason or ""), r.reason


def test_in_place_accesses_placed_in_different_loops_are_declined(spyre: Target) -> None:
    """The store of y's first row depends on y's columns only, the loop also on z's: cut along
    both, the emitter could place the store and the loop at different loop levels, out of order."""
    before = ktir.parse(_text(memory_scan(16, 256, side=128), "ms"), "ms.ktir")
    r = schedulers.schedule(before, spyre, "exact").report
    assert not r.applied
    assert "read and written by ops that depend on different dimensions" in (r.reason or ""), r.reason


# ---------------------------------------------------------------------- random natural kernels

ROW_REDUCING = {"rowsum", "rowbcast"}
COL_REDUCING = {"colsum"}


def random_kernel(R: int, C: int, steps: list[str]) -> Module:
    args = ["x", "y"] + (["w"] if "wrow" in steps else []) + (["u"] if "wcol" in steps else [])
    k = Kernel("k", args)
    v = k.load(k.view("x", [R, C], "f32"))
    ident = amap(2, 0, 1)
    for s in steps:
        if s in ("rowsum", "colsum"):
            along, keep = (1, amap(2, 0)) if s == "rowsum" else (0, amap(2, 1))
            total = k.reduce(v, [along], "arith.addf", 0.0)
            (v,) = k.generic([v, total], [R, C], [ident, keep, ident], ["parallel"] * 2,
                             lambda k, a: [k.op("arith.subf", a[0], a[1])])
        elif s == "rowbcast":
            mx = k.reduce(v, [1], "arith.maximumf", float("-inf"))
            wide = k.named("linalg.broadcast", [mx], k.empty([R, C], "f32"), dimensions=at.i64_array([1]))
            v = k.op("arith.subf", v, wide)
        elif s == "exp":
            (v,) = k.generic([v], [R, C], [ident, ident], ["parallel"] * 2, lambda k, a: [k.op("math.exp", a[0])])
        elif s in ("wrow", "wcol"):
            n, m = (C, amap(2, 1)) if s == "wrow" else (R, amap(2, 0))
            w = k.load(k.view("w" if s == "wrow" else "u", [n], "f32"))
            (v,) = k.generic([v, w], [R, C], [ident, m, ident], ["parallel"] * 2,
                             lambda k, a: [k.op("arith.mulf", a[0], a[1])])
        else:
            assert s == "transpose" and R == C
            t = k.named("linalg.transpose", [v], k.empty([C, R], "f32"), permutation=at.i64_array([1, 0]))
            v = k.op("arith.addf", v, t)
    k.store(v, k.view("y", [R, C], "f32"))
    return k.done()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from(["rowsum", "colsum", "rowbcast", "exp", "wrow", "wcol", "transpose"]),
                      min_size=1, max_size=4),
       shape=st.sampled_from([(64, 64), (32, 128), (128, 64)]), scheduler=st.sampled_from(["baseline", "exact", "search"]))
def test_random_natural_kernels_are_scheduled_exactly_when_legal_and_right(steps: list[str], shape: tuple[int, int],
                                                                          scheduler: str, spyre: Target) -> None:
    R, C = (64, 64) if "transpose" in steps else shape
    before = ktir.parse(_text(random_kernel(R, C, steps), "k"), "k.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.05))
    rows_free = not (COL_REDUCING & set(steps)) and "transpose" not in steps
    cols_free = not (ROW_REDUCING & set(steps)) and "transpose" not in steps
    # a dimension reduced by one op alone, everything else elementwise along it: split, partials all-reduced
    one_reducer = "transpose" not in steps and (sum(s in COL_REDUCING for s in steps) == 1
                                                or sum(s in ROW_REDUCING for s in steps) == 1)
    assert result.report.applied == (rows_free or cols_free or one_reducer), (steps, result.report.reason)
    if result.report.applied:
        verdict = check_equivalent(before, result.module, seed=5)
        assert verdict.ok, (steps, verdict.message)


def test_memory_effects_beside_whole_loads_and_stores_are_declined(spyre: Target) -> None:
    """An op writing memory on its own would run on every tile: the natural form declines it."""
    text = _text(nat.swiglu(64, 256), "s")
    extra = "  %buf = memref.alloc() : memref<4xf32>\n  func.return"
    r = schedulers.schedule(ktir.parse(text.replace("  func.return", extra), "s.ktir"), spyre, "exact").report
    assert not r.applied and "memref.alloc" in (r.reason or ""), r.reason


def test_an_f16_accumulator_across_a_k_loop_is_declined(spyre: Target) -> None:
    """A hand-tiled K loop accumulating in f16 rounds at every step; an f32 rewrite would differ."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples" / "tiled_matmul.ktir").read_text()
    text = text.replace("%zero = arith.constant 0.0 : f32", "%zero = arith.constant 0.0 : f16")
    text = text.replace("ins(%zero : f32)", "ins(%zero : f16)").replace("512x256xf32", "512x256xf16")
    text = text.replace("%res = arith.truncf %acc : tensor<512x256xf16> to tensor<512x256xf16>\n", "")
    text = text.replace("ktdp.store %res,", "ktdp.store %acc,")
    sizes = {"M": 1024, "N": 512, "K": 512}
    r = schedulers.schedule(ktir.parse(text, "t.ktir"), spyre, "exact", schedulers.ScheduleOptions(sizes=sizes)).report
    assert not r.applied and "accumulates in f16 across a loop" in (r.reason or ""), r.reason


def test_a_scan_is_divided_along_its_columns_and_keeps_its_rows_in_order(spyre: Target) -> None:
    before = ktir.parse(_text(nat.scan(16, 512, "f16"), "scan"), "scan.ktir")
    result = schedulers.schedule(before, spyre, "baseline", schedulers.ScheduleOptions(check=True))
    r = result.report
    assert r.applied and r.schedule is not None and math.prod(r.schedule.grid) > 1, r.reason
    assert any("whose iterations run in order" in n for n in r.notes), r.notes
    text = print_module(result.module)
    assert text.count("scf.for") >= 2 and "iter_args" in text


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
def test_a_gather_is_divided_over_its_lookups_and_columns(scheduler: str, spyre: Target) -> None:
    import numpy as np

    import reference_interp as ri

    before = ktir.parse(_text(nat.gather(100, 64, 256), "g"), "g.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.3))
    r = result.report
    assert r.applied and r.schedule is not None and math.prod(r.schedule.grid) > 1, r.reason
    args = nat.gather_inputs(100, 64, 256)
    want = ri.run(before, None, {k: np.copy(v) for k, v in args.items()}).outputs["y"]
    got = ri.run(result.module, None, {k: np.copy(v) for k, v in args.items()}).outputs["y"]
    assert np.array_equal(want, got)


@pytest.mark.parametrize("make", [lambda: nat.layernorm_stats(512, 4096), lambda: nat.row_sum(4099, 1024),
                                  lambda: nat.softmax(16, 1 << 20, dtype="f32")],
                         ids=["layernorm storing mean and rstd", "row sum to a 4099 x 1 column", "rows of 4 MiB"])
def test_kernels_that_exited_with_no_blocking_fits_are_scheduled(make, spyre: Target) -> None:  # type: ignore[no-untyped-def]
    """Issue 27's error exits: a small side output no longer forces whole sticks of rows, an extent
    no block divides gets a partial last block, and a row too long for the scratchpad is chunked
    (its phases checked at small sizes in test_sched_timeline)."""
    before = ktir.parse(print_module(make()), "k.ktir")
    r = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(time_budget=0.5)).report
    assert r.applied and r.schedule is not None and math.prod(r.schedule.grid) > 1, r.reason
    assert r.scratchpad_peak_bytes is not None and r.scratchpad_peak_bytes <= spyre_capacity(spyre)


def spyre_capacity(target: Target) -> int:
    from schedulers.cost import figures

    return figures(target).local_capacity


def test_what_does_not_fit_is_named(spyre: Target) -> None:
    """Rows of 8 Mi f32 elements scaled by their column (linalg.index: the columns cannot be cut,
    chunked or split; the rows can, but one row does not fit): the message names the tensor, its
    block and the scratchpad's capacity, and why the whole dimension cannot be cut."""
    from ktir.ir import types as ty

    n = 1 << 23
    k = nat.Kernel("big", ["x", "y"])
    x = k.load(k.view("x", [4, n], "f32"))

    def scaled(kk: nat.Kernel, v: list) -> list:  # type: ignore[type-arg]
        i = kk.b.create(Linalg.index, [], [ty.IndexType()], {"dim": at.IntegerAttr(value=1, type=ty.I64)})[0]
        f = kk.b.create("arith.uitofp", [kk.b.create("arith.index_cast", [i], [ty.i(32)])[0]], [nat.F32])[0]
        return [kk.op("arith.mulf", v[0], f)]

    (y,) = k.generic([x], [4, n], [nat.amap(2, 0, 1), nat.amap(2, 0, 1)], ["parallel"] * 2, scaled)
    k.store(y, k.view("y", [4, n], "f32"))
    before = ktir.parse(_text(k.done(), "big"), "big.ktir")
    with pytest.raises(schedulers.NoLegalSchedule) as info:
        schedulers.schedule(before, spyre, "exact")
    msg = str(info.value)
    assert f"{spyre_capacity(spyre)}-byte ct_local scratchpad" in msg and f"a 1x{n} block of 4-byte elements" in msg, msg
    assert "linalg.index" in msg, msg


def captured_scalar_before_reduction(C: int) -> Module:
    """y = x / (1 + |min_c (x + s)|) over one row, where s is a scalar constant defined after the
    load and read only inside the body of the generic feeding the reduction (a captured value,
    not an operand)."""
    k = Kernel("captured", ["x", "y"])
    x = k.load(k.view("x", [1, C], "f32"))
    s = k.scalar(1.0)
    (shifted,) = k.generic([x], [1, C], [amap(2, 0, 1)] * 2, ["parallel"] * 2,
                           lambda kk, a: [kk.op(Arith.addf, a[0], s)])
    m = k.reduce(shifted, [1], Arith.minimumf, math.inf)
    (y,) = k.generic([x, m], [1, C], [amap(2, 0, 1), amap(2, 0), amap(2, 0, 1)], ["parallel"] * 2,
                     lambda kk, a: [kk.op(Arith.divf, a[0], kk.op(Arith.addf, kk.op("math.absf", a[1]), kk.scalar(1.0)))])
    k.store(y, k.view("y", [1, C], "f32"))
    return k.done()


@pytest.mark.parametrize("scheduler", ["baseline", "exact"])
def test_a_value_captured_by_a_region_is_defined_before_it_in_a_split_reduction(scheduler: str, spyre: Target) -> None:
    """Random kernel seed 873501553: the split reduction emitted the ops feeding it first, but
    found them through operands only, so the constant read inside a generic's body came after it."""
    before = ktir.parse(_text(captured_scalar_before_reduction(4096), "cap"), "cap.ktir")
    result = _divided_and_checked(before, spyre, scheduler)
    _text(result.module, "cap")  # every value is defined before its use


def one_block_from_tile_id(B: int, C: int) -> Module:
    """The documented row-loop form on grid [1] with a single block (`for r = tid * B to B step
    B`) whose body uses the row index as data: y[r + i, :] = x[r + i, :] * (r + i)."""
    k = Kernel("oneblock", ["x", "y"])
    x, y = k.view("x", [B, C], "f32"), k.view("y", [B, C], "f32")
    cb = k.b.constant(B, nat.INDEX)
    (tid,) = k.b.tile_id(1)
    first = k.b.create(Arith.muli, [tid, cb], [nat.INDEX])[0]
    with k.b.for_(first, cb, cb) as (r,):
        block = k.b.load(k.b.access_tile(x, [r, k.c0], nat._box((B, C)), (B, C)), nat.F32)

        def row_number(kk: Kernel, a: list[Value]) -> list[Value]:
            i = kk.b.create(Linalg.index, [], [nat.INDEX], {"dim": at.IntegerAttr(value=0, type=None)})[0]
            n = kk.b.create(Arith.index_cast, [kk.b.create(Arith.addi, [r, i], [nat.INDEX])[0]], [ty.I64])[0]
            return [kk.b.create(Arith.sitofp, [n], [nat.F32])[0]]

        (rows,) = k.generic([], [B, C], [amap(2, 0, 1)], ["parallel"] * 2, row_number)
        k.b.store(k.op(Arith.mulf, block, rows), k.b.access_tile(y, [r, k.c0], nat._box((B, C)), (B, C)))
    return k.done()


@pytest.mark.parametrize("scheduler", ["baseline", "exact"])
def test_a_single_row_block_from_the_tile_id_is_divided_along_its_columns(scheduler: str, spyre: Target) -> None:
    """On grid [1] the tile id is 0, so the loop has constant bounds and the natural form keeps it
    whole (random kernel seed 121 of row_loop: declined by both forms before)."""
    before = ktir.parse(_text(one_block_from_tile_id(2, 1024), "ob"), "ob.ktir")
    _divided_and_checked(before, spyre, scheduler)


def test_a_loop_that_runs_no_iteration_does_not_stop_the_division(spyre: Target) -> None:
    """A scan through memory over a single row: its loop `for r = 1 to 1` does nothing (random scan
    kernel seed 351: declined before, `scf.for runs no iteration`)."""
    before = ktir.parse(_text(memory_scan(1, 1024), "ms1"), "ms1.ktir")
    _divided_and_checked(before, spyre, "exact")


def chained_products(M: int, K: int, N: int, P: int) -> Module:
    """c = a^T b (a generic contraction of bf16 operands into f32, stored rounded to f16 as y), then
    d = init + c w (linalg.matmul): the first product's n is the second's k."""
    k = Kernel("chain", ["a", "b", "y", "w", "init", "d"])
    a, b = k.load(k.view("a", [K, M], "bf16")), k.load(k.view("b", [K, N], "bf16"))  # A stored transposed

    def widened_product(kk: Kernel, x: list[Value]) -> list[Value]:
        lhs, rhs = (kk.b.create(Arith.extf, [v], [nat.F32])[0] for v in x[:2])
        return [kk.op(Arith.addf, x[2], kk.op(Arith.mulf, lhs, rhs))]

    (c,) = k.generic([a, b], [M, N], [amap(3, 2, 0), amap(3, 2, 1), amap(3, 0, 1)], ["parallel", "parallel", "reduction"],
                     widened_product, init=k.fill(0.0, [M, N]))
    k.store(k.cast(c, "f16"), k.view("y", [M, N], "f16"))
    w, init = k.load(k.view("w", [N, P], "f32")), k.load(k.view("init", [M, P], "f32"))
    k.store(k.named(Linalg.matmul, [c, w], init), k.view("d", [M, P], "f32"))
    return k.done()


def test_a_chunked_reduction_whose_result_is_used_outside_the_innermost_loop_is_not_chunked(spyre: Target) -> None:
    """Random kernel seed 770743980: the first product's K was chunked in phase loops placed in the
    loop over the second product's columns, while its result, rounded and stored as y, was placed
    outside that loop, before it was made (declined as a module that does not verify)."""
    before = ktir.parse(_text(chained_products(127, 96, 48, 97), "chain"), "chain.ktir")
    _divided_and_checked(before, spyre, "exact")
