"""Grouped-query causal attention (prefill): the one-tile text, its recognition, every schedule equal to it."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ktir
import reference_interp as ri
import schedulers
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from reference_interp.inputs import infer_args
from schedulers.check import check_equivalent
from schedulers.cost import figures
from schedulers.emit_attention import attention_grid, attention_text, block_of, emit_attention, match_attention
from schedulers.kernels import AttentionKernel, function_of
from schedulers.spaces import AttentionSpace


def _gqa(heads: int, group: int, tokens: int, dim: int) -> ktir.Module:
    return ktir.parse(attention_text(heads, tokens, dim, "f16", causal=True, group=group, name="gqa"), "gqa.ktir")


def found_kernel(heads: int, group: int, tokens: int) -> AttentionKernel:
    return AttentionKernel(kv_heads=heads, rows=group * tokens, kv_len=tokens, head_dim=16, dtype="f16", causal=True,
                           group=group)


def _valid(module: ktir.Module) -> None:
    _, diags = validate_text(print_module(module), "scheduled.ktir")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]


def test_the_one_tile_text_is_causal_gqa_in_numpy() -> None:
    """softmax(Q K^T / sqrt(D) + mask) V per query head q, with K and V of KV head q // group and the
    mask -inf where the key's token is after the query's: Q and O are [query heads, tokens, D]."""
    H, G, T, D = 2, 3, 32, 16
    before = _gqa(H, G, T, D)
    args = infer_args(before, None, {}, 1, {})
    out = ri.run(before, None, {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}).outputs
    q = args["q_ptr"].astype(np.float64).reshape(H * G, T, D)
    k = args["k_ptr"].astype(np.float64).reshape(H, T, D)
    v = args["v_ptr"].astype(np.float64).reshape(H, T, D)
    mask = np.where(np.arange(T)[None, :] > np.arange(T)[:, None], -np.inf, 0.0)
    want = np.empty_like(q)
    for hq in range(H * G):
        s = q[hq] @ k[hq // G].T * D ** -0.5 + mask
        p = np.exp(s - s.max(axis=1, keepdims=True))
        want[hq] = (p / p.sum(axis=1, keepdims=True)) @ v[hq // G]
    got = np.asarray(out["o_ptr"], np.float64).reshape(H * G, T, D)
    assert np.max(np.abs(got - want)) < 2e-3
    # the mask matters: without it the result is far off
    full = np.einsum("qtd,qsd->qts", q, np.repeat(k, G, axis=0)) * D ** -0.5
    assert np.max(np.abs(got[:, :4] - (np.exp(full[:, :4]) / np.exp(full[:, :4]).sum(-1, keepdims=True))
                         @ np.repeat(v, G, axis=0))) > 0.05


def test_the_group_is_recognised() -> None:
    found = match_attention(_gqa(2, 4, 64, 32))
    assert found is not None
    k = found.kernel
    assert (k.kv_heads, k.rows, k.kv_len, k.group, k.tokens, k.causal) == (2, 256, 64, 4, 64, True)


@pytest.mark.parametrize(("old", "new"), [
    ("arith.remui %sa_i, %sa_L", "arith.remui %sa_i, %sa_half"),  # the token is not the row mod L
    ("%sa_qi = arith.remui %sa_i, %sa_L : index", "%sa_qi = arith.addi %sa_i, %sa_c0 : index"),  # rows as tokens
])
def test_other_group_masks_are_declined(old: str, new: str) -> None:
    text = attention_text(2, 64, 32, "f16", causal=True, group=2, name="gqa")
    text = text.replace("  %sa_L = arith.constant 64 : index\n",
                        "  %sa_L = arith.constant 64 : index\n  %sa_half = arith.constant 32 : index\n")
    assert old in text and "%sa_half" in text
    assert match_attention(ktir.parse(text.replace(old, new), "variant.ktir")) is None


POINTS = [(bq, bkv, db, s, tiles) for bq in (6, 24, 48, 96) for bkv in (8, 16) for db in (0, 1) for s in (1, 2)
          for tiles in (32, 4) if (32 // bkv) % s == 0]


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "bq{}-bkv{}-db{}-s{}-t{}".format(*p))
def test_every_block_shape_is_equivalent(point: tuple[int, ...]) -> None:
    """3 query heads per KV head, 32 tokens: blocks of 2 to 32 tokens of the 3 heads, KV blocks of 8 or 16,
    with and without prefetch, KV split or not, on 32 tiles or 4 (query blocks dealt in snake order)."""
    before = _gqa(2, 3, 32, 16)
    found = match_attention(before)
    assert found is not None
    bq, bkv, db, s, tiles = point
    after = emit_attention(found, function_of(before, None), {"bq": bq, "bkv": bkv, "db": db, "s": s}, tiles)
    _valid(after)
    verdict = check_equivalent(before, after, seed=3)
    assert verdict.ok, verdict.message


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heads=st.integers(1, 3), group=st.integers(1, 4), tokens=st.sampled_from([16, 32]), tb=st.sampled_from([4, 8, 16]),
       bkv=st.sampled_from([8, 16]), db=st.integers(0, 1), s=st.sampled_from([1, 2]), tiles=st.sampled_from([3, 4, 32]),
       seed=st.integers(0, 9))
def test_random_shapes_and_schedules_are_equivalent(heads: int, group: int, tokens: int, tb: int, bkv: int, db: int,
                                                    s: int, tiles: int, seed: int) -> None:
    assume((tokens // bkv) % s == 0)  # the schedule space's rules: whole KV blocks per split, and with a
    units = heads * (tokens // tb)  # split every group of tiles runs as many query blocks (equal combines)
    assume(s == 1 or units % (attention_grid(found_kernel(heads, group, tokens), group * tb, s, tiles) // s) == 0)
    before = ktir.parse(attention_text(heads, tokens, 16, "f16", causal=True, group=group, name="gqa"), "gqa.ktir")
    found = match_attention(before)
    assert found is not None and found.kernel.group == group
    after = emit_attention(found, function_of(before, None), {"bq": group * tb, "bkv": bkv, "db": db, "s": s}, tiles)
    verdict = check_equivalent(before, after, seed=seed)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
def test_prefill_gqa_through_each_scheduler(scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    before = _gqa(2, 4, 128, 64)
    r = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.3))
    assert r.report.applied and r.report.kernel_class == "attention"
    assert r.report.schedule is not None and r.report.schedule.grid[0] > 1
    _valid(r.module)
    verdict = check_equivalent(before, r.module, seed=4)
    assert verdict.ok, verdict.message


def test_blocks_are_dealt_once_each_and_balanced() -> None:
    """The snake order is a permutation of the query blocks, and with causal work growing along the
    sequence it gives every tile the same number of KV steps (8 heads, 16 blocks, 32 tiles)."""
    k = AttentionKernel(kv_heads=8, rows=4 * 2048, kv_len=2048, head_dim=128, causal=True, group=4)
    bq, tiles = 512, 32
    units = k.kv_heads * (k.rows // bq)
    stride = attention_grid(k, bq, 1, tiles)
    seen = [block_of(k, bq, 1, tiles, u) for u in range(units)]
    assert sorted(seen) == [(h, qb) for h in range(8) for qb in range(16)]
    work: collections.Counter[int] = collections.Counter()
    for u, (_, qb) in enumerate(seen):
        work[u % stride] += qb + 1  # KV blocks of 128 up to the block's last token
    assert len(set(work.values())) == 1


def test_the_model_counts_the_steps_the_kernel_runs(spyre) -> None:  # type: ignore[no-untyped-def]
    """Per tile, the matrix products in the interpreter's trace of the rewrite are twice the KV steps the
    cost model charges (its busiest tile and its total), and the bound counts T (T + 1) / 2 pairs per head."""
    before = _gqa(2, 2, 64, 32)
    found = match_attention(before)
    assert found is not None
    space = AttentionSpace(found.kernel, figures(spyre))
    assert space.work().transcendental == {"f32": 2 * 2 * 64 * 65 // 2}
    for bq, bkv, s in ((16, 16, 1), (32, 16, 2), (64, 32, 1), (128, 16, 2)):
        after = emit_attention(found, function_of(before, None), {"bq": bq, "bkv": bkv, "db": 1, "s": s}, 32)
        args = infer_args(after, None, {}, 0, {"shapes_only": True}, zeros=True)
        run = ri.run(after, None, args, trace=True, shapes_only=True)
        events = [e for tile in run.trace or [] for e in (tile if isinstance(tile, list) else [tile])]
        per_tile = collections.Counter(e.tile for e in events if e.op == "linalg.matmul")
        busiest, _, total = space._tile_load(bq, bkv, s)
        assert max(per_tile.values()) == 2 * busiest, (bq, bkv, s)
        assert sum(per_tile.values()) == 2 * total, (bq, bkv, s)
