"""The plainest kernels a kernel author writes (tests/compat/programs): one tile, whole 2-D
arrays, ktdp views and tiles with linalg/arith/math compute, or plain memref/tensor
functions. Each runs through the Python API and `ktir run` (with .npy inputs and with
--random-inputs), and the numbers are checked against numpy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.cli import main

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# file -> (input shapes, output name and shape, numpy reference of the output from the inputs)
KERNELS: dict[str, tuple[dict[str, tuple[int, ...]], tuple[str, tuple[int, ...]], Callable[..., np.ndarray]]] = {
    "add.mlir": ({"A": (4, 8), "B": (4, 8)}, ("C", (4, 8)), lambda A, B: A + B),
    "matmul.mlir": ({"A": (4, 8), "B": (8, 6)}, ("C", (4, 6)), lambda A, B: A @ B),
    "softmax.mlir": ({"X": (4, 16)}, ("Y", (4, 16)), _softmax),
    "rowsum.mlir": ({"X": (4, 16)}, ("Y", (4,)), lambda X: X.sum(axis=1)),
    "tanh_no_coordinate_set.mlir": ({"A": (4, 8)}, ("C", (4, 8)), np.tanh),
    "memref_args.mlir": ({"a": (4, 8), "b": (4, 8)}, ("c", (4, 8)), lambda a, b: a + b),
}


def _inputs(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_api_run_matches_numpy(name: str) -> None:
    shapes, (out, out_shape), reference = KERNELS[name]
    module = ktir.parse((PROGRAMS / name).read_text(), name)
    args = {**_inputs(shapes, 1), out: np.zeros(out_shape, np.float32)}
    result = ri.run(module, args=args)
    want = reference(*(args[k] for k in shapes))
    np.testing.assert_allclose(result.outputs[out].reshape(out_shape), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cli_run_with_npy_and_random_inputs(tmp_path: Path, name: str) -> None:
    shapes, (out, out_shape), reference = KERNELS[name]
    given = {**_inputs(shapes, 2), out: np.zeros(out_shape, np.float32)}
    argv = []
    for key, value in given.items():
        np.save(tmp_path / f"{key}.npy", value)
        argv += ["--arg", f"{key}={tmp_path / key}.npy"]
    assert main(["run", str(PROGRAMS / name), *argv, "--out", str(tmp_path / "o.npz")]) == 0
    got = np.load(tmp_path / "o.npz")
    np.testing.assert_allclose(got[out], reference(*(given[k] for k in shapes)), rtol=1e-5, atol=1e-6)
    # random inputs: the arrays come back in --out, so the result can be checked from them
    assert main(["run", str(PROGRAMS / name), "--random-inputs", "7", "--out", str(tmp_path / "r.npz")]) == 0
    got = np.load(tmp_path / "r.npz")
    inputs = [got[k].reshape(shapes[k]) for k in shapes]
    np.testing.assert_allclose(got[out].reshape(out_shape), reference(*inputs), rtol=1e-5, atol=1e-6)


def test_tensor_function_writes_its_arguments_and_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A function over tensors returns its result: --out holds the tensor arguments (the
    random inputs) and `return.0`, and the summary line names what was returned."""
    path = str(PROGRAMS / "tensor_fn.mlir")
    assert main(["run", path, "--random-inputs", "3", "--out", str(tmp_path / "t.npz")]) == 0
    got = np.load(tmp_path / "t.npz")
    assert sorted(got.files) == ["a", "b", "return.0"]
    np.testing.assert_array_equal(got["return.0"], got["a"] + got["b"])
    assert main(["run", path, "--random-inputs", "3"]) == 0
    assert "returned: return.0 [4, 8] float32" in capsys.readouterr().out


def test_returned_scalars_keep_their_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MLIR's integer and float semantics (signed/unsigned division, remainders, shifts, NaN
    handling of min/max, ordered/unordered compares), returned as values of the result types."""
    path = str(PROGRAMS / "scalar_integer_semantics.mlir")
    argv = ["run", path, "--arg", "a=-7", "--arg", "b=2", "--arg", "x=-7.5", "--arg", "y=2.0"]
    assert main([*argv, "--out", str(tmp_path / "s.npz")]) == 0
    got = np.load(tmp_path / "s.npz")
    values = [got[f"return.{k}"] for k in range(20)]
    want = [-3, -1, -4, -3, 2147483644, 1, 1073741822, -1.5, -7.5, np.nan, 2.0, np.nan, True, False, -7,
            4294967296.0, -2, 4294967289, -7, -7]
    for k, (value, expected) in enumerate(zip(values, want, strict=True)):
        np.testing.assert_equal(value, expected, err_msg=f"return.{k}")
    dtypes = [v.dtype.name for v in values]
    assert dtypes == ["int32"] * 7 + ["float32"] * 5 + ["bool"] * 2 + ["int8", "float32", "int32", "int64", "int32", "int32"]
    assert main(argv) == 0
    assert "return.0 = -3 (int32)" in capsys.readouterr().out


def test_returns_of_several_tiles_are_stacked(tmp_path: Path) -> None:
    text = ("func.func @f(%x: f32) -> (f32, index) attributes {grid = [2]} {\n"
            "  %t = ktdp.get_compute_tile_id : index\n  return %x, %t : f32, index\n}\n")
    (tmp_path / "g.mlir").write_text(text)
    assert main(["run", str(tmp_path / "g.mlir"), "--arg", "x=2.0", "--out", str(tmp_path / "g.npz")]) == 0
    got = np.load(tmp_path / "g.npz")
    np.testing.assert_array_equal(got["return.0"], np.array([2.0, 2.0], np.float32))
    np.testing.assert_array_equal(got["return.1"], np.array([0, 1], np.int64))


def test_random_inputs_of_an_element_type_without_arrays_is_a_diagnostic(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The interpreter holds i4 scalars but has no i4 arrays: --random-inputs says so (it
    raised a Python traceback)."""
    path = tmp_path / "i4.mlir"
    path.write_text("func.func @f(%a: tensor<4xi4>) -> tensor<4xi4> {\n  %0 = arith.addi %a, %a : tensor<4xi4>\n"
                    "  return %0 : tensor<4xi4>\n}\n")
    assert main(["run", str(path), "--random-inputs", "0"]) == 1
    err = capsys.readouterr().err
    assert "error[runtime.unsupported]: argument a: the interpreter has no arrays of i4" in err
    assert "Traceback" not in err


def test_returned_memref_gives_its_contents_and_undefined_values_are_left_out(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.float32))
    view = tmp_path / "view.mlir"
    view.write_text("func.func @f(%A: index) -> memref<2x2xf32> {\n  %v = ktdp.construct_memory_view %A, sizes: [2, 2], "
                    "strides: [1, 2] {memory_space = #ktdp.memory_space<global>} : memref<2x2xf32>\n"
                    "  return %v : memref<2x2xf32>\n}\n")
    assert main(["run", str(view), "--arg", f"A={tmp_path / 'a.npy'}", "--out", str(tmp_path / "v.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "v.npz")["return.0"], [[0.0, 2.0], [1.0, 3.0]])  # column-major
    empty = tmp_path / "empty.mlir"
    empty.write_text("func.func @f() -> tensor<4xf32> {\n  %0 = tensor.empty() : tensor<4xf32>\n"
                     "  return %0 : tensor<4xf32>\n}\n")
    assert main(["run", str(empty), "--out", str(tmp_path / "e.npz")]) == 0
    assert np.load(tmp_path / "e.npz").files == []


def test_random_inputs_beyond_the_memory_limit_are_a_diagnostic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A huge static shape (128 GiB here) is a runtime.memory-limit error, not a MemoryError
    (found by the fuzzing lane on a mutated tests/compat/mlir/strided.mlir)."""
    path = tmp_path / "huge.mlir"
    path.write_text("func.func @f(%k: memref<4294967296x8xf32>) {\n  return\n}\n")
    assert main(["run", str(path), "--random-inputs", "0"]) == 1
    err = capsys.readouterr().err
    assert "error[runtime.memory-limit]: argument k needs 137438953472 bytes (limit 2147483648)" in err


def test_loop_over_row_blocks_with_a_tensor_accumulator(tmp_path: Path) -> None:
    """One tile walks 16 rows 4 at a time: each block is scaled and stored, and its column
    sums accumulate in an scf.for iter_arg tensor."""
    x = np.random.default_rng(5).standard_normal((16, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    for name in ("y", "s"):
        np.save(tmp_path / f"{name}.npy", np.zeros((16, 8) if name == "y" else 8, np.float32))
    argv = ["--arg", f"X={tmp_path / 'x.npy'}", "--arg", f"Y={tmp_path / 'y.npy'}", "--arg", f"S={tmp_path / 's.npy'}"]
    assert main(["run", str(PROGRAMS / "loop_rows.mlir"), *argv, "--out", str(tmp_path / "o.npz")]) == 0
    got = np.load(tmp_path / "o.npz")
    np.testing.assert_array_equal(got["Y"], 2 * x)
    np.testing.assert_allclose(got["S"], x.sum(axis=0), rtol=1e-5, atol=1e-5)
