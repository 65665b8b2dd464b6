"""`ktir run` (through reference_interp.cli.cmd_run), statistics and the event trace."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

import reference_interp as ri
from reference_interp.cli import add_run_parser, cmd_run

from .helpers import EXAMPLES, ROOT, example, run


def ktir_run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="ktir")
    add_run_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", *argv])
    assert args.run is cmd_run
    return cmd_run(args)


def test_run_with_array_and_scalar_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = (np.arange(65536) % 1024).astype(np.float16)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "c.npy", np.zeros(65536, np.float16))
    out = tmp_path / "out.npz"
    code = ktir_run(str(EXAMPLES / "vector_add.ktir"), "--arg", f"A={tmp_path / 'a.npy'}", "--arg", f"B={tmp_path / 'a.npy'}",
                    "--arg", f"C={tmp_path / 'c.npy'}", "--arg", "N=65536", "--out", str(out), "--stats")
    assert code == 0
    got = np.load(out)
    assert sorted(got) == ["A", "B", "C"]
    np.testing.assert_array_equal(got["C"], a + a)
    assert "grid [4]" in capsys.readouterr().out


def test_random_inputs_infer_array_sizes(tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    assert ktir_run(str(ROOT / "tests/corpus/kernels/ring_reduce.ktir"), "--func", "ring_allreduce",
                    "--random-inputs", "3", "--out", str(out)) == 0
    got = np.load(out)
    assert got["in_ptr"].shape == (512,) and got["out_ptr"].shape == (128,)
    np.testing.assert_allclose(got["out_ptr"].astype(np.float32), got["in_ptr"].astype(np.float32).reshape(4, 128).sum(0),
                               rtol=1e-2, atol=1e-2)
    # sizes passed as --arg are used; the arrays are inferred from the views' dynamic sizes
    assert ktir_run(str(EXAMPLES / "softmax.ktir"), "--arg", "R=1024", "--random-inputs", "1", "--out", str(out)) == 0
    assert np.load(out)["x_ptr"].shape == (1024 * 1024,)


def test_runtime_errors_exit_1_with_a_diagnostic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "short.npy", np.zeros(10, np.float16))
    np.save(tmp_path / "ok.npy", np.zeros(65536, np.float16))
    code = ktir_run(str(EXAMPLES / "vector_add.ktir"), "--arg", f"A={tmp_path / 'short.npy'}", "--arg",
                    f"B={tmp_path / 'ok.npy'}", "--arg", f"C={tmp_path / 'ok.npy'}", "--arg", "N=65536")
    assert code == 1
    err = capsys.readouterr().err
    assert "error[runtime.out-of-bounds]" in err and "vector_add.ktir:" in err and "^" in err


def test_a_failing_probe_run_points_at_the_failing_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # with four blocks every tile stores to C[0:65536]: the probe run behind --random-inputs finds the race
    racy = (EXAMPLES / "vector_add.ktir").read_text().replace(
        "construct_access_tile %c[%i]", "construct_access_tile %c[0]")
    path = tmp_path / "racy.ktir"
    path.write_text(racy)
    assert ktir_run(str(path), "--random-inputs", "0", "--arg", "N=262144") == 1
    err = capsys.readouterr().err
    line = 1 + racy.splitlines().index(next(s for s in racy.splitlines() if "ktdp.store" in s))
    assert f"racy.ktir:{line}:5: error[runtime.race]" in err
    assert "infer the array sizes" in err and ":0:0" not in err
    # an argument error during the probe is just that
    assert ktir_run(str(path), "--random-inputs", "0", "--arg", "N=262144", "--arg", "Z=1") == 1
    err = capsys.readouterr().err
    assert "error[runtime.argument]: unknown argument(s) Z" in err and "infer the array sizes" not in err


def test_random_inputs_for_a_vector_argument_report_the_unsupported_type(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "vec.ktir"
    path.write_text("func.func @k(%a: vector<4xf32>) {\n  return\n}\n")
    assert ktir_run(str(path), "--random-inputs", "0") == 1
    err = capsys.readouterr().err
    assert "vec.ktir:1:1: error[runtime.unsupported]: func.func: values of type vector<4xf32>" in err


def test_errors_without_a_position_name_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert ktir_run(str(EXAMPLES / "vector_add.ktir")) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{EXAMPLES / 'vector_add.ktir'}: error[runtime.argument]") and ":0:0" not in err


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert ktir_run(str(tmp_path / "missing.ktir")) == 2
    assert ktir_run(str(EXAMPLES / "vector_add.ktir"), "--arg", "A") == 2
    assert ktir_run(str(EXAMPLES / "vector_add.ktir"), "--arg", "A=not-a-number") == 2


def test_missing_arguments_and_uninferable_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert ktir_run(str(EXAMPLES / "vector_add.ktir")) == 1
    err = capsys.readouterr().err
    assert "missing argument(s) A, B, C" in err and "--random-inputs SEED" in err
    # no view explains R: the smallest size that runs is chosen and said (tests/interp/test_size_inference.py)
    assert ktir_run(str(EXAMPLES / "softmax.ktir"), "--random-inputs", "0") == 0
    assert "R = 32" in capsys.readouterr().err


def test_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    assert ktir_run(str(EXAMPLES / "vector_add.ktir"), "--random-inputs", "0", "--arg", "N=262144",
                    "--event-trace", str(trace)) == 0
    events = json.loads(trace.read_text())
    assert len(events) == 4 and events[0][2]["op"] == "ktdp.get_compute_tile_id"  # after two arith.constant
    loads = [e for e in events[2] if e["op"] == "ktdp.load"]
    assert [e["bytes_read"] for e in loads] == [{"global": 131072}] * 2


def test_trace_events_nest_and_count_work() -> None:
    M, N, K = 2048, 2048, 512
    A = np.ones((M, K), np.float16)
    B = np.ones((K, N), np.float16)
    r = ri.run(example("tiled_matmul.ktir"), args={"a_ptr": A, "b_ptr": B, "c_ptr": np.zeros((M, N), np.float16),
                                                    "M": M, "N": N, "K": K}, trace=True)
    assert r.trace is not None and len(r.trace) == 32
    events = r.trace[0]
    assert [e.start for e in events] == sorted(e.start for e in events)
    loops = [e for e in events if e.op == "scf.for"]
    outer = loops[0]  # events are in program order: the outermost loop first
    assert all(outer.start <= e.start and e.end <= outer.end for e in events if e.start > outer.start)
    mms = [e for e in events if e.op == "linalg.matmul"]
    assert len(mms) == 2 and all(e.macs == 512 * 256 * 256 for e in mms)
    assert outer.bytes_read["global"] == sum(e.bytes_read.get("global", 0) for e in events if e.op == "ktdp.load")
    assert max(e.end for e in events) == len(events) <= r.stats[0].ops


def test_stats_per_tile() -> None:
    text = """
#s = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @k(%x: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %l = ktdp.construct_memory_view %c0, sizes: [64], strides: [1] {coordinate_set = #s, memory_space = #ktdp.memory_space<ct_local>} : memref<64xf32>
  %g = ktdp.construct_memory_view %x, sizes: [64], strides: [1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<64xf32>
  %tg = ktdp.construct_access_tile %g[%c0] {access_tile_order = #id1, access_tile_set = #s} : memref<64xf32> -> !ktdp.access_tile<64xindex>
  %tl = ktdp.construct_access_tile %l[%c0] {access_tile_order = #id1, access_tile_set = #s} : memref<64xf32> -> !ktdp.access_tile<64xindex>
  %v = ktdp.load %tg : !ktdp.access_tile<64xindex> -> tensor<64xf32>
  ktdp.store %v, %tl : tensor<64xf32>, !ktdp.access_tile<64xindex>
  %w = ktdp.load %tl : !ktdp.access_tile<64xindex> -> tensor<64xf32>
  return
}
"""
    r = run(text, args={"x": np.zeros(64, np.float32)}, target="spyre")
    for s in r.stats:
        assert s.bytes_read == {"global": 256, "ct_local": 256}
        assert s.bytes_written == {"ct_local": 256}
        assert s.scratchpad_peak == 256 and s.ops == 9
    assert r.stats[1].to_dict()["coords"] == [1]
    assert r.addresses == {"x": 0}


def test_outputs_are_written_atomically_and_keep_numpys_suffix(tmp_path: Path) -> None:
    out = tmp_path / "result"
    assert ktir_run(str(EXAMPLES / "vector_add.ktir"), "--random-inputs", "0", "--out", str(out)) == 0
    assert sorted(np.load(tmp_path / "result.npz").files) == ["A", "B", "C"]
    # a failing run leaves the earlier output as it was
    before = (tmp_path / "result.npz").read_bytes()
    assert ktir_run(str(EXAMPLES / "vector_add.ktir"), "--out", str(out)) == 1
    assert (tmp_path / "result.npz").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["result.npz"]  # no temporary left behind


def test_random_inputs_give_a_scratchpad_address_a_region_of_its_own(tmp_path: Path) -> None:
    # %scratch is only the offset of ct_local views of static size: a region of each tile's
    # scratchpad, with random contents (written to --out, one piece per tile)
    out = tmp_path / "dc.npz"
    assert ktir_run(str(EXAMPLES / "distributed_copy.ktir"), "--random-inputs", "0", "--out", str(out)) == 0
    got = np.load(out)
    assert sorted(got.files) == ["scratch", "x_ptr", "y_ptr"]
    # M and N inferred as the smallest sizes: one 256 x 1024 panel
    assert np.array_equal(got["y_ptr"].reshape(1024, 256), got["x_ptr"].reshape(256, 1024).T)


def test_random_inputs_through_type_aliases(tmp_path: Path) -> None:
    """Views whose memref type is spelled through an alias (`!view = memref<...>`) size their
    pointer arguments like the spelled-out type does."""
    text = (EXAMPLES / "vector_add.ktir").read_text()
    aliased = "!view = memref<?xf16>\n" + text.replace(": memref<?xf16>", ": !view")
    assert aliased.count("!view") == 7
    (tmp_path / "alias.ktir").write_text(aliased)
    got = {}
    for name in ("alias.ktir", "plain"):
        path = tmp_path / name if name != "plain" else EXAMPLES / "vector_add.ktir"
        out = tmp_path / f"{name}.npz"
        assert ktir_run(str(path), "--random-inputs", "5", "--out", str(out)) == 0
        got[name] = dict(np.load(out))
    assert got["alias.ktir"]["C"].shape == (65536,)
    for key in "ABC":
        np.testing.assert_array_equal(got["alias.ktir"][key], got["plain"][key])
    np.testing.assert_array_equal(got["plain"]["C"], got["plain"]["A"] + got["plain"]["B"])


def test_run_without_outputs_says_what_ran(capsys: pytest.CaptureFixture[str]) -> None:
    """A run asked to write nothing prints one line on what it did, not silence."""
    assert ktir_run(str(EXAMPLES / "vector_add.ktir"), "--random-inputs", "0") == 0
    out = capsys.readouterr().out
    assert "ran on grid [4] (4 tiles, " in out
    assert "A [65536] float16" in out and "--out OUT.npz" in out
