"""SDSC bundles written the way torch-spyre writes them (spyre_style.py) lower, run and match
numpy: reductions that list their output among their inputs (sum, max, mean, softmax's six
steps, an RMSNorm), steps without operands, scratchpad tensors at non-zero offsets, symbols
shared between cores, fp32 with 32-element sticks, 8- and 32-core grids, gelufwd. Every lowered
bundle also runs with `ktir run --random-inputs` and passes `ktir schedule --check`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import ktir
from ktir.cli import main
from ktir.lower import lower_path
from reference_interp.inputs import infer_args

from . import spyre_style as ss
from .interp import run

RNG = np.random.default_rng(30)
DATA = Path(__file__).resolve().parent / "data"

CASES: dict[str, tuple[Callable[[Path], ss.Case], float]] = {
    "sum": (lambda d: ss.reduction(d, "sum"), 2e-3),
    "max": (lambda d: ss.reduction(d, "max"), 0.0),
    "mean": (lambda d: ss.reduction(d, "mean"), 2e-3),
    "softmax": (ss.softmax, 2e-3),
    "softmax_32_cores": (lambda d: ss.softmax(d, mb=512, out=1024, cores=32), 2e-3),
    "rms_norm": (ss.rms_norm, 3e-3),
    "gelufwd": (lambda d: ss.unary(d, "gelufwd"), 2e-3),
    "exp_fp32": (lambda d: ss.unary(d, "exp", fmt="IEEE_FP32"), 1e-6),
    "matmul_shared_symbols": (ss.matmul, 2e-3),
}


def _inputs(case: ss.Case) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    logical = {name: RNG.uniform(-2, 2, shape).astype(dt) for name, (shape, dt) in case.inputs.items()}
    return logical, {**{n: case.to_device(n, v) for n, v in logical.items()}, **case.fixed}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowers_and_matches_numpy(tmp_path: Path, name: str) -> None:
    make, tol = CASES[name]
    case = make(tmp_path / name)
    lowered = lower_path(case.directory)  # verified by ktir.verify
    module = ktir.parse(lowered.text)
    logical, given = _inputs(case)
    args = infer_args(module, None, given, 0, {})  # the scratchpad regions the bundle names (lx_0x800, ...)
    result = run(lowered.text, args=args)
    got = case.from_device(result.outputs[case.output]).astype(np.float64)
    want = case.oracle(*logical.values())
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err <= tol, f"{name}: relative error {err:.2e}"


def _sample(tmp_path: Path) -> Path:
    """The committed sample as a bundle directory (its bundle.mlir is stored as bundle.mlir.txt:
    `sdscbundle` MLIR, not KTIR, which the corpus tests would read as KTIR)."""
    d = tmp_path / "softmax_torch_spyre"
    d.mkdir()
    for f in (DATA / "softmax_torch_spyre").iterdir():
        (d / f.name.removesuffix(".txt")).write_text(f.read_text())
    return d


def test_the_softmax_steps_are_torch_spyres() -> None:
    """The structure the lowering must cope with, as the captures have it (FORMAT.md §10)."""
    bundle = DATA / "softmax_torch_spyre"
    text = (bundle / "bundle.mlir.txt").read_text()
    assert text.count("sdscbundle.sdsc_execute ()") == 4  # steps with no operands
    docs = [json.loads((bundle / f"sdsc_{i}.json").read_text()) for i in range(6)]
    ops = [next(iter(next(iter(d.values()))["dscs_"][0].values()))["computeOp_"][0] for d in docs]
    assert [op["opFuncName"] for op in ops] == ["identity", "max", "sub", "exp", "sum", "realdiv"]
    for op in (ops[1], ops[4]):  # the reductions' output is among their inputs
        assert op["outputLabeledDs"][0] in op["inputLabeledDs"]
    lx = {node["startAddressCoreCorelet_"]["data_"]["[0, 0, 0]"] for d in docs
          for node in next(iter(next(iter(d.values()))["dscs_"][0].values()))["scheduleTree_"] if node["component_"] == "lx"}
    assert lx == {"0", "2048", "4096"}


def test_the_committed_sample_is_what_the_builder_writes_and_lowers(tmp_path: Path) -> None:
    ss.softmax(tmp_path / "s")
    for f in sorted((DATA / "softmax_torch_spyre").iterdir()):
        assert (tmp_path / "s" / f.name.removesuffix(".txt")).read_text() == f.read_text(), f.name
    lowered = lower_path(_sample(tmp_path))
    assert [a.name for a in lowered.args] == ["arg_0_base_addr", "arg_1_base_addr", "lx_0x0", "lx_0x800", "lx_0x1000"]


@pytest.mark.parametrize("name", ["softmax", "rms_norm", "matmul_shared_symbols", "mean"])
def test_random_inputs_and_schedule_check_on_the_lowered_bundle(tmp_path: Path, name: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[name][0](tmp_path / name)
    out = tmp_path / f"{name}.ktir"
    assert main(["lower", "sdsc", str(case.directory), "-o", str(out)]) == 0
    # --random-inputs follows the driver's calls into the steps: HBM arrays sized by a probe,
    # scratchpad regions by their views
    assert main(["run", str(out), "--random-inputs", "5", "--out", str(tmp_path / "r.npz")]) == 0
    got = np.load(tmp_path / "r.npz")
    if not case.fixed:  # the random arrays are the inputs: the output follows from them
        logical = [_from(case, n, got[n]) for n in case.inputs]
        result = case.from_device(got[case.output]).astype(np.float64)
        want = case.oracle(*logical)
        assert np.linalg.norm(result - want) <= 3e-3 * np.linalg.norm(want)
    capsys.readouterr()
    assert main(["schedule", str(out), "--target", "spyre", "--check", "-o", str(tmp_path / "s.ktir")]) == 0
    assert "--check: outputs match" in capsys.readouterr().out


def _from(case: ss.Case, name: str, flat: np.ndarray) -> np.ndarray:
    """The logical input a random device array stands for (the inverse of `case.to_device`)."""
    shape, _ = case.inputs[name]
    probe = np.arange(int(np.prod(shape))).reshape(shape)
    order = case.to_device(name, probe.astype(np.float64)).astype(np.int64)
    logical = np.empty(int(np.prod(shape)), flat.dtype)
    logical[order] = flat[: order.size]
    return logical.reshape(shape)
