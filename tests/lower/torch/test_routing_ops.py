"""The ops mixture-of-experts routing and model plumbing use, lowered and run against torch
eager: sort (stable, NaN last, any dim, descending), histc, gather/scatter along any dim,
index_put (a permutation's inverse, accumulate), slice_scatter, copy, indexing on any dim with
negative ids, and transformers' grouped matmul over sorted rows (empty experts, rows past the
last expert)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.lower.torch.lowered import from_torch  # noqa: E402
from tests.lower.torch.test_ops import Fn  # noqa: E402


def run(fn: Any, *inputs: Any) -> list[np.ndarray]:
    got = from_torch(Fn(fn), tuple(x.clone() for x in inputs)).run(*inputs)
    return got if isinstance(got, list) else [got]


def same(got: list[np.ndarray], want: Any) -> None:
    wants = list(want) if isinstance(want, tuple | list) else [want]
    assert len(got) == len(wants)
    for g, w in zip(got, wants, strict=True):
        w = w.detach().numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g, w, equal_nan=True), (g, w)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([-2.0, -0.0, 0.0, 1.5, 3.0, float("nan"), float("inf")]), min_size=1, max_size=12),
       st.booleans())
def test_sort_is_torchs_stable_sort(values: list[float], descending: bool) -> None:
    x = torch.tensor(values)
    same(run(lambda s, x: torch.sort(x, descending=descending, stable=True), x), torch.sort(x, descending=descending, stable=True))


def test_sort_along_any_dim_and_of_integers() -> None:
    x = torch.randn(4, 6)
    x[1, 2] = x[1, 4]
    same(run(lambda s, x: torch.sort(x, dim=0, stable=True), x), torch.sort(x, dim=0, stable=True))
    ids = torch.randint(0, 4, (32,), generator=torch.Generator().manual_seed(3))
    same(run(lambda s, i: torch.sort(i, stable=True), ids), torch.sort(ids, stable=True))


def test_histc_counts_expert_ids() -> None:
    ids = torch.randint(0, 8, (40,), generator=torch.Generator().manual_seed(4)).float()
    same(run(lambda s, x: torch.histc(x, 8, 0, 7), ids), torch.histc(ids, 8, 0, 7))
    x = torch.tensor([-1.0, 0.0, 0.49, 0.5, 1.0, 1.2])  # outside, edges, the top edge
    same(run(lambda s, x: torch.histc(x, 2, 0, 1), x), torch.histc(x, 2, 0, 1))


def test_gather_and_scatter_along_the_last_dim() -> None:
    x = torch.randn(5, 9)
    i = torch.tensor([[0, 3], [8, 2], [1, 1], [4, 7], [6, 5]])
    same(run(lambda s, x, i: torch.gather(x, 1, i), x, i), torch.gather(x, 1, i))
    unique = torch.tensor([[0, 3], [8, 2], [1, 0], [4, 7], [6, 5]])
    v = torch.randn(5, 2)
    same(run(lambda s, x, i, v: x.scatter(1, i, v), x, unique, v), x.scatter(1, unique, v))
    same(run(lambda s, x, i: x.scatter(1, i, 1.0), torch.zeros(5, 9), unique), torch.zeros(5, 9).scatter(1, unique, 1.0))


def test_index_put_inverts_a_permutation_and_accumulates() -> None:
    p = torch.randperm(16, generator=torch.Generator().manual_seed(5))
    same(run(lambda s, p: torch.zeros(16, dtype=torch.int64).index_put((p,), torch.arange(16)), p),
         torch.zeros(16, dtype=torch.int64).index_put((p,), torch.arange(16)))
    x, ids, v = torch.randn(6, 3), torch.tensor([0, 2, 2, 5]), torch.randn(4, 3)
    got = run(lambda s, x, i, v: x.index_put((i,), v, accumulate=True), x, ids, v)
    assert np.allclose(got[0], x.index_put((ids,), v, accumulate=True).numpy(), atol=1e-6)


def test_slice_scatter_and_copy() -> None:
    x, y = torch.randn(4, 9), torch.randn(4, 3)
    same(run(lambda s, x, y: torch.slice_scatter(x, y, 1, 2, 8, 2), x, y), torch.slice_scatter(x, y, 1, 2, 8, 2))
    row = torch.randn(9)
    same(run(lambda s, x, r: torch.ops.aten.copy(x, r), x, row), torch.ops.aten.copy(x, row))


def test_indexing_any_dim_with_negative_ids() -> None:
    x = torch.randn(2, 5, 6, 7)
    for fn, ids in [
        (lambda s, x, i: x[:, i], torch.tensor([4, 0, -1, 1])),
        (lambda s, x, i: x[:, :, i], torch.tensor([[5, 0], [-2, 2]])),
        (lambda s, x, i: x[..., i] * 2, torch.tensor([6, 0, 3])),
        (lambda s, x, i: torch.index_select(x, 2, i), torch.tensor([5, 1])),
    ]:
        same(run(fn, x, ids), fn(None, x, ids))
    computed = lambda s, x, i: x[:, i - 3]  # noqa: E731 - ids made negative in the graph
    same(run(computed, x, torch.tensor([0, 4, 2])), computed(None, x, torch.tensor([0, 4, 2])))


def test_grouped_matmul_over_sorted_rows() -> None:
    import transformers.integrations.moe  # noqa: F401 - registers torch.ops.transformers.grouped_mm_fallback

    gen = torch.Generator().manual_seed(6)
    x, w = torch.randn(21, 16, generator=gen), torch.randn(5, 16, 24, generator=gen)
    for offs in ([3, 3, 10, 19, 21], [0, 8, 8, 8, 17]):  # an empty expert; rows past the last expert stay zero
        o = torch.tensor(offs, dtype=torch.int32)
        got = run(lambda s, x, w, o: torch.ops.transformers.grouped_mm_fallback(x, w, o), x, w, o)
        want = torch.ops.transformers.grouped_mm_fallback(x, w, o).numpy()
        assert np.allclose(got[0], want, atol=1e-5), np.abs(got[0] - want).max()


def test_topk_with_nan_and_infinities_as_torch() -> None:
    # NaN ranks above every number (first among the largest, last among the smallest); ties among
    # equal values go to the lowest index (torch leaves their order unspecified)
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1.0, nan, 3.0, -inf, nan], [-inf, -inf, -inf, 2.0, -inf], [inf, nan, 0.0, inf, -1.0]])
    for largest in (True, False):
        for k in (1, 3, 5):
            values, ids = run(lambda s, x, k=k, largest=largest: torch.topk(x, k, largest=largest), x)
            want = torch.topk(x, k, largest=largest)
            assert np.array_equal(values, want.values.numpy(), equal_nan=True), (largest, k, values)
            assert ids.min() >= 0 and ids.max() < x.shape[1]  # was one past the row on a NaN
            assert all(len(set(row)) == k for row in ids.tolist())
            assert np.array_equal(np.take_along_axis(x.numpy(), ids, 1), values, equal_nan=True)
            for row, vals in zip(ids.tolist(), values.tolist(), strict=True):  # equal values: lowest index first
                for a in range(k - 1):
                    same_value = vals[a] == vals[a + 1] or (np.isnan(vals[a]) and np.isnan(vals[a + 1]))
                    assert not same_value or row[a] < row[a + 1]
