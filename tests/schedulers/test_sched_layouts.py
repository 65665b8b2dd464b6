"""The matmul rewrites keep every operand view's strides and offset, and decline what they
cannot prove is C = A B over whole views (regression: a transposed B, `x @ w.t()`, was
re-tiled as if it were row-major)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_paths import ktir_schedule
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ktir
import schedulers
from ktir.targets.schema import Target
from ktir.verify import validate_text
from schedulers.check import check_equivalent
from schedulers.kernels import MatmulKernel, recognise

Layout = tuple[tuple[int, int], int]  # (strides, offset) in elements


def _box(name: str, rows: int, cols: int) -> str:
    return f"#{name} = affine_set<(d0, d1) : (d0 >= 0, -d0 + {rows - 1} >= 0, d1 >= 0, -d1 + {cols - 1} >= 0)>"


def layout(rows: int, cols: int, kind: str, pad: int = 0, offset: int = 0) -> Layout:
    """Strides of a rows x cols view: row-major or column-major, each row/column padded by `pad`."""
    return ((cols + pad, 1) if kind == "row" else (1, rows + pad)), offset


def matmul_kernel(M: int, N: int, K: int, a: Layout, b: Layout, c: Layout, dtype: str = "f16",
                  grid: tuple[int, int] = (1, 1), fill: str = "0.0", a_set: str = "a") -> str:
    """C = A B with any view layouts; grid (gm, gn) splits C's rows and columns over the tiles."""
    gm, gn = grid
    bm, bn = M // gm, N // gn
    lines = [_box("a", M, K), _box("b", K, N), _box("c", M, N), _box("ablk", bm, K), _box("bblk", K, bn),
             _box("cblk", bm, bn), _box("skew", M, K).replace(")>", ", d0 + d1 >= 0)>").replace("#a", "#skew"), "#id2 = affine_map<(d0, d1) -> (d0, d1)>",
             f"func.func @mm(%a_ptr: index, %b_ptr: index, %c_ptr: index) attributes {{grid = [{gm}, {gn}]}} {{",
             "  %c0 = arith.constant 0 : index", f"  %cbm = arith.constant {bm} : index",
             f"  %cbn = arith.constant {bn} : index", f"  %zero = arith.constant {fill} : f32",
             "  %ti, %tj = ktdp.get_compute_tile_id : index, index",
             "  %m0 = arith.muli %ti, %cbm : index", "  %n0 = arith.muli %tj, %cbn : index"]
    for v, (r, cc), ((s0, s1), off) in (("a", (M, K), a), ("b", (K, N), b), ("c", (M, N), c)):
        ptr = f"%{v}_ptr"
        if off:
            lines += [f"  %{v}_off = arith.constant {off} : index", f"  %{v}_at = arith.addi %{v}_ptr, %{v}_off : index"]
            ptr = f"%{v}_at"
        cs = a_set if v == "a" else v
        lines.append(f"  %{v} = ktdp.construct_memory_view {ptr}, sizes: [{r}, {cc}], strides: [{s0}, {s1}] "
                     f"{{coordinate_set = #{cs}, memory_space = #ktdp.memory_space<global>}} : memref<{r}x{cc}x{dtype}>")
    acc = f"tensor<{bm}x{bn}xf32>"
    lines += [
        f"  %ta = ktdp.construct_access_tile %a[%m0, %c0] {{access_tile_order = #id2, access_tile_set = #ablk}} : "
        f"memref<{M}x{K}x{dtype}> -> !ktdp.access_tile<{bm}x{K}xindex>",
        f"  %tb = ktdp.construct_access_tile %b[%c0, %n0] {{access_tile_order = #id2, access_tile_set = #bblk}} : "
        f"memref<{K}x{N}x{dtype}> -> !ktdp.access_tile<{K}x{bn}xindex>",
        f"  %x = ktdp.load %ta : !ktdp.access_tile<{bm}x{K}xindex> -> tensor<{bm}x{K}x{dtype}>",
        f"  %y = ktdp.load %tb : !ktdp.access_tile<{K}x{bn}xindex> -> tensor<{K}x{bn}x{dtype}>",
        f"  %e = tensor.empty() : {acc}",
        f"  %init = linalg.fill ins(%zero : f32) outs(%e : {acc}) -> {acc}",
        f"  %acc = linalg.matmul ins(%x, %y : tensor<{bm}x{K}x{dtype}>, tensor<{K}x{bn}x{dtype}>) outs(%init : {acc}) "
        f"-> {acc}"]
    out = "%acc"
    if dtype != "f32":
        lines.append(f"  %res = arith.truncf %acc : {acc} to tensor<{bm}x{bn}x{dtype}>")
        out = "%res"
    lines += [
        f"  %tc = ktdp.construct_access_tile %c[%m0, %n0] {{access_tile_order = #id2, access_tile_set = #cblk}} : "
        f"memref<{M}x{N}x{dtype}> -> !ktdp.access_tile<{bm}x{bn}xindex>",
        f"  ktdp.store {out}, %tc : tensor<{bm}x{bn}x{dtype}>, !ktdp.access_tile<{bm}x{bn}xindex>",
        "  func.return", "}", ""]
    text = "\n".join(lines)
    _, diags = validate_text(text, "mm.ktir")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    return text


def test_transposed_b_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`x @ w.t()` as the PyTorch lowering emits it: B is K x N with strides [1, K], grid [8, 3]."""
    M, N, K = 64, 96, 128
    src = tmp_path / "xwt.ktir"
    src.write_text(matmul_kernel(M, N, K, layout(M, K, "row"), layout(K, N, "col"), layout(M, N, "row"), "f32",
                                 grid=(8, 3)))
    out = tmp_path / "out.ktir"
    code = ktir_schedule([str(src), "--target", "spyre", "--check", "-q", "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 0 and "check: ok" in err, err
    assert "strides: [1, 128]" in out.read_text()


@pytest.mark.parametrize("scheduler", ["baseline", "exact"])
@pytest.mark.parametrize("case", ["a_col", "b_col", "c_col", "padded", "offsets", "all"])
def test_layouts_are_kept(case: str, scheduler: str, spyre: Target) -> None:
    M, N, K = 32, 128, 256
    a, b, c = layout(M, K, "row"), layout(K, N, "row"), layout(M, N, "row")
    if case in ("a_col", "all"):
        a = layout(M, K, "col", pad=3 if case == "all" else 0)
    if case in ("b_col", "all"):
        b = layout(K, N, "col", offset=5 if case == "all" else 0)
    if case in ("c_col", "all"):
        c = layout(M, N, "col", offset=64 if case == "all" else 0)
    if case == "padded":
        a, b, c = layout(M, K, "row", pad=8), layout(K, N, "row", pad=1), layout(M, N, "row", pad=16)
    if case == "offsets":
        a, b, c = layout(M, K, "row", offset=7), layout(K, N, "row", offset=100), layout(M, N, "row", offset=3)
    before = ktir.parse(matmul_kernel(M, N, K, a, b, c), "mm.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(check=True))
    assert result.report.applied and result.check is not None and result.check.ok


def _declined(text: str) -> str:
    rec = recognise(ktir.parse(text, "mm.ktir"))
    assert rec.kernel is None and rec.reason
    return rec.reason


def test_a_constant_start_of_the_accumulator_is_kept(spyre: Target) -> None:
    """C = 1 + A B: every accumulator of the rewrite starts from 1.0, as the input's does."""
    M, N, K = 16, 64, 64
    text = matmul_kernel(M, N, K, layout(M, K, "row"), layout(K, N, "row"), layout(M, N, "row"), fill="1.0")
    result = schedulers.schedule(ktir.parse(text, "mm.ktir"), spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert result.report.applied and result.report.kernel_class == "matmul" and result.check and result.check.ok


def test_a_coordinate_set_written_differently_is_enumerated(spyre: Target) -> None:
    """The view's box with a redundant constraint: the recogniser enumerates it rather than match its text."""
    M, N, K = 16, 64, 64
    rows = (layout(M, K, "row"), layout(K, N, "row"), layout(M, N, "row"))
    before = ktir.parse(matmul_kernel(M, N, K, *rows, a_set="skew"), "mm.ktir")
    result = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(check=True))
    assert result.report.applied and result.check


def test_a_partial_grid_is_declined() -> None:
    """A kernel whose grid leaves C's last rows unwritten is not a whole matmul."""
    M, N, K = 32, 64, 64
    text = matmul_kernel(M, N, K, layout(M, K, "row"), layout(K, N, "row"), layout(M, N, "row"), grid=(2, 1))
    text = text.replace("grid = [2, 1]", "grid = [1, 1]")
    assert "not stored" in _declined(text)


def test_the_kernel_footprint_is_traced_through_loops(spyre: Target) -> None:
    """The tiled example (K loop, block loops over a 4 x 8 grid) is recognised as the whole matmul."""
    from conftest_paths import example

    rec = recognise(example("tiled_matmul.ktir"), {"M": 2048, "N": 2048, "K": 512})
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    half = example("tiled_matmul.ktir")  # with K bound to 512 but the loop stopping half way
    text = ktir.syntax.printer.print_module(half).replace("scf.for %k = %c0 to %K step %c256",
                                                          "scf.for %k = %c0 to %c256 step %c256")
    rec = recognise(ktir.parse(text, "half.ktir"), {"M": 2048, "N": 2048, "K": 512})
    assert rec.kernel is None and "K up to 256" in (rec.reason or "")


kinds = st.sampled_from(["row", "col"])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(m=st.sampled_from([1, 2, 8, 24]), n=st.sampled_from([64, 96, 128]), k=st.sampled_from([64, 128, 192]),
       ka=kinds, kb=kinds, kc=kinds, pads=st.tuples(*[st.integers(0, 3)] * 3),
       offs=st.tuples(*[st.integers(0, 40)] * 3), dtype=st.sampled_from(["f16", "bf16", "f32"]),
       grid=st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 4)]), scheduler=st.sampled_from(["baseline", "exact", "search"]))
def test_random_layouts_schedule_to_equal_results(m: int, n: int, k: int, ka: str, kb: str, kc: str,
                                                  pads: tuple[int, int, int], offs: tuple[int, int, int], dtype: str,
                                                  grid: tuple[int, int], scheduler: str, spyre: Target) -> None:
    assume(m % grid[0] == 0 and n % grid[1] == 0)
    a = layout(m, k, ka, pads[0], offs[0])
    b = layout(k, n, kb, pads[1], offs[1])
    c = layout(m, n, kc, pads[2], offs[2])
    before = ktir.parse(matmul_kernel(m, n, k, a, b, c, dtype, grid=grid), "mm.ktir")
    result = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.05))
    assert result.report.applied, result.report.reason
    verdict = check_equivalent(before, result.module, seed=1)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("order", ["shared", "shared_stream"])
def test_shared_panels_keep_layouts(order: str) -> None:
    """The shared-panel rewrite reads A, B and C through the input's strides and offsets too."""
    from schedulers.emit_matmul import emit_matmul
    from schedulers.spaces import SHARED, SHARED_STREAM

    M, N, K = 64, 256, 256
    before = ktir.parse(matmul_kernel(M, N, K, layout(M, K, "col", pad=2, offset=9), layout(K, N, "col"),
                                      layout(M, N, "row", pad=4, offset=33)), "mm.ktir")
    rec = recognise(before)
    assert isinstance(rec.kernel, MatmulKernel), rec.reason
    point = {"gm": 4, "gn": 1, "bm": 16, "bn": 64, "bk": 64, "db": 1, "pp": 1,
             "order": SHARED if order == "shared" else SHARED_STREAM}
    after = emit_matmul(rec.kernel, rec.fn, point)
    verdict = check_equivalent(before, after, seed=4)
    assert verdict.ok, verdict.message


def test_a_matmul_into_its_own_operand_is_declined() -> None:
    M, N, K = 16, 64, 64
    text = matmul_kernel(M, N, K, layout(M, K, "row"), layout(K, N, "row"), layout(M, N, "row"))
    text = text.replace("%c = ktdp.construct_memory_view %c_ptr", "%c = ktdp.construct_memory_view %a_ptr")
    assert "also reads" in _declined(text)
