"""The ops mixture-of-experts routing and Mamba2 layers add, each lowered alone and run in the
reference interpreter against torch eager (tolerance as in test_ops.py): top-k, row gather
(x[ids]), depthwise causal conv1d, cumsum, constant padding, clamp, softplus, log1p/expm1,
and the two composite pieces: Mamba2's chunked scan and a top-k expert dispatch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.test_ops import Fn, check, r  # noqa: E402


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def kinds(p) -> list[str]:  # type: ignore[no-untyped-def]
    return [k.kind for k in p.manifest.kernels]


def test_topk_values_and_indices() -> None:
    p = check(Fn(lambda s, x: torch.topk(x, 3, dim=-1)), r(16, 8))
    assert kinds(p) == ["topk"]
    assert [o.dtype for o in p.manifest.outputs] == ["f32", "i64"]
    assert p.manifest.kernels[0].grid == [16]  # one row per tile
    check(Fn(lambda s, x: torch.topk(x, 2, dim=1, largest=False)), r(4, 6, 5))  # not the last dim, smallest
    check(Fn(lambda s, x: torch.topk(x, 4)), r(10))  # a 1-D input
    check(Fn(lambda s, x: torch.topk(x * 2 + 1, 2)), r(8, 8), dtype=torch.float16)  # a fused producer, f16


def test_topk_ties_go_to_the_lowest_index() -> None:
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0]])
    got = from_torch(Fn(lambda s, x: torch.topk(x, 3)), (x,)).run(x)
    assert got[1].tolist() == [[1, 2, 4]] and got[0].tolist() == [[3.0, 3.0, 3.0]]


def test_routing_softmax_over_topk() -> None:
    def route(s, x):  # type: ignore[no-untyped-def]
        logits = F.linear(x, s.w)
        vals, idx = logits.topk(2, dim=-1)
        return torch.softmax(vals, dim=-1), idx

    check(Fn(route, w=r(8, 64)), r(32, 64))


def test_gather_rows_by_index() -> None:
    table = r(6, 4, 32)
    ids = torch.tensor([5, 0, 0, 3, 2, 5, 1, 4])
    p = check(Fn(lambda s, i: s.t[i] * 2, t=table), ids)
    assert "ktdp.construct_indirect_access_tile" in p.text and "gather" in kinds(p)
    check(Fn(lambda s, x, i: x[i]), r(10, 64), torch.tensor([[9, 0], [3, 3]]))  # a computed table, 2-D ids
    check(Fn(lambda s, x, i: x[:, i]), r(4, 8), torch.tensor([1, -2]))  # a later dim, a negative id


def test_expert_dispatch_matches_eager() -> None:
    """Top-2 of 4 experts per token, each token's expert weights gathered by id and applied
    by a batched matmul (transformers' batched_mm experts), weighted and summed."""

    class Experts(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.router = nn.Linear(64, 4, bias=False)
            self.w = nn.Parameter(torch.randn(4, 32, 64) / 8)

        def forward(self, x):  # type: ignore[no-untyped-def]
            vals, idx = self.router(x).topk(2, dim=-1)
            weights = torch.softmax(vals, dim=-1).reshape(-1)
            xs = x.repeat_interleave(2, dim=0)
            y = torch.bmm(self.w[idx.reshape(-1)], xs.unsqueeze(-1)).squeeze(-1) * weights[:, None]
            return y.view(x.shape[0], 2, 32).sum(1)

    p = check(Experts(), r(16, 64))
    assert {"topk", "gather", "matmul"} <= set(kinds(p))
    check(Experts(), r(16, 64), dtype=torch.float16)


def test_depthwise_causal_conv1d() -> None:
    conv = nn.Conv1d(48, 48, kernel_size=4, groups=48, padding=3)
    causal = Fn(lambda s, x: F.silu(F.conv1d(x, s.w, s.b, padding=3, groups=48)[..., :20]), w=conv.weight.detach(), b=conv.bias.detach())
    p = check(causal, r(2, 48, 20))  # Mamba's causal conv: pad 3 both sides, keep the first 20
    assert kinds(p)[0] == "conv1d"
    check(conv, r(1, 48, 16))
    check(conv, r(1, 48, 16), dtype=torch.float16)
    check(nn.Conv1d(8, 8, kernel_size=3, groups=8, padding=0, bias=False), r(1, 8, 12))  # no padding, no bias
    # any other convolution is a matrix product (tests/lower/torch/test_conv.py)
    assert "matmul" in kinds(check(nn.Conv1d(4, 8, 3), r(1, 4, 10)))


def test_cumsum() -> None:
    p = check(Fn(lambda s, x: torch.cumsum(x, -1)), r(4, 3, 8))
    assert kinds(p) == ["cumsum"]
    check(Fn(lambda s, x: torch.cumsum(x * 2, 1)), r(2, 16, 4))
    check(Fn(lambda s, x: torch.cumsum(x, 0)), r(12), dtype=torch.float16)


def test_constant_pad() -> None:
    p = check(Fn(lambda s, x: F.pad(x, (1, 0))), r(2, 4, 7))
    assert kinds(p) == ["pad"]
    check(Fn(lambda s, x: F.pad(x, (2, 3, 0, 1), value=-1.5)), r(3, 8, 8))
    check(Fn(lambda s, x: F.pad(x, (-1, 2))), r(4, 9))  # negative padding crops
    check(Fn(lambda s, x: F.pad(x, (0, 0)) + 1), r(4, 9))  # no padding: no kernel of its own


def test_clamp_softplus_log1p_expm1() -> None:
    check(Fn(lambda s, x: torch.clamp(x, min=-0.5, max=0.25)), r(8, 64))
    check(Fn(lambda s, x: torch.clamp(x, min=0.0, max=float("inf"))), r(8, 64))
    check(Fn(lambda s, x: F.softplus(x * 10)), r(8, 64))  # both branches of the threshold
    check(Fn(lambda s, x: torch.log1p(x.abs()) + torch.expm1(x)), r(8, 64))


def test_mamba2_chunked_scan_matches_a_sequential_scan() -> None:
    """transformers' Mamba2 chunked scan (cumsum, segment sums, einsums), lowered, against the
    plain recurrence h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t, y_t = C_t h_t + D x_t."""
    pytest.importorskip("transformers")
    from transformers.models.granitemoehybrid.modeling_granitemoehybrid import mamba2_chunk_scan

    heads, dim, state, seq = 4, 8, 16, 16

    class Scan(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.A = nn.Parameter(-torch.rand(heads) - 0.5)
            self.D = nn.Parameter(torch.randn(heads))

        def forward(self, x, dt, b, c):  # type: ignore[no-untyped-def]
            return mamba2_chunk_scan(x, dt, self.A, b, c, chunk_size=8, D=self.D, dt_softplus=True)

    scan = Scan()
    x, dt, b, c = r(1, seq, heads, dim), r(1, seq, heads), r(1, seq, 1, state), r(1, seq, 1, state)
    p = check(scan, x, dt, b, c)
    assert "cumsum" in kinds(p)
    got = p.run(x, dt, b, c)
    h = torch.zeros(heads, dim, state)
    step = F.softplus(dt[0])
    ys = []
    with torch.no_grad():
        for t in range(seq):
            h = torch.exp(step[t] * scan.A)[:, None, None] * h + (step[t][:, None] * x[0, t])[..., None] * b[0, t, 0]
            ys.append(h @ c[0, t, 0] + scan.D[:, None] * x[0, t])
    want = torch.stack(ys)[None].numpy()
    assert float(np.abs(got - want).max()) <= 1e-4 * max(1.0, float(np.abs(want).max()))


def test_program_estimate_costs_every_kernel_on_spyre() -> None:
    x = r(8, 16)
    p = from_torch(Fn(lambda s, x: torch.topk(torch.cumsum(x, -1), 2)[0] * 2), (x,))
    reports = p.estimate(x, target="spyre")
    assert [(n, kind) for n, kind, _ in reports] == [(k.name, k.kind) for k in p.manifest.kernels]
    assert all(rep.estimate_seconds > 0 and rep.grid == p.manifest.kernels[i].grid for i, (_, _, rep) in enumerate(reports))
