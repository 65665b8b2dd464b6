"""The constructs ktir-cpu's example kernels use, in programs written here (ktir.builder), each
validated and run, the numbers checked against numpy:

- `linalg.matmul` accumulating into `tensor.empty()`: `runtime.undefined` naming `--lenient`;
  with `strict=False` the contents read as zeros (spec execution.md#dynamic-errors);
- views at constant element addresses, run with the arrays placed by `run(memory=...)` and
  `ktir run --memory` (spec execution.md#kernels-and-launches);
- a memory view whose coordinate set has fewer symbols than the view has dynamic sizes (the
  symbols bind to the first sizes): `ktir validate` accepts it and the interpreter runs it;
- `tensor.collapse_shape` to rank 0 with `[]`, then `linalg.broadcast`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.builder import Builder, box
from ktir.cli import main
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from reference_interp.errors import KtirRuntimeError
from reference_interp.executor import At
from tests.compat.built import valid

F32, F16 = ty.F32, ty.F16


def _matmul_into_empty(m: int, k: int, n: int) -> ktir.Module:
    b = Builder()
    with b.func("mm", [("a", ty.INDEX), ("bb", ty.INDEX), ("c", ty.INDEX)]) as (a, bb, c):
        z = b.index(0, "z")
        av = b.memory_view(a, [m, k], [k, 1], F32, name="av")
        bv = b.memory_view(bb, [k, n], [n, 1], F32, name="bv")
        cv = b.memory_view(c, [m, n], [n, 1], F32, name="cv")
        x = b.load(b.access_tile(av, [z, z], box(m, k), [m, k], name="at"), F32, "x")
        y = b.load(b.access_tile(bv, [z, z], box(k, n), [k, n], name="bt"), F32, "y")
        prod = b.dps("linalg.matmul", [x, y], [b.empty(ty.tensor((m, n), F32), "e")], name="p")
        b.store(prod, b.access_tile(cv, [z, z], box(m, n), [m, n], name="ct"))
        b.func_return()
    return valid(b)


def test_matmul_into_tensor_empty_is_undefined_and_lenient_reads_zeros() -> None:
    module = _matmul_into_empty(3, 5, 4)
    rng = np.random.default_rng(0)
    args = {"a": rng.standard_normal((3, 5)).astype(np.float32), "bb": rng.standard_normal((5, 4)).astype(np.float32),
            "c": np.zeros((3, 4), np.float32)}
    with pytest.raises(KtirRuntimeError) as e:
        ri.run(module, args=args)
    assert e.value.kind == "undefined" and "--lenient" in e.value.detail and "linalg.matmul" in e.value.detail
    result = ri.run(module, args=args, strict=False)
    np.testing.assert_allclose(result.outputs["c"], args["a"] @ args["bb"], rtol=1e-5, atol=1e-6)


def _fixed_addresses(rows: int, cols: int, addr: tuple[int, int, int]) -> ktir.Module:
    """C = A + B over views at constant element addresses (RFC 0682 example B's style)."""
    b = Builder()
    with b.func("add", []):
        z = b.index(0, "z")
        views = [b.memory_view(b.index(a, f"{n}_addr"), [rows, cols], [cols, 1], F16, name=f"{n}v")
                 for n, a in zip("abc", addr, strict=True)]
        x, y = (b.load(b.access_tile(v, [z, z], box(rows, cols), [rows, cols], name=f"{n}t"), F16, n)
                for n, v in zip("xy", views[:2], strict=True))
        s = b.create("arith.addf", [x, y], [ty.tensor((rows, cols), F16)], result_names=["s"])[0]
        b.store(s, b.access_tile(views[2], [z, z], box(rows, cols), [rows, cols], name="ct"))
        b.func_return()
    return valid(b)


def test_constant_addresses_run_with_placed_memory(tmp_path: Path) -> None:
    addr = (1024, 12288, 18432)  # f16 elements: 128-byte aligned, apart
    module = _fixed_addresses(6, 64, addr)
    rng = np.random.default_rng(1)
    a, bb = (rng.standard_normal((6, 64)).astype(np.float16) for _ in range(2))
    memory = {"A": At(a, addr[0]), "B": At(bb, addr[1]), "C": At(np.zeros((6, 64), np.float16), addr[2])}
    with pytest.raises(KtirRuntimeError) as e:  # without the arrays: where to put them is named
        ri.run(module)
    assert e.value.kind == "out-of-bounds" and "--memory" in e.value.detail
    result = ri.run(module, memory=memory)
    np.testing.assert_array_equal(result.outputs["C"], a + bb)
    # the same from the command line, the placed arrays written back to --out
    path = tmp_path / "add.ktir"
    path.write_text(ktir.print_module(module))
    argv = ["run", str(path), "--out", str(tmp_path / "o.npz")]
    for name, arr, where in (("A", a, addr[0]), ("B", bb, addr[1]), ("C", np.zeros_like(a), addr[2])):
        np.save(tmp_path / f"{name}.npy", arr)
        argv += ["--memory", f"{name}={where}:{tmp_path / name}.npy"]
    assert main(argv) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["C"], a + bb)


def test_memory_flag_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "add.ktir"
    path.write_text(ktir.print_module(_fixed_addresses(2, 64, (0, 1024, 2048))))
    np.save(tmp_path / "a.npy", np.zeros((2, 64), np.float16))
    assert main(["run", str(path), "--memory", "A=7:" + str(tmp_path / "a.npy")]) == 1  # not 128-byte aligned
    assert "not 128-byte aligned" in capsys.readouterr().err
    assert main(["run", str(path), "--memory", "A:" + str(tmp_path / "a.npy")]) == 2
    assert "NAME=ADDRESS:PATH.npy" in capsys.readouterr().err
    assert main(["run", str(path), "--random-inputs", "-1"]) == 2  # a usage error, no traceback
    assert "negative" in capsys.readouterr().err


def _paged_rows(rows: int, cols: int) -> ktir.Module:
    """A view of `rows` x `cols` with both sizes dynamic and a coordinate set with one symbol,
    which binds to the first dynamic size (the rows): upstream's paged-tensor kernels."""
    b = Builder()
    i, j, s0 = af.dim(0), af.dim(1), af.sym(0)
    rows_set = af.IntegerSet(num_dims=2, num_symbols=1, constraints=(
        af.Constraint(expr=i, is_equality=False), af.Constraint(expr=-i + s0 - 1, is_equality=False),
        af.Constraint(expr=j, is_equality=False), af.Constraint(expr=-j + (cols - 1), is_equality=False)))
    with b.func("copy", [("x", ty.INDEX), ("y", ty.INDEX), ("n", ty.INDEX), ("m", ty.INDEX)]) as (x, y, n, m):
        z = b.index(0, "z")
        xv = b.memory_view(x, [n, m], [m, 1], F32, coordinate_set=at.IntegerSetAttr(value=rows_set), name="xv")
        yv = b.memory_view(y, [rows, cols], [cols, 1], F32, name="yv")
        data = b.load(b.access_tile(xv, [z, z], box(rows, cols), [rows, cols], name="xt"), F32, "d")
        b.store(data, b.access_tile(yv, [z, z], box(rows, cols), [rows, cols], name="yt"))
        b.func_return()
    return valid(b)


def test_fewer_set_symbols_than_dynamic_sizes_validate_and_run() -> None:
    module = _paged_rows(4, 8)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    result = ri.run(module, args={"x": x, "y": np.zeros((4, 8), np.float32), "n": 4, "m": 8})
    np.testing.assert_array_equal(result.outputs["y"], x)
    with pytest.raises(KtirRuntimeError) as e:  # the symbol is the row count: 3 rows leave row 3 out of the set
        ri.run(module, args={"x": x, "y": np.zeros((4, 8), np.float32), "n": 3, "m": 8})
    assert e.value.kind in ("out-of-view", "type")


def test_rank_zero_collapse_then_broadcast() -> None:
    b = Builder()
    with b.func("bcast", [("src", ty.INDEX), ("out", ty.INDEX)]) as (src, out):
        z = b.index(0, "z")
        sv = b.memory_view(src, [1, 1], [1, 1], F16, name="sv")
        ov = b.memory_view(out, [4, 64], [64, 1], F16, name="ov")
        one = b.load(b.access_tile(sv, [z, z], box(1, 1), [1, 1], name="st"), F16, "one")
        scalar = b.collapse_shape(one, [], ty.tensor((), F16), "scalar")
        wide = b.dps("linalg.broadcast", [scalar], [b.empty(ty.tensor((4, 64), F16), "e")],
                     {"dimensions": at.i64_array([0, 1])}, name="wide")
        b.store(wide, b.access_tile(ov, [z, z], box(4, 64), [4, 64], name="ot"))
        b.func_return()
    module = valid(b)
    assert "tensor.collapse_shape %one [] : tensor<1x1xf16> into tensor<f16>" in ktir.print_module(module)
    result = ri.run(module, args={"src": np.full((1, 1), 2.5, np.float16), "out": np.zeros((4, 64), np.float16)})
    np.testing.assert_array_equal(result.outputs["out"], np.full((4, 64), 2.5, np.float16))


def test_short_bodies_with_flags_read_and_run() -> None:
    """`linalg.reduce { arith.addi {overflowFlags = #arith.overflow<none>} }`, as MLIR 22 prints
    it, reads (the default flag is the custom form's absent one, others are kept) and runs."""
    path = Path(__file__).resolve().parent / "mlir" / "short_body_flags.mlir"
    module = ktir.parse(path.read_text(), path.name)
    text = ktir.print_module(module)
    assert "linalg.reduce { arith.addi } ins" in text  # overflow<none> is no flag at all
    assert "{ arith.muli {overflowFlags = #arith.overflow<nsw,nuw>} }" in text
    assert "{ arith.addf {fastmath = #arith.fastmath<fast>} }" in text
    assert ktir.print_module(ktir.parse(text, "again.mlir")) == text
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-50, 50, (4, 8)).astype(np.int32) for _ in range(2))
    x = rng.standard_normal((4, 8)).astype(np.float32)
    r, m, rf, rm = ri.run(module, "short_bodies", args={"a": a, "b": b, "x": x}).returns[0]
    np.testing.assert_array_equal(r, a.sum(1))
    np.testing.assert_array_equal(m, a * b)
    np.testing.assert_allclose(rf, x.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(rm, np.maximum(a.max(1), 0))  # the init is 0
    # compares and selects in short bodies, as MLIR 22 prints them
    assert "{ arith.cmpf {predicate = 4 : i64} }" in text and "{ arith.select }" in text
    y = rng.standard_normal((4, 8)).astype(np.float32)
    c = rng.integers(0, 2, (4, 8)).astype(bool)
    lt, pick, ab = ri.run(module, "short_compares", args={"x": x, "y": y, "c": c}).returns[0]
    np.testing.assert_array_equal(lt, x < y)
    np.testing.assert_array_equal(pick, np.where(c, x, y))
    np.testing.assert_array_equal(ab, np.abs(x))


def test_groups_on_the_op_read_as_legacy_and_run() -> None:
    """ktir-cpu's oldest inter-tile spelling (`groups = #set` on the op, `!ktdp.tile_future<T>`):
    read with warnings, printed canonically, and the groups mean what they say."""
    path = Path(__file__).resolve().parents[1] / "corpus" / "legacy" / "groups_on_op.ktir"
    module = ktir.parse(path.read_text(), path.name)
    assert sum("'groups = ...' on the op" in w.message for w in module.warnings) == 2
    text = ktir.print_module(module)
    assert "groups = #two_groups" not in text.replace("!ktdp.tile_future<(tensor<1x16xf32>), groups = #two_groups>", "")
    again = ktir.parse(text, "canonical.ktir")
    assert not again.warnings and again == ktir.parse(text, "canonical.ktir")
    x = np.random.default_rng(4).standard_normal((8, 16)).astype(np.float32)
    result = ri.run(again, args={"x": x, "y": np.zeros((2, 16), np.float32)})
    np.testing.assert_allclose(result.outputs["y"], x.reshape(2, 4, 16).sum(1), rtol=1e-5, atol=1e-6)


def test_random_inputs_size_a_gathered_table_by_its_view(tmp_path: Path) -> None:
    """The probe run that sizes pointer arguments binds the index array as zeros, so it reads
    row 0 of the table only; the table is sized by its view ([V, H]) instead, and the random
    indices (in [0, 8)) reach rows that exist (issue 27, point 6)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "embedding_gather.ktir"
    out = tmp_path / "r.npz"
    assert main(["run", str(example), "--random-inputs", "2", "--arg", "V=64", "--arg", "B=256", "--arg", "H=1024",
                 "--out", str(out)]) == 0
    got = np.load(out)
    assert got["e_ptr"].size == 64 * 1024
    table, ids = got["e_ptr"].reshape(64, 1024), got["ids_ptr"]
    np.testing.assert_array_equal(got["y_ptr"].reshape(256, 1024), table[ids])
