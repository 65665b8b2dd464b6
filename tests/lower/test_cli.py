"""`ktir lower sdsc PATH [-o OUT]` through ktir.lower.cli (wired into `ktir` by add_lower_parser)."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

import ktir
from ktir.lower.cli import add_lower_parser

from .stick import DATA

EXP = "small_bmm_sdsc_3_exp_2d_hbm_to_lx.json"


def ktir_lower(*argv: str) -> int:
    """What `ktir lower ...` does once ktir/cli.py calls add_lower_parser."""
    parser = argparse.ArgumentParser(prog="ktir")
    sub = parser.add_subparsers(dest="command", required=True)
    add_lower_parser(sub)
    try:
        args = parser.parse_args(["lower", *argv])
    except SystemExit as e:
        return int(e.code or 0)
    return int(args.run(args))


def test_writes_canonical_ktir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "exp.ktir"
    assert ktir_lower("sdsc", str(DATA / EXP), "-o", str(out)) == 0
    text = out.read_text()
    assert ktir.print_module(ktir.parse(text)) == text
    assert "func.func @sdsc_3_exp(%Tensor0: index, %Tensor1: index) attributes {grid = [32]}" in text
    assert capsys.readouterr().err == ""
    assert [p.name for p in tmp_path.iterdir()] == ["exp.ktir"]  # no temporary left behind


def test_stdout_and_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    assert ktir_lower("sdsc", str(DATA / EXP), "-v") == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("#box_256x8x64 = affine_set")
    assert "note[sdsc]: Tensor0 (hbm): 32 core start addresses match the layout (base 524288)" in captured.err
    assert "%Tensor1: ct_local f16[4096] at SDSC address 0" in captured.err


def test_bad_input_is_one_line_exit_1_and_no_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((DATA / EXP).read_text())
    doc["3_exp"]["dscs_"][0]["exp"]["computeOp_"][0]["opFuncName"] = "where3"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "out.ktir"
    out.write_text("old")
    assert ktir_lower("sdsc", str(bad), "-o", str(out)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}: error[sdsc]: 3_exp.dscs_[0].exp.computeOp_[0].opFuncName: op function 'where3' is not supported")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out.read_text() == "old"


def test_bundle_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    shutil.copyfile(DATA / "swiglu_decode_bundle.mlir.txt", bundle / "bundle.mlir")
    shutil.copyfile(DATA / "swiglu_decode_sdsc_4_add_lx_bcast.json", bundle / "sdsc_4.json")
    shutil.copyfile(DATA / "swiglu_decode_sdsc_7_restickify.json", bundle / "sdsc_7.json")
    out = tmp_path / "b.ktir"
    assert ktir_lower("sdsc", str(bundle), "-o", str(out)) == 1
    assert capsys.readouterr().err == f"{bundle / 'bundle.mlir'}:3:3: error[sdsc]: sdsc_0.json, executed by the bundle, is not present (--skip-missing lowers the steps that are)\n"
    assert not out.exists()
    assert ktir_lower("sdsc", str(bundle / "bundle.mlir"), "--skip-missing", "-o", str(out)) == 0
    err = capsys.readouterr().err
    assert err.count("warning[sdsc]") == 7 and "sdsc_8.json is not present" in err
    assert "func.func @sdsc_bundle(%hbm_0xc800: index" in out.read_text()


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ktir_lower("sdsc", str(tmp_path / "nope.json")) == 2
    assert "cannot read" in capsys.readouterr().err
    assert ktir_lower("sdsc") == 2  # argparse: PATH is required
