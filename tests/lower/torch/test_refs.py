"""Strided views (`Ref`) against torch's own view semantics on random op sequences: the same
elements, and a reshape is copy-free exactly when torch's `view` accepts it."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ktir.lower.torch.refs import Ref, contiguous_strides  # noqa: E402


def _factorisations(n: int, rng: random.Random) -> tuple[int, ...]:
    dims = []
    while n > 1 and len(dims) < 4:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        n //= d
    if n > 1:
        dims.append(n)
    rng.shuffle(dims)
    return tuple(dims) or (1,)


@pytest.mark.parametrize("seed", range(300))
def test_view_ops_match_torch(seed: int) -> None:
    rng = random.Random(seed)
    shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 4)))
    flat = np.arange(math.prod(shape) + 7, dtype=np.float32)
    t = torch.from_numpy(flat)[7:].view(shape)
    ref = Ref("b", "f32", 7, shape, contiguous_strides(shape))
    for _ in range(4):
        op = rng.choice(["permute", "slice", "select", "unsqueeze", "reshape", "expand", "squeeze"])
        if op == "permute":
            perm = list(range(ref.rank))
            rng.shuffle(perm)
            t, ref = t.permute(perm), ref.permute(perm)
        elif op == "slice" and ref.rank:
            d = rng.randrange(ref.rank)
            n = ref.shape[d]
            start, step = rng.randint(0, max(n - 1, 0)), rng.randint(1, 2)
            t, ref = t[(slice(None),) * d + (slice(start, n, step),)], ref.slice(d, start, n, step)
        elif op == "select" and ref.rank > 1:
            d = rng.randrange(ref.rank)
            i = rng.randrange(ref.shape[d])
            t, ref = t.select(d, i), ref.select(d, i)
        elif op == "unsqueeze":
            d = rng.randint(0, ref.rank)
            t, ref = t.unsqueeze(d), ref.unsqueeze(d)
        elif op == "squeeze" and ref.rank:
            d = rng.randrange(ref.rank)
            t, ref = t.squeeze(d), ref.squeeze([d])
        elif op == "expand" and 1 in ref.shape:
            target = tuple(rng.randint(1, 3) if n == 1 else n for n in ref.shape)
            t, ref = t.expand(target), ref.expand(target)
        elif op == "reshape" and ref.numel:
            target = _factorisations(ref.numel, rng)
            viewed = ref.reshape(target)
            try:
                expected = t.view(target)
            except RuntimeError:
                assert viewed is None, (ref, target)
                t = t.reshape(target)
                ref = Ref("c", "f32", 0, target, contiguous_strides(target))
                flat = t.contiguous().numpy().reshape(-1)
                continue
            assert viewed is not None, (ref, target)
            t, ref = expected, viewed
        if ref.numel == 0:
            return
        got = ref.view_array(flat)
        np.testing.assert_array_equal(got, t.numpy(), err_msg=f"{op}: {ref}")


def test_broadcast_to_marks_broadcast_dims() -> None:
    ref = Ref("b", "f32", 0, (3, 1), (1, 1))
    out = ref.broadcast_to((2, 3, 4))
    assert out.shape == (2, 3, 4) and out.strides == (0, 1, 0)
