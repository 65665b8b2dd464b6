"""Convolutions lowered as matrix products over a strided patch view, against torch eager:
random 1-D and 2-D convolutions (hypothesis: channels, kernel, stride, padding, dilation,
groups, bias, f32/f16), ViT's patch embedding and Whisper's two encoder convolutions."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch import nn  # noqa: E402

from ktir.lower.torch import TorchLoweringError  # noqa: E402
from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.test_ops import check, r  # noqa: E402


@st.composite
def convolutions(draw: st.DrawFn) -> tuple[nn.Module, torch.Tensor]:
    spatial = draw(st.sampled_from([1, 2]))
    groups = draw(st.sampled_from([1, 2, 3]))
    cin = groups * draw(st.integers(1, 3))
    cout = groups * draw(st.integers(1, 3))
    k = draw(st.integers(1, 4))
    stride = draw(st.integers(1, 3))
    dilation = draw(st.integers(1, 2))
    padding = draw(st.integers(0, 2))
    reach = dilation * (k - 1) + 1
    sizes = tuple(draw(st.integers(max(reach - 2 * padding, 1), reach + 6)) for _ in range(spatial))
    conv = (nn.Conv1d if spatial == 1 else nn.Conv2d)(cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                                                      groups=groups, bias=draw(st.booleans()))
    batch = draw(st.integers(1, 2))
    torch.manual_seed(draw(st.integers(0, 2**16)))
    nn.init.normal_(conv.weight)
    return conv.eval(), torch.randn(batch, cin, *sizes)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convolutions(), st.sampled_from([torch.float32, torch.float16]))
def test_random_convolutions_match_torch(case: tuple[nn.Module, torch.Tensor], dtype: torch.dtype) -> None:
    conv, x = case
    check(conv, x, dtype=dtype)


def test_vit_patch_embedding_is_one_matmul_over_a_copy_of_the_patches() -> None:
    conv = nn.Conv2d(3, 32, kernel_size=8, stride=8)
    p = check(conv, r(1, 3, 32, 32))
    kinds = [k.kind for k in p.manifest.kernels]
    assert kinds == ["elementwise", "matmul"], kinds  # the patches copied into rows, then the product


def test_whisper_encoder_convolutions() -> None:
    check(nn.Conv1d(16, 32, kernel_size=3, padding=1), r(1, 16, 30))
    check(nn.Conv1d(32, 32, kernel_size=3, stride=2, padding=1), r(1, 32, 30))


def test_mamba_depthwise_convolution_keeps_its_own_kernel() -> None:
    p = check(nn.Conv1d(8, 8, kernel_size=4, groups=8, padding=3), r(1, 8, 12))
    assert [k.kind for k in p.manifest.kernels] == ["conv1d"]


def test_transposed_convolution_is_declined_by_name() -> None:
    with pytest.raises(TorchLoweringError, match="transposed convolution"):
        from_torch(nn.ConvTranspose1d(4, 4, 3), (r(1, 4, 8),))
