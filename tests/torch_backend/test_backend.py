"""torch.compile(model, backend="ktir"): found by name through its entry point, each graph
lowered, (optionally) scheduled and run in the reference interpreter; results against torch
eager; recompiles per shape; falls back to eager with one line naming the op (an error with
strict); options validated; the report and the dump folder; the `check` option catches a
wrong kernel runner."""

from __future__ import annotations

import json
import logging
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import ktir.torch_backend as backend  # noqa: E402
from ktir.torch_backend import BackendError, OptionsError  # noqa: E402

# most tests skip the scheduler (it has its own tests): the lowering and the interpreter are what run here
FAST = {"scheduler": None, "estimate": False}


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(32, 64)
        self.down = nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.up(x))
        return self.down(h), h.sum(-1)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    torch._dynamo.reset()
    backend.reset()


def _model() -> MLP:
    torch.manual_seed(0)
    return MLP().eval()


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-4) -> None:
    scale = max(1.0, float(want.abs().max()))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert float((got - want).abs().max()) <= rtol * scale


def test_the_backend_is_registered_under_its_name() -> None:
    names = {ep.name: ep.value for ep in entry_points(group="torch_dynamo_backends")}
    assert names.get("ktir") == "ktir.torch_backend:ktir_backend", "reinstall ktir (pip install -e .)"
    assert "ktir" in torch._dynamo.list_backends(exclude_tags=())


def test_compiled_model_matches_eager_and_keeps_the_output_structure() -> None:
    model = _model()
    compiled = torch.compile(model, backend="ktir", options={**FAST, "strict": True})
    x = torch.randn(8, 32)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want, strict=True):
        _close(g, w)
    (report,) = backend.reports()
    assert report.inputs == [[8, 32]]  # the weights are the program's weights, not inputs
    assert {k.kind for k in report.kernels} >= {"matmul"}


def test_a_new_shape_compiles_a_new_static_program() -> None:
    model = _model()
    compiled = torch.compile(model, backend="ktir", options={**FAST, "strict": True})
    with torch.no_grad():
        for rows in (4, 12, 20):
            x = torch.randn(rows, 32)
            for g, w in zip(compiled(x), model(x), strict=True):
                _close(g, w)
    shapes = sorted(r.inputs[0][0] for r in backend.reports())
    assert shapes == [4, 12, 20]


def test_an_in_place_weight_update_is_seen() -> None:
    model = _model()
    compiled = torch.compile(model, backend="ktir", options={**FAST, "strict": True})
    x = torch.randn(4, 32)
    with torch.no_grad():
        compiled(x)
        model.down.weight.mul_(-2.0)
        got, want = compiled(x), model(x)
    _close(got[0], want[0])


class Unsupported(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.det(x) + 1.0


def test_an_unsupported_graph_runs_eagerly_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    model = Unsupported()
    x = torch.randn(3, 3)
    compiled = torch.compile(model, backend="ktir", options=FAST)
    with caplog.at_level(logging.WARNING, logger="ktir.torch_backend"):
        got = compiled(x)
    assert torch.allclose(got, model(x))
    lines = [r.getMessage() for r in caplog.records if r.name == "ktir.torch_backend"]
    assert len(lines) == 1 and "runs eagerly" in lines[0] and "linalg" in lines[0] and "\n" not in lines[0]


def test_strict_turns_the_fallback_into_an_error() -> None:
    compiled = torch.compile(Unsupported(), backend="ktir", options={**FAST, "strict": True})
    with pytest.raises(Exception, match="cannot be compiled \\(strict\\)") as info:
        compiled(torch.randn(3, 3))
    assert "linalg" in str(info.value)


def test_unknown_options_are_refused_naming_the_option() -> None:
    with pytest.raises(OptionsError, match="schedular"):
        backend.ktir_backend(None, [], options={"schedular": "exact"})
    with pytest.raises(OptionsError, match="dtype"):
        backend.ktir_backend(None, [], options={"dtype": "f8"})


def test_check_catches_a_wrong_kernel_runner() -> None:
    model = _model()
    compiled = torch.compile(model, backend="ktir", options={**FAST, "check": True})
    x = torch.randn(4, 32)
    with torch.no_grad():
        compiled(x)  # builds the variant and checks it: right
    (graph,) = backend.compiled_graphs()
    (variant,) = graph.variants.values()
    import reference_interp

    def halving(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = reference_interp.run(*args, **kwargs)
        for name, v in list(result.outputs.items()):
            if isinstance(v, np.ndarray) and v.dtype.kind == "f":
                result.outputs[name] = v * 0.5
        return result

    variant.program.runner = halving
    variant.runs = 0  # the check runs on a variant's first run
    with pytest.raises(BackendError, match="differs from eager"), torch.no_grad():
        compiled(x)


def test_f16_dtype_policy_runs_in_half_and_returns_the_callers_types() -> None:
    model = _model()
    compiled = torch.compile(model, backend="ktir", options={**FAST, "strict": True, "dtype": "f16"})
    x = torch.randn(4, 32)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    for g, w in zip(got, want, strict=True):
        _close(g, w, rtol=2e-2)
    (variant,) = backend.compiled_graphs()[0].variants.values()
    manifest = variant.program.manifest  # type: ignore[union-attr]
    assert {b.dtype for b in manifest.buffers} == {"f16"}  # inputs, weights and results all in half


def test_the_report_and_the_dump_folder(tmp_path: Path) -> None:
    model = _model()
    compiled = torch.compile(model, backend="ktir", options={"strict": True, "dump_dir": str(tmp_path), "scheduler": "exact",
                                                             "schedule_budget": 0.1})
    x = torch.randn(8, 32)
    with torch.no_grad():
        compiled(x)
    (report,) = backend.reports()
    assert report.estimate_seconds is not None and report.estimate_seconds > 0
    assert report.ratio_to_bound is not None and report.ratio_to_bound >= 1.0
    assert all(k.estimate_seconds for k in report.kernels)
    assert all(k.scheduled or k.schedule_note for k in report.kernels)
    folder = tmp_path / "graph0"
    names = {p.name for p in folder.iterdir()}
    assert {"graph0.ktir", "graph0.manifest.json", "graph0.weights.npz", "report.json", "report.txt", "timeline.svg", "traces"} <= names
    assert json.loads((folder / "report.json").read_text())["graph"] == "graph0"
    assert (folder / "timeline.svg").read_text().startswith("<svg")
    for trace in (folder / "traces").iterdir():
        assert "traceEvents" in json.loads(trace.read_text())
    for k in report.kernels:
        assert k.name in (folder / "report.txt").read_text()
        assert (folder / f"{k.name}.scheduled.ktir").exists() == k.scheduled
