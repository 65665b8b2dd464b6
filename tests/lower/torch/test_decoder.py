"""The acceptance model: a scaled-down Llama decoder layer (hidden 256, 4 heads, 2 KV heads,
seq 64) lowered whole and run end to end against torch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.models import DecoderLayer  # noqa: E402

TOL = {torch.float32: 1e-4, torch.float16: 2e-2}


@pytest.fixture(scope="module", params=[torch.float32, torch.float16], ids=["f32", "f16"])
def lowered(request):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = DecoderLayer(hidden=256, heads=4, kv_heads=2, seq=64).to(request.param)
    x = torch.randn(1, 64, 256).to(request.param)
    return model, x, from_torch(model, (x,))


def test_decoder_layer_matches_eager(lowered) -> None:  # type: ignore[no-untyped-def]
    model, x, program = lowered
    got = program.run(x)
    with torch.no_grad():
        want = model(x).float().numpy()
    assert got.shape == (1, 64, 256)
    err = float(np.abs(got.astype(np.float32) - want).max())
    assert err <= TOL[x.dtype] * max(1.0, float(np.abs(want).max())), err


def test_decoder_layer_program_structure(lowered) -> None:  # type: ignore[no-untyped-def]
    _, _, program = lowered
    kinds = [k.kind for k in program.manifest.kernels]
    assert kinds.count("matmul") == 7  # q, k, v, o, gate, up, down
    assert kinds.count("attention") == 1
    assert kinds.count("reduction") == 2  # the two RMSNorm means
    params = {b.source for b in program.manifest.buffers if b.kind == "parameter"}
    assert "q.weight" in params and "mlp.down.weight" in params
    # every buffer a kernel reads is an input, a weight, or written by an earlier kernel
    ready = {b.name for b in program.manifest.buffers if b.kind != "intermediate"}
    for k in program.manifest.kernels:
        assert set(k.reads) <= ready, k.name
        ready |= set(k.writes)
    assert all(np.prod(k.grid) > 1 for k in program.manifest.kernels)
    # projection weights are stored [in, out], the order their matmul walks them: no kernel
    # reads a buffer across its sticks
    assert all(b.permutation == [1, 0] for b in program.manifest.buffers if b.source.endswith("proj.weight") or b.source in ("q.weight", "o.weight"))
    assert [k.name for k in program.manifest.kernels if k.across_sticks] == []


def test_every_kernel_runs_in_lockstep_as_tile_by_tile(lowered) -> None:  # type: ignore[no-untyped-def]
    """Lockstep's bit-for-bit promise on kernels the lowering wrote, not the interpreter's tests:
    each kernel of the layer runs in lockstep and gives the per-tile run's bytes and statistics."""
    import sys
    from pathlib import Path

    import reference_interp as ri

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from lockstep_campaign import difference

    _, x, program = lowered
    locked_runs: list[bool] = []

    def both(module, func=None, args=None, **kw):  # type: ignore[no-untyped-def]
        fresh = [{k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()} for _ in range(2)]
        tiled = ri.run(module, func, args=fresh[0], lockstep=False, **kw)
        locked = ri.run(module, func, args=fresh[1], lockstep="always", **kw)
        assert difference(tiled, locked) is None, func
        locked_runs.append(locked.lockstep)
        return tiled

    saved, program.runner = program.runner, both
    try:
        program.run(x)
    finally:
        program.runner = saved
    assert len(locked_runs) == len(program.manifest.kernels) and all(locked_runs)
