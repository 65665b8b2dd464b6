"""Every kernel the PyTorch lowering emits for a small Llama decoder layer goes through the
scheduler with the check on: rewritten kernels must equal their input in the interpreter,
the others come back unchanged with a reason, and the program with every rewritten kernel
swapped in still matches torch eager. Also the original report: `x @ w.t()` with `w` an
input, where B is a view with strides [1, K]."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest_paths import ktir_schedule  # noqa: E402

import reference_interp  # noqa: E402
import schedulers  # noqa: E402
from ktir.lower.torch import from_torch  # noqa: E402
from ktir.syntax.printer import print_module  # noqa: E402
from ktir.targets.schema import Target  # noqa: E402
from tests.lower.torch.models import DecoderLayer  # noqa: E402

TOL = {torch.float32: 1e-4, torch.float16: 2e-2}


@pytest.fixture(scope="module", params=[torch.float32, torch.float16], ids=["f32", "f16"])
def decoder(request):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = DecoderLayer(hidden=256, heads=4, kv_heads=2, seq=64).to(request.param)
    x = torch.randn(1, 64, 256).to(request.param)
    return model, x, from_torch(model, (x,), runner=reference_interp.run)


def test_every_decoder_kernel_schedules_and_checks(decoder, spyre: Target) -> None:  # type: ignore[no-untyped-def]
    model, x, program = decoder
    applied: dict[str, str] = {}
    for kernel in program.manifest.kernels:
        options = schedulers.ScheduleOptions(func=kernel.name, check=True, time_budget=0.1)
        result = schedulers.schedule(program.module, spyre, "exact", options)  # raises CheckFailed on a mismatch
        assert result.check is not None and result.check.ok
        if result.report.applied:
            applied[kernel.name] = print_module(result.module)
        else:
            # issue 27: every kernel is scheduled or was already divided by the lowering
            assert "is already divided over grid" in result.report.reason, (kernel.name, result.report.reason)
            assert result.module == program.module
    kinds = {k.name: k.kind for k in program.manifest.kernels}
    # every projection (q, k, v, o, gate, up, down) is rewritten, transposed weights included
    assert sorted(kinds[n] for n in applied).count("matmul") == 7
    for name, text in applied.items():
        program.replace_kernel(name, text, f"{name}.scheduled.ktir")
    got = program.run(x)
    with torch.no_grad():
        want = model(x).float().numpy()
    err = float(np.abs(got.astype(np.float32) - want).max())
    assert err <= TOL[x.dtype] * max(1.0, float(np.abs(want).max())), err


class XWt(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ w.t()


def test_x_matmul_w_transposed_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = from_torch(XWt(), (torch.randn(64, 128), torch.randn(96, 128)), runner=reference_interp.run)
    assert "strides: [1, 128]" in program.text  # the lowering reads w.t() in place
    src = tmp_path / "xwt.ktir"
    src.write_text(program.text)
    out = tmp_path / "xwt.scheduled.ktir"
    name = program.kernel_names[0]
    code = ktir_schedule([str(src), "--target", "spyre", "--func", name, "--check", "-q", "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 0 and "check: ok" in err, err
    program.replace_kernel(name, out.read_text(), str(out))
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((64, 128)).astype(np.float32), rng.standard_normal((96, 128)).astype(np.float32)
    assert np.allclose(program.run(x, w), x @ w.T, rtol=1e-4, atol=1e-4)
