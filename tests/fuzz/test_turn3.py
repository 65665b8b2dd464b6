"""Every input of the independent fuzzing of issue 33 (tests/fuzz/invalid/turn3/): a located error or
a correct result, and a round trip (custom and generic form) when it parses.

The damaged grammar table cache is tests/syntax/test_tables.py::test_a_cache_with_a_flipped_bit_is_rebuilt;
the deeply nested JSON files are regenerated here (DEEP) rather than copied.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import ktir
import reference_interp
from ktir.syntax.diagnostics import render
from ktir.syntax.generic_printer import _inline_future_groups, print_generic
from ktir.verify import verify

HERE = Path(__file__).parent / "invalid" / "turn3"
sys.path.insert(0, str(Path(__file__).parent))
from cli_case import CliCase, Link, run_cli  # noqa: E402

# file -> (line, column, message start) of the located syntax error
PARSE_ERRORS = {
    "exc-fmt-generic-nesting-125.ktir": (70, 1, "nested deeper than 64 levels (regions, attributes, types and dense lists)"),
    "exc-fmt-legacy-unspecified-memspace-alias.ktir": (1, 1, "the legacy '#ktdp.spyre_memory_space<unspecified>' means no memory space"),
    "exc-fmt-legacy-unspecified-memspace-in-array.ktir": (1, 32, "the legacy '#ktdp.spyre_memory_space<unspecified>'"),
    "exc-fmt-nesting-200.ktir": (197, 20, "nesting deeper than 192 levels of brackets"),
    "exc-parse-affine-sum-1000-terms.ktir": (1, 32, "affine expression nested deeper than 64 levels"),
    "exc-parse-dim-5000-digits.ktir": (1, 25, "integer literal of 5000 digits (at most 3000)"),
    "exc-parse-int-literal-5000-digits.ktir": (2, 23, "integer literal of 5000 digits (at most 3000)"),
    "exc-parse-linalg-map-empty-outs.ktir": (2, 21, "the short body `{ arith.addf }` needs an output in `outs(...)`"),
    "exc-parse-linalg-reduce-empty-outs.ktir": (2, 24, "the short body `{ arith.addf }` needs an output in `outs(...)`"),
    "exc-run-dense-constant-rank65.ktir": (1, 26, "a shape of rank 65: at most 64 dimensions"),
    "exc-run-dense-nested-75.ktir": (2, 193, "a shape of rank 75: at most 64 dimensions"),
    "exc-run-dict-attr-depth-130.ktir": (1, 1, "nested deeper than 64 levels"),
    "exc-run-nesting-250.ktir": (197, 20, "nesting deeper than 192 levels of brackets"),
    "exc-run-rank65-random-inputs.ktir": (1, 25, "a shape of rank 65: at most 64 dimensions"),
    "exc-verify-nesting-500.ktir": (197, 20, "nesting deeper than 192 levels of brackets"),
    "generic-reject-access-tile-bare-subscript.ktir": (3, 38, "expected an SSA value (%name) in a subscript, found 'grid'"),
    "internal-run-tensor-empty-rank65.ktir": (1, 26, "a shape of rank 65: at most 64 dimensions"),
    "memory-verify-int-type-i99999999999.ktir": (2, 27, "integer type 'i99999999999' is wider than 16777215 bits"),
    "rt-unequal-array-i1-minus-one.ktir": (1, 32, "integer constant 2 out of range of i1"),
}

# file -> the verifier's error IDs (it parses; it must print and read back in both forms)
PROGRAMS = {
    "ast-nan-dense-unequal.ktir": [],
    "generic-unequal-matmul-mistyped.ktir": ["linalg.matmul.C2"],
    "internal-run-math-erf-scalar.ktir": [],
    "internal-run-view-stride-2p63.ktir": [],
    "rt-reject-linalg-generic-no-ins.ktir": ["op.attribute", "region.terminator"],
    "rt-reject-linalg-named-empty-clauses.ktir": ["linalg.negf.C2"],
    "rt-unequal-generic-empty-properties.ktir": ["op.operands", "op.results"],
    "rt-unequal-terminator-after-return.ktir": ["region.terminator"],
    "rt-unequal-unsorted-dict-attr.ktir": [],
    "sched-race-baseline-dead-constant.ktir": [],
}


def test_every_input_has_an_expectation() -> None:
    assert {p.name for p in HERE.glob("*.ktir")} == set(PARSE_ERRORS) | set(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PARSE_ERRORS))
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "grammar"])
def test_a_located_syntax_error(name: str, fast: bool) -> None:
    source = (HERE / name).read_text()
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(source, name, fast=fast)
    line, column, message = PARSE_ERRORS[name]
    assert (info.value.line, info.value.column) == (line, column)
    assert info.value.message.startswith(message), info.value.message
    assert render(info.value.diagnostics[0], source).startswith(f"{name}:{line}:{column}: error[syntax]: ")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_verifies_and_round_trips(name: str) -> None:
    source = (HERE / name).read_text()
    module = ktir.parse(source, name)
    assert module == ktir.parse(source, name)  # a NaN in a literal once made this false
    assert ktir.parse(source, name, fast=False) == module
    assert sorted({d.id for d in verify(module, name) if d.severity == "error"}) == PROGRAMS[name]
    text = ktir.print_module(module)
    assert ktir.parse(text) == module and ktir.print_module(ktir.parse(text)) == text
    generic = print_generic(module, None)
    assert ktir.parse(generic) == _inline_future_groups(module)
    assert print_generic(ktir.parse(generic), None) == generic


@pytest.mark.parametrize("float_type", ["f16", "bf16", "f32", "f64"])
def test_erf_of_a_scalar_runs(float_type: str) -> None:
    source = (HERE / "internal-run-math-erf-scalar.ktir").read_text().replace("f32", float_type)
    result = reference_interp.run(ktir.parse(source), args={"x": 0.5})
    ((value,),) = result.returns  # one tile, one value
    # erf(0.5) = 0.5204998778...; the f16/bf16 results are that value rounded once
    assert abs(float(value) - math.erf(0.5)) <= {"f16": 2**-11, "bf16": 2**-8, "f32": 2**-24, "f64": 2**-52}[float_type]


def test_a_view_past_the_address_range_is_a_runtime_error_at_the_view() -> None:
    from reference_interp.inputs import infer_args

    module = ktir.parse((HERE / "internal-run-view-stride-2p63.ktir").read_text(), "stride.ktir")
    with pytest.raises(reference_interp.KtirRuntimeError) as info:
        reference_interp.run(module, args=infer_args(module, None, {}, 0, {}))
    assert info.value.kind == "out-of-bounds" and info.value.op is not None
    assert info.value.op.name == "ktdp.construct_memory_view" and info.value.op.loc.line == 4
    assert "64-bit address range" in info.value.detail


# ---------------------------------------------------------------- the other readers


def _case(folder: str, argv: list[str], extra: dict[str, bytes | Link] | None = None) -> CliCase:
    files: dict[str, bytes | Link] = {}
    root = HERE / "files" / folder
    for path in sorted(root.rglob("*")):
        if path.is_file():
            files[str(path.relative_to(root))] = path.read_bytes()
    return CliCase(argv, {**files, **(extra or {})})


DEEP = b"[" * 100_000  # what the independent fuzzer wrote: json gives up with a RecursionError
ONE = ["-k", "core.arith.addf.f32.4x8", "-q"]

READERS = {
    "bundle-path-traversal": (_case("bundle-path-traversal", ["lower", "sdsc", "b"]), 1,
                              "b/bundle.mlir:3:5: error[sdsc]: ../outside.json, executed by the bundle: '../outside.json' must be a relative path inside b"),
    "conf-capabilities-deep-json": (CliCase(["conformance", "run", *ONE, "--capabilities", "cap.json"], {"cap.json": DEEP}), 2,
                                    "cap.json: nested too deeply"),
    "conf-capabilities-not-utf8": (_case("conf-capabilities-not-utf8", ["conformance", "run", *ONE, "--capabilities", "cap.toml"]), 2,
                                   "cap.toml: not UTF-8 text (byte 0)"),
    "conf-waivers-deep-json": (CliCase(["conformance", "run", *ONE, "--waivers", "w.json"], {"w.json": DEEP}), 2,
                               "w.json: nested too deeply"),
    "conf-report-not-utf8": (_case("conf-report-not-utf8", ["conformance", "report", "r.json"]), 2, "r.json: not UTF-8 text (byte 28)"),
    "conf-compare-deep-json": (CliCase(["conformance", "compare", "r.json", "r.json"], {"r.json": DEEP}), 2,
                               "r.json: not a results file (nested too deeply)"),
    "program-bad-ktir": (_case("program-bad-ktir", ["run-program", "p.manifest.json", "--random-inputs", "0"]), 1,
                         "ktir run-program: p.ktir:1:15: error[syntax]: unexpected '{'"),
    "program-ktir-symlink": (_case("program-ktir-symlink", ["run-program", "p.manifest.json", "--random-inputs", "0"],
                                   {"p.ktir": Link("../outside/secret.txt")}), 1, "p.ktir leads outside"),
    "program-ktir-symlink-to-a-device": (_case("program-ktir-symlink", ["run-program", "p.manifest.json", "--random-inputs", "0"],
                                               {"p.ktir": Link("/dev/zero")}), 1, "p.ktir leads outside"),
    "program-string-input": (_case("program-string-input", ["run-program", "p.manifest.json", "--input", "x=x.npy"]), 2,
                             "ktir run-program: argument x: the array has dtype <U2 (strings), but the kernel reads f16"),
    "target-clock-zero": (_case("target-clock-zero", ["targets", "show", "t.toml"]), 1, "clock.hz must be at least 1"),
    "target-tiles-1e12": (_case("target-tiles-1e12", ["targets", "show", "t.toml"]), 1,
                          "tiles.count 1000000000000 is more than the 65536 tiles the cost model handles"),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_bad_file_is_a_named_error(name: str) -> None:
    case, code, message = READERS[name]
    got, out, err = run_cli(case)
    assert "Traceback" not in out + err
    assert (got, message in err) == (code, True), (got, err)


def test_a_target_clock_of_infinity_is_refused() -> None:
    text = (HERE / "files" / "target-clock-zero" / "t.toml").read_bytes()
    infinite = text.replace(b"hz = { value = 0.0", b"hz = { value = inf").replace(b"hz = { value = 0,", b"hz = { value = inf,")
    assert infinite != text
    got, _, err = run_cli(CliCase(["targets", "show", "t.toml"], {"t.toml": infinite}))
    assert got == 1 and "clock.hz.value: Input should be a finite number" in err


def test_every_reader_folder_has_a_test() -> None:
    folders = {p.name for p in (HERE / "files").iterdir()}
    covered = {name for name in READERS if name in folders} | {"run-arg-dtype-mismatch"}
    assert folders == covered


@pytest.mark.parametrize("array", ["a32.npy", "abe.npy"], ids=["float32", "big-endian"])
def test_a_wrong_dtype_argument_is_converted_exactly(array: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # once read as raw f16 bytes (exit 0, C garbage); now converted, announced, and C = A + B
    import numpy as np

    from ktir.cli import main

    for path in (HERE / "files" / "run-arg-dtype-mismatch").glob("*.npy"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    # the kernel the find was made with: examples/vector_add.ktir when it fixed 1,024 elements
    kernel = HERE / "files" / "run-arg-dtype-mismatch" / "vector_add_1024.ktir"
    try:
        code = main(["run", str(kernel), "--arg", f"A={array}", "--arg", "B=b.npy", "--arg", "C=c.npy", "--out", "o.npz"])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code in (0, None) and "argument A:" in err and "converted" in err, err
    a, b = np.load(array).astype(np.float64), np.load("b.npy").astype(np.float64)
    assert np.array_equal(np.load("o.npz")["C"].astype(np.float64), a + b)


def test_the_baseline_schedule_of_a_kernel_with_a_dead_constant_does_not_race() -> None:
    # the baseline scheduler split the unused constant over the grid and left the load, add and
    # store whole on every tile; --check runs the output against the input in the interpreter
    source = (HERE / "sched-race-baseline-dead-constant.ktir").read_bytes()
    got, _, err = run_cli(CliCase(["schedule", "k.ktir", "--target", "spyre", "--scheduler", "baseline", "--check",
                                   "-q", "-o", "out.ktir"], {"k.ktir": source}))
    assert got == 0, err
