"""`ktir.lower` runs kernels through the runner its caller gives it, else the installed default (the
reference interpreter, found through the `ktir.kernel_runners` entry point: ktir.lower imports no executor)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import reference_interp  # noqa: E402
from ktir.lower.torch import Program, ProgramError, from_torch  # noqa: E402


def _model() -> Any:
    return torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.SiLU())


def test_running_without_a_runner_uses_the_installed_reference_interpreter() -> None:
    model, x = _model(), torch.randn(4, 16)
    program = from_torch(model, (x,))
    got = program.run(x)
    with torch.no_grad():
        want = model(x).numpy()
    assert np.abs(got - want).max() <= 1e-5
    assert program.runner is reference_interp.run  # found through the ktir.kernel_runners entry point


def test_a_missing_default_runner_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(4, 16)
    program = from_torch(_model(), (x,))
    monkeypatch.setenv("KTIR_KERNEL_RUNNER", "no-such-runner")
    with pytest.raises(ProgramError, match=r"no kernel runner named 'no-such-runner'.*reference.*runner="):
        program.run(x)


def test_every_kernel_goes_through_the_given_runner(tmp_path: Any) -> None:
    model, x = _model(), torch.randn(4, 16)
    calls: list[str] = []

    def spy(module: Any, **kw: Any) -> Any:
        calls.append(kw["func"])
        return reference_interp.run(module, **kw)

    program = from_torch(model, (x,), runner=spy)
    got = program.run(x)
    assert calls == [k.name for k in program.manifest.kernels]
    with torch.no_grad():
        assert np.allclose(got, model(x).numpy(), atol=1e-5)
    program.save(tmp_path / "m.ktir")
    loaded = Program.load(tmp_path / "m.manifest.json", runner=reference_interp.run)
    assert np.array_equal(loaded.run(x), got)
