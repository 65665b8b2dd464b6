"""Integer elementwise chains (i64 and i32 tensors, masks, casts between integers and floats)
lowered and run in the reference interpreter: exactly torch's result. Random chains come from
hypothesis; the named cases are the ones models use (an int64 attention mask, position ids)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.test_ops import Fn  # noqa: E402

Chain = Callable[[Any, Any], Any]

BINARY: dict[str, Chain] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: torch.div(a, b.abs() + 1, rounding_mode="floor"),
    "truncdiv": lambda a, b: torch.div(a, -(b.abs() + 1), rounding_mode="trunc"),
    "remainder": lambda a, b: a % (b.abs() + 1),
    "negative remainder": lambda a, b: a % -(b.abs() + 1),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "where": lambda a, b: torch.where(a > b, a, b - 3),
    "compare": lambda a, b: (a <= b).to(a.dtype) + (a == b).to(a.dtype),
}
UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": lambda a: -a,
    "abs": torch.abs,
    "clamp": lambda a: a.clamp(-20, 30),
    "not": lambda a: ~a,
    "float round trip": lambda a: (a.float() * 0.75).to(a.dtype),
}


@st.composite
def chains(draw: st.DrawFn) -> tuple[Chain, list[str]]:
    steps = draw(st.lists(st.one_of(st.sampled_from(sorted(BINARY)), st.sampled_from(sorted(UNARY))), min_size=1, max_size=4))

    def chain(a: Any, b: Any) -> Any:
        x = a
        for s in steps:
            x = BINARY[s](x, b) if s in BINARY else UNARY[s](x)
        return x

    return chain, steps


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains(), st.sampled_from([torch.int64, torch.int32]), st.integers(0, 2**16))
def test_random_integer_chains_are_exact(case: tuple[Chain, list[str]], dtype: torch.dtype, seed: int) -> None:
    chain, steps = case
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-100, 100, (6, 40), generator=g, dtype=dtype)
    b = torch.randint(-100, 100, (40,), generator=g, dtype=dtype)
    got = from_torch(Fn(lambda s, x, y: chain(x, y)), (a, b)).run(a.numpy(), b.numpy())
    want = chain(a, b).numpy()
    assert got.dtype == want.dtype, steps
    assert np.array_equal(got, want), (steps, got[got != want][:5], want[got != want][:5])


def test_int64_attention_mask_becomes_an_additive_mask() -> None:
    def masked(s: Any, scores: Any, mask: Any) -> Any:  # Hugging Face's padding mask, from the tokenizer's int64
        additive = (1.0 - mask[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
        return torch.softmax(scores + additive, dim=-1)

    scores = torch.randn(2, 4, 8, 8)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
    got = from_torch(Fn(masked), (scores, mask)).run(scores.numpy(), mask.numpy())
    assert np.allclose(got, masked(None, scores, mask).numpy(), atol=1e-6)


def test_position_ids_from_a_mask() -> None:
    def positions(s: Any, mask: Any) -> Any:
        return (mask.cumsum(-1) - 1).clamp(min=0) * mask

    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    got = from_torch(Fn(positions), (mask,)).run(mask.numpy())
    assert np.array_equal(got, positions(None, mask).numpy())


def test_nan_and_infinity_tests() -> None:
    x = torch.tensor([[0.0, -1.5, float("inf"), float("-inf"), float("nan"), 3e38]])
    fn = Fn(lambda s, x: (torch.isnan(x), torch.isinf(x), torch.isfinite(x), torch.isinf(x * 10)))
    got = from_torch(fn, (x,)).run(x.numpy())
    for g, w in zip(got, fn(x), strict=True):
        assert np.array_equal(g, w.numpy())


def test_any_and_all_over_every_dim_one_or_several() -> None:
    x = torch.randn(4, 6)
    x[1, 2], x[2], x[3, 0] = float("inf"), 0.0, float("nan")
    fns = [lambda s, x: torch.isinf(x).any(), lambda s, x: (x > 1).any(-1), lambda s, x: (x != 0).all(1, keepdim=True),
           lambda s, x: torch.all(x), lambda s, x: torch.any(x, 0),
           lambda s, x: torch.where(torch.isinf(x).any(), x.clamp(-1, 1), x)]  # T5's f16 overflow guard
    for fn in fns:
        got = from_torch(Fn(fn), (x,)).run(x)
        want = fn(None, x).numpy()
        assert np.asarray(got).dtype == want.dtype and np.array_equal(np.asarray(got), want, equal_nan=True)


def test_clamp_to_computed_bounds() -> None:
    x, hi = torch.randn(4, 6) * 3, torch.rand(6) + 0.5
    fn = Fn(lambda s, x, hi: (torch.clamp(x, min=-hi, max=hi), torch.clamp(x, max=hi.max())))
    got = from_torch(fn, (x, hi)).run(x, hi)
    for g, w in zip(got, fn(x, hi), strict=True):
        assert np.array_equal(g, w.numpy())
