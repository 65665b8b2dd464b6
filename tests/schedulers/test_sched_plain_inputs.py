"""Plain single-tile kernels a user writes, at the edges the scheduler's own kernels do not
reach: a dimension of size 0, an f64 matmul, an output view whose strides map two
coordinates to one element. Each is scheduled correctly or declined with the blocking
construct named, never a traceback, an invalid module or a racing rewrite."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_paths import ktir_schedule

import ktir
import schedulers
from ktir.builder import Builder
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from ktir.targets.schema import Target
from ktir.verify import validate_text
from schedulers.sets import box, projection, scalar

SCHEDULERS = ("exact", "baseline", "search")


def _matmul(M: int, N: int, K: int, dtype: str, acc: str, c_strides: tuple[int, int] | None = None) -> Module:
    """C = A B on one tile, whole tensors, accumulated in `acc` (no cast when acc == dtype)."""
    dt, at_ = scalar(dtype), scalar(acc)
    b = Builder()
    sa, sb, sc, id2 = box(M, K), box(K, N), box(M, N), projection(2)
    with b.func("mm", [("a_ptr", ty.INDEX), ("b_ptr", ty.INDEX), ("c_ptr", ty.INDEX)], grid=[1]) as (pa, pb, pc):
        c0 = b.index(0, "c0")
        zero = b.constant(at.FloatAttr(value=0.0, type=at_), name="zero")
        a = b.memory_view(pa, [M, K], [K, 1], dt, None, sa, name="a")
        bv = b.memory_view(pb, [K, N], [N, 1], dt, None, sb, name="b")
        c = b.memory_view(pc, [M, N], list(c_strides or (N, 1)), dt, None, sc, name="c")
        x = b.load(b.access_tile(a, [c0, c0], sa, [M, K], id2, name="ta"), dt, name="x")
        y = b.load(b.access_tile(bv, [c0, c0], sb, [K, N], id2, name="tb"), dt, name="y")
        init = b.fill(zero, b.empty(ty.tensor((M, N), at_), "e"), "init")
        res = b.dps("linalg.matmul", [x, y], [init], name="acc")
        if acc != dtype:
            res = b.arith.truncf(res, result_types=[ty.tensor((M, N), dt)], name="res")
        b.store(res, b.access_tile(c, [c0, c0], sc, [M, N], id2, name="tc"))
        b.func_return()
    return b.module


def _exp(R: int, C: int, y_strides: tuple[int, int] | None = None) -> Module:
    """Y = exp(X) on one tile, X and Y R x C f32 (Y at `y_strides`, row-major by default)."""
    f32 = ty.F32
    b = Builder()
    s, id2 = box(R, C), projection(2)
    with b.func("ew", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX)], grid=[1]) as (px, py):
        c0 = b.index(0, "c0")
        x = b.memory_view(px, [R, C], [C, 1], f32, None, s, name="x")
        y = b.memory_view(py, [R, C], list(y_strides or (C, 1)), f32, None, s, name="y")
        v = b.load(b.access_tile(x, [c0, c0], s, [R, C], id2, name="tx"), f32, name="v")
        b.store(b.math.exp(v, name="ev"), b.access_tile(y, [c0, c0], s, [R, C], id2, name="ty"))
        b.func_return()
    return b.module


def _write(tmp_path: Path, module: Module) -> Path:
    path = tmp_path / "kernel.ktir"
    path.write_text(print_module(module))
    return path


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("make", [lambda: _exp(0, 64), lambda: _matmul(0, 64, 64, "f16", "f32")],
                         ids=["exp_0x64", "matmul_M0"])
def test_a_dimension_of_size_0_is_declined_with_a_reason(make: object, scheduler: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # before: the natural form scheduled it and the report table raised on its ratio (None);
    # the matmul class raised IndexError while enumerating grids
    src = _write(tmp_path, make())  # type: ignore[operator]
    out = tmp_path / "out.ktir"
    code = ktir_schedule([str(src), "--target", "spyre", "--scheduler", scheduler, "-o", str(out)])
    table, err = capsys.readouterr()  # with -o the report table goes to stdout
    assert code == 0 and "Traceback" not in err, err
    assert "has size 0" in table and "touches" in table and "no elements" in table
    assert out.read_text() == src.read_text()  # declined: the module is written unchanged


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_an_f64_matmul_is_scheduled_validly(scheduler: str, spyre: Target) -> None:
    # before: the matmul emitters accumulated in f32 and cast f32 -> f64 with arith.truncf,
    # an invalid module ("scheduler 'exact' produced an invalid module")
    module = _matmul(64, 64, 64, "f64", "f64")
    result = schedulers.schedule(module, spyre, scheduler, schedulers.ScheduleOptions(check=True))
    text = print_module(result.module)
    checked, diagnostics = validate_text(text, "scheduled.ktir")
    assert checked is not None and not [d for d in diagnostics if d.severity == "error"], diagnostics
    assert result.check is not None and result.check.ok
    assert "arith.truncf" not in text


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize(("make", "says"), [
    (lambda: _exp(256, 512, (1, 1)), "writes some elements of %y_ptr twice (strides [1, 1]"),
    (lambda: _exp(256, 512, (64, 1)), "writes some elements of %y_ptr twice (strides [64, 1]"),
    (lambda: _matmul(128, 256, 128, "f16", "f32", (64, 1)), "writes some elements of %c_ptr twice (strides [64, 1]"),
], ids=["exp_strides_1_1", "exp_rows_overlap", "matmul_rows_overlap"])
def test_a_store_through_overlapping_strides_is_declined(make: object, says: str, scheduler: str,
                                                         spyre: Target) -> None:
    # the input's store writes some elements twice (the interpreter refuses it: a store
    # conflict); dividing it over tiles made those writes race, and it was applied
    result = schedulers.schedule(make(), spyre, scheduler)  # type: ignore[operator]
    assert not result.report.applied and says in (result.report.reason or ""), result.report.reason


def test_the_matmul_class_declines_an_overlapping_c(spyre: Target) -> None:
    from schedulers.kernels import recognise

    found = recognise(_matmul(128, 256, 128, "f16", "f32", (64, 1)))
    assert found.kernel is None and "maps several coordinates of C to one element" in (found.reason or "")


def test_the_row_class_declines_an_overlapping_output(spyre: Target) -> None:
    from schedulers import naive
    from schedulers.kernels import recognise

    text = naive.softmax(64, 128, "f32")
    rows = "%y_ptr, sizes: [64, 128], strides: [128, 1]"
    assert rows in text
    module = ktir.parse(text.replace(rows, "%y_ptr, sizes: [64, 128], strides: [64, 1]"), "softmax.ktir")
    found = recognise(module)
    assert found.kernel is None and "y_ptr (strides [64, 1]) maps several rows to one element" in (found.reason or "")
    result = schedulers.schedule(module, spyre, "exact")
    assert not result.report.applied


def _exp_if(R: int, C: int) -> Module:
    """Y = exp(X) on one tile, stored only when the i1 argument %flag holds (an scf.if)."""
    f32 = ty.F32
    b = Builder()
    s, id2 = box(R, C), projection(2)
    with b.func("ew_if", [("x_ptr", ty.INDEX), ("y_ptr", ty.INDEX), ("flag", ty.i(1))], grid=[1]) as (px, py, flag):
        c0 = b.index(0, "c0")
        x = b.memory_view(px, [R, C], [C, 1], f32, None, s, name="x")
        y = b.memory_view(py, [R, C], [C, 1], f32, None, s, name="y")
        v = b.load(b.access_tile(x, [c0, c0], s, [R, C], id2, name="tx"), f32, name="v")
        with b.if_(flag):
            b.store(b.math.exp(v, name="ev"), b.access_tile(y, [c0, c0], s, [R, C], id2, name="ty"))
        b.func_return()
    return b.module


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_branch_on_one_tile_is_named_in_the_reason(scheduler: str, spyre: Target) -> None:
    # the reason was only the row-loop form's ("no single row loop over a 1-D grid"), which
    # does not say what in a one-tile kernel without a row loop blocks the rewrite
    result = schedulers.schedule(_exp_if(128, 512), spyre, scheduler)
    reason = result.report.reason or ""
    assert not result.report.applied and "no single row loop" in reason
    assert "natural form: scf.if" in reason and "is not straight-line code" in reason
