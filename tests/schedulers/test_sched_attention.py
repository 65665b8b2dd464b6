"""The attention rewrite: recognition, every schedule point valid and equal to the input in the interpreter."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import pytest
from conftest_paths import EXAMPLES, example, ktir_schedule

import ktir
import schedulers
from ktir.syntax.printer import print_module
from ktir.verify import validate_text
from schedulers import naive
from schedulers.check import check_equivalent
from schedulers.emit_attention import attention_text, emit_attention, match_attention
from schedulers.kernels import function_of


def _valid(module: ktir.Module) -> None:
    _, diags = validate_text(print_module(module), "scheduled.ktir")
    assert not [d for d in diags if d.severity == "error"], [str(d) for d in diags]


# the example's sequence length (an argument): two query blocks of 128 rows
SIZES = {"S": 256}


def test_the_example_is_recognised() -> None:
    found = match_attention(example("causal_attention.ktir"), {"S": 4096})
    assert found is not None
    k = found.kernel
    assert (k.kv_heads, k.rows, k.kv_len, k.head_dim, k.dtype, k.causal) == (1, 4096, 4096, 64, "f16", True)
    assert found.scale == 0.125
    assert [o.arg for o in (found.q, found.k, found.v, found.o)] == ["q_ptr", "k_ptr", "v_ptr", "o_ptr"]


@pytest.mark.parametrize("text", [naive.matmul(64, 128, 128), naive.softmax(64, 128)])
def test_other_kernels_are_not_attention(text: str) -> None:
    assert match_attention(ktir.parse(text, "k.ktir")) is None


def test_an_epilogue_is_not_dropped(spyre) -> None:  # type: ignore[no-untyped-def]
    """One more multiply after the normalisation: not the recognised form, so the kernel comes back unchanged."""
    text = (EXAMPLES / "causal_attention.ktir").read_text()
    old = "%r = arith.divf %a, %d : f32\n"
    assert text.count(old) == 1
    before = ktir.parse(text.replace(old, "%r0 = arith.divf %a, %d : f32\n      %r = arith.mulf %r0, %scale : f32\n"),
                        "epilogue.ktir")
    assert match_attention(before, SIZES) is None
    r = schedulers.schedule(before, spyre, "exact", schedulers.ScheduleOptions(sizes=SIZES))
    assert not r.report.applied and r.module == before


@pytest.mark.parametrize(("old", "new"), [
    ("arith.cmpi ugt, %kj, %qi", "arith.cmpi ugt, %qi, %kj"),  # masks the past, not the future
    ("#qk_k = affine_map<(d0, d1, d2) -> (d1, d2)>", "#qk_k = affine_map<(d0, d1, d2) -> (d2, d1)>"),  # K not transposed
])
def test_other_masks_and_products_are_not_recognised(old: str, new: str) -> None:
    text = (EXAMPLES / "causal_attention.ktir").read_text()
    assert old in text
    assert match_attention(ktir.parse(text.replace(old, new), "variant.ktir"), SIZES) is None


def test_paged_attention_is_not_rewritten(spyre) -> None:  # type: ignore[no-untyped-def]
    before = example("paged_attention.ktir")
    assert match_attention(before, {"NP": 64, "S": 4, "W": 16}) is None


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
def test_example_through_each_scheduler(scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    before = example("causal_attention.ktir")
    r = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(sizes=SIZES, time_budget=0.2))
    assert r.report.applied and r.report.kernel_class == "attention"
    assert r.report.dims == {"heads": 1, "S": 256, "D": 64}
    assert r.report.ratio is not None and r.report.ratio >= 1.0 - 1e-9
    assert r.report.schedule is not None
    assert r.module != before
    _valid(r.module)
    verdict = check_equivalent(before, r.module, SIZES, seed=5)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize(("heads", "causal", "dtype"), [(2, True, "f16"), (3, False, "f16"), (2, True, "bf16")])
def test_multi_head_inputs(heads: int, causal: bool, dtype: str, spyre) -> None:  # type: ignore[no-untyped-def]
    before = ktir.parse(attention_text(heads, 128, 64, dtype, causal), "mha.ktir")
    _valid(before)
    r = schedulers.schedule(before, spyre, "exact")
    assert r.report.applied and r.report.dims == {"heads": heads, "S": 128, "D": 64}
    assert r.report.schedule is not None and r.report.schedule.grid[0] > 1  # the work is spread over tiles
    _valid(r.module)
    verdict = check_equivalent(before, r.module, seed=11)
    assert verdict.ok, verdict.message


POINTS = [dict(zip(("bq", "bkv", "db", "s"), p, strict=True))
          for p in itertools.product((16, 64, 128), (64, 128), (0, 1), (1, 2)) if (128 // p[1]) % p[3] == 0]


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "bq{bq}-bkv{bkv}-db{db}-s{s}".format(**p))
def test_every_block_shape_is_equivalent(point: dict[str, int]) -> None:
    """Query blocks smaller, equal and larger than the KV blocks (the causal bound), with and without
    prefetch, with the KV loop whole or split over two tiles (a split past the causal bound is empty)."""
    before = ktir.parse(attention_text(2, 128, 64, "f16", True), "mha.ktir")
    fn = function_of(before, None)
    found = match_attention(before)
    assert found is not None
    after = emit_attention(found, fn, point, 32)
    _valid(after)
    verdict = check_equivalent(before, after, seed=3)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("heads_dim", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_the_built_kernel_is_what_its_text_says(causal: bool, heads_dim: bool) -> None:
    """The rewrite builds IR with ktir.builder: its printed text parses back to the same module
    (names, aliases and the short linalg.reduce bodies included) and validates, for every block shape."""
    before = ktir.parse(attention_text(2, 128, 64, "f16", causal), "mha.ktir")
    found = match_attention(before)
    assert found is not None
    for point in POINTS:
        after = emit_attention(found, function_of(before, None), point, 32, heads_dim=heads_dim)
        text = print_module(after)
        assert ktir.parse(text, "again.ktir") == after, point
        assert ktir.print_module(ktir.parse(text, "again.ktir")) == text
        _valid(after)


def test_a_dropped_mask_is_caught() -> None:
    """The check can fail: the same schedule without the causal mask differs from the input."""
    before = example("causal_attention.ktir")
    fn = function_of(before, None)
    found = match_attention(before, SIZES)
    assert found is not None
    wrong = replace(found, kernel=replace(found.kernel, causal=False))
    verdict = check_equivalent(before, emit_attention(wrong, fn, {"bq": 64, "bkv": 64, "db": 1}, 32), SIZES, seed=5)
    assert not verdict.ok


def test_the_cost_model_sees_the_double_buffering(spyre) -> None:  # type: ignore[no-untyped-def]
    """The estimate of a prefetching schedule is lower than the same blocks without it."""
    from schedulers.builtin import evaluate_point
    from schedulers.cost import figures
    from schedulers.space_choice import space_for

    found = match_attention(example("causal_attention.ktir"), SIZES)
    assert found is not None
    space = space_for(found.kernel, figures(spyre))
    plain = evaluate_point(space, {"bq": 64, "bkv": 64, "s": 1, "db": 0}).cycles[0]
    prefetch = evaluate_point(space, {"bq": 64, "bkv": 64, "s": 1, "db": 1}).cycles[0]
    assert prefetch < plain
    assert set(space.candidates()["s"].tolist()) == {1, 2, 4}  # 256 keys in blocks of 64, 128 or 256


@pytest.mark.parametrize("scheduler", ["exact", "search"])
def test_a_kv_split_is_chosen_and_combined(scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    """One head of 64 queries against 1024 keys: one query block alone would leave 31 tiles idle, so the
    KV loop is split. (With 256 queries, 4 blocks on 4 tiles with the softmax overlapping the next
    scores win on the model and on the timeline alike.)"""
    before = ktir.parse(attention_text(1, 64, 64, "f16", causal=False, kv_len=1024), "one_head.ktir")
    r = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.2))
    assert r.report.schedule is not None and r.report.schedule.splits["kv"] > 1
    text = print_module(r.module)
    assert text.count("ktdp.inter_tile_reduce") == 1
    _valid(r.module)
    verdict = check_equivalent(before, r.module, seed=6)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("scheduler", ["baseline", "exact", "search"])
def test_decode_attention_with_grouped_query_heads(scheduler: str, spyre) -> None:  # type: ignore[no-untyped-def]
    """Decode: Q [KV heads, group of query heads, D] against K, V [KV heads, context, D], no mask."""
    before = ktir.parse(attention_text(2, 4, 64, "bf16", causal=False, kv_len=512), "decode.ktir")
    found = match_attention(before)
    assert found is not None and (found.kernel.rows, found.kernel.kv_len, found.kernel.causal) == (4, 512, False)
    r = schedulers.schedule(before, spyre, scheduler, schedulers.ScheduleOptions(time_budget=0.2))
    assert r.report.applied and r.report.schedule is not None
    if scheduler != "baseline":
        assert r.report.schedule.splits["kv"] > 1  # 2 KV heads alone would leave 30 tiles idle
    _valid(r.module)
    verdict = check_equivalent(before, r.module, seed=8)
    assert verdict.ok, verdict.message


def test_a_causal_mask_needs_one_sequence() -> None:
    """Causal positions compare query and key rows of one sequence: Q and K of different lengths are declined."""
    assert match_attention(ktir.parse(attention_text(1, 128, 64, "f16", causal=True), "same.ktir")) is not None
    longer = ktir.parse(attention_text(1, 128, 64, "f16", causal=True, kv_len=256), "longer.ktir")
    assert match_attention(longer) is None


def test_dropping_the_combine_of_the_kv_splits_is_caught() -> None:
    """Without the inter-tile reduce the first tile of each group stores its own split's softmax."""
    before = ktir.parse(attention_text(2, 128, 64, "f16", causal=True), "mha.ktir")
    found = match_attention(before)
    assert found is not None
    text = print_module(emit_attention(found, function_of(before, None), {"bq": 64, "bkv": 64, "db": 1, "s": 2}, 32))
    broken = re.sub(r"\n *%sa_fut = ktdp\.inter_tile_produce.*?\n *}\n", "\n", text, flags=re.S)
    broken = re.sub(r"\n *%sa_mt, %sa_lt, %sa_at = ktdp\.inter_tile_reduce.*?yield_reduced[^\n]*\n *}\n", "\n", broken,
                    flags=re.S)
    broken = broken.replace("%sa_at", "%sa_af").replace("%sa_lt", "%sa_lf")
    assert "ktdp.inter_tile" not in broken and broken != text
    module, diags = validate_text(broken, "broken.ktir")
    assert module is not None and not [d for d in diags if d.severity == "error"], [str(d) for d in diags]
    assert not check_equivalent(before, module, seed=3).ok


def test_the_command_line_checks_the_rewrite(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out, rep = tmp_path / "attention.ktir", tmp_path / "report.json"
    code = ktir_schedule([str(EXAMPLES / "causal_attention.ktir"), "--size", "S=256", "--target", "spyre", "--check", "-o", str(out),
                          "--report-json", str(rep)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "check: ok" in err and '"kernel_class": "attention"' in rep.read_text()
    _, diags = validate_text(out.read_text(), str(out))
    assert not [d for d in diags if d.severity == "error"]
