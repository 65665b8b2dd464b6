"""The optional SDSC output: kernels that SDSC can express are written as SDSC JSON, lowered
back through the SDSC path (`ktir.lower`), run on the same buffers, and must agree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import reference_interp  # noqa: E402
from ktir.cli import main  # noqa: E402
from ktir.lower import lower_sdsc, parse_sdsc  # noqa: E402
from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.models import DecoderLayer  # noqa: E402


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(128, 256, bias=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.lin(x)  # a matmul
        e = torch.exp(h)  # each result below is also returned, so each op is its own kernel
        a = e + y  # y [256]: broadcast over rows
        b = a * z
        return h, e, a, b, torch.bmm(b.view(2, 32, 256), b.view(2, 256, 32))


def _cross_check(program, inputs) -> list[str]:  # type: ignore[no-untyped-def]
    """Run the program keeping every buffer; rerun each SDSC kernel through ktir.lower and compare."""
    arrays: dict[str, np.ndarray] = {}
    program.run_buffers({s.name: i for s, i in zip(program.manifest.inputs, inputs, strict=True)}, keep=arrays)
    checked = []
    for k in program.manifest.kernels:
        doc = program.sdsc.get(k.name)
        if doc is None:
            continue
        lowered = lower_sdsc(parse_sdsc(json.loads(json.dumps(doc)), f"{k.name}.json"))
        (_, body), = doc.items()
        (dsc,) = body["dscs_"][0].values()
        order = [t["ldsIdx_"] for t in dsc["labeledDs_"]]
        spec_buffers = _buffers_of(program, k.name, len(order))
        args = {f"Tensor{i}": (np.zeros_like(arrays[b]) if b in k.writes else arrays[b]) for i, b in enumerate(spec_buffers)}
        result = reference_interp.run(reference_interp_module(lowered.text), args=args)
        out = spec_buffers[-1]
        np.testing.assert_allclose(result.outputs[f"Tensor{len(order) - 1}"], arrays[out], rtol=1e-5, atol=1e-5, err_msg=k.name)
        checked.append(k.name)
    return checked


def _buffers_of(program, name: str, n: int) -> list[str]:  # type: ignore[no-untyped-def]
    return list(program.sdsc_buffers[name])[:n]


def reference_interp_module(text: str):  # type: ignore[no-untyped-def]
    import ktir

    return ktir.parse(text)


def test_sdsc_path_agrees_with_the_direct_path() -> None:
    torch.manual_seed(0)
    model = Mixed()
    inputs = (torch.randn(64, 128) * 0.1, torch.randn(256), torch.randn(64, 256))
    program = from_torch(model, inputs)
    checked = _cross_check(program, [i.numpy() for i in inputs])
    kinds = {k.name: k.kind for k in program.manifest.kernels}
    assert sorted(kinds[c] for c in checked) == ["elementwise", "elementwise", "elementwise", "matmul", "matmul"], checked


def test_decoder_layer_sdsc_kernels_agree() -> None:
    torch.manual_seed(0)
    model = DecoderLayer()
    x = torch.randn(1, 64, 256)
    program = from_torch(model, (x,))
    checked = _cross_check(program, [x.numpy()])
    assert sum(1 for c in checked if "linear" in c) == 7  # every projection
    skipped = {k.name: k.sdsc_skipped for k in program.manifest.kernels if k.name not in checked}
    assert all(skipped.values()), skipped  # each kernel without SDSC says why


def test_cli_writes_sdsc_files(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 128)
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(nn.Sequential(nn.Linear(128, 128, bias=False), nn.SiLU()), (x,)), str(path))
    assert main(["lower", "torch", str(path), "-o", str(tmp_path / "m.ktir"), "--sdsc", str(tmp_path / "sdsc")]) == 0
    manifest = json.loads((tmp_path / "m.manifest.json").read_text())
    files = [k["sdsc"] for k in manifest["kernels"] if k["sdsc"]]
    assert files == ["sdsc/sdsc_k0_linear.json", "sdsc/sdsc_k1_silu.json"]
    assert main(["lower", "sdsc", str(tmp_path / files[0]), "-o", str(tmp_path / "back.ktir")]) == 0
