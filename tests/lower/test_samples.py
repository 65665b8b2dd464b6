"""The five real SDSC samples (tests/lower/data, see README.md there): they lower to valid,
canonical KTIR, their stored start addresses agree with the layout, and the lowered
kernels compute what numpy computes for the op."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import ktir
from ktir.ir import attributes as at
from ktir.lower import SdscError, check_addresses, load_bundle, lower_bundle, lower_path, lower_sdsc, parse_sdsc
from ktir.lower.layout import build_kernel
from ktir.verify import validate_text

from .interp import local, run
from .stick import DATA, from_device, layout_of, raw, to_device

MM = "mm512_sdsc_0_batchmatmul.json"
EXP = "small_bmm_sdsc_3_exp_2d_hbm_to_lx.json"
ADD = "swiglu_decode_sdsc_4_add_lx_bcast.json"
RESTICK = "swiglu_decode_sdsc_7_restickify.json"
SAMPLES = (MM, EXP, ADD, RESTICK)

# The bundle's directory as captured: bundle.mlir runs sdsc_0..8.json; sdsc_4 and sdsc_7 are kept.
BUNDLE_FILES = {"bundle.mlir": "swiglu_decode_bundle.mlir.txt", "sdsc_4.json": ADD, "sdsc_7.json": RESTICK}


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    d = tmp_path / "sdsc_fused_linear_mul_silu_split_with_sizes_0_3krenzmn"
    d.mkdir()
    for name, sample in BUNDLE_FILES.items():
        shutil.copyfile(DATA / sample, d / name)
    return d


def _valid_and_canonical(text: str) -> None:
    module, diagnostics = validate_text(text, "lowered.ktir")
    assert module is not None
    errors = [d for d in diagnostics if d.severity != "note"]
    assert not errors, errors
    assert ktir.print_module(ktir.parse(text)) == text  # printed by ktir.print_module: a fixpoint


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_lowers_to_valid_canonical_ktir(name: str) -> None:
    lowered = lower_path(DATA / name)
    _valid_and_canonical(lowered.text)
    (fn,) = lowered.module.functions()
    grid = fn.attributes["grid"]
    assert isinstance(grid, at.ArrayAttr)
    assert [e.value for e in grid.elements] == [lowered.kernels[0].num_cores]  # type: ignore[attr-defined]


def test_bundle_lowers_to_valid_canonical_ktir(bundle_dir: Path) -> None:
    lowered = lower_path(bundle_dir, skip_missing=True)
    _valid_and_canonical(lowered.text)
    names = [f.attributes["sym_name"].value for f in lowered.module.functions()]  # type: ignore[attr-defined]
    assert names == ["sdsc_4_add", "sdsc_7_ReStickifyOpHBM", "sdsc_bundle"]
    assert lowered.skipped == [f"sdsc_{i}.json" for i in (0, 1, 2, 3, 5, 6, 8)]
    assert "// sdsc_3.json: not present, left out" in lowered.text


def test_bundle_with_missing_files_is_refused_by_default(bundle_dir: Path) -> None:
    with pytest.raises(SdscError, match=r"sdsc_0\.json, executed by the bundle, is not present") as info:
        lower_path(bundle_dir)
    assert info.value.file is not None and info.value.file.endswith("bundle.mlir")
    assert info.value.line == 3


# Per-core start addresses recomputed from the layout: (tensor, space, base) per sample.
EXPECTED_ADDRESSES = {
    MM: [("Tensor0", "hbm", 0), ("Tensor1", "hbm", 17179869184), ("Tensor2", "hbm", 34359738368)],
    EXP: [("Tensor0", "hbm", 524288), ("Tensor1", "lx", 0)],
    ADD: [("Tensor0", "lx", 0), ("Tensor1", "hbm", 51539607552), ("Tensor2", "lx", 0)],
    RESTICK: [("Tensor0", "hbm", 68719476736), ("Tensor1", "hbm", 51200)],
}


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_start_addresses_match_the_layout(name: str) -> None:
    sdsc = parse_sdsc(json.loads((DATA / name).read_text()), name)
    checks = check_addresses(build_kernel(sdsc))
    assert [(c.tensor, c.space, c.base, c.status) for c in checks] == [(*e, "match") for e in EXPECTED_ADDRESSES[name]]


@pytest.mark.parametrize(("name", "tensor", "core"), [(MM, 2, 5), (EXP, 0, 31), (RESTICK, 1, 1), (ADD, 0, 3)])
def test_a_wrong_start_address_is_refused(name: str, tensor: int, core: int) -> None:
    doc = json.loads((DATA / name).read_text())
    (body,) = doc.values()
    (dsc,) = body["dscs_"][0].values()
    data = dsc["scheduleTree_"][tensor]["startAddressCoreCorelet_"]["data_"]
    data[f"[{core}, 0, 0]"] = str(int(data[f"[{core}, 0, 0]"]) + 128)
    with pytest.raises(SdscError, match=rf"Tensor{tensor} \((hbm|lx)\): core {core} .*has start address \d+, but (the layout|LX tensors)"):
        lower_sdsc(parse_sdsc(doc, name))


# ---------------------------------------------------------------------------- numerics

RNG = np.random.default_rng(20260601)


def _bits(shape: tuple[int, ...]) -> np.ndarray:
    """Random finite f16 values (as bit patterns: cheap for 52M elements)."""
    return RNG.integers(0, 0x7C00, shape, dtype=np.uint16).view(np.float16)


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=rtol, atol=atol)


def test_batchmatmul_matches_numpy() -> None:
    dsc = raw(MM)
    a = RNG.uniform(-1, 1, (512, 512)).astype(np.float16)  # [mb, in]
    b = RNG.uniform(-1, 1, (512, 512)).astype(np.float16)  # [in, out]
    args = {
        "Tensor0": to_device(a, ["mb", "in"], *layout_of(dsc, 0)),
        "Tensor1": to_device(b, ["in", "out"], *layout_of(dsc, 1)),
        "Tensor2": np.zeros((8, 512, 64), np.float16),
    }
    result = run(lower_path(DATA / MM).text, args=args)
    layout, stick, _ = layout_of(dsc, 2)
    c = from_device(result.outputs["Tensor2"], ["mb", "out"], layout, stick)
    # f16 accumulation over K = 512 terms of magnitude <= 1
    _close(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=0.05)


def test_exp_from_hbm_into_lx_matches_numpy() -> None:
    dsc = raw(EXP)
    x = RNG.uniform(-3, 3, (256, 512)).astype(np.float16)  # [mb, out]
    layout, stick, size = layout_of(dsc, 0)
    result = run(lower_path(DATA / EXP).text, args={
        "Tensor0": to_device(x, ["mb", "out"], layout, stick, size),
        "Tensor1": local(np.zeros((32, 8, 8, 64), np.float16)),  # core c holds rows [8c, 8c + 8)
    })
    per_core = result.outputs["Tensor1"]
    y = np.concatenate([from_device(per_core[c], ["mb", "out"], layout, stick) for c in range(32)])
    _close(y, np.exp(x.astype(np.float32)), rtol=2e-3, atol=0)


def test_add_of_lx_and_broadcast_stick_matches_numpy() -> None:
    x = RNG.uniform(-2, 2, 12800).astype(np.float16)
    stick = RNG.uniform(-2, 2, (1, 64)).astype(np.float16)  # scale -2: only lane 0 is the value
    result = run(lower_path(DATA / ADD).text, args={
        "Tensor0": local(x.reshape(25, 8, 64)),  # core c holds out [512c, 512c + 512)
        "Tensor1": stick,
        "Tensor2": local(np.zeros((25, 8, 64), np.float16)),
    })
    np.testing.assert_array_equal(result.outputs["Tensor2"].reshape(-1), x + stick[0, 0])


def test_restickify_matches_numpy() -> None:
    dsc = raw(RESTICK)
    x = _bits((4096, 12800))  # [mb, out]
    result = run(lower_path(DATA / RESTICK).text, check_races=False, args={
        "Tensor0": to_device(x, ["mb", "out"], *layout_of(dsc, 0)),
        "Tensor1": np.zeros((64, 12800, 64), np.float16),
    })
    layout, stick, _ = layout_of(dsc, 1)
    np.testing.assert_array_equal(from_device(result.outputs["Tensor1"], ["mb", "out"], layout, stick), x)


def test_bundle_steps_present_run_in_order_with_lx_carried(bundle_dir: Path) -> None:
    """sdsc_4 (add, LX in place) then sdsc_7 (restickify), with race checks on."""
    lowered = lower_bundle(load_bundle(bundle_dir, skip_missing=True))
    args = {a.name: a for a in lowered.args}
    assert set(args) == {"hbm_0xc800", "hbm_0xc00000000", "hbm_0x1000000000", "lx_0x0"}
    assert args["lx_0x0"].space == "ct_local" and args["lx_0x0"].users == ("sdsc_4_add.Tensor0", "sdsc_4_add.Tensor2")
    x = RNG.uniform(-2, 2, 12800).astype(np.float16)  # left in LX by sdsc_3 (exp), not present
    one = RNG.uniform(-2, 2, 64).astype(np.float16)
    w = _bits((4096, 12800))
    d7 = raw(RESTICK)
    result = run(lowered.text, func="sdsc_bundle", args={
        "lx_0x0": local(x.reshape(25, 512)),
        "hbm_0xc00000000": one,
        "hbm_0x1000000000": to_device(w, ["mb", "out"], *layout_of(d7, 0)).reshape(-1),
        "hbm_0xc800": np.zeros(args["hbm_0xc800"].elements, np.float16),
    })
    np.testing.assert_array_equal(result.outputs["lx_0x0"].reshape(-1), x + one[0])
    layout, stick, _ = layout_of(d7, 1)
    out = from_device(result.outputs["hbm_0xc800"].reshape(64, 12800, 64), ["mb", "out"], layout, stick)
    np.testing.assert_array_equal(out, w)


@pytest.mark.parametrize("name", [*SAMPLES, "bundle"])
def test_every_lowered_sample_runs_with_random_inputs(tmp_path: Path, name: str) -> None:
    """`ktir run --random-inputs` finds a value for every argument of a lowered SDSC or bundle:
    HBM arrays through the driver's calls into its steps, scratchpad regions (the swiglu
    capture's LX tensors, which sdsc_4 reads) with random contents of their views' size."""
    from ktir.cli import main

    if name == "bundle":
        source = tmp_path / "b"
        source.mkdir()
        for target, stored in BUNDLE_FILES.items():
            (source / target).write_text((DATA / stored).read_text())
        argv = ["lower", "sdsc", str(source), "--skip-missing"]
    else:
        argv = ["lower", "sdsc", str(DATA / name)]
    out = tmp_path / "k.ktir"
    assert main([*argv, "-o", str(out)]) == 0
    assert main(["run", str(out), "--random-inputs", "1", "--out", str(tmp_path / "r.npz")]) == 0
    assert np.load(tmp_path / "r.npz").files
