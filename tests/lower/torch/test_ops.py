"""Each op of the issue's acceptance list, lowered from PyTorch and run in the reference
interpreter, against torch eager on CPU.

Tolerance (documented in docs/guides/lower-from-pytorch.md): the largest absolute error is
at most TOL[dtype] * max(1, max |reference|): 1e-4 for f32, 2e-2 for f16 (the KTIR kernels
compute in f32 and round once; eager f16 rounds after every op).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from ktir.lower.torch import ProgramError  # noqa: E402
from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.models import RMSNorm, Rope, SwiGLU  # noqa: E402

TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


class Fn(nn.Module):
    def __init__(self, fn, **params):  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn
        for name, value in params.items():
            self.register_parameter(name, nn.Parameter(value))

    def forward(self, *xs):  # type: ignore[no-untyped-def]
        return self.fn(self, *xs)


def check(module, *inputs, dtype=torch.float32):  # type: ignore[no-untyped-def]
    module = module.to(dtype) if dtype != torch.float32 else module
    inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    program = from_torch(module, inputs)
    got = program.run(*inputs)
    with torch.no_grad():
        want = module(*inputs)
    wants = [want] if isinstance(want, torch.Tensor) else list(want)
    gots = [got] if isinstance(got, np.ndarray) else list(got)
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants, strict=True):
        w = w.float().numpy()
        assert g.shape == w.shape
        err = float(np.abs(g.astype(np.float32) - w).max())
        bound = TOL[dtype] * max(1.0, float(np.abs(w).max()))
        assert err <= bound, f"max error {err} > {bound}"
    return program


def r(*shape):  # type: ignore[no-untyped-def]
    return torch.randn(*shape)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def test_linear() -> None:
    p = check(nn.Linear(64, 96), r(2, 32, 64))
    assert [k.kind for k in p.manifest.kernels] == ["matmul"]
    assert "linalg.matmul" in p.text


def test_matmul_and_bmm() -> None:
    check(Fn(lambda s, a, b: a @ b), r(3, 32, 48), r(48, 64))
    check(Fn(lambda s, a, b: torch.bmm(a, b)), r(4, 16, 32), r(4, 32, 64))
    p = check(Fn(lambda s, a: a @ a.transpose(-1, -2)), r(2, 16, 64))
    (k,) = p.manifest.kernels
    assert k.across_sticks == ["in_xs_0"], "the transposed operand is read across its sticks"


@pytest.mark.parametrize("op", ["add", "mul", "sub", "div"])
def test_binary_broadcasting(op: str) -> None:
    fn = getattr(torch, op)
    p = check(Fn(lambda s, a, b, c: fn(fn(a, b), c) + 0.5), r(2, 8, 64), r(8, 1), r(64).abs() + 0.5)
    assert len(p.manifest.kernels) == 1, "the chain is one fused kernel"


@pytest.mark.parametrize("name", ["silu", "gelu", "exp", "rsqrt", "sigmoid"])
def test_unary(name: str) -> None:
    fn = {"silu": F.silu, "gelu": F.gelu, "exp": torch.exp, "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1), "sigmoid": torch.sigmoid}[name]
    check(Fn(lambda s, x: fn(x)), r(4, 32, 64))


def test_gelu_tanh() -> None:
    check(Fn(lambda s, x: F.gelu(x, approximate="tanh")), r(8, 128))


def test_softmax() -> None:
    check(Fn(lambda s, x: torch.softmax(x, -1)), r(2, 16, 64))
    check(Fn(lambda s, x: torch.softmax(x * 2.0, 1)), r(2, 16, 64))


def test_rmsnorm() -> None:
    p = check(RMSNorm(128), r(2, 16, 128))
    (k,) = p.manifest.kernels  # pow, mean, add, rsqrt, mul, mul: one kernel over whole rows
    assert k.kind == "reduction" and k.grid == [2, 16]  # rows split, the reduced dim whole
    check(nn.RMSNorm(64, eps=1e-5), r(4, 64))


def test_keepdim_reductions_fuse_into_their_consumer() -> None:
    def manual_layer_norm(s, x):  # type: ignore[no-untyped-def]
        xc = x - x.mean(-1, keepdim=True)
        return xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5)

    p = check(Fn(manual_layer_norm), r(4, 8, 64))
    assert len(p.manifest.kernels) <= 2
    check(Fn(lambda s, x: x / x.sum(1, keepdim=True) - x.amax((0, 2), keepdim=True)), r(4, 8, 16).abs() + 0.1)

    def manual_softmax(s, x):  # type: ignore[no-untyped-def]
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    p = check(Fn(manual_softmax), r(8, 64))
    assert len(p.manifest.kernels) == 2
    # a reduced dim is never split over cores: 8 rows of 64 -> 8 tiles
    assert [k.grid for k in p.manifest.kernels] == [[8], [8]]


def test_layernorm() -> None:
    p = check(nn.LayerNorm(128), r(2, 16, 128))
    assert [k.kind for k in p.manifest.kernels] == ["layer_norm"]


def test_rope_slicing_and_concatenation() -> None:
    p = check(Rope(32, 64), r(1, 4, 32, 64))
    assert "cat" in {n for k in p.manifest.kernels for n in k.nodes}


def test_causal_attention_gqa() -> None:
    p = check(Fn(lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)), r(1, 4, 64, 32), r(1, 2, 64, 32), r(1, 2, 64, 32))
    assert [k.kind for k in p.manifest.kernels] == ["attention"]
    check(Fn(lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v)), r(2, 2, 32, 16), r(2, 2, 48, 16), r(2, 2, 48, 16))


def test_embedding_indirect() -> None:
    p = check(nn.Embedding(100, 64), torch.randint(0, 100, (2, 16)))
    assert "ktdp.construct_indirect_access_tile" in p.text


def test_swiglu_mlp() -> None:
    check(SwiGLU(128, 256), r(1, 32, 128))


def test_reductions_and_views() -> None:
    check(Fn(lambda s, x: (x.sum(-1), x.amax(1), x.mean(), x.permute(2, 0, 1).reshape(8, -1) * 2)), r(2, 8, 4))


def test_f16() -> None:
    check(Fn(lambda s, x, w: F.silu(x @ w) * x[..., :64]), r(32, 128), r(128, 64) * 0.1, dtype=torch.float16)
    check(RMSNorm(64), r(4, 64), dtype=torch.float16)
    check(Fn(lambda s, x: torch.softmax(x, -1)), r(4, 64), dtype=torch.float16)


def test_work_is_divided_over_the_cores() -> None:
    p = check(Fn(lambda s, x: x * 2), r(64, 256))
    (k,) = p.manifest.kernels
    assert k.grid == [32]
    assert "grid = [32]" in p.text


def test_unsupported_ops_are_named_all_at_once_with_their_nodes() -> None:
    from ktir.lower.torch import TorchLoweringError

    with pytest.raises(TorchLoweringError, match=r"^1 op is not supported by the PyTorch lowering: aten.sort \(1 node: sort\)$"):
        from_torch(Fn(lambda s, x: torch.sort(x, 0).values), (r(4, 4),))

    def two(s, x):  # type: ignore[no-untyped-def]
        a = torch.sort(x, 0).values + torch.sort(x, 1).values
        return torch.linalg.det(a) + torch.histc(x, 4).sum()

    with pytest.raises(TorchLoweringError) as info:
        from_torch(Fn(two), (r(4, 4),))
    message = str(info.value)
    assert message.startswith("3 ops are not supported"), message
    assert "aten.sort (2 nodes: sort, sort_1)" in message and "aten.histc (1 node: histc)" in message and "linalg" in message


def test_masks_comparisons_and_where() -> None:
    check(Fn(lambda s, x, m: x.masked_fill(m, -1.0) * 2), r(4, 64), torch.rand(4, 64) > 0.5)
    check(Fn(lambda s, x: torch.where(x > 0, x, 0.1 * x)), r(8, 64))
    p = check(Fn(lambda s, x, y: (x >= y, torch.logical_not(x < 0))), r(4, 32), r(32))
    assert p.manifest.outputs[0].dtype == "i1"


def test_log_softmax_variance_max_min() -> None:
    check(Fn(lambda s, x: F.log_softmax(x, -1)), r(4, 64))
    check(Fn(lambda s, x: (x.var(-1), x.var(0, keepdim=True, correction=0))), r(8, 64))
    check(Fn(lambda s, x: (torch.max(x, -1).values, torch.min(x, 1, keepdim=True).values, x.max())), r(4, 8, 16))


def test_bf16() -> None:
    check(Fn(lambda s, x, w: torch.softmax(x @ w, -1)), r(16, 64), r(64, 64) * 0.1, dtype=torch.bfloat16)


def test_max_min_indices_and_argmax() -> None:
    p = check(Fn(lambda s, x: torch.max(x, -1).indices), r(4, 8))
    assert [k.kind for k in p.manifest.kernels] == ["topk"]
    check(Fn(lambda s, x: torch.min(x * 2, 1, keepdim=True)), r(4, 8, 6))
    check(Fn(lambda s, x: (torch.argmax(x, 0), torch.argmin(x, -1, keepdim=True), torch.argmax(x))), r(6, 8))


def test_attention_with_explicit_masks() -> None:
    q, k, v = r(2, 4, 32, 16), r(2, 4, 48, 16), r(2, 4, 48, 16)
    keep = torch.rand(32, 48) > 0.3
    keep[:, 0] = True  # every query sees a key
    check(Fn(lambda s, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)), q, k, v, keep)
    check(Fn(lambda s, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3)), q, k, v, r(2, 1, 32, 48))


def test_lowering_uses_inference_mode_and_leaves_the_module_as_it_was() -> None:
    model = nn.Sequential(nn.Linear(64, 64), nn.Dropout(0.5)).train()
    program = from_torch(model, (r(4, 64),))
    assert model.training
    assert [k.kind for k in program.manifest.kernels] == ["matmul"]  # dropout is gone in eval mode


def test_matmul_broadcasting_batch_dims() -> None:
    # (2, 1, 4, 8) @ (3, 8, 5): the expanded operands are copied by kernels on a grid of rank 4,
    # whose access tile was once named %tile2 like the tile id it used (an SSA redefinition)
    check(Fn(lambda m, a, b: a @ b), r(2, 1, 4, 8), r(3, 8, 5))


def test_a_dynamic_shape_is_declined_naming_the_input() -> None:
    # torch.export with dynamic_shapes: the symbolic size reached the matmul's work division
    # and stopped with torch's "unhashable type: non-nested SymInt"
    from ktir.lower.torch import TorchLoweringError, from_exported

    class Scores(nn.Module):
        def forward(self, x, w):  # type: ignore[no-untyped-def]
            return torch.softmax(x @ w, -1)

    rows = torch.export.Dim("rows", min=2, max=64)
    ep = torch.export.export(Scores(), (r(8, 16), r(16, 32)), dynamic_shapes={"x": {0: rows}, "w": None})
    with pytest.raises(TorchLoweringError, match=r"input x.* has a dynamic shape \[s\d+, 16\]: the lowering needs static"):
        from_exported(ep, decomposed=False)


def test_an_empty_input_is_declined_naming_it() -> None:
    # a (0, 4) input reached the kernels as 0 x 4 access tiles the interpreter refused
    from ktir.lower.torch import TorchLoweringError

    with pytest.raises(TorchLoweringError, match=r"has no elements \(shape \[0, 4\]\): empty tensors are not lowered"):
        from_torch(Fn(lambda s, x: x + 1), (r(0, 4),))


class Counter(nn.Module):
    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.register_buffer("count", torch.zeros(4))

    def forward(self, x):  # type: ignore[no-untyped-def]
        if self.what == "buffer":
            self.count.add_(1)
            return x + self.count
        x.mul_(2)
        return x + 1


def test_an_in_place_update_of_a_buffer_is_declined() -> None:
    # the buffer is one of the program's weights: its new value would have to be written back into them
    from ktir.lower.torch import TorchLoweringError

    with pytest.raises(TorchLoweringError, match=r"updates buffer count in place .*: updates of weights and buffers are not lowered"):
        from_torch(Counter("buffer"), (r(3, 4),))


def test_an_in_place_update_of_an_input_is_written_back() -> None:
    # the program's new value of x is written into the caller's array (numpy) or tensor, as PyTorch does
    x = r(3, 4)
    program = from_torch(Counter("input"), (x.clone(),))
    assert [o.updates for o in program.manifest.outputs] == ["x", None]
    array = x.numpy().copy()
    got = program.run(array)  # one result: the update is not returned
    assert np.allclose(array, x.numpy() * 2) and np.allclose(got, x.numpy() * 2 + 1)
    tensor = x.clone()
    program.run(tensor)
    assert torch.allclose(tensor, x * 2)
    readonly = np.ones((3, 4), dtype=np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ProgramError, match="updates input x in place"):
        program.run(readonly)


def test_an_empty_intermediate_is_declined() -> None:
    # x[:, 3:3] + 1 made a kernel whose 4 x 0 access tiles the interpreter refused at run time
    from ktir.lower.torch import TorchLoweringError

    with pytest.raises(TorchLoweringError, match=r"the result has no elements \(shape \[4, 0\]\)"):
        from_torch(Fn(lambda s, x: (x[:, 3:3] + 1, x * 2)), (r(4, 8),))
    with pytest.raises(TorchLoweringError, match=r"the reduced tensor has no elements \(shape \[4, 0\]\)"):
        from_torch(Fn(lambda s, x: x[:, 3:3].sum(-1)), (r(4, 8),))
    check(Fn(lambda s, x: torch.cat([x[:, 3:3], x], 1) * 2), r(4, 8))  # an empty view itself is fine
