"""What the extended fuzzing lane (issue 33) found, kept as regression tests: each input in
its smallest form, and what it must give now."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import ktir
import reference_interp
from ktir.syntax.generic_printer import _inline_future_groups, print_generic

sys.path.insert(0, str(Path(__file__).parent))
from cli_case import CliCase, run_cli  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


def _round_trips(text: str) -> ktir.Module:
    module = ktir.parse(text)
    assert ktir.parse(ktir.print_module(module)) == module
    assert ktir.parse(print_generic(module, None)) == _inline_future_groups(module)
    return module


def test_an_op_with_successors_prints_in_generic_form() -> None:
    # grammar generator: the custom form of func.return dropped `[^bb1]`
    module = _round_trips('"func.return"()[^x, ^bb0] {a = 1} : () -> ()\n')
    assert '"func.return"()[^x, ^bb0]' in ktir.print_module(module)


def test_a_misspelt_iterator_type_is_a_verifier_error() -> None:
    # corpus mutation: iterator_types = ["parallel", "redu^ction"] verified, and the interpreter
    # took the reduction for a parallel loop (a ValueError inside linalg.generic); mlir-opt-22
    # rejects it ("unexpected iterator_type")
    from ktir.verify import validate_text

    text = ("#a = affine_map<(d0, d1) -> (d0, d1)>\n#r = affine_map<(d0, d1) -> (d0)>\n"
            "func.func @f(%x: tensor<4x8xf32>, %i: tensor<4xf32>) -> tensor<4xf32> {\n"
            '  %0 = linalg.generic {indexing_maps = [#a, #r], iterator_types = ["parallel", "redu^ction"]} '
            "ins(%x : tensor<4x8xf32>) outs(%i : tensor<4xf32>) {\n"
            "  ^bb0(%v: f32, %o: f32):\n    %s = arith.addf %v, %o : f32\n    linalg.yield %s : f32\n"
            "  } -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    _, found = validate_text(text, "f.ktir")
    diags = [d for d in found if d.severity == "error"]
    assert [d.id for d in diags] == ["linalg.generic.C7"], diags


def test_an_iterator_type_that_is_no_word_stays_a_string_in_generic_form() -> None:
    # corpus mutation: iterator_types = ["p%arallel"] became #linalg.iterator_type<p%arallel>,
    # which reads back as another attribute
    module = _round_trips(
        "#m = affine_map<(d0) -> (d0)>\n"
        "func.func @f(%x: tensor<4xf32>) {\n"
        '  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["p%arallel"]} ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {\n'
        "  ^bb0(%a: f32, %b: f32):\n    linalg.yield %a : f32\n  } -> tensor<4xf32>\n  return\n}\n"
    )
    assert '"p%arallel"' in print_generic(module, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # grammar generator: a bit pattern wider than the element type (float_from_bits overflowed)
        ("func.func @f() {\n  %c = arith.constant dense<[0x7C00]> : tensor<1xf8E5M2>\n  return\n}\n",
         "hexadecimal float 0x7c00 has more than the 8 bits of f8E5M2"),
        # grammar generator: a static size outside int64 printed, then refused in generic form
        ("func.func @f(%x: tensor<4xf32>, %y: tensor<8xf32>) {\n"
         "  %r = tensor.insert_slice %x into %y[0] [-18446744073709551616] [1] : tensor<4xf32> into tensor<8xf32>\n  return\n}\n",
         "integer constant -18446744073709551616 out of range of i64"),
    ],
)
def test_a_value_out_of_range_is_a_located_error(text: str, message: str) -> None:
    for fast in (True, False):
        with pytest.raises(ktir.ParseError) as info:
            ktir.parse(text, fast=fast)
        assert info.value.message == message and info.value.line == 2


def test_a_stride_beyond_the_address_range_in_bytes_is_a_runtime_error() -> None:
    # limits generator: size 1, stride 2**63 - 1 (in range as elements, not as bytes) reached
    # numpy as a byte stride and failed inside the interpreter (runtime.internal)
    module = ktir.parse(
        "func.func @f(%out: index) {\n  %c0 = arith.constant 0 : index\n  %x = arith.constant dense<1.0> : tensor<1xf32>\n"
        "  %v = ktdp.construct_memory_view %out, sizes: [1], strides: [9223372036854775807] {memory_space = #ktdp.memory_space<global>} : memref<1xf32>\n"
        "  %t = ktdp.construct_access_tile %v[%c0] {access_tile_order = affine_map<(d0) -> (d0)>, access_tile_set = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>} : memref<1xf32> -> !ktdp.access_tile<1xindex>\n"
        "  ktdp.store %x, %t : tensor<1xf32>, !ktdp.access_tile<1xindex>\n  return\n}\n"
    )
    with pytest.raises(reference_interp.KtirRuntimeError) as info:
        reference_interp.run(module, args={"out": __import__("numpy").zeros(4, "float32")})
    assert info.value.kind == "out-of-bounds" and info.value.op is not None and info.value.op.loc.line == 4


def test_a_tile_set_past_the_grid_is_refused_before_it_is_listed() -> None:
    # corpus mutation: a producer set bounded by 2^63 - 1 was listed tile by tile (range()
    # raised OverflowError: runtime.internal) before its tiles were checked against the grid
    module = ktir.parse(
        "#all = affine_set<(d0)[s0] : (d0 >= 0, -d0 + 9223372036854775807 >= 0)>\n#one = affine_set<(d0) : (d0 == 0)>\n"
        "func.func @f() attributes {grid = [4]} {\n  %x = arith.constant dense<1.0> : tensor<2xf32>\n"
        "  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<2xf32>), groups = #one> {\n"
        "  ^bb0(%g: index):\n    ktdp.yield_partial %x : tensor<2xf32>\n  }\n"
        "  %r = ktdp.inter_tile_gather(%f) consumer_tiles_per_group = #all, gather_dimensions = [0] : "
        "!ktdp.tile_future<(tensor<2xf32>), groups = #one> -> tensor<8xf32>\n  return\n}\n"
    )
    with pytest.raises(reference_interp.KtirRuntimeError) as info:
        reference_interp.run(module)
    assert info.value.kind == "out-of-bounds" and info.value.op is not None and info.value.op.loc.line == 5
    assert "producer_tiles_per_group names tile 4, outside the grid of 4 tiles" in info.value.detail


def test_all_to_all_dimensions_out_of_range_are_a_verifier_error() -> None:
    # corpus mutation: concat_dimensions = [255] on rank-2 partials verified clean and numpy
    # raised AxisError in the interpreter (runtime.internal)
    from ktir.verify import verify

    module = ktir.parse(
        "#all = affine_set<(d0) : (d0 >= 0, -d0 + 1 >= 0)>\n#one = affine_set<(d0) : (d0 == 0)>\n"
        "func.func @f() attributes {grid = [2]} {\n  %x = arith.constant dense<1.0> : tensor<1x4xf32>\n"
        "  %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<1x4xf32>), groups = #one> {\n"
        "  ^bb0(%g: index):\n    ktdp.yield_partial %x : tensor<1x4xf32>\n  }\n"
        "  %r = ktdp.inter_tile_all_to_all(%f) consumer_tiles_per_group = #all, split_dimensions = [1], concat_dimensions = [255] : "
        "!ktdp.tile_future<(tensor<1x4xf32>), groups = #one> -> tensor<2x2xf32>\n  return\n}\n"
    )
    errors = [d for d in verify(module, "k.ktir") if d.severity == "error" and "all_to_all" in d.id]
    assert [(d.id, d.line) for d in errors] == [("ktdp.inter_tile_all_to_all.C1", 9)]
    assert "dimension 255 is out of range for the partial tensor<1x4xf32> of rank 2" in errors[0].message


def test_a_groupless_tile_future_prints_as_read() -> None:
    # grammar generator: ktir-cpu's `!ktdp.tile_future<T>` outside an op with `groups = ...`
    # printed as `groups = unit`, which does not parse
    module = _round_trips("func.func @f(%x: !ktdp.tile_future<tensor<4xf32>>) {\n  return\n}\n")
    assert "!ktdp.tile_future<tensor<4xf32>>" in ktir.print_module(module)


def _program_files(manifest: dict[str, object] | None = None) -> dict[str, bytes]:
    folder = FIXTURES / "program"
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    if manifest is not None:
        files["p.manifest.json"] = json.dumps(manifest).encode()
    return files


def _manifest() -> dict[str, object]:
    return json.loads((FIXTURES / "program" / "p.manifest.json").read_text())  # type: ignore[no-any-return]


def test_a_program_runs_from_its_fixture() -> None:
    code, out, err = run_cli(CliCase(["run-program", "p.manifest.json", "--input", "x=x.npy"], _program_files()))
    assert code == 0 and "y: f16 [8, 8]" in out, err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m["outputs"][0].update(strides=[1]), "output y: shape, strides and offset must be as many"),
        (lambda m: m["outputs"][0].update(offset=60), "output y: reaches element 123 of buffer y, which has 64"),
        (lambda m: m["kernels"][0]["args"].append("nowhere"), "kernel add: no buffer nowhere"),
        (lambda m: m["inputs"][0].update(buffer="nowhere"), "input x: no buffer nowhere"),
        (lambda m: m["buffers"][2].update(dtype="f17"), "buffer y: element type 'f17' is not one of"),
        (lambda m: m["buffers"][2].update(elements=-1), "buffer y: negative size"),
    ],
    ids=["strides", "outside", "kernel-arg", "input-buffer", "dtype", "negative"],
)
def test_an_inconsistent_program_manifest_is_a_named_error(change, message: str) -> None:  # type: ignore[no-untyped-def]
    # readers generator: a mutated manifest reached numpy (as_strided, zeros, a KeyError)
    manifest = _manifest()
    change(manifest)
    code, _, err = run_cli(CliCase(["run-program", "p.manifest.json", "--input", "x=x.npy"], _program_files(manifest)))
    assert code == 1 and message in err and "Traceback" not in err, err


def test_an_output_of_no_elements_prints_without_statistics() -> None:
    # readers generator: an output view of shape [0, 8] made `ktir run-program` take the minimum
    # of an empty array (a traceback)
    manifest = _manifest()
    manifest["outputs"][0].update(shape=[0, 8])  # type: ignore[index]
    code, out, err = run_cli(CliCase(["run-program", "p.manifest.json", "--input", "x=x.npy"], _program_files(manifest)))
    assert code == 0 and "y: f16 [0, 8]  no elements" in out and "Traceback" not in err, err


def test_a_huge_buffer_is_a_program_error() -> None:
    manifest = _manifest()
    manifest["buffers"][2]["elements"] = 10**15  # type: ignore[index]
    code, _, err = run_cli(CliCase(["run-program", "p.manifest.json", "--input", "x=x.npy"], _program_files(manifest)))
    assert code == 1 and "buffer y: cannot allocate 1000000000000000 elements of f16" in err, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run-program", "p.manifest.json", "--random-inputs", "-1"], "--random-inputs -1: a seed is a non-negative integer"),
        (["conformance", "run", "-k", "core.arith.addf.f32.4x8", "--jobs", "9" * 30], "-j must be at least 1 (and at most 1024)"),
    ],
)
def test_a_bad_number_is_a_usage_error(argv: list[str], message: str) -> None:
    # cli generator: numpy's seed check and multiprocessing's C int raised
    code, _, err = run_cli(CliCase(argv, _program_files()))
    assert code == 2 and message in err and "Traceback" not in err, err


def test_a_results_file_without_a_status_count_is_a_named_error() -> None:
    # readers generator: `conformance report r.json --junit o.xml` raised KeyError 'not_supported'
    results = json.loads((FIXTURES / "results.json").read_text())
    del results["levels"][0]["counts"]["not_supported"]
    code, _, err = run_cli(CliCase(["conformance", "report", "r.json", "--junit", "o.xml"], {"r.json": json.dumps(results).encode()}))
    assert code == 2 and "r.json: levels.0.counts: Value error, no count for not_supported" in err, err


@pytest.mark.parametrize("timeout", ["999999999999999999999999999999", "nan", "-1", "inf"])
def test_a_conformance_timeout_out_of_range_is_a_usage_error(timeout: str) -> None:
    # cli generator: `--timeout 1e29` reached setitimer (OverflowError: timestamp out of range)
    code, _, err = run_cli(CliCase(["conformance", "run", "-k", "core.arith.addf.f32.4x8", "--timeout", timeout]))
    assert code == 2 and "--timeout is seconds from 0 (none) to 1000000" in err, err


ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = (ROOT / "examples" / "vector_add.ktir").read_bytes()


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "k.ktir", "--random-inputs", "0", "--report"],
        ["schedule", "k.ktir", "--target", "spyre", "--size", "N=65536", "-q"],
        ["schedule", "k.ktir", "--target", "spyre", "--size", "N=65536"],
    ],
)
def test_a_name_that_is_rich_markup_prints_as_text(argv: list[str]) -> None:
    # rich read `[/x]` in a kernel's name (a quoted symbol) as a closing tag: MarkupError
    kernel = VECTOR_ADD.replace(b"@vector_add", b'@"v[/x]add"')
    code, out, err = run_cli(CliCase(argv, {"k.ktir": kernel}))
    assert "Traceback" not in out + err and code == 0, err
    assert "v[/x]add" in out + err


def test_markup_in_a_target_or_results_file_prints_as_text() -> None:
    target = (ROOT / "ktir" / "targets" / "spyre.toml").read_text().replace("IBM Spyre Accelerator", "bad [/x] title", 1)
    code, out, err = run_cli(CliCase(["targets", "show", "t.toml"], {"t.toml": target.encode()}))
    assert code == 0 and "bad [/x] title" in out, err
    results = json.loads((FIXTURES / "results.json").read_text())
    results["cases"][0].update(status="fail", message="bad [/x] thing", id="a[/b]")
    results["levels"][2]["why"] = "[/oops]"
    code, out, err = run_cli(CliCase(["conformance", "report", "r.json"], {"r.json": json.dumps(results).encode()}))
    assert code in (0, 1) and "Traceback" not in out + err and "a[/b]: bad [/x] thing" in out + err, err


@pytest.mark.parametrize("lower", [-(2**63), 0])
def test_a_parallel_loop_past_the_step_limit_is_a_located_error(lower: int) -> None:
    # corpus mutation: scf.parallel from -2^63 to 8 made itertools.product list the range
    # (OverflowError: runtime.internal); it must fail the way scf.for does, before running
    from ktir.builder import Builder
    from ktir.dialects.names import Memref
    from ktir.ir import types as ty
    from ktir.verify import verify

    np = pytest.importorskip("numpy")
    b = Builder()
    memref = ty.memref((8,), ty.F32)
    with b.func("f", [("m", memref)]) as (m,):
        lo, hi, one = b.index(lower), b.index(8), b.index(1)
        with b.parallel([lo], [hi], [one]) as (i,):
            v = b.create(Memref.load, [m, i], [memref.element_type])[0]
            b.create(Memref.store, [v, m, i], [])
        b.func_return()
    module = ktir.parse(ktir.print_module(b.module))
    assert [d for d in verify(module, "p.ktir") if d.severity == "error"] == []
    data = np.arange(8, dtype=np.float32)
    if lower == 0:  # the loop itself is fine: it runs
        reference_interp.run(module, args={"m": data}, step_limit=10_000)
        return
    with pytest.raises(reference_interp.KtirRuntimeError) as info:
        reference_interp.run(module, args={"m": data}, step_limit=10_000)
    assert info.value.kind == "step-limit" and "this scf.parallel would run 9,223,372,036,854,775,816 iterations" in str(info.value)
    assert info.value.op is not None and info.value.op.loc is not None and info.value.op.loc.line == 5
